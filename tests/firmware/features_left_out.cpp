// A library built without some of its features (EDGEATTN_LEAVE_OUT,
// include/edgeattn/config.h), on the board: every call that asks for a
// feature left out returns EDGEATTN_ERR_NOT_BUILT and writes nothing, the
// same call without it runs, and what the build keeps is right (d2l's
// dot-product and multi-head attention with valid lengths against float64
// loops here). Built only in such a build (tests/firmware/CMakeLists.txt).
#include <edgeattn/edgeattn.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "packed_header.hpp"  // the library's own (src/): to forge a buffer packed by another build
#include "report.hpp"

namespace {

constexpr float sentinel = -7.25f;
alignas(16) unsigned char workspace[96 * 1024];
alignas(16) float q[2 * 4 * 16], k[2 * 300 * 16], v[2 * 300 * 16], out[2 * 4 * 16], w[2 * 4 * 300],
    W[4][16 * 16];
alignas(16) std::int8_t W8[16 * 16];
alignas(16) std::uint16_t W16[16 * 16];
float scales[16], bias[2 * 4 * 300];
alignas(8) unsigned char cache_memory[16 * 1024];
const std::int32_t lens[2] = {3, 6};

int failures = 0;

void expect(bool ok, const char *what) {
    if (!ok) ++failures;
    firmware::Line() << (ok ? "ok   " : "FAIL ") << what;
}

void fill(float *x, std::size_t n, std::uint32_t seed) {
    for (std::size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = static_cast<float>(static_cast<int>(seed >> 9) % 2001 - 1000) / 1000.0f;
    }
}

void spoil() {
    for (float &x : out) x = sentinel;
    for (float &x : w) x = sentinel;
}

bool untouched() {
    for (float x : out)
        if (x != sentinel) return false;
    for (float x : w)
        if (x != sentinel) return false;
    return true;
}

// A refused call: NOT_BUILT, outputs as they were.
void refused(edgeattn_status st, const char *what) {
    const bool ok = st == EDGEATTN_ERR_NOT_BUILT && untouched();
    if (!ok) firmware::Line() << "  status " << static_cast<int>(st);
    expect(ok, what);
}

edgeattn_attention_options d2l_options() {
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    return o;
}

edgeattn_status sdpa(std::size_t keys, const edgeattn_attention_options &o, bool with_weights) {
    spoil();
    const edgeattn_attention_dims dims{2, 4, keys, 16, 16, 16, 0, 0, 0, 0};
    return edgeattn_sdpa(&dims, q, k, v, &o, workspace, sizeof workspace, out, with_weights ? w : nullptr);
}

edgeattn_weights fp32_weights() {
    edgeattn_weights mw{};
    mw.W_q = {EDGEATTN_DTYPE_F32, W[0], nullptr};
    mw.W_k = {EDGEATTN_DTYPE_F32, W[1], nullptr};
    mw.W_v = {EDGEATTN_DTYPE_F32, W[2], nullptr};
    mw.W_o = {EDGEATTN_DTYPE_F32, W[3], nullptr};
    return mw;
}

edgeattn_status mha(const edgeattn_attention_options &o, const edgeattn_weights &mw) {
    spoil();
    const edgeattn_attention_dims dims{2, 4, 6, 16, 16, 16, 16, 4, 0, 0};
    return edgeattn_mha(&dims, q, k, k, &mw, &o, workspace, sizeof workspace, out, nullptr);
}

// Sets up a small KV cache stored as `storage`, its scores in `arithmetic`.
[[maybe_unused]] edgeattn_status cache_setup(edgeattn_dtype storage,
                                             edgeattn_arithmetic arithmetic = EDGEATTN_ARITHMETIC_FLOAT) {
    edgeattn_kv_cache_config config{};
    config.arithmetic = arithmetic;
    config.batch = 1;
    config.num_kv_heads = 2;
    config.head_size = 8;
    config.capacity = 16;
    config.storage = storage;
    edgeattn_kv_cache cache{};
    return edgeattn_kv_cache_setup(&cache, &config, cache_memory, sizeof cache_memory);
}

// A dense layer's weights packed here as fp32, their header then saying
// `type`: as a build with that type would have packed them (the buffer's
// format is the same in every build). The packed call must refuse them.
[[maybe_unused]] edgeattn_status packed_elsewhere(edgeattn_dtype type) {
    alignas(16) static unsigned char packed[4096];
    const edgeattn_dense_dims dims{8, 16, 16};
    const edgeattn_weight_matrix Wm{EDGEATTN_DTYPE_F32, W[0], nullptr};
    const std::size_t bytes = edgeattn_dense_packed_size(&dims, &Wm);
    if (bytes == 0 || bytes > sizeof packed || edgeattn_dense_pack(&dims, &Wm, nullptr, packed, bytes) != EDGEATTN_OK)
        return EDGEATTN_ERR_SIZE_OVERFLOW;  // not the status the test expects
    edgeattn::detail::packed_header h;
    std::memcpy(&h, packed, sizeof h);
    h.weight_types = static_cast<std::uint32_t>(type);
    std::memcpy(packed, &h, sizeof h);
    spoil();
    return edgeattn_dense_packed(&dims, q, packed, bytes, out);
}

// d2l's attention of (2, 4, 16) queries over 6 keys with valid lengths 3
// and 6, in H heads of 16 / H features, in float64: into y (2, 4, 16).
void attend(const float *qs, const float *ks, const float *vs, std::size_t H, double *y) {
    const std::size_t B = 2, Q = 4, K = 6, D = 16, hs = D / H;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < Q; ++i) {
                double s[K], m = -1e300, sum = 0;
                for (std::size_t j = 0; j < K; ++j) {
                    double dot = 0;
                    for (std::size_t c = 0; c < hs; ++c)
                        dot += double(qs[(b * Q + i) * D + h * hs + c]) * ks[(b * K + j) * D + h * hs + c];
                    s[j] = j < static_cast<std::size_t>(lens[b]) ? dot / std::sqrt(double(hs)) : -1e6;
                    m = s[j] > m ? s[j] : m;
                }
                for (double &x : s) sum += (x = std::exp(x - m));
                for (std::size_t c = 0; c < hs; ++c) {
                    double acc = 0;
                    for (std::size_t j = 0; j < K; ++j) acc += s[j] / sum * vs[(b * K + j) * D + h * hs + c];
                    y[(b * Q + i) * D + h * hs + c] = acc;
                }
            }
}

