/**
 * @file
 * The names of the 0.x API, kept for one release as inline wrappers over
 * the 1.0 calls (CHANGELOG.md maps each to its replacement). Each gives the
 * bits its 0.x function gave; only some statuses are more specific now
 * (EDGEATTN_ERR_CACHE_SHAPE_MISMATCH, EDGEATTN_ERR_KEYS_NOT_CAPACITY and
 * EDGEATTN_ERR_PAST_CACHE_LENGTH where EDGEATTN_ERR_BAD_CACHE was returned).
 * Using one warns at compile time; define EDGEATTN_NO_DEPRECATED to hide
 * them all. Included by edgeattn/edgeattn.h.
 */
#ifndef EDGEATTN_DEPRECATED_H
#define EDGEATTN_DEPRECATED_H

#include "edgeattn/attention.h"
#include "edgeattn/convert.h"
#include "edgeattn/dense.h"
#include "edgeattn/kv_cache.h"
#include "edgeattn/positional.h"
#include "edgeattn/types.h"

#ifndef EDGEATTN_NO_DEPRECATED

#if defined(__GNUC__) || defined(__clang__)
#define EDGEATTN_DEPRECATED(replacement) __attribute__((deprecated("use " replacement)))
#elif defined(_MSC_VER)
#define EDGEATTN_DEPRECATED(replacement) __declspec(deprecated("use " replacement))
#else
#define EDGEATTN_DEPRECATED(replacement)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- old types */

typedef edgeattn_dtype edgeattn_weight_type; /**< now edgeattn_dtype */
#define EDGEATTN_WEIGHTS_F32 EDGEATTN_DTYPE_F32   /**< now EDGEATTN_DTYPE_F32 */
#define EDGEATTN_WEIGHTS_F16 EDGEATTN_DTYPE_F16   /**< now EDGEATTN_DTYPE_F16 */
#define EDGEATTN_WEIGHTS_INT8 EDGEATTN_DTYPE_INT8 /**< now EDGEATTN_DTYPE_INT8 */
#define EDGEATTN_WEIGHT_TYPE_FORCE_INT EDGEATTN_DTYPE_FORCE_INT
typedef edgeattn_dense_dims edgeattn_linear_dims;      /**< now edgeattn_dense_dims */
typedef edgeattn_weights edgeattn_mha_typed_weights;   /**< now edgeattn_weights */

/** fp32 multi-head attention weights; now edgeattn_weights with EDGEATTN_DTYPE_F32. */
typedef struct edgeattn_mha_weights {
    const float *W_q, *W_k, *W_v, *W_o; /**< as edgeattn_weights */
    const float *b_q, *b_k, *b_v, *b_o; /**< as edgeattn_weights */
} edgeattn_mha_weights;

/** fp32 additive attention weights; now edgeattn_weights (w_v as W_v). */
typedef struct edgeattn_additive_weights {
    const float *W_q; /**< (h, query_size) */
    const float *W_k; /**< (h, key_size) */
    const float *w_v; /**< (1, h) */
} edgeattn_additive_weights;

/** Additive attention weights with W_q, W_k typed; now edgeattn_weights. */
typedef struct edgeattn_additive_typed_weights {
    edgeattn_weight_matrix W_q; /**< (h, query_size) */
    edgeattn_weight_matrix W_k; /**< (h, key_size) */
    const float *w_v;           /**< (1, h) */
} edgeattn_additive_typed_weights;

/* --------------------------------------- helpers of the wrappers (not API) */

static inline edgeattn_weight_matrix edgeattn_detail_f32_matrix(const float *data) {
    edgeattn_weight_matrix m;
    m.type = EDGEATTN_DTYPE_F32;
    m.data = data;
    m.scales = NULL;
    m.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    return m;
}

static inline edgeattn_weights edgeattn_detail_f32_weights(const edgeattn_mha_weights *w) {
    edgeattn_weights t;
    t.W_q = edgeattn_detail_f32_matrix(w->W_q);
    t.W_k = edgeattn_detail_f32_matrix(w->W_k);
    t.W_v = edgeattn_detail_f32_matrix(w->W_v);
    t.W_o = edgeattn_detail_f32_matrix(w->W_o);
    t.b_q = w->b_q;
    t.b_k = w->b_k;
    t.b_v = w->b_v;
    t.b_o = w->b_o;
    return t;
}

