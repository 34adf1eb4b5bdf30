// The part of attention every op shares, for a block of at most
// rows_per_block query rows of one slice (a batch element, or one head of
// it): scaled dot-product scores, d2l's masked softmax, and the weighted sum
// of the values; with the attention weights materialised, or streaming over
// key blocks with an online softmax when they are not requested.
#ifndef EDGEATTN_ATTENTION_ROWS_HPP
#define EDGEATTN_ATTENTION_ROWS_HPP

#include <stddef.h>

#include "attention_mask.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "kernels/kernel_table.hpp"
#include "parallel.hpp"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

// Rows of a KV cache head kept in a reduced type (edgeattn_kv_cache_config::storage):
// row j is data + j * stride elements, times scales[j] for int8.
struct stored_rows {
    edgeattn_dtype type = EDGEATTN_DTYPE_F32;  // F32: not stored, read keys / values
    const void *data = nullptr;
    const float *scales = nullptr;
};

// A slice's query rows quantised for the int8 arithmetic
// (edgeattn_kv_cache_config::arithmetic): row r's int8 codes at
// codes + r * query_stride (the slice's own stride), its scale at
// scales[r * scales_stride]. codes nullptr: the fp32 arithmetic.
struct quantised_rows {
    const int8_t *codes = nullptr;
    const float *scales = nullptr;
    size_t scales_stride = 0;
};

// An int8 / fp16 KV cache head's keys and values in their type, and the
// slice's queries when its scores are integer products.
struct stored_head {
    stored_rows keys, values;
    quantised_rows queries;
};

// Scores (rows, n) at `scores`, row stride ldc, of query rows
// [row0, row0 + rows) of q against int8 keys [key0, key0 + n) of `keys`
// (rows key_stride apart), d features: the int8 arithmetic's
// ((float)sum * (query scale * scale)) * key scale, the int32 sums made in
// `scores` first. The same bits on every path (src/integer_scores.cpp).
void integer_scores(const kernel_table &k, const quantised_rows &q, size_t query_stride, size_t row0, size_t rows,
                    size_t d, const stored_rows &keys, size_t key_stride, size_t key0, size_t n, float scale,
                    float *scores, size_t ldc);

struct attention_slice;
struct scratch_slot;


// The three places attention reads key and value rows, for the rows of an
// int8 / fp16 KV cache (src/stored_cache_rows.cpp): reached through the
// slice, so only programs that decode from a typed cache carry them.
struct stored_cache_operations {
    // As block_scores / block_weighted_sum / add_value_row in attention_rows.cpp.
    void (*block_scores)(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                         size_t key0, size_t n, float scale, float *scores, size_t ldc,
                         const scratch_slot &slot);
    void (*block_weighted_sum)(const kernel_table &k, const attention_slice &s, size_t row0,
                               size_t rows, size_t key0, size_t n, const float *p, size_t ldp,
                               bool accumulate, const scratch_slot &slot);
    void (*add_value_row)(const attention_slice &s, size_t j, float w, float *out);
};
extern const stored_cache_operations stored_cache_rows;

// A window KV cache whose ring has wrapped, read in stream order: logical
// key first + j (j < rows) lies in row first + (oldest + j) % rows, keys
// before `first` (the sinks) in place. Such a slice's `stored` is
// ring_cache_rows (src/ring_cache_rows.cpp), which reads each run of rows
// that lies contiguously through `rows_stored` (int8 / fp16 rows) or in
// place (fp32, nullptr); programs without a window cache do not carry it.
struct ring_layout {
    size_t first, rows, oldest;
    const stored_cache_operations *rows_stored;
};
extern const stored_cache_operations ring_cache_rows;

// What a KV cache's slice points at, kept while the slice is read: its
// ring's layout (a wrapped window cache) and its head's typed rows.
struct cache_slice_storage {
    ring_layout ring;
    stored_head typed;
};

