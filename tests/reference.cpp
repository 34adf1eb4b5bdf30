// float64 reference; see reference.hpp. Written from the d2l definitions,
// clarity over speed.
#include "reference.hpp"

#include <algorithm>
#include <cmath>

namespace edgeattn_ref {

std::int64_t ValidLens::of(std::size_t b, std::size_t i, std::size_t Q, std::size_t K) const {
    switch (kind) {
    case per_batch: return lens[b];
    case per_query: return lens[b * Q + i];
    case none: break;
    }
    return static_cast<std::int64_t>(K);
}

void masked_softmax(std::size_t B, std::size_t Q, std::size_t K, const double *X, const ValidLens &vl, double *Y) {
    std::vector<double> row(K);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Q; ++i) {
            const double *x = X + (b * Q + i) * K;
            double *y = Y + (b * Q + i) * K;
            std::int64_t len = vl.of(b, i, Q, K);
            // d2l's sequence_mask: -1e6, not -inf, so an all-masked row is uniform.
            for (std::size_t j = 0; j < K; ++j) row[j] = static_cast<std::int64_t>(j) < len ? x[j] : -1e6;
            double mx = *std::max_element(row.begin(), row.end());
            double sum = 0;
            for (std::size_t j = 0; j < K; ++j) sum += (y[j] = std::exp(row[j] - mx));
            for (std::size_t j = 0; j < K; ++j) y[j] /= sum;
        }
}

// w (Q,K) times values (K,v) -> out (Q,v), for one batch element (or head).
static void weighted_sum(std::size_t Q, std::size_t K, std::size_t v, const double *w, const double *values,
                         std::size_t value_stride, double *out, std::size_t out_stride) {
    for (std::size_t i = 0; i < Q; ++i)
        for (std::size_t c = 0; c < v; ++c) {
            double s = 0;
            for (std::size_t j = 0; j < K; ++j) s += w[i * K + j] * values[j * value_stride + c];
            out[i * out_stride + c] = s;
        }
}

void dot_product_attention(std::size_t B, std::size_t Q, std::size_t K, std::size_t d, std::size_t v,
                           const double *queries, const double *keys, const double *values, const ValidLens &vl,
                           double *out, double *w) {
    std::vector<double> scores(B * Q * K);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Q; ++i)
            for (std::size_t j = 0; j < K; ++j) {
                double s = 0;
                for (std::size_t c = 0; c < d; ++c) s += queries[(b * Q + i) * d + c] * keys[(b * K + j) * d + c];
                scores[(b * Q + i) * K + j] = s * scale;
            }
    masked_softmax(B, Q, K, scores.data(), vl, w);
    for (std::size_t b = 0; b < B; ++b) weighted_sum(Q, K, v, w + b * Q * K, values + b * K * v, v, out + b * Q * v, v);
}

void linear(std::size_t n, std::size_t in, std::size_t out, const double *x, const double *W,
                   const double *bias, double *y) {
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t o = 0; o < out; ++o) {
            double s = bias ? bias[o] : 0.0;
            for (std::size_t c = 0; c < in; ++c) s += x[r * in + c] * W[o * in + c];
            y[r * out + o] = s;
        }
}

void additive_attention(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks, std::size_t vs,
                        std::size_t h, const double *queries, const double *keys, const double *values,
                        const ValidLens &vl, const double *W_q, const double *W_k, const double *w_v, double *out,
                        double *w) {
    std::vector<double> pq(B * Q * h), pk(B * K * h), scores(B * Q * K);
    linear(B * Q, qs, h, queries, W_q, nullptr, pq.data());
    linear(B * K, ks, h, keys, W_k, nullptr, pk.data());
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Q; ++i)
            for (std::size_t j = 0; j < K; ++j) {
                double s = 0;
                for (std::size_t c = 0; c < h; ++c)
                    s += w_v[c] * std::tanh(pq[(b * Q + i) * h + c] + pk[(b * K + j) * h + c]);
                scores[(b * Q + i) * K + j] = s;
            }
    masked_softmax(B, Q, K, scores.data(), vl, w);
    for (std::size_t b = 0; b < B; ++b)
        weighted_sum(Q, K, vs, w + b * Q * K, values + b * K * vs, vs, out + b * Q * vs, vs);
}

