// libFuzzer harness of the reduced-precision C API (edgeattn/convert.h and
// edgeattn_weight_matrix): the quantiser and the binary16 converters with
// arbitrary values, and the dense layer (edgeattn_dense, edgeattn_dense_pack +
// edgeattn_dense_packed) and multi-head attention (edgeattn_mha,
// edgeattn_mha_pack + edgeattn_mha_packed) with weights of arbitrary stored types,
// scales and sizes. The input picks an op, a kernel path, sizes (zero
// included), values (inf and NaN included), each matrix's type (any int:
// negative and past the enum too), int8 scales (0, negative, NaN, inf
// included), and where the structs passed by pointer lie (sometimes copied
// into an output, the workspace or the packed buffer, which the call must
// read before it writes there). Then, by rules written here from the header:
//
//   - the call succeeds exactly when nothing is wrong with its arguments;
//   - on an error, no byte of any output changed;
//   - on success, the results meet their definition: the quantiser's rule,
//     binary16 rounding, float64 attention with the dequantised weights.
#include <fuzzer/FuzzedDataProvider.h>

#include <edgeattn/edgeattn.h>

#include "enum_args_from_c.h"
#include "fuzz_check.hpp"
#include "reference.hpp"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

using fuzz::fail;
using fuzz::g_op;

using edgeattn_ref::half_value;

// Where the structs a call takes by pointer go (Placer): drawn from a hash
// of the whole input rather than read from it, so the input's bytes make
// the same choices wherever the structs go (a struct's place changes no
// status and no result).
struct Placement {
    std::minstd_rand gen;
    Placement(const std::uint8_t *data, std::size_t size) {
        std::uint32_t h = 2166136261u;  // FNV-1a
        for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
        gen.seed(h % 2147483646u + 1);
    }
    std::size_t operator()(std::size_t most) { return static_cast<std::size_t>(gen()) % (most + 1); }
};

struct Input {
    FuzzedDataProvider in;
    Placement where;
    Input(const std::uint8_t *data, std::size_t size) : in(data, size), where(data, size) {}
    std::size_t dim(std::size_t most) { return in.ConsumeIntegralInRange<std::size_t>(0, most); }
    // Mostly ordinary values; sometimes a huge one, inf or NaN.
    float value(float scale = 1.0f) {
        const std::uint8_t kind = in.ConsumeIntegral<std::uint8_t>();
        if (kind == 255) return NAN;
        if (kind == 254) return in.ConsumeBool() ? INFINITY : -INFINITY;
        if (kind == 253) return in.ConsumeBool() ? 7e4f : -1e30f;
        if (kind == 252) return 0.0f;
        return in.ConsumeFloatingPointInRange<float>(-scale, scale);
    }
    // n values, and one more slot past them (never read by the library) so
    // that data() is not null for n = 0.
    std::vector<float> values(std::size_t n, float scale = 1.0f, bool ordinary = false) {
        std::vector<float> v(n + 1, 0.0f);
        for (std::size_t i = 0; i < n; ++i)
            v[i] = ordinary ? in.ConsumeFloatingPointInRange<float>(-scale, scale) : value(scale);
        return v;
    }
};

// Where a struct the call takes by pointer goes: mostly where it is;
// sometimes a copy at an aligned place inside one of `regions` (the part of
// an output the call writes, the workspace, the packed buffer), which the
// call must read before it writes there. Copies never overlap.
struct Placer {
    Input &in;
    std::vector<std::pair<unsigned char *, std::size_t>> regions;  // start, bytes
    std::vector<std::pair<const unsigned char *, std::size_t>> taken;

    template <class T>
    const T *operator()(const T *s) {
        Placement &pick = in.where;
        if (pick(255) < 200) return s;
        std::vector<std::size_t> fit;
        for (std::size_t i = 0; i < regions.size(); ++i)
            if (regions[i].second >= sizeof(T) && reinterpret_cast<std::uintptr_t>(regions[i].first) % alignof(T) == 0)
                fit.push_back(i);
        if (fit.empty()) return s;
        const auto &r = regions[fit[pick(fit.size() - 1)]];
        unsigned char *at = r.first + pick((r.second - sizeof(T)) / alignof(T)) * alignof(T);
        for (const auto &t : taken)
            if (at < t.first + t.second && t.first < at + sizeof(T)) return s;
        std::memcpy(at, s, sizeof(T));
        taken.push_back({at, sizeof(T)});
        return reinterpret_cast<const T *>(at);
    }
};

