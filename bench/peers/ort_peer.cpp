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
// Only fp32: the CPU kernels of these ops take fp16 inputs in some
// releases, not a quantised cache, and fp16 activations would differ from
// what edgeattn and ggml are given.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "onnx_model.hpp"
#include "ort_api.hpp"
#include "workloads.hpp"

namespace peers {
namespace {

constexpr int F32 = ort::ELEM_FLOAT, I32 = ort::ELEM_INT32;

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
        check(r.api, r.api.CreateSessionFromArray(r.env, bytes.data(), bytes.size(), r.options, &session),
              ("CreateSessionFromArray (" + node.op_type + ")").c_str());
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

Tensor floats(const std::string &name, std::vector<int64_t> dims, Floats data) {
    return {{name, F32, std::move(dims)}, std::shared_ptr<void>(data, data.get())};
}
Tensor floats(const std::string &name, std::vector<int64_t> dims) {
    std::size_t n = 1;
    for (int64_t d : dims) n *= static_cast<std::size_t>(d);
    return floats(name, std::move(dims), make_floats(n));
}
Tensor int32(const std::string &name, std::vector<int64_t> dims, int32_t value) {
    auto p = std::shared_ptr<int32_t>(new int32_t[1]{value}, std::default_delete<int32_t[]>());
    return {{name, I32, std::move(dims)}, std::shared_ptr<void>(p, p.get())};
}
const float *data(const Tensor &t) { return static_cast<const float *>(t.data.get()); }

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
    if (s.kind == Kind::decode) {
        const int64_t L = static_cast<int64_t>(s.a), kv = static_cast<int64_t>(s.b);
        const double bytes = 2.0 * kv * L * D * 4;
        {
            Tensor y = floats("Y", {1, H, 1, D});
            auto m = std::make_shared<Model>(rt, onnx::Node{"Attention", "", {"Q", "K", "V"}, {"Y"}, {}},
                                             std::vector<Tensor>{floats("Q", {1, H, 1, D}, in.q),
                                                                 floats("K", {1, kv, L, D}, in.k),
                                                                 floats("V", {1, kv, L, D}, in.v)},
                                             std::vector<Tensor>{y}, kOpset23, 10);
            const std::size_t n = in.out_n;
            impls->push_back({"onnxruntime", Dtype::f32, "Attention (opset 23)", [m] { m->run(); },
                              [y, n] { return std::vector<float>(data(y), data(y) + n); }, bytes});
        }
        {
            // the cache buffers: K, V copied (the run writes token L - 1 into them)
            Tensor past_k = floats("past_key", {1, kv, L, D}), past_v = floats("past_value", {1, kv, L, D});
            const std::size_t kvn = static_cast<std::size_t>(kv * L * D);
            std::copy(in.k.get(), in.k.get() + kvn, static_cast<float *>(past_k.data.get()));
            std::copy(in.v.get(), in.v.get() + kvn, static_cast<float *>(past_v.data.get()));
            Tensor key = floats("key", {1, 1, kv * D}), value = floats("value", {1, 1, kv * D});
            for (int64_t g = 0; g < kv; ++g)
                for (int64_t d = 0; d < D; ++d) {
                    static_cast<float *>(key.data.get())[g * D + d] = in.k.get()[(g * L + L - 1) * D + d];
                    static_cast<float *>(value.data.get())[g * D + d] = in.v.get()[(g * L + L - 1) * D + d];
                }
            Tensor out = floats("output", {1, 1, H * D});
            Tensor present_k = past_k, present_v = past_v;
            present_k.info.name = "present_key";
            present_v.info.name = "present_value";
            auto m = std::make_shared<Model>(
                rt,
                onnx::Node{"GroupQueryAttention",
                           "com.microsoft",
                           {"query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length"},
                           {"output", "present_key", "present_value"},
                           {{"num_heads", H}, {"kv_num_heads", kv}}},
                std::vector<Tensor>{floats("query", {1, 1, H * D}, in.q), key, value, past_k, past_v,
                                    int32("seqlens_k", {1}, static_cast<int32_t>(L - 1)),
                                    int32("total_sequence_length", {}, static_cast<int32_t>(L))},
                std::vector<Tensor>{out, present_k, present_v}, kMicrosoft, 8);
            const std::size_t n = in.out_n;
            impls->push_back({"onnxruntime", Dtype::f32, "GroupQueryAttention (cache in place)", [m] { m->run(); },
                              [out, n] { return std::vector<float>(data(out), data(out) + n); }, bytes});
        }
    } else if (s.kind == Kind::attention) {
        const int64_t S = static_cast<int64_t>(s.a);
        const int64_t causal = s.b != 0 ? 1 : 0;
        const std::size_t n = in.out_n;
        {
            Tensor y = floats("Y", {1, H, S, D});
            auto m = std::make_shared<Model>(rt, onnx::Node{"Attention", "", {"Q", "K", "V"}, {"Y"}, {{"is_causal", causal}}},
                                             std::vector<Tensor>{floats("Q", {1, H, S, D}, in.q),
                                                                 floats("K", {1, H, S, D}, in.k),
                                                                 floats("V", {1, H, S, D}, in.v)},
                                             std::vector<Tensor>{y}, kOpset23, 10);
            impls->push_back({"onnxruntime", Dtype::f32, "Attention (opset 23)", [m] { m->run(); },
                              [y, n] { return std::vector<float>(data(y), data(y) + n); }, 0});
        }
        {
            const std::size_t Su = static_cast<std::size_t>(S);
            Tensor out = floats("output", {1, S, H * D});
            auto m = std::make_shared<Model>(
                rt,
                onnx::Node{"MultiHeadAttention", "com.microsoft", {"query", "key", "value"}, {"output"},
                           {{"num_heads", H}, {"unidirectional", causal}}},
                std::vector<Tensor>{floats("query", {1, S, H * D}, heads_to_tokens(in.q.get(), Su)),
                                    floats("key", {1, S, H * D}, heads_to_tokens(in.k.get(), Su)),
                                    floats("value", {1, S, H * D}, heads_to_tokens(in.v.get(), Su))},
                std::vector<Tensor>{out}, kMicrosoft, 8);
            impls->push_back({"onnxruntime", Dtype::f32, "MultiHeadAttention (com.microsoft)", [m] { m->run(); },
                              [out, Su] {
                                  std::vector<float> x(kHeads * Su * kHeadDim);
                                  const float *y = data(out);
                                  for (std::size_t j = 0; j < kHeads; ++j)
                                      for (std::size_t t = 0; t < Su; ++t)
                                          for (std::size_t d = 0; d < kHeadDim; ++d)
                                              x[(j * Su + t) * kHeadDim + d] = y[(t * kHeads + j) * kHeadDim + d];
                                  return x;
                              },
                              0});
        }
    } else {
        const int64_t R = static_cast<int64_t>(s.a), C = static_cast<int64_t>(s.b);
        Tensor y = floats("Y", {R, C});
        auto m = std::make_shared<Model>(rt, onnx::Node{"Softmax", "", {"X"}, {"Y"}, {{"axis", -1}}},
                                         std::vector<Tensor>{floats("X", {R, C}, in.x)}, std::vector<Tensor>{y},
                                         std::vector<std::pair<std::string, int64_t>>{{"", 13}}, 8);
        const std::size_t n = in.out_n;
        impls->push_back({"onnxruntime", Dtype::f32, "Softmax (opset 13)", [m] { m->run(); },
                          [y, n] { return std::vector<float>(data(y), data(y) + n); }, 0});
    }
}

}  // namespace peers
