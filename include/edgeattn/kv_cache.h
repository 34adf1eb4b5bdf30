/**
 * @file
 * edgeattn C API: a caller-owned KV cache for incremental decoding. A
 * decode step stores its new tokens' projected keys and values
 * (edgeattn_kv_cache_store) and attends its queries over everything cached
 * (edgeattn_kv_cache_attend), so each step projects only its new tokens.
 * The rules of edgeattn/types.h hold.
 */
#ifndef EDGEATTN_KV_CACHE_H
#define EDGEATTN_KV_CACHE_H

#include "edgeattn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a KV cache holds and how: the argument of its setup. */
typedef struct edgeattn_kv_cache_config {
    size_t batch;          /**< B */
    size_t num_kv_heads;   /**< H_kv */
    size_t head_size;      /**< features per head, h / H */
    size_t capacity;       /**< positions each batch element can hold (<= INT32_MAX) */
    /** how keys and values are stored; 0 (a zeroed struct) is fp32.
        fp16: rounded to nearest even (beyond +-65504: +-inf; NaN stays NaN).
        int8: one scale per (position, head) row by the rule of
        edgeattn_quantize_int8(); a row holding a NaN or +-inf is stored with
        scale NaN, so attention reads NaN wherever it reads that row. */
    edgeattn_dtype storage;
    /** 0: the cache holds `capacity` tokens, then is full
        (::EDGEATTN_ERR_CACHE_FULL). W > 0: a window cache (a rolling
        buffer, RAM fixed for an endless stream): it holds the first `sinks`
        tokens stored (attention sinks, StreamingLLM) and the last W, in
        capacity = sinks + window rows (else ::EDGEATTN_ERR_BAD_WINDOW); a
        store never fills it, each token past them overwrites the oldest
        windowed row in place. */
    size_t window;
    /** S: tokens kept for ever from the start of the stream, with a window
        (0 without one, else ::EDGEATTN_ERR_BAD_WINDOW) */
    size_t sinks;
    /** dv: features of a cached value row, when a value head is not as
        wide as a key head (dims.value_hiddens / num_heads of the calls);
        0 means head_size */
    size_t value_head_size;
    /** 0: fp32 arithmetic. ::EDGEATTN_ARITHMETIC_INT8 (an int8 cache only,
        else ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED; head_size <= 132104, else
        ::EDGEATTN_ERR_SIZE_OVERFLOW): an attend's scores are integer
        products. Each query head's row (after W_q and the rope) is
        quantised by the rule of edgeattn_quantize_int8() to int8 codes and
        a scale s_q; a score is ((float)(codes . key codes) * (s_q * scale))
        * key scale, the int32 sum exact, so every kernel path gives the
        same bits (scale: options.scale, else 1/sqrt(head_size)). A query
        row of zeros scores 0 against every key; one holding a NaN or +-inf
        gives its head NaN. The weighted sum of the values stays fp32. The
        attend's workspace must be sized with this arithmetic in its request.
        A build without it (EDGEATTN_WITH_INT8_ARITHMETIC 0):
        ::EDGEATTN_ERR_NOT_BUILT. Outside the enum: ::EDGEATTN_ERR_BAD_OPTION */
    edgeattn_arithmetic arithmetic;
} edgeattn_kv_cache_config;

/**
 * A KV cache over caller memory. Keys are (batch, num_kv_heads, capacity,
 * head_size), values (batch, num_kv_heads, capacity, value_head_size), so a
 * step reads one contiguous (length, head_size) block per head. Filled by edgeattn_kv_cache_setup(); treat the
 * fields as read-only (lengths[b] is how many rows batch element b holds,
 * positions[b] how many tokens it was given): a call refuses a struct whose fields were changed since
 * (::EDGEATTN_ERR_BAD_CACHE). The memory it points to is the cache's RAM;
 * the calls write there, never to the struct. The struct may live anywhere
 * but in that memory (::EDGEATTN_ERR_OVERLAP) and may be copied.
 */