// X (rows, 16) . W^T in float64.
void project(const double *X, std::size_t rows, const float *Wm, double *Y) {
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < 16; ++o) {
            double acc = 0;
            for (std::size_t c = 0; c < 16; ++c) acc += X[r * 16 + c] * Wm[o * 16 + c];
            Y[r * 16 + o] = acc;
        }
}

double rel_l2(const float *got, const double *want, std::size_t n) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < n; ++i) {
        diff += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return std::sqrt(diff / ref);
}

}  // namespace

int main() {
    fill(q, sizeof q / sizeof q[0], 1);
    fill(k, sizeof k / sizeof k[0], 2);
    fill(v, sizeof v / sizeof v[0], 3);
    for (std::size_t m = 0; m < 4; ++m) fill(W[m], 16 * 16, 4 + m);
    fill(bias, sizeof bias / sizeof bias[0], 9);
    for (std::size_t i = 0; i < 16 * 16; ++i) W8[i] = static_cast<std::int8_t>(i % 13) - 6;
    for (float &s : scales) s = 0.01f;
    const edgeattn_attention_options d2l = d2l_options();

    // What every build keeps: d2l's ops, right.
    {
        static double want[2 * 4 * 16];
        attend(q, k, v, 1, want);
        expect(sdpa(6, d2l, true) == EDGEATTN_OK && rel_l2(out, want, 2 * 4 * 16) < 1e-5,
               "sdpa with valid lengths");
        // mha: the projections and the heads in float64, from the fp32
        // inputs (queries (2, 4, 16), keys = values (2, 6, 16)).
        static double x[2 * 6 * 16], Pq[2 * 4 * 16], Pk[2 * 6 * 16], Pv[2 * 6 * 16], heads[2 * 4 * 16];
        static float Pqf[2 * 4 * 16], Pkf[2 * 6 * 16], Pvf[2 * 6 * 16];
        for (std::size_t i = 0; i < 2 * 4 * 16; ++i) x[i] = q[i];
        project(x, 8, W[0], Pq);
        for (std::size_t i = 0; i < 2 * 6 * 16; ++i) x[i] = k[i];
        project(x, 12, W[1], Pk);
        project(x, 12, W[2], Pv);
        // attend() reads floats: the projections rounded once (1e-7
        // relative, below the bar).
        for (std::size_t i = 0; i < 2 * 4 * 16; ++i) Pqf[i] = static_cast<float>(Pq[i]);
        for (std::size_t i = 0; i < 2 * 6 * 16; ++i) Pkf[i] = static_cast<float>(Pk[i]), Pvf[i] = static_cast<float>(Pv[i]);
        attend(Pqf, Pkf, Pvf, 4, heads);
        project(heads, 8, W[3], want);
        expect(mha(d2l, fp32_weights()) == EDGEATTN_OK && rel_l2(out, want, 2 * 4 * 16) < 1e-5,
               "mha with valid lengths");
    }

#if !EDGEATTN_WITH_SCORE_OPTIONS
    {
        edgeattn_attention_options o = d2l;
        o.softcap = 30.0f;
        refused(sdpa(6, o, false), "score options left out: softcap");
        o = d2l;
        o.masking = EDGEATTN_MASKING_EXCLUDE;
        refused(sdpa(6, o, false), "score options left out: EXCLUDE");
        o = d2l;
        o.weights_output = EDGEATTN_WEIGHTS_SCORES;
        refused(sdpa(6, o, true), "score options left out: the scores as the weights output");
        o = d2l;
        o.scale = 0.5f;
        expect(sdpa(6, o, false) == EDGEATTN_OK, "score options left out: scale stays");
    }
#endif
#if !EDGEATTN_WITH_ALIBI
    {
        edgeattn_attention_options o = d2l;
        o.mask.alibi_max_bias = 8.0f;
        refused(mha(o, fp32_weights()), "ALiBi left out");
    }
#endif
#if !EDGEATTN_WITH_MASK_BIAS
    {
        edgeattn_attention_options o = d2l;
        o.mask.bias = bias;
        refused(sdpa(6, o, false), "the mask's bias left out");
        o = d2l;
        o.mask.causal = 1;
        expect(sdpa(6, o, false) == EDGEATTN_OK, "the mask's bias left out: causal stays");
    }
#endif
#if !EDGEATTN_WITH_LONG_ROWS
    refused(sdpa(300, d2l, false), "long rows left out: 300 keys without the weights");
    expect(sdpa(300, d2l, true) == EDGEATTN_OK, "long rows left out: 300 keys with the weights");
    expect(sdpa(256, d2l, false) == EDGEATTN_OK, "long rows left out: 256 keys without the weights");
#endif
#if !EDGEATTN_WITH_HALF
    {
        edgeattn_attention_options o = d2l;
        o.tensor_type = EDGEATTN_DTYPE_F16;
        refused(sdpa(6, o, false), "binary16 left out: fp16 tensors");
        edgeattn_weights mw = fp32_weights();
        mw.W_k = {EDGEATTN_DTYPE_F16, W16, nullptr};
        refused(mha(d2l, mw), "binary16 left out: fp16 weights");
        expect(cache_setup(EDGEATTN_DTYPE_F16) == EDGEATTN_ERR_NOT_BUILT, "binary16 left out: an fp16 cache");
        refused(packed_elsewhere(EDGEATTN_DTYPE_F16), "binary16 left out: fp16 weights packed by another build");
        const edgeattn_attention_dims dims{2, 4, 6, 16, 16, 16, 0, 0, 0, 0};
        edgeattn_workspace_request r{};
        r.op = EDGEATTN_OP_SDPA;
        r.dims = dims;
        r.tensor_type = EDGEATTN_DTYPE_F16;
        std::size_t bytes = 0;
        expect(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_NOT_BUILT, "binary16 left out: its workspace");
    }
#endif
#if !EDGEATTN_WITH_INT8
    {
        edgeattn_weights mw = fp32_weights();
        mw.W_v = {EDGEATTN_DTYPE_INT8, W8, scales};
        refused(mha(d2l, mw), "int8 left out: int8 weights");
        expect(cache_setup(EDGEATTN_DTYPE_INT8) == EDGEATTN_ERR_NOT_BUILT, "int8 left out: an int8 cache");
        refused(packed_elsewhere(EDGEATTN_DTYPE_INT8), "int8 left out: int8 weights packed by another build");
    }
#endif
#if !EDGEATTN_WITH_INT8_ARITHMETIC
    {
        edgeattn_weights mw = fp32_weights();
        mw.W_v = {EDGEATTN_DTYPE_INT8, W8, scales, EDGEATTN_ARITHMETIC_INT8};
        refused(mha(d2l, mw), "the int8 arithmetic left out: multi-head attention");
        spoil();
        const edgeattn_dense_dims dims{8, 16, 16};
        const edgeattn_weight_matrix Wm{EDGEATTN_DTYPE_INT8, W8, scales, EDGEATTN_ARITHMETIC_INT8};
        refused(edgeattn_dense(&dims, q, &Wm, nullptr, workspace, sizeof workspace, out),
                "the int8 arithmetic left out: a dense layer");
        edgeattn_workspace_request r{};
        r.op = EDGEATTN_OP_DENSE;
        r.dense = dims;
        r.arithmetic = EDGEATTN_ARITHMETIC_INT8;
        std::size_t bytes = 0;
        expect(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_NOT_BUILT,
               "the int8 arithmetic left out: its workspace");
        expect(cache_setup(EDGEATTN_DTYPE_INT8, EDGEATTN_ARITHMETIC_INT8) == EDGEATTN_ERR_NOT_BUILT,
               "the int8 arithmetic left out: an int8 cache's scores");
    }
#endif
    firmware::Line() << (failures ? "features left out: FAILED" : "features left out: all calls as the build says");
    return failures ? 1 : 0;
}
