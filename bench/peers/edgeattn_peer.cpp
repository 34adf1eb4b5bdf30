// edgeattn's implementations of the peers rows: the KV cache calls for
// decode (projection-free: W_q, W_o, W_k, W_v are EDGEATTN_DTYPE_NONE, so a
// call is the attention over the cache alone, as ggml's flash_attn_ext and
// ONNX's Attention are), edgeattn_sdpa for fp32 attention and, with fp16
// tensors (options.tensor_type), for the fp16 rows, a cache of int8 keys and
// values for the int8 attention rows, and edgeattn_masked_softmax. Every workspace is sized for one thread.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <vector>

#include "edgeattn/edgeattn.h"
#include "workloads.hpp"

namespace peers {
namespace {

void check(edgeattn_status st, const char *what) {
    if (st != EDGEATTN_OK) {
        std::fprintf(stderr, "edgeattn: %s: %s\n", what, edgeattn_status_str(st));
        std::exit(1);
    }
}

std::shared_ptr<unsigned char> bytes(std::size_t n) {
    Floats f = make_floats((n + 3) / 4);
    return std::shared_ptr<unsigned char>(f, reinterpret_cast<unsigned char *>(f.get()));
}

std::size_t workspace(edgeattn_op op, const edgeattn_attention_dims &dims, std::size_t tokens) {
    edgeattn_workspace_request r{};
    r.op = op;
    r.dims = dims;
    r.tokens = tokens;
    std::size_t b = 0;
    check(edgeattn_workspace_size(&r, 1, 1, &b), "edgeattn_workspace_size");
    return b;
}

edgeattn_dtype storage(Dtype t) {
    return t == Dtype::f32 ? EDGEATTN_DTYPE_F32 : t == Dtype::f16 ? EDGEATTN_DTYPE_F16 : EDGEATTN_DTYPE_INT8;
}

// A cache of kv heads x capacity positions holding K and V ((kv, n, 64)
// each), stored through a projection-free store, and the attend of nq
// query rows (token-major (nq, 8 * 64)) over it.
struct CacheAttend {
    edgeattn_attention_dims dims{};
    edgeattn_weights none{};
    edgeattn_attention_options options{};
    edgeattn_kv_cache cache{};
    std::shared_ptr<unsigned char> memory, ws;
    std::size_t ws_bytes = 0;
    Floats queries, out;