template <class T>
std::pair<unsigned char *, std::size_t> region(std::vector<T> &v, std::size_t n) {
    return {reinterpret_cast<unsigned char *>(v.data()), n * sizeof(T)};
}

// edgeattn_workspace_size of one call for one thread; 0 where it refuses
// the dims (so does the call).
std::size_t workspace_bytes(const edgeattn_workspace_request &request) {
    std::size_t bytes = 0;
    return edgeattn_workspace_size(&request, 1, 1, &bytes) == EDGEATTN_OK ? bytes : 0;
}

bool same_bytes(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool finite_all(const std::vector<float> &v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i])) return false;
    return true;
}

// ------------------------------------------------------------ converters

void fuzz_quantize(Input &in) {
    g_op = "quantize_int8";
    const std::size_t out = in.dim(9), cols = in.dim(17);
    std::vector<float> W = in.values(out * cols, in.in.ConsumeFloatingPointInRange<float>(1e-30f, 1e3f));
    std::vector<std::int8_t> q(out * cols + 1, 99);
    std::vector<float> scales(out + 1, -5.0f);
    const bool null_out = in.in.ConsumeIntegral<std::uint8_t>() == 7;
    const edgeattn_status st =
        edgeattn_quantize_int8(out, cols, W.data(), null_out ? nullptr : q.data(), scales.data());
    const edgeattn_status want = null_out ? EDGEATTN_ERR_NULL_POINTER
                                 : out == 0 || cols == 0 ? EDGEATTN_ERR_ZERO_DIMENSION
                                 : !finite_all(W, out * cols) ? EDGEATTN_ERR_NOT_REPRESENTABLE
                                                  : EDGEATTN_OK;
    FUZZ_CHECK(st == want, "unexpected status", st);
    if (st != EDGEATTN_OK) {
        for (std::int8_t v : q) FUZZ_CHECK(v == 99, "q written on an error", st);
        for (float s : scales) FUZZ_CHECK(s == -5.0f, "scales written on an error", st);
        return;
    }
    for (std::size_t o = 0; o < out; ++o) {
        double largest = 0;
        for (std::size_t i = 0; i < cols; ++i) largest = std::fmax(largest, std::fabs(W[o * cols + i]));
        const float s = scales[o];
        FUZZ_CHECK(s > 0 && std::isfinite(s), "a scale is not finite and positive", 0);
        if (largest > 0 && static_cast<float>(largest) / 127.0f > 0)
            FUZZ_CHECK(s == static_cast<float>(largest) / 127.0f, "scale is not max |w| / 127", 0);
        for (std::size_t i = 0; i < cols; ++i) {
            const int v = q[o * cols + i];
            FUZZ_CHECK(v >= -127 && v <= 127, "q outside [-127, 127]", v);
            const double exact = W[o * cols + i] / static_cast<double>(s);
            FUZZ_CHECK(std::fabs(exact - v) <= 0.5 || (std::fabs(exact) > 127 && std::fabs(v) == 127),
                       "q is not w / scale rounded", v);
        }
    }
    FUZZ_CHECK(q[out * cols] == 99 && scales[out] == -5.0f, "written past the outputs", 0);
}

void fuzz_half(Input &in) {
    g_op = "float_to_half";
    const std::size_t n = in.dim(40);
    const std::vector<float> x = in.values(n, in.in.ConsumeFloatingPointInRange<float>(1e-9f, 7e4f));
    std::vector<std::uint16_t> h(n + 1, 0x1234);
    const edgeattn_status st = edgeattn_float_to_half(n, x.data(), h.data());
    bool representable = true;
    for (std::size_t i = 0; i < n; ++i) representable = representable && std::isfinite(x[i]) && std::fabs(x[i]) < 65520.0f;
    const edgeattn_status want =
        n == 0 ? EDGEATTN_ERR_ZERO_DIMENSION : representable ? EDGEATTN_OK : EDGEATTN_ERR_NOT_REPRESENTABLE;
    FUZZ_CHECK(st == want, "unexpected status", st);
    if (st != EDGEATTN_OK) {
        for (std::uint16_t v : h) FUZZ_CHECK(v == 0x1234, "written on an error", st);
        return;
    }
    FUZZ_CHECK(h[n] == 0x1234, "written past the output", 0);
    std::vector<float> back(n);
    FUZZ_CHECK(edgeattn_half_to_float(n, h.data(), back.data()) == EDGEATTN_OK, "half_to_float refused", 0);
    for (std::size_t i = 0; i < n; ++i) {
        const double got = half_value(h[i]);
        FUZZ_CHECK(static_cast<double>(back[i]) == got, "half_to_float is not exact", 0);
        // nearest: within half a unit of binary16 in the last place
        const double a = std::fabs(static_cast<double>(x[i]));
        const double ulp = a < std::ldexp(1.0, -14) ? std::ldexp(1.0, -24) : std::ldexp(1.0, std::ilogb(a) - 10);
        FUZZ_CHECK(std::fabs(got - x[i]) <= ulp / 2, "not rounded to nearest", 0);
    }
}

