// Workspace layouts of the ops: where each scratch buffer starts, in floats.
//
// One set of constexpr functions serves both API levels: the C API's
// *_workspace_size() and the member arrays of the C++ fixed-size modules, so
// the two can never disagree. Every size is a pure function of the shapes and
// the thread count (never of the CPU or the build), as DESIGN.md asks.
#ifndef EDGEATTN_DETAIL_WORKSPACE_LAYOUT_HPP
#define EDGEATTN_DETAIL_WORKSPACE_LAYOUT_HPP

#include <stddef.h>
#include <stdint.h>

namespace edgeattn {
namespace detail {

// Attention works on blocks of this many query rows against blocks of this
// many keys; each thread owns the scratch of one (query block, key block).
// Every query block repacks the keys and values it reads, so tall blocks pay
// for the packing: MHA (1,512,512,8) ran at 101, 120 and 170 GFLOP/s with
// 32, 128 and 256 rows (bench/NOTES.md).
constexpr size_t rows_per_block = 256;
constexpr size_t keys_per_block = 256;

// Matrix products pack their right-hand side in panels of at most this many
// columns (the widest path's NR, AVX-512's 32); sizes assume it on every path.
constexpr size_t max_panel_width = 32;

// Small problems get blocks no larger than themselves, so a microcontroller
// pays only for what its shapes need.
constexpr size_t key_block_for(size_t keys) { return keys < keys_per_block ? keys : keys_per_block; }
constexpr size_t row_block_for(size_t queries) {
    return queries < rows_per_block ? queries : rows_per_block;
}

// Each buffer starts on a 64-byte boundary relative to the workspace start.
constexpr size_t floats_per_cache_line = 16;

// The compilers' checked arithmetic: a multiply and a flag test (a call
// costs more than it: every entry point sizes its tensors and workspace
// with a few dozen of these). The product or sum is written only when it
// fits.
constexpr bool mul_overflows(size_t a, size_t b, size_t &product) {
    size_t p = 0;
    if (__builtin_mul_overflow(a, b, &p)) return true;
    product = p;
    return false;
}

constexpr bool add_overflows(size_t a, size_t b, size_t &sum) {
    size_t s = 0;
    if (__builtin_add_overflow(a, b, &s)) return true;
    sum = s;
    return false;
}

// Accumulates buffers of a layout, each rounded up to a cache line; remembers
// whether any size overflowed so callers test once at the end.
struct layout_builder {
    size_t floats = 0;
    bool overflow = false;

    // Appends a buffer of a * b * c floats and returns its offset.
    constexpr size_t add(size_t a, size_t b = 1, size_t c = 1) {
        size_t n = 0, ab = 0, rounded = 0, end = 0;
        if (mul_overflows(a, b, ab) || mul_overflows(ab, c, n) ||
            add_overflows(n, floats_per_cache_line - 1, rounded) ||
            add_overflows(floats, rounded / floats_per_cache_line * floats_per_cache_line, end)) {
            overflow = true;
            return 0;
        }
        const size_t offset = floats;
        floats = end;
        return offset;
    }

