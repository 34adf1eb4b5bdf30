// The kernels of each path the board's build has (Helium where built, the
// plain C++ path), on the board, against float64 and the library's scalar
// conversions: the bounds tests/test_kernels.cpp holds on the hosted paths.
//   exp              at most 2 ULP on [-87.33, 88.37] (every 4099th float
//                    there), 0 below, inf above, NaN kept
//   exp, x <= 0      softmax's variant: at most 2 ULP on [-87.33, 0]
//   widen_half       all 65,536 binary16 values, bitwise (NaN payloads too)
//   round_half       float_to_half_ieee's bits: every binary16 value, the
//                    midpoints between neighbours, a float either side
//   products         x W^T (fp32, int8 with scales, binary16 weights) and the
//                    cache's values product: M 1..5, N 1..9, K 1..37 against
//                    float64 within (K + 2) ulp of the sum of magnitudes;
//                    through packed panels (both widths, = and +=), M 1..8,
//                    N 1..17; a decode step's scores and weighted sums
//   int8 products    the int8 arithmetic's int32 sums, exactly
//   masked softmax   rows of 1..41 keys, visible parts of any interval,
//                    against float64 (relative 1e-6, masked rows d2l's); a
//                    NaN score makes its row NaN
// Every output has a canary after it: nothing past n is written (tails
// are predicated on Helium).
#include <edgeattn/edgeattn.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "decode_rows.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "kernels/half.hpp"
#include "kernels/kernel_table.hpp"
#include "report.hpp"

namespace {

using edgeattn::detail::kernel_table;

std::size_t passed = 0, failed = 0;

void check(bool ok, const char *path, const char *what, double worst) {
    firmware::Line() << (ok ? "ok     " : "FAIL   ") << path << " " << what << " (worst " << worst << ")";
    ++(ok ? passed : failed);
}

float float_from_bits(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

double ulp_error(float got, double truth) {
    const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(truth)) - 23);
    return std::fabs(got - truth) / ulp;
}

std::uint32_t next_random(std::uint32_t &s) {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
}
float random_in(std::uint32_t &s, float scale) { return scale * (static_cast<float>(next_random(s)) / 16777216.0f - 0.5f); }

constexpr float canary = 12345.0f;
constexpr std::size_t chunk = 1024;
float xs[chunk + 8], ys[chunk + 8];

// exp (or softmax's exp of x <= 0) over every 4099th float of [lo, hi].
void exp_checks(const kernel_table &k, const char *path, bool nonpositive) {
    auto *f = nonpositive ? k.exp_nonpositive : k.exp;
    double worst = 0;
    bool ok = true;
    std::size_t points = 0;
    // Negative floats from -87.33 up to -0, then (exp only) positive ones to 88.37.
    const std::uint32_t starts[] = {bits_of(-87.33654475f), 0u}, ends[] = {0x80000000u, bits_of(88.37626266f)};
    for (int side = 0; side < (nonpositive ? 1 : 2); ++side) {
        const bool down = side == 0;  // negative floats: the bits go down as x goes up
        for (std::uint32_t b = starts[side];;) {
            std::size_t n = 0;
            for (; n < chunk; ++n) {
                xs[n] = float_from_bits(b);
                if (down ? b - 0x80000000u < 4099u : ends[side] - b < 4099u) break;
                b = down ? b - 4099u : b + 4099u;
            }
            if (n < chunk) ++n;
            ys[n] = canary;
            f(xs, ys, n);
            ok = ok && ys[n] == canary;
            for (std::size_t i = 0; i < n; ++i) {
                // Where the true value is below FLT_MIN (the range's bottom
                // edge), 0 is right too: Helium's arithmetic flushes
                // subnormal results (exp.hpp: "denormals are flushed").
                const double truth = std::exp(static_cast<double>(xs[i]));
                if (truth < 1.1754943508222875e-38 && ys[i] == 0.0f) continue;
                const double e = ulp_error(ys[i], truth);
                worst = e > worst ? e : worst;
            }
            points += n;
            if (n < chunk) break;
        }
    }
    const float specials[] = {NAN, -INFINITY, -0.0f, 0.0f, -100.0f, INFINITY, 100.0f};
    float out[7];
    f(specials, out, nonpositive ? 5 : 7);
    ok = ok && std::isnan(out[0]) && out[2] == 1.0f && out[3] == 1.0f;
    ok = ok && (nonpositive ? out[1] <= 1.2e-38f && out[4] <= 1.2e-38f
                            : out[1] == 0.0f && out[4] == 0.0f && std::isinf(out[5]) && std::isinf(out[6]));
    check(ok && worst <= 2.0 && points > 20000, path, nonpositive ? "exp of x <= 0: <= 2 ULP" : "exp: <= 2 ULP",
          worst);
}

