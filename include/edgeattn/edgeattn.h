/**
 * @file
 * edgeattn C API: attention kernels for inference, runtime dimensions.
 *
 * Every routine
 *   - takes its dimensions in a small struct and its tensors as flat,
 *     row-major float32 arrays whose shapes are written below in d2l's
 *     (batch, queries, keys) notation;
 *   - writes only to the outputs and the workspace the caller passes;
 *   - never allocates, never throws, and returns an edgeattn_status:
 *     EDGEATTN_OK (0) or a negative code naming what was wrong. On any
 *     error nothing has been written to the outputs or the workspace;
 *   - reads the structs it takes by pointer (dims, valid_lens, masks,
 *     weight descriptors) before it writes anything, so they may lie
 *     anywhere, inside an output or the workspace too. The arrays they
 *     point to (valid lengths, key ranges, bias, weights, scales) are
 *     inputs like any other: one that overlaps an output or the workspace
 *     is EDGEATTN_ERR_OVERLAP;
 *   - reads an enum, in a struct or as an argument, as the int a C caller
 *     stored there, so passing any int is safe: one outside the enum gets
 *     the status its parameter documents (a size of 0, "unknown", or "not
 *     supported" from the calls that return those).
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

/** Result of every edgeattn call: 0 is success, negative names the problem.
 *  On any error the call has written nothing to its outputs or workspace. */
typedef enum edgeattn_status {
    EDGEATTN_OK = 0,                       /**< success */
    EDGEATTN_ERR_NULL_POINTER = -1,        /**< a required pointer is NULL */
    EDGEATTN_ERR_ZERO_DIMENSION = -2,      /**< a dimension the op reads is 0 */
    EDGEATTN_ERR_SIZE_OVERFLOW = -3,       /**< a tensor's or the workspace's byte size overflows size_t */
    EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE = -4, /**< num_hiddens % num_heads != 0 */
    EDGEATTN_ERR_NEGATIVE_VALID_LEN = -5,  /**< a valid length is below 0 */
    EDGEATTN_ERR_WORKSPACE_TOO_SMALL = -6, /**< workspace_bytes < the op's *_workspace_size() for one thread */
    EDGEATTN_ERR_SEQUENCE_TOO_LONG = -7,   /**< positional encoding: n > max_len */
    EDGEATTN_ERR_OVERLAP = -8,             /**< an output overlaps an input, another output or the workspace */
    EDGEATTN_ERR_SHAPE_MISMATCH = -9,      /**< e.g. dot product with key_size != query_size */
    EDGEATTN_ERR_BAD_VALID_LENS_KIND = -10,/**< valid_lens->kind is not one of the enum */
    EDGEATTN_ERR_MISALIGNED = -11,         /**< a float array or the workspace is not 4-byte aligned */
    EDGEATTN_ERR_UNSUPPORTED_ISA = -12,    /**< edgeattn_set_isa(): path not built in or not supported by this CPU */
    EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH = -13, /**< packed weights not made by edgeattn_mha_pack_weights() for these sizes */
    EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE = -14, /**< num_heads % num_kv_heads != 0 (grouped-query attention) */
    EDGEATTN_ERR_BAD_KEY_RANGE = -15,      /**< a mask key range has start < 0 or end < start, or an unknown kind */
    EDGEATTN_ERR_CACHE_FULL = -16,         /**< a KV cache append would pass the cache's capacity */
    EDGEATTN_ERR_BAD_CACHE = -17,          /**< a KV cache not set up by edgeattn_kv_cache_init(), or not for these sizes; truncate past the length */
    EDGEATTN_ERR_BAD_SCALE = -18,          /**< an int8 weight scale is 0, negative, NaN or infinite */
    EDGEATTN_ERR_BAD_WEIGHT_TYPE = -19,    /**< an edgeattn_weight_matrix::type that is not one of the enum */
    EDGEATTN_ERR_NOT_REPRESENTABLE = -20,  /**< quantise/convert: a weight is NaN or infinite, or beyond binary16's range */
    EDGEATTN_STATUS_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized under -fshort-enums; never returned */
} edgeattn_status;

