// Instructions per call on the board: each op at d2l's shapes and at a
// small decoder's, beside a naive baseline (the d2l formulas as plain loops,
// compiled the same way), counted by SysTick under QEMU's `-icount shift=0`
// (instruction_clock.hpp: exact and the same on every run). Instructions, not cycles: a board's loads stall, a Helium
// instruction takes two or more beats; a measurement on a board would
// replace these numbers.
//
// One line per path and op: `bench <path> <op> <shape>: edgeattn <n> instructions, naive <n>
// instructions (naive / edgeattn <r>), rel L2 <e>`, and where the build
// has a CMSIS-DSP checkout (EDGEATTN_BENCH_CMSIS_DSP: softmax, mha and the
// decode step composed from its calls, cmsis_dsp_compositions.hpp) `,
// cmsis-dsp <n> instructions (cmsis-dsp / edgeattn <r>), rel L2 <e>` for
// the cheaper composition; bench/mcu_table turns the lines of every build
// into docs/microcontrollers.md's table. The outputs are compared (rel L2
// below 1e-4, else the run fails): all compute the same thing.
#include <edgeattn/edgeattn.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "instruction_clock.hpp"
#if defined(EDGEATTN_BENCH_CMSIS_DSP)
#include "cmsis_dsp_compositions.hpp"
#endif
#include "report.hpp"

namespace {

using firmware::instructions;

double rel_l2(const float *a, const float *b, std::size_t n) {
    double num = 0, den = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(a[i]) - b[i];
        num += d * d;
        den += static_cast<double>(b[i]) * b[i];
    }
    return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// A peer's count and output (n floats), compared with edgeattn's cheaper
// call (best: the op's count, or another call's, e.g. with packed weights).
struct peer_run {
    std::size_t instructions;
    const float *output;
    std::size_t best = 0;
};

// edgeattn's output a against the naive loops' b and the peer's (if any).
bool report(const char *op, const char *shape, std::size_t ours, std::size_t naive, const float *a, const float *b,
            std::size_t n, const peer_run *cmsis = nullptr) {
    const double err = rel_l2(a, b, n);
    bool ok = err < 1e-4;
    firmware::Line line;
    line << "bench " << edgeattn_isa_name(edgeattn_current_isa()) << " " << op << " " << shape << ": edgeattn "
         << ours << " instructions, naive " << naive << " instructions (naive / edgeattn "
         << (ours ? static_cast<double>(naive) / ours : 0.0) << "), rel L2 " << err;
    if (cmsis) {
        const double peer_err = rel_l2(cmsis->output, b, n);
        ok = ok && peer_err < 1e-4;
        const std::size_t best = cmsis->best && cmsis->best < ours ? cmsis->best : ours;
        line << ", cmsis-dsp " << cmsis->instructions << " instructions (cmsis-dsp / edgeattn "
             << (best ? static_cast<double>(cmsis->instructions) / best : 0.0) << "), rel L2 " << peer_err;
    }
    line << (ok ? "" : " FAILED");
    return ok;
}

void fill(float *x, std::size_t n, std::uint32_t seed, float scale) {
    for (std::size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = scale * (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f);
    }
}

// ------------------------------------------------------------ naive baselines

// d2l's masked_softmax of one row: keys at or past `valid` score -1e6.
void naive_softmax_row(const float *x, float *y, std::size_t n, std::size_t valid) {
    float m = -INFINITY;
    for (std::size_t j = 0; j < n; ++j) {
        const float s = j < valid ? x[j] : -1e6f;
        m = s > m ? s : m;
    }
    float sum = 0;
    for (std::size_t j = 0; j < n; ++j) sum += y[j] = std::exp((j < valid ? x[j] : -1e6f) - m);
    for (std::size_t j = 0; j < n; ++j) y[j] /= sum;
}

// y (n, out) = x (n, in) W^T (+ b).
void naive_linear(const float *x, const float *W, const float *b, float *y, std::size_t n, std::size_t in,
                  std::size_t out) {
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t o = 0; o < out; ++o) {
            float s = b ? b[o] : 0.0f;
            for (std::size_t k = 0; k < in; ++k) s += x[i * in + k] * W[o * in + k];
            y[i * out + o] = s;
        }
}