void multi_head_attention(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks,
                          std::size_t vs, std::size_t h, std::size_t H, const double *queries, const double *keys,
                          const double *values, const ValidLens &vl, const MhaWeights &W, double *out, double *w) {
    const std::size_t dh = h / H;
    std::vector<double> pq(B * Q * h), pk(B * K * h), pv(B * K * h), concat(B * Q * h);
    linear(B * Q, qs, h, queries, W.W_q, W.b_q, pq.data());
    linear(B * K, ks, h, keys, W.W_k, W.b_k, pk.data());
    linear(B * K, vs, h, values, W.W_v, W.b_v, pv.data());
    // Head n sees feature columns [n*dh, (n+1)*dh) of every projection, and
    // the same valid_lens as every other head (d2l repeats them per head).
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    std::vector<double> scores(Q * K);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t n = 0; n < H; ++n) {
            for (std::size_t i = 0; i < Q; ++i)
                for (std::size_t j = 0; j < K; ++j) {
                    double s = 0;
                    for (std::size_t c = 0; c < dh; ++c)
                        s += pq[(b * Q + i) * h + n * dh + c] * pk[(b * K + j) * h + n * dh + c];
                    scores[i * K + j] = s * scale;
                }
            // masked_softmax on one (1, Q, K) slice with this batch element's lens.
            ValidLens one;
            one.kind = vl.kind;
            if (vl.kind == ValidLens::per_batch) one.lens.assign(1, vl.lens[b]);
            if (vl.kind == ValidLens::per_query)
                one.lens.assign(vl.lens.begin() + b * Q, vl.lens.begin() + (b + 1) * Q);
            double *wb = w + (b * H + n) * Q * K;
            masked_softmax(1, Q, K, scores.data(), one, wb);
            weighted_sum(Q, K, dh, wb, pv.data() + b * K * h + n * dh, h, concat.data() + b * Q * h + n * dh, h);
        }
    linear(B * Q, h, h, concat.data(), W.W_o, W.b_o, out);
}

std::int64_t Mask::position(std::size_t i, std::size_t Q, std::size_t K, std::int64_t valid_len) const {
    const std::int64_t ii = static_cast<std::int64_t>(i), q = static_cast<std::int64_t>(Q),
                       k = static_cast<std::int64_t>(K);
    switch (alignment) {
    case top_left: return ii;
    case valid_end: return ii + std::min(valid_len, k) - q;
    case bottom_right: break;
    }
    return ii + k - q;
}

double Mask::alibi_slope(std::size_t head, std::size_t H) const {
    std::size_t n = 1;
    while (2 * n <= H) n *= 2;
    const double m0 = std::pow(2.0, -alibi_max_bias / static_cast<double>(n));
    const double m1 = std::pow(2.0, -alibi_max_bias / 2.0 / static_cast<double>(n));
    return head < n ? std::pow(m0, static_cast<double>(head + 1))
                    : std::pow(m1, static_cast<double>(2 * (head - n) + 1));
}

bool Mask::visible(std::size_t b, std::size_t i, std::size_t j, std::size_t Q, std::size_t K,
                   std::int64_t valid_len) const {
    const std::int64_t jj = static_cast<std::int64_t>(j);
    const std::int64_t p = position(i, Q, K, valid_len);
    if (jj >= valid_len) return false;
    if (causal && !key_positions.empty() && alignment != top_left) {
        if (key_positions[j] > first_query_position + static_cast<std::int64_t>(i)) return false;
    } else if (causal && jj > p) {
        return false;
    }
    if (window) {  // p - j < w, in exact integers whatever w is; by stream position as causal
        const std::int64_t behind = !key_positions.empty() && alignment != top_left
                                        ? first_query_position + static_cast<std::int64_t>(i) - key_positions[j]
                                        : p - jj;
        if (behind >= 0 && static_cast<std::uint64_t>(behind) >= window) return false;
    }
    if (right_window) {  // j - p < r
        const std::int64_t ahead = jj - p;
        if (ahead >= 0 && static_cast<std::uint64_t>(ahead) >= right_window) return false;
    }
    if (ranges_kind != none) {
        const std::size_t pair = ranges_kind == per_batch ? b : b * Q + i;
        if (jj < ranges[2 * pair] || jj >= ranges[2 * pair + 1]) return false;
    }
    return true;
}

