// ggml's implementations of the peers rows, as llama.cpp runs attention:
// ggml_flash_attn_ext over q (64, queries, 8) fp32 and k, v (64, keys, kv
// heads) in F32, F16 or Q8_0 (grouped-query heads broadcast by ggml),
// scale 1/8, GGML_PREC_F32, a causal prefill through an F16 mask of 0 and
// -inf (llama.cpp's); ggml_soft_max_ext for the softmax rows. One graph per
// implementation, built once; a call is ggml_backend_graph_compute on a CPU
// backend with a persistent one-thread pool.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ggml_api.hpp"
#include "workloads.hpp"

namespace peers {
namespace {

struct Graph {
    const ggml::Api *api = nullptr;
    ggml::backend *cpu = nullptr;
    ggml::context *ctx = nullptr;
    ggml::cgraph *graph = nullptr;
    ggml::tensor *out = nullptr;
    Graph(const ggml::Api &a, ggml::backend *b, std::size_t data_bytes) : api(&a), cpu(b) {
        ggml::init_params p{data_bytes + 16 * a.tensor_overhead() + a.graph_overhead_custom(16, false) + (1u << 20),
                            nullptr, false};
        ctx = a.init(p);
        if (!ctx) {
            std::fprintf(stderr, "ggml: ggml_init failed\n");
            std::exit(1);
        }
    }
    ~Graph() { api->free(ctx); }
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;
    void finish(ggml::tensor *o) {
        out = o;
        graph = api->new_graph_custom(ctx, 16, false);
        api->build_forward_expand(graph, out);
    }
    void run() const {
        if (api->backend_graph_compute(cpu, graph) != ggml::STATUS_SUCCESS) {
            std::fprintf(stderr, "ggml: graph compute failed\n");
            std::exit(1);
        }
    }
    const float *result() const { return static_cast<const float *>(api->get_data(out)); }
};

int ggml_type_of(Dtype t) {
    return t == Dtype::f32 ? ggml::TYPE_F32 : t == Dtype::f16 ? ggml::TYPE_F16 : ggml::TYPE_Q8_0;
}

// n floats, rows of 64, into a tensor of type t
void store(const ggml::Api &a, ggml::tensor *dst, int t, const float *src, std::size_t n) {
    void *d = a.get_data(dst);
    if (t == ggml::TYPE_F32)
        std::memcpy(d, src, n * sizeof(float));
    else if (t == ggml::TYPE_F16)
        a.fp32_to_fp16_row(src, static_cast<uint16_t *>(d), static_cast<int64_t>(n));
    else
        a.quantize_chunk(t, src, d, 0, static_cast<int64_t>(n / kHeadDim), kHeadDim, nullptr);
}

}  // namespace

void add_ggml(const ggml::Api &a, ggml::backend *cpu, const Inputs &in, std::vector<Impl> *impls) {
    const Shape &s = in.shape;
    if (s.kind == Kind::softmax) {
        const std::size_t R = s.a, C = s.b, n = R * C;
        auto g = std::make_shared<Graph>(a, cpu, 2 * n * sizeof(float));
        ggml::tensor *x = a.new_tensor_2d(g->ctx, ggml::TYPE_F32, C, R);
        std::memcpy(a.get_data(x), in.x.get(), n * sizeof(float));
        g->finish(a.soft_max_ext(g->ctx, x, nullptr, 1.0f, 0.0f));
        impls->push_back({"ggml", Dtype::f32, "ggml_soft_max_ext", [g] { g->run(); },
                          [g, n] { return std::vector<float>(g->result(), g->result() + n); }, 0});
        return;
    }
    const bool decode = s.kind == Kind::decode;
    const std::size_t nq = decode ? 1 : s.a, nk = s.a, kv = decode ? s.b : kHeads;
    const bool causal = !decode && s.b != 0;
    const std::size_t qn = kHeads * nq * kHeadDim, kvn = kv * nk * kHeadDim;
    for (Dtype t : {Dtype::f32, Dtype::f16, Dtype::int8}) {
        const int type = ggml_type_of(t);
        const std::size_t kv_bytes = a.row_size(type, kHeadDim) * kv * nk;
        auto g = std::make_shared<Graph>(a, cpu, 2 * kv_bytes + 2 * qn * sizeof(float) + nk * nq * 2 + 4096);
        ggml::tensor *q = a.new_tensor_3d(g->ctx, ggml::TYPE_F32, kHeadDim, nq, kHeads);
        ggml::tensor *k = a.new_tensor_3d(g->ctx, type, kHeadDim, nk, kv);
        ggml::tensor *v = a.new_tensor_3d(g->ctx, type, kHeadDim, nk, kv);
        std::memcpy(a.get_data(q), in.q.get(), qn * sizeof(float));
        store(a, k, type, in.k.get(), kvn);
        store(a, v, type, in.v.get(), kvn);
        ggml::tensor *mask = nullptr;
        if (causal) {
            mask = a.new_tensor_2d(g->ctx, ggml::TYPE_F16, nk, nq);
            std::vector<float> m(nk * nq);
            for (std::size_t i = 0; i < nq; ++i)
                for (std::size_t j = 0; j < nk; ++j) m[i * nk + j] = j <= i + nk - nq ? 0.0f : -INFINITY;
            a.fp32_to_fp16_row(m.data(), static_cast<uint16_t *>(a.get_data(mask)), static_cast<int64_t>(m.size()));
        }
        ggml::tensor *o = a.flash_attn_ext(g->ctx, q, k, v, mask, 1.0f / std::sqrt(float(kHeadDim)), 0.0f, 0.0f);
        a.flash_attn_ext_set_prec(o, ggml::PREC_F32);
        g->finish(o);
        // the result is (64, 8, nq): query-major; canonical is (8, nq, 64)
        auto output = [g, nq] {
            const float *r = g->result();
            std::vector<float> x(kHeads * nq * kHeadDim);
            for (std::size_t i = 0; i < nq; ++i)
                for (std::size_t j = 0; j < kHeads; ++j)
                    std::memcpy(&x[(j * nq + i) * kHeadDim], r + (i * kHeads + j) * kHeadDim, kHeadDim * sizeof(float));
            return x;
        };
        impls->push_back({"ggml", t, std::string("ggml_flash_attn_ext, K/V ") + (t == Dtype::int8 ? "Q8_0" : dtype_name(t)),
                          [g] { g->run(); }, output, decode ? 2.0 * double(kv_bytes) : 0.0});
    }
}

}  // namespace peers