// One slice in the caller's memory: queries (Q, d), keys (K, d), values
// (K, dv), output (Q, dv), each row `*_stride` floats after the last, and
// optional weights (Q, K) with rows weights_stride (>= K) apart.
struct attention_slice {
    const float *queries;
    size_t query_stride;
    const float *keys;
    size_t key_stride;
    const float *values;
    size_t value_stride;
    float *output;
    size_t output_stride;
    float *weights;  // (Q, K), or nullptr
    size_t weights_stride;
    size_t num_queries, num_keys, d, dv;
    size_t batch_index;  // which valid lengths, ranges and bias apply
    size_t head_index;   // which head's bias applies (the group's first head)
    // Rows per query: grouped-query decoding gathers the `group` query heads
    // that share a key/value head as consecutive rows (row = query * group +
    // head in the group), so one pass over the cached keys and values serves
    // them all. Masks apply to query row / group, the bias of head
    // head_index + row % group. num_queries counts rows.
    size_t group = 1;
    // An int8 / fp16 KV cache: its keys and values in their type (then
    // keys and values are not read; strides as key_stride, value_stride),
    // read by stored_cache_rows (`stored`); nullptr for fp32 rows. Behind a
    // pointer, so a slice of fp32 rows is built without zeroing them (a
    // memset call a slice on the Cortex-M4F: d2l's sdpa example 105
    // instructions fewer at -O3).
    const stored_head *typed = nullptr;
    const stored_cache_operations *stored = nullptr;
    // A window KV cache whose ring has wrapped (stored: ring_cache_rows):
    // keys count in stream order (masks, bias and weight columns) and lie
    // as `ring` says; nullptr: every key lies in place.
    const ring_layout *ring = nullptr;
};

// Scores of rows [row0, row0 + rows) against keys [key0, key0 + n):
// scores (rows, n) at `scores`, row stride ldc.
void block_scores(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows, size_t key0,
                  size_t n, float scale, float *scores, size_t ldc, const scratch_slot &slot);

// output rows [row0, row0 + rows) (+)= p (rows, n) . values [key0, key0 + n).
void block_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                        size_t key0, size_t n, const float *p, size_t ldp, bool accumulate,
                        const scratch_slot &slot);

// At and below this many queries in a slice (a decode step's new tokens),
// scores and weighted sums read the keys and values in place instead of
// packing them: packing reads and writes every key and value once more than
// the products read them, and a decode step is bound by reading the cache.
// Chosen per slice, not per block, so the bits never depend on the split.
constexpr size_t direct_queries_limit = 4;
// An int8 / fp16 cache: widening a block into fp32 panels costs more than
// widening it in registers once per row tile, so up to a grouped-query
// step's 16 rows read it in place (measured: 8 rows of a multi-query
// step over 4096 fp16 positions, 753 us packed).
constexpr size_t direct_queries_limit_stored = 16;

// Internal linkage, as packs() (whose answer reads the library's own path
// macros): no definition from outside the library can merge with it.
namespace {
inline bool reads_in_place(const kernel_table &k, const attention_slice &s) {
    return !packs(k) || s.num_queries <= (s.stored ? direct_queries_limit_stored : direct_queries_limit);
}
}  // namespace

// One thread's scratch (layout in workspace_layout.hpp).
struct scratch_slot {
    float *packed_keys;    // a key block as packed K^T (d, keys_per_block)
    float *packed_values;  // a value block, packed (keys_per_block, dv)
    float *scores;         // (rows_per_block, keys_per_block), or whole rows
    float *running_max;    // (rows_per_block)
    float *running_sum;    // (rows_per_block)
};

inline scratch_slot scratch_slot_at(float *slot, const attention_scratch &layout) {
    return {slot + layout.packed_keys, slot + layout.packed_values, slot + layout.scores,
            slot + layout.running_max, slot + layout.running_sum};
}

