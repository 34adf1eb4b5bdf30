// edgeattn-bench-decoder-libtorch: the decoder benchmarks of
// bench_decoder.cpp run with PyTorch's C++ library (impl "libtorch";
// Debian's libtorch 1.13, CPU), in inference mode (torch::NoGradGuard),
// intra-op threads = bench_threads(). Shapes: decoder_shapes.hpp.
//
// 1.13 has no public torch::scaled_dot_product_attention (2.0's); its entry
// point is at::_scaled_dot_product_attention(q, k, v, attn_mask, dropout_p,
// need_attn_weights, is_causal), the math path on CPU (q/sqrt(sqrt(d)) @
// (k/sqrt(sqrt(d)))^T, softmax, @ v). Its is_causal mask is tril(ones(Q, K)),
// aligned top-left, so it is right only for Q == K: the decode steps (one
// query that sees the whole cache) pass no mask, as they need none.
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "common.hpp"
#include "torch_bench.hpp"
#include "decoder_shapes.hpp"

namespace ebench {
namespace {

torch::Tensor sdpa(const torch::Tensor &q, const torch::Tensor &k, const torch::Tensor &v,
                   bool causal = false) {
    return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, 0.0, false, causal));
}

// The decoder's tensors: weights as torch.nn.Linear stores them (W_q, W_o
// (d, d), W_k, W_v (h_kv, d), no biases), one new token x (B, 1, d) and a
// cache (B, H_kv, capacity, head) of keys and values (random; the first L
// positions are the cached tokens).
struct Decoder {
    int64_t B, L, d, H, Hkv, hd, G;
    torch::Tensor Wq, Wk, Wv, Wo, x, K, V;

    Decoder(const DecoderShape &s, int64_t capacity)
        : B(static_cast<int64_t>(s.batch)), L(static_cast<int64_t>(s.len)),
          d(static_cast<int64_t>(s.d_model)), H(static_cast<int64_t>(s.heads)),
          Hkv(static_cast<int64_t>(s.kv_heads)), hd(static_cast<int64_t>(s.head_dim())),
          G(static_cast<int64_t>(s.group())) {
        const float wscale = 1.0f / std::sqrt(static_cast<float>(d));
        Wq = random_tensor({d, d}, 6, wscale);
        Wk = random_tensor({Hkv * hd, d}, 7, wscale);
        Wv = random_tensor({Hkv * hd, d}, 8, wscale);
        Wo = random_tensor({d, d}, 9, wscale);
        x = random_tensor({B, 1, d}, 12);
        K = random_tensor({B, Hkv, capacity, hd}, 3);
        V = random_tensor({B, Hkv, capacity, hd}, 4);
    }

    // Attention of the new token over the first `len` cached positions:
    // W_q, per-head attention, W_o. With grouped-query heads the G query
    // heads of kv head g are G query rows of one attention over its cache
    // (q (B, H_kv, G, hd)), so no key or value is copied or repeated.
    torch::Tensor attend(int64_t len) const {
        torch::Tensor q = at::linear(x, Wq).view({B, Hkv, G, hd});  // head j = g * G + r
        torch::Tensor o = sdpa(q, K.narrow(2, 0, len), V.narrow(2, 0, len));  // (B, H_kv, G, hd)
        return at::linear(o.reshape({B, 1, d}), Wo);
    }
};