void Mask::row(std::size_t b, std::size_t head, std::size_t H, std::size_t i, std::size_t Q, std::size_t K,
               std::size_t d, std::int64_t valid_len, const double *dots, double *probs, double *w) const {
    const double factor = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(d));
    const std::int64_t p = position(i, Q, K, valid_len);
    const bool by_stream = !key_positions.empty() && alignment != top_left;
    std::vector<double> scaled(K), capped(K), taken(K);
    std::vector<char> seen(K);
    bool any = false;
    for (std::size_t j = 0; j < K; ++j) {
        scaled[j] = dots[j] * factor;
        capped[j] = softcap > 0 ? softcap * std::tanh(scaled[j] / softcap) : scaled[j];
        seen[j] = visible(b, i, j, Q, K, valid_len);
        any = any || seen[j];
        double t = capped[j] + bias_at(b, head, i, j, Q);
        if (alibi_max_bias > 0) {
            const std::int64_t distance = by_stream ? first_query_position + static_cast<std::int64_t>(i) - key_positions[j]
                                                    : p - static_cast<std::int64_t>(j);
            t -= alibi_slope(head, H) * static_cast<double>(distance < 0 ? -distance : distance);
        }
        taken[j] = seen[j] ? t : (exclude ? -INFINITY : -1e6);
    }
    if (exclude && !any) {
        for (std::size_t j = 0; j < K; ++j) probs[j] = 0;
    } else {
        double mx = -INFINITY;
        for (std::size_t j = 0; j < K; ++j)
            if (seen[j] || !exclude) mx = std::max(mx, taken[j]);
        double sum = 0;
        for (std::size_t j = 0; j < K; ++j) sum += (probs[j] = (seen[j] || !exclude) ? std::exp(taken[j] - mx) : 0.0);
        for (std::size_t j = 0; j < K; ++j) probs[j] /= sum;
    }
    for (std::size_t j = 0; j < K; ++j)
        w[j] = weights_output == softmax ? probs[j]
               : weights_output == scores ? scaled[j]
               : weights_output == softcapped ? capped[j]
                                              : taken[j];
}

double Mask::bias_at(std::size_t b, std::size_t head, std::size_t i, std::size_t j, std::size_t Q) const {
    if (bias.empty()) return 0.0;
    const std::size_t bb = bias_batch == 1 ? 0 : b, hh = bias_heads == 1 ? 0 : head;
    return bias[((bb * bias_heads + hh) * Q + i) * bias_keys + j];
}

void multi_head_attention_masked(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks,
                                 std::size_t vs, std::size_t h, std::size_t H, std::size_t Hkv,
                                 const double *queries, const double *keys, const double *values,
                                 const ValidLens &vl, const Mask &mask, const MhaWeights &W, double *out,
                                 double *w) {
    multi_head_attention_general({B, Q, K, qs, ks, vs, h, H, Hkv, h}, queries, keys, values, vl, mask, W, out, w);
}

void dot_product_attention_masked(std::size_t B, std::size_t Q, std::size_t K, std::size_t d, std::size_t v,
                                  const double *queries, const double *keys, const double *values,
                                  const ValidLens &vl, const Mask &mask, double *out, double *w) {
    std::vector<double> scores(K), probs(Q * K);
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < Q; ++i) {
            for (std::size_t j = 0; j < K; ++j) {
                double s = 0;
                for (std::size_t c = 0; c < d; ++c) s += queries[(b * Q + i) * d + c] * keys[(b * K + j) * d + c];
                scores[j] = s;
            }
            mask.row(b, 0, 1, i, Q, K, d, vl.of(b, i, Q, K), scores.data(), probs.data() + i * K,
                     w + (b * Q + i) * K);
        }
        weighted_sum(Q, K, v, probs.data(), values + b * K * v, v, out + b * Q * v, v);
    }
}

void additive_attention_masked(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks,
                               std::size_t vs, std::size_t h, const double *queries, const double *keys,
                               const double *values, const ValidLens &vl, const Mask &mask, const double *W_q,
                               const double *W_k, const double *w_v, double *out, double *w) {
    std::vector<double> pq(B * Q * h), pk(B * K * h), scores(K), probs(Q * K);
    Mask unscaled = mask;  // its scores are no product: taken as they are
    unscaled.scale = 1;
    linear(B * Q, qs, h, queries, W_q, nullptr, pq.data());
    linear(B * K, ks, h, keys, W_k, nullptr, pk.data());
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < Q; ++i) {
            for (std::size_t j = 0; j < K; ++j) {
                double s = 0;
                for (std::size_t c = 0; c < h; ++c)
                    s += w_v[c] * std::tanh(pq[(b * Q + i) * h + c] + pk[(b * K + j) * h + c]);
                scores[j] = s;
            }
            unscaled.row(b, 0, 1, i, Q, K, 1, vl.of(b, i, Q, K), scores.data(), probs.data() + i * K,
                         w + (b * Q + i) * K);
        }
        weighted_sum(Q, K, vs, probs.data(), values + b * K * vs, vs, out + b * Q * vs, vs);
    }
}