static inline edgeattn_weights edgeattn_detail_additive_weights(edgeattn_weight_matrix W_q,
                                                                edgeattn_weight_matrix W_k,
                                                                const float *w_v) {
    edgeattn_weights t;
    t.W_q = W_q;
    t.W_k = W_k;
    t.W_v = edgeattn_detail_f32_matrix(w_v);
    t.W_o = edgeattn_detail_f32_matrix(NULL);
    t.b_q = t.b_k = t.b_v = t.b_o = NULL;
    return t;
}

static inline edgeattn_attention_options edgeattn_detail_options(
    const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask) {
    edgeattn_attention_options o;
    o.valid_lens.kind = EDGEATTN_VALID_LENS_NONE;
    o.valid_lens.lens = NULL;
    o.mask.causal = 0;
    o.mask.ranges_kind = EDGEATTN_KEY_RANGES_NONE;
    o.mask.key_ranges = NULL;
    o.mask.bias = NULL;
    o.mask.bias_batch = o.mask.bias_heads = o.mask.bias_keys = 0;
    o.mask.window = 0;
    o.mask.alignment = EDGEATTN_ALIGN_BOTTOM_RIGHT;
    o.mask.right_window = 0;
    o.mask.alibi_max_bias = 0.0f;
    o.rope.table = NULL;
    o.rope.max_positions = o.rope.rotary_dims = 0;
    o.rope.layout = EDGEATTN_ROPE_NEOX;
    o.rope.positions = NULL;
    o.scale = o.softcap = 0.0f;
    o.masking = EDGEATTN_MASKING_D2L;
    o.weights_output = EDGEATTN_WEIGHTS_SOFTMAX;
    o.tensor_type = EDGEATTN_DTYPE_F32;
    if (valid_lens) o.valid_lens = *valid_lens;
    if (mask) o.mask = *mask;
    return o;
}

static inline size_t edgeattn_detail_attention_workspace(edgeattn_op op,
                                                         const edgeattn_attention_dims *dims,
                                                         size_t tokens, size_t max_threads) {
    edgeattn_workspace_request r;
    size_t bytes = 0;
    if (!dims) return 0;
    r.op = op;
    r.dims = *dims;
    r.tokens = tokens;
    r.dense.rows = r.dense.in_features = r.dense.out_features = 0;
    r.tensor_type = EDGEATTN_DTYPE_F32;
    r.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    return edgeattn_workspace_size(&r, 1, max_threads, &bytes) == EDGEATTN_OK ? bytes : 0;
}

/* Self-attention's dims as multi-head dims: keys = queries and every feature
   size = query_size; fields given as 0 take those values. */
static inline edgeattn_status edgeattn_detail_self_dims(const edgeattn_attention_dims *in,
                                                        edgeattn_attention_dims *d) {
    *d = *in;
    if (d->keys == 0) d->keys = d->queries;
    if (d->key_size == 0) d->key_size = d->query_size;
    if (d->value_size == 0) d->value_size = d->query_size;
    if (d->num_hiddens == 0) d->num_hiddens = d->query_size;
    if (d->keys != d->queries || d->key_size != d->query_size ||
        d->value_size != d->query_size || d->num_hiddens != d->query_size)
        return EDGEATTN_ERR_SHAPE_MISMATCH;
    return EDGEATTN_OK;
}

/* ------------------------------------------------------------ attention */

EDGEATTN_DEPRECATED("edgeattn_workspace_size with EDGEATTN_OP_SDPA")
static inline size_t edgeattn_dot_product_attention_workspace_size(
    const edgeattn_attention_dims *dims, size_t max_threads) {
    return edgeattn_detail_attention_workspace(EDGEATTN_OP_SDPA, dims, 0, max_threads);
}

