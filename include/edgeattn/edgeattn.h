/*
 * edgeattn C API: attention kernels for inference, runtime dimensions.
 *
 * Every routine
 *   - takes its dimensions in a small struct and its tensors as flat,
 *     row-major float32 arrays whose shapes are written below in d2l's
 *     (batch, queries, keys) notation;
 *   - writes only to the outputs and the workspace the caller passes;
 *   - never allocates, never throws, and returns an edgeattn_status:
 *     EDGEATTN_OK (0) or a negative code naming what was wrong. On any
 *     error nothing has been written to the outputs or the workspace.
 *
 * Weights are laid out as torch.nn.Linear stores them, (out_features,
 * in_features), so a projection is y = x W^T (+ b) and a PyTorch state_dict
 * drops in without transposing.
 */
#ifndef EDGEATTN_EDGEATTN_H
#define EDGEATTN_EDGEATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

/** Result of every edgeattn call: 0 is success, negative names the problem. */
typedef enum edgeattn_status {
    EDGEATTN_OK = 0,
    EDGEATTN_ERR_NULL_POINTER = -1,        /* a required pointer is NULL */
    EDGEATTN_ERR_ZERO_DIMENSION = -2,      /* a dimension is 0 */
    EDGEATTN_ERR_SIZE_OVERFLOW = -3,       /* a tensor's byte size overflows size_t */
    EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE = -4, /* num_hiddens % num_heads != 0 */
    EDGEATTN_ERR_NEGATIVE_VALID_LEN = -5,  /* a valid length is below 0 */
    EDGEATTN_ERR_WORKSPACE_TOO_SMALL = -6, /* workspace_bytes < *_workspace_size() */
    EDGEATTN_ERR_SEQUENCE_TOO_LONG = -7,   /* positional encoding: n > max_len */
    EDGEATTN_ERR_OVERLAP = -8,             /* an output overlaps an input or workspace */
    EDGEATTN_ERR_SHAPE_MISMATCH = -9,      /* e.g. dot product with key_size != query_size */
    EDGEATTN_ERR_BAD_VALID_LENS_KIND = -10,/* valid_lens->kind is not one of the enum */
    EDGEATTN_ERR_MISALIGNED = -11,         /* a float array or workspace is not 4-byte aligned */
    EDGEATTN_ERR_UNSUPPORTED_ISA = -12,    /* edgeattn_set_isa: path not built or not supported */
    EDGEATTN_STATUS_FORCE_INT = 0x7FFFFFFF /* int-sized under -fshort-enums; never returned */
} edgeattn_status;

/** A short, constant English description of a status ("ok", "null pointer", ...). */
const char *edgeattn_status_str(edgeattn_status status);

/* -------------------------------------------------------------- valid_lens */

/** How many valid lengths a call gets (d2l's valid_lens argument). */
typedef enum edgeattn_valid_lens_kind {
    EDGEATTN_VALID_LENS_NONE = 0,      /* nothing masked; lens is ignored */
    EDGEATTN_VALID_LENS_PER_BATCH = 1, /* lens has B entries: one per batch element */
    EDGEATTN_VALID_LENS_PER_QUERY = 2, /* lens has B*Q entries, (B, Q) row-major */
    /* keeps the enum int-sized under -fshort-enums (arm-none-eabi), so C and
       C++ callers and the library agree on the struct layout */
    EDGEATTN_VALID_LENS_KIND_FORCE_INT = 0x7FFFFFFF
} edgeattn_valid_lens_kind;

/**
 * valid_lens as d2l passes it. Key positions j >= valid length of a row get
 * the score -1e6 before the softmax, so a row with valid length 0 has uniform
 * weights 1/K; a valid length >= K masks nothing; a negative one is an error.
 * A NULL edgeattn_valid_lens pointer means EDGEATTN_VALID_LENS_NONE.
 */
typedef struct edgeattn_valid_lens {
    edgeattn_valid_lens_kind kind;
    const int32_t *lens;
} edgeattn_valid_lens;

/* ---------------------------------------------------- sequence mask, softmax */

/**
 * d2l's sequence_mask: Y = X with X[r, j] replaced by `value` for every
 * j >= valid_len[r]. X, Y: (rows, cols); valid_len: (rows).
 * Y may be X (in place); any other overlap is EDGEATTN_ERR_OVERLAP.
 */
