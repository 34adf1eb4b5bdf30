// An exported header with the fixed-size C++ module, as README's "Coming
// from PyTorch" shows: the header's macros are the template arguments, its
// weights the constructor's (fp32 and int8), and the example's output
// matches PyTorch's float64 answer (rel L2 <= 1e-5).
#include <edgeattn/edgeattn.hpp>

#include <cmath>
#include <cstdio>

#include "torch_mha.h"
#include "torch_mha_int8.h"

namespace {

template <class Module, class Weights, std::size_t N>
int check(const char *name, const Weights &weights, const float *q, const float *k, const float *v,
          const std::int32_t *lens, const double (&want)[N]) {
    static Module module(weights);  // sizeof(Module): all the RAM it uses
    static float output[N];
    const edgeattn::ValidLens valid_lens{EDGEATTN_VALID_LENS_PER_BATCH, lens};
    if (module.forward(q, k, v, &valid_lens, output) != EDGEATTN_OK) return 1;
    double err = 0, ref = 0;
    for (std::size_t i = 0; i < N; ++i) {
        err += (output[i] - want[i]) * (output[i] - want[i]);
        ref += want[i] * want[i];
    }
    const double rel = std::sqrt(err / ref);
    std::printf("%-4s %-16s fixed-size module (%zu bytes): output rel L2 %.2e\n", rel <= 1e-5 ? "ok" : "FAIL",
                name, sizeof(Module), rel);
    return rel <= 1e-5 ? 0 : 1;
}

}  // namespace

int main() {
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
    return failed != 0;
}
