// ONNX Runtime's implementations of the peers rows: one-node models built
// in memory (onnx_model.hpp), one session each, every input and output a
// tensor over a buffer allocated once, so a call is one OrtApi::Run.
//   decode     Attention (opset 23) over Q (1, 8, 1, 64), K, V (1, kv, L, 64);
//              and com.microsoft GroupQueryAttention, as onnxruntime-genai
//              decodes: past_key / past_value (1, kv, L, 64) hold L - 1
//              tokens and are also the present_key / present_value outputs
//              (ORT appends the new token's key and value in place), the
//              new token's key and value as inputs, attention over L keys
//   attention  Attention (opset 23, is_causal) over (1, 8, S, 64), and
//              com.microsoft MultiHeadAttention (unidirectional) over
//              token-major (1, S, 512)
//   softmax    Softmax (opset 13, last axis)
// fp32, and fp16 where the release has a CPU kernel for it (then queries,
// keys, values and the output are all fp16: the ops take one type); a
// session ONNX Runtime cannot create for fp16 is left out, with a note on
// stderr. No int8 cache: none of these ops reads one.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "edgeattn/convert.h"
#include "onnx_model.hpp"
#include "ort_api.hpp"
#include "workloads.hpp"

namespace peers {
namespace {

constexpr int F32 = ort::ELEM_FLOAT, F16 = ort::ELEM_FLOAT16, I32 = ort::ELEM_INT32;

void check(const ort::Api &a, ort::Status *st, const char *what) {
    if (st) {
        std::fprintf(stderr, "onnxruntime: %s: %s\n", what, a.GetErrorMessage(st));
        std::exit(1);
    }
}

struct Tensor {
    onnx::ValueInfo info;
    std::shared_ptr<void> data;  // the buffer the OrtValue wraps
};

// A session and its bound inputs and outputs.
struct Model {
    ort::Runtime *rt = nullptr;
    ort::Session *session = nullptr;
    std::vector<std::string> in_names, out_names;
    std::vector<const char *> in_c, out_c;
    std::vector<ort::Value *> in_v, out_v;
    std::vector<std::shared_ptr<void>> keep;
    std::string error;  // why the session could not be created; empty: it was