EDGEATTN_DEPRECATED("edgeattn_sdpa")
static inline edgeattn_status edgeattn_dot_product_attention_masked(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    void *workspace, size_t workspace_bytes, float *output, float *attention_weights) {
    const edgeattn_attention_options o = edgeattn_detail_options(valid_lens, mask);
    return edgeattn_sdpa(dims, queries, keys, values, &o, workspace, workspace_bytes, output,
                         attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_sdpa")
static inline edgeattn_status edgeattn_dot_product_attention(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, void *workspace,
    size_t workspace_bytes, float *output, float *attention_weights) {
    const edgeattn_attention_options o = edgeattn_detail_options(valid_lens, NULL);
    return edgeattn_sdpa(dims, queries, keys, values, &o, workspace, workspace_bytes, output,
                         attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_workspace_size with EDGEATTN_OP_ADDITIVE")
static inline size_t edgeattn_additive_attention_workspace_size(
    const edgeattn_attention_dims *dims, size_t max_threads) {
    return edgeattn_detail_attention_workspace(EDGEATTN_OP_ADDITIVE, dims, 0, max_threads);
}

EDGEATTN_DEPRECATED("edgeattn_additive")
static inline edgeattn_status edgeattn_additive_attention(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens,
    const edgeattn_additive_weights *weights, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights) {
    edgeattn_weights w;
    edgeattn_attention_options o;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    w = edgeattn_detail_additive_weights(edgeattn_detail_f32_matrix(weights->W_q),
                                         edgeattn_detail_f32_matrix(weights->W_k), weights->w_v);
    o = edgeattn_detail_options(valid_lens, NULL);
    return edgeattn_additive(dims, queries, keys, values, &w, &o, workspace, workspace_bytes,
                             output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_additive")
static inline edgeattn_status edgeattn_additive_attention_typed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens,
    const edgeattn_additive_typed_weights *weights, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights) {
    edgeattn_weights w;
    edgeattn_attention_options o;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    w = edgeattn_detail_additive_weights(weights->W_q, weights->W_k, weights->w_v);
    o = edgeattn_detail_options(valid_lens, NULL);
    return edgeattn_additive(dims, queries, keys, values, &w, &o, workspace, workspace_bytes,
                             output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_workspace_size with EDGEATTN_OP_MHA")
static inline size_t edgeattn_multi_head_attention_workspace_size(
    const edgeattn_attention_dims *dims, size_t max_threads) {
    return edgeattn_detail_attention_workspace(EDGEATTN_OP_MHA, dims, 0, max_threads);
}

EDGEATTN_DEPRECATED("edgeattn_mha")
static inline edgeattn_status edgeattn_multi_head_attention_masked(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    const edgeattn_mha_weights *weights, void *workspace, size_t workspace_bytes, float *output,
    float *attention_weights) {
    edgeattn_weights w;
    edgeattn_attention_options o;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    w = edgeattn_detail_f32_weights(weights);
    o = edgeattn_detail_options(valid_lens, mask);
    return edgeattn_mha(dims, queries, keys, values, &w, &o, workspace, workspace_bytes, output,
                        attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_mha")
static inline edgeattn_status edgeattn_multi_head_attention(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_mha_weights *weights,
    void *workspace, size_t workspace_bytes, float *output, float *attention_weights) {
    edgeattn_weights w;
    edgeattn_attention_options o;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    w = edgeattn_detail_f32_weights(weights);
    o = edgeattn_detail_options(valid_lens, NULL);
    return edgeattn_mha(dims, queries, keys, values, &w, &o, workspace, workspace_bytes, output,
                        attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_mha")
static inline edgeattn_status edgeattn_multi_head_attention_typed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    const edgeattn_mha_typed_weights *weights, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights) {
    const edgeattn_attention_options o = edgeattn_detail_options(valid_lens, mask);
    return edgeattn_mha(dims, queries, keys, values, weights, &o, workspace, workspace_bytes,
                        output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_mha_packed")
static inline edgeattn_status edgeattn_multi_head_attention_masked_packed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    const void *packed, size_t packed_bytes, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights) {
    const edgeattn_attention_options o = edgeattn_detail_options(valid_lens, mask);
    return edgeattn_mha_packed(dims, queries, keys, values, packed, packed_bytes, &o, workspace,
                               workspace_bytes, output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_mha_packed")
static inline edgeattn_status edgeattn_multi_head_attention_packed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const void *packed,
    size_t packed_bytes, void *workspace, size_t workspace_bytes, float *output,
    float *attention_weights) {
    const edgeattn_attention_options o = edgeattn_detail_options(valid_lens, NULL);
    return edgeattn_mha_packed(dims, queries, keys, values, packed, packed_bytes, &o, workspace,
                               workspace_bytes, output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_workspace_size with EDGEATTN_OP_MHA and full dims")
static inline size_t edgeattn_self_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                            size_t max_threads) {
    edgeattn_attention_dims d;
    if (!dims || edgeattn_detail_self_dims(dims, &d) != EDGEATTN_OK) return 0;
    return edgeattn_detail_attention_workspace(EDGEATTN_OP_MHA, &d, 0, max_threads);
}

EDGEATTN_DEPRECATED("edgeattn_mha with X as queries, keys and values")
static inline edgeattn_status edgeattn_self_attention(const edgeattn_attention_dims *dims,
                                                      const float *X,
                                                      const edgeattn_valid_lens *valid_lens,
                                                      const edgeattn_mha_weights *weights,
                                                      void *workspace, size_t workspace_bytes,
                                                      float *output, float *attention_weights) {
    edgeattn_attention_dims d;
    edgeattn_weights w;
    edgeattn_attention_options o;
    edgeattn_status st;
    if (!dims || !X || !weights) return EDGEATTN_ERR_NULL_POINTER;
    st = edgeattn_detail_self_dims(dims, &d);
    if (st != EDGEATTN_OK) return st;
    w = edgeattn_detail_f32_weights(weights);
    o = edgeattn_detail_options(valid_lens, NULL);
    return edgeattn_mha(&d, X, X, X, &w, &o, workspace, workspace_bytes, output,
                        attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_mha_packed with X as queries, keys and values")
static inline edgeattn_status edgeattn_self_attention_packed(
    const edgeattn_attention_dims *dims, const float *X, const edgeattn_valid_lens *valid_lens,
    const void *packed, size_t packed_bytes, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights) {
    edgeattn_attention_dims d;
    edgeattn_attention_options o;
    edgeattn_status st;
    if (!dims || !X) return EDGEATTN_ERR_NULL_POINTER;
    st = edgeattn_detail_self_dims(dims, &d);
    if (st != EDGEATTN_OK) return st;
    o = edgeattn_detail_options(valid_lens, NULL);
    return edgeattn_mha_packed(&d, X, X, X, packed, packed_bytes, &o, workspace, workspace_bytes,
                               output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_mha_packed_size")
static inline size_t edgeattn_mha_packed_weights_size(const edgeattn_attention_dims *dims) {
    edgeattn_mha_weights none = {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    const edgeattn_weights w = edgeattn_detail_f32_weights(&none);
    return edgeattn_mha_packed_size(dims, &w);
}

EDGEATTN_DEPRECATED("edgeattn_mha_packed_size")
static inline size_t edgeattn_mha_typed_packed_weights_size(const edgeattn_attention_dims *dims,
                                                            const edgeattn_mha_typed_weights *weights) {
    return edgeattn_mha_packed_size(dims, weights);
}

EDGEATTN_DEPRECATED("edgeattn_mha_pack")
static inline edgeattn_status edgeattn_mha_pack_weights(const edgeattn_attention_dims *dims,
                                                        const edgeattn_mha_weights *weights,
                                                        void *packed, size_t packed_bytes) {
    edgeattn_weights w;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    w = edgeattn_detail_f32_weights(weights);
    return edgeattn_mha_pack(dims, &w, packed, packed_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_mha_pack")
static inline edgeattn_status edgeattn_mha_pack_typed_weights(const edgeattn_attention_dims *dims,
                                                              const edgeattn_mha_typed_weights *weights,
                                                              void *packed, size_t packed_bytes) {
    return edgeattn_mha_pack(dims, weights, packed, packed_bytes);
}

/* ------------------------------------------------------------- KV cache */

static inline edgeattn_kv_cache_config edgeattn_detail_cache_config(size_t batch,
                                                                    size_t num_kv_heads,
                                                                    size_t head_size,
                                                                    size_t capacity,
                                                                    edgeattn_dtype storage) {
    edgeattn_kv_cache_config c;
    c.batch = batch;
    c.num_kv_heads = num_kv_heads;
    c.head_size = head_size;
    c.capacity = capacity;
    c.storage = storage;
    c.window = c.sinks = 0;
    c.value_head_size = 0;
    c.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    return c;
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_memory_size")
static inline size_t edgeattn_kv_cache_typed_size(size_t batch, size_t num_kv_heads,
                                                  size_t head_size, size_t capacity,
                                                  edgeattn_weight_type storage) {
    const edgeattn_kv_cache_config c =
        edgeattn_detail_cache_config(batch, num_kv_heads, head_size, capacity, storage);
    return edgeattn_kv_cache_memory_size(&c);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_memory_size")
static inline size_t edgeattn_kv_cache_size(size_t batch, size_t num_kv_heads, size_t head_size,
                                            size_t capacity) {
    const edgeattn_kv_cache_config c = edgeattn_detail_cache_config(
        batch, num_kv_heads, head_size, capacity, EDGEATTN_DTYPE_F32);
    return edgeattn_kv_cache_memory_size(&c);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_setup")
static inline edgeattn_status edgeattn_kv_cache_init_typed(edgeattn_kv_cache *cache, size_t batch,
                                                           size_t num_kv_heads, size_t head_size,
                                                           size_t capacity,
                                                           edgeattn_weight_type storage,
                                                           void *memory, size_t memory_bytes) {
    const edgeattn_kv_cache_config c =
        edgeattn_detail_cache_config(batch, num_kv_heads, head_size, capacity, storage);
    return edgeattn_kv_cache_setup(cache, &c, memory, memory_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_setup")
static inline edgeattn_status edgeattn_kv_cache_init(edgeattn_kv_cache *cache, size_t batch,
                                                     size_t num_kv_heads, size_t head_size,
                                                     size_t capacity, void *memory,
                                                     size_t memory_bytes) {
    const edgeattn_kv_cache_config c = edgeattn_detail_cache_config(
        batch, num_kv_heads, head_size, capacity, EDGEATTN_DTYPE_F32);
    return edgeattn_kv_cache_setup(cache, &c, memory, memory_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_workspace_size with EDGEATTN_OP_KV_CACHE_STORE")
static inline size_t edgeattn_kv_cache_append_workspace_size(const edgeattn_attention_dims *dims,
                                                             size_t tokens, size_t max_threads) {
    return edgeattn_detail_attention_workspace(EDGEATTN_OP_KV_CACHE_STORE, dims, tokens,
                                               max_threads);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_store")
static inline edgeattn_status edgeattn_kv_cache_append(edgeattn_kv_cache *cache,
                                                       const edgeattn_attention_dims *dims,
                                                       size_t tokens, const float *keys,
                                                       const float *values,
                                                       const edgeattn_mha_weights *weights,
                                                       void *workspace, size_t workspace_bytes) {
    edgeattn_weights w;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    w = edgeattn_detail_f32_weights(weights);
    return edgeattn_kv_cache_store(cache, dims, tokens, keys, values, &w, NULL, workspace,
                                   workspace_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_store")
static inline edgeattn_status edgeattn_kv_cache_append_typed(
    edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, size_t tokens,
    const float *keys, const float *values, const edgeattn_mha_typed_weights *weights,
    void *workspace, size_t workspace_bytes) {
    return edgeattn_kv_cache_store(cache, dims, tokens, keys, values, weights, NULL, workspace,
                                   workspace_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_store_packed")
static inline edgeattn_status edgeattn_kv_cache_append_packed(
    edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, size_t tokens,
    const float *keys, const float *values, const void *packed, size_t packed_bytes,
    void *workspace, size_t workspace_bytes) {
    return edgeattn_kv_cache_store_packed(cache, dims, tokens, keys, values, packed, packed_bytes,
                                          NULL, workspace, workspace_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_workspace_size with EDGEATTN_OP_KV_CACHE_ATTEND")
static inline size_t edgeattn_kv_cache_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                                size_t max_threads) {
    return edgeattn_detail_attention_workspace(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 0, max_threads);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_attend")
static inline edgeattn_status edgeattn_kv_cache_attention(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const edgeattn_attention_mask *mask, const edgeattn_mha_weights *weights, void *workspace,
    size_t workspace_bytes, float *output, float *attention_weights) {
    edgeattn_weights w;
    edgeattn_attention_options o;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    w = edgeattn_detail_f32_weights(weights);
    o = edgeattn_detail_options(NULL, mask);
    return edgeattn_kv_cache_attend(cache, dims, queries, &w, &o, workspace, workspace_bytes,
                                    output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_attend")
static inline edgeattn_status edgeattn_kv_cache_attention_typed(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const edgeattn_attention_mask *mask, const edgeattn_mha_typed_weights *weights,
    void *workspace, size_t workspace_bytes, float *output, float *attention_weights) {
    const edgeattn_attention_options o = edgeattn_detail_options(NULL, mask);
    return edgeattn_kv_cache_attend(cache, dims, queries, weights, &o, workspace, workspace_bytes,
                                    output, attention_weights);
}

EDGEATTN_DEPRECATED("edgeattn_kv_cache_attend_packed")
static inline edgeattn_status edgeattn_kv_cache_attention_packed(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const edgeattn_attention_mask *mask, const void *packed, size_t packed_bytes, void *workspace,
    size_t workspace_bytes, float *output, float *attention_weights) {
    const edgeattn_attention_options o = edgeattn_detail_options(NULL, mask);
    return edgeattn_kv_cache_attend_packed(cache, dims, queries, packed, packed_bytes, &o,
                                           workspace, workspace_bytes, output, attention_weights);
}

/* ---------------------------------------------------------------- dense */

EDGEATTN_DEPRECATED("edgeattn_workspace_size with EDGEATTN_OP_DENSE")
static inline size_t edgeattn_linear_workspace_size(const edgeattn_linear_dims *dims,
                                                    size_t max_threads) {
    edgeattn_workspace_request r;
    size_t bytes = 0;
    if (!dims) return 0;
    r.op = EDGEATTN_OP_DENSE;
    r.dims.batch = r.dims.queries = r.dims.keys = r.dims.query_size = r.dims.key_size = 0;
    r.dims.value_size = r.dims.num_hiddens = r.dims.num_heads = r.dims.num_kv_heads = 0;
    r.dims.value_hiddens = 0;
    r.tokens = 0;
    r.tensor_type = EDGEATTN_DTYPE_F32;
    r.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    r.dense = *dims;
    return edgeattn_workspace_size(&r, 1, max_threads, &bytes) == EDGEATTN_OK ? bytes : 0;
}

EDGEATTN_DEPRECATED("edgeattn_dense")
static inline edgeattn_status edgeattn_linear(const edgeattn_linear_dims *dims, const float *x,
                                              const float *W, const float *b, void *workspace,
                                              size_t workspace_bytes, float *y) {
    const edgeattn_weight_matrix m = edgeattn_detail_f32_matrix(W);
    return edgeattn_dense(dims, x, &m, b, workspace, workspace_bytes, y);
}

EDGEATTN_DEPRECATED("edgeattn_dense")
static inline edgeattn_status edgeattn_linear_typed(const edgeattn_linear_dims *dims,
                                                    const float *x, const edgeattn_weight_matrix *W,
                                                    const float *b, void *workspace,
                                                    size_t workspace_bytes, float *y) {
    return edgeattn_dense(dims, x, W, b, workspace, workspace_bytes, y);
}

EDGEATTN_DEPRECATED("edgeattn_dense_packed_size")
static inline size_t edgeattn_linear_packed_weights_size(const edgeattn_linear_dims *dims) {
    const edgeattn_weight_matrix m = edgeattn_detail_f32_matrix(NULL);
    return edgeattn_dense_packed_size(dims, &m);
}

EDGEATTN_DEPRECATED("edgeattn_dense_packed_size")
static inline size_t edgeattn_linear_typed_packed_weights_size(const edgeattn_linear_dims *dims,
                                                               edgeattn_weight_type type) {
    edgeattn_weight_matrix m = edgeattn_detail_f32_matrix(NULL);
    m.type = type;
    return edgeattn_dense_packed_size(dims, &m);
}

EDGEATTN_DEPRECATED("edgeattn_dense_pack")
static inline edgeattn_status edgeattn_linear_pack_weights(const edgeattn_linear_dims *dims,
                                                           const float *W, const float *b,
                                                           void *packed, size_t packed_bytes) {
    const edgeattn_weight_matrix m = edgeattn_detail_f32_matrix(W);
    return edgeattn_dense_pack(dims, &m, b, packed, packed_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_dense_pack")
static inline edgeattn_status edgeattn_linear_pack_typed_weights(const edgeattn_linear_dims *dims,
                                                                 const edgeattn_weight_matrix *W,
                                                                 const float *b, void *packed,
                                                                 size_t packed_bytes) {
    return edgeattn_dense_pack(dims, W, b, packed, packed_bytes);
}

EDGEATTN_DEPRECATED("edgeattn_dense_packed")
static inline edgeattn_status edgeattn_linear_packed(const edgeattn_linear_dims *dims,
                                                     const float *x, const void *packed,
                                                     size_t packed_bytes, float *y) {
    return edgeattn_dense_packed(dims, x, packed, packed_bytes, y);
}

/* ----------------------------------------------------- positional encoding */

EDGEATTN_DEPRECATED("edgeattn_positional_encoding_add_at with start 0")
static inline edgeattn_status edgeattn_positional_encoding_add(size_t batch, size_t n, size_t d,
                                                               const float *X, const float *P,
                                                               size_t max_len, float *Y) {
    return edgeattn_positional_encoding_add_at(batch, n, d, 0, X, P, max_len, Y);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_NO_DEPRECATED */

#endif /* EDGEATTN_DEPRECATED_H */
