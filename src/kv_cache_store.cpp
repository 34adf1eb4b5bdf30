// C entry points of a KV cache store: a decode step projects its new
// tokens' keys and values and writes them, in the cache's storage type, at
// the end of every batch element's cache.
#include <string.h>

#include "attention_options.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/kv_cache.h"
#include "half_io.hpp"
#include "kernels/half.hpp"
#include "kernels/int8_scale.hpp"
#include "kv_cache_checks.hpp"
#include "mha_weights.hpp"
#include "op_workspace.hpp"
#include "rope_rotate.hpp"

using namespace edgeattn::detail;

namespace {

// Element counts of an append's inputs (B, T, key_size) and (B, T, value_size).
edgeattn_status count_append(const edgeattn_attention_dims &d, size_t tokens, size_t &keys, size_t &values) {
    if (edgeattn_status st = tensor_count(keys, d.batch, tokens, d.key_size)) return st;
    return tensor_count(values, d.batch, tokens, d.value_size);
}

// Writes n floats of a token's head into the cache at element `at` (and, for
// int8, its scale at position `position`): fp32 as they are, binary16
// rounded to nearest even (beyond +-65504: +-inf, as IEEE converts), int8
// by the rule of kernels/int8_scale.hpp (a row with NaN or +-inf: NaN).
void store_row(const edgeattn_kv_cache &cache, void *stored, float *scales, size_t at, size_t position,
               const float *x, size_t n) {
    switch (storage_of(cache)) {
        case EDGEATTN_DTYPE_F16: {
            active_kernels().round_half(x, n, static_cast<uint16_t *>(stored) + at);
            return;
        }
        case EDGEATTN_DTYPE_INT8:
            scales[position] = quantize_int8_row(x, n, static_cast<int8_t *>(stored) + at);
            return;
        default: memcpy(static_cast<float *>(stored) + at, x, n * sizeof(float));
    }
}

// The row of the token at stream position p: in order up to the capacity,
// then (a window cache) around the ring after the sinks.
size_t row_of(const edgeattn_kv_cache &c, size_t p) {
    return p < c.capacity ? p : c.sinks + (p - c.sinks) % c.window;
}

// `weights` is the caller's descriptor already copied (`none`: its
// projections given as EDGEATTN_DTYPE_NONE); every other argument given by
// pointer (the cache struct, the dims) is read into a local here, before
// anything is written.
// The fp32 copies of fp16 keys (B, T, key_size) and values (B, T, value_size).
edgeattn_status staging_for(const edgeattn_attention_dims &d, size_t tokens, bool half, size_t &key_count,
                            size_t &value_count, half_staging &s) {
    if (edgeattn_status st = count_append(d, tokens, key_count, value_count)) return st;
    const size_t counts[5] = {key_count, value_count, 0, 0, 0};
    s = make_half_staging(half, counts);
    return EDGEATTN_OK;
}

edgeattn_status append(edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, size_t tokens,
                       const float *keys, const float *values, const edgeattn_weights *weights,
                       unsigned none, const void *packed, size_t packed_bytes, const edgeattn_rope *rope,
                       bool half, void *workspace, size_t workspace_bytes) {
    if (!dims || !keys || !values || !workspace || (!weights && !packed))
        return EDGEATTN_ERR_NULL_POINTER;
    edgeattn_kv_cache c;
    if (edgeattn_status st = read_cache(cache, c)) return st;
    const edgeattn_attention_dims d = *dims;
    const size_t sizes[3] = {d.key_size, d.value_size, tokens};
    if (edgeattn_status st = check_cache_dims(c, d, sizes, 3)) return st;
    const size_t kv_h = kv_hiddens_of(d), kv_vh = kv_value_hiddens_of(d);
    if (weights) {
        const size_t in[4] = {0, d.key_size, d.value_size, 0}, out[4] = {0, kv_h, kv_vh, 0};
        if (edgeattn_status st = check_unprojected(*weights, none, in, out)) return st;
    }
    mha_weights_view w;
    if (edgeattn_status st =
            view_weights(d, weights, packed, packed_bytes, key_value_projections & ~none, w))
        return st;
    size_t key_count = 0, value_count = 0;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, tokens, half, key_count, value_count, staging)) return st;
    rope_view rv;
    if (edgeattn_status st = read_rope(rope, c.head_size, d.batch, rv)) return st;
    const kv_append_layout l = make_kv_append_layout(d.batch, tokens, d.key_size, d.value_size, kv_h, kv_vh);
    const size_t required = with_staging(staging, l.bytes);
    if (required == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    const size_t io_bytes = io_element_bytes(half);
    if (reinterpret_cast<uintptr_t>(keys) % io_bytes != 0 || reinterpret_cast<uintptr_t>(values) % io_bytes != 0 ||
        !is_float_aligned(workspace))
        return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < w.num_spans; ++i)
        if (!is_element_aligned(w.spans[i])) return EDGEATTN_ERR_MISALIGNED;
    if (workspace_bytes < required) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    // Every batch element checked before any is written: one that does not
    // fit refuses the whole append. A window cache never fills; its
    // positions stay int32.
    for (size_t b = 0; b < d.batch; ++b)
        if (c.window ? tokens > static_cast<size_t>(INT32_MAX - c.positions[b])
                     : tokens > c.capacity - static_cast<size_t>(c.lengths[b]))
            return EDGEATTN_ERR_CACHE_FULL;
    // Keys rotate at their stream positions (or the rope's own).
    if (edgeattn_status st = check_rope_positions(rv, tokens, c.positions, 0)) return st;
    tensor_span inputs[12] = {{keys, key_count, io_bytes}, {values, value_count, io_bytes}, rv.table_span(),
                              rv.positions_span()};
    size_t num_inputs = 4;
    for (size_t i = 0; i < w.num_spans; ++i) inputs[num_inputs++] = w.spans[i];
    tensor_span outputs[cache_span_count + 1];
    cache_spans(c, outputs);
    outputs[cache_span_count] = {workspace, workspace_bytes / sizeof(float)};
    if (edgeattn_status st = check_disjoint(outputs, cache_span_count + 1, inputs, num_inputs)) return st;

    // The rows that go into the cache, (B, T, h_kv) each: projected into
    // the workspace, or (NONE) the caller's rows as given.
    // fp16 inputs: widened into their fp32 copies before the op's own
    // workspace, which starts after them.
    const kernel_table &k = active_kernels();
    float *copies = static_cast<float *>(workspace);
    float *ws = copies + staging.floats;
    if (with_half && half) {
        widen_half(keys, key_count, copies + staging.offset[0]);
        widen_half(values, value_count, copies + staging.offset[1]);
        keys = copies + staging.offset[0];
        values = copies + staging.offset[1];
    }
    float *scratch = ws + l.packed_weights;
    const size_t threads = scratch_slots(required, floats_per_cache_line, workspace_bytes);
    const float *K_rows = keys, *V_rows = values;
    if (!(none >> key_projection & 1u)) {
        project(k, w, key_projection, d.batch * tokens, d.key_size, kv_h, keys, ws + l.projected_keys, scratch,
                threads);
        K_rows = ws + l.projected_keys;
    }
    if (!(none >> value_projection & 1u)) {
        project(k, w, value_projection, d.batch * tokens, d.value_size, kv_vh, values, ws + l.projected_values,
                scratch, threads);
        V_rows = ws + l.projected_values;
    }
    // Keys rotated in the workspace (given rows copied there first).
    K_rows = rotate_batch(rv, K_rows, ws + l.projected_keys, d.batch, tokens, c.num_kv_heads, c.head_size,
                          c.positions, 0);

    // Token t's head g (columns g*head_size of the rows) goes to the row of
    // stream position positions[b] + t of cache head (b, g). In a window
    // cache a token whose row a later token of this call takes again
    // (p + W among them, past the sinks) is not written.
    const size_t heads = c.num_kv_heads, head_size = c.head_size, value_head = c.value_head_size;
    const size_t cap = c.capacity;
    for (size_t b = 0; b < d.batch; ++b) {
        const size_t start = static_cast<size_t>(c.positions[b]), end = start + tokens;
        for (size_t g = 0; g < heads; ++g)
            for (size_t t = 0; t < tokens; ++t) {
                if (c.window && start + t >= c.sinks && start + t + c.window < end) continue;
                const size_t token = b * tokens + t;
                const size_t position = (b * heads + g) * cap + row_of(c, start + t);
                store_row(c, c.stored_keys, c.key_scales, position * head_size, position,
                          K_rows + token * kv_h + g * head_size, head_size);
                store_row(c, c.stored_values, c.value_scales, position * value_head, position,
                          V_rows + token * kv_vh + g * value_head, value_head);
            }
        c.lengths[b] = static_cast<int32_t>(end < cap ? end : cap);
        c.positions[b] = static_cast<int32_t>(end);
    }
    return EDGEATTN_OK;
}

}  // namespace