typedef struct edgeattn_kv_cache {
    uint32_t magic;        /**< a check value of the other fields, set up by edgeattn_kv_cache_setup() */
    uint32_t storage;      /**< the edgeattn_dtype keys and values are stored in */
    size_t batch;          /**< B */
    size_t num_kv_heads;   /**< H_kv */
    size_t head_size;      /**< h / H */
    size_t capacity;       /**< positions each batch element can hold */
    float *keys;           /**< (B, H_kv, capacity, head_size); NULL in an int8 / fp16 cache */
    float *values;         /**< (B, H_kv, capacity, value_head_size); NULL in an int8 / fp16 cache */
    int32_t *lengths;      /**< (B): positions filled, 0..capacity */
    void *stored_keys;     /**< the keys in their storage type (int8_t, uint16_t binary16 or float) */
    void *stored_values;   /**< the values in their storage type */
    float *key_scales;     /**< int8: (B, H_kv, capacity), one scale per cached key row; else NULL */
    float *value_scales;   /**< int8: (B, H_kv, capacity), one scale per cached value row; else NULL */
    /** (B): tokens stored since setup or reset, the position of the next one
        (<= INT32_MAX); equal to lengths[b] in a cache without a window */
    int32_t *positions;
    size_t window;         /**< W, 0 without a window */
    size_t sinks;          /**< S */
    size_t value_head_size; /**< dv: features of a value row (head_size unless the config set it) */
    uint32_t arithmetic;    /**< the edgeattn_arithmetic of an attend's scores */
} edgeattn_kv_cache;

/**
 * Bytes of cache memory for a config (keys, values, lengths, positions and int8 scales,
 * each on a 64-byte boundary from the start): a pure function of it. fp16
 * halves the keys' and values' bytes; int8 quarters them and adds one float
 * per cached row.
 * @param config the cache
 * @return bytes, or 0 when config is NULL, a size is 0, capacity > INT32_MAX,
 *         the storage is not an edgeattn_dtype, window and sinks break their
 *         rule, the arithmetic is refused (as setup refuses it), or the
 *         size overflows size_t
 */
size_t edgeattn_kv_cache_memory_size(const edgeattn_kv_cache_config *config);

/**
 * Lays the cache out in `memory` and empties it (every length and position
 * 0). Only the lengths and positions are written: keys and values are
 * written by stores.
 * @param cache        the struct to fill (not in `memory`)
 * @param config       sizes and storage type
 * @param memory       edgeattn_kv_cache_memory_size() bytes, 4-byte aligned (64 is fastest)
 * @param memory_bytes its size
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE (storage), ::EDGEATTN_ERR_BAD_WINDOW,
 *         ::EDGEATTN_ERR_BAD_OPTION, ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED and
 *         ::EDGEATTN_ERR_NOT_BUILT (the arithmetic)
 */
edgeattn_status edgeattn_kv_cache_setup(edgeattn_kv_cache *cache,
                                        const edgeattn_kv_cache_config *config, void *memory,
                                        size_t memory_bytes);

/**
 * Empties every batch element (lengths and positions 0), to decode a new
 * sequence (a window cache: a new stream).
 * @param cache from edgeattn_kv_cache_setup()
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_BAD_CACHE,
 *         ::EDGEATTN_ERR_OVERLAP (the struct inside the cache memory)
 */
edgeattn_status edgeattn_kv_cache_reset(edgeattn_kv_cache *cache);

/**
 * Drops batch element b's positions from `length` on (beam search, or a
 * rejected draft): the next store writes at `length`; positions[b] becomes
 * `length` too.
 * @param cache       from edgeattn_kv_cache_setup()
 * @param batch_index b < B
 * @param length      new length, <= the current one
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_BAD_CACHE,
 *         ::EDGEATTN_ERR_PAST_CACHE_LENGTH (b >= B, or length above the current
 *         length), ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED (a window cache whose
 *         ring has wrapped: positions[b] > capacity), ::EDGEATTN_ERR_OVERLAP
 *         (the struct inside the cache memory)
 */
edgeattn_status edgeattn_kv_cache_truncate(edgeattn_kv_cache *cache, size_t batch_index,
                                           size_t length);