    CacheAttend(std::size_t kv, std::size_t n, std::size_t nq, bool causal, Dtype t, const float *K, const float *V,
                const float *Q_token_major) {
        const std::size_t h = kHeads * kHeadDim, hkv = kv * kHeadDim;
        dims = {1, nq, n, h, hkv, hkv, h, kHeads, kv, 0};
        none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
        options.mask.causal = causal ? 1 : 0;
        edgeattn_kv_cache_config config{};
        config.batch = 1;
        config.num_kv_heads = kv;
        config.head_size = kHeadDim;
        config.capacity = n;
        config.storage = storage(t);
        const std::size_t mb = edgeattn_kv_cache_memory_size(&config);
        memory = bytes(mb);
        check(edgeattn_kv_cache_setup(&cache, &config, memory.get(), mb), "edgeattn_kv_cache_setup");
        // token-major rows for the store: row t = (head g, feature d) -> K[g][t][d]
        Floats kt = make_floats(n * hkv), vt = make_floats(n * hkv);
        for (std::size_t g = 0; g < kv; ++g)
            for (std::size_t p = 0; p < n; ++p)
                for (std::size_t d = 0; d < kHeadDim; ++d) {
                    kt.get()[p * hkv + g * kHeadDim + d] = K[(g * n + p) * kHeadDim + d];
                    vt.get()[p * hkv + g * kHeadDim + d] = V[(g * n + p) * kHeadDim + d];
                }
        const std::size_t sb = workspace(EDGEATTN_OP_KV_CACHE_STORE, dims, n);
        auto sws = bytes(sb);
        check(edgeattn_kv_cache_store(&cache, &dims, n, kt.get(), vt.get(), &none, nullptr, sws.get(), sb),
              "edgeattn_kv_cache_store");
        ws_bytes = workspace(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 0);
        ws = bytes(ws_bytes);
        queries = make_floats(nq * h);
        for (std::size_t i = 0; i < nq * h; ++i) queries.get()[i] = Q_token_major[i];
        out = make_floats(nq * h);
    }
    void run() {
        check(edgeattn_kv_cache_attend(&cache, &dims, queries.get(), &none,
                                       options.mask.causal ? &options : nullptr, ws.get(), ws_bytes, out.get(),
                                       nullptr),
              "edgeattn_kv_cache_attend");
    }
};

// (8, S, 64) <-> token-major (S, 8 * 64)
Floats to_token_major(const float *x, std::size_t S) {
    Floats y = make_floats(S * kHeads * kHeadDim);
    for (std::size_t j = 0; j < kHeads; ++j)
        for (std::size_t s = 0; s < S; ++s)
            for (std::size_t d = 0; d < kHeadDim; ++d)
                y.get()[(s * kHeads + j) * kHeadDim + d] = x[(j * S + s) * kHeadDim + d];
    return y;
}
std::vector<float> from_token_major(const float *y, std::size_t S) {
    std::vector<float> x(S * kHeads * kHeadDim);
    for (std::size_t j = 0; j < kHeads; ++j)
        for (std::size_t s = 0; s < S; ++s)
            for (std::size_t d = 0; d < kHeadDim; ++d)
                x[(j * S + s) * kHeadDim + d] = y[(s * kHeads + j) * kHeadDim + d];
    return x;
}

}  // namespace

void add_edgeattn(const Inputs &in, std::vector<Impl> *impls) {
    const Shape &s = in.shape;
    if (s.kind == Kind::decode) {
        const std::size_t L = s.a, kv = s.b;
        for (Dtype t : {Dtype::f32, Dtype::f16, Dtype::int8}) {
            auto c = std::make_shared<CacheAttend>(kv, L, 1, false, t, in.k.get(), in.v.get(), in.q.get());
            const double per_row = t == Dtype::f32 ? 4.0 * kHeadDim : t == Dtype::f16 ? 2.0 * kHeadDim : kHeadDim + 4.0;
            const std::size_t n = in.out_n;
            impls->push_back({"edgeattn", t, "edgeattn_kv_cache_attend (projection-free)", [c] { c->run(); },
                              [c, n] { return std::vector<float>(c->out.get(), c->out.get() + n); },
                              2.0 * kv * L * per_row});
        }
    } else if (s.kind == Kind::attention) {
        const std::size_t S = s.a;
        const bool causal = s.b != 0;
        {
            struct Sdpa {
                edgeattn_attention_dims dims{};
                edgeattn_attention_options options{};
                std::shared_ptr<unsigned char> ws;
                std::size_t ws_bytes = 0;
                Floats out;
            };
            auto p = std::make_shared<Sdpa>();
            p->dims = {kHeads, S, S, kHeadDim, kHeadDim, kHeadDim, 0, 0, 0, 0};
            p->options.mask.causal = causal ? 1 : 0;
            p->ws_bytes = workspace(EDGEATTN_OP_SDPA, p->dims, 0);
            p->ws = bytes(p->ws_bytes);
            p->out = make_floats(in.out_n);
            Floats q = in.q, k = in.k, v = in.v;
            const std::size_t n = in.out_n;
            impls->push_back({"edgeattn", Dtype::f32, "edgeattn_sdpa",
                              [p, q, k, v] {
                                  check(edgeattn_sdpa(&p->dims, q.get(), k.get(), v.get(),
                                                      p->options.mask.causal ? &p->options : nullptr, p->ws.get(),
                                                      p->ws_bytes, p->out.get(), nullptr),
                                        "edgeattn_sdpa");
                              },
                              [p, n] { return std::vector<float>(p->out.get(), p->out.get() + n); }, 0});
        }
        {
            // fp16 queries, keys, values and output (options.tensor_type),
            // as ONNX Runtime's fp16 Attention takes them; fp32 arithmetic.
            struct Sdpa16 {
                edgeattn_attention_dims dims{};
                edgeattn_attention_options options{};
                std::shared_ptr<unsigned char> ws;
                std::size_t ws_bytes = 0;
                std::vector<std::uint16_t> q, k, v, out;
            };
            auto p = std::make_shared<Sdpa16>();
            p->dims = {kHeads, S, S, kHeadDim, kHeadDim, kHeadDim, 0, 0, 0, 0};
            p->options.mask.causal = causal ? 1 : 0;
            p->options.tensor_type = EDGEATTN_DTYPE_F16;
            edgeattn_workspace_request r{};
            r.op = EDGEATTN_OP_SDPA;
            r.dims = p->dims;
            r.tensor_type = EDGEATTN_DTYPE_F16;
            check(edgeattn_workspace_size(&r, 1, 1, &p->ws_bytes), "edgeattn_workspace_size");
            p->ws = bytes(p->ws_bytes);
            const std::size_t n_in = kHeads * S * kHeadDim, n = in.out_n;
            p->q.resize(n_in);
            p->k.resize(n_in);
            p->v.resize(n_in);
            p->out.resize(n);
            check(edgeattn_float_to_half(n_in, in.q.get(), p->q.data()), "edgeattn_float_to_half");
            check(edgeattn_float_to_half(n_in, in.k.get(), p->k.data()), "edgeattn_float_to_half");
            check(edgeattn_float_to_half(n_in, in.v.get(), p->v.data()), "edgeattn_float_to_half");
            impls->push_back({"edgeattn", Dtype::f16, "edgeattn_sdpa (fp16 tensors)",
                              [p] {
                                  // binary16 tensors pass through the float * parameters
                                  check(edgeattn_sdpa(&p->dims, reinterpret_cast<const float *>(p->q.data()),
                                                      reinterpret_cast<const float *>(p->k.data()),
                                                      reinterpret_cast<const float *>(p->v.data()), &p->options,
                                                      p->ws.get(), p->ws_bytes,
                                                      reinterpret_cast<float *>(p->out.data()), nullptr),
                                        "edgeattn_sdpa (fp16 tensors)");
                              },
                              [p, n] {
                                  std::vector<float> y(n);
                                  check(edgeattn_half_to_float(n, p->out.data(), y.data()), "edgeattn_half_to_float");
                                  return y;
                              },
                              0});
        }
        Floats qt = to_token_major(in.q.get(), S);
        for (Dtype t : {Dtype::int8}) {
            auto c = std::make_shared<CacheAttend>(kHeads, S, S, causal, t, in.k.get(), in.v.get(), qt.get());
            impls->push_back({"edgeattn", t, "edgeattn_kv_cache_attend (projection-free)", [c] { c->run(); },
                              [c, S] { return from_token_major(c->out.get(), S); }, 0});
        }
    } else {
        auto dims = std::make_shared<edgeattn_softmax_dims>(edgeattn_softmax_dims{1, s.a, s.b});
        Floats x = in.x, y = make_floats(in.out_n);
        const std::size_t n = in.out_n;
        impls->push_back({"edgeattn", Dtype::f32, "edgeattn_masked_softmax",
                          [dims, x, y] {
                              check(edgeattn_masked_softmax(dims.get(), x.get(), nullptr, y.get()),
                                    "edgeattn_masked_softmax");
                          },
                          [y, n] { return std::vector<float>(y.get(), y.get() + n); }, 0});
    }
}

}  // namespace peers
