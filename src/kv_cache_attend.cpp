// C entry points of attention over a KV cache: a decode step's queries
// attend over everything cached, each group of query heads reading its
// cache head once.
#include <string.h>

#include "attention_checks.hpp"
#include "attention_mask.hpp"
#include "attention_options.hpp"
#include "attention_rows.hpp"
#include "decode_rows.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/kv_cache.h"
#include "half_io.hpp"
#include "kv_cache_checks.hpp"
#include "mha_weights.hpp"
#include "op_workspace.hpp"
#include "parallel.hpp"
#include "rope_rotate.hpp"

using namespace edgeattn::detail;

namespace {

// Element counts of an attention call's queries (B, Q, query_size), output
// (B, Q, output_features) and weights (B, H, Q, capacity).
struct cache_attention_counts {
    size_t queries = 0, output = 0, weights = 0;
};
edgeattn_status count_attention(const edgeattn_attention_dims &d, size_t capacity, size_t output_features,
                                cache_attention_counts &c) {
    if (edgeattn_status st = tensor_count(c.queries, d.batch, d.queries, d.query_size)) return st;
    if (edgeattn_status st = tensor_count(c.output, d.batch, d.queries, output_features)) return st;
    return tensor_count(c.weights, d.batch, d.num_heads, d.queries, capacity);
}

// The fp32 copies of fp16 queries and output (as wide as the wider of h
// and hv: the workspace query does not know whether W_o is given). fp16
// attention weights are not taken.
edgeattn_status staging_for(const edgeattn_attention_dims &d, bool half, half_staging &s) {
    const size_t h = d.num_hiddens, vh = value_hiddens_of(d);
    cache_attention_counts c;
    if (edgeattn_status st = count_attention(d, 1, h > vh ? h : vh, c)) return st;
    const size_t counts[5] = {c.queries, c.output, 0, 0, 0};
    s = make_half_staging(half, counts);
    return EDGEATTN_OK;
}

// Cache head (b, g)'s rows as an attention slice reads them.
stored_rows stored_head_rows(const edgeattn_kv_cache &cache, bool values, size_t head) {
    stored_rows r;
    const size_t position = head * cache.capacity;
    const size_t element = position * (values ? cache.value_head_size : cache.head_size);
    r.type = storage_of(cache);
    r.data = static_cast<const unsigned char *>(values ? cache.stored_values : cache.stored_keys) +
             element * element_bytes(r.type);
    const float *scales = values ? cache.value_scales : cache.key_scales;
    r.scales = scales ? scales + position : nullptr;
    return r;
}

// Slice s reads cache head (b, g): its fp32 rows in place (keys and values
// already point at them), or the int8 / fp16 ones (described in `typed`,
// which must outlive the slice's reads) through stored_cache_rows.
void read_cache_head(attention_slice &s, stored_head &typed, const edgeattn_kv_cache &cache, size_t head) {
    if (storage_of(cache) == EDGEATTN_DTYPE_F32) return;
    typed.keys = stored_head_rows(cache, false, head);
    typed.values = stored_head_rows(cache, true, head);
    s.typed = &typed;
    s.stored = &stored_cache_rows;
}

// Batch element b's rows in stream order: a window cache whose ring has
// wrapped (positions past the capacity) reads its window from the oldest
// row on, which is row sinks + (position - sinks) % window, through
// ring_cache_rows (`ring` must outlive the slice's reads).
void read_ring(attention_slice &s, ring_layout &ring, const edgeattn_kv_cache &cache, size_t b) {
    const size_t position = static_cast<size_t>(cache.positions[b]);
    if (position <= cache.capacity) return;
    const size_t oldest = (position - cache.sinks) % cache.window;
    if (oldest == 0) return;  // the ring lies in order
    ring = {cache.sinks, cache.window, oldest, s.stored};
    s.ring = &ring;
    s.stored = &ring_cache_rows;
}

// Between the heads' layout (B, Q, H, head_size) and the grouped one
// (B, H_kv, Q, group, head_size): gather (to_groups: from the heads' layout
// to the groups') or scatter back.
void regroup_heads(const float *from, float *to, size_t batch, size_t queries, size_t heads,
                   size_t group, size_t head_size, bool to_groups) {
    const size_t kv_heads = heads / group;
    for (size_t b = 0; b < batch; ++b)
        for (size_t t = 0; t < queries; ++t)
            for (size_t j = 0; j < heads; ++j) {
                const size_t a = ((b * queries + t) * heads + j) * head_size;
                const size_t g = (((b * kv_heads + j / group) * queries + t) * group + j % group) * head_size;
                memcpy(to + (to_groups ? g : a), from + (to_groups ? a : g), head_size * sizeof(float));
            }
}

// A rule's end below the sinks by index (a causal query whose own token
// has left the window: reach = p + 1; a right window: p + r): no window key
// is before it, and of the sinks those before stream position
// reach + dropped are.
size_t sinks_before(const stream_causal &s, size_t b, int64_t reach) {
    const int64_t dropped = s.dropped(b);
    const int64_t upto = dropped > 0 ? reach + dropped : reach;
    return upto <= 0 ? 0 : upto < static_cast<int64_t>(s.sinks) ? static_cast<size_t>(upto) : s.sinks;
}

// A sink lies `dropped` stream positions further back than its index
// says, so a window that reaches into the sinks by index starts there by
// stream position (as causal and ALiBi count). Past the sinks, index and
// stream distance agree.
size_t sinks_window_start(const stream_causal &s, size_t b, int64_t p, size_t w, size_t lo) {
    const int64_t dropped = s.dropped(b);
    const int64_t reach = p + 1 + dropped;  // one past the query's stream position
    if (dropped <= 0 || reach <= 0 || w >= static_cast<uint64_t>(reach)) return lo;
    const size_t first = static_cast<size_t>(static_cast<uint64_t>(reach) - w);
    return first <= lo ? lo : first < s.sinks ? first : s.sinks;
}

kv_attention_layout attention_layout(const edgeattn_attention_dims &d, size_t capacity,
                                     size_t threads, bool integer) {
    return make_kv_attention_layout(d.batch, d.queries, capacity, d.query_size, d.num_hiddens,
                                    d.num_heads, kv_heads_of(d), threads, value_hiddens_of(d), integer);
}

// The int8 arithmetic's queries (codes nullptr: the fp32 arithmetic, and
// nothing to do): the query heads the slices read, `rows` rows of
// head_size floats from `from`, quantised into the layout's codes and
// scales once, before any slice runs (so a slice split over threads reads
// one quantisation).
struct quantised_queries {
    const float *from = nullptr;
    int8_t *codes = nullptr;
    float *scales = nullptr;

