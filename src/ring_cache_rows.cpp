// Attention's reads of a window KV cache whose ring has wrapped
// (attention_slice::ring): logical keys in stream order split into the
// runs of rows that lie contiguously, each read in place by the plain
// block_scores / block_weighted_sum (through the ring's own int8 / fp16
// reads, if any). Reached only through attention_slice::stored (set by
// kv_cache_attend.cpp), so programs without a window cache do not carry
// this file, and a slice without a ring takes no step of it.
#include "attention_rows.hpp"
#include "ring_runs.hpp"

namespace edgeattn {
namespace detail {

namespace {

// The slice with its rows read in place: what each run reads.
attention_slice without_ring(const attention_slice &s) {
    attention_slice plain = s;
    plain.stored = s.ring->rows_stored;
    plain.ring = nullptr;
    return plain;
}

// Each run's scores at its logical columns.
void ring_block_scores(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows, size_t key0,
                       size_t n, float scale, float *scores, size_t ldc, const scratch_slot &slot) {
    const attention_slice plain = without_ring(s);
    key_run runs[3];
    const size_t count = ring_runs(*s.ring, key0, n, runs);
    for (size_t i = 0; i < count; ++i)
        block_scores(k, plain, row0, rows, runs[i].physical, runs[i].n, scale, scores + (runs[i].logical - key0),
                     ldc, slot);
}

// Each run's weights from its logical columns, summed in run order.
void ring_block_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                             size_t key0, size_t n, const float *p, size_t ldp, bool accumulate,
                             const scratch_slot &slot) {
    const attention_slice plain = without_ring(s);
    key_run runs[3];
    const size_t count = ring_runs(*s.ring, key0, n, runs);
    for (size_t i = 0; i < count; ++i)
        block_weighted_sum(k, plain, row0, rows, runs[i].physical, runs[i].n, p + (runs[i].logical - key0), ldp,
                           accumulate || i > 0, slot);
}

// out += w * the value of logical key j.
void ring_add_value_row(const attention_slice &s, size_t j, float w, float *out) {
    const attention_slice plain = without_ring(s);
    key_run run[3];
    ring_runs(*s.ring, j, 1, run);
    if (plain.stored)
        plain.stored->add_value_row(plain, run[0].physical, w, out);
    else
        active_kernels().add_scaled(plain.values + run[0].physical * plain.value_stride, w, out, plain.dv);
}

}  // namespace

const stored_cache_operations ring_cache_rows{&ring_block_scores, &ring_block_weighted_sum, &ring_add_value_row};

}  // namespace detail
}  // namespace edgeattn
