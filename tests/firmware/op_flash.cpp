// One op a firmware image, for what each op costs in flash (docs/ports.md):
// built once per op by tests/firmware/CMakeLists.txt with OP_FLASH_<op>
// defined (or none of them: the image that calls no op, whose flash the
// others' is measured from; OP_FLASH_CMSIS_DSP_MHA: multi-head attention
// composed from CMSIS-DSP, when the build is given it). Each calls its op
// once at a small shape and prints the status, so the image runs and the
// call is not optimised away; the data are static RAM, as an application's
// buffers would be.
#include <edgeattn/edgeattn.h>

#include <cstddef>
#include <cstdint>

#include "report.hpp"
#if defined(OP_FLASH_CMSIS_DSP_MHA)
#include "cmsis_dsp_compositions.hpp"
#endif

namespace {

[[maybe_unused]] alignas(16) float a[2 * 8 * 16], b[2 * 8 * 16], c[2 * 8 * 16], out[2 * 8 * 16], w[4][16 * 16];
[[maybe_unused]] alignas(16) unsigned char workspace[32 * 1024];
[[maybe_unused]] const std::int32_t lens[2] = {3, 5};

edgeattn_status run() {
#if defined(OP_FLASH_SOFTMAX)
    const edgeattn_softmax_dims dims{2, 8, 8};
    const edgeattn_valid_lens valid{EDGEATTN_VALID_LENS_PER_BATCH, lens};
    return edgeattn_masked_softmax(&dims, a, &valid, out);
#elif defined(OP_FLASH_SDPA)
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    const edgeattn_attention_dims dims{2, 4, 8, 16, 16, 16, 0, 0, 0, 0};
    return edgeattn_sdpa(&dims, a, b, c, &o, workspace, sizeof workspace, out, nullptr);
#elif defined(OP_FLASH_ADDITIVE)
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    const edgeattn_attention_dims dims{2, 4, 8, 16, 16, 16, 8, 0, 0, 0};
    edgeattn_weights aw{};
    aw.W_q = {EDGEATTN_DTYPE_F32, w[0], nullptr};
    aw.W_k = {EDGEATTN_DTYPE_F32, w[1], nullptr};
    aw.W_v = {EDGEATTN_DTYPE_F32, w[2], nullptr};
    return edgeattn_additive(&dims, a, b, c, &aw, &o, workspace, sizeof workspace, out, nullptr);
#elif defined(OP_FLASH_MHA)
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    edgeattn_weights mw{};
    mw.W_q = {EDGEATTN_DTYPE_F32, w[0], nullptr};
    mw.W_k = {EDGEATTN_DTYPE_F32, w[1], nullptr};
    mw.W_v = {EDGEATTN_DTYPE_F32, w[2], nullptr};
    mw.W_o = {EDGEATTN_DTYPE_F32, w[3], nullptr};
    const edgeattn_attention_dims dims{2, 4, 8, 16, 16, 16, 16, 4, 0, 0};
    return edgeattn_mha(&dims, a, b, b, &mw, &o, workspace, sizeof workspace, out, nullptr);
#elif defined(OP_FLASH_POSENC)
    return edgeattn_positional_encoding_add_at(2, 8, 16, 0, a, w[0], 16, out);
#elif defined(OP_FLASH_DECODE)
    // One token of 4 heads of 4 over a cache of 16 positions, fp32 W_q and W_o.
    static unsigned char cache_memory[4096];
    edgeattn_kv_cache_config config{};
    config.batch = 1;
    config.num_kv_heads = 4;
    config.head_size = 4;
    config.capacity = 16;
    edgeattn_kv_cache cache{};
    edgeattn_status st = edgeattn_kv_cache_setup(&cache, &config, cache_memory, sizeof cache_memory);
    if (st != EDGEATTN_OK) return st;
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    const edgeattn_attention_dims dims{1, 1, 16, 16, 16, 16, 16, 4, 0, 0};
    st = edgeattn_kv_cache_store(&cache, &dims, 16, b, c, &none, nullptr, workspace, sizeof workspace);
    if (st != EDGEATTN_OK) return st;
    edgeattn_weights pw = none;
    pw.W_q = {EDGEATTN_DTYPE_F32, w[0], nullptr};
    pw.W_o = {EDGEATTN_DTYPE_F32, w[3], nullptr};
    return edgeattn_kv_cache_attend(&cache, &dims, a, &pw, nullptr, workspace, sizeof workspace, out, nullptr);
#elif defined(OP_FLASH_CMSIS_DSP_MHA)
    // edgeattn_mha's call above composed from CMSIS-DSP (benchmark only):
    // d = 16, 4 heads, W given and as its transpose (both forms linked).
    const float *const W[4] = {w[0], w[1], w[2], w[3]};
    const cmsis_dsp::mha_shape shape{2, 4, 8, 16, 4};
    if (cmsis_dsp::mha_scratch_floats(shape) * sizeof(float) > sizeof workspace) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    cmsis_dsp::mha(shape, a, b, lens, W, W, out, reinterpret_cast<float *>(workspace));
    return EDGEATTN_OK;
#else
    return EDGEATTN_OK;  // no op: the image the others are measured from
#endif
}

}  // namespace

int main() {
    for (std::size_t i = 0; i < sizeof a / sizeof a[0]; ++i) {
        a[i] = static_cast<float>(i % 7) * 0.125f;
        b[i] = static_cast<float>(i % 5) * 0.25f;
        c[i] = static_cast<float>(i % 3) * 0.5f;
    }
    const edgeattn_status st = run();
    firmware::Line() << "op image " << OP_FLASH_NAME << ": status " << static_cast<int>(st);
    return st == EDGEATTN_OK ? 0 : 1;
}
