/* The headers tools/export_torch.py writes, used as a firmware would: the
 * const weights and the exported example straight into the C API, the output
 * and attention weights compared with PyTorch's float64 answer in the header
 * (rel L2 <= 1e-5, tests/golden/FORMAT.md). Built from the headers
 * tests/export/make_export_cases.py generates (tests/CMakeLists.txt). */
#include <math.h>
#include <stdio.h>

#include <edgeattn/edgeattn.h>

#include "d2l_mha.h"
#include "d2l_mha_fp16.h"
#include "state_dict.h"
#include "torch_kvdim.h"
#include "torch_mha.h"
#include "torch_mha_int8.h"

static double workspace[1 << 16]; /* 512 KiB, 8-byte aligned */
static float output[4096], weights[4096];

static double rel_l2(const float *got, const double *want, size_t n) {
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; ++i) {
        err += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return sqrt(err / ref);
}

/* One exported example through edgeattn_multi_head_attention (fp32 weights)
 * or its _typed form (int8 / fp16); 0 when both results meet the bar. */
static int check(const char *name, edgeattn_attention_dims dims, const float *queries, const float *keys,
                 const float *values, edgeattn_valid_lens_kind kind, const int32_t *lens,
                 const edgeattn_mha_weights *fp32, const edgeattn_mha_typed_weights *typed,
                 const double *want_output, const double *want_weights) {
    const edgeattn_valid_lens valid_lens = {kind, lens};
    const size_t need = edgeattn_multi_head_attention_workspace_size(&dims, 1);
    const size_t n_out = dims.batch * dims.queries * dims.num_hiddens;
    const size_t n_w = dims.batch * dims.num_heads * dims.queries * dims.keys;
    if (need > sizeof workspace || n_out > 4096 || n_w > 4096) {
        printf("%s: example too large for this test's buffers\n", name);
        return 1;
    }
    const edgeattn_status st =
        fp32 ? edgeattn_multi_head_attention(&dims, queries, keys, values, &valid_lens, fp32, workspace,
                                             sizeof workspace, output, weights)
             : edgeattn_multi_head_attention_typed(&dims, queries, keys, values, &valid_lens, NULL, typed,
                                                   workspace, sizeof workspace, output, weights);
    if (st != EDGEATTN_OK) {
        printf("%s: %s\n", name, edgeattn_status_str(st));
        return 1;
    }
    const double e_out = rel_l2(output, want_output, n_out), e_w = rel_l2(weights, want_weights, n_w);
    const int ok = e_out <= 1e-5 && e_w <= 1e-5;
    printf("%-4s %-16s output rel L2 %.2e, attention weights %.2e\n", ok ? "ok" : "FAIL", name, e_out, e_w);
    return !ok;
}

/* The dims and example arrays of header NAME (macros NAME_..., arrays name_...). */
#define EXAMPLE(name, NAME, fp32, typed)                                                                    \
    check(#name,                                                                                            \
          (edgeattn_attention_dims){NAME##_EXAMPLE_BATCH, NAME##_EXAMPLE_QUERIES, NAME##_EXAMPLE_KEYS,      \
                                    NAME##_QUERY_SIZE, NAME##_KEY_SIZE, NAME##_VALUE_SIZE,                  \
                                    NAME##_NUM_HIDDENS, NAME##_NUM_HEADS, 0},                               \
          name##_example_queries, name##_example_keys, name##_example_values,                               \
          NAME##_EXAMPLE_VALID_LENS_KIND, name##_example_valid_lens, fp32, typed, name##_example_output,    \
          name##_example_attention_weights)

int main(void) {
    int failed = 0;
    failed += EXAMPLE(torch_mha, TORCH_MHA, &torch_mha_weights, NULL);
    failed += EXAMPLE(torch_kvdim, TORCH_KVDIM, &torch_kvdim_weights, NULL);
    failed += EXAMPLE(d2l_mha, D2L_MHA, &d2l_mha_weights, NULL);
    failed += EXAMPLE(state_dict, STATE_DICT, &state_dict_weights, NULL);
    failed += EXAMPLE(torch_mha_int8, TORCH_MHA_INT8, NULL, &torch_mha_int8_weights);
    failed += EXAMPLE(d2l_mha_fp16, D2L_MHA_FP16, NULL, &d2l_mha_fp16_weights);
    printf("%d of 6 exported headers failed\n", failed);
    return failed != 0;
}