    void quantise(const kernel_table &k, const float *rows_from, size_t rows, size_t head_size) {
        from = rows_from;
        if (!codes) return;
        const integer_kernel_table &ik = integer_kernels_of(k);
        for (size_t r = 0; r < rows; ++r)
            scales[r] = ik.quantize_row(from + r * head_size, head_size, codes + r * head_size);
    }
    // Slice s's rows among them (s reads `from`'s rows, typed is its *s.typed).
    void read(stored_head &typed, const attention_slice &s) const {
        if (!codes) return;
        const size_t offset = static_cast<size_t>(s.queries - from);
        typed.queries = {codes + offset, scales + offset / s.d, s.query_stride / s.d};
    }
};

// As append: `weights` already copied (`none`: its projections given as
// EDGEATTN_DTYPE_NONE); the cache struct, the dims and the mask are read
// into locals here, before anything is written.
edgeattn_status attention(const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims,
                          const float *queries, const edgeattn_attention_mask *mask_in,
                          const edgeattn_attention_options *options,
                          const edgeattn_weights *weights, unsigned none, const void *packed,
                          size_t packed_bytes, const edgeattn_rope *rope, bool half, void *workspace,
                          size_t workspace_bytes, float *output, float *attention_weights) {
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
    if (d.keys != 0 && d.keys != cap) return EDGEATTN_ERR_KEYS_NOT_CAPACITY;
    const size_t h = d.num_hiddens, heads = d.num_heads, head_size = h / heads;
    const size_t vh = value_hiddens_of(d), value_head = vh / heads;
    if (weights) {
        const size_t in[4] = {d.query_size, 0, 0, vh}, out[4] = {h, 0, 0, vh};
        if (edgeattn_status st = check_unprojected(*weights, none, in, out)) return st;
    }
    mha_weights_view w;
    if (edgeattn_status st =
            view_weights(d, weights, packed, packed_bytes, query_output_projections & ~none, w))
        return st;
    const bool project_output = !(none >> output_projection & 1u);
    cache_attention_counts counts;
    if (edgeattn_status st = count_attention(d, cap, project_output ? h : vh, counts)) return st;
    // fp16 tensors take no attention weights output (its fp32 copy would
    // be sized by the capacity, which the workspace query need not know).
    if (half && attention_weights) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, half, staging)) return st;
    const size_t io_bytes = io_element_bytes(half);
    // The queries rotate as the last Q tokens stored (or at the rope's own
    // positions).
    rope_view rv;
    if (edgeattn_status st = read_rope(rope, head_size, d.batch, rv)) return st;
    const int64_t query_offset = -static_cast<int64_t>(d.queries);
    if (edgeattn_status st = check_rope_positions(rv, d.queries, c.positions, query_offset)) return st;
    attention_mask_view mask;
    tensor_span inputs[26] = {{queries, counts.queries, io_bytes}, rv.table_span(), rv.positions_span()};
    size_t num_inputs = 3, num_mask_spans = 0;
    if (edgeattn_status st = check_attention_mask(mask_in ? &mask_copy : nullptr, d.batch, d.queries, heads, cap,
                                                  mask, inputs + num_inputs, num_mask_spans))
        return st;
    num_inputs += num_mask_spans;
    if (edgeattn_status st = read_score_options(options, takes_products | takes_alibi, mask)) return st;
    if (edgeattn_status st = check_long_rows(cap, attention_weights, mask)) return st;
    const stream_causal stream{c.positions, c.sinks, cap, &sinks_before, &sinks_window_start};
    if (c.window && c.sinks) mask.stream = &stream;  // causal past a wrapped window: by stream position
    const bool integer = with_int8_arithmetic && c.arithmetic == EDGEATTN_ARITHMETIC_INT8;
    const kv_attention_layout one = attention_layout(d, cap, 1, integer);
    const size_t required = with_staging(staging, one.bytes);
    if (required == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    const void *tensors[] = {queries, output, attention_weights};
    for (const void *p : tensors)
        if (p && reinterpret_cast<uintptr_t>(p) % io_bytes != 0) return EDGEATTN_ERR_MISALIGNED;
    if (!is_float_aligned(workspace)) return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < w.num_spans; ++i)
        if (!is_element_aligned(w.spans[i])) return EDGEATTN_ERR_MISALIGNED;
    if (workspace_bytes < required) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    for (size_t i = 0; i < w.num_spans; ++i) inputs[num_inputs++] = w.spans[i];
    cache_spans(c, inputs + num_inputs);
    num_inputs += cache_span_count;
    const tensor_span outputs[3] = {{output, counts.output, io_bytes},
                                    {attention_weights, attention_weights ? counts.weights : 0},
                                    {workspace, workspace_bytes / sizeof(float)}};
    if (edgeattn_status st = check_disjoint(outputs, 3, inputs, num_inputs)) return st;

    // The projected queries (B, Q, h), head j columns j*h/H ...: in the
    // workspace, or (NONE) the caller's rows as given. The heads' outputs
    // (B, Q, h): in the workspace, or (NONE) straight in the output.
    // fp16 tensors: the queries widened into their fp32 copy, the output
    // made in its own, before the op's own workspace, which starts after
    // them.
    const kernel_table &k = active_kernels();
    float *copies = static_cast<float *>(workspace);
    float *ws = copies + staging.floats;
    workspace_bytes -= staging.floats * sizeof(float);
    float *const caller_output = output;
    if (with_half && half) {
        widen_half(queries, counts.queries, copies + staging.offset[0]);
        queries = copies + staging.offset[0];
        output = copies + staging.offset[1];
    }
    float *scratch = ws + one.packed_weights;
    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
    const float *Q = queries;
    if (!(none >> query_projection & 1u)) {
        project(k, w, query_projection, d.batch * d.queries, d.query_size, h, queries, ws + one.projected_queries,
                scratch, slots);
        Q = ws + one.projected_queries;
    }
    // Queries rotated in the workspace (given rows copied there first).
    Q = rotate_batch(rv, Q, ws + one.projected_queries, d.batch, d.queries, heads, head_size, c.positions,
                     query_offset);
    float *heads_out = project_output ? ws + one.concatenated_heads : output;
    quantised_queries quantised;
    if (integer) {
        quantised.codes = reinterpret_cast<int8_t *>(ws + one.query_codes);
        quantised.scales = ws + one.query_scales;
    }

    const size_t kv_heads = c.num_kv_heads, group = heads / kv_heads;
    const float flops_per_row = 2.0f * cap * (head_size + value_head);
    // The decode tiles take every score option, and value heads as wide
    // as the key heads.
