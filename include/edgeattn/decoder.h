/**
 * @file
 * edgeattn C API, decoder side (included by edgeattn/edgeattn.h): attention
 * masks beyond d2l's valid lengths (causal, per-row key ranges, additive
 * bias), grouped-query heads (edgeattn_attention_dims::num_kv_heads), a
 * caller-owned KV cache for incremental decoding, and the projection
 * y = x W^T + b on its own. Same rules as the rest of the C API: caller
 * memory only, a status on every call, nothing written on any error.
 */
#ifndef EDGEATTN_DECODER_H
#define EDGEATTN_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "edgeattn/edgeattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ masks */

/** How many key ranges a mask has. */
typedef enum edgeattn_key_ranges_kind {
    EDGEATTN_KEY_RANGES_NONE = 0,      /**< no ranges; key_ranges is ignored */
    EDGEATTN_KEY_RANGES_PER_BATCH = 1, /**< (B, 2): one [start, end) per batch element */
    EDGEATTN_KEY_RANGES_PER_QUERY = 2, /**< (B, Q, 2): one [start, end) per query row */
    /** keeps the enum int-sized under -fshort-enums; never valid */
    EDGEATTN_KEY_RANGES_KIND_FORCE_INT = 0x7FFFFFFF
} edgeattn_key_ranges_kind;

/**
 * Which keys each query row sees, and an optional additive score bias.
 *
 * Row (b, i) of a call with Q queries over K keys (a KV cache call: K is
 * batch element b's cached length) sees the keys j with
 *   start <= j < end                   (key_ranges, when given),
 *   j < valid_len                      (valid_lens, calls that take them),
 *   j <= i + K - Q                     (causal, when set),
 * always one interval [lo, hi) of keys. Causal places the Q queries at the
 * last Q of the K key positions: in self-attention (Q = K) query i sees keys
 * 0..i; in a decode step the new tokens see the cache up to themselves.
 * Every other key of the row gets the score -1e6, d2l's rule (the default,
 * as for valid_lens), so a row that sees no key at all has uniform weights
 * 1/K, never NaN (PyTorch's nn.MultiheadAttention gives NaN there, its newer
 * scaled_dot_product_attention zeros). Left padding is a start > 0, right
 * padding an end < K, a sliding window of w keys the per-query range
 * [max(0, i + K - Q - w + 1), i + K - Q + 1).
 *
 * The bias, when given, is added to the scaled scores q.k / sqrt(d) of the
 * visible keys (ALiBi, relative position bias; a -inf bias weighs 0 next to
 * finite scores, at most ~6e-39 from the exp's floor, like a PyTorch float
 * mask); masked keys keep -1e6 whatever their bias, so a row whose visible
 * keys all have a -inf bias gives its weight to its masked keys, or is
 * uniform when it has none (README, "Fully masked rows").
 * Its shape is (bias_batch, bias_heads, Q, bias_keys): bias_batch 1
 * (broadcast over the batch) or B; bias_heads 1 or H (one per head: ALiBi's
 * slopes); a row of bias_keys >= K floats, of which the first K are read.
 */
typedef struct edgeattn_attention_mask {
    int32_t causal;                       /**< nonzero: query i sees keys j <= i + K - Q */
    edgeattn_key_ranges_kind ranges_kind; /**< how many ranges key_ranges has */
    /** [start, end) pairs of int32, (B, 2) or (B, Q, 2) row-major; 0 <= start
        <= end, an end past K is K; NULL only with EDGEATTN_KEY_RANGES_NONE.
        Otherwise EDGEATTN_ERR_BAD_KEY_RANGE. */
    const int32_t *key_ranges;
    const float *bias;  /**< NULL, or (bias_batch, bias_heads, Q, bias_keys) */
    size_t bias_batch;  /**< 1 or B (0 counts as 1) */
    size_t bias_heads;  /**< 1 or H (0 counts as 1) */
    size_t bias_keys;   /**< floats per bias row, >= K (0 means K; a KV cache call: 0 means capacity) */
} edgeattn_attention_mask;