std::uint16_t hs[chunk + 8];

void half_checks(const kernel_table &k, const char *path) {
    bool ok = true;
    for (std::uint32_t start = 0; start < 65536u; start += chunk) {
        const std::size_t n = chunk - 3;  // an odd length: a tail every time
        for (std::size_t i = 0; i < n; ++i) hs[i] = static_cast<std::uint16_t>((start + i * 61u) & 0xFFFFu);
        xs[n] = canary;
        k.widen_half(hs, n, xs);
        ok = ok && xs[n] == canary;
        for (std::size_t i = 0; i < n; ++i) {
            const float want = edgeattn::detail::half_to_float(hs[i]);
            ok = ok && bits_of(xs[i]) == bits_of(want);
        }
    }
    check(ok, path, "widen_half: every binary16 value bitwise", 0);
    // Each binary16 value, the midpoint to the next one up and a float on
    // either side of that midpoint.
    ok = true;
    for (std::uint32_t start = 0; start < 65536u; start += chunk / 4) {
        std::size_t n = 0;
        for (std::uint32_t h = start; h < start + chunk / 4; ++h) {
            const float v = edgeattn::detail::half_to_float(static_cast<std::uint16_t>(h));
            const float next = edgeattn::detail::half_to_float(static_cast<std::uint16_t>(h + 1));
            const float mid = static_cast<float>((static_cast<double>(v) + next) / 2);
            xs[n++] = v;
            xs[n++] = mid;
            xs[n++] = std::nextafter(mid, -INFINITY);
            xs[n++] = std::nextafter(mid, INFINITY);
        }
        n -= 1;
        hs[n] = 0x1234;
        k.round_half(xs, n, hs);
        ok = ok && hs[n] == 0x1234;
        for (std::size_t i = 0; i < n; ++i) ok = ok && hs[i] == edgeattn::detail::float_to_half_ieee(xs[i]);
    }
    check(ok, path, "round_half: float_to_half_ieee's bits", 0);
}

// Products against float64: C = alpha A W^T + bias with W fp32, int8 (with
// per-row scales) or binary16, and C = A V for the cache's stored values.
float A[8 * 40], Wf[40 * 40], C[9 * 9 + 8], scales[40], bias[9];
std::int8_t W8[40 * 40];
std::uint16_t W16[40 * 40];

double weight_of(int type, std::size_t i) {
    return type == 0 ? Wf[i] : type == 1 ? static_cast<double>(W8[i]) : edgeattn::detail::half_to_float(W16[i]);
}
const void *weights_of(int type) {
    return type == 0 ? static_cast<const void *>(Wf) : type == 1 ? static_cast<const void *>(W8) : W16;
}

// got against factor * sum(term(k), k < K) + bias in float64, in units of
// fp32's bound for such a sum ((K + 2) ulp of its magnitude); the worst kept.
template <class Term>
void note_error(float got, std::size_t K, double factor, double bias, double &worst, Term term) {
    double sum = 0, magnitude = 0;
    for (std::size_t kk = 0; kk < K; ++kk) {
        const double p = term(kk);
        sum += p;
        magnitude += std::fabs(p);
    }
    const double bound = (magnitude * std::fabs(factor) + std::fabs(bias)) * static_cast<double>(K + 2) * 0x1p-23;
    const double e = std::fabs(got - (sum * factor + bias)) / (bound > 0 ? bound : 1);
    worst = e > worst ? e : worst;
}