/**
 * A short, constant English description of a status ("ok", "null pointer", ...).
 * @param status any value, also one outside the enum
 * @return a static NUL-terminated string, never NULL ("unknown status" for a
 *         value outside the enum)
 */
const char *edgeattn_status_str(edgeattn_status status);

/* -------------------------------------------------------------- valid_lens */

/** How many valid lengths a call gets (d2l's valid_lens argument). */
typedef enum edgeattn_valid_lens_kind {
    EDGEATTN_VALID_LENS_NONE = 0,      /**< nothing masked; lens is ignored */
    EDGEATTN_VALID_LENS_PER_BATCH = 1, /**< lens has B entries: one per batch element */
    EDGEATTN_VALID_LENS_PER_QUERY = 2, /**< lens has B*Q entries, (B, Q) row-major */
    /** keeps the enum int-sized under -fshort-enums (arm-none-eabi), so C and
        C++ callers and the library agree on the struct layout; never valid */
    EDGEATTN_VALID_LENS_KIND_FORCE_INT = 0x7FFFFFFF
} edgeattn_valid_lens_kind;

/**
 * valid_lens as d2l passes it. Key positions j >= valid length of a row get
 * the score -1e6 before the softmax, so a row with valid length 0 has uniform
 * weights 1/K; a valid length >= K masks nothing; a negative one is an error.
 * A NULL edgeattn_valid_lens pointer means EDGEATTN_VALID_LENS_NONE.
 */
typedef struct edgeattn_valid_lens {
    edgeattn_valid_lens_kind kind; /**< how many entries lens has */
    const int32_t *lens;           /**< (B) or (B, Q) valid lengths in keys; NULL only with
                                        EDGEATTN_VALID_LENS_NONE */
} edgeattn_valid_lens;

/* ---------------------------------------------------- sequence mask, softmax */

/**
 * d2l's sequence_mask: Y = X with X[r, j] replaced by `value` for every
 * j >= valid_len[r]. X, Y: (rows, cols); valid_len: (rows).
 * Y may be X (in place); any other overlap is EDGEATTN_ERR_OVERLAP.
 * No workspace.
 * @param rows      rows of X and Y (> 0)
 * @param cols      columns of X and Y (> 0)
 * @param X         input, (rows, cols)
 * @param valid_len (rows): valid columns of each row, >= 0 (>= cols masks nothing)
 * @param value     what masked elements become (d2l: 0)
 * @param Y         output, (rows, cols); may be X
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_NEGATIVE_VALID_LEN
 */
edgeattn_status edgeattn_sequence_mask(size_t rows, size_t cols, const float *X,
                                       const int32_t *valid_len, float value, float *Y);

/** Shape of a masked softmax: X and Y are (batch, queries, keys). */
typedef struct edgeattn_softmax_dims {
    size_t batch;   /**< B */
    size_t queries; /**< Q: rows per batch element */
    size_t keys;    /**< K: the softmax axis */
} edgeattn_softmax_dims;

/**
 * d2l's masked_softmax over the last axis. X, Y: (batch, queries, keys).
 * valid_lens: NULL, (batch) or (batch, queries). Y may be X (in place).
 * No workspace; rows are split over OpenMP threads when the build has them.
 * @param dims       (B, Q, K), all > 0
 * @param X          scores, (B, Q, K)
 * @param valid_lens NULL (no mask), or valid lengths per batch element or per query
 * @param Y          weights, (B, Q, K): each row sums to 1; may be X
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_BAD_VALID_LENS_KIND, ::EDGEATTN_ERR_NEGATIVE_VALID_LEN,
 *         ::EDGEATTN_ERR_OVERLAP
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
    size_t batch;       /**< B */
    size_t queries;     /**< Q: query positions */
    size_t keys;        /**< K: key-value pairs */
    size_t query_size;  /**< features of a query (d for dot product) */
    size_t key_size;    /**< features of a key */
    size_t value_size;  /**< features of a value (v) */
    size_t num_hiddens; /**< h */
    size_t num_heads;   /**< H */
    /** Multi-head only: heads of keys and values for grouped-query
        attention (H_kv, dividing H; query head j reads key/value head
        j / (H / H_kv), and W_k, W_v, b_k, b_v have H_kv * h / H rows).
        0, what an initializer that leaves it out gives, means H: plain
        multi-head attention. 1 is multi-query attention. */
    size_t num_kv_heads;
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
 * Workspace bytes of edgeattn_dot_product_attention().
 * @param dims        the shapes the op will be called with
 * @param max_threads threads the call may use (0 counts as 1; a serial build
 *                    or a microcontroller passes 1)
 * @return the workspace in bytes for these dims and threads, the same on every
 *         architecture and build; 0 when dims are invalid for this op or the
 *         size overflows size_t
 */