edgeattn_status edgeattn_sequence_mask(size_t rows, size_t cols, const float *X,
                                       const int32_t *valid_len, float value, float *Y);

/** Shape of a masked softmax: X and Y are (batch, queries, keys). */
typedef struct edgeattn_softmax_dims {
    size_t batch;
    size_t queries;
    size_t keys;
} edgeattn_softmax_dims;

/**
 * d2l's masked_softmax over the last axis. X, Y: (batch, queries, keys).
 * valid_lens: NULL, (batch) or (batch, queries). Y may be X (in place).
 */
edgeattn_status edgeattn_masked_softmax(const edgeattn_softmax_dims *dims, const float *X,
                                        const edgeattn_valid_lens *valid_lens, float *Y);

/* ------------------------------------------------------------- attention */

/**
 * Shapes of an attention call. Which fields an op reads:
 *   dot product:  batch, queries, keys, query_size (= d), key_size (must equal
 *                 query_size), value_size;
 *   additive:     all but num_heads (num_hiddens is the MLP's hidden size h);
 *   multi-head:   all (num_hiddens % num_heads == 0);
 *   self-attention: batch, queries (= keys = n), query_size (= key_size =
 *                 value_size = num_hiddens = d), num_heads; keys, key_size,
 *                 value_size and num_hiddens must be 0 or equal to those.
 */
typedef struct edgeattn_attention_dims {
    size_t batch;       /* B */
    size_t queries;     /* Q: query positions */
    size_t keys;        /* K: key-value pairs */
    size_t query_size;  /* features of a query */
    size_t key_size;    /* features of a key */
    size_t value_size;  /* features of a value */
    size_t num_hiddens; /* h */
    size_t num_heads;   /* H */
} edgeattn_attention_dims;

/*
 * Workspace. Every op that needs scratch has *_workspace_size(dims, max_threads):
 * a pure function of its arguments, the same on every architecture and build.
 * max_threads is how many threads the call may use (1 for a serial build or a
 * microcontroller). An op given a workspace uses at most as many threads as
 * it has room for, so a workspace sized for 1 thread gives a serial call.
 * The workspace must be 4-byte aligned (64-byte alignment is faster); its
 * contents on entry do not matter and on return are unspecified.
 */

/**
 * Scaled dot-product attention: softmax(Q K^T / sqrt(d)) V, masked as d2l.
 * queries (B,Q,d), keys (B,K,d), values (B,K,v) -> output (B,Q,v);
 * attention_weights (B,Q,K) is written when not NULL.
 */
size_t edgeattn_dot_product_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                     size_t max_threads);
edgeattn_status edgeattn_dot_product_attention(const edgeattn_attention_dims *dims,
                                               const float *queries, const float *keys,
                                               const float *values,
                                               const edgeattn_valid_lens *valid_lens,
                                               void *workspace, size_t workspace_bytes,
                                               float *output, float *attention_weights);

/** Additive attention parameters, torch.nn.Linear layout, no biases (as d2l). */
typedef struct edgeattn_additive_weights {
    const float *W_q; /* (h, query_size) */
    const float *W_k; /* (h, key_size) */
    const float *w_v; /* (1, h) */
} edgeattn_additive_weights;

/**
 * Additive attention: score(q, k) = w_v . tanh(W_q q + W_k k), masked softmax
 * over keys, weighted sum of values.
 * queries (B,Q,q), keys (B,K,k), values (B,K,v) -> output (B,Q,v);
 * attention_weights (B,Q,K) is written when not NULL.
 */
size_t edgeattn_additive_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                  size_t max_threads);
edgeattn_status edgeattn_additive_attention(const edgeattn_attention_dims *dims,
                                            const float *queries, const float *keys,
                                            const float *values,
                                            const edgeattn_valid_lens *valid_lens,
                                            const edgeattn_additive_weights *weights,
                                            void *workspace, size_t workspace_bytes,
                                            float *output, float *attention_weights);

/** Multi-head attention parameters, torch.nn.Linear layout. */
typedef struct edgeattn_mha_weights {
    const float *W_q; /* (h, query_size) */
    const float *W_k; /* (h, key_size) */
    const float *W_v; /* (h, value_size) */
    const float *W_o; /* (h, h) */
    const float *b_q; /* (h) or NULL for no bias; likewise b_k, b_v, b_o */
    const float *b_k;
    const float *b_v;
    const float *b_o;
} edgeattn_mha_weights;