/**
 * edgeattn_dot_product_attention with a mask (NULL: none). Same dims,
 * workspace (edgeattn_dot_product_attention_workspace_size) and outputs;
 * bias_heads must be 1. valid_lens and mask both apply.
 * @param dims        as for edgeattn_dot_product_attention()
 * @param queries     (B, Q, d)
 * @param keys        (B, K, d)
 * @param values      (B, K, v)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param mask        NULL, or causal / key ranges / bias as above
 * @param workspace   scratch of edgeattn_dot_product_attention_workspace_size() bytes
 * @param workspace_bytes its size in bytes
 * @param output      (B, Q, v)
 * @param attention_weights NULL, or (B, Q, K)
 * @return the statuses of edgeattn_dot_product_attention(), and
 *         ::EDGEATTN_ERR_BAD_KEY_RANGE, ::EDGEATTN_ERR_SHAPE_MISMATCH (bias shape)
 */
edgeattn_status edgeattn_dot_product_attention_masked(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    void *workspace, size_t workspace_bytes, float *output, float *attention_weights);

/**
 * edgeattn_multi_head_attention with a mask (NULL: none) and, through
 * dims->num_kv_heads, grouped-query heads (the plain call takes them too).
 * Same workspace (edgeattn_multi_head_attention_workspace_size) and outputs.
 * Masked self-attention (d2l's decoder at training time) passes X as
 * queries, keys and values with mask->causal = 1.
 * @param dims        every field; num_hiddens % num_heads == 0, num_heads % num_kv_heads == 0
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param mask        NULL, or causal / key ranges / bias as above
 * @param weights     W_q (h, q), W_k (h_kv, k), W_v (h_kv, v), W_o (h, h), h_kv = H_kv * h / H
 * @param workspace   scratch of edgeattn_multi_head_attention_workspace_size() bytes
 * @param workspace_bytes its size in bytes
 * @param output      (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, K)
 * @return the statuses of edgeattn_multi_head_attention(), and
 *         ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_BAD_KEY_RANGE,
 *         ::EDGEATTN_ERR_SHAPE_MISMATCH (bias shape)
 */
edgeattn_status edgeattn_multi_head_attention_masked(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    const edgeattn_mha_weights *weights, void *workspace, size_t workspace_bytes, float *output,
    float *attention_weights);

/**
 * edgeattn_multi_head_attention_masked with weights from edgeattn_mha_pack_weights().
 * @param dims        every field, as for edgeattn_multi_head_attention_masked()
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param valid_lens  NULL (no mask), or (B) or (B, Q) valid lengths in keys
 * @param mask        NULL, or causal / key ranges / bias as above
 * @param packed      from edgeattn_mha_pack_weights() for these feature sizes and heads
 * @param packed_bytes its size in bytes
 * @param workspace   scratch of edgeattn_multi_head_attention_workspace_size() bytes
 * @param workspace_bytes its size in bytes
 * @param output      (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, K)
 * @return the statuses of edgeattn_multi_head_attention_masked(), and
 *         ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_multi_head_attention_masked_packed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    const void *packed, size_t packed_bytes, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights);

/* --------------------------------------------------------------- KV cache */

/**
 * A KV cache over caller memory: the projected keys and values of every
 * token decoded so far, so a decode step projects only its new tokens.
 * Keys and values are (batch, num_kv_heads, capacity, head_size) each, so a
 * step reads one contiguous (length, head_size) block per head. Set up by
 * edgeattn_kv_cache_init(); treat the fields as read-only (lengths[b] is how
 * many positions batch element b holds): a call refuses a struct whose
 * fields were changed since (::EDGEATTN_ERR_BAD_CACHE). The memory it
 * points to is the cache's RAM; the calls write there, never to the struct.
 *
 * The struct itself is small and may live anywhere but in that memory
 * (::EDGEATTN_ERR_OVERLAP) and may be copied. Every cache call reads it,
 * and every other argument it takes by pointer (dims, mask, weights'
 * descriptor), into locals before it writes anything, so these may even
 * sit in the call's workspace or outputs, which the call then overwrites.
 */
