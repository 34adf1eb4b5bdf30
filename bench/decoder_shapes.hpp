// Shapes of the decoder benchmarks, shared by bench_decoder.cpp
// (edgeattn, memcpy, memread) and bench_decoder_libtorch.cpp (libtorch), so
// bench/compare pairs them by name: <op>/<impl>/BxLxd_modelxHxH_kv.
#ifndef EDGEATTN_BENCH_DECODER_SHAPES_HPP
#define EDGEATTN_BENCH_DECODER_SHAPES_HPP

#include <cstddef>
#include <string>

#include "common.hpp"

namespace ebench {

// batch x len x d_model x heads x kv_heads. For the decode ops `len` is the
// number of positions already in the KV cache (L); for the prefill ops it is
// the sequence length (queries = keys = len).
struct DecoderShape {
    std::size_t batch, len, d_model, heads, kv_heads;
    std::size_t head_dim() const { return d_model / heads; }
    std::size_t group() const { return heads / kv_heads; }
    // Bytes of keys and values one decode step reads from the cache: 2 x L x h_kv floats.
    double cache_bytes() const {
        return 2.0 * sizeof(float) * static_cast<double>(batch * len * kv_heads * head_dim());
    }
};

inline std::string name(const char *op, const char *impl, const DecoderShape &s) {
    return name(op, impl, {s.batch, s.len, s.d_model, s.heads, s.kv_heads});
}

// decode_attend, decode_step, decode_sdpa: one new token (query) per batch
// element over a cache of L positions; the last two are grouped-query
// (kv heads 2) and multi-query (1) at the longest cache.
constexpr DecoderShape decode_shapes[] = {{1, 128, 512, 8, 8},
                                          {1, 1024, 512, 8, 8},
                                          {1, 4096, 512, 8, 8},
                                          {1, 4096, 512, 8, 2},
                                          {1, 4096, 512, 8, 1}};

// decode_step and decode_step_borrowed side by side: a small GPT-style
// decoder (d_model 128, 4 heads), where the projections weigh most of a
// step, and the 512-wide one of decode_shapes.
constexpr DecoderShape step_shapes[] = {{1, 128, 128, 4, 4}, {1, 1024, 128, 4, 4}, {1, 1024, 512, 8, 8}};

// prefill, prefill_causal (multi-head self-attention, packed weights) and,
// where kv_heads == heads, prefill_sdpa, prefill_sdpa_causal (the attention
// core: batch*heads dot-product attentions of len x len, d = d_model/heads).
constexpr DecoderShape prefill_shapes[] = {{1, 512, 512, 8, 8},
                                           {1, 512, 512, 8, 2},
                                           {1, 2048, 512, 8, 8},
                                           {1, 2048, 512, 8, 2}};

// Floating-point operations of the attention core of a prefill (Q K^T and
// weights . V, 2 flops per multiply-add), counting only the key positions a
// row sees: all len of them, or 1..len under the causal mask.
inline double prefill_sdpa_flops(const DecoderShape &s, bool causal) {
    const double n = static_cast<double>(s.len), pairs = causal ? n * (n + 1.0) / 2.0 : n * n;
    return 4.0 * static_cast<double>(s.batch * s.heads * s.head_dim()) * pairs;
}

// The same plus the four projections (W_k and W_v have kv_heads * head_dim rows).
inline double prefill_flops(const DecoderShape &s, bool causal) {
    const double rows = static_cast<double>(s.batch * s.len), d = static_cast<double>(s.d_model);
    const double h_kv = static_cast<double>(s.kv_heads * s.head_dim());
    return 2.0 * rows * d * (2.0 * d + 2.0 * h_kv) + prefill_sdpa_flops(s, causal);
}

}  // namespace ebench

#endif
