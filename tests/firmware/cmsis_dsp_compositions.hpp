// d2l's ops of bench_mcu.cpp composed from Arm CMSIS-DSP calls, as an
// embedded engineer without edgeattn would write them: the peer the
// instruction benchmark runs beside edgeattn when the build is given a
// CMSIS-DSP checkout (EDGEATTN_CMSIS_DSP_DIR; benchmark only, never a
// dependency of the library or its tests). Each op has the compositions
// the engineer would choose between; the benchmark reports the cheaper.
#ifndef EDGEATTN_FIRMWARE_CMSIS_DSP_COMPOSITIONS_HPP
#define EDGEATTN_FIRMWARE_CMSIS_DSP_COMPOSITIONS_HPP

#include <cstddef>
#include <cstdint>

namespace cmsis_dsp {

// Softmax of each of `rows` rows of `cols` (no mask): arm_max_no_idx_f32,
// arm_offset_f32, arm_vexp_f32, arm_accumulate_f32, arm_scale_f32.
void softmax_rows(const float *x, float *y, std::size_t rows, std::size_t cols);

// d2l's MultiHeadAttention without biases, keys = values = kv: x (B, Q, d),
// kv (B, K, d), valid lengths per batch element, W[4] (d, d) as (out, in)
// for W_q, W_k, W_v, W_o. With WT (their transposes, stored beforehand)
// the projections are arm_mat_mult_f32 over every row; without, one
// arm_mat_vec_mult_f32 per row with W as given. scratch: mha_scratch_floats.
struct mha_shape {
    std::size_t B, Q, K, d, H;
};
std::size_t mha_scratch_floats(const mha_shape &s);
void mha(const mha_shape &s, const float *x, const float *kv, const std::int32_t *lens, const float *const W[4],
         const float *const *WT, float *y, float *scratch);
// out (d, d) = W^T: arm_mat_trans_f32, once before the calls.
void transpose(const float *W, float *out, std::size_t d);

// One decode step: q = W_q x; per head h, scores of q_h over the cache's L
// keys (H, L, hs) by arm_mat_vec_mult_f32, scaled by 1 / sqrt(hs) on q,
// softmax; the weighted sum over values cached transposed (H, hs, L:
// arm_mat_vec_mult_f32) or, VT null, like the keys (H, L, hs: a (1, L) by
// (L, hs) arm_mat_mult_f32); y = W_o heads. scratch: d + L + d floats.
void decode(std::size_t L, std::size_t d, std::size_t H, const float *x, const float *Wq, const float *Wo,
            const float *Kc, const float *VT, const float *V, float *y, float *scratch);

}  // namespace cmsis_dsp

#endif