// One batch element of scaled dot-product attention: q (Q, d) with row
// stride ldq, k (K, d) ldk, v (K, dv) ldv, out (Q, dv) ldo; `valid` keys.
void naive_sdpa(const float *q, std::size_t ldq, const float *k, std::size_t ldk, const float *v, std::size_t ldv,
                float *out, std::size_t ldo, std::size_t Q, std::size_t K, std::size_t d, std::size_t dv,
                std::size_t valid, float *scores) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (std::size_t i = 0; i < Q; ++i) {
        for (std::size_t j = 0; j < K; ++j) {
            float s = 0;
            for (std::size_t c = 0; c < d; ++c) s += q[i * ldq + c] * k[j * ldk + c];
            scores[j] = s * scale;
        }
        naive_softmax_row(scores, scores, K, valid);
        for (std::size_t c = 0; c < dv; ++c) {
            float s = 0;
            for (std::size_t j = 0; j < K; ++j) s += scores[j] * v[j * ldv + c];
            out[i * ldo + c] = s;
        }
    }
}

// ------------------------------------------------------------ the ops

alignas(8) unsigned char workspace[256 * 1024];
float scratch[4096];

bool softmax_rows() {
    constexpr std::size_t R = 10, C = 100;
    static float X[R * C], Y[R * C], Z[R * C];
    fill(X, R * C, 1, 8.0f);
    const edgeattn_softmax_dims dims{1, R, C};
    const std::size_t ours = instructions([&] { edgeattn_masked_softmax(&dims, X, nullptr, Y); });
    const std::size_t naive = instructions([&] {
        for (std::size_t r = 0; r < R; ++r) naive_softmax_row(X + r * C, Z + r * C, C, C);
    });
#if defined(EDGEATTN_BENCH_CMSIS_DSP)
    static float P[R * C];
    const peer_run cmsis{instructions([&] { cmsis_dsp::softmax_rows(X, P, R, C); }), P};
    return report("softmax", "10x100", ours, naive, Y, Z, R * C, &cmsis);
#else
    return report("softmax", "10x100", ours, naive, Y, Z, R * C);
#endif
}

// d2l's DotProductAttention example: queries (2, 1, 2), keys (2, 10, 2),
// values (2, 10, 4), valid lengths 2 and 6.
bool sdpa_d2l() {
    constexpr std::size_t B = 2, Q = 1, K = 10, d = 2, dv = 4;
    static float q[B * Q * d], k[B * K * d], v[B * K * dv], y[B * Q * dv], z[B * Q * dv];
    fill(q, B * Q * d, 2, 2.0f);
    fill(k, B * K * d, 3, 2.0f);
    fill(v, B * K * dv, 4, 2.0f);
    static const std::int32_t lens[B] = {2, 6};
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    const edgeattn_attention_dims dims{B, Q, K, d, d, dv, 0, 0, 0, 0};
    const std::size_t ours =
        instructions([&] { edgeattn_sdpa(&dims, q, k, v, &o, workspace, sizeof workspace, y, nullptr); });
    const std::size_t naive = instructions([&] {
        for (std::size_t b = 0; b < B; ++b)
            naive_sdpa(q + b * Q * d, d, k + b * K * d, d, v + b * K * dv, dv, z + b * Q * dv, dv, Q, K, d, dv,
                       static_cast<std::size_t>(lens[b]), scratch);
    });
    return report("sdpa", "2x1x10 d2 v4", ours, naive, y, z, B * Q * dv);
}