typedef struct edgeattn_kv_cache {
    uint32_t magic;        /**< set by edgeattn_kv_cache_init(): a check value of the other fields,
                                calls refuse a struct that does not match it */
    uint32_t storage;      /**< how keys and values are stored: 0 fp32 (edgeattn_kv_cache_init()),
                                or the edgeattn_weight_type given to edgeattn_kv_cache_init_typed() */
    size_t batch;          /**< B */
    size_t num_kv_heads;   /**< H_kv */
    size_t head_size;      /**< h / H */
    size_t capacity;       /**< positions each batch element can hold */
    float *keys;           /**< (B, H_kv, capacity, head_size); NULL in an int8 / fp16 cache */
    float *values;         /**< (B, H_kv, capacity, head_size); NULL in an int8 / fp16 cache */
    int32_t *lengths;      /**< (B): positions filled, 0..capacity */
    void *stored_keys;     /**< the keys in their storage type (int8_t, uint16_t binary16 or float) */
    void *stored_values;   /**< the values in their storage type */
    float *key_scales;     /**< int8: (B, H_kv, capacity), one scale per cached key row; else NULL */
    float *value_scales;   /**< int8: (B, H_kv, capacity), one scale per cached value row; else NULL */
} edgeattn_kv_cache;

/**
 * Bytes of cache memory for these sizes (keys, values and lengths, each on
 * a 64-byte boundary from the start): a pure function of its arguments.
 * @param batch        B
 * @param num_kv_heads H_kv
 * @param head_size    features per head, h / H
 * @param capacity     positions per batch element
 * @return bytes, or 0 when a size is 0, capacity > INT32_MAX, or the size overflows size_t
 */
size_t edgeattn_kv_cache_size(size_t batch, size_t num_kv_heads, size_t head_size,
                              size_t capacity);

/**
 * Lays the cache out in `memory` and empties it (every length 0). Only the
 * lengths are written: the keys and values are written by appends.
 * @param cache        the struct to fill (not in `memory`)
 * @param batch        B
 * @param num_kv_heads H_kv
 * @param head_size    h / H
 * @param capacity     positions per batch element
 * @param memory       edgeattn_kv_cache_size() bytes, 4-byte aligned (64 is fastest)
 * @param memory_bytes its size
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_kv_cache_init(edgeattn_kv_cache *cache, size_t batch, size_t num_kv_heads,
                                       size_t head_size, size_t capacity, void *memory,
                                       size_t memory_bytes);

/**
 * Empties every batch element (lengths 0), to decode a new sequence.
 * @param cache from edgeattn_kv_cache_init()
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_BAD_CACHE,
 *         ::EDGEATTN_ERR_OVERLAP (the struct inside the cache memory)
 */
edgeattn_status edgeattn_kv_cache_reset(edgeattn_kv_cache *cache);

/**
 * Drops batch element b's positions from `length` on (beam search, or a
 * rejected draft): the next append writes at `length`.
 * @param cache       from edgeattn_kv_cache_init()
 * @param batch_index b < B
 * @param length      new length, <= the current one
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_BAD_CACHE
 *         (b >= B, or length above the current length), ::EDGEATTN_ERR_OVERLAP
 *         (the struct inside the cache memory)
 */
edgeattn_status edgeattn_kv_cache_truncate(edgeattn_kv_cache *cache, size_t batch_index,
                                           size_t length);

/**
 * Workspace bytes of edgeattn_kv_cache_append() and _packed.
 * @param dims        batch, key_size, value_size, num_hiddens, num_heads, num_kv_heads
 *                    (queries, keys and query_size are not read)
 * @param tokens      T: tokens appended per batch element per call
 * @param max_threads threads the call may use (0 counts as 1)
 * @return bytes, or 0 for invalid dims or when a size the call checks overflows
 */
size_t edgeattn_kv_cache_append_workspace_size(const edgeattn_attention_dims *dims, size_t tokens,
                                               size_t max_threads);

