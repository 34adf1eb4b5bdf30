#include "attention_mask.hpp"

namespace edgeattn {
namespace detail {

int64_t attention_mask_view::position(size_t b, size_t i, size_t queries, size_t keys) const {
    size_t last = keys;  // BOTTOM_RIGHT: the queries end at the last key
    if (alignment == EDGEATTN_ALIGN_TOP_LEFT) last = queries;
    else if (alignment == EDGEATTN_ALIGN_VALID_END) last = lens.of_row(b, i, keys);
    return static_cast<int64_t>(i + last) - static_cast<int64_t>(queries);
}

key_interval attention_mask_view::of_row(size_t b, size_t i, size_t queries, size_t keys) const {
    // Valid lengths alone (d2l's masks, or none): the row's position is not
    // needed, and the answer costs no more than the call (the general rule
    // is a tail call, its register saves paid only there).
    if (!positioned()) return {0, lens.of_row(b, i, keys)};
    return of_positioned_row(b, i, queries, keys);
}

key_interval attention_mask_view::of_positioned_row(size_t b, size_t i, size_t queries, size_t keys) const {
    size_t lo = 0, hi = lens.of_row(b, i, keys);
    if (ranges) {
        const int32_t *r = ranges + 2 * (b * ranges_batch_stride + i * ranges_query_stride);
        lo = static_cast<size_t>(r[0]);  // checked: 0 <= start <= end
        if (static_cast<size_t>(r[1]) < hi) hi = static_cast<size_t>(r[1]);
    }
    const int64_t p = position(b, i, queries, keys);
    const size_t end = p >= 0 ? static_cast<size_t>(p) + 1 : 0;  // one past j = p_i
    // Causal (j <= p_i) and a right window (j < p_i + r) keep the keys
    // before a point, the nearer of the two. A wrapped window cache counts
    // by stream position (its queries lie at the end): a point below the
    // sinks by index keeps the sinks before it by stream position.
    const bool by_stream = stream && alignment != EDGEATTN_ALIGN_TOP_LEFT;
    if (causal || right_window) {
        // p_i >= -Q, so an r past K + Q keeps every key (and, so cut, fits an int64)
        size_t r = right_window;
        if (sizeof(size_t) >= sizeof(int64_t) && r > keys + queries) r = keys + queries;
        const int64_t reach = p + (causal ? 1 : static_cast<int64_t>(r));  // one past the last key kept
        const size_t before = by_stream && reach < static_cast<int64_t>(stream->sinks)
                                  ? stream->keys_before(*stream, b, reach)
                              : reach <= 0 ? 0
                                           : static_cast<size_t>(reach);
        if (before < hi) hi = before;
    }
    if (window && end > window && end - window > lo) lo = end - window;  // j > p_i - w
    // A wrapped window cache measures the window by stream position too.
    if (window && by_stream && lo < stream->sinks) lo = stream->window_start(*stream, b, p, window, lo);
    if (lo > keys) lo = keys;
    if (hi < lo) hi = lo;
    return {lo, hi};
}

namespace {

// Whether every field of m holds zero bits: its fields, never its padding
// (which a caller's struct may leave uninitialised). Where the fields fill
// the struct (32-bit targets: eleven words), its words, a loop; else each
// field.
bool mask_unset(const edgeattn_attention_mask &m) {
    constexpr size_t field_bytes = sizeof m.causal + sizeof m.ranges_kind + sizeof m.key_ranges + sizeof m.bias +
                                   sizeof m.bias_batch + sizeof m.bias_heads + sizeof m.bias_keys + sizeof m.window +
                                   sizeof m.alignment + sizeof m.right_window + sizeof m.alibi_max_bias;
    if constexpr (field_bytes == sizeof m && sizeof m % sizeof(uint32_t) == 0) {
        const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&m);
        uint32_t any = 0;
        for (size_t i = 0; i < sizeof m; i += sizeof(uint32_t)) {
            uint32_t word = 0;
            memcpy(&word, bytes + i, sizeof word);
            any |= word;
        }
        return any == 0;
    } else {
        uint32_t alibi_bits = 0;
        memcpy(&alibi_bits, &m.alibi_max_bias, sizeof alibi_bits);
        const uint32_t small = static_cast<uint32_t>(m.causal) | static_cast<uint32_t>(enum_as_int(m.ranges_kind)) |
                               static_cast<uint32_t>(enum_as_int(m.alignment)) | alibi_bits;
        const size_t sizes = m.bias_batch | m.bias_heads | m.bias_keys | m.window | m.right_window;
        return small == 0 && sizes == 0 && !m.key_ranges && !m.bias;
    }
}

}  // namespace

edgeattn_status check_attention_mask(const edgeattn_attention_mask *mask_arg, size_t batch,
                                     size_t queries, size_t heads, size_t keys,
                                     attention_mask_view &view, tensor_span spans[2],
                                     size_t &num_spans) {
    num_spans = 0;
    view.ranges = nullptr;
    view.causal = false;
    view.window = 0;
    view.bias = nullptr;
    view.alignment = EDGEATTN_ALIGN_BOTTOM_RIGHT;
    view.right_window = 0;
    view.by_position = false;
    view.alibi_max_bias = 0.0f;
    view.alibi = nullptr;
    // No mask, the common call (every field zero, as `{}` leaves them):
    // nothing to copy or check (d2l's sdpa example, Cortex-M4F -O3: 45
    // instructions fewer). Any other bits, a negative zero too, take the
    // checks.
    if (!mask_arg || mask_unset(*mask_arg)) return EDGEATTN_OK;
    edgeattn_attention_mask given;
    read_argument(mask_arg, given);
    const edgeattn_attention_mask *mask = &given;
    view.causal = mask->causal != 0;
    view.window = mask->window;  // any size: one past every key masks nothing
    view.right_window = mask->right_window;
    view.alignment = enum_as_int(mask->alignment);
    if (view.alignment < EDGEATTN_ALIGN_BOTTOM_RIGHT || view.alignment > EDGEATTN_ALIGN_VALID_END)
        return EDGEATTN_ERR_BAD_OPTION;
    const float alibi = mask->alibi_max_bias;
    if (!(alibi >= 0.0f && alibi <= 3.402823466e38f)) return EDGEATTN_ERR_BAD_OPTION;  // NaN fails too
    if (!with_alibi && alibi > 0.0f) return EDGEATTN_ERR_NOT_BUILT;
    view.alibi_max_bias = alibi;
    view.alibi_heads = heads;
    if (with_alibi && alibi > 0.0f) view.alibi = &alibi_scores;
    const int kind = enum_as_int(mask->ranges_kind);  // a C caller may store any int there
    size_t pairs = 0;
    if (kind == EDGEATTN_KEY_RANGES_PER_BATCH) {
        pairs = batch;
        view.ranges_batch_stride = 1;
        view.ranges_query_stride = 0;
    } else if (kind == EDGEATTN_KEY_RANGES_PER_QUERY) {
        pairs = batch * queries;  // the caller checked (batch, queries, ...) sizes
        view.ranges_batch_stride = queries;
        view.ranges_query_stride = 1;
    } else if (kind != EDGEATTN_KEY_RANGES_NONE) {
        return EDGEATTN_ERR_BAD_KEY_RANGE;
    }
    if (pairs) {
        const int32_t *r = mask->key_ranges;
        if (!r) return EDGEATTN_ERR_NULL_POINTER;
        if (reinterpret_cast<uintptr_t>(r) % alignof(int32_t) != 0) return EDGEATTN_ERR_MISALIGNED;
        for (size_t p = 0; p < pairs; ++p)
            if (r[2 * p] < 0 || r[2 * p + 1] < r[2 * p]) return EDGEATTN_ERR_BAD_KEY_RANGE;
        view.ranges = r;
        spans[num_spans++] = {r, 2 * pairs};  // int32 and float have the same size
    }

    if (mask->bias && !with_mask_bias) return EDGEATTN_ERR_NOT_BUILT;
    if (with_mask_bias && mask->bias) {
        const size_t bias_batch = mask->bias_batch ? mask->bias_batch : 1;
        const size_t bias_heads = mask->bias_heads ? mask->bias_heads : 1;
        const size_t row = mask->bias_keys ? mask->bias_keys : keys;
        if ((bias_batch != 1 && bias_batch != batch) || (bias_heads != 1 && bias_heads != heads) ||
            row < keys)
            return EDGEATTN_ERR_SHAPE_MISMATCH;
        size_t count = 0;
        if (edgeattn_status st = tensor_count(count, bias_batch, bias_heads, queries, row)) return st;
        if (!is_float_aligned(mask->bias)) return EDGEATTN_ERR_MISALIGNED;
        view.bias = mask->bias;
        view.bias_row_stride = row;
        view.bias_head_stride = bias_heads == 1 ? 0 : queries * row;
        view.bias_batch_stride = bias_batch == 1 ? 0 : bias_heads * queries * row;
        spans[num_spans++] = {mask->bias, count};
    }
    view.by_position = view.ranges || view.causal || view.window || view.right_window;
    return EDGEATTN_OK;
}

}  // namespace detail
}  // namespace edgeattn