size_t edgeattn_dot_product_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                     size_t max_threads);
/**
 * Scaled dot-product attention: softmax(Q K^T / sqrt(d)) V, masked as d2l.
 * queries (B,Q,d), keys (B,K,d), values (B,K,v) -> output (B,Q,v);
 * attention_weights (B,Q,K) is written when not NULL.
 * @param dims        batch, queries, keys, query_size = d, key_size (0 or d),
 *                    value_size = v; the other fields are ignored
 * @param queries     (B, Q, d)
 * @param keys        (B, K, d)
 * @param values      (B, K, v)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param workspace   scratch of at least the op's *_workspace_size() bytes,
 *                    4-byte aligned; contents in and out unspecified
 * @param workspace_bytes its size in bytes; the call uses as many threads as it has room for
 * @param output      (B, Q, v)
 * @param attention_weights NULL, or (B, Q, K): the softmax weights
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SHAPE_MISMATCH, ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_BAD_VALID_LENS_KIND, ::EDGEATTN_ERR_NEGATIVE_VALID_LEN,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_dot_product_attention(const edgeattn_attention_dims *dims,
                                               const float *queries, const float *keys,
                                               const float *values,
                                               const edgeattn_valid_lens *valid_lens,
                                               void *workspace, size_t workspace_bytes,
                                               float *output, float *attention_weights);

/** Additive attention parameters, torch.nn.Linear layout, no biases (as d2l). */
typedef struct edgeattn_additive_weights {
    const float *W_q; /**< (h, query_size) */
    const float *W_k; /**< (h, key_size) */
    const float *w_v; /**< (1, h) */
} edgeattn_additive_weights;

/**
 * Workspace bytes of edgeattn_additive_attention().
 * @param dims        the shapes the op will be called with
 * @param max_threads threads the call may use (0 counts as 1; a serial build
 *                    or a microcontroller passes 1)
 * @return the workspace in bytes for these dims and threads, the same on every
 *         architecture and build; 0 when dims are invalid for this op or the
 *         size overflows size_t
 */
size_t edgeattn_additive_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                  size_t max_threads);
/**
 * Additive attention: score(q, k) = w_v . tanh(W_q q + W_k k), masked softmax
 * over keys, weighted sum of values.
 * queries (B,Q,q), keys (B,K,k), values (B,K,v) -> output (B,Q,v);
 * attention_weights (B,Q,K) is written when not NULL.
 * @param dims        batch, queries, keys, query_size = q, key_size = k,
 *                    value_size = v, num_hiddens = h; num_heads is ignored
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param weights     W_q (h, q), W_k (h, k), w_v (1, h)
 * @param workspace   scratch of at least the op's *_workspace_size() bytes,
 *                    4-byte aligned; contents in and out unspecified
 * @param workspace_bytes its size in bytes; the call uses as many threads as it has room for
 * @param output      (B, Q, v)
 * @param attention_weights NULL, or (B, Q, K)
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SHAPE_MISMATCH, ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_BAD_VALID_LENS_KIND, ::EDGEATTN_ERR_NEGATIVE_VALID_LEN,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_additive_attention(const edgeattn_attention_dims *dims,
                                            const float *queries, const float *keys,
                                            const float *values,
                                            const edgeattn_valid_lens *valid_lens,
                                            const edgeattn_additive_weights *weights,
                                            void *workspace, size_t workspace_bytes,
                                            float *output, float *attention_weights);

/** Multi-head attention parameters, torch.nn.Linear layout. */
typedef struct edgeattn_mha_weights {
    const float *W_q; /**< (h, query_size) */
    const float *W_k; /**< (h, key_size); (H_kv * h / H, key_size) with grouped-query heads */
    const float *W_v; /**< (h, value_size); (H_kv * h / H, value_size) likewise */
    const float *W_o; /**< (h, h) */
    const float *b_q; /**< (h) or NULL for no bias */
    const float *b_k; /**< (h) or NULL; (H_kv * h / H) with grouped-query heads */
    const float *b_v; /**< (h) or NULL; likewise */
    const float *b_o; /**< (h) or NULL */
} edgeattn_mha_weights;