#if defined(EDGEATTN_HAVE_DECODE_KERNELS)
    const decode_kernel_table *dk = value_head == head_size
                                        ? decode_kernels_for(k, d.queries, attention_weights != nullptr)
                                        : nullptr;
#else
    const decode_kernel_table *dk = nullptr;
#endif
    if (dk) {
        // One query token: each slice (b, g) is the group's query heads
        // (grouped), or (b, j) one head; decode_rows.hpp splits its keys.
        const kv_attention_layout two = attention_layout(d, cap, 2, integer);
        decode_workspace dws{ws, &one.scratch, one.scratch.first_slot, 1, nullptr};
        if (two.bytes && workspace_bytes >= two.bytes)  // sized for threads: room for the partials
            dws = {ws, &one.scratch, two.scratch.first_slot,
                   1 + scratch_slots(two.bytes, one.scratch.floats_per_slot, workspace_bytes), ws + two.decode_partials};
        const size_t rows = one.grouped ? group : 1, slices = one.grouped ? d.batch * kv_heads : d.batch * heads;
        float *gathered = ws + one.grouped_queries, *gathered_out = ws + one.grouped_heads;
        if (one.grouped) regroup_heads(Q, gathered, d.batch, 1, heads, group, head_size, true);
        quantised.quantise(k, one.grouped ? gathered : Q, d.batch * heads, head_size);
        decode_slices(k, *dk, slices, rows, head_size, cap, mask, dws,
                      [&](size_t slice, cache_slice_storage &storage) {
            const size_t b = slice / (slices / d.batch), head = slice % (slices / d.batch);
            const size_t kv_head = one.grouped ? head : head / group;
            const size_t cached = (b * kv_heads + kv_head) * cap * head_size;
            const float *queries_of = one.grouped ? gathered + slice * rows * head_size : Q + b * h + head * head_size;
            float *out = one.grouped ? gathered_out + slice * rows * head_size : heads_out + b * h + head * head_size;
            attention_slice s{queries_of, head_size, (c.keys ? c.keys + cached : nullptr), head_size,
                              (c.values ? c.values + cached : nullptr), head_size, out, head_size, nullptr, 0, rows,
                              static_cast<size_t>(c.lengths[b]), head_size, head_size, b,
                              one.grouped ? head * group : head};
            s.group = rows;
            read_cache_head(s, storage.typed, c, b * kv_heads + kv_head);
            quantised.read(storage.typed, s);
            read_ring(s, storage.ring, c, b);
            return s;
        });
        if (one.grouped) regroup_heads(gathered_out, heads_out, d.batch, 1, heads, group, head_size, false);
    } else if (one.grouped && !attention_weights) {
        // Slice (b, g): the group's query heads gathered as rows (query t,
        // head r: row t * group + r), one pass over cache head (b, g).
        float *gathered = ws + one.grouped_queries, *gathered_out = ws + one.grouped_heads;
        const size_t rows = d.queries * group;
        regroup_heads(Q, gathered, d.batch, d.queries, heads, group, head_size, true);
        quantised.quantise(k, gathered, d.batch * d.queries * heads, head_size);
        parallel_row_blocks(d.batch * kv_heads, rows, slots, flops_per_row, ws, one.scratch,
                            [&](size_t slice, size_t row0, size_t block_rows, const scratch_slot &slot) {
            const size_t b = slice / kv_heads, g = slice % kv_heads;
            const size_t length = static_cast<size_t>(c.lengths[b]);
            float *out = gathered_out + slice * rows * value_head;
            if (length == 0) {
                for (size_t i = row0 * value_head; i < (row0 + block_rows) * value_head; ++i) out[i] = 0.0f;
                return;
            }
            const size_t cached = slice * cap;
            attention_slice s{gathered + slice * rows * head_size, head_size,
                              (c.keys ? c.keys + cached * head_size : nullptr), head_size,
                              (c.values ? c.values + cached * value_head : nullptr), value_head, out, value_head,
                              nullptr, 0, rows, length, head_size, value_head, b, g * group};
            s.group = group;
            cache_slice_storage storage;
            read_cache_head(s, storage.typed, c, slice);
            quantised.read(storage.typed, s);
            read_ring(s, storage.ring, c, b);
            dot_product_attention_block(k, s, row0, block_rows, mask, slot);
        });
        regroup_heads(gathered_out, heads_out, d.batch, d.queries, heads, group, value_head, false);
    } else {
        // Slice (b, j): query head j of batch element b over its lengths[b]
        // cached positions of key/value head j / group.
        quantised.quantise(k, Q, d.batch * d.queries * heads, head_size);
        parallel_row_blocks(d.batch * heads, d.queries, slots, flops_per_row, ws, one.scratch,
                            [&](size_t slice, size_t row0, size_t rows, const scratch_slot &slot) {
            const size_t b = slice / heads, head = slice % heads, column = head * head_size;
            const size_t value_column = head * value_head;
            const size_t length = static_cast<size_t>(c.lengths[b]);
            const size_t cached = (b * kv_heads + head / group) * cap;
            float *out = heads_out + (b * d.queries + row0) * vh + value_column;
            float *weights_rows =
                attention_weights ? attention_weights + (slice * d.queries + row0) * cap : nullptr;
            if (length == 0) {  // nothing cached: the head contributes zeros
                for (size_t r = 0; r < rows; ++r)
                    for (size_t col = 0; col < value_head; ++col) out[r * vh + col] = 0.0f;
            } else {
                attention_slice s{Q + b * d.queries * h + column, h,
                                  (c.keys ? c.keys + cached * head_size : nullptr), head_size,
                                  (c.values ? c.values + cached * value_head : nullptr), value_head,
                                  heads_out + b * d.queries * vh + value_column, vh,
                                  attention_weights ? attention_weights + slice * d.queries * cap
                                                    : nullptr,
                                  cap, d.queries, length, head_size, value_head, b, head};
                cache_slice_storage storage;
                read_cache_head(s, storage.typed, c, b * kv_heads + head / group);
                quantised.read(storage.typed, s);
                read_ring(s, storage.ring, c, b);
                dot_product_attention_block(k, s, row0, rows, mask, slot);
            }
            if (weights_rows)  // positions not (yet) cached weigh 0
                for (size_t r = 0; r < rows; ++r)
                    for (size_t j = length; j < cap; ++j) weights_rows[r * cap + j] = 0.0f;
        });
    }
    if (project_output) project(k, w, output_projection, d.batch * d.queries, vh, h, heads_out, output, scratch, slots);
    if (with_half && half) round_to_half(output, counts.output, caller_output);
    return EDGEATTN_OK;
}

}  // namespace