    // Total bytes, or 0 when the layout does not fit in size_t.
    constexpr size_t bytes() const {
        size_t b = 0;
        if (overflow || mul_overflows(floats, sizeof(float), b)) return 0;
        return b;
    }
};

// Floats that hold `bytes` bytes (int8 or binary16 elements), rounded up.
constexpr size_t floats_for_bytes(size_t bytes) {
    return bytes / sizeof(float) + (bytes % sizeof(float) != 0);
}

constexpr size_t round_to_panels(size_t n) {
    return (n + max_panel_width - 1) / max_panel_width * max_panel_width;
}

// Floats of a packed (k, n) right-hand side: k rows of whole panels.
constexpr bool packed_floats(size_t k, size_t n, size_t &floats) {
    return !mul_overflows(k, round_to_panels(n), floats) && round_to_panels(n) >= n;
}

// One thread's scratch for a block of query rows of one attention slice:
// a key block packed as K^T (d, key block), a value block packed
// (key block, dv), the block's scores, and the streaming softmax's running
// max and sum per row. Additive attention keeps whole rows of scores
// (whole_rows: all K keys) instead of one key block.
struct attention_scratch {
    size_t packed_keys = 0;    // offsets within the slot
    size_t packed_values = 0;
    size_t scores = 0;
    size_t running_max = 0;
    size_t running_sum = 0;
    size_t floats_per_slot = 0;
    size_t first_slot = 0;     // offset of slot 0 in the workspace
};

constexpr attention_scratch add_attention_scratch(layout_builder &b, size_t queries, size_t keys,
                                                  size_t d, size_t dv, bool whole_rows,
                                                  size_t threads) {
    attention_scratch s;
    layout_builder slot;
    const size_t key_block = key_block_for(keys), row_block = row_block_for(queries);
    size_t keys_floats = 0, values_floats = 0;
    if (!packed_floats(d, key_block, keys_floats) || !packed_floats(key_block, dv, values_floats)) {
        b.overflow = true;
        return s;
    }
    s.packed_keys = slot.add(keys_floats);
    s.packed_values = slot.add(values_floats);
    s.scores = slot.add(row_block, whole_rows ? keys : key_block);
    s.running_max = slot.add(row_block);
    s.running_sum = slot.add(row_block);
    if (slot.overflow) {
        b.overflow = true;
        return s;
    }
    s.floats_per_slot = slot.floats;
    s.first_slot = b.add(s.floats_per_slot, threads < 1 ? 1 : threads);
    return s;
}

// Dot-product attention: only per-thread scratch, independent of K.
struct dot_product_layout {
    attention_scratch scratch;
    size_t bytes = 0;
};

constexpr dot_product_layout make_dot_product_layout(size_t queries, size_t keys, size_t d,
                                                     size_t dv, size_t threads) {
    layout_builder b;
    dot_product_layout l;
    l.scratch = add_attention_scratch(b, queries, keys, d, dv, false, threads);
    l.bytes = b.bytes();
    return l;
}

// Additive attention: projected queries (B,Q,h) and keys (B,K,h), the packed
// W_q^T / W_k^T, then per-thread scratch with whole rows of scores.
struct additive_layout {
    size_t projected_queries = 0;
    size_t projected_keys = 0;
    size_t packed_weights = 0;
    attention_scratch scratch;
    size_t bytes = 0;
};

constexpr additive_layout make_additive_layout(size_t batch, size_t queries, size_t keys,
                                               size_t query_size, size_t key_size, size_t value_size,
                                               size_t num_hiddens, size_t threads) {
    layout_builder b;
    additive_layout l;
    size_t packed = 0;
    if (!packed_floats(query_size > key_size ? query_size : key_size, num_hiddens, packed))
        b.overflow = true;
    l.projected_queries = b.add(batch, queries, num_hiddens);
    l.projected_keys = b.add(batch, keys, num_hiddens);
    l.packed_weights = b.add(packed);
    l.scratch = add_attention_scratch(b, queries, keys, 1, value_size, true, threads);
    l.bytes = b.bytes();
    return l;
}

// Multi-head attention: projected Q (B,Q,h), K (B,K,h), V (B,K,h), the
// concatenated head outputs (B,Q,h), one packed projection matrix, then
// per-thread scratch for heads of h / H features.
struct multi_head_layout {
    size_t projected_queries = 0;
    size_t projected_keys = 0;
    size_t projected_values = 0;
    size_t concatenated_heads = 0;
    size_t packed_weights = 0;
    attention_scratch scratch;
    size_t bytes = 0;
};

constexpr size_t largest(size_t a, size_t b, size_t c, size_t d) {
    const size_t ab = a > b ? a : b, cd = c > d ? c : d;
    return ab > cd ? ab : cd;
}

// num_kv_heads: grouped-query heads (0 means num_heads); keys are
// projected to num_kv_heads * head_size features, values to num_kv_heads *
// value_hiddens / num_heads (value_hiddens: the concatenated value heads,
// 0 means num_hiddens).
constexpr multi_head_layout make_multi_head_layout(size_t batch, size_t queries, size_t keys,
                                                   size_t query_size, size_t key_size,
                                                   size_t value_size, size_t num_hiddens,
                                                   size_t num_heads, size_t threads,
                                                   size_t num_kv_heads = 0,
                                                   size_t value_hiddens = 0) {
    layout_builder b;
    multi_head_layout l;
    size_t packed = 0;
    const size_t vh = value_hiddens ? value_hiddens : num_hiddens;
    // W_v^T (value_size, value columns) may be the widest matrix packed.
    if (num_heads == 0 ||
        !packed_floats(largest(query_size, key_size, value_size, vh),
                       vh > num_hiddens ? vh : num_hiddens, packed))
        b.overflow = true;
    const size_t head_size = num_heads ? num_hiddens / num_heads : 0;
    const size_t value_head = num_heads ? vh / num_heads : 0;
    const size_t kv_heads = num_kv_heads ? num_kv_heads : num_heads;
    l.projected_queries = b.add(batch, queries, num_hiddens);
    l.projected_keys = b.add(batch, keys, kv_heads * head_size);
    l.projected_values = b.add(batch, keys, kv_heads * value_head);
    l.concatenated_heads = b.add(batch, queries, vh);
    l.packed_weights = b.add(packed);
    l.scratch = add_attention_scratch(b, queries, keys, head_size, value_head, false, threads);
    l.bytes = b.bytes();
    return l;
}

// Appending T tokens to a KV cache: their projected keys and values
// (B*T, kv_hiddens) each before they are copied into the cache's per-head
// rows, and one packed projection matrix (unpacked weights).
struct kv_append_layout {
    size_t projected_keys = 0;
    size_t projected_values = 0;
    size_t packed_weights = 0;
    size_t bytes = 0;
};

// kv_value_hiddens: the values' features (0 means kv_hiddens).
constexpr kv_append_layout make_kv_append_layout(size_t batch, size_t tokens, size_t key_size,
                                                 size_t value_size, size_t kv_hiddens,
                                                 size_t kv_value_hiddens = 0) {
    layout_builder b;
    kv_append_layout l;
    size_t packed = 0;
    const size_t kvv = kv_value_hiddens ? kv_value_hiddens : kv_hiddens;
    if (!packed_floats(key_size > value_size ? key_size : value_size,
                       kvv > kv_hiddens ? kvv : kv_hiddens, packed))
        b.overflow = true;
    l.projected_keys = b.add(batch, tokens, kv_hiddens);
    l.projected_values = b.add(batch, tokens, kvv);
    l.packed_weights = b.add(packed);
    l.bytes = b.bytes();
    return l;
}

// Grouped-query decoding: when a step's queries times the query heads that
// share a key/value head fit in this many rows, each key/value head attends
// once for all its query heads (their queries gathered as rows), so the
// cache is read once per key/value head, not once per query head.
constexpr size_t grouped_rows_limit = 64;

constexpr bool kv_attention_grouped(size_t queries, size_t num_heads, size_t num_kv_heads) {
    return num_kv_heads != 0 && num_kv_heads < num_heads && num_heads % num_kv_heads == 0 &&
           queries <= grouped_rows_limit / (num_heads / num_kv_heads);
}

// A decode step (one query per batch element) splits each key/value head's
// keys into at most this many chunks, each at least decode_split_keys keys
// (fewer keys: fewer chunks): boundaries fixed by the number of keys alone.
// Threads take chunks when there are fewer heads than threads, and each
// chunk leaves a partial softmax (head_size outputs, a maximum and a sum per
// query head) that the heads' outputs are folded from in chunk order.
constexpr size_t decode_max_splits = 16;
constexpr size_t decode_split_keys = 512;

// Attention of Q queries over a KV cache of `capacity` positions: the
// projected queries (B,Q,h), the concatenated heads (B,Q,h), one packed
// projection matrix; when grouped, the queries and head outputs gathered
// per key/value head (B, H_kv, Q * H / H_kv, h / H); in the int8
// arithmetic (edgeattn_kv_cache_config::arithmetic), the query heads
// quantised: int8 codes (B, Q, h) bytes and a scale per head (B, Q, H);
// for a decode step (Q 1) with more than one thread, the chunks' partials
// (B, H, decode_max_splits, h / H + 2); then per-thread scratch as
// multi-head attention's, for blocks of Q (grouped: Q * H / H_kv) rows.
struct kv_attention_layout {
    size_t projected_queries = 0;
    size_t concatenated_heads = 0;
    size_t packed_weights = 0;
    bool grouped = false;
    size_t grouped_queries = 0;
    size_t grouped_heads = 0;
    size_t query_codes = 0;      // int8 arithmetic only (else 0)
    size_t query_scales = 0;
    size_t decode_partials = 0;  // 0: none (one thread, or Q > 1)
    attention_scratch scratch;
    size_t bytes = 0;
};

// value_hiddens: the concatenated value heads (0 means num_hiddens).
constexpr kv_attention_layout make_kv_attention_layout(size_t batch, size_t queries,
                                                       size_t capacity, size_t query_size,
                                                       size_t num_hiddens, size_t num_heads,
                                                       size_t num_kv_heads, size_t threads,
                                                       size_t value_hiddens = 0,
                                                       bool integer = false) {
    layout_builder b;
    kv_attention_layout l;
    size_t packed = 0;
    const size_t vh = value_hiddens ? value_hiddens : num_hiddens;
    if (num_heads == 0 ||
        !packed_floats(largest(query_size, num_hiddens, vh, 0), num_hiddens, packed))
        b.overflow = true;
    const size_t head_size = num_heads ? num_hiddens / num_heads : 0;
    const size_t value_head = num_heads ? vh / num_heads : 0;
    l.projected_queries = b.add(batch, queries, num_hiddens);
    l.concatenated_heads = b.add(batch, queries, vh);
    l.packed_weights = b.add(packed);
    l.grouped = kv_attention_grouped(queries, num_heads, num_kv_heads);
    size_t rows = queries;
    if (l.grouped) {
        l.grouped_queries = b.add(batch, queries, num_hiddens);
        l.grouped_heads = b.add(batch, queries, vh);
        rows = queries * (num_heads / num_kv_heads);
    }
    // Before the partials, which only a layout for threads has: the codes
    // lie where a one-thread layout puts them (a decode call quantises by
    // it, then finds room for the partials).
    if (integer) {
        size_t code_bytes = 0;
        if (mul_overflows(batch, queries, code_bytes) || mul_overflows(code_bytes, num_hiddens, code_bytes))
            b.overflow = true;
        l.query_codes = b.add(floats_for_bytes(code_bytes));
        l.query_scales = b.add(batch, queries, num_heads);
    }
    if (queries == 1 && threads > 1) {
        size_t per_head = 0;
        if (mul_overflows(decode_max_splits, value_head + 2, per_head)) b.overflow = true;
        l.decode_partials = b.add(batch, num_heads, per_head);
    }
    l.scratch = add_attention_scratch(b, rows, capacity, head_size, value_head, false, threads);
    l.bytes = b.bytes();
    return l;
}

// A KV cache's memory, in floats from its start: keys (B, H_kv, capacity,
// head_size) and values (B, H_kv, capacity, value_head_size) of `element_bytes`-byte elements (4 fp32, 2 binary16,
// 1 int8; each region rounded up to whole floats), the lengths (B), the
// stream positions (B), and for int8 the key and value scales
// (B, H_kv, capacity).
struct kv_cache_layout {
    size_t keys = 0;
    size_t values = 0;
    size_t lengths = 0;
    size_t positions = 0;
    size_t key_scales = 0;    // int8 only (else 0)
    size_t value_scales = 0;  // int8 only (else 0)
    size_t bytes = 0;
};

// value_head_size: features of a value row (0 means head_size).
constexpr kv_cache_layout make_kv_cache_layout(size_t batch, size_t num_kv_heads,
                                               size_t head_size, size_t capacity,
                                               size_t element_bytes = 4,
                                               size_t value_head_size = 0) {
    layout_builder b;
    kv_cache_layout l;
    size_t positions = 0, elements = 0, bytes = 0, value_elements = 0, value_bytes = 0;
    if (mul_overflows(batch, num_kv_heads, positions) ||
        mul_overflows(positions, capacity, positions) ||
        mul_overflows(positions, head_size, elements) ||
        mul_overflows(elements, element_bytes, bytes) ||
        mul_overflows(positions, value_head_size ? value_head_size : head_size, value_elements) ||
        mul_overflows(value_elements, element_bytes, value_bytes))
        b.overflow = true;
    const size_t floats = floats_for_bytes(bytes);
    const size_t value_floats = floats_for_bytes(value_bytes);
    l.keys = b.add(floats);
    l.values = b.add(value_floats);
    l.lengths = b.add(batch);  // int32, as many bytes as floats
    l.positions = b.add(batch);  // int32
    if (element_bytes == 1) {
        l.key_scales = b.add(positions);
        l.value_scales = b.add(positions);
    }
    l.bytes = b.bytes();
    return l;
}

}  // namespace detail
}  // namespace edgeattn

#endif