// ------------------------------------------------------------ typed weights

// A weight matrix (rows, cols) in the type the input picks (any int; one
// outside the enum is stored as a C caller may store it), with its exact
// values for the reference; `problem` is set when the matrix is one the
// library must refuse.
struct Matrix {
    int type = 0;
    std::vector<float> f32, scales;
    std::vector<std::int8_t> i8;
    std::vector<std::uint16_t> f16;
    std::vector<double> exact;
    edgeattn_weight_matrix m{};
    bool problem = false;

    Matrix(Input &in, std::size_t rows, std::size_t cols) {
        const int pick = in.in.ConsumeIntegralInRange<int>(0, 9);
        if (pick < 9) {
            type = pick % 4;  // 3: just past the enum
        } else {
            const int wild[] = {-1, INT_MIN, INT_MAX, 1000, -2};
            const std::uint8_t choice = in.in.ConsumeIntegral<std::uint8_t>();
            type = choice < 200 ? wild[choice % 5] : in.in.ConsumeIntegral<int>();
        }
        const std::vector<float> w = in.values(rows * cols, 1.0f, true);
        exact.assign(rows * cols, 0.0);
        if (type == EDGEATTN_DTYPE_INT8) {
            i8.resize(rows * cols);
            scales.resize(rows);
            if (rows * cols) edgeattn_quantize_int8(rows, cols, w.data(), i8.data(), scales.data());
            if (rows && in.in.ConsumeIntegral<std::uint8_t>() >= 240) {
                const float bad[4] = {0.0f, -1.0f, NAN, INFINITY};
                scales[in.dim(rows - 1)] = bad[in.dim(3)];
                problem = true;
            }
            for (std::size_t o = 0; o < rows; ++o)
                for (std::size_t i = 0; i < cols; ++i)
                    exact[o * cols + i] = static_cast<double>(scales[o]) * i8[o * cols + i];
            m.data = i8.data();
            m.scales = scales.data();
        } else if (type == EDGEATTN_DTYPE_F16) {
            f16.resize(rows * cols);
            if (rows * cols) edgeattn_float_to_half(rows * cols, w.data(), f16.data());
            for (std::size_t i = 0; i < rows * cols; ++i) exact[i] = half_value(f16[i]);
            m.data = f16.data();
        } else {
            f32 = w;
            for (std::size_t i = 0; i < rows * cols; ++i) exact[i] = w[i];
            m.data = f32.data();
            if (type < EDGEATTN_DTYPE_F32 || type > EDGEATTN_DTYPE_INT8) problem = true;  // not a type
        }
        std::memcpy(&m.type, &type, sizeof type);
        // An empty vector's data() may be null: the library sees no matrix.
        if (!m.data) m.data = &type;
        if (type == EDGEATTN_DTYPE_INT8 && !m.scales) m.scales = reinterpret_cast<const float *>(&type);
    }
};

