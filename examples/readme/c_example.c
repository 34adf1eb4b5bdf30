/* README's C example: d2l's masked softmax and multi-head attention through
 * the C API, with caller-provided workspace. Built and run by the tests. */
#include <edgeattn/edgeattn.h>
#include <stdio.h>

enum { B = 2, Q = 4, H = 100, HEADS = 5 };

static float X[B * Q * H];                    /* (batch, queries, num_hiddens) */
static float W[4][H * H];                     /* W_q, W_k, W_v, W_o: (out, in) */
static float output[B * Q * H];               /* (batch, queries, num_hiddens) */
static float weights[B * HEADS * Q * Q];      /* (batch, heads, queries, keys) */
static float workspace[64 * 1024];            /* 256 KiB of scratch */

int main(void) {
    for (int i = 0; i < B * Q * H; ++i) X[i] = (float)(i % 7) / 7.0f - 0.5f;
    for (int m = 0; m < 4; ++m)
        for (int i = 0; i < H * H; ++i) W[m][i] = (float)((i * 37 + m) % 11) / 110.0f - 0.05f;

    /* masked softmax, one valid length per batch element (d2l's first example) */
    float scores[2 * 2 * 4] = {0.1f, 0.5f, 0.2f, 0.9f, 0.3f, 0.3f, 0.8f, 0.4f,
                               0.6f, 0.1f, 0.7f, 0.2f, 0.5f, 0.5f, 0.9f, 0.1f};
    const int32_t softmax_lens[2] = {2, 3};
    const edgeattn_softmax_dims sdims = {2, 2, 4};
    const edgeattn_valid_lens svl = {EDGEATTN_VALID_LENS_PER_BATCH, softmax_lens};
    edgeattn_status st = edgeattn_masked_softmax(&sdims, scores, &svl, scores); /* in place */
    if (st != EDGEATTN_OK) {
        fprintf(stderr, "masked_softmax: %s\n", edgeattn_status_str(st));
        return 1;
    }
    printf("softmax row 0: %.4f %.4f %.4f %.4f\n", scores[0], scores[1], scores[2], scores[3]);

    /* self-attention: queries = keys = values = X, 5 heads */
    const edgeattn_attention_dims dims = {B, Q, Q, H, H, H, H, HEADS, 0};
    const edgeattn_mha_weights w = {W[0], W[1], W[2], W[3], NULL, NULL, NULL, NULL};
    const int32_t lens[B] = {3, 2};
    const edgeattn_valid_lens vl = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    const size_t need = edgeattn_multi_head_attention_workspace_size(&dims, 1);
    if (need == 0 || need > sizeof workspace) return 1;
    st = edgeattn_multi_head_attention(&dims, X, X, X, &vl, &w, workspace, sizeof workspace,
                                       output, weights);
    if (st != EDGEATTN_OK) {
        fprintf(stderr, "multi_head_attention: %s\n", edgeattn_status_str(st));
        return 1;
    }
    printf("workspace %zu bytes; output[0] = %.6f; weights of batch 1, query 0: %.4f %.4f %.4f %.4f\n",
           need, output[0], weights[(1 * HEADS) * Q * Q], weights[(1 * HEADS) * Q * Q + 1],
           weights[(1 * HEADS) * Q * Q + 2], weights[(1 * HEADS) * Q * Q + 3]);
    return 0;
}