void product_checks(const kernel_table &k, const edgeattn::detail::cache_kernel_table &ck, const char *path) {
    std::uint32_t s = 7;
    double worst = 0;
    bool ok = true;
    for (std::size_t i = 0; i < 8 * 40; ++i) A[i] = random_in(s, 2.0f);
    for (std::size_t i = 0; i < 40 * 40; ++i) {
        Wf[i] = random_in(s, 2.0f);
        W8[i] = static_cast<std::int8_t>(static_cast<int>(next_random(s) % 255u) - 127);
        W16[i] = edgeattn::detail::float_to_half_ieee(random_in(s, 2.0f));
    }
    for (std::size_t i = 0; i < 40; ++i) scales[i] = 0.01f + static_cast<float>(i) * 0.001f;
    for (std::size_t i = 0; i < 9; ++i) bias[i] = random_in(s, 1.0f);
    const float alpha = 0.375f;
    for (int type = 0; type < 3; ++type)
        for (std::size_t M = 1; M <= 5; ++M)
            for (std::size_t N = 1; N <= 9; ++N)
                for (std::size_t K = 1; K <= 37; K += (K < 12 ? 1 : 5)) {
                    // x W^T: A (M, K) row stride 40, W (N, K) row stride 40.
                    for (std::size_t i = 0; i < M * N + 8; ++i) C[i] = canary;
                    if (type == 0)
                        k.gemm_nt_direct(M, N, K, alpha, A, 40, Wf, 40, bias, C, N);
                    else
                        edgeattn::detail::stored_kernels(k, type == 1 ? EDGEATTN_DTYPE_INT8 : EDGEATTN_DTYPE_F16)
                            .gemm_nt_direct(M, N, K, alpha, A, 40, weights_of(type), 40,
                                            type == 1 ? scales : nullptr, bias, C, N);
                    ok = ok && C[M * N] == canary;
                    for (std::size_t i = 0; i < M; ++i)
                        for (std::size_t j = 0; j < N; ++j)
                            note_error(C[i * N + j], K, (type == 1 ? scales[j] : 1.0) * alpha, bias[j], worst,
                                       [&](std::size_t kk) { return A[i * 40 + kk] * weight_of(type, j * 40 + kk); });
                    // The cache's stored values: C (M, N) = A (M, K) . V (K, N),
                    // V's rows 40 apart, int8 rows times their scales.
                    if (type == 0) continue;
                    for (std::size_t i = 0; i < M * N + 8; ++i) C[i] = canary;
                    (type == 1 ? ck.int8_values : ck.half_values)(M, N, K, A, 40, weights_of(type), 40,
                                                                  type == 1 ? scales : nullptr, C, N, false);
                    ok = ok && C[M * N] == canary;
                    for (std::size_t i = 0; i < M; ++i)
                        for (std::size_t j = 0; j < N; ++j)
                            note_error(C[i * N + j], K, 1.0, 0.0, worst, [&](std::size_t kk) {
                                return A[i * 40 + kk] * (type == 1 ? scales[kk] : 1.0) * weight_of(type, kk * 40 + j);
                            });
                }
    check(ok && worst <= 1.0, path, "products (fp32, int8, binary16): within (K + 2) ulp of float64", worst);
}

// W^T packed: in panels of the path's width (pack_transposed), or in
// panels of max_panel_width as weights packed once are: packed[p][kk][j] =
// W[p * width + j][kk], zero past N.
float P[40 * 48], Cp[8 * 17 + 8];

void pack_panels(const float *W, std::size_t ldw, std::size_t N, std::size_t K, std::size_t width, float *packed) {
    for (std::size_t p0 = 0; p0 < N; p0 += width)
        for (std::size_t kk = 0; kk < K; ++kk)
            for (std::size_t j = 0; j < width; ++j)
                packed[p0 * K + kk * width + j] = p0 + j < N ? W[(p0 + j) * ldw + kk] : 0.0f;
}