// d2l's AdditiveAttention example: queries (2, 1, 20), keys (2, 10, 2),
// values (2, 10, 4), 8 hidden units, valid lengths 2 and 6.
bool additive_d2l() {
    constexpr std::size_t B = 2, Q = 1, K = 10, qs = 20, ks = 2, dv = 4, h = 8;
    static float q[B * Q * qs], k[B * K * ks], v[B * K * dv], Wq[h * qs], Wk[h * ks], wv[h], y[B * Q * dv],
        z[B * Q * dv];
    fill(q, B * Q * qs, 5, 2.0f);
    fill(k, B * K * ks, 6, 2.0f);
    fill(v, B * K * dv, 7, 2.0f);
    fill(Wq, h * qs, 8, 0.5f);
    fill(Wk, h * ks, 9, 0.5f);
    fill(wv, h, 10, 1.0f);
    static const std::int32_t lens[B] = {2, 6};
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    edgeattn_weights w{};
    w.W_q = {EDGEATTN_DTYPE_F32, Wq, nullptr};
    w.W_k = {EDGEATTN_DTYPE_F32, Wk, nullptr};
    w.W_v = {EDGEATTN_DTYPE_F32, wv, nullptr};
    const edgeattn_attention_dims dims{B, Q, K, qs, ks, dv, h, 0, 0, 0};
    const std::size_t ours =
        instructions([&] { edgeattn_additive(&dims, q, k, v, &w, &o, workspace, sizeof workspace, y, nullptr); });
    const std::size_t naive = instructions([&] {
        float fq[h], fk[K * h], s[K];
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t i = 0; i < Q; ++i) {
                naive_linear(q + (b * Q + i) * qs, Wq, nullptr, fq, 1, qs, h);
                naive_linear(k + b * K * ks, Wk, nullptr, fk, K, ks, h);
                for (std::size_t j = 0; j < K; ++j) {
                    float t = 0;
                    for (std::size_t c = 0; c < h; ++c) t += wv[c] * std::tanh(fq[c] + fk[j * h + c]);
                    s[j] = t;
                }
                naive_softmax_row(s, s, K, static_cast<std::size_t>(lens[b]));
                for (std::size_t c = 0; c < dv; ++c) {
                    float t = 0;
                    for (std::size_t j = 0; j < K; ++j) t += s[j] * v[(b * K + j) * dv + c];
                    z[(b * Q + i) * dv + c] = t;
                }
            }
    });
    return report("additive", "2x1x10 q20 k2 v4 h8", ours, naive, y, z, B * Q * dv);
}

