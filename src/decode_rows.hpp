// A decode step's attention over a KV cache: one query token, whose query
// heads that share a key/value head are the rows of one slice
// (attention_slice::group), each cache row read once for all of them.
//
// A slice's keys split into chunks whose boundaries depend on the number of
// keys alone (decode_split_keys, decode_max_splits in workspace_layout.hpp);
// each chunk's partial softmax (maximum, sum, weighted sum per row) is
// computed on its own and the slice's rows are folded from the partials in
// chunk order. So threads may take chunks of one slice (split-K, for
// multi-query heads) or whole slices, and the bits are the same for any
// thread count and workspace size. Only the vector paths decode here
// (decode_kernels_for); the plain C++ path keeps attention_rows.cpp's.
#ifndef EDGEATTN_DECODE_ROWS_HPP
#define EDGEATTN_DECODE_ROWS_HPP

#include <stddef.h>

#include "attention_rows.hpp"

namespace edgeattn {
namespace detail {

// The decode kernels for a slice of `queries` query tokens, or nullptr
// where it takes attention_rows.cpp's path: more than one query token,
// attention weights requested, or the plain C++ path. A property of the
// call's shape and path, never of its block of rows or its threads.
const decode_kernel_table *decode_kernels_for(const kernel_table &k, size_t queries, bool weights);

// The scores (rows, n) of a block of visible keys [key0, key0 + n), rows ld
// apart, already scaled (options.scale, else 1/sqrt(d)), made what the
// softmax takes: the softcap, then the mask's additive bias and ALiBi per
// head, as attention_rows.cpp orders them. The one place a decode step's
// scores change.
void decode_transform_scores(const kernel_table &k, const attention_slice &s, const attention_mask_view &mask,
                             size_t key0, size_t n, float *scores, size_t ld);

// Chunks of a slice of `keys` keys, and the keys of each (the last may have fewer).
inline size_t decode_splits(size_t keys) {
    const size_t by_keys = (keys + decode_split_keys - 1) / decode_split_keys;
    return by_keys < 1 ? 1 : by_keys < decode_max_splits ? by_keys : decode_max_splits;
}
inline size_t decode_chunk_keys(size_t keys) {
    const size_t splits = decode_splits(keys), per = (keys + splits - 1) / splits;
    return (per + keys_per_block - 1) / keys_per_block * keys_per_block;
}

// One chunk's partial for a slice of `rows` rows of dv outputs: the
// outputs (rows, dv), then the running maximum and sum of each row.
inline size_t decode_partial_floats(size_t rows, size_t dv) { return rows * (dv + 2); }

// Slice s whole (all its rows), its chunks computed and folded in turn
// with the slot's scratch.
void decode_slice(const kernel_table &k, const decode_kernel_table &dk, const attention_slice &s,
                  const attention_mask_view &mask, const scratch_slot &slot);

// Chunk c of slice s into `partial` (decode_partial_floats); nothing when
// no key of the chunk is visible.
void decode_chunk_partial(const kernel_table &k, const decode_kernel_table &dk, const attention_slice &s,
                          const attention_mask_view &mask, size_t c, float *partial, const scratch_slot &slot);

// Slice s's rows from its chunks' partials (chunk c at partials + c *
// decode_partial_floats), folded in chunk order as decode_slice folds them.
void decode_fold_partials(const kernel_table &k, const attention_slice &s, const attention_mask_view &mask,
                          const float *partials, const scratch_slot &slot);

// The workspace a decode call found: its scratch slots and, when it was
// sized for more than one thread, room for every slice's partials
// (decode_max_splits of them per slice; nullptr: one thread's, serial).
struct decode_workspace {
    float *workspace;
    const attention_scratch *layout;
    size_t first_slot, slots;
    float *partials;
};

// Runs the decode of `slices` slices, slice i built by slice_of(i, storage)
// (storage: what the slice points at, kept while it is read), each of
// `rows` rows of dv outputs over at most `capacity` keys. Threads take
// whole slices when there are as many as threads, else chunks of them
// (then a second pass folds each slice's partials).
template <class SliceOf>
void decode_slices(const kernel_table &k, const decode_kernel_table &dk, size_t slices, size_t rows, size_t dv,
                   size_t capacity, const attention_mask_view &mask, const decode_workspace &ws,
                   SliceOf slice_of) {
    auto slot_of = [&](size_t t) {
        return scratch_slot_at(ws.workspace + ws.first_slot + t * ws.layout->floats_per_slot, *ws.layout);
    };
    const float flops_per_key = 4.0f * static_cast<float>(rows * dv);
    const size_t threads = available_threads() < ws.slots ? available_threads() : ws.slots;
    const size_t splits = decode_splits(capacity), per_slice = decode_partial_floats(rows, dv);
    if (!ws.partials || slices >= threads || splits == 1) {
        parallel_for(slices, ws.slots, flops_per_key * static_cast<float>(capacity),
                     [&](size_t t, size_t begin, size_t end) {
            const scratch_slot slot = slot_of(t);
            for (size_t i = begin; i < end; ++i) {
                cache_slice_storage storage;
                decode_slice(k, dk, slice_of(i, storage), mask, slot);
            }
        });
        return;
    }
    const size_t chunk_keys = decode_chunk_keys(capacity);
    parallel_for(slices * splits, ws.slots, flops_per_key * static_cast<float>(chunk_keys),
                 [&](size_t t, size_t begin, size_t end) {
        const scratch_slot slot = slot_of(t);
        for (size_t item = begin; item < end; ++item) {
            const size_t i = item / splits, c = item % splits;
            cache_slice_storage storage;
            const attention_slice s = slice_of(i, storage);
            if (c < decode_splits(s.num_keys))
                decode_chunk_partial(k, dk, s, mask, c, ws.partials + (i * decode_max_splits + c) * per_slice,
                                     slot);
        }
    });
    parallel_for(slices, ws.slots, 8.0f * static_cast<float>(rows * dv * splits),
                 [&](size_t t, size_t begin, size_t end) {
        const scratch_slot slot = slot_of(t);
        for (size_t i = begin; i < end; ++i) {
            cache_slice_storage storage;
            decode_fold_partials(k, slice_of(i, storage), mask, ws.partials + i * decode_max_splits * per_slice, slot);
        }
    });
}

}  // namespace detail
}  // namespace edgeattn

#endif