/**
 * Projects T new tokens' keys and values (W_k, W_v and their biases from
 * `weights`; W_q, W_o are not read and may be NULL) and writes them at the
 * end of every batch element's cache; lengths grow by T. When any batch
 * element has fewer than T free positions: ::EDGEATTN_ERR_CACHE_FULL and
 * nothing is written.
 * @param cache       from edgeattn_kv_cache_init() for (B, H_kv, h / H, capacity)
 * @param dims        batch = B, key_size, value_size, num_hiddens, num_heads, num_kv_heads
 * @param tokens      T > 0
 * @param keys        (B, T, key_size): the new tokens' key inputs (X in self-attention)
 * @param values      (B, T, value_size)
 * @param weights     W_k (h_kv, key_size), W_v (h_kv, value_size), b_k, b_v (h_kv) or NULL
 * @param workspace   edgeattn_kv_cache_append_workspace_size() bytes
 * @param workspace_bytes its size
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_BAD_CACHE,
 *         ::EDGEATTN_ERR_CACHE_FULL, ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_kv_cache_append(edgeattn_kv_cache *cache,
                                         const edgeattn_attention_dims *dims, size_t tokens,
                                         const float *keys, const float *values,
                                         const edgeattn_mha_weights *weights, void *workspace,
                                         size_t workspace_bytes);

/**
 * edgeattn_kv_cache_append with weights from edgeattn_mha_pack_weights()
 * (packed for the same dims; its W_q and W_o are not read).
 * @param cache       from edgeattn_kv_cache_init()
 * @param dims        as for edgeattn_kv_cache_append(), plus query_size as packed
 * @param tokens      T > 0
 * @param keys        (B, T, key_size)
 * @param values      (B, T, value_size)
 * @param packed      from edgeattn_mha_pack_weights()
 * @param packed_bytes its size
 * @param workspace   edgeattn_kv_cache_append_workspace_size() bytes
 * @param workspace_bytes its size
 * @return the statuses of edgeattn_kv_cache_append(), and ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_kv_cache_append_packed(edgeattn_kv_cache *cache,
                                                const edgeattn_attention_dims *dims, size_t tokens,
                                                const float *keys, const float *values,
                                                const void *packed, size_t packed_bytes,
                                                void *workspace, size_t workspace_bytes);

/**
 * Workspace bytes of edgeattn_kv_cache_attention() and _packed.
 * @param dims        batch, queries = Q, query_size, num_hiddens, num_heads, num_kv_heads,
 *                    keys = the cache's capacity, or 0 (as the call takes it): a size that
 *                    serves a cache of any capacity
 * @param max_threads threads the call may use (0 counts as 1)
 * @return bytes, or 0 for invalid dims, keys > INT32_MAX (no cache holds more), or when
 *         a size the call checks overflows (the (B, H, Q, keys) weights included)
 */
size_t edgeattn_kv_cache_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                  size_t max_threads);