/**
 * Workspace bytes of edgeattn_multi_head_attention().
 * @param dims        the shapes the op will be called with
 * @param max_threads threads the call may use (0 counts as 1; a serial build
 *                    or a microcontroller passes 1)
 * @return the workspace in bytes for these dims and threads, the same on every
 *         architecture and build; 0 when dims are invalid for this op or the
 *         size overflows size_t
 */
size_t edgeattn_multi_head_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                    size_t max_threads);
/**
 * d2l's MultiHeadAttention: project queries, keys and values to h features,
 * split them into H heads of h/H, run scaled dot-product attention per head
 * (valid_lens repeated for every head), concatenate and project with W_o.
 * queries (B,Q,q), keys (B,K,k), values (B,K,v) -> output (B,Q,h);
 * attention_weights (B,H,Q,K) is written when not NULL.
 * @param dims        every field; num_hiddens % num_heads == 0
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param weights     W_q (h, q), W_k (h, k), W_v (h, v), W_o (h, h); biases (h) or NULL
 * @param workspace   scratch of at least the op's *_workspace_size() bytes,
 *                    4-byte aligned; contents in and out unspecified
 * @param workspace_bytes its size in bytes; the call uses as many threads as it has room for
 * @param output      (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, K): every head's weights
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SHAPE_MISMATCH, ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_BAD_VALID_LENS_KIND, ::EDGEATTN_ERR_NEGATIVE_VALID_LEN,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE
 */
edgeattn_status edgeattn_multi_head_attention(const edgeattn_attention_dims *dims,
                                              const float *queries, const float *keys,
                                              const float *values,
                                              const edgeattn_valid_lens *valid_lens,
                                              const edgeattn_mha_weights *weights,
                                              void *workspace, size_t workspace_bytes,
                                              float *output, float *attention_weights);

/**
 * Workspace bytes of edgeattn_self_attention().
 * @param dims        the shapes the op will be called with
 * @param max_threads threads the call may use (0 counts as 1; a serial build
 *                    or a microcontroller passes 1)
 * @return the workspace in bytes for these dims and threads, the same on every
 *         architecture and build; 0 when dims are invalid for this op or the
 *         size overflows size_t
 */
size_t edgeattn_self_attention_workspace_size(const edgeattn_attention_dims *dims,
                                              size_t max_threads);
/**
 * Self-attention: multi-head attention with queries = keys = values = X.
 * X (B,n,d) -> output (B,n,d); attention_weights (B,H,n,n) when not NULL.
 * dims: batch, queries = n, query_size = d, num_heads = H (see above).
 * Add the positional encoding to X first for d2l's Transformer input.
 * @param dims        batch, queries = n, query_size = d, num_heads = H; keys,
 *                    key_size, value_size, num_hiddens 0 or equal to those
 * @param X           (B, n, d)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param weights     W_q, W_k, W_v, W_o, each (d, d); biases (d) or NULL
 * @param workspace   scratch of at least the op's *_workspace_size() bytes,
 *                    4-byte aligned; contents in and out unspecified
 * @param workspace_bytes its size in bytes; the call uses as many threads as it has room for
 * @param output      (B, n, d)
 * @param attention_weights NULL, or (B, H, n, n)
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SHAPE_MISMATCH, ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_BAD_VALID_LENS_KIND, ::EDGEATTN_ERR_NEGATIVE_VALID_LEN,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE
 */
edgeattn_status edgeattn_self_attention(const edgeattn_attention_dims *dims, const float *X,
                                        const edgeattn_valid_lens *valid_lens,
                                        const edgeattn_mha_weights *weights, void *workspace,
                                        size_t workspace_bytes, float *output,
                                        float *attention_weights);