// C (=, +=) alpha A W^T + bias through packed panels: every row count of
// the tiles and of what is left of them (M 1..8), partial panels (N 1..17),
// odd and even depths, both panel widths.
void packed_product_checks(const kernel_table &k, const char *path) {
    using edgeattn::detail::max_panel_width;
    double worst = 0;
    bool ok = true;
    const float alpha = 0.625f;
    for (int once = 0; once < 2; ++once)
        for (int accumulate = 0; accumulate < 2; ++accumulate)
            for (std::size_t M = 1; M <= 8; ++M)
                for (std::size_t N = 1; N <= 17; N += (N < 9 ? 1 : 8))
                    for (std::size_t K = 1; K <= 37; K += (K < 10 ? 1 : 9)) {
                        const std::size_t stride = once ? max_panel_width : k.panel_width;
                        if (once)
                            pack_panels(Wf, 40, N, K, stride, P);
                        else
                            k.pack_transposed(Wf, 40, N, K, P);
                        for (std::size_t i = 0; i < M * N; ++i) Cp[i] = 0.25f * static_cast<float>(i % 7);
                        for (std::size_t i = M * N; i < M * N + 8; ++i) Cp[i] = canary;
                        k.gemm_packed(M, N, K, alpha, A, 40, P, stride, accumulate ? nullptr : bias, Cp, N,
                                      accumulate != 0);
                        ok = ok && Cp[M * N] == canary;
                        for (std::size_t i = 0; i < M; ++i)
                            for (std::size_t j = 0; j < N; ++j)
                                note_error(Cp[i * N + j], K, alpha,
                                           accumulate ? 0.25 * static_cast<double>((i * N + j) % 7) : bias[j], worst,
                                           [&](std::size_t kk) { return A[i * 40 + kk] * double(Wf[j * 40 + kk]); });
                    }
    check(ok && worst <= 1.0, path, "packed products (both panel widths, = and +=): within (K + 2) ulp", worst);
}

// A decode step's fp32 scores (one query row against N keys of K, keys ldw
// apart) and weighted sum (C += p V, V (K, N) rows ldv apart), where the
// path has decode kernels: heads of 4..20, key rows contiguous or not,
// odd and even key counts.
void decode_checks(const kernel_table &k, const char *path) {
    const edgeattn::detail::decode_kernel_table *dk = edgeattn::detail::decode_kernels_for(k, 1, false);
    if (!dk) return;
    double worst = 0;
    bool ok = true;
    const float alpha = 0.25f;
    for (std::size_t K = 4; K <= 20; K += 4)
        for (std::size_t ldw : {K, std::size_t{40}})
            for (std::size_t N = 1; N <= 11; ++N) {
                for (std::size_t i = 0; i < N + 8; ++i) Cp[i] = canary;
                dk->f32_scores(1, N, K, alpha, A, 40, Wf, ldw, nullptr, Cp, N);
                ok = ok && Cp[N] == canary;
                for (std::size_t j = 0; j < N; ++j)
                    note_error(Cp[j], K, alpha, 0.0, worst,
                               [&](std::size_t kk) { return A[kk] * double(Wf[j * ldw + kk]); });
            }
    for (std::size_t N = 1; N <= 17; ++N)
        for (std::size_t K = 1; K <= 11; ++K) {
            for (std::size_t i = 0; i < N; ++i) Cp[i] = 0.5f * static_cast<float>(i % 5);
            for (std::size_t i = N; i < N + 8; ++i) Cp[i] = canary;
            dk->f32_values(1, N, K, A, 40, Wf, 40, nullptr, Cp, N);
            ok = ok && Cp[N] == canary;
            for (std::size_t j = 0; j < N; ++j)
                note_error(Cp[j], K, 1.0, 0.5 * static_cast<double>(j % 5), worst,
                           [&](std::size_t kk) { return A[kk] * double(Wf[kk * 40 + j]); });
        }
    check(ok && worst <= 1.0, path, "decode scores and weighted sums (fp32): within (K + 2) ulp", worst);
}

float X[6 * 48], Y[6 * 48 + 8];