// d2l's MultiHeadAttention example: 100 hidden units, 5 heads, batch 2,
// 4 queries over 6 key-value pairs, valid lengths 3 and 2.
bool mha_d2l() {
    constexpr std::size_t B = 2, Q = 4, K = 6, d = 100, H = 5, hs = d / H;
    static float x[B * Q * d], kv[B * K * d], W[4][d * d], y[B * Q * d], z[B * Q * d];
    static float pq[Q * d], pk[K * d], pv[K * d], heads[Q * d];
    fill(x, B * Q * d, 11, 2.0f);
    fill(kv, B * K * d, 12, 2.0f);
    for (std::size_t m = 0; m < 4; ++m) fill(W[m], d * d, 13 + static_cast<std::uint32_t>(m), 0.2f);
    static const std::int32_t lens[B] = {3, 2};
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    edgeattn_weights w{};
    w.W_q = {EDGEATTN_DTYPE_F32, W[0], nullptr};
    w.W_k = {EDGEATTN_DTYPE_F32, W[1], nullptr};
    w.W_v = {EDGEATTN_DTYPE_F32, W[2], nullptr};
    w.W_o = {EDGEATTN_DTYPE_F32, W[3], nullptr};
    const edgeattn_attention_dims dims{B, Q, K, d, d, d, d, H, 0, 0};
    const std::size_t ours =
        instructions([&] { edgeattn_mha(&dims, x, kv, kv, &w, &o, workspace, sizeof workspace, y, nullptr); });
    const std::size_t naive = instructions([&] {
        for (std::size_t b = 0; b < B; ++b) {
            naive_linear(x + b * Q * d, W[0], nullptr, pq, Q, d, d);
            naive_linear(kv + b * K * d, W[1], nullptr, pk, K, d, d);
            naive_linear(kv + b * K * d, W[2], nullptr, pv, K, d, d);
            for (std::size_t n = 0; n < H; ++n)
                naive_sdpa(pq + n * hs, d, pk + n * hs, d, pv + n * hs, d, heads + n * hs, d, Q, K, hs, hs,
                           static_cast<std::size_t>(lens[b]), scratch);
            naive_linear(heads, W[3], nullptr, z + b * Q * d, Q, d, d);
        }
    });
#if defined(EDGEATTN_BENCH_CMSIS_DSP)
    // W^T stored beforehand (arm_mat_mult_f32), or W as given (a
    // matrix-vector product per row): the cheaper.
    static float WT[4][d * d], p[B * Q * d], p_given[B * Q * d];
    static float peer_scratch[2 * B * Q * d + 2 * B * K * d + d * K + 2 * Q * hs + K * hs + Q * K];
    const cmsis_dsp::mha_shape shape{B, Q, K, d, H};
    const float *const Ws[4] = {W[0], W[1], W[2], W[3]}, *const WTs[4] = {WT[0], WT[1], WT[2], WT[3]};
    for (std::size_t m = 0; m < 4; ++m) cmsis_dsp::transpose(W[m], WT[m], d);
    const bool fits = cmsis_dsp::mha_scratch_floats(shape) <= sizeof peer_scratch / sizeof(float);
    const std::size_t stored = instructions([&] { cmsis_dsp::mha(shape, x, kv, lens, Ws, WTs, p, peer_scratch); });
    const std::size_t given = instructions([&] { cmsis_dsp::mha(shape, x, kv, lens, Ws, nullptr, p_given, peer_scratch); });
    // edgeattn's cheaper call: as given, or packed once (edgeattn_mha_packed).
    // Panels of 64 columns: 128 for d's 100.
    alignas(8) static unsigned char packed[4 * 128 * d * 4 + 4096];
    static float y_packed[B * Q * d];
    const std::size_t packed_bytes = edgeattn_mha_packed_size(&dims, &w);
    const bool packs = packed_bytes <= sizeof packed && edgeattn_mha_pack(&dims, &w, packed, packed_bytes) == EDGEATTN_OK;
    const std::size_t ours_packed = instructions([&] {
        edgeattn_mha_packed(&dims, x, kv, kv, packed, packed_bytes, &o, workspace, sizeof workspace, y_packed, nullptr);
    });
    const bool packed_agrees = rel_l2(y_packed, z, B * Q * d) < 1e-4;
    if (!fits || !packs || !packed_agrees) {
        firmware::Line() << "bench mha: FAILED (peer scratch fits " << static_cast<int>(fits) << ", packed "
                         << static_cast<int>(packs) << " in " << packed_bytes << " bytes, agrees "
                         << static_cast<int>(packed_agrees) << ")";
        return false;
    }
    peer_run cmsis = stored <= given ? peer_run{stored, p} : peer_run{given, p_given};
    cmsis.best = ours_packed;
    return report("mha", "2x4x6 d100 h5", ours, naive, y, z, B * Q * d, &cmsis);
#else
    return report("mha", "2x4x6 d100 h5", ours, naive, y, z, B * Q * d);
#endif
}