// Scores (rows, K) at `weights` (rows ldw apart) get the mask's bias on
// their visible keys and become d2l's masked softmax in place, then output
// rows = weights . values. Shared by
// dot-product and additive attention, whatever produced the scores.
void softmax_and_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0,
                              size_t rows, const attention_mask_view &mask, float *weights,
                              size_t ldw, const scratch_slot &slot);

// The end of one row's online softmax over its visible keys iv (of
// s.num_keys), before the division: the masked keys score d2l's -1e6, so
// they join the maximum (out, dv floats, rescaled if it moves) and each
// weighs exp(-1e6 - max), which is 0 unless the visible scores are near
// -1e6 or there are none (then the row is uniform); their values are added
// at that weight. Returns the row's sum with them.
float join_masked_keys(const kernel_table &k, const attention_slice &s, key_interval iv, float row_max, float sum,
                       float *out);

// Whether a call over `keys` keys can take its rows: without the streaming
// softmax (EDGEATTN_WITH_LONG_ROWS 0) only up to one key block, or with the
// softmax's weights output (weights: requested), whose rows hold the scores.
inline edgeattn_status check_long_rows(size_t keys, bool weights, const attention_mask_view &mask) {
    if (with_long_rows || keys <= keys_per_block || (weights && mask.weighs_softmax())) return EDGEATTN_OK;
    return EDGEATTN_ERR_NOT_BUILT;
}

// Scaled dot-product attention of rows [row0, row0 + rows): materialising
// the weights when s.weights is set, streaming otherwise.
void dot_product_attention_block(const kernel_table &k, const attention_slice &s, size_t row0,
                                 size_t rows, const attention_mask_view &mask,
                                 const scratch_slot &slot);

// Runs body(slice, row0, rows, slot) for every block of at most
// rows_per_block query rows of every slice, split over threads; each thread
// gets its own scratch slot. With fewer slices than threads, slices are cut
// into more, shorter blocks (multiples of 8 rows) so every thread has work;
// each row's result is independent of its block, so the bits do not change.
template <class Body>
void parallel_row_blocks(size_t slices, size_t queries, size_t slots, float flops_per_row,
                         float *workspace, const attention_scratch &layout, Body body) {
    const size_t threads = available_threads() < slots ? available_threads() : slots;
    if (threads <= 1) {
        // One thread (always, without OpenMP): the blocks in order, none of
        // the split's arithmetic (d2l's sdpa example, Cortex-M4F -O3: 50
        // instructions fewer).
        const scratch_slot mine = scratch_slot_at(workspace + layout.first_slot, layout);
        for (size_t slice = 0; slice < slices; ++slice)
            for (size_t row0 = 0; row0 < queries; row0 += rows_per_block)
                body(slice, row0, queries - row0 < rows_per_block ? queries - row0 : rows_per_block, mine);
        return;
    }
    size_t blocks = (queries + rows_per_block - 1) / rows_per_block;
    if (slices * blocks < threads) {
        const size_t wanted = (threads + slices - 1) / slices, most = (queries + 7) / 8;
        blocks = wanted < most ? wanted : most;
    }
    const size_t rows_per_item = ((queries + blocks - 1) / blocks + 7) / 8 * 8;
    blocks = (queries + rows_per_item - 1) / rows_per_item;
    parallel_for(slices * blocks, slots, flops_per_row * rows_per_item,
                 [&](size_t slot, size_t begin, size_t end) {
        const scratch_slot mine =
            scratch_slot_at(workspace + layout.first_slot + slot * layout.floats_per_slot, layout);
        for (size_t item = begin; item < end; ++item) {
            const size_t row0 = item % blocks * rows_per_item;
            const size_t rows = queries - row0 < rows_per_item ? queries - row0 : rows_per_item;
            body(item / blocks, row0, rows, mine);
        }
    });
}

}  // namespace detail
}  // namespace edgeattn

#endif