/* ----------------------------------------- multi-head weights packed once */

/**
 * Bytes of multi-head attention weights packed once for `dims`: only
 * query_size, key_size, value_size, num_hiddens and num_heads count (for
 * self-attention give them as edgeattn_self_attention takes them). The
 * packed form is the same for every kernel path and thread count. 0 when
 * dims are invalid or the size overflows size_t.
 * @param dims query_size, key_size, value_size, num_hiddens = h, num_heads = H
 *             (h % H == 0); batch, queries and keys are ignored
 * @return bytes of the packed weights, or 0 (invalid dims, overflow)
 */
size_t edgeattn_mha_packed_weights_size(const edgeattn_attention_dims *dims);

/**
 * Packs W_q, W_k, W_v, W_o (transposed, in the panels the matrix kernels
 * read) and copies the biases into `packed` (packed_bytes >= the size above;
 * 4-byte aligned, 64-byte aligned is fastest). Call it once when the model
 * is loaded: the *_packed calls below then skip the per-call packing, which
 * at d2l's sizes costs more than the products. `packed` keeps no pointer to
 * `weights`. It takes as many bytes as the weights, with each matrix's
 * columns padded to a multiple of 32, plus 64: on a microcontroller, where
 * that doubles the RAM the weights need and nothing is gained (the scalar
 * path packs no faster), call the unpacked entry points instead.
 * EDGEATTN_ERR_WORKSPACE_TOO_SMALL when packed_bytes is below that size.
 * @param dims         as for edgeattn_mha_packed_weights_size()
 * @param weights      W_q (h, q), W_k (h, k), W_v (h, v), W_o (h, h); biases (h) or NULL
 * @param packed       output, edgeattn_mha_packed_weights_size() bytes; must not
 *                     overlap the weights
 * @param packed_bytes size of `packed` in bytes
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_SIZE_OVERFLOW,
 *         ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_mha_pack_weights(const edgeattn_attention_dims *dims,
                                          const edgeattn_mha_weights *weights, void *packed,
                                          size_t packed_bytes);

/**
 * edgeattn_multi_head_attention with weights from edgeattn_mha_pack_weights
 * (`packed`, `packed_bytes` as given to it); same shapes, workspace
 * (edgeattn_multi_head_attention_workspace_size) and results within the
 * golden cases' bar (not bitwise: the unpacked call multiplies a few rows
 * in another order). EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH when `packed`
 * was not packed for these sizes.
 * @param dims        every field, as for edgeattn_multi_head_attention()
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param packed      from edgeattn_mha_pack_weights() for these feature sizes
 * @param packed_bytes its size in bytes, as given to edgeattn_mha_pack_weights()
 * @param workspace   scratch of at least edgeattn_multi_head_attention_workspace_size()
 *                    bytes, 4-byte aligned
 * @param workspace_bytes its size in bytes; the call uses as many threads as it has room for
 * @param output      (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, K)
 * @return the statuses of edgeattn_multi_head_attention(), and
 *         ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_multi_head_attention_packed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const void *packed,
    size_t packed_bytes, void *workspace, size_t workspace_bytes, float *output,
    float *attention_weights);

/**
 * edgeattn_self_attention with weights from edgeattn_mha_pack_weights.
 * X (B,n,d) -> output (B,n,d); attention_weights (B,H,n,n) when not NULL.
 * @param dims        as for edgeattn_self_attention()
 * @param X           (B, n, d)
 * @param valid_lens  NULL (no mask), or (B) or (B, n) valid lengths in keys
 * @param packed      from edgeattn_mha_pack_weights() for q = k = v = h = d
 * @param packed_bytes its size in bytes, as given to edgeattn_mha_pack_weights()
 * @param workspace   scratch of at least edgeattn_self_attention_workspace_size()
 *                    bytes, 4-byte aligned
 * @param workspace_bytes its size in bytes; the call uses as many threads as it has room for
 * @param output      (B, n, d)
 * @param attention_weights NULL, or (B, H, n, n)
 * @return the statuses of edgeattn_self_attention(), and
 *         ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_self_attention_packed(const edgeattn_attention_dims *dims,
                                               const float *X,
                                               const edgeattn_valid_lens *valid_lens,
                                               const void *packed, size_t packed_bytes,
                                               void *workspace, size_t workspace_bytes,
                                               float *output, float *attention_weights);

/* --------------------------------------------------- positional encoding */

