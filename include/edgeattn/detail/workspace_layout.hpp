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

// Attention rows are processed in blocks of this many queries; each thread
// owns one block of scores (rows_per_block, keys).
constexpr size_t rows_per_block = 8;

// Each buffer starts on a 64-byte boundary relative to the workspace start.
constexpr size_t floats_per_cache_line = 16;

constexpr bool mul_overflows(size_t a, size_t b, size_t &product) {
    if (a != 0 && b > SIZE_MAX / a) return true;
    product = a * b;
    return false;
}

constexpr bool add_overflows(size_t a, size_t b, size_t &sum) {
    if (b > SIZE_MAX - a) return true;
    sum = a + b;
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

// Scores of one block of rows per thread: (threads, rows_per_block, keys).
struct scores_layout {
    size_t scores = 0;           // offset of slot 0
    size_t floats_per_slot = 0;  // rows_per_block * keys, rounded
};

constexpr size_t round_to_cache_line(size_t n) {
    return (n + floats_per_cache_line - 1) / floats_per_cache_line * floats_per_cache_line;
}

constexpr scores_layout add_scores(layout_builder &b, size_t keys, size_t threads) {
    scores_layout s;
    size_t per_slot = 0;
    if (mul_overflows(rows_per_block, keys, per_slot) ||
        per_slot > SIZE_MAX - floats_per_cache_line) {
        b.overflow = true;
        return s;
    }
    s.floats_per_slot = round_to_cache_line(per_slot);
    s.scores = b.add(s.floats_per_slot, threads < 1 ? 1 : threads);
    return s;
}

// Dot-product attention: only per-thread scores.
struct dot_product_layout {
    scores_layout scores;
    size_t bytes = 0;
};

constexpr dot_product_layout make_dot_product_layout(size_t keys, size_t threads) {
    layout_builder b;
    dot_product_layout l;
    l.scores = add_scores(b, keys, threads);
    l.bytes = b.bytes();
    return l;
}

// Additive attention: projected queries (B,Q,h) and keys (B,K,h), then scores.
struct additive_layout {
    size_t projected_queries = 0;
    size_t projected_keys = 0;
    scores_layout scores;
    size_t bytes = 0;
};

constexpr additive_layout make_additive_layout(size_t batch, size_t queries, size_t keys,
                                               size_t num_hiddens, size_t threads) {
    layout_builder b;
    additive_layout l;
    l.projected_queries = b.add(batch, queries, num_hiddens);
    l.projected_keys = b.add(batch, keys, num_hiddens);
    l.scores = add_scores(b, keys, threads);
    l.bytes = b.bytes();
    return l;
}

// Multi-head attention: projected Q (B,Q,h), K (B,K,h), V (B,K,h), the
// concatenated head outputs (B,Q,h), then scores.
struct multi_head_layout {
    size_t projected_queries = 0;
    size_t projected_keys = 0;
    size_t projected_values = 0;
    size_t concatenated_heads = 0;
    scores_layout scores;
    size_t bytes = 0;
};

constexpr multi_head_layout make_multi_head_layout(size_t batch, size_t queries, size_t keys,
                                                   size_t num_hiddens, size_t threads) {
    layout_builder b;
    multi_head_layout l;
    l.projected_queries = b.add(batch, queries, num_hiddens);
    l.projected_keys = b.add(batch, keys, num_hiddens);
    l.projected_values = b.add(batch, keys, num_hiddens);
    l.concatenated_heads = b.add(batch, queries, num_hiddens);
    l.scores = add_scores(b, keys, threads);
    l.bytes = b.bytes();
    return l;
}

}  // namespace detail
}  // namespace edgeattn

#endif