void softmax_checks(const kernel_table &k, const char *path) {
    std::uint32_t s = 11;
    double worst = 0;
    bool ok = true;
    for (std::size_t keys = 1; keys <= 41; keys += 2) {
        const std::size_t rows = 6, ld = 48;
        for (std::size_t i = 0; i < rows * ld; ++i) X[i] = random_in(s, 16.0f);
        edgeattn::detail::key_interval visible[rows];
        for (std::size_t r = 0; r < rows; ++r) {
            const std::size_t lo = r == 0 ? 0 : next_random(s) % (keys + 1);
            const std::size_t hi = r == 0 ? keys : lo + next_random(s) % (keys - lo + 1);
            visible[r] = {lo, hi};
        }
        for (int masked = 0; masked < 2; ++masked) {
            for (std::size_t i = 0; i < rows * ld + 8; ++i) Y[i] = canary;
            k.masked_softmax_rows(X, Y, ld, rows, keys, masked ? visible : nullptr);
            for (std::size_t r = 0; r < rows; ++r) {
                ok = ok && Y[r * ld + keys] == canary;
                const edgeattn::detail::key_interval v = masked ? visible[r] : edgeattn::detail::key_interval{0, keys};
                double m = -1e6, sum = 0;
                for (std::size_t j = v.lo; j < v.hi; ++j) m = X[r * ld + j] > m ? X[r * ld + j] : m;
                auto score = [&](std::size_t j) { return j >= v.lo && j < v.hi ? double(X[r * ld + j]) : -1e6; };
                for (std::size_t j = 0; j < keys; ++j) sum += std::exp(score(j) - m);
                for (std::size_t j = 0; j < keys; ++j) {
                    const double want = std::exp(score(j) - m) / sum;
                    const double e = std::fabs(Y[r * ld + j] - want) / (want > 1e-30 ? want : 1.0);
                    worst = e > worst ? e : worst;
                }
            }
        }
    }
    // A NaN score makes its whole row NaN (masked or not), on every path.
    for (std::size_t j = 0; j < 9; ++j) X[j] = static_cast<float>(j);
    X[3] = NAN;
    const edgeattn::detail::key_interval some{1, 7};
    for (int masked = 0; masked < 2; ++masked) {
        k.masked_softmax_rows(X, Y, 48, 1, 9, masked ? &some : nullptr);
        for (std::size_t j = 0; j < 9; ++j) ok = ok && std::isnan(Y[j]);
    }
    check(ok && worst <= 1e-6, path, "masked softmax rows: relative 1e-6 of float64, NaN rows NaN", worst);
}

}  // namespace

// The int8 arithmetic's products (integer_kernel_table): int32 sums are
// exact, so each must equal the plain loop here bit for bit. A in
// [-127, 127], W over -128..127; M 1..5, N 1..9, K 1..70 (past Helium's
// 16-byte and SMLAD's 4-byte steps), a canary after each row of C.
void integer_checks(const kernel_table &k, const char *path) {
    constexpr std::size_t max_m = 5, max_n = 9, max_k = 70;
    static int8_t A[max_m * max_k], W[max_n * max_k];
    static int32_t C[max_m * (max_n + 1)];
    uint32_t state = 12345;
    for (int8_t &a : A) {
        state = state * 1664525u + 1013904223u;
        a = static_cast<int8_t>(static_cast<int>(state >> 24) % 255 - 127);
    }
    for (int8_t &w : W) {
        state = state * 1664525u + 1013904223u;
        w = static_cast<int8_t>(state >> 24);
    }
    A[0] = -127;
    W[0] = -128;
    const edgeattn::detail::integer_kernel_table &ik = edgeattn::detail::integer_kernels_of(k);
    bool ok = true;
    for (std::size_t M = 1; M <= max_m; ++M)
        for (std::size_t N = 1; N <= max_n; ++N)
            for (std::size_t K = 1; K <= max_k; K += K < 20 ? 1 : 7) {
                for (int32_t &c : C) c = 0x5A5A5A5A;
                ik.int8_products(M, N, K, A, K, W, K, C, N + 1);
                for (std::size_t r = 0; r < M; ++r) {
                    for (std::size_t j = 0; j < N; ++j) {
                        int32_t want = 0;
                        for (std::size_t i = 0; i < K; ++i) want += int32_t{A[r * K + i]} * W[j * K + i];
                        ok = ok && C[r * (N + 1) + j] == want;
                    }
                    ok = ok && C[r * (N + 1) + N] == 0x5A5A5A5A;
                }
            }
    check(ok, path, "int8 products (the int8 arithmetic): the exact int32 sums", 0);
}

