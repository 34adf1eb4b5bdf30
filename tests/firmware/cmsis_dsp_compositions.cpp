// The CMSIS-DSP compositions of cmsis_dsp_compositions.hpp.
#include "cmsis_dsp_compositions.hpp"

#include <cmath>

#include "arm_math.h"

namespace cmsis_dsp {

namespace {

arm_matrix_instance_f32 matrix(std::size_t rows, std::size_t cols, const float *data) {
    arm_matrix_instance_f32 m;
    arm_mat_init_f32(&m, static_cast<uint16_t>(rows), static_cast<uint16_t>(cols), const_cast<float *>(data));
    return m;
}

// d2l's masked softmax of one row, x to y (the same or apart): keys at or
// past `valid` score -1e6 (0 after the exp unless none is valid: then
// uniform).
void masked_softmax(const float *x, float *y, std::size_t n, std::size_t valid) {
    if (valid == 0) {
        arm_fill_f32(1.0f / static_cast<float>(n), y, static_cast<uint32_t>(n));
        return;
    }
    const uint32_t v = static_cast<uint32_t>(valid);
    float most = 0, sum = 0;
    arm_max_no_idx_f32(x, v, &most);
    arm_offset_f32(x, -most, y, v);
    arm_vexp_f32(y, y, v);
    arm_accumulate_f32(y, v, &sum);
    arm_scale_f32(y, 1.0f / sum, y, v);
    if (n > valid) arm_fill_f32(0.0f, y + valid, static_cast<uint32_t>(n - valid));
}

// y (rows, d) = x (rows, d) W^T: W^T stored, or W one row at a time.
void project(std::size_t rows, std::size_t d, const float *x, const float *W, const float *WT, float *y) {
    if (WT) {
        arm_matrix_instance_f32 a = matrix(rows, d, x), b = matrix(d, d, WT), c = matrix(rows, d, y);
        arm_mat_mult_f32(&a, &b, &c);
        return;
    }
    arm_matrix_instance_f32 w = matrix(d, d, W);
    for (std::size_t r = 0; r < rows; ++r) arm_mat_vec_mult_f32(&w, x + r * d, y + r * d);
}

}  // namespace

void softmax_rows(const float *x, float *y, std::size_t rows, std::size_t cols) {
    for (std::size_t r = 0; r < rows; ++r) masked_softmax(x + r * cols, y + r * cols, cols, cols);
}

// Scratch: projected queries (B Q, d), keys and values (B K, d), the
// heads (B Q, d), one batch element's keys transposed (d, K: head h's
// K_h^T is rows h hs ..), one head's Q_h (Q, hs), V_h (K, hs), O_h (Q, hs)
// and its scores (Q, K).
std::size_t mha_scratch_floats(const mha_shape &s) {
    const std::size_t hs = s.d / s.H;
    return 2 * s.B * s.Q * s.d + 2 * s.B * s.K * s.d + s.d * s.K + s.Q * hs + s.K * hs + s.Q * hs + s.Q * s.K;
}

void mha(const mha_shape &s, const float *x, const float *kv, const std::int32_t *lens, const float *const W[4],
         const float *const *WT, float *y, float *scratch) {
    const std::size_t Q = s.Q, K = s.K, d = s.d, hs = d / s.H;
    const std::size_t B = s.B;
    float *q = scratch, *k = q + B * Q * d, *v = k + B * K * d, *heads = v + B * K * d, *kt = heads + B * Q * d,
          *qh = kt + d * K,
          *vh = qh + Q * hs, *oh = vh + K * hs, *scores = oh + Q * hs;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    // Every batch element's rows in one product each.
    project(B * Q, d, x, W[0], WT ? WT[0] : nullptr, q);
    project(B * K, d, kv, W[1], WT ? WT[1] : nullptr, k);
    project(B * K, d, kv, W[2], WT ? WT[2] : nullptr, v);
    for (std::size_t b = 0; b < B; ++b) {
        const float *qb = q + b * Q * d, *kb = k + b * K * d, *vb = v + b * K * d;
        float *hb = heads + b * Q * d;
        const std::size_t valid = lens[b] < 0 ? 0 : static_cast<std::size_t>(lens[b]) < K ? lens[b] : K;
        arm_matrix_instance_f32 km = matrix(K, d, kb), ktm = matrix(d, K, kt);
        arm_mat_trans_f32(&km, &ktm);
        for (std::size_t h = 0; h < s.H; ++h) {
            // Head h's columns gathered: Q_h and V_h (K_h^T: rows of kt).
            for (std::size_t i = 0; i < Q; ++i) arm_copy_f32(qb + i * d + h * hs, qh + i * hs, static_cast<uint32_t>(hs));
            for (std::size_t j = 0; j < K; ++j) arm_copy_f32(vb + j * d + h * hs, vh + j * hs, static_cast<uint32_t>(hs));
            arm_matrix_instance_f32 a = matrix(Q, hs, qh), bt = matrix(hs, K, kt + h * hs * K), c = matrix(Q, K, scores);
            arm_mat_mult_f32(&a, &bt, &c);
            arm_scale_f32(scores, scale, scores, static_cast<uint32_t>(Q * K));
            for (std::size_t i = 0; i < Q; ++i) masked_softmax(scores + i * K, scores + i * K, K, valid);
            arm_matrix_instance_f32 p = matrix(Q, K, scores), vm = matrix(K, hs, vh), o = matrix(Q, hs, oh);
            arm_mat_mult_f32(&p, &vm, &o);
            for (std::size_t i = 0; i < Q; ++i) arm_copy_f32(oh + i * hs, hb + i * d + h * hs, static_cast<uint32_t>(hs));
        }
    }
    project(B * Q, d, heads, W[3], WT ? WT[3] : nullptr, y);
}

void transpose(const float *W, float *out, std::size_t d) {
    arm_matrix_instance_f32 a = matrix(d, d, W), t = matrix(d, d, out);
    arm_mat_trans_f32(&a, &t);
}

void decode(std::size_t L, std::size_t d, std::size_t H, const float *x, const float *Wq, const float *Wo,
            const float *Kc, const float *VT, const float *V, float *y, float *scratch) {
    const std::size_t hs = d / H;
    float *q = scratch, *scores = q + d, *heads = scores + L;
    arm_matrix_instance_f32 m = matrix(d, d, Wq);
    arm_mat_vec_mult_f32(&m, x, q);
    arm_scale_f32(q, 1.0f / std::sqrt(static_cast<float>(hs)), q, static_cast<uint32_t>(d));
    for (std::size_t h = 0; h < H; ++h) {
        m = matrix(L, hs, Kc + h * L * hs);
        arm_mat_vec_mult_f32(&m, q + h * hs, scores);
        masked_softmax(scores, scores, L, L);
        if (VT) {
            m = matrix(hs, L, VT + h * hs * L);
            arm_mat_vec_mult_f32(&m, scores, heads + h * hs);
        } else {
            arm_matrix_instance_f32 p = matrix(1, L, scores), o = matrix(1, hs, heads + h * hs);
            m = matrix(L, hs, V + h * L * hs);
            arm_mat_mult_f32(&p, &m, &o);
        }
    }
    m = matrix(d, d, Wo);
    arm_mat_vec_mult_f32(&m, heads, y);
}

}  // namespace cmsis_dsp
