/* A C11 program on edgeattn's 1.0 C API, built against an installed
 * package as strict ISO C11 (-std=c11 -pedantic -Wall -Wextra -Werror):
 *
 *   - edgeattn_version() is the EDGEATTN_VERSION of the headers;
 *   - edgeattn_sdpa with NULL options (nothing masked) on a workspace sized
 *     by edgeattn_workspace_size: the attention weights are the softmax of
 *     the scaled scores, the output their weighted sum of the values;
 *   - edgeattn_sdpa with valid lengths in its options: keys past a batch
 *     element's valid length weigh exactly 0.
 *
 * It is also the package's check that OpenMP stays out of the program's
 * compile: the library may run OpenMP threads, but only its runtime may
 * reach the program (on the link line), so _OPENMP is not defined here.
 * Prints "consumer_c11: ... ok"; on a bare-metal target (EDGEATTN_CONSUMER_
 * SEMIHOSTING) through semihosting, the exit status through QEMU. */
#include <edgeattn/edgeattn.h>

#if !defined(__STDC_VERSION__) || __STDC_VERSION__ != 201112L
#error "consumer_c11.c must be compiled as C11 (-std=c11)"
#endif
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__STRICT_ANSI__)
#error "consumer_c11.c must be compiled as ISO C11 (-std=c11), not a GNU dialect"
#endif
#ifdef _OPENMP
#error "_OPENMP is defined: the edgeattn package put OpenMP's compile flags (-fopenmp) on a consumer's compile"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef EDGEATTN_CONSUMER_SEMIHOSTING
#include "semihosting.h"
static void say(const char *text) { semihosting_write(text); }
#else
#include <stdio.h>
static void say(const char *text) { fputs(text, stdout); }
#endif

enum { B = 2, Q = 3, K = 4, D = 4, V = 2 };

static float queries[B * Q * D], keys[B * K * D], values[B * K * V];
static float output[B * Q * V], weights[B * Q * K];
static _Alignas(64) unsigned char workspace[64 * 1024];

static int fail(const char *what, edgeattn_status st) {
    say("consumer_c11: ");
    say(what);
    if (st != EDGEATTN_OK) {
        say(": ");
        say(edgeattn_status_str(st));
    }
    say("\n");
    return 1;
}

static int close_to(float a, float b) { return fabsf(a - b) <= 1e-5f + 1e-5f * fabsf(b); }

/* The weights against softmax(q k / sqrt(D)) over the first len[b] keys
 * (the others exactly 0), the output against the weighted sum of values. */
static int check(const int32_t *lens) {
    for (int b = 0; b < B; ++b)
        for (int q = 0; q < Q; ++q) {
            const int len = lens ? (int)lens[b] : K;
            float score[K], top = -INFINITY, sum = 0.0f;
            for (int k = 0; k < len; ++k) {
                float s = 0.0f;
                for (int i = 0; i < D; ++i) s += queries[(b * Q + q) * D + i] * keys[(b * K + k) * D + i];
                score[k] = s / 2.0f; /* sqrt(D) */
                top = score[k] > top ? score[k] : top;
            }
            for (int k = 0; k < len; ++k) sum += (score[k] = expf(score[k] - top));
            const float *w = weights + (b * Q + q) * K;
            for (int k = 0; k < K; ++k) {
                if (k >= len ? w[k] != 0.0f : !close_to(w[k], score[k] / sum))
                    return fail("an attention weight is not the masked softmax", EDGEATTN_OK);
            }
            for (int j = 0; j < V; ++j) {
                float y = 0.0f;
                for (int k = 0; k < K; ++k) y += w[k] * values[(b * K + k) * V + j];
                if (!close_to(output[(b * Q + q) * V + j], y))
                    return fail("an output is not the weighted sum of the values", EDGEATTN_OK);
            }
        }
    return 0;
}

int main(void) {
    if (edgeattn_version() != EDGEATTN_VERSION || EDGEATTN_VERSION_MAJOR != 1)
        return fail("edgeattn_version() differs from the headers' EDGEATTN_VERSION " EDGEATTN_VERSION_STRING,
                    EDGEATTN_OK);

    for (int i = 0; i < B * Q * D; ++i) queries[i] = (float)((i * 7) % 11) * 0.125f - 0.5f;
    for (int i = 0; i < B * K * D; ++i) keys[i] = (float)((i * 5) % 13) * 0.1f - 0.6f;
    for (int i = 0; i < B * K * V; ++i) values[i] = (float)((i * 3) % 7) - 3.0f;

    const edgeattn_attention_dims dims = {.batch = B, .queries = Q, .keys = K,
                                          .query_size = D, .key_size = D, .value_size = V};
    const edgeattn_workspace_request request = {.op = EDGEATTN_OP_SDPA, .dims = dims};
    size_t bytes = 0;
    edgeattn_status st = edgeattn_workspace_size(&request, 1, 4, &bytes);
    if (st != EDGEATTN_OK) return fail("edgeattn_workspace_size", st);
    if (bytes > sizeof workspace) return fail("edgeattn_workspace_size: more than the 64 KiB here", EDGEATTN_OK);

    /* NULL options: d2l's behaviour, nothing masked. */
    st = edgeattn_sdpa(&dims, queries, keys, values, NULL, workspace, bytes, output, weights);
    if (st != EDGEATTN_OK) return fail("edgeattn_sdpa", st);
    if (check(NULL)) return 1;

    /* Valid lengths 3 and 1: the keys past them weigh 0. */
    const int32_t lens[B] = {3, 1};
    const edgeattn_attention_options options = {.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens}};
    st = edgeattn_sdpa(&dims, queries, keys, values, &options, workspace, bytes, output, weights);
    if (st != EDGEATTN_OK) return fail("edgeattn_sdpa with valid lengths", st);
    if (check(lens)) return 1;

    say("consumer_c11: edgeattn " EDGEATTN_VERSION_STRING ", kernel path ");
    say(edgeattn_isa_name(edgeattn_current_isa()));
    say(", ok\n");
    return 0;
}