    ort::Value *wrap(const Tensor &t) {
        std::size_t n = 1;
        for (int64_t d : t.info.dims) n *= static_cast<std::size_t>(d);
        const std::size_t elem = t.info.elem_type == ort::ELEM_FLOAT16 ? 2 : 4;
        ort::Value *v = nullptr;
        check(rt->api,
              rt->api.CreateTensorWithDataAsOrtValue(rt->cpu, t.data.get(), n * elem, t.info.dims.data(),
                                                     t.info.dims.size(), t.info.elem_type, &v),
              "CreateTensorWithDataAsOrtValue");
        keep.push_back(t.data);
        return v;
    }
    Model(ort::Runtime &r, const onnx::Node &node, const std::vector<Tensor> &ins, const std::vector<Tensor> &outs,
          const std::vector<std::pair<std::string, int64_t>> &opsets, int64_t ir)
        : rt(&r) {
        std::vector<onnx::ValueInfo> vi, vo;
        for (const auto &t : ins) vi.push_back(t.info);
        for (const auto &t : outs) vo.push_back(t.info);
        const std::string bytes = onnx::model(node, vi, vo, opsets, ir);
        if (ort::Status *st = r.api.CreateSessionFromArray(r.env, bytes.data(), bytes.size(), r.options, &session)) {
            error = r.api.GetErrorMessage(st);
            r.api.ReleaseStatus(st);
            return;
        }
        for (const auto &t : ins) {
            in_names.push_back(t.info.name);
            in_v.push_back(wrap(t));
        }
        for (const auto &t : outs) {
            out_names.push_back(t.info.name);
            out_v.push_back(wrap(t));
        }
        for (const auto &s : in_names) in_c.push_back(s.c_str());
        for (const auto &s : out_names) out_c.push_back(s.c_str());
    }
    Model(const Model &) = delete;
    Model &operator=(const Model &) = delete;
    void run() {
        check(rt->api,
              rt->api.Run(session, nullptr, in_c.data(), in_v.data(), in_v.size(), out_c.data(), out_c.size(),
                          out_v.data()),
              "Run");
    }
};

std::size_t count(const std::vector<int64_t> &dims) {
    std::size_t n = 1;
    for (int64_t d : dims) n *= static_cast<std::size_t>(d);
    return n;
}
// A float or float16 tensor, filled from src (n floats) when given.
Tensor tensor(const std::string &name, int elem, std::vector<int64_t> dims, const float *src = nullptr) {
    const std::size_t n = count(dims);
    Floats buf = make_floats(elem == F16 ? (n + 1) / 2 : n);
    if (src && elem == F32) std::copy(src, src + n, buf.get());
    if (src && elem == F16 &&
        edgeattn_float_to_half(n, src, reinterpret_cast<uint16_t *>(buf.get())) != EDGEATTN_OK) {
        std::fprintf(stderr, "edgeattn_float_to_half failed\n");
        std::exit(1);
    }
    return {{name, elem, std::move(dims)}, std::shared_ptr<void>(buf, buf.get())};
}
std::vector<float> read(const Tensor &t) {
    const std::size_t n = count(t.info.dims);
    std::vector<float> x(n);
    if (t.info.elem_type == F32)
        std::copy(static_cast<const float *>(t.data.get()), static_cast<const float *>(t.data.get()) + n, x.begin());
    else
        edgeattn_half_to_float(n, static_cast<const uint16_t *>(t.data.get()), x.data());
    return x;
}
Tensor int32(const std::string &name, std::vector<int64_t> dims, int32_t value) {
    auto p = std::shared_ptr<int32_t>(new int32_t[1]{value}, std::default_delete<int32_t[]>());
    return {{name, I32, std::move(dims)}, std::shared_ptr<void>(p, p.get())};
}

// Adds the model as an implementation, or notes why ONNX Runtime refused it.
void add(std::vector<Impl> *impls, const std::shared_ptr<Model> &m, Dtype t, const std::string &what,
         std::function<std::vector<float>()> output, double bytes, const std::string &row) {
    if (!m->error.empty()) {
        std::fprintf(stderr, "onnxruntime: %s %s %s left out: %s\n", row.c_str(), dtype_name(t), what.c_str(),
                     m->error.c_str());
        return;
    }
    impls->push_back({"onnxruntime", t, what, [m] { m->run(); }, std::move(output), bytes});
}

// (8, S, 64) <-> (S, 8 * 64)
Floats heads_to_tokens(const float *x, std::size_t S) {
    Floats y = make_floats(S * kHeads * kHeadDim);
    for (std::size_t j = 0; j < kHeads; ++j)
        for (std::size_t s = 0; s < S; ++s)
            for (std::size_t d = 0; d < kHeadDim; ++d)
                y.get()[(s * kHeads + j) * kHeadDim + d] = x[(j * S + s) * kHeadDim + d];
    return y;
}

const std::vector<std::pair<std::string, int64_t>> kOpset23 = {{"", 23}};
const std::vector<std::pair<std::string, int64_t>> kMicrosoft = {{"", 17}, {"com.microsoft", 1}};

}  // namespace

void add_ort(ort::Runtime &rt, const Inputs &in, std::vector<Impl> *impls) {
    const Shape &s = in.shape;
    const int64_t H = kHeads, D = kHeadDim;
    const std::string row = s.label();
    if (s.kind == Kind::softmax) {
        const int64_t R = static_cast<int64_t>(s.a), C = static_cast<int64_t>(s.b);
        Tensor y = tensor("Y", F32, {R, C});
        auto m = std::make_shared<Model>(rt, onnx::Node{"Softmax", "", {"X"}, {"Y"}, {{"axis", -1}}},
                                         std::vector<Tensor>{tensor("X", F32, {R, C}, in.x.get())},
                                         std::vector<Tensor>{y},
                                         std::vector<std::pair<std::string, int64_t>>{{"", 13}}, 8);
        add(impls, m, Dtype::f32, "Softmax (opset 13)", [y] { return read(y); }, 0, row);
        return;
    }
    for (Dtype t : {Dtype::f32, Dtype::f16}) {
        const int e = t == Dtype::f32 ? F32 : F16;
        const double elem_bytes = t == Dtype::f32 ? 4 : 2;
        if (s.kind == Kind::decode) {
            const int64_t L = static_cast<int64_t>(s.a), kv = static_cast<int64_t>(s.b);
            const double bytes = 2.0 * kv * L * D * elem_bytes;
            {
                Tensor y = tensor("Y", e, {1, H, 1, D});
                auto m = std::make_shared<Model>(
                    rt, onnx::Node{"Attention", "", {"Q", "K", "V"}, {"Y"}, {}},
                    std::vector<Tensor>{tensor("Q", e, {1, H, 1, D}, in.q.get()),
                                        tensor("K", e, {1, kv, L, D}, in.k.get()),
                                        tensor("V", e, {1, kv, L, D}, in.v.get())},
                    std::vector<Tensor>{y}, kOpset23, 10);
                add(impls, m, t, "Attention (opset 23)", [y] { return read(y); }, bytes, row);
            }
            {
                // the cache buffers hold K, V (the run rewrites token L - 1 in place)
                Tensor past_k = tensor("past_key", e, {1, kv, L, D}, in.k.get());
                Tensor past_v = tensor("past_value", e, {1, kv, L, D}, in.v.get());
                std::vector<float> key(kv * D), value(kv * D);
                for (int64_t g = 0; g < kv; ++g)
                    for (int64_t d = 0; d < D; ++d) {
                        key[g * D + d] = in.k.get()[(g * L + L - 1) * D + d];
                        value[g * D + d] = in.v.get()[(g * L + L - 1) * D + d];
                    }
                Tensor out = tensor("output", e, {1, 1, H * D});
                Tensor present_k = past_k, present_v = past_v;
                present_k.info.name = "present_key";
                present_v.info.name = "present_value";
                auto m = std::make_shared<Model>(
                    rt,
                    onnx::Node{"GroupQueryAttention",
                               "com.microsoft",
                               {"query", "key", "value", "past_key", "past_value", "seqlens_k",
                                "total_sequence_length"},
                               {"output", "present_key", "present_value"},
                               {{"num_heads", H}, {"kv_num_heads", kv}}},
                    std::vector<Tensor>{tensor("query", e, {1, 1, H * D}, in.q.get()),
                                        tensor("key", e, {1, 1, kv * D}, key.data()),
                                        tensor("value", e, {1, 1, kv * D}, value.data()), past_k, past_v,
                                        int32("seqlens_k", {1}, static_cast<int32_t>(L - 1)),
                                        int32("total_sequence_length", {}, static_cast<int32_t>(L))},
                    std::vector<Tensor>{out, present_k, present_v}, kMicrosoft, 8);
                add(impls, m, t, "GroupQueryAttention (cache in place)", [out] { return read(out); }, bytes, row);
            }
        } else {
            const int64_t S = static_cast<int64_t>(s.a);
            const std::size_t Su = s.a;
            const int64_t causal = s.b != 0 ? 1 : 0;
            {
                Tensor y = tensor("Y", e, {1, H, S, D});
                auto m = std::make_shared<Model>(
                    rt, onnx::Node{"Attention", "", {"Q", "K", "V"}, {"Y"}, {{"is_causal", causal}}},
                    std::vector<Tensor>{tensor("Q", e, {1, H, S, D}, in.q.get()),
                                        tensor("K", e, {1, H, S, D}, in.k.get()),
                                        tensor("V", e, {1, H, S, D}, in.v.get())},
                    std::vector<Tensor>{y}, kOpset23, 10);
                add(impls, m, t, "Attention (opset 23)", [y] { return read(y); }, 0, row);
            }
            {
                Tensor out = tensor("output", e, {1, S, H * D});
                auto m = std::make_shared<Model>(
                    rt,
                    onnx::Node{"MultiHeadAttention", "com.microsoft", {"query", "key", "value"}, {"output"},
                               {{"num_heads", H}, {"unidirectional", causal}}},
                    std::vector<Tensor>{tensor("query", e, {1, S, H * D}, heads_to_tokens(in.q.get(), Su).get()),
                                        tensor("key", e, {1, S, H * D}, heads_to_tokens(in.k.get(), Su).get()),
                                        tensor("value", e, {1, S, H * D}, heads_to_tokens(in.v.get(), Su).get())},
                    std::vector<Tensor>{out}, kMicrosoft, 8);
                add(impls, m, t, "MultiHeadAttention (com.microsoft)",
                    [out, Su] {
                        const std::vector<float> y = read(out);
                        std::vector<float> x(y.size());
                        for (std::size_t j = 0; j < kHeads; ++j)
                            for (std::size_t i = 0; i < Su; ++i)
                                for (std::size_t d = 0; d < kHeadDim; ++d)
                                    x[(j * Su + i) * kHeadDim + d] = y[(i * kHeads + j) * kHeadDim + d];
                        return x;
                    },
                    0, row);
            }
        }
    }
}

}  // namespace peers