// The int8 arithmetic's row quantiser (integer_kernel_table::quantize_row)
// against the rule computed here: scale max|x| / 127 in float, q the
// double quotient rounded to nearest even (two floats' quotient lands on a
// half only where the exact one does), clamped to [-127, 127]. Rows of 67
// elements 0 to 3 ulps either side of (k + 1/2) * scale at 8 scales, and a
// row holding a NaN (scale NaN, q all 0).
void quantize_checks(const kernel_table &k, const char *path) {
    constexpr std::size_t n = 67;
    static float x[n];
    static int8_t q[n];
    const edgeattn::detail::integer_kernel_table &ik = edgeattn::detail::integer_kernels_of(k);
    bool ok = true;
    for (int r = 0; r < 8; ++r) {
        const float largest = std::ldexp(1.0f + 0.0917f * static_cast<float>(r), r * 11 - 40);
        const float scale = largest / 127.0f;
        x[0] = -largest;
        for (std::size_t i = 1; i < n; ++i) {
            const int kk = static_cast<int>(i * 37 % 254) - 127, ulps = static_cast<int>(i % 7) - 3;
            float v = (static_cast<float>(kk) + 0.5f) * scale;
            for (int u = 0; u < (ulps < 0 ? -ulps : ulps); ++u) v = std::nextafter(v, ulps < 0 ? -INFINITY : INFINITY);
            x[i] = v;
        }
        const float got = ik.quantize_row(x, n, q);
        ok = ok && got == scale;
        for (std::size_t i = 0; i < n; ++i) {
            double t = std::nearbyint(static_cast<double>(x[i]) / static_cast<double>(scale));
            t = t > 127 ? 127 : t < -127 ? -127 : t;
            ok = ok && q[i] == static_cast<int8_t>(t);
        }
    }
    x[5] = NAN;
    ok = ok && std::isnan(ik.quantize_row(x, n, q));
    for (std::size_t i = 0; i < n; ++i) ok = ok && q[i] == 0;
    check(ok, path, "int8 row quantiser (the int8 arithmetic): the rule's scale and q near every half", 0);
}

int main() {
    const edgeattn_isa paths[] = {EDGEATTN_ISA_HELIUM, EDGEATTN_ISA_SCALAR};
    std::size_t ran = 0;
    for (edgeattn_isa path : paths) {
        if (edgeattn_set_isa(path) != EDGEATTN_OK) continue;
        ++ran;
        const kernel_table &k = edgeattn::detail::active_kernels();
        const char *name = edgeattn_isa_name(path);
        exp_checks(k, name, false);
        exp_checks(k, name, true);
        half_checks(k, name);
        product_checks(k, edgeattn::detail::cache_kernels_of(k), name);
        // Built for size, the plain C++ path reads every operand in place.
#if defined(__OPTIMIZE_SIZE__)
        const bool never_packs = path == EDGEATTN_ISA_SCALAR;
#else
        const bool never_packs = false;
#endif
        check((k.pack_transposed == nullptr) == never_packs && (k.pack == nullptr) == never_packs &&
                  (k.gemm_packed == nullptr) == never_packs,
              name, "packing kernels unless the plain C++ path built for size", 0);
        if (!never_packs) packed_product_checks(k, name);
        decode_checks(k, name);
        softmax_checks(k, name);
        integer_checks(k, name);
        quantize_checks(k, name);
    }
    edgeattn_set_isa(EDGEATTN_ISA_AUTO);
#if defined(EDGEATTN_FIRMWARE_HELIUM)
    if (ran != 2) {
        firmware::Line() << "FAIL   the Helium path is not in the library";
        ++failed;
    }
#endif
    firmware::Line() << passed << " passed, " << failed << " failed";
    return failed == 0 && passed > 0 ? 0 : 1;
}