/**
 * d2l's MultiHeadAttention: project queries, keys and values to h features,
 * split them into H heads of h/H, run scaled dot-product attention per head
 * (valid_lens repeated for every head), concatenate and project with W_o.
 * queries (B,Q,q), keys (B,K,k), values (B,K,v) -> output (B,Q,h);
 * attention_weights (B,H,Q,K) is written when not NULL.
 */
size_t edgeattn_multi_head_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                    size_t max_threads);
edgeattn_status edgeattn_multi_head_attention(const edgeattn_attention_dims *dims,
                                              const float *queries, const float *keys,
                                              const float *values,
                                              const edgeattn_valid_lens *valid_lens,
                                              const edgeattn_mha_weights *weights,
                                              void *workspace, size_t workspace_bytes,
                                              float *output, float *attention_weights);

/**
 * Self-attention: multi-head attention with queries = keys = values = X.
 * X (B,n,d) -> output (B,n,d); attention_weights (B,H,n,n) when not NULL.
 * dims: batch, queries = n, query_size = d, num_heads = H (see above).
 * Add the positional encoding to X first for d2l's Transformer input.
 */
size_t edgeattn_self_attention_workspace_size(const edgeattn_attention_dims *dims,
                                              size_t max_threads);
edgeattn_status edgeattn_self_attention(const edgeattn_attention_dims *dims, const float *X,
                                        const edgeattn_valid_lens *valid_lens,
                                        const edgeattn_mha_weights *weights, void *workspace,
                                        size_t workspace_bytes, float *output,
                                        float *attention_weights);

/* --------------------------------------------------- positional encoding */

/**
 * The sinusoidal table P (max_len, d): P[i, 2j] = sin(i / 10000^(2j/d)),
 * P[i, 2j+1] = cos(i / 10000^(2j/d)); for odd d the last column is a sine.
 * Computed in double precision and rounded to float (|error| <= 2^-25 + 1e-12).
 */
edgeattn_status edgeattn_positional_encoding_table(size_t max_len, size_t d, float *P);

/**
 * Y = X + P[:n]: X, Y (B, n, d); P (max_len, d) from the function above or
 * from the C++ constexpr table. n > max_len is EDGEATTN_ERR_SEQUENCE_TOO_LONG.
 * Y may be X (in place).
 */
edgeattn_status edgeattn_positional_encoding_add(size_t batch, size_t n, size_t d,
                                                 const float *X, const float *P,
                                                 size_t max_len, float *Y);

/* ------------------------------------------------------------- dispatch */

/** Kernel paths. Which exist depends on the build and the machine. */
typedef enum edgeattn_isa {
    EDGEATTN_ISA_AUTO = 0, /* best available (the default; EDGEATTN_ISA overrides) */
    EDGEATTN_ISA_SCALAR = 1,
    EDGEATTN_ISA_SSE2 = 2,
    EDGEATTN_ISA_AVX2 = 3, /* AVX2 + FMA */
    EDGEATTN_ISA_AVX512 = 4, /* AVX-512 F + DQ */
    EDGEATTN_ISA_NEON = 5, /* ARMv7 NEON or AArch64 NEON */
    EDGEATTN_ISA_FORCE_INT = 0x7FFFFFFF /* int-sized under -fshort-enums */
} edgeattn_isa;

/**
 * Force a kernel path for every later call (EDGEATTN_ISA_AUTO: pick the
 * best). Returns EDGEATTN_ERR_UNSUPPORTED_ISA, changing nothing, when that
 * path is not built in or the CPU lacks it. Not thread-safe against calls in
 * flight: set it before computing. Programs may also set the environment
 * variable EDGEATTN_ISA to scalar, sse2, avx2, avx512 or neon, read at the
 * first call.
 */
edgeattn_status edgeattn_set_isa(edgeattn_isa isa);
/** The path calls use now (never EDGEATTN_ISA_AUTO). */
edgeattn_isa edgeattn_current_isa(void);
/** 1 when the path is built in and this CPU runs it, else 0. */
int edgeattn_isa_supported(edgeattn_isa isa);
/** "scalar", "sse2", "avx2", "avx512", "neon" or "auto". */
const char *edgeattn_isa_name(edgeattn_isa isa);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_EDGEATTN_H */
