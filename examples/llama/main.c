/* examples/llama: greedy decoding of the exported tiny Llama-style model
 * (llama_decode.c) on both attention paths, printed and checked against the
 * float64 PyTorch answer in the header. Exit status 0 when both match. */
#include <stdio.h>

#include "llama_decode.h"

static int run(llama_path path) {
    llama_result r;
    const int failed = llama_decode(path, &r);
    size_t i;
    printf("%s attention: window %zu + %zu sinks (%zu cache rows), %zu positions fed\n  tokens:",
           llama_path_name(path), r.window, r.sinks, r.cache_capacity, r.positions);
    for (i = 0; i < r.generated; ++i) printf(" %d", (int)r.tokens[i]);
    printf("\n  logits: max abs error %.3g, %.3g of the largest |logit| %.3g (tolerance %.0e)\n",
           r.max_abs_error, r.max_abs_error / r.logit_scale, r.logit_scale, LLAMA_LOGIT_TOLERANCE);
    printf("  memory: weights %zu B (const), static RAM %zu B (KV caches %zu B each, workspace %zu B needed)\n",
           r.weight_bytes, r.static_ram_bytes, r.cache_bytes, r.workspace_bytes);
    if (r.status != EDGEATTN_OK)
        printf("  FAILED: %s: %s\n", r.failed_call ? r.failed_call : "?", edgeattn_status_str(r.status));
    else if (r.first_mismatch != r.steps)
        printf("  FAILED: token %zu is not the expected one\n", r.first_mismatch);
    else if (failed)
        printf("  FAILED: logits beyond the tolerance\n");
    else
        printf("  all %zu tokens as PyTorch float64 decodes them\n", r.steps);
    return failed;
}

int main(void) {
    const int fused = run(LLAMA_FUSED);
    const int projection_free = run(LLAMA_PROJECTION_FREE);
    return fused || projection_free;
}
