// What the window KV cache tests share: a small decoder layer's fp32
// weights with their float64 projections, a cache in a vector, the rows
// a cache holds in stream order (the documented placement: position p in
// row p below the capacity, else in row S + (p - S) % W) read back and
// dequantised, and the float64 attention of queries over such rows.
#ifndef EDGEATTN_TESTS_WINDOW_CACHE_HELPERS_HPP
#define EDGEATTN_TESTS_WINDOW_CACHE_HELPERS_HPP

#include <doctest/doctest.h>
#include <edgeattn/edgeattn.h>

#include "path_helpers.hpp"
#include "reference.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace window_tests {

// W_q (h, d), W_k and W_v (h_kv, d), W_o (h, h) and their biases, fp32.
struct layer {
    std::size_t d, h, H, Hkv, hs, kvh;
    std::vector<float> Wq, Wk, Wv, Wo, bq, bk, bv, bo;
    layer(std::size_t d_, std::size_t h_, std::size_t H_, std::size_t Hkv_, unsigned seed)
        : d(d_), h(h_), H(H_), Hkv(Hkv_), hs(h_ / H_), kvh(Hkv_ * (h_ / H_)) {
        const float s = 1.0f / std::sqrt(static_cast<float>(d));
        Wq = test_paths::random_floats(h * d, seed, s);
        Wk = test_paths::random_floats(kvh * d, seed + 1, s);
        Wv = test_paths::random_floats(kvh * d, seed + 2, s);
        Wo = test_paths::random_floats(h * h, seed + 3, 1.0f / std::sqrt(static_cast<float>(h)));
        bq = test_paths::random_floats(h, seed + 4, 0.1f);
        bk = test_paths::random_floats(kvh, seed + 5, 0.1f);
        bv = test_paths::random_floats(kvh, seed + 6, 0.1f);
        bo = test_paths::random_floats(h, seed + 7, 0.1f);
    }
    edgeattn_weights weights() const {
        return {{EDGEATTN_DTYPE_F32, Wq.data(), nullptr}, {EDGEATTN_DTYPE_F32, Wk.data(), nullptr},
                {EDGEATTN_DTYPE_F32, Wv.data(), nullptr}, {EDGEATTN_DTYPE_F32, Wo.data(), nullptr},
                bq.data(), bk.data(), bv.data(), bo.data()};
    }
    edgeattn_attention_dims dims(std::size_t B, std::size_t Q, std::size_t capacity) const {
        return {B, Q, capacity, d, d, d, h, H, Hkv, 0};
    }
};

// y (out) = x (in) W^T + b in float64.
inline std::vector<double> project(const std::vector<float> &W, const std::vector<float> &b, const float *x,
                                   std::size_t in, std::size_t out) {
    std::vector<double> y(out);
    for (std::size_t o = 0; o < out; ++o) {
        double s = b.empty() ? 0.0 : b[o];
        for (std::size_t i = 0; i < in; ++i) s += static_cast<double>(x[i]) * W[o * in + i];
        y[o] = s;
    }
    return y;
}

