// impl "naive": d2l's formulas as plain scalar loops, one thread, no
// blocking or vectorisation written in (the compiler may still vectorise
// what it can at the project's flags). A floor to read the other numbers
// against.
#include <cmath>
#include <vector>

#include "common.hpp"

namespace ebench {
namespace {

// d2l's masked_softmax of one row: positions >= valid get -1e6, then softmax.
void softmax_row(const float *x, float *y, size_t cols, size_t valid) {
    float mx = -INFINITY;
    for (size_t j = 0; j < cols; ++j) {
        y[j] = j < valid ? x[j] : -1e6f;
        if (y[j] > mx) mx = y[j];
    }
    float sum = 0.0f;
    for (size_t j = 0; j < cols; ++j) {
        y[j] = std::exp(y[j] - mx);
        sum += y[j];
    }
    for (size_t j = 0; j < cols; ++j) y[j] /= sum;
}

// y (rows, out) = x (rows, in) . W (out, in)^T
void linear(size_t rows, size_t in, size_t out, const float *x, const float *W, float *y) {
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < out; ++j) {
            float acc = 0.0f;
            for (size_t k = 0; k < in; ++k) acc += x[i * in + k] * W[j * in + k];
            y[i * out + j] = acc;
        }
}

// One attention: q (n, ldq) rows of d features, k and v likewise, o (n, ldo).
void attention(size_t n, size_t d, const float *q, size_t ldq, const float *k, size_t ldk,
               const float *v, size_t ldv, float *o, size_t ldo, float *scores) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (size_t c = 0; c < d; ++c) acc += q[i * ldq + c] * k[j * ldk + c];
            scores[j] = acc * scale;
        }
        softmax_row(scores, scores, n, n);
        for (size_t c = 0; c < d; ++c) o[i * ldo + c] = 0.0f;
        for (size_t j = 0; j < n; ++j)
            for (size_t c = 0; c < d; ++c) o[i * ldo + c] += scores[j] * v[j * ldv + c];
    }
}

void softmax(benchmark::State &state, SoftmaxShape s, bool masked) {
    Floats X = random_floats(s.rows * s.cols, 1, 4.0f), Y = alloc_floats(s.rows * s.cols);
    const size_t valid = masked ? s.cols / 4 : s.cols;
    for (auto _ : state) {
        for (size_t r = 0; r < s.rows; ++r)
            softmax_row(X.get() + r * s.cols, Y.get() + r * s.cols, s.cols, valid);
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * s.rows * s.cols);
}

void sdpa(benchmark::State &state, AttentionShape s) {
    const size_t BH = s.batch * s.heads, n = s.seq, d = s.head_dim();
    Floats Q = random_floats(BH * n * d, 2), K = random_floats(BH * n * d, 3),
           V = random_floats(BH * n * d, 4), O = alloc_floats(BH * n * d);
    std::vector<float> scores(n);
    for (auto _ : state) {
        for (size_t b = 0; b < BH; ++b) {
            const size_t off = b * n * d;
            attention(n, d, Q.get() + off, d, K.get() + off, d, V.get() + off, d, O.get() + off,
                      d, scores.data());
        }
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, sdpa_flops(s));
}

void mha(benchmark::State &state, AttentionShape s) {
    const size_t B = s.batch, n = s.seq, d = s.d_model, H = s.heads, dh = s.head_dim();
    const float wscale = 1.0f / std::sqrt(static_cast<float>(d));
    Floats X = random_floats(B * n * d, 5), O = alloc_floats(B * n * d);
    Floats Wq = random_floats(d * d, 6, wscale), Wk = random_floats(d * d, 7, wscale),
           Wv = random_floats(d * d, 8, wscale), Wo = random_floats(d * d, 9, wscale);
    Floats Qp = alloc_floats(B * n * d), Kp = alloc_floats(B * n * d), Vp = alloc_floats(B * n * d),
           C = alloc_floats(B * n * d);
    std::vector<float> scores(n);
    for (auto _ : state) {
        linear(B * n, d, d, X.get(), Wq.get(), Qp.get());
        linear(B * n, d, d, X.get(), Wk.get(), Kp.get());
        linear(B * n, d, d, X.get(), Wv.get(), Vp.get());
        // Head h is columns [h*dh, (h+1)*dh) of each projection (d2l's
        // transpose_qkv); its output goes to the same columns of C (concat).
        for (size_t b = 0; b < B; ++b)
            for (size_t h = 0; h < H; ++h) {
                const size_t off = b * n * d + h * dh;
                attention(n, dh, Qp.get() + off, d, Kp.get() + off, d, Vp.get() + off, d,
                          C.get() + off, d, scores.data());
            }
        linear(B * n, d, d, C.get(), Wo.get(), O.get());
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, mha_flops(s));
}

void gemm(benchmark::State &state, GemmShape s) {
    Floats A = random_floats(s.M * s.K, 10), W = random_floats(s.N * s.K, 11),
           C = alloc_floats(s.M * s.N);
    for (auto _ : state) {
        linear(s.M, s.K, s.N, A.get(), W.get(), C.get());
        benchmark::DoNotOptimize(C.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * s.M * s.N * s.K);
}

void posenc(benchmark::State &state, PosencShape s) {
    const size_t count = s.batch * s.n * s.d;
    Floats X = random_floats(count, 12), Y = alloc_floats(count), P = alloc_floats(s.n * s.d);
    for (size_t i = 0; i < s.n; ++i)  // d2l's table, in double, rounded to float
        for (size_t j = 0; j < s.d; ++j) {
            const double angle = static_cast<double>(i) /
                                 std::pow(10000.0, static_cast<double>(j / 2 * 2) / s.d);
            P[i * s.d + j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    for (auto _ : state) {
        for (size_t b = 0; b < s.batch; ++b)
            for (size_t i = 0; i < s.n; ++i)
                for (size_t j = 0; j < s.d; ++j) {
                    const size_t x = (b * s.n + i) * s.d + j;
                    Y[x] = X[x] + P[i * s.d + j];
                }
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * count);
}

}  // namespace

void register_naive_benchmarks() {
    for (const auto &s : softmax_shapes) {
        configure(benchmark::RegisterBenchmark(name("softmax", "naive", s).c_str(), softmax, s, false));
        configure(benchmark::RegisterBenchmark(name("softmax_masked", "naive", s).c_str(), softmax, s, true));
    }
    for (const auto &s : attention_shapes) {
        if (sdpa_flops(s) <= naive_max_flops)
            configure(benchmark::RegisterBenchmark(name("sdpa", "naive", s).c_str(), sdpa, s));
        if (mha_flops(s) <= naive_max_flops)
            configure(benchmark::RegisterBenchmark(name("mha", "naive", s).c_str(), mha, s));
    }
    for (const auto &s : gemm_shapes)
        if (2.0 * s.M * s.N * s.K <= naive_max_flops)
            configure(benchmark::RegisterBenchmark(name("gemm", "naive", s).c_str(), gemm, s));
    for (const auto &s : posenc_shapes)
        configure(benchmark::RegisterBenchmark(name("posenc", "naive", s).c_str(), posenc, s));
}

}  // namespace ebench
