// The exported headers from C++ (every one included, -Wall -Wextra -Werror):
// the fixed-size module as docs/from-pytorch.md shows it (the header's macros
// are the template arguments, its edgeattn_weights the constructor's; fp32
// and int8), and the NAME_DIMS initializers with run-time sizes (no
// narrowing) for a grouped-query attention and a dense layer through the C
// API; each output matches PyTorch's float64 answer (rel L2 <= 1e-5).
#include <edgeattn/edgeattn.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#include "exported_headers.h"

namespace {

double rel_l2(const float *got, const double *want, std::size_t n) {
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < n; ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return std::sqrt(err / ref);
}

int report(const char *name, const char *how, double rel) {
    std::printf("%-4s %-16s %s: output rel L2 %.2e\n", rel <= 1e-5 ? "ok" : "FAIL", name, how, rel);
    return rel <= 1e-5 ? 0 : 1;
}

template <class Module, std::size_t N>
int check(const char *name, const edgeattn_weights &weights, const float *q, const float *k, const float *v,
          const std::int32_t *lens, const double (&want)[N]) {
    // sizeof(Module): all the RAM it uses. Not static: both modules here
    // have the same sizes, so the same type and the same instantiation.
    Module module(weights);
    float output[N];
    const edgeattn::ValidLens valid_lens{EDGEATTN_VALID_LENS_PER_BATCH, lens};
    if (module.forward(q, k, v, &valid_lens, output) != EDGEATTN_OK) return 1;
    char how[64];
    std::snprintf(how, sizeof how, "fixed-size module (%zu bytes)", sizeof(Module));
    return report(name, how, rel_l2(output, want, N));
}

// NAME_DIMS with sizes known at run time only.
int gqa_from_cxx(int batch, int queries, int keys) {
    const edgeattn_attention_dims dims = LLAMA_GQA_DIMS(batch, queries, keys);
    edgeattn_workspace_request request{};
    request.op = EDGEATTN_OP_MHA;
    request.dims = dims;
    std::size_t bytes = 0;
    if (edgeattn_workspace_size(&request, 1, 1, &bytes) != EDGEATTN_OK) return 1;
    std::vector<double> workspace(bytes / sizeof(double) + 1);
    std::vector<float> out(dims.batch * dims.queries * dims.num_hiddens);
    if (edgeattn_mha(&dims, llama_gqa_example_queries, llama_gqa_example_keys, llama_gqa_example_values,
                     &llama_gqa_weights, &llama_gqa_example_options, workspace.data(), bytes, out.data(),
                     nullptr) != EDGEATTN_OK)
        return 1;
    return report("llama_gqa", "edgeattn_mha from C++", rel_l2(out.data(), llama_gqa_example_output, out.size()));
}

int dense_from_cxx(int rows) {
    const edgeattn_dense_dims dims = DENSE_FP16_DIMS(rows);
    edgeattn_workspace_request request{};
    request.op = EDGEATTN_OP_DENSE;
    request.dense = dims;
    std::size_t bytes = 0;
    if (edgeattn_workspace_size(&request, 1, 1, &bytes) != EDGEATTN_OK) return 1;
    std::vector<double> workspace(bytes / sizeof(double) + 1);
    std::vector<float> y(dims.rows * dims.out_features);
    if (edgeattn_dense(&dims, dense_fp16_example_x, &dense_fp16_W, dense_fp16_b, workspace.data(), bytes, y.data()) !=
        EDGEATTN_OK)
        return 1;
    return report("dense_fp16", "edgeattn_dense from C++", rel_l2(y.data(), dense_fp16_example_y, y.size()));
}

}  // namespace

int main(int argc, char **) {
    using Fp32 = edgeattn::MultiHeadAttention<TORCH_MHA_EXAMPLE_BATCH, TORCH_MHA_EXAMPLE_QUERIES, TORCH_MHA_EXAMPLE_KEYS,
                                              TORCH_MHA_QUERY_SIZE, TORCH_MHA_KEY_SIZE, TORCH_MHA_VALUE_SIZE,
                                              TORCH_MHA_NUM_HIDDENS, TORCH_MHA_NUM_HEADS>;
    using Int8 = edgeattn::MultiHeadAttention<TORCH_MHA_INT8_EXAMPLE_BATCH, TORCH_MHA_INT8_EXAMPLE_QUERIES,
                                              TORCH_MHA_INT8_EXAMPLE_KEYS, TORCH_MHA_INT8_QUERY_SIZE,
                                              TORCH_MHA_INT8_KEY_SIZE, TORCH_MHA_INT8_VALUE_SIZE,
                                              TORCH_MHA_INT8_NUM_HIDDENS, TORCH_MHA_INT8_NUM_HEADS>;
    int failed = check<Fp32>("torch_mha", torch_mha_weights, torch_mha_example_queries, torch_mha_example_keys,
                             torch_mha_example_values, torch_mha_example_valid_lens, torch_mha_example_output);
    failed += check<Int8>("torch_mha_int8", torch_mha_int8_weights, torch_mha_int8_example_queries,
                          torch_mha_int8_example_keys, torch_mha_int8_example_values,
                          torch_mha_int8_example_valid_lens, torch_mha_int8_example_output);
    // argc keeps the sizes out of the compiler's sight: run-time values.
    const int one = argc > 0 ? 1 : 0;
    failed += gqa_from_cxx(one * LLAMA_GQA_EXAMPLE_BATCH, one * LLAMA_GQA_EXAMPLE_QUERIES, one * LLAMA_GQA_EXAMPLE_KEYS);
    failed += dense_from_cxx(one * DENSE_FP16_EXAMPLE_ROWS);
    return failed != 0;
}