struct window_cache {
    std::vector<float> memory;
    edgeattn_kv_cache c{};
    edgeattn_kv_cache_config config{};
    window_cache(std::size_t B, std::size_t Hkv, std::size_t hs, std::size_t sinks, std::size_t window,
                 edgeattn_dtype storage) {
        config = {B, Hkv, hs, sinks + window, storage, window, sinks, 0};
        const std::size_t bytes = edgeattn_kv_cache_memory_size(&config);
        REQUIRE(bytes > 0);
        memory.assign(bytes / 4, 0.0f);
        REQUIRE(edgeattn_kv_cache_setup(&c, &config, memory.data(), bytes) == EDGEATTN_OK);
    }
    // The documented row of stream position p.
    std::size_t row_of(std::size_t p) const {
        return p < c.capacity ? p : c.sinks + (p - c.sinks) % c.window;
    }
    // The positions held after `given` tokens, in stream order.
    std::vector<std::size_t> held(std::size_t given) const {
        std::vector<std::size_t> p;
        if (c.window == 0) {
            for (std::size_t i = 0; i < given; ++i) p.push_back(i);
            return p;
        }
        for (std::size_t i = 0; i < given && i < c.sinks; ++i) p.push_back(i);
        const std::size_t from = given > c.window && given - c.window > c.sinks ? given - c.window : c.sinks;
        for (std::size_t i = from; i < given; ++i) p.push_back(i);
        return p;
    }
    // Feature `col` of cache head (b, g)'s row `row`, dequantised.
    double at(bool values, std::size_t b, std::size_t g, std::size_t row, std::size_t col) const {
        const std::size_t r = (b * c.num_kv_heads + g) * c.capacity + row, e = r * c.head_size + col;
        const void *data = values ? c.stored_values : c.stored_keys;
        switch (c.storage) {
            case EDGEATTN_DTYPE_F16: return edgeattn_ref::half_value(static_cast<const std::uint16_t *>(data)[e]);
            case EDGEATTN_DTYPE_INT8:
                return static_cast<double>((values ? c.value_scales : c.key_scales)[r]) *
                       static_cast<const std::int8_t *>(data)[e];
            default: return static_cast<const float *>(data)[e];
        }
    }
    // Batch element b's held rows (L, h_kv), keys or values, in stream order.
    std::vector<double> rows(bool values, std::size_t b, const std::vector<std::size_t> &positions) const {
        const std::size_t kvh = c.num_kv_heads * c.head_size;
        std::vector<double> out(positions.size() * kvh);
        for (std::size_t j = 0; j < positions.size(); ++j)
            for (std::size_t g = 0; g < c.num_kv_heads; ++g)
                for (std::size_t col = 0; col < c.head_size; ++col)
                    out[j * kvh + g * c.head_size + col] = at(values, b, g, row_of(positions[j]), col);
        return out;
    }
};

// One batch element's attention in float64: queries (Q, h) already
// projected, over the L = held.size() rows keys / values (L, h_kv) held at
// stream positions `held`, after `given` tokens were stored; head n reads
// key/value head n / (H / Hkv); heads (Q, h) out, weights (H, Q, cap)
// (columns past L zero). Causal by stream position (query i at
// given - Q + i sees the held keys at or before it); the rest of the
// visibility and the bias by edgeattn_ref::Mask with K = L.
inline void attend_rows(std::size_t b, std::size_t Q, const std::vector<std::size_t> &held, std::size_t given,
                        std::size_t capacity, std::size_t H, std::size_t Hkv, std::size_t hs,
                        const std::vector<double> &queries, const std::vector<double> &keys,
                        const std::vector<double> &values, const edgeattn_ref::Mask &mask, std::vector<double> &heads,
                        std::vector<double> &weights) {
    const std::size_t h = H * hs, kvh = Hkv * hs, L = held.size();
    edgeattn_ref::Mask rest = mask;
    rest.causal = false;
    rest.key_positions.assign(held.begin(), held.end());  // the window by stream position
    rest.first_query_position = static_cast<std::int64_t>(given) - static_cast<std::int64_t>(Q);
    heads.assign(Q * h, 0.0);
    weights.assign(H * Q * capacity, 0.0);
    std::vector<double> score(L);
    for (std::size_t n = 0; n < H; ++n) {
        const std::size_t g = n / (H / Hkv);
        for (std::size_t i = 0; i < Q; ++i) {
            double top = -INFINITY;
            for (std::size_t j = 0; j < L; ++j) {
                double s = -1e6;
                const bool before = !mask.causal || held[j] + Q <= given + i;  // held[j] <= given - Q + i
                if (before && rest.visible(b, i, j, Q, L, INT64_MAX)) {
                    double dot = 0;
                    for (std::size_t c = 0; c < hs; ++c) dot += queries[i * h + n * hs + c] * keys[j * kvh + g * hs + c];
                    s = dot / std::sqrt(static_cast<double>(hs)) + mask.bias_at(b, n, i, j, Q);
                }
                score[j] = s;
                top = s > top ? s : top;
            }
            double sum = 0;
            for (std::size_t j = 0; j < L; ++j) sum += (score[j] = std::exp(score[j] - top));
            for (std::size_t j = 0; j < L; ++j) {
                const double w = score[j] / sum;
                weights[(n * Q + i) * capacity + j] = w;
                for (std::size_t c = 0; c < hs; ++c) heads[i * h + n * hs + c] += w * values[j * kvh + g * hs + c];
            }
        }
    }
}

}  // namespace window_tests

#endif