void positional_encoding_table(std::size_t max_len, std::size_t d, double *P) {
    for (std::size_t i = 0; i < max_len; ++i)
        for (std::size_t c = 0; c < d; ++c) {
            // Columns 2j and 2j+1 share the frequency 1 / 10000^(2j/d).
            double angle = static_cast<double>(i) / std::pow(10000.0, static_cast<double>(c - c % 2) / d);
            P[i * d + c] = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
        }
}

double half_value(std::uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const double sign = (h >> 15) ? -1.0 : 1.0;
    if (e == 31) return m ? NAN : sign * INFINITY;
    if (e == 0) return sign * std::ldexp(m / 1024.0, -14);
    return sign * std::ldexp(1.0 + m / 1024.0, e - 15);
}

void multi_head_attention_general(const MhaSizes &z, const double *queries, const double *keys,
                                  const double *values, const ValidLens &vl, const Mask &mask, const MhaWeights &W,
                                  double *out, double *w) {
    const std::size_t B = z.B, Q = z.Q, K = z.K, H = z.H, Hkv = z.Hkv ? z.Hkv : z.H;
    const std::size_t h = z.h, hv = z.hv ? z.hv : z.h, dh = h / H, dv = hv / H;
    const std::size_t hkv = Hkv * dh, hvkv = Hkv * dv, group = H / Hkv;
    std::vector<double> pq(B * Q * h), pk(B * K * hkv), pv(B * K * hvkv), concat(B * Q * hv);
    // A projection left out: the rows as given (as wide as its output).
    auto project = [](std::size_t n, std::size_t in, std::size_t outs, const double *x, const double *Wm,
                      const double *b, double *y) {
        if (Wm)
            linear(n, in, outs, x, Wm, b, y);
        else
            for (std::size_t i = 0; i < n * outs; ++i) y[i] = x[i];
    };
    project(B * Q, z.qs, h, queries, W.W_q, W.b_q, pq.data());
    project(B * K, z.ks, hkv, keys, W.W_k, W.b_k, pk.data());
    project(B * K, z.vs, hvkv, values, W.W_v, W.b_v, pv.data());
    std::vector<double> dots(K), probs(Q * K), wrow(Q * K);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t n = 0; n < H; ++n) {
            const std::size_t g = n / group;
            double *wb = w ? w + (b * H + n) * Q * K : wrow.data();
            for (std::size_t i = 0; i < Q; ++i) {
                for (std::size_t j = 0; j < K; ++j) {
                    double s = 0;
                    for (std::size_t c = 0; c < dh; ++c)
                        s += pq[(b * Q + i) * h + n * dh + c] * pk[(b * K + j) * hkv + g * dh + c];
                    dots[j] = s;
                }
                mask.row(b, n, H, i, Q, K, dh, vl.of(b, i, Q, K), dots.data(), probs.data() + i * K, wb + i * K);
            }
            weighted_sum(Q, K, dv, probs.data(), pv.data() + b * K * hvkv + g * dv, hvkv,
                         concat.data() + b * Q * hv + n * dv, hv);
        }
    project(B * Q, hv, W.W_o ? h : hv, concat.data(), W.W_o, W.b_o, out);
}

double round_to_half(double x) {
    if (std::isnan(x) || x == 0) return x;
    const double a = std::fabs(x);
    if (a >= 65520.0) return std::copysign(INFINITY, x);
    int e = 0;
    std::frexp(a, &e);                        // a = m 2^e, 0.5 <= m < 1
    const int ulp_exp = (e - 1 < -14 ? -14 : e - 1) - 10;  // binary16 has 10 fraction bits
    const double ulp = std::ldexp(1.0, ulp_exp);
    const double q = a / ulp, f = std::floor(q);
    double r = q - f > 0.5 || (q - f == 0.5 && std::fmod(f, 2.0) != 0) ? f + 1 : f;
    return std::copysign(r * ulp, x);
}

} // namespace edgeattn_ref
