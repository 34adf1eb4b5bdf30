/* docs/reduced-precision.md's example: d2l's self-attention block (d = 100,
 * 5 heads) with W_q, W_v in int8, W_k in fp16 and W_o in fp32, checked
 * against the same call with every matrix in fp32 (the documented error of
 * int8 / fp16 weights: about 1e-2 / 1e-3 relative). Exits 0 when it holds. */
#include <edgeattn/edgeattn.h>
#include <math.h>
#include <stdio.h>

enum { B = 2, Q = 4, D = 100, HEADS = 5 };

static float X[B * Q * D], W_q[D * D], W_k[D * D], W_v[D * D], W_o[D * D];
static float out[B * Q * D], out_fp32[B * Q * D];
static float workspace[64 * 1024];

int main(void) {
    for (int i = 0; i < D * D; ++i) { /* small deterministic weights, +-0.1 */
        W_q[i] = (float)((i * 37) % 101 - 50) / 500.0f;
        W_k[i] = (float)((i * 53) % 97 - 48) / 480.0f;
        W_v[i] = (float)((i * 71) % 89 - 44) / 440.0f;
        W_o[i] = (float)((i * 29) % 83 - 41) / 410.0f;
    }
    for (int i = 0; i < B * Q * D; ++i) X[i] = (float)((i * 13) % 31 - 15) / 15.0f;

    int8_t Wq8[D * D], Wv8[D * D];
    float Wq_scales[D], Wv_scales[D];
    uint16_t Wk16[D * D];
    edgeattn_status st = edgeattn_quantize_int8(D, D, W_q, Wq8, Wq_scales); /* once, or offline */
    if (st == EDGEATTN_OK) st = edgeattn_quantize_int8(D, D, W_v, Wv8, Wv_scales);
    if (st == EDGEATTN_OK) st = edgeattn_float_to_half(D * D, W_k, Wk16); /* round to nearest even */

    const edgeattn_attention_dims dims = {B, Q, Q, D, D, D, D, HEADS, 0, 0};
    const int32_t lens[B] = {3, 2};
    const edgeattn_attention_options options = {
        .valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens}};
    const edgeattn_weights w = {
        {EDGEATTN_DTYPE_INT8, Wq8, Wq_scales}, {EDGEATTN_DTYPE_F16, Wk16, NULL},
        {EDGEATTN_DTYPE_INT8, Wv8, Wv_scales}, {EDGEATTN_DTYPE_F32, W_o, NULL},
        NULL, NULL, NULL, NULL}; /* fp32 biases, or NULL */
    if (st == EDGEATTN_OK)
        st = edgeattn_mha(&dims, X, X, X, &w, &options, workspace, sizeof workspace, out, NULL);

    const edgeattn_weights w32 = {
        {EDGEATTN_DTYPE_F32, W_q, NULL}, {EDGEATTN_DTYPE_F32, W_k, NULL},
        {EDGEATTN_DTYPE_F32, W_v, NULL}, {EDGEATTN_DTYPE_F32, W_o, NULL},
        NULL, NULL, NULL, NULL};
    if (st == EDGEATTN_OK)
        st = edgeattn_mha(&dims, X, X, X, &w32, &options, workspace, sizeof workspace, out_fp32,
                          NULL);
    if (st != EDGEATTN_OK) {
        fprintf(stderr, "int8 example: %s\n", edgeattn_status_str(st));
        return 1;
    }
    double diff = 0, norm = 0;
    for (int i = 0; i < B * Q * D; ++i) {
        diff += (double)(out[i] - out_fp32[i]) * (out[i] - out_fp32[i]);
        norm += (double)out_fp32[i] * out_fp32[i];
    }
    const double rel = sqrt(diff / norm);
    printf("int8/fp16 weights vs fp32: relative L2 error %.2e\n", rel);
    return rel > 0 && rel < 3e-2 ? 0 : 1;
}