edgeattn_status edgeattn::detail::kv_attend_workspace_bytes(const edgeattn_attention_dims &d,
                                                            size_t max_threads, bool half, size_t &bytes,
                                                            bool integer) {
    const size_t sizes[2] = {d.queries, d.query_size};
    if (edgeattn_status st = check_call_dims(d, sizes, 2)) return st;
    // keys 0, which the call takes as the cache's capacity: the size for the
    // largest capacity a cache can have, which serves every smaller one (the
    // layout grows with the capacity up to one key block, then stays).
    const size_t capacity = d.keys ? d.keys : INT32_MAX;
    if (capacity > INT32_MAX) return EDGEATTN_ERR_SIZE_OVERFLOW;  // no cache holds more
    cache_attention_counts counts;
    if (edgeattn_status st = count_attention(d, d.keys ? d.keys : 1, d.num_hiddens, counts)) return st;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, half, staging)) return st;
    bytes = with_staging(staging, attention_layout(d, capacity, max_threads, integer).bytes);
    return bytes ? EDGEATTN_OK : EDGEATTN_ERR_SIZE_OVERFLOW;
}

// The cache's lengths are its valid lengths: valid_lens is refused rather
// than ignored.
extern "C" edgeattn_status edgeattn_kv_cache_attend(const edgeattn_kv_cache *cache,
                                                    const edgeattn_attention_dims *dims,
                                                    const float *queries,
                                                    const edgeattn_weights *weights,
                                                    const edgeattn_attention_options *options,
                                                    void *workspace, size_t workspace_bytes,
                                                    float *output, float *attention_weights) {
    edgeattn_weights typed;
    unsigned none = 0;
    if (edgeattn_status st = copy_typed_weights(weights, query_output_projections, typed, none)) return st;
    bool half = false;
    if (edgeattn_status st = read_tensor_type(options, half)) return st;
    if (has_valid_lens(options)) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    return attention(cache, dims, queries, mask_of(options), options, &typed, none, nullptr, 0, rope_of(options),
                     half, workspace, workspace_bytes, output, attention_weights);
}

extern "C" edgeattn_status edgeattn_kv_cache_attend_packed(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const void *packed, size_t packed_bytes, const edgeattn_attention_options *options,
    void *workspace, size_t workspace_bytes, float *output, float *attention_weights) {
    if (!packed) return EDGEATTN_ERR_NULL_POINTER;
    bool half = false;
    if (edgeattn_status st = read_tensor_type(options, half)) return st;
    if (has_valid_lens(options)) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    return attention(cache, dims, queries, mask_of(options), options, nullptr, 0, packed, packed_bytes,
                     rope_of(options), half,
                     workspace, workspace_bytes, output, attention_weights);
}
