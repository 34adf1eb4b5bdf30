// The few ggml C functions the peers benchmark calls, resolved with dlsym()
// from a prebuilt libggml-base.so and one libggml-cpu-<variant>.so (the
// packages of node-llama-cpp, fetched by bench/peers/fetch.sh). ggml's own
// headers are not needed: every call below passes only pointers, scalars,
// enums and the three-field ggml_init_params, and reads no struct field
// (tensor data through ggml_get_data). These declarations follow ggml.h,
// ggml-backend.h and ggml-cpu.h, checked against ggml 0.21 (its headers)
// and 0.25.1 (the libraries fetch.sh gets). At run time load() refuses a
// ggml_version() outside 0.21 to 0.25 (kTestedMinor), the versions whose
// signatures were compared, and every output is checked against a float64
// reference before anything is timed, so an ABI change shows up as a
// refusal or a failed check, not as a wrong number.
#ifndef EDGEATTN_BENCH_PEERS_GGML_API_HPP
#define EDGEATTN_BENCH_PEERS_GGML_API_HPP

#include <cstddef>
#include <cstdint>
#include <string>

namespace peers::ggml {

struct context;
struct tensor;
struct cgraph;
struct backend;
struct threadpool;

// enum ggml_type (values fixed: they are written in GGUF files)
enum type : int { TYPE_F32 = 0, TYPE_F16 = 1, TYPE_Q8_0 = 8 };
// enum ggml_prec
enum prec : int { PREC_DEFAULT = 0, PREC_F32 = 10 };
// enum ggml_status: GGML_STATUS_SUCCESS
constexpr int STATUS_SUCCESS = 0;

// struct ggml_init_params, passed by value
struct init_params {
    std::size_t mem_size;
    void *mem_buffer;
    bool no_alloc;
};

// ggml_version() "0.MINOR.PATCH" with MINOR in this range
constexpr int kTestedMinor[2] = {21, 25};

struct Api {
    // libggml-base
    const char *(*version)();
    const char *(*commit)();
    context *(*init)(init_params);
    void (*free)(context *);
    std::size_t (*tensor_overhead)();
    std::size_t (*graph_overhead_custom)(std::size_t size, bool grads);
    std::size_t (*row_size)(int type, int64_t ne);
    tensor *(*new_tensor_2d)(context *, int type, int64_t ne0, int64_t ne1);
    tensor *(*new_tensor_3d)(context *, int type, int64_t ne0, int64_t ne1, int64_t ne2);
    void *(*get_data)(const tensor *);
    void (*fp32_to_fp16_row)(const float *, uint16_t *, int64_t);
    std::size_t (*quantize_chunk)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                                  int64_t n_per_row, const float *imatrix);
    tensor *(*flash_attn_ext)(context *, tensor *q, tensor *k, tensor *v, tensor *mask, float scale,
                              float max_bias, float logit_softcap);
    void (*flash_attn_ext_set_prec)(tensor *, int prec);
    tensor *(*soft_max_ext)(context *, tensor *a, tensor *mask, float scale, float max_bias);
    cgraph *(*new_graph_custom)(context *, std::size_t size, bool grads);
    void (*build_forward_expand)(cgraph *, tensor *);
    int (*backend_graph_compute)(backend *, cgraph *);
    // struct ggml_threadpool_params is filled by the library into a buffer
    // far larger than any version's struct
    void (*threadpool_params_init)(void *params, int n_threads);
    // libggml-cpu-<variant>
    backend *(*backend_cpu_init)();
    void (*backend_cpu_set_n_threads)(backend *, int n_threads);
    threadpool *(*threadpool_new)(void *params);
    void (*backend_cpu_set_threadpool)(backend *, threadpool *);
    int (*backend_score)();

    std::string variant;  // file name of the CPU library opened
};

// Opens DIR/libggml-base.so and DIR/libggml-cpu-VARIANT.so (VARIANT empty:
// the variant ggml's own loader would pick, the highest
// ggml_backend_score()). Returns false, with the reason in *why, when
// something is missing.
bool load(const std::string &dir, const std::string &variant, Api *api, std::string *why);

}  // namespace peers::ggml

#endif
