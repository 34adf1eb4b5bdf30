// Shapes, inputs and the float64 references of the peers benchmark.
#include "workloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

namespace peers {

const char *dtype_name(Dtype t) { return t == Dtype::f32 ? "fp32" : t == Dtype::f16 ? "fp16" : "int8"; }

Floats make_floats(std::size_t n) {
    const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, bytes ? bytes : 64);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes ? bytes : 64);
    return Floats(static_cast<float *>(p), [](float *f) { std::free(f); });
}

std::string Shape::id() const {
    switch (kind) {
    case Kind::decode: return "decode/L" + std::to_string(a) + "/kv" + std::to_string(b);
    case Kind::attention: return "attention/S" + std::to_string(a) + (b ? "/causal" : "/full");
    case Kind::softmax: return "softmax/" + std::to_string(a) + "x" + std::to_string(b);
    }
    return "";
}

std::string Shape::label() const {
    switch (kind) {
    case Kind::decode: return "decode L=" + std::to_string(a) + " kv=" + std::to_string(b);
    case Kind::attention:
        return (b ? "prefill causal " : "encoder ") + std::to_string(a) + "x" + std::to_string(a);
    case Kind::softmax: return "softmax " + std::to_string(a) + "x" + std::to_string(b);
    }
    return "";
}

namespace {

// Uniform in [-scale, scale) from a 32-bit hash of (seed, i): the same
// numbers on every run and machine.
void fill(float *x, std::size_t n, uint32_t seed, float scale) {
    for (std::size_t i = 0; i < n; ++i) {
        uint32_t h = seed * 0x9E3779B9u + static_cast<uint32_t>(i);
        h ^= h >> 16;
        h *= 0x85ebca6bu;
        h ^= h >> 13;
        h *= 0xc2b2ae35u;
        h ^= h >> 16;
        x[i] = (static_cast<float>(h >> 8) * (1.0f / 8388608.0f) - 1.0f) * scale;
    }
}
Floats random(std::size_t n, uint32_t seed, float scale) {
    Floats f = make_floats(n);
    fill(f.get(), n, seed, scale);
    return f;
}

// One head in float64: out (nq, 64) = softmax(q k^T / 8) v over nk keys;
// causal: query i sees keys j <= i + nk - nq.
void reference_head(const float *q, const float *k, const float *v, std::size_t nq, std::size_t nk, bool causal,
                    double *out) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
    std::vector<double> s(nk);
    for (std::size_t i = 0; i < nq; ++i) {
        const std::size_t seen = causal ? i + nk - nq + 1 : nk;
        double m = -INFINITY;
        for (std::size_t j = 0; j < seen; ++j) {
            double dot = 0;
            for (std::size_t d = 0; d < kHeadDim; ++d) dot += double(q[i * kHeadDim + d]) * k[j * kHeadDim + d];
            s[j] = dot * scale;
            m = std::max(m, s[j]);
        }
        double sum = 0;
        for (std::size_t j = 0; j < seen; ++j) sum += (s[j] = std::exp(s[j] - m));
        for (std::size_t d = 0; d < kHeadDim; ++d) {
            double acc = 0;
            for (std::size_t j = 0; j < seen; ++j) acc += s[j] * v[j * kHeadDim + d];
            out[i * kHeadDim + d] = acc / sum;
        }
    }
}

}  // namespace

Inputs make_inputs(const Shape &shape) {
    Inputs in;
    in.shape = shape;
    if (shape.kind == Kind::decode) {
        const std::size_t L = shape.a, kv = shape.b, group = kHeads / kv;
        in.q = random(kHeads * kHeadDim, 1, 4.0f);
        in.k = random(kv * L * kHeadDim, 2, 1.0f);
        in.v = random(kv * L * kHeadDim, 3, 1.0f);
        in.out_n = kHeads * kHeadDim;
        in.ref.assign(in.out_n, 0.0);
        for (std::size_t j = 0; j < kHeads; ++j)
            reference_head(in.q.get() + j * kHeadDim, in.k.get() + (j / group) * L * kHeadDim,
                           in.v.get() + (j / group) * L * kHeadDim, 1, L, false, in.ref.data() + j * kHeadDim);
    } else if (shape.kind == Kind::attention) {
        const std::size_t S = shape.a, n = kHeads * S * kHeadDim;
        in.q = random(n, 21, 4.0f);
        in.k = random(n, 22, 1.0f);
        in.v = random(n, 23, 1.0f);
        in.out_n = n;
        in.ref.assign(n, 0.0);
        for (std::size_t j = 0; j < kHeads; ++j) {
            const std::size_t o = j * S * kHeadDim;
            reference_head(in.q.get() + o, in.k.get() + o, in.v.get() + o, S, S, shape.b != 0, in.ref.data() + o);
        }
    } else {
        const std::size_t R = shape.a, C = shape.b;
        in.x = random(R * C, 31, 8.0f);
        in.out_n = R * C;
        in.ref.assign(R * C, 0.0);
        for (std::size_t r = 0; r < R; ++r) {
            const float *x = in.x.get() + r * C;
            double *y = in.ref.data() + r * C;
            double m = -INFINITY, s = 0;
            for (std::size_t c = 0; c < C; ++c) m = std::max(m, double(x[c]));
            for (std::size_t c = 0; c < C; ++c) s += (y[c] = std::exp(double(x[c]) - m));
            for (std::size_t c = 0; c < C; ++c) y[c] /= s;
        }
    }
    return in;
}

void add_read_bound(const Inputs &in, std::vector<Impl> *impls) {
    if (in.shape.kind != Kind::decode) return;
    const std::size_t n = in.shape.b * in.shape.a * kHeadDim;
    Floats k = in.k, v = in.v;
    auto sink = std::make_shared<float>(0.0f);
    auto call = [k, v, n, sink] {
        // 8 independent sums: the adds keep up with the loads
        float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const float *a = k.get(), *b = v.get();
        for (std::size_t i = 0; i < n; i += 8)
            for (std::size_t j = 0; j < 8; ++j) s[j] += a[i + j] + b[i + j];
        *static_cast<volatile float *>(sink.get()) = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
    };
    impls->push_back({"read bound", Dtype::f32, "sum of the fp32 K and V", call, nullptr, 2.0 * n * sizeof(float)});
}

}  // namespace peers