edgeattn_status edgeattn::detail::kv_store_workspace_bytes(const edgeattn_attention_dims &d,
                                                           size_t tokens, size_t max_threads, bool half,
                                                           size_t &bytes) {
    const size_t sizes[3] = {d.key_size, d.value_size, tokens};
    size_t key_count = 0, value_count = 0;
    if (edgeattn_status st = check_call_dims(d, sizes, 3)) return st;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, tokens, half, key_count, value_count, staging)) return st;
    const size_t one = with_staging(staging, make_kv_append_layout(d.batch, tokens, d.key_size, d.value_size,
                                                                   kv_hiddens_of(d), kv_value_hiddens_of(d))
                                                 .bytes);
    // The projections' threads share the scratch: a cache line each past the first.
    return one && add_thread_lines(one, max_threads, bytes) ? EDGEATTN_OK : EDGEATTN_ERR_SIZE_OVERFLOW;
}

// A store takes no mask or valid lengths: given, they are refused rather
// than ignored. Its rope rotates the keys.
extern "C" edgeattn_status edgeattn_kv_cache_store(edgeattn_kv_cache *cache,
                                                   const edgeattn_attention_dims *dims,
                                                   size_t tokens, const float *keys,
                                                   const float *values,
                                                   const edgeattn_weights *weights,
                                                   const edgeattn_attention_options *options,
                                                   void *workspace, size_t workspace_bytes) {
    edgeattn_weights typed;
    unsigned none = 0;
    if (edgeattn_status st = copy_typed_weights(weights, key_value_projections, typed, none)) return st;
    bool half = false;
    if (edgeattn_status st = read_tensor_type(options, half)) return st;
    if (has_valid_lens(options) || has_mask(options) || has_score_options(options))
        return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    return append(cache, dims, tokens, keys, values, &typed, none, nullptr, 0, rope_of(options), half, workspace,
                  workspace_bytes);
}

extern "C" edgeattn_status edgeattn_kv_cache_store_packed(
    edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, size_t tokens, const float *keys,
    const float *values, const void *packed, size_t packed_bytes,
    const edgeattn_attention_options *options, void *workspace, size_t workspace_bytes) {
    if (!packed) return EDGEATTN_ERR_NULL_POINTER;
    bool half = false;
    if (edgeattn_status st = read_tensor_type(options, half)) return st;
    if (has_valid_lens(options) || has_mask(options) || has_score_options(options))
        return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    return append(cache, dims, tokens, keys, values, nullptr, 0, packed, packed_bytes, rope_of(options), half,
                  workspace, workspace_bytes);
}
