// C entry points of the KV cache: incremental decoding, where each step
// projects only its new tokens' keys and values, appends them to the cache,
// and attends with its new queries over everything cached.
//
// Cache memory (make_kv_cache_layout): keys and values (B, H_kv, capacity,
// head_size), so one head of one batch element is a contiguous
// (length, head_size) block that a decode step streams once; then the
// lengths (B). The edgeattn_kv_cache struct only points into it.
#include <string.h>

#include "attention_checks.hpp"
#include "attention_mask.hpp"
#include "attention_rows.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/edgeattn.h"
#include "kernels/half.hpp"
#include "kernels/int8_scale.hpp"
#include "mha_weights.hpp"
#include "parallel.hpp"

using namespace edgeattn::detail;

namespace {

constexpr uint32_t kv_cache_magic = 0x4B564145u;  // "EAVK" little-endian

edgeattn_weight_type storage_of(const edgeattn_kv_cache &cache) {
    return static_cast<edgeattn_weight_type>(cache.storage);
}

// A storage or weight type as the caller passed it, read as an integer: a C
// caller may pass any int, and loading one outside the enum as the enum
// type is undefined in C++.
static_assert(sizeof(edgeattn_weight_type) == sizeof(int), "see EDGEATTN_WEIGHT_TYPE_FORCE_INT");
bool known_type(const edgeattn_weight_type &type) {
    int t = 0;
    memcpy(&t, &type, sizeof t);
    return t >= EDGEATTN_WEIGHTS_F32 && t <= EDGEATTN_WEIGHTS_INT8;
}

// What init writes into `magic`: the magic mixed with every other field,
// so a call refuses a struct whose sizes or pointers were changed after
// init (a larger capacity would make it read and write past the cache
// memory). Each step is a bijection of the 64-bit state, so one changed
// field always changes the state; folded to 32 bits, a change slips
// through with odds of 2^-32.
uint32_t check_value(const edgeattn_kv_cache &c) {
    const uint64_t fields[] = {c.storage,
                               c.batch,
                               c.num_kv_heads,
                               c.head_size,
                               c.capacity,
                               reinterpret_cast<uintptr_t>(c.keys),
                               reinterpret_cast<uintptr_t>(c.values),
                               reinterpret_cast<uintptr_t>(c.lengths),
                               reinterpret_cast<uintptr_t>(c.stored_keys),
                               reinterpret_cast<uintptr_t>(c.stored_values),
                               reinterpret_cast<uintptr_t>(c.key_scales),
                               reinterpret_cast<uintptr_t>(c.value_scales)};
    uint64_t h = kv_cache_magic;
    for (uint64_t f : fields) {
        h = (h ^ f) * 0x9E3779B97F4A7C15u;  // odd: invertible modulo 2^64
        h ^= h >> 31;
    }
    return static_cast<uint32_t>(h ^ (h >> 32));
}

// The cache's memory as spans: keys, values, lengths, and int8's scales
// (null spans otherwise).
constexpr size_t cache_span_count = 5;
void cache_spans(const edgeattn_kv_cache &cache, tensor_span spans[cache_span_count]) {
    const size_t positions = cache.batch * cache.num_kv_heads * cache.capacity;
    const size_t elements = positions * cache.head_size, bytes = element_bytes(storage_of(cache));
    spans[0] = {cache.stored_keys, elements, bytes};
    spans[1] = {cache.stored_values, elements, bytes};
    spans[2] = {cache.lengths, cache.batch};
    spans[3] = {cache.key_scales, cache.key_scales ? positions : 0};
    spans[4] = {cache.value_scales, cache.value_scales ? positions : 0};
}

// Copies the caller's struct into `c` and checks it. Every call works on
// the copy only: the struct may sit in the call's workspace or outputs,
// which the call overwrites. It may not sit in the cache memory it
// describes (init refuses that too): an append would overwrite it.
edgeattn_status read_cache(const edgeattn_kv_cache *cache, edgeattn_kv_cache &c) {
    if (!cache) return EDGEATTN_ERR_NULL_POINTER;
    memcpy(&c, cache, sizeof c);
    if (c.magic != check_value(c) || c.storage > EDGEATTN_WEIGHTS_INT8 || !c.stored_keys || !c.stored_values ||
        !c.lengths || c.batch == 0 || c.num_kv_heads == 0 || c.head_size == 0 || c.capacity == 0 ||
        c.capacity > INT32_MAX)
        return EDGEATTN_ERR_BAD_CACHE;
    const bool fp32 = c.storage == EDGEATTN_WEIGHTS_F32, int8 = c.storage == EDGEATTN_WEIGHTS_INT8;
    if ((fp32 && (c.keys != c.stored_keys || c.values != c.stored_values)) ||
        (int8 && (!c.key_scales || !c.value_scales)))
        return EDGEATTN_ERR_BAD_CACHE;
    tensor_span spans[cache_span_count];
    cache_spans(c, spans);
    for (const tensor_span &s : spans)
        if (spans_overlap(cache, sizeof *cache, s.data, s.bytes())) return EDGEATTN_ERR_OVERLAP;
    for (size_t b = 0; b < c.batch; ++b)
        if (c.lengths[b] < 0 || static_cast<size_t>(c.lengths[b]) > c.capacity) return EDGEATTN_ERR_BAD_CACHE;
    return EDGEATTN_OK;
}

// The sizes a cache call reads: h, H, H_kv and the input feature sizes in
// `sizes` non-zero, the heads dividing.
edgeattn_status check_call_dims(const edgeattn_attention_dims &d, const size_t *sizes, size_t num_sizes) {
    if (d.batch == 0 || d.num_hiddens == 0 || d.num_heads == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    for (size_t i = 0; i < num_sizes; ++i)
        if (sizes[i] == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    if (d.num_hiddens % d.num_heads != 0) return EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE;
    if (d.num_heads % kv_heads_of(d) != 0) return EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE;
    return EDGEATTN_OK;
}

// check_call_dims, and the cache made for (B, H_kv, h / H).
edgeattn_status check_cache_dims(const edgeattn_kv_cache &cache, const edgeattn_attention_dims &d,
                                 const size_t *sizes, size_t num_sizes) {
    if (edgeattn_status st = check_call_dims(d, sizes, num_sizes)) return st;
    if (cache.batch != d.batch || cache.num_kv_heads != kv_heads_of(d) ||
        cache.head_size != d.num_hiddens / d.num_heads)
        return EDGEATTN_ERR_BAD_CACHE;
    return EDGEATTN_OK;
}

// Element counts of an append's inputs (B, T, key_size) and (B, T, value_size).
edgeattn_status count_append(const edgeattn_attention_dims &d, size_t tokens, size_t &keys, size_t &values) {
    if (edgeattn_status st = tensor_count(keys, d.batch, tokens, d.key_size)) return st;
    return tensor_count(values, d.batch, tokens, d.value_size);
}

// Element counts of an attention call's queries (B, Q, query_size), output
// (B, Q, h) and weights (B, H, Q, capacity).
struct cache_attention_counts {
    size_t queries = 0, output = 0, weights = 0;
};
edgeattn_status count_attention(const edgeattn_attention_dims &d, size_t capacity, cache_attention_counts &c) {
    if (edgeattn_status st = tensor_count(c.queries, d.batch, d.queries, d.query_size)) return st;
    if (edgeattn_status st = tensor_count(c.output, d.batch, d.queries, d.num_hiddens)) return st;
    return tensor_count(c.weights, d.batch, d.num_heads, d.queries, capacity);
}

// Writes n floats of a token's head into the cache at element `at` (and, for
// int8, its scale at position `position`): fp32 as they are, binary16
// rounded to nearest even (beyond +-65504: +-inf, as IEEE converts), int8
// by the rule of kernels/int8_scale.hpp (a row with NaN or +-inf: NaN).
void store_row(const edgeattn_kv_cache &cache, void *stored, float *scales, size_t at, size_t position,
               const float *x, size_t n) {
    switch (storage_of(cache)) {
        case EDGEATTN_WEIGHTS_F16: {
            uint16_t *h = static_cast<uint16_t *>(stored) + at;
            for (size_t i = 0; i < n; ++i) h[i] = float_to_half_ieee(x[i]);
            return;
        }
        case EDGEATTN_WEIGHTS_INT8:
            scales[position] = quantize_int8_row(x, n, static_cast<int8_t *>(stored) + at);
            return;
        default: memcpy(static_cast<float *>(stored) + at, x, n * sizeof(float));
    }
}

// Cache head (b, g)'s rows as an attention slice reads them.
stored_rows stored_head_rows(const edgeattn_kv_cache &cache, bool values, size_t head) {
    stored_rows r;
    const size_t position = head * cache.capacity, element = position * cache.head_size;
    r.type = storage_of(cache);
    r.data = static_cast<const unsigned char *>(values ? cache.stored_values : cache.stored_keys) +
             element * element_bytes(r.type);
    const float *scales = values ? cache.value_scales : cache.key_scales;
    r.scales = scales ? scales + position : nullptr;
    return r;
}

// Slice s reads cache head (b, g): its fp32 rows in place (keys and values
// already point at them), or the int8 / fp16 ones through stored_cache_rows.
void read_cache_head(attention_slice &s, const edgeattn_kv_cache &cache, size_t head) {
    if (storage_of(cache) == EDGEATTN_WEIGHTS_F32) return;
    s.stored_keys = stored_head_rows(cache, false, head);
    s.stored_values = stored_head_rows(cache, true, head);
    s.stored = &stored_cache_rows;
}

// Weights as given (only the projections `used` names are read) or packed.
edgeattn_status view_weights(const edgeattn_attention_dims &d, const edgeattn_mha_typed_weights *weights,
                             const void *packed, size_t packed_bytes, unsigned used,
                             mha_weights_view &w) {
    if (weights) return view_typed_mha_weights(d, *weights, w, used);
    if (edgeattn_status st = check_mha_feature_dims(d)) return st;
    return view_packed_mha_weights(d, packed, packed_bytes, w);
}

// The caller's typed weights copied into `w` (the descriptor may sit in the
// workspace), with the type of each matrix `used` names read as an integer
// before anything reads it as the enum.
edgeattn_status copy_typed_weights(const edgeattn_mha_typed_weights *weights, unsigned used,
                                   edgeattn_mha_typed_weights &w) {
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    memcpy(&w, weights, sizeof w);
    const edgeattn_weight_matrix *m[4] = {&w.W_q, &w.W_k, &w.W_v, &w.W_o};
    for (unsigned i = 0; i < 4; ++i)
        if (used >> i & 1u && !known_type(m[i]->type)) return EDGEATTN_ERR_BAD_WEIGHT_TYPE;
    return EDGEATTN_OK;
}

// `weights` is the caller's descriptor already copied; every other argument
// given by pointer (the cache struct, the dims) is read into a local here,
// before anything is written.
edgeattn_status append(edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, size_t tokens,
                       const float *keys, const float *values, const edgeattn_mha_typed_weights *weights,
                       const void *packed, size_t packed_bytes, void *workspace,
                       size_t workspace_bytes) {
    if (!dims || !keys || !values || !workspace || (!weights && !packed))
        return EDGEATTN_ERR_NULL_POINTER;
    edgeattn_kv_cache c;
    if (edgeattn_status st = read_cache(cache, c)) return st;
    const edgeattn_attention_dims d = *dims;
    const size_t sizes[3] = {d.key_size, d.value_size, tokens};
    if (edgeattn_status st = check_cache_dims(c, d, sizes, 3)) return st;
    mha_weights_view w;
    if (edgeattn_status st = view_weights(d, weights, packed, packed_bytes, key_value_projections, w))
        return st;
    size_t key_count = 0, value_count = 0;
    if (edgeattn_status st = count_append(d, tokens, key_count, value_count)) return st;
    const size_t kv_h = kv_hiddens_of(d);
    const kv_append_layout l = make_kv_append_layout(d.batch, tokens, d.key_size, d.value_size, kv_h);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(keys) || !is_float_aligned(values) || !is_float_aligned(workspace))
        return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < w.num_spans; ++i)
        if (!is_element_aligned(w.spans[i])) return EDGEATTN_ERR_MISALIGNED;
    if (workspace_bytes < l.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    // Every batch element checked before any is written: one that does not
    // fit refuses the whole append.
    for (size_t b = 0; b < d.batch; ++b)
        if (tokens > c.capacity - static_cast<size_t>(c.lengths[b])) return EDGEATTN_ERR_CACHE_FULL;
    tensor_span inputs[10] = {{keys, key_count}, {values, value_count}};
    size_t num_inputs = 2;
    for (size_t i = 0; i < w.num_spans; ++i) inputs[num_inputs++] = w.spans[i];
    tensor_span outputs[cache_span_count + 1];
    cache_spans(c, outputs);
    outputs[cache_span_count] = {workspace, workspace_bytes / sizeof(float)};
    if (edgeattn_status st = check_disjoint(outputs, cache_span_count + 1, inputs, num_inputs)) return st;

    const kernel_table &k = active_kernels();
    float *ws = static_cast<float *>(workspace);
    float *K = ws + l.projected_keys, *V = ws + l.projected_values;  // (B, T, h_kv) each
    float *scratch = ws + l.packed_weights;
    project(k, w, key_projection, d.batch * tokens, d.key_size, kv_h, keys, K, scratch);
    project(k, w, value_projection, d.batch * tokens, d.value_size, kv_h, values, V, scratch);

    // Token t's head g (columns g*head_size of the projection) goes to
    // position lengths[b] + t of cache head (b, g).
    const size_t heads = c.num_kv_heads, head_size = c.head_size, cap = c.capacity;
    for (size_t b = 0; b < d.batch; ++b) {
        const size_t start = static_cast<size_t>(c.lengths[b]);
        for (size_t g = 0; g < heads; ++g)
            for (size_t t = 0; t < tokens; ++t) {
                const size_t from = (b * tokens + t) * kv_h + g * head_size;
                const size_t position = (b * heads + g) * cap + start + t;
                store_row(c, c.stored_keys, c.key_scales, position * head_size, position, K + from, head_size);
                store_row(c, c.stored_values, c.value_scales, position * head_size, position, V + from,
                          head_size);
            }
        c.lengths[b] = static_cast<int32_t>(start + tokens);
    }
    return EDGEATTN_OK;
}

// Between the heads' layout (B, Q, H, head_size) and the grouped one
// (B, H_kv, Q, group, head_size): gather (to_groups) or scatter back.
void regroup_heads(float *by_head, float *by_group, size_t batch, size_t queries, size_t heads,
                   size_t group, size_t head_size, bool to_groups) {
    const size_t kv_heads = heads / group;
    for (size_t b = 0; b < batch; ++b)
        for (size_t t = 0; t < queries; ++t)
            for (size_t j = 0; j < heads; ++j) {
                float *a = by_head + ((b * queries + t) * heads + j) * head_size;
                float *g = by_group + (((b * kv_heads + j / group) * queries + t) * group + j % group) * head_size;
                if (to_groups)
                    memcpy(g, a, head_size * sizeof(float));
                else
                    memcpy(a, g, head_size * sizeof(float));
            }
}

kv_attention_layout attention_layout(const edgeattn_attention_dims &d, size_t capacity,
                                     size_t threads) {
    return make_kv_attention_layout(d.batch, d.queries, capacity, d.query_size, d.num_hiddens,
                                    d.num_heads, kv_heads_of(d), threads);
}

// As append: `weights` already copied; the cache struct, the dims and the
// mask are read into locals here, before anything is written.
edgeattn_status attention(const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims,
                          const float *queries, const edgeattn_attention_mask *mask_in,
                          const edgeattn_mha_typed_weights *weights, const void *packed,
                          size_t packed_bytes, void *workspace, size_t workspace_bytes,
                          float *output, float *attention_weights) {
    if (!dims || !queries || !workspace || !output || (!weights && !packed))
        return EDGEATTN_ERR_NULL_POINTER;
    edgeattn_kv_cache c;
    if (edgeattn_status st = read_cache(cache, c)) return st;
    const edgeattn_attention_dims d = *dims;
    edgeattn_attention_mask mask_copy;
    if (mask_in) memcpy(&mask_copy, mask_in, sizeof mask_copy);
    const size_t sizes[2] = {d.queries, d.query_size};
    if (edgeattn_status st = check_cache_dims(c, d, sizes, 2)) return st;
    const size_t cap = c.capacity;
    if (d.keys != 0 && d.keys != cap) return EDGEATTN_ERR_BAD_CACHE;
    mha_weights_view w;
    if (edgeattn_status st =
            view_weights(d, weights, packed, packed_bytes, query_output_projections, w))
        return st;
    const size_t h = d.num_hiddens, heads = d.num_heads, head_size = h / heads;
    cache_attention_counts counts;
    if (edgeattn_status st = count_attention(d, cap, counts)) return st;
    attention_mask_view mask;
    tensor_span inputs[16] = {{queries, counts.queries}};
    size_t num_inputs = 1, num_mask_spans = 0;
    if (edgeattn_status st = check_attention_mask(mask_in ? &mask_copy : nullptr, d.batch, d.queries, heads, cap,
                                                  mask, inputs + num_inputs, num_mask_spans))
        return st;
    num_inputs += num_mask_spans;
    const kv_attention_layout one = attention_layout(d, cap, 1);
    if (one.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    const void *floats[] = {queries, output, attention_weights, workspace};
    for (const void *p : floats)
        if (p && !is_float_aligned(p)) return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < w.num_spans; ++i)
        if (!is_element_aligned(w.spans[i])) return EDGEATTN_ERR_MISALIGNED;
    if (workspace_bytes < one.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    for (size_t i = 0; i < w.num_spans; ++i) inputs[num_inputs++] = w.spans[i];
    cache_spans(c, inputs + num_inputs);
    num_inputs += cache_span_count;
    const tensor_span outputs[3] = {{output, counts.output},
                                    {attention_weights, attention_weights ? counts.weights : 0},
                                    {workspace, workspace_bytes / sizeof(float)}};
    if (edgeattn_status st = check_disjoint(outputs, 3, inputs, num_inputs)) return st;

    const kernel_table &k = active_kernels();
    float *ws = static_cast<float *>(workspace);
    float *Q = ws + one.projected_queries;           // (B, Q, h): head j is columns j*h/H ...
    float *heads_out = ws + one.concatenated_heads;  // (B, Q, h)
    float *scratch = ws + one.packed_weights;
    project(k, w, query_projection, d.batch * d.queries, d.query_size, h, queries, Q, scratch);

    const size_t kv_heads = c.num_kv_heads, group = heads / kv_heads;
    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
    const float flops_per_row = 4.0f * cap * head_size;
    if (one.grouped && !attention_weights) {
        // Slice (b, g): the group's query heads gathered as rows (query t,
        // head r: row t * group + r), one pass over cache head (b, g).
        float *gathered = ws + one.grouped_queries, *gathered_out = ws + one.grouped_heads;
        const size_t rows = d.queries * group;
        regroup_heads(Q, gathered, d.batch, d.queries, heads, group, head_size, true);
        parallel_row_blocks(d.batch * kv_heads, rows, slots, flops_per_row, ws, one.scratch,
                            [&](size_t slice, size_t row0, size_t block_rows, const scratch_slot &slot) {
            const size_t b = slice / kv_heads, g = slice % kv_heads;
            const size_t length = static_cast<size_t>(c.lengths[b]);
            float *out = gathered_out + slice * rows * head_size;
            if (length == 0) {
                for (size_t i = row0 * head_size; i < (row0 + block_rows) * head_size; ++i) out[i] = 0.0f;
                return;
            }
            const size_t cached = slice * cap * head_size;
            attention_slice s{gathered + slice * rows * head_size, head_size, (c.keys ? c.keys + cached : nullptr),
                              head_size, (c.values ? c.values + cached : nullptr), head_size, out, head_size, nullptr,
                              0, rows, length, head_size, head_size, b, g * group};
            s.group = group;
            read_cache_head(s, c, slice);
            dot_product_attention_block(k, s, row0, block_rows, mask, slot);
        });
        regroup_heads(heads_out, gathered_out, d.batch, d.queries, heads, group, head_size, false);
    } else {
        // Slice (b, j): query head j of batch element b over its lengths[b]
        // cached positions of key/value head j / group.
        parallel_row_blocks(d.batch * heads, d.queries, slots, flops_per_row, ws, one.scratch,
                            [&](size_t slice, size_t row0, size_t rows, const scratch_slot &slot) {
            const size_t b = slice / heads, head = slice % heads, column = head * head_size;
            const size_t length = static_cast<size_t>(c.lengths[b]);
            const size_t cached = ((b * kv_heads + head / group) * cap) * head_size;
            float *out = heads_out + (b * d.queries + row0) * h + column;
            float *weights_rows =
                attention_weights ? attention_weights + (slice * d.queries + row0) * cap : nullptr;
            if (length == 0) {  // nothing cached: the head contributes zeros
                for (size_t r = 0; r < rows; ++r)
                    for (size_t col = 0; col < head_size; ++col) out[r * h + col] = 0.0f;
            } else {
                attention_slice s{Q + b * d.queries * h + column, h, (c.keys ? c.keys + cached : nullptr),
                                  head_size, (c.values ? c.values + cached : nullptr), head_size,
                                  heads_out + b * d.queries * h + column, h,
                                  attention_weights ? attention_weights + slice * d.queries * cap
                                                    : nullptr,
                                  cap, d.queries, length, head_size, head_size, b, head};
                read_cache_head(s, c, b * kv_heads + head / group);
                dot_product_attention_block(k, s, row0, rows, mask, slot);
            }
            if (weights_rows)  // positions not (yet) cached weigh 0
                for (size_t r = 0; r < rows; ++r)
                    for (size_t j = length; j < cap; ++j) weights_rows[r * cap + j] = 0.0f;
        });
    }
    project(k, w, output_projection, d.batch * d.queries, h, h, heads_out, output, scratch);
    return EDGEATTN_OK;
}

}  // namespace

extern "C" size_t edgeattn_kv_cache_typed_size(size_t batch, size_t num_kv_heads, size_t head_size,
                                               size_t capacity, edgeattn_weight_type storage) {
    if (batch == 0 || num_kv_heads == 0 || head_size == 0 || capacity == 0 ||
        capacity > INT32_MAX || !known_type(storage))
        return 0;
    return make_kv_cache_layout(batch, num_kv_heads, head_size, capacity, element_bytes(storage)).bytes;
}

extern "C" size_t edgeattn_kv_cache_size(size_t batch, size_t num_kv_heads, size_t head_size,
                                         size_t capacity) {
    return edgeattn_kv_cache_typed_size(batch, num_kv_heads, head_size, capacity, EDGEATTN_WEIGHTS_F32);
}

extern "C" edgeattn_status edgeattn_kv_cache_init_typed(edgeattn_kv_cache *cache, size_t batch,
                                                        size_t num_kv_heads, size_t head_size,
                                                        size_t capacity, edgeattn_weight_type storage,
                                                        void *memory, size_t memory_bytes) {
    if (!cache || !memory) return EDGEATTN_ERR_NULL_POINTER;
    if (batch == 0 || num_kv_heads == 0 || head_size == 0 || capacity == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    if (!known_type(storage)) return EDGEATTN_ERR_BAD_WEIGHT_TYPE;
    const kv_cache_layout l =
        make_kv_cache_layout(batch, num_kv_heads, head_size, capacity, element_bytes(storage));
    if (capacity > INT32_MAX || l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(memory)) return EDGEATTN_ERR_MISALIGNED;
    if (memory_bytes < l.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    if (spans_overlap(cache, sizeof *cache, memory, l.bytes)) return EDGEATTN_ERR_OVERLAP;
    float *floats = static_cast<float *>(memory);
    edgeattn_kv_cache c;
    memset(&c, 0, sizeof c);
    c.storage = static_cast<uint32_t>(storage);
    c.batch = batch;
    c.num_kv_heads = num_kv_heads;
    c.head_size = head_size;
    c.capacity = capacity;
    c.stored_keys = floats + l.keys;
    c.stored_values = floats + l.values;
    if (storage == EDGEATTN_WEIGHTS_F32) {
        c.keys = floats + l.keys;
        c.values = floats + l.values;
    }
    if (storage == EDGEATTN_WEIGHTS_INT8) {
        c.key_scales = floats + l.key_scales;
        c.value_scales = floats + l.value_scales;
    }
    c.lengths = reinterpret_cast<int32_t *>(floats + l.lengths);
    c.magic = check_value(c);
    for (size_t b = 0; b < batch; ++b) c.lengths[b] = 0;
    *cache = c;
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_kv_cache_init(edgeattn_kv_cache *cache, size_t batch,
                                                  size_t num_kv_heads, size_t head_size,
                                                  size_t capacity, void *memory,
                                                  size_t memory_bytes) {
    return edgeattn_kv_cache_init_typed(cache, batch, num_kv_heads, head_size, capacity, EDGEATTN_WEIGHTS_F32,
                                        memory, memory_bytes);
}

extern "C" edgeattn_status edgeattn_kv_cache_reset(edgeattn_kv_cache *cache) {
    edgeattn_kv_cache c;
    if (edgeattn_status st = read_cache(cache, c)) return st;
    for (size_t b = 0; b < c.batch; ++b) c.lengths[b] = 0;
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_kv_cache_truncate(edgeattn_kv_cache *cache, size_t batch_index,
                                                      size_t length) {
    edgeattn_kv_cache c;
    if (edgeattn_status st = read_cache(cache, c)) return st;
    if (batch_index >= c.batch || length > static_cast<size_t>(c.lengths[batch_index]))
        return EDGEATTN_ERR_BAD_CACHE;
    c.lengths[batch_index] = static_cast<int32_t>(length);
    return EDGEATTN_OK;
}

extern "C" size_t edgeattn_kv_cache_append_workspace_size(const edgeattn_attention_dims *dims,
                                                          size_t tokens, size_t max_threads) {
    (void)max_threads;  // the projections need no per-thread scratch
    if (!dims) return 0;
    const edgeattn_attention_dims d = *dims;
    const size_t sizes[3] = {d.key_size, d.value_size, tokens};
    size_t key_count = 0, value_count = 0;
    if (check_call_dims(d, sizes, 3) != EDGEATTN_OK || count_append(d, tokens, key_count, value_count) != EDGEATTN_OK)
        return 0;
    return make_kv_append_layout(d.batch, tokens, d.key_size, d.value_size, kv_hiddens_of(d)).bytes;
}

extern "C" edgeattn_status edgeattn_kv_cache_append(edgeattn_kv_cache *cache,
                                                    const edgeattn_attention_dims *dims,
                                                    size_t tokens, const float *keys,
                                                    const float *values,
                                                    const edgeattn_mha_weights *weights,
                                                    void *workspace, size_t workspace_bytes) {
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_mha_typed_weights typed = as_typed(*weights);
    return append(cache, dims, tokens, keys, values, &typed, nullptr, 0, workspace, workspace_bytes);
}

extern "C" edgeattn_status edgeattn_kv_cache_append_typed(edgeattn_kv_cache *cache,
                                                          const edgeattn_attention_dims *dims,
                                                          size_t tokens, const float *keys,
                                                          const float *values,
                                                          const edgeattn_mha_typed_weights *weights,
                                                          void *workspace, size_t workspace_bytes) {
    edgeattn_mha_typed_weights typed;
    if (edgeattn_status st = copy_typed_weights(weights, key_value_projections, typed)) return st;
    return append(cache, dims, tokens, keys, values, &typed, nullptr, 0, workspace, workspace_bytes);
}

extern "C" edgeattn_status edgeattn_kv_cache_append_packed(
    edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, size_t tokens, const float *keys,
    const float *values, const void *packed, size_t packed_bytes, void *workspace,
    size_t workspace_bytes) {
    if (!packed) return EDGEATTN_ERR_NULL_POINTER;
    return append(cache, dims, tokens, keys, values, nullptr, packed, packed_bytes, workspace,
                  workspace_bytes);
}

extern "C" size_t edgeattn_kv_cache_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                             size_t max_threads) {
    if (!dims) return 0;
    const edgeattn_attention_dims d = *dims;
    const size_t sizes[2] = {d.queries, d.query_size};
    // keys 0, which the call takes as the cache's capacity: the size for the
    // largest capacity a cache can have, which serves every smaller one (the
    // layout grows with the capacity up to one key block, then stays).
    const size_t capacity = d.keys ? d.keys : INT32_MAX;
    cache_attention_counts counts;
    if (check_call_dims(d, sizes, 2) != EDGEATTN_OK || capacity > INT32_MAX ||
        count_attention(d, d.keys ? d.keys : 1, counts) != EDGEATTN_OK)
        return 0;
    return attention_layout(d, capacity, max_threads).bytes;
}

extern "C" edgeattn_status edgeattn_kv_cache_attention(const edgeattn_kv_cache *cache,
                                                       const edgeattn_attention_dims *dims,
                                                       const float *queries,
                                                       const edgeattn_attention_mask *mask,
                                                       const edgeattn_mha_weights *weights,
                                                       void *workspace, size_t workspace_bytes,
                                                       float *output, float *attention_weights) {
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_mha_typed_weights typed = as_typed(*weights);
    return attention(cache, dims, queries, mask, &typed, nullptr, 0, workspace, workspace_bytes,
                     output, attention_weights);
}

extern "C" edgeattn_status edgeattn_kv_cache_attention_typed(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const edgeattn_attention_mask *mask, const edgeattn_mha_typed_weights *weights, void *workspace,
    size_t workspace_bytes, float *output, float *attention_weights) {
    edgeattn_mha_typed_weights typed;
    if (edgeattn_status st = copy_typed_weights(weights, query_output_projections, typed)) return st;
    return attention(cache, dims, queries, mask, &typed, nullptr, 0, workspace, workspace_bytes,
                     output, attention_weights);
}

extern "C" edgeattn_status edgeattn_kv_cache_attention_packed(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const edgeattn_attention_mask *mask, const void *packed, size_t packed_bytes, void *workspace,
    size_t workspace_bytes, float *output, float *attention_weights) {
    if (!packed) return EDGEATTN_ERR_NULL_POINTER;
    return attention(cache, dims, queries, mask, nullptr, packed, packed_bytes, workspace,
                     workspace_bytes, output, attention_weights);
}
