#include <edgeattn/edgeattn.h>
#include <stdio.h>

enum { B = 2, Q = 4, H = 100, HEADS = 5 };

static float X[B * Q * H];               /* (batch, queries, num_hiddens) */
static float W[4][H * H];                /* W_q, W_k, W_v, W_o: (out, in) as torch.nn.Linear */
static float output[B * Q * H];          /* (batch, queries, num_hiddens) */
static float weights[B * HEADS * Q * Q]; /* (batch, heads, queries, keys) */
static float workspace[64 * 1024];       /* 256 KiB of scratch */

int main(void) {
    for (int i = 0; i < B * Q * H; ++i) X[i] = (float)(i % 7) / 7.0f - 0.5f;
    for (int m = 0; m < 4; ++m)
        for (int i = 0; i < H * H; ++i) W[m][i] = (float)((i * 37 + m) % 11) / 110.0f - 0.05f;

    /* d2l's self-attention example: MultiHeadAttention(100, 5) on X, X, X */
    const edgeattn_attention_dims dims = {B, Q, Q, H, H, H, H, HEADS, 0, 0};
    const edgeattn_weights w = {
        {.type = EDGEATTN_DTYPE_F32, .data = W[0]}, {.type = EDGEATTN_DTYPE_F32, .data = W[1]},
        {.type = EDGEATTN_DTYPE_F32, .data = W[2]}, {.type = EDGEATTN_DTYPE_F32, .data = W[3]},
        NULL, NULL, NULL, NULL}; /* no biases */
    const int32_t lens[B] = {3, 2}; /* valid_lens = [3, 2] */
    const edgeattn_attention_options options = {
        .valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens}}; /* no mask */

    const edgeattn_workspace_request call = {.op = EDGEATTN_OP_MHA, .dims = dims};
    size_t need = 0;
    edgeattn_status st = edgeattn_workspace_size(&call, 1, 1, &need); /* 1 thread */
    if (st == EDGEATTN_OK)
        st = edgeattn_mha(&dims, X, X, X, &w, &options, workspace, sizeof workspace, output,
                          weights);
    if (st != EDGEATTN_OK) {
        fprintf(stderr, "edgeattn_mha: %s\n", edgeattn_status_str(st));
        return 1;
    }
    const float *row = weights + HEADS * Q * Q; /* batch 1, head 0, query 0 */
    printf("workspace %zu of %zu bytes; output[0] = %.6f\n", need, sizeof workspace, output[0]);
    printf("batch 1, head 0, query 0: %.4f %.4f %.4f %.4f\n", row[0], row[1], row[2], row[3]);
    return 0;
}