void fuzz_dense_typed(Input &in) {
    g_op = "dense";
    const bool packed = in.in.ConsumeBool();
    const edgeattn_dense_dims dims{in.dim(20), in.dim(70), in.dim(70)};
    Matrix W(in, dims.out_features, dims.in_features);
    const std::vector<float> x = in.values(dims.rows * dims.in_features, 2.0f, true);
    const std::vector<float> b = in.values(dims.out_features, 0.5f, true);
    const bool zero = !dims.rows || !dims.in_features || !dims.out_features;
    std::vector<float> y(dims.rows * dims.out_features + 1, 7.0f);
    edgeattn_status st;
    // The type as an int, through C: the size takes it by value.
    const bool unknown_type = W.type < EDGEATTN_DTYPE_F32 || W.type > EDGEATTN_DTYPE_INT8;
    Placer out_place{in, {region(y, dims.rows * dims.out_features)}, {}};
    std::vector<float> y_before;
    if (packed) {
        g_op = "dense_pack + dense_packed";
        const std::size_t bytes = c_dense_packed_size(&dims, W.type);
        // (rows is not read by the size)
        FUZZ_CHECK((bytes == 0) == (!dims.in_features || !dims.out_features || unknown_type),
                   "packed size of valid sizes is 0, or not 0 otherwise", 0);
        std::vector<float> p(bytes / 4 + 1, 3.0f);
        Placer pack_place{in, {region(p, bytes / 4)}, {}};
        const edgeattn_dense_dims *pack_dims = pack_place(&dims), *use_dims = out_place(&dims);
        const edgeattn_weight_matrix *W_arg = pack_place(&W.m);
        const std::vector<float> p_before = p;
        y_before = y;
        st = edgeattn_dense_pack(pack_dims, W_arg, b.data(), p.data(), bytes);
        if (st == EDGEATTN_OK) st = edgeattn_dense_packed(use_dims, x.data(), p.data(), bytes, y.data());
        else
            FUZZ_CHECK(same_bytes(p, p_before), "packed buffer written on an error", st);
    } else {
        edgeattn_workspace_request request{};
        request.op = EDGEATTN_OP_DENSE;
        request.dense = dims;
        std::vector<float> ws(workspace_bytes(request) / 4 + 1);
        out_place.regions.push_back(region(ws, ws.size()));
        const edgeattn_dense_dims *dims_arg = out_place(&dims);
        const edgeattn_weight_matrix *W_arg = out_place(&W.m);
        y_before = y;
        st = edgeattn_dense(dims_arg, x.data(), W_arg, b.data(), ws.data(), ws.size() * 4, y.data());
    }
    const bool ok = !zero && !W.problem;
    FUZZ_CHECK((st == EDGEATTN_OK) == ok, "succeeded with a bad argument, or refused good ones", st);
    if (st != EDGEATTN_OK) {
        FUZZ_CHECK(same_bytes(y, y_before), "output written on an error", st);
        return;
    }
    FUZZ_CHECK(y[dims.rows * dims.out_features] == 7.0f, "written past the output", 0);
    for (std::size_t r = 0; r < dims.rows; ++r)
        for (std::size_t o = 0; o < dims.out_features; ++o) {
            double want = b[o], size = std::fabs(b[o]);
            for (std::size_t i = 0; i < dims.in_features; ++i) {
                want += x[r * dims.in_features + i] * W.exact[o * dims.in_features + i];
                size += std::fabs(x[r * dims.in_features + i] * W.exact[o * dims.in_features + i]);
            }
            FUZZ_CHECK(std::fabs(y[r * dims.out_features + o] - want) <= 1e-5 * size + 1e-30,
                       "y differs from float64 with the dequantised weights", 0);
        }
}