// d2l's MultiHeadAttention example with int8 weights (edgeattn_quantize_int8):
// the fp32 arithmetic (each weight widened) against the int8 arithmetic
// (rows of x quantised, int32 sums: SMLAD, VMLADAVA). A line of its own,
// `int8 arithmetic <path> mha <shape>: fp32 arithmetic <n> instructions,
// int8 arithmetic <n> instructions (int8 / fp32 <r>), rel L2 <e>` (e: the
// two outputs apart, the activations' quantisation: below 1e-2, else the
// run fails).
bool mha_int8_arithmetic() {
    constexpr std::size_t B = 2, Q = 4, K = 6, d = 100, H = 5;
    static float x[B * Q * d], kv[B * K * d], W[d * d], scales[4][d], y[B * Q * d], z[B * Q * d];
    static std::int8_t W8[4][d * d];
    fill(x, B * Q * d, 11, 2.0f);
    fill(kv, B * K * d, 12, 2.0f);
    bool ok = true;
    for (std::size_t m = 0; m < 4; ++m) {
        fill(W, d * d, 13 + static_cast<std::uint32_t>(m), 0.2f);
        ok &= edgeattn_quantize_int8(d, d, W, W8[m], scales[m]) == EDGEATTN_OK;
    }
    static const std::int32_t lens[B] = {3, 2};
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    const edgeattn_attention_dims dims{B, Q, K, d, d, d, d, H, 0, 0};
    edgeattn_workspace_request r{};
    r.op = EDGEATTN_OP_MHA;
    r.dims = dims;
    r.arithmetic = EDGEATTN_ARITHMETIC_INT8;
    std::size_t bytes = 0;
    ok &= edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_OK && bytes <= sizeof workspace;
    std::size_t counts[2] = {0, 0};
    float *outs[2] = {z, y};
    for (int integer = 0; integer < 2 && ok; ++integer) {
        const edgeattn_arithmetic a = integer ? EDGEATTN_ARITHMETIC_INT8 : EDGEATTN_ARITHMETIC_FLOAT;
        edgeattn_weights w{};
        w.W_q = {EDGEATTN_DTYPE_INT8, W8[0], scales[0], a};
        w.W_k = {EDGEATTN_DTYPE_INT8, W8[1], scales[1], a};
        w.W_v = {EDGEATTN_DTYPE_INT8, W8[2], scales[2], a};
        w.W_o = {EDGEATTN_DTYPE_INT8, W8[3], scales[3], a};
        edgeattn_status st = EDGEATTN_OK;
        counts[integer] = instructions(
            [&] { st = edgeattn_mha(&dims, x, kv, kv, &w, &o, workspace, sizeof workspace, outs[integer], nullptr); });
        ok &= st == EDGEATTN_OK;
    }
    const double err = rel_l2(y, z, B * Q * d);
    ok &= err < 1e-2;
    firmware::Line() << "int8 arithmetic " << edgeattn_isa_name(edgeattn_current_isa())
                     << " mha 2x4x6 d100 h5: fp32 arithmetic " << counts[0] << " instructions, int8 arithmetic "
                     << counts[1] << " instructions (int8 / fp32 "
                     << (counts[0] ? static_cast<double>(counts[1]) / counts[0] : 0.0) << "), rel L2 " << err
                     << (ok ? "" : " FAILED");
    return ok;
}

// d2l's PositionalEncoding example (60 steps, 32 features): X + P, the
// table computed once beforehand by both.
bool posenc_d2l() {
    constexpr std::size_t n = 60, d = 32;
    static float P[n * d], Pn[n * d], X[n * d], Y[n * d], Z[n * d];
    edgeattn_positional_encoding_table(n, d, P);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < d; j += 2) {
            const float a = static_cast<float>(i) / std::pow(10000.0f, static_cast<float>(j) / d);
            Pn[i * d + j] = std::sin(a);
            Pn[i * d + j + 1] = std::cos(a);
        }
    fill(X, n * d, 17, 2.0f);
    const std::size_t ours = instructions([&] { edgeattn_positional_encoding_add_at(1, n, d, 0, X, P, n, Y); });
    const std::size_t naive = instructions([&] {
        for (std::size_t i = 0; i < n * d; ++i) Z[i] = X[i] + Pn[i];
    });
    return report("posenc", "1x60x32", ours, naive, Y, Z, n * d);
}