// edgeattn's decode_attend: one new query over a full cache of L positions,
// with the W_q and W_o projections.
void decode_attend(benchmark::State &state, DecoderShape s) {
    torch::NoGradGuard no_grad;
    Decoder m(s, static_cast<int64_t>(s.len));
    for (auto _ : state) {
        torch::Tensor out = m.attend(m.L);
        benchmark::DoNotOptimize(out.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_bytes(state, s.cache_bytes());
}

// edgeattn's decode_step: project the new token's key and value (W_k, W_v),
// write them at position L of a cache of capacity L + 1, attend over the
// L + 1 positions (W_q, attention, W_o). The same position is written every
// iteration (nothing to reset).
void decode_step(benchmark::State &state, DecoderShape s) {
    torch::NoGradGuard no_grad;
    Decoder m(s, static_cast<int64_t>(s.len) + 1);
    for (auto _ : state) {
        m.K.narrow(2, m.L, 1).copy_(at::linear(m.x, m.Wk).view({m.B, 1, m.Hkv, m.hd}).transpose(1, 2));
        m.V.narrow(2, m.L, 1).copy_(at::linear(m.x, m.Wv).view({m.B, 1, m.Hkv, m.hd}).transpose(1, 2));
        torch::Tensor out = m.attend(m.L + 1);
        benchmark::DoNotOptimize(out.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_bytes(state, s.cache_bytes());
}

// The attention alone: q (B, H_kv, G, hd) over K, V (B, H_kv, L, hd) — for
// 8 heads without GQA q (1, 8, 1, 64), K and V (1, 8, L, 64).
void decode_sdpa(benchmark::State &state, DecoderShape s) {
    torch::NoGradGuard no_grad;
    Decoder m(s, static_cast<int64_t>(s.len));
    torch::Tensor q = random_tensor({m.B, m.Hkv, m.G, m.hd}, 13);
    for (auto _ : state) {
        torch::Tensor o = sdpa(q, m.K, m.V);
        benchmark::DoNotOptimize(o.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_bytes(state, s.cache_bytes());
}

// torch::nn::MultiheadAttention(d_model, heads).bias(false), eval mode,
// self-attention on X stored (n, B, d) (1.13's C++ module has no
// batch_first), no weights returned; causal: attn_mask a (n, n) float mask,
// -inf above the diagonal, built outside the timing. No grouped-query heads
// in torch's module: only kv_heads == heads.
void prefill(benchmark::State &state, DecoderShape s, bool causal) {
    torch::NoGradGuard no_grad;
    const int64_t B = static_cast<int64_t>(s.batch), n = static_cast<int64_t>(s.len),
                  d = static_cast<int64_t>(s.d_model), H = static_cast<int64_t>(s.heads);
    torch::nn::MultiheadAttention attn = torch_mha(d, H);
    torch::Tensor X = random_tensor({B, n, d}, 5).transpose(0, 1).contiguous();  // (n, B, d)
    torch::Tensor mask;
    if (causal)
        mask = torch::full({n, n}, -std::numeric_limits<float>::infinity()).triu(1);
    for (auto _ : state) {
        auto out = attn->forward(X, X, X, {}, /*need_weights=*/false, mask);
        benchmark::DoNotOptimize(std::get<0>(out).data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_flops(state, prefill_flops(s, causal));
}

// The attention core: (B*H, n, d) queries, keys, values,
// at::_scaled_dot_product_attention with is_causal (Q == K here).
void prefill_sdpa(benchmark::State &state, DecoderShape s, bool causal) {
    torch::NoGradGuard no_grad;
    const int64_t BH = static_cast<int64_t>(s.batch * s.heads), n = static_cast<int64_t>(s.len),
                  d = static_cast<int64_t>(s.head_dim());
    torch::Tensor Q = random_tensor({BH, n, d}, 2), K = random_tensor({BH, n, d}, 3),
                  V = random_tensor({BH, n, d}, 4);
    for (auto _ : state) {
        torch::Tensor O = sdpa(Q, K, V, causal);
        benchmark::DoNotOptimize(O.data_ptr<float>());
        benchmark::ClobberMemory();
    }
    set_flops(state, prefill_sdpa_flops(s, causal));
}

}  // namespace

void register_benchmarks() {
    at::set_num_threads(bench_threads());
    benchmark::AddCustomContext("torch_threads", std::to_string(at::get_num_threads()));
    for (const auto &s : decode_shapes) {
        configure(benchmark::RegisterBenchmark(name("decode_attend", "libtorch", s).c_str(), decode_attend, s));
        configure(benchmark::RegisterBenchmark(name("decode_step", "libtorch", s).c_str(), decode_step, s));
        configure(benchmark::RegisterBenchmark(name("decode_sdpa", "libtorch", s).c_str(), decode_sdpa, s));
    }
    for (const auto &s : prefill_shapes) {
        if (s.kv_heads != s.heads) continue;  // no grouped-query heads in torch 1.13
        configure(benchmark::RegisterBenchmark(name("prefill", "libtorch", s).c_str(), prefill, s, false));
        configure(benchmark::RegisterBenchmark(name("prefill_causal", "libtorch", s).c_str(), prefill, s, true));
        configure(benchmark::RegisterBenchmark(name("prefill_sdpa", "libtorch", s).c_str(), prefill_sdpa, s, false));
        configure(benchmark::RegisterBenchmark(name("prefill_sdpa_causal", "libtorch", s).c_str(), prefill_sdpa, s, true));
    }
}

}  // namespace ebench