void fuzz_mha_typed(Input &in) {
    const bool packed = in.in.ConsumeBool();
    g_op = packed ? "mha_pack + mha_packed" : "mha";
    const std::size_t H = 1 + in.dim(3), Hkv = H % 2 == 0 && in.in.ConsumeBool() ? H / 2 : H;
    const std::size_t hs = 1 + in.dim(5), h = H * hs, hkv = Hkv * hs;
    const std::size_t B = 1 + in.dim(1), Q = 1 + in.dim(6), K = 1 + in.dim(6), q = 1 + in.dim(9);
    Matrix Wq(in, h, q), Wk(in, hkv, q), Wv(in, hkv, q), Wo(in, h, h);
    const edgeattn_attention_dims dims{B, Q, K, q, q, q, h, H, Hkv, 0};
    const std::vector<float> xq = in.values(B * Q * q, 1.0f, true), xk = in.values(B * K * q, 1.0f, true);
    // The matrices as bytes: a type outside the enum is not loaded as one.
    edgeattn_weights w{};
    std::memcpy(&w.W_q, &Wq.m, sizeof w.W_q);
    std::memcpy(&w.W_k, &Wk.m, sizeof w.W_k);
    std::memcpy(&w.W_v, &Wv.m, sizeof w.W_v);
    std::memcpy(&w.W_o, &Wo.m, sizeof w.W_o);
    const bool causal = in.in.ConsumeBool();
    edgeattn_attention_options options{};
    options.mask.causal = causal;
    edgeattn_workspace_request request{};
    request.op = EDGEATTN_OP_MHA;
    request.dims = dims;
    std::vector<float> ws(workspace_bytes(request) / 4 + 1);
    std::vector<float> out(B * Q * h + 1, 7.0f);
    Placer place{in, {region(out, B * Q * h), region(ws, ws.size())}, {}};
    const edgeattn_attention_dims *dims_arg = place(&dims);
    const edgeattn_attention_options *options_arg = place(&options);
    edgeattn_status st;
    std::vector<float> out_before;
    if (packed) {
        const std::size_t bytes = edgeattn_mha_packed_size(&dims, &w);
        std::vector<float> p(bytes / 4 + 1, 3.0f);
        Placer pack_place{in, {region(p, bytes / 4)}, {}};
        const edgeattn_attention_dims *pack_dims = pack_place(&dims);
        const edgeattn_weights *w_arg = pack_place(&w);
        const std::vector<float> p_before = p;
        out_before = out;
        st = edgeattn_mha_pack(pack_dims, w_arg, p.data(), bytes);
        if (st == EDGEATTN_OK)
            st = edgeattn_mha_packed(dims_arg, xq.data(), xk.data(), xk.data(), p.data(), bytes, options_arg,
                                     ws.data(), ws.size() * 4, out.data(), nullptr);
        else
            FUZZ_CHECK(same_bytes(p, p_before), "packed buffer written on an error", st);
    } else {
        const edgeattn_weights *w_arg = place(&w);
        out_before = out;
        st = edgeattn_mha(dims_arg, xq.data(), xk.data(), xk.data(), w_arg, options_arg, ws.data(), ws.size() * 4,
                          out.data(), nullptr);
    }
    // Type 3, EDGEATTN_DTYPE_NONE, is a projection left out for edgeattn_mha
    // (never packed): taken when the rows are as wide as its output (W_o:
    // always; the output is then the concatenated heads, as wide as h).
    const bool none[4] = {!packed && Wq.type == EDGEATTN_DTYPE_NONE, !packed && Wk.type == EDGEATTN_DTYPE_NONE,
                          !packed && Wv.type == EDGEATTN_DTYPE_NONE, !packed && Wo.type == EDGEATTN_DTYPE_NONE};
    const bool q_problem = none[0] ? q != h : Wq.problem, k_problem = none[1] ? q != hkv : Wk.problem;
    const bool v_problem = none[2] ? q != hkv : Wv.problem, o_problem = none[3] ? false : Wo.problem;
    const bool ok = !q_problem && !k_problem && !v_problem && !o_problem;
    FUZZ_CHECK((st == EDGEATTN_OK) == ok, "succeeded with a bad matrix, or refused good ones", st);
    if (st != EDGEATTN_OK) {
        FUZZ_CHECK(same_bytes(out, out_before), "output written on an error", st);
        return;
    }
    FUZZ_CHECK(out[B * Q * h] == 7.0f, "written past the output", 0);
    const std::vector<double> xqd(xq.begin(), xq.end()), xkd(xk.begin(), xk.end());
    std::vector<double> want(B * Q * h), want_w(B * H * Q * K);
    edgeattn_ref::Mask m;
    m.causal = causal;
    const edgeattn_ref::MhaWeights r{none[0] ? nullptr : Wq.exact.data(), none[1] ? nullptr : Wk.exact.data(),
                                     none[2] ? nullptr : Wv.exact.data(), none[3] ? nullptr : Wo.exact.data(),
                                     nullptr, nullptr, nullptr, nullptr};
    edgeattn_ref::multi_head_attention_general({B, Q, K, q, q, q, h, H, Hkv, 0}, xqd.data(), xkd.data(), xkd.data(),
                                               edgeattn_ref::ValidLens{}, m, r, want.data(), want_w.data());
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        FUZZ_CHECK(std::isfinite(out[i]), "a non-finite output", 0);
        diff += (out[i] - want[i]) * (out[i] - want[i]);
        norm += want[i] * want[i];
    }
    FUZZ_CHECK(std::sqrt(diff) <= 1e-4 * std::sqrt(norm) + 1e-5, "output differs from float64", 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    fuzz::g_harness = "fuzz_reduced_precision";
    Input in(data, size);
    const std::uint8_t head = in.in.ConsumeIntegral<std::uint8_t>();
    // A kernel path this CPU runs (the scalar one always).
    const edgeattn_isa isa = static_cast<edgeattn_isa>(EDGEATTN_ISA_SCALAR + (head >> 2) % 5);
    edgeattn_set_isa(edgeattn_isa_supported(isa) ? isa : EDGEATTN_ISA_SCALAR);
    switch (head % 4) {
        case 0: fuzz_quantize(in); break;
        case 1: fuzz_half(in); break;
        case 2: fuzz_dense_typed(in); break;
        default: fuzz_mha_typed(in); break;
    }
    return 0;
}