// A small decoder's step: d_model 64, 4 heads, fp32 weights, one token's
// query projected, attending over a full cache of 256 positions, the heads
// projected out (edgeattn_kv_cache_attend with W_q and W_o).
bool decode_step() {
    constexpr std::size_t L = 256, d = 64, H = 4, hs = d / H;
    static float K[L * d], V[L * d], W[4][d * d], x[d], y[d], z[d], pq[d], heads[d], s[L];
    static unsigned char cache_memory[2 * L * d * 4 + 1024];
    fill(K, L * d, 21, 2.0f);
    fill(V, L * d, 22, 2.0f);
    fill(x, d, 23, 2.0f);
    for (std::size_t m = 0; m < 4; ++m) fill(W[m], d * d, 24 + static_cast<std::uint32_t>(m), 0.25f);
    edgeattn_kv_cache_config config{};
    config.batch = 1;
    config.num_kv_heads = H;
    config.head_size = hs;
    config.capacity = L;
    edgeattn_kv_cache cache{};
    edgeattn_status st = edgeattn_kv_cache_memory_size(&config) > sizeof cache_memory
                             ? EDGEATTN_ERR_WORKSPACE_TOO_SMALL
                             : edgeattn_kv_cache_setup(&cache, &config, cache_memory, sizeof cache_memory);
    // The cached keys and values as given (projection-free store).
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    const edgeattn_attention_dims fill_dims{1, 1, L, d, d, d, d, H, 0, 0};
    if (st == EDGEATTN_OK)
        st = edgeattn_kv_cache_store(&cache, &fill_dims, L, K, V, &none, nullptr, workspace, sizeof workspace);
    if (st != EDGEATTN_OK) {
        firmware::Line() << "bench decode: the cache's setup or fill failed, status " << static_cast<int>(st);
        return false;
    }
    edgeattn_weights w = none;
    w.W_q = {EDGEATTN_DTYPE_F32, W[0], nullptr};
    w.W_o = {EDGEATTN_DTYPE_F32, W[3], nullptr};
    const edgeattn_attention_dims dims{1, 1, L, d, d, d, d, H, 0, 0};
    const std::size_t ours = instructions(
        [&] { edgeattn_kv_cache_attend(&cache, &dims, x, &w, nullptr, workspace, sizeof workspace, y, nullptr); });
    const std::size_t naive = instructions([&] {
        naive_linear(x, W[0], nullptr, pq, 1, d, d);
        for (std::size_t n = 0; n < H; ++n)
            naive_sdpa(pq + n * hs, d, K + n * hs, d, V + n * hs, d, heads + n * hs, d, 1, L, hs, hs, L, s);
        naive_linear(heads, W[3], nullptr, z, 1, d, d);
    });
#if defined(EDGEATTN_BENCH_CMSIS_DSP)
    // The cache per head, (H, L, hs) as edgeattn keeps it; its values also
    // transposed per head (H, hs, L). The cheaper of the two.
    static float Kh[H * L * hs], Vh[H * L * hs], VT[H * hs * L], p[d], p_as_keys[d], peer_scratch[d + L + d];
    for (std::size_t n = 0; n < H; ++n)
        for (std::size_t j = 0; j < L; ++j)
            for (std::size_t c = 0; c < hs; ++c) {
                Kh[(n * L + j) * hs + c] = K[j * d + n * hs + c];
                Vh[(n * L + j) * hs + c] = V[j * d + n * hs + c];
                VT[(n * hs + c) * L + j] = V[j * d + n * hs + c];
            }
    const std::size_t transposed =
        instructions([&] { cmsis_dsp::decode(L, d, H, x, W[0], W[3], Kh, VT, nullptr, p, peer_scratch); });
    const std::size_t as_keys =
        instructions([&] { cmsis_dsp::decode(L, d, H, x, W[0], W[3], Kh, nullptr, Vh, p_as_keys, peer_scratch); });
    const peer_run cmsis = transposed <= as_keys ? peer_run{transposed, p} : peer_run{as_keys, p_as_keys};
    return report("decode", "L256 d64 h4", ours, naive, y, z, d, &cmsis);
#else
    return report("decode", "L256 d64 h4", ours, naive, y, z, d);
#endif
}

}  // namespace

// Each op on each kernel path the build has: the plain C++ path, and
// Helium on the Cortex-M55.
int main() {
    firmware::systick_start();
    bool ok = true;
    const edgeattn_isa paths[] = {EDGEATTN_ISA_SCALAR, EDGEATTN_ISA_HELIUM};
    for (edgeattn_isa path : paths) {
        if (!edgeattn_isa_supported(path)) continue;
        ok &= edgeattn_set_isa(path) == EDGEATTN_OK;
        ok &= softmax_rows();
        ok &= sdpa_d2l();
        ok &= additive_d2l();
        ok &= mha_d2l();
        ok &= mha_int8_arithmetic();
        ok &= posenc_d2l();
        ok &= decode_step();
    }
    firmware::Line() << (ok ? "bench: all outputs agree" : "bench: FAILED");
    return ok ? 0 : 1;
}