/*
 * A window cache's rows, as attention reads them: key j of batch element b
 * is its j-th held token in stream order, the sinks first, then the
 * window oldest first (row j of the attention weights, a mask's key
 * ranges, causal and bias columns all count in this order). In memory the
 * window is a ring: the token at position p >= S sits in row
 * S + (p - S) % W, and attention reads the ring where it lies, without
 * moving a row. A step that stores T tokens into a full window before its
 * attend has overwritten its oldest T rows: its earlier queries see those
 * of the window that remain. Causal is by stream position: a query sees
 * the held tokens at or before its own, so one whose token has already
 * left the window (a store longer than W) sees the sinks before it, or,
 * without sinks, nothing (d2l's rule: uniform weights).
 *
 * Rotary embedding (options->rope): a store rotates each key at its
 * position (positions[b] + t, or rope.positions[b] + t) before it is
 * stored, so the cache holds rotated keys and a window cache's rows keep
 * the rotation of their absolute position (the table must cover the
 * stream, or the caller passes its own rope.positions); an attend rotates
 * its queries (positions[b] - Q + i, or rope.positions[b] + i: queries
 * that are not the last Q tokens stored, as in cross-attention or an
 * attend before its store, need rope.positions, else they rotate at
 * negative positions). Every batch element's positions must lie in the
 * table, an empty one's too (::EDGEATTN_ERR_ROPE_POSITION). The cache's
 * own positions array is cache memory, which a store writes: pass a copy
 * as rope.positions (::EDGEATTN_ERR_OVERLAP).
 *
 * Projection-free calls: EDGEATTN_DTYPE_NONE as W_k and W_v of a store
 * (key_size = h_kv, value_size = hv_kv, rows already projected and, without a
 * rope option, rotated) or as W_q (query_size = h) or W_o (output: the
 * concatenated heads) of an attend, for every storage type. They run the
 * kernels of the projecting calls. Each matrix is NONE or not on its own
 * (a store may take its keys as given and project its values); a NONE
 * matrix's sizes are ::EDGEATTN_ERR_SHAPE_MISMATCH when they differ from
 * the projection's output, and a bias beside it is
 * ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED. Packed weights never hold NONE.
 *
 * The dims of the cache calls: batch = B, num_hiddens = h, num_heads = H,
 * num_kv_heads (0 = H) and value_hiddens = hv (0 = h) must give the cache's
 * num_kv_heads, head_size = h / H and value_head_size = hv / H (else
 * ::EDGEATTN_ERR_CACHE_SHAPE_MISMATCH). A store's values are projected to
 * hv_kv = H_kv * hv / H features; an attend's heads concatenate to hv
 * features, which W_o (h, hv) projects. A store reads key_size
 * and value_size; an attend reads queries, query_size and keys, which is the
 * cache's capacity or 0 (never the filled length:
 * ::EDGEATTN_ERR_KEYS_NOT_CAPACITY).
 */

/**
 * Projects T new tokens' keys and values (W_k, W_v and their biases; W_q,
 * W_o are not read) and writes them at the end of every batch element's
 * cache, converted to the cache's storage; lengths grow by T (a window
 * cache: up to its capacity), positions by T. When any batch element of a
 * cache without a window has fewer than T free positions, or a position
 * would pass INT32_MAX: ::EDGEATTN_ERR_CACHE_FULL and nothing is written.
 * @param cache       from edgeattn_kv_cache_setup()
 * @param dims        batch, key_size, value_size, num_hiddens, num_heads, num_kv_heads,
 *                    value_hiddens
 * @param tokens      T > 0
 * @param keys        (B, T, key_size): the new tokens' key inputs (X in self-attention)
 * @param values      (B, T, value_size)
 * @param weights     W_k (h_kv, key_size), W_v (hv_kv, value_size) in any edgeattn_dtype
 *                    (EDGEATTN_DTYPE_NONE: the rows as given), b_k (h_kv), b_v (hv_kv) or NULL
 * @param options     NULL, or a rope and tensor_type (F16: keys and values are binary16);
 *                    a store takes no other option
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_STORE
 * @param workspace_bytes its size
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_BAD_CACHE,
 *         ::EDGEATTN_ERR_CACHE_SHAPE_MISMATCH, ::EDGEATTN_ERR_CACHE_FULL, ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE, ::EDGEATTN_ERR_SHAPE_MISMATCH
 *         (a NONE projection's sizes), ::EDGEATTN_ERR_BAD_ROPE, ::EDGEATTN_ERR_ROPE_POSITION,
 *         ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED, ::EDGEATTN_ERR_BAD_OPTION (tensor_type)
 */
edgeattn_status edgeattn_kv_cache_store(edgeattn_kv_cache *cache,
                                        const edgeattn_attention_dims *dims, size_t tokens,
                                        const float *keys, const float *values,
                                        const edgeattn_weights *weights,
                                        const edgeattn_attention_options *options,
                                        void *workspace, size_t workspace_bytes);