/**
 * The sinusoidal table P (max_len, d): P[i, 2j] = sin(i / 10000^(2j/d)),
 * P[i, 2j+1] = cos(i / 10000^(2j/d)); for odd d the last column is a sine.
 * Computed in double precision and rounded to float (|error| <= 2^-25 + 1e-12).
 * Bit-identical to the C++ edgeattn::positional_encoding_table. No workspace.
 * @param max_len positions (rows of P, > 0)
 * @param d       encoding dimension (columns of P, > 0)
 * @param P       output, (max_len, d)
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED
 */
edgeattn_status edgeattn_positional_encoding_table(size_t max_len, size_t d, float *P);

/**
 * Y = X + P[:n]: X, Y (B, n, d); P (max_len, d) from the function above or
 * from the C++ constexpr table. n > max_len is EDGEATTN_ERR_SEQUENCE_TOO_LONG.
 * Y may be X (in place). No workspace.
 * @param batch   B (> 0)
 * @param n       positions used (<= max_len)
 * @param d       encoding dimension = features of X
 * @param X       (B, n, d)
 * @param P       (max_len, d)
 * @param max_len rows of P
 * @param Y       (B, n, d); may be X
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_SEQUENCE_TOO_LONG,
 *         ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_positional_encoding_add(size_t batch, size_t n, size_t d,
                                                 const float *X, const float *P,
                                                 size_t max_len, float *Y);

/* ------------------------------------------------------------- dispatch */

/** Kernel paths. Which exist depends on the build and the machine. */
typedef enum edgeattn_isa {
    EDGEATTN_ISA_AUTO = 0, /**< best available (the default; EDGEATTN_ISA overrides) */
    EDGEATTN_ISA_SCALAR = 1, /**< plain C++, every target */
    EDGEATTN_ISA_SSE2 = 2, /**< x86 SSE2 */
    EDGEATTN_ISA_AVX2 = 3, /**< AVX2 + FMA */
    EDGEATTN_ISA_AVX512 = 4, /**< AVX-512 F + DQ */
    EDGEATTN_ISA_NEON = 5, /**< ARMv7 NEON or AArch64 NEON */
    EDGEATTN_ISA_FORCE_INT = 0x7FFFFFFF /**< int-sized under -fshort-enums; not a path */
} edgeattn_isa;

/**
 * Force a kernel path for every later call (EDGEATTN_ISA_AUTO: pick the
 * best). Returns EDGEATTN_ERR_UNSUPPORTED_ISA, changing nothing, when that
 * path is not built in or the CPU lacks it. Not thread-safe against calls in
 * flight: set it before computing. Programs may also set the environment
 * variable EDGEATTN_ISA to scalar, sse2, avx2, avx512 or neon, read at the
 * first call.
 * @param isa the path, or ::EDGEATTN_ISA_AUTO
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_UNSUPPORTED_ISA
 */
edgeattn_status edgeattn_set_isa(edgeattn_isa isa);
/** The path calls use now.
 *  @return the path in effect (never ::EDGEATTN_ISA_AUTO) */
edgeattn_isa edgeattn_current_isa(void);
/** Whether a path can run here.
 *  @param isa a path
 *  @return 1 when the path is built in and this CPU runs it, else 0 (also for
 *          ::EDGEATTN_ISA_AUTO, which is not a path) */
int edgeattn_isa_supported(edgeattn_isa isa);
/** A path's name, as EDGEATTN_ISA spells it.
 *  @param isa any value
 *  @return "scalar", "sse2", "avx2", "avx512", "neon", "auto", or "unknown" outside the enum (a static string) */
const char *edgeattn_isa_name(edgeattn_isa isa);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* Decoder side: masks, grouped-query heads, the KV cache, the projection. */
#include "edgeattn/decoder.h"
/* Weights stored in int8 or fp16 (binary16), computed in fp32. */
#include "edgeattn/reduced_precision.h"

#endif /* EDGEATTN_EDGEATTN_H */
