/* A C program on edgeattn's C API: d2l's masked_softmax example (two
 * batches of 2 x 4 scores, valid lengths 2 and 3); every row must sum to 1
 * and be 0 past its valid length. Prints "consumer_c: ok". */
#include <edgeattn/edgeattn.h>

/* Built without OpenMP: the package passes on OpenMP's runtime (link) only,
 * never -fopenmp (find_package, add_subdirectory and pkg-config alike). */
#ifdef _OPENMP
#error "_OPENMP is defined: the edgeattn package put -fopenmp on a consumer's compile"
#endif

#include <math.h>
#include <stdio.h>

int main(void) {
    enum { B = 2, Q = 2, K = 4 };
    float X[B * Q * K], Y[B * Q * K];
    const int32_t lens[B] = {2, 3};
    const edgeattn_softmax_dims dims = {B, Q, K};
    const edgeattn_valid_lens valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    for (int i = 0; i < B * Q * K; ++i) X[i] = (float)((i * 7) % 5) * 0.25f;

    edgeattn_status st = edgeattn_masked_softmax(&dims, X, &valid_lens, Y);
    if (st != EDGEATTN_OK) {
        fprintf(stderr, "consumer_c: edgeattn_masked_softmax: %s\n", edgeattn_status_str(st));
        return 1;
    }
    for (int b = 0; b < B; ++b)
        for (int q = 0; q < Q; ++q) {
            const float *row = Y + (b * Q + q) * K;
            float sum = 0.0f;
            for (int k = 0; k < K; ++k) {
                if (k >= lens[b] && row[k] != 0.0f) {
                    fprintf(stderr, "consumer_c: masked weight %g is not 0\n", row[k]);
                    return 1;
                }
                sum += row[k];
            }
            if (fabsf(sum - 1.0f) > 1e-6f) {
                fprintf(stderr, "consumer_c: a row sums to %g\n", sum);
                return 1;
            }
        }
    printf("consumer_c: kernel path %s, ok\n", edgeattn_isa_name(edgeattn_current_isa()));
    return 0;
}
