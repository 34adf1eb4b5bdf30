/* The headers tools/export_torch.py writes, used as a firmware would: the
 * const weights and the exported example straight into the C API
 * (edgeattn_mha with NAME_weights and NAME_example_options; edgeattn_dense
 * with NAME_W and NAME_b), the results compared with PyTorch's float64
 * answer in the header (rel L2 <= 1e-5, tests/golden/FORMAT.md): fp32,
 * int8 and fp16 weights, grouped-query heads, dense layers and the layers of
 * two decoder blocks. Built from the headers tests/export/make_export_cases.py
 * generates (tests/CMakeLists.txt). */
#include <math.h>
#include <stdio.h>

#include <edgeattn/edgeattn.h>

#include "exported_headers.h"

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

/* One exported attention example through edgeattn_mha; 0 when both
 * results meet the bar. */
static int check_attention(const char *name, const edgeattn_attention_dims *dims, const float *queries,
                           const float *keys, const float *values, const edgeattn_attention_options *options,
                           const edgeattn_weights *w, const double *want_output, const double *want_weights) {
    const edgeattn_workspace_request request = {EDGEATTN_OP_MHA, *dims, 0, {0, 0, 0}, EDGEATTN_DTYPE_F32, EDGEATTN_ARITHMETIC_FLOAT};
    size_t need = 0;
    edgeattn_status st = edgeattn_workspace_size(&request, 1, 1, &need);
    const size_t n_out = dims->batch * dims->queries * dims->num_hiddens;
    const size_t n_w = dims->batch * dims->num_heads * dims->queries * dims->keys;
    if (st != EDGEATTN_OK || need > sizeof workspace || n_out > 4096 || n_w > 4096) {
        printf("FAIL %-26s example too large for this test's buffers (%s)\n", name, edgeattn_status_str(st));
        return 1;
    }
    st = edgeattn_mha(dims, queries, keys, values, w, options, workspace, sizeof workspace, output, weights);
    if (st != EDGEATTN_OK) {
        printf("FAIL %-26s edgeattn_mha: %s\n", name, edgeattn_status_str(st));
        return 1;
    }
    const double e_out = rel_l2(output, want_output, n_out), e_w = rel_l2(weights, want_weights, n_w);
    const int ok = e_out <= 1e-5 && e_w <= 1e-5;
    printf("%-4s %-26s edgeattn_mha: output rel L2 %.2e, attention weights %.2e (%zu of %zu kv heads)\n",
           ok ? "ok" : "FAIL", name, e_out, e_w, dims->num_kv_heads, dims->num_heads);
    return !ok;
}

/* One exported dense example through edgeattn_dense: all rows with
 * NAME_example_dims, then the first row alone with NAME_dims (one row). */
static int check_dense(const char *name, const edgeattn_dense_dims *dims, const edgeattn_dense_dims *one_row,
                       const float *x, const edgeattn_weight_matrix *W, const float *b, const double *want_y) {
    const size_t n = dims->rows * dims->out_features;
    edgeattn_workspace_request request = {EDGEATTN_OP_DENSE, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0, *dims, EDGEATTN_DTYPE_F32, EDGEATTN_ARITHMETIC_FLOAT};
    size_t need = 0;
    edgeattn_status st = edgeattn_workspace_size(&request, 1, 1, &need);
    if (st != EDGEATTN_OK || need > sizeof workspace || n > 4096 || one_row->rows != 1 ||
        one_row->in_features != dims->in_features || one_row->out_features != dims->out_features) {
        printf("FAIL %-26s example too large for this test's buffers, or NAME_dims not one row (%s)\n", name,
               edgeattn_status_str(st));
        return 1;
    }
    st = edgeattn_dense(dims, x, W, b, workspace, sizeof workspace, output);
    const double e = st == EDGEATTN_OK ? rel_l2(output, want_y, n) : INFINITY;
    request.dense = *one_row;
    if (st == EDGEATTN_OK) st = edgeattn_workspace_size(&request, 1, 1, &need);
    if (st == EDGEATTN_OK) st = edgeattn_dense(one_row, x, W, b, workspace, sizeof workspace, output);
    if (st != EDGEATTN_OK) {
        printf("FAIL %-26s edgeattn_dense: %s\n", name, edgeattn_status_str(st));
        return 1;
    }
    const double e_row = rel_l2(output, want_y, dims->out_features);
    const int ok = e <= 1e-5 && e_row <= 1e-5;
    printf("%-4s %-26s edgeattn_dense: y rel L2 %.2e over %zu rows, %.2e for row 0 alone\n", ok ? "ok" : "FAIL",
           name, e, dims->rows, e_row);
    return !ok;
}

/* The example of attention header NAME: its dims, arrays, options and answer;
 * NAME_DIMS and NAME_NUM_KV_HEADS must agree with the example's dims. */
#define ATTENTION(name, NAME)                                                                               \
    (check_attention(#name, &name##_example_dims, name##_example_queries, name##_example_keys,              \
                     name##_example_values, &name##_example_options, &name##_weights, name##_example_output, \
                     name##_example_attention_weights) +                                                    \
     same_dims(#name, &name##_example_dims, NAME##_EXAMPLE_BATCH, NAME##_EXAMPLE_QUERIES,                    \
               NAME##_EXAMPLE_KEYS, NAME##_NUM_KV_HEADS))

#define DENSE(name)                                                                                    \
    check_dense(#name, &name##_example_dims, &name##_dims, name##_example_x, &name##_W, name##_b, \
                name##_example_y)

static int same_dims(const char *name, const edgeattn_attention_dims *d, size_t batch, size_t queries,
                     size_t keys, size_t num_kv_heads) {
    if (d->batch == batch && d->queries == queries && d->keys == keys && d->num_kv_heads == num_kv_heads)
        return 0;
    printf("FAIL %-26s NAME_example_dims disagrees with the macros\n", name);
    return 1;
}

int main(void) {
    int failed = 0, checked = 0;
#define RUN(x) (failed += (x), ++checked)
    RUN(ATTENTION(torch_mha, TORCH_MHA));
    RUN(ATTENTION(torch_kvdim, TORCH_KVDIM));
    RUN(ATTENTION(d2l_mha, D2L_MHA));
    RUN(ATTENTION(state_dict, STATE_DICT));
    RUN(ATTENTION(torch_mha_int8, TORCH_MHA_INT8));
    RUN(ATTENTION(d2l_mha_fp16, D2L_MHA_FP16));
    RUN(ATTENTION(llama_gqa, LLAMA_GQA));
    RUN(ATTENTION(llama_gqa_int8, LLAMA_GQA_INT8));
    RUN(ATTENTION(llama_gqa_fp16, LLAMA_GQA_FP16));
    RUN(DENSE(dense));
    RUN(DENSE(dense_int8));
    RUN(DENSE(dense_fp16));
    RUN(ATTENTION(llama_block_attn, LLAMA_BLOCK_ATTN));
    RUN(DENSE(llama_block_mlp_gate_proj));
    RUN(DENSE(llama_block_mlp_up_proj));
    RUN(DENSE(llama_block_mlp_down_proj));
    RUN(ATTENTION(gpt2_block_attn, GPT2_BLOCK_ATTN));
    RUN(DENSE(gpt2_block_c_fc));
    RUN(DENSE(gpt2_block_c_proj));
    printf("%d of %d exported examples failed\n", failed, checked);
    return failed != 0;
}