/**
 * edgeattn_kv_cache_store with weights from edgeattn_mha_pack() (packed for
 * the same feature sizes and heads; its W_q and W_o are not read).
 * @param cache       from edgeattn_kv_cache_setup()
 * @param dims        as for edgeattn_kv_cache_store(), plus query_size as packed
 * @param tokens      T > 0
 * @param keys        (B, T, key_size)
 * @param values      (B, T, value_size)
 * @param packed      from edgeattn_mha_pack() for these feature sizes and heads
 * @param packed_bytes its size
 * @param options     NULL, or a rope and a tensor_type (as edgeattn_kv_cache_store())
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_STORE
 * @param workspace_bytes its size
 * @return the statuses of edgeattn_kv_cache_store(), and ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_kv_cache_store_packed(edgeattn_kv_cache *cache,
                                               const edgeattn_attention_dims *dims, size_t tokens,
                                               const float *keys, const float *values,
                                               const void *packed, size_t packed_bytes,
                                               const edgeattn_attention_options *options,
                                               void *workspace, size_t workspace_bytes);

/**
 * Multi-head attention of Q new queries over everything cached: projects
 * the queries with W_q (+ b_q), attends per head over batch element b's
 * lengths[b] cached keys and values (query head j reads cache head
 * j / (H / H_kv)), concatenates the heads and projects with W_o (+ b_o).
 * For a decode step store the new tokens first, then attend with
 * options->mask.causal = 1 (one token per step needs no mask: it sees the
 * whole cache). A batch element with an empty cache gives output b_o.
 * @param cache       from edgeattn_kv_cache_setup()
 * @param dims        batch, queries = Q, keys = capacity (or 0), query_size,
 *                    num_hiddens, num_heads, num_kv_heads, value_hiddens
 * @param queries     (B, Q, query_size)
 * @param weights     W_q (h, query_size), W_o (h, hv) in any edgeattn_dtype (EDGEATTN_DTYPE_NONE:
 *                    queries as given, output the heads), b_q, b_o or NULL
 * @param options     NULL, or a mask with K = lengths[b] (a bias row holds
 *                    bias_keys >= capacity floats; 0 means capacity), a
 *                    rope, every score option (ALiBi over num_heads, by
 *                    stream position in a wrapped window cache) and
 *                    tensor_type (F16: queries and output are binary16, and
 *                    no attention_weights are taken); valid
 *                    lengths are not taken (the cache's lengths are)
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_ATTEND
 *                    (its request naming the cache's arithmetic)
 * @param workspace_bytes its size
 * @param output      (B, Q, h), or (B, Q, hv) when W_o is EDGEATTN_DTYPE_NONE
 * @param attention_weights NULL, or (B, H, Q, capacity): columns past lengths[b] are 0
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_BAD_CACHE,
 *         ::EDGEATTN_ERR_CACHE_SHAPE_MISMATCH, ::EDGEATTN_ERR_KEYS_NOT_CAPACITY,
 *         ::EDGEATTN_ERR_BAD_KEY_RANGE, ::EDGEATTN_ERR_SHAPE_MISMATCH,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE, ::EDGEATTN_ERR_BAD_ROPE,
 *         ::EDGEATTN_ERR_ROPE_POSITION, ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED,
 *         ::EDGEATTN_ERR_BAD_OPTION (a score option, tensor_type)
 */
edgeattn_status edgeattn_kv_cache_attend(const edgeattn_kv_cache *cache,
                                         const edgeattn_attention_dims *dims,
                                         const float *queries, const edgeattn_weights *weights,
                                         const edgeattn_attention_options *options,
                                         void *workspace, size_t workspace_bytes, float *output,
                                         float *attention_weights);

/**
 * edgeattn_kv_cache_attend with weights from edgeattn_mha_pack() (its W_k
 * and W_v are not read).
 * @param cache       from edgeattn_kv_cache_setup()
 * @param dims        as for edgeattn_kv_cache_attend(), plus key_size, value_size as packed
 * @param queries     (B, Q, query_size)
 * @param packed      from edgeattn_mha_pack() for these feature sizes and heads
 * @param packed_bytes its size
 * @param options     NULL, or a mask, a rope, the score options and a tensor_type as for edgeattn_kv_cache_attend()
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_ATTEND
 *                    (its request naming the cache's arithmetic)
 * @param workspace_bytes its size
 * @param output      (B, Q, h), or (B, Q, hv) when W_o is EDGEATTN_DTYPE_NONE
 * @param attention_weights NULL, or (B, H, Q, capacity)
 * @return the statuses of edgeattn_kv_cache_attend(), and ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_kv_cache_attend_packed(const edgeattn_kv_cache *cache,
                                                const edgeattn_attention_dims *dims,
                                                const float *queries, const void *packed,
                                                size_t packed_bytes,
                                                const edgeattn_attention_options *options,
                                                void *workspace, size_t workspace_bytes,
                                                float *output, float *attention_weights);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_KV_CACHE_H */