/**
 * Multi-head attention of Q new queries over everything cached: projects
 * the queries with W_q (+ b_q), attends per head over batch element b's
 * lengths[b] cached keys and values (query head j reads cache head
 * j / (H / H_kv)), concatenates the heads and projects with W_o (+ b_o).
 * W_k and W_v are not read and may be NULL. For a decode step append the
 * new tokens first, then call this with mask->causal = 1 (one token per
 * step needs no mask: it sees the whole cache). A batch element with an
 * empty cache gives output b_o (zero heads).
 * @param cache       from edgeattn_kv_cache_init() for (B, H_kv, h / H, keys)
 * @param dims        batch = B, queries = Q, keys = capacity (or 0), query_size, num_hiddens,
 *                    num_heads, num_kv_heads (key_size, value_size are not read)
 * @param queries     (B, Q, query_size)
 * @param mask        NULL, or causal / key ranges / bias, with K = lengths[b]
 *                    (a bias row holds bias_keys >= capacity floats; 0 means capacity)
 * @param weights     W_q (h, query_size), W_o (h, h), b_q, b_o (h) or NULL
 * @param workspace   edgeattn_kv_cache_attention_workspace_size() bytes
 * @param workspace_bytes its size
 * @param output      (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, capacity): columns past lengths[b] are 0
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_BAD_CACHE,
 *         ::EDGEATTN_ERR_BAD_KEY_RANGE, ::EDGEATTN_ERR_SHAPE_MISMATCH,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_kv_cache_attention(const edgeattn_kv_cache *cache,
                                            const edgeattn_attention_dims *dims,
                                            const float *queries,
                                            const edgeattn_attention_mask *mask,
                                            const edgeattn_mha_weights *weights, void *workspace,
                                            size_t workspace_bytes, float *output,
                                            float *attention_weights);

/**
 * edgeattn_kv_cache_attention with weights from edgeattn_mha_pack_weights().
 * @param cache       from edgeattn_kv_cache_init()
 * @param dims        as for edgeattn_kv_cache_attention(), plus key_size, value_size as packed
 * @param queries     (B, Q, query_size)
 * @param mask        NULL, or as for edgeattn_kv_cache_attention()
 * @param packed      from edgeattn_mha_pack_weights()
 * @param packed_bytes its size
 * @param workspace   edgeattn_kv_cache_attention_workspace_size() bytes
 * @param workspace_bytes its size
 * @param output      (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, capacity)
 * @return the statuses of edgeattn_kv_cache_attention(), and ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_kv_cache_attention_packed(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const edgeattn_attention_mask *mask, const void *packed, size_t packed_bytes, void *workspace,
    size_t workspace_bytes, float *output, float *attention_weights);

/* ------------------------------------------------------------- projection */

/** Shape of a projection y (rows, out_features) = x (rows, in_features) W^T + b. */
typedef struct edgeattn_linear_dims {
    size_t rows;         /**< rows of x and y (batch x positions) */
    size_t in_features;  /**< columns of x, of W */
    size_t out_features; /**< columns of y, rows of W */
} edgeattn_linear_dims;

/**
 * Workspace bytes of edgeattn_linear().
 * @param dims        the shapes
 * @param max_threads threads the call may use (0 counts as 1)
 * @return bytes (W^T packed per call), or 0 for a zero size or overflow
 */
size_t edgeattn_linear_workspace_size(const edgeattn_linear_dims *dims, size_t max_threads);

/**
 * torch.nn.Linear: y = x W^T (+ b), W (out_features, in_features) as PyTorch
 * stores it. For the rest of a Transformer block (feed-forward layers).
 * @param dims      rows, in_features, out_features (> 0)
 * @param x         (rows, in_features)
 * @param W         (out_features, in_features)
 * @param b         (out_features) or NULL
 * @param workspace edgeattn_linear_workspace_size() bytes
 * @param workspace_bytes its size
 * @param y         (rows, out_features)
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_linear(const edgeattn_linear_dims *dims, const float *x, const float *W,
                                const float *b, void *workspace, size_t workspace_bytes, float *y);

/**
 * Bytes of a projection's weights packed once (rows is not read).
 * @param dims in_features, out_features
 * @return bytes, or 0 for a zero size or overflow
 */
size_t edgeattn_linear_packed_weights_size(const edgeattn_linear_dims *dims);

/**
 * Packs W^T (and copies b) once, for edgeattn_linear_packed().
 * @param dims         in_features, out_features (rows is not read)
 * @param W            (out_features, in_features)
 * @param b            (out_features) or NULL
 * @param packed       edgeattn_linear_packed_weights_size() bytes, 4-byte aligned
 * @param packed_bytes its size
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_linear_pack_weights(const edgeattn_linear_dims *dims, const float *W,
                                             const float *b, void *packed, size_t packed_bytes);

/**
 * edgeattn_linear with weights from edgeattn_linear_pack_weights(); no workspace.
 * @param dims         rows, in_features, out_features as packed
 * @param x            (rows, in_features)
 * @param packed       from edgeattn_linear_pack_weights()
 * @param packed_bytes its size
 * @param y            (rows, out_features)
 * @return the statuses of edgeattn_linear(), and ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_linear_packed(const edgeattn_linear_dims *dims, const float *x,
                                       const void *packed, size_t packed_bytes, float *y);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_DECODER_H */
