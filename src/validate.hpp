// Argument checks shared by the C entry points. Each returns EDGEATTN_OK or
// the status to report; the entry points run all of them before they write
// anything, so a failed call leaves outputs and workspace untouched.
#ifndef EDGEATTN_VALIDATE_HPP
#define EDGEATTN_VALIDATE_HPP

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/edgeattn.h"
#include "features.hpp"

namespace edgeattn {
namespace detail {

// A tensor the call reads or writes: its address and element count
// (floats, or int8 / binary16 weights with element_bytes 1 / 2).
struct tensor_span {
    const void *data;
    size_t count;                        // elements
    size_t element_bytes = sizeof(float);
    size_t bytes() const { return count * element_bytes; }
};

// Element count of a tensor of the given dimensions (any of which may be 1),
// or EDGEATTN_ERR_SIZE_OVERFLOW when its byte size does not fit in size_t.
inline edgeattn_status tensor_count(size_t &count, size_t a, size_t b = 1, size_t c = 1,
                                    size_t d = 1) {
    size_t ab = 0, abc = 0, abcd = 0;
    if (mul_overflows(a, b, ab) || mul_overflows(ab, c, abc) || mul_overflows(abc, d, abcd) ||
        abcd > SIZE_MAX / sizeof(float))
        return EDGEATTN_ERR_SIZE_OVERFLOW;
    count = abcd;
    return EDGEATTN_OK;
}

// An enum a C caller stored in a struct or passed as an argument, as the
// int it holds. C may put any int there, and loading a value outside the
// enumerators' range through the C++ enum type is undefined, so the bytes
// are copied instead; check the int before converting it back.
template <class Enum>
inline int enum_as_int(const Enum &e) {
    static_assert(sizeof(Enum) == sizeof(int), "the API's enums are int-sized (their *_FORCE_INT enumerators)");
    int v = 0;
    memcpy(&v, &e, sizeof v);
    return v;
}

inline bool is_weight_type(int type) {
    return type >= EDGEATTN_DTYPE_F32 && type <= EDGEATTN_DTYPE_INT8;
}

// A stored type a call gives (a weight matrix's, a KV cache's rows'):
// EDGEATTN_ERR_BAD_WEIGHT_TYPE outside the enum, EDGEATTN_ERR_NOT_BUILT for
// binary16 or int8 in a build that left it out (edgeattn/config.h).
inline edgeattn_status stored_type_status(int type) {
    if (!is_weight_type(type)) return EDGEATTN_ERR_BAD_WEIGHT_TYPE;
    if ((type == EDGEATTN_DTYPE_F16 && !with_half) || (type == EDGEATTN_DTYPE_INT8 && !with_int8))
        return EDGEATTN_ERR_NOT_BUILT;
    return EDGEATTN_OK;
}

// Features of an integer product at most: |sum| <= in * 127 * 128 stays
// within int32 (the activation's int8 is in [-127, 127], a weight's may be
// -128).
constexpr size_t integer_max_features = 2147483647u / (127u * 128u);

// An edgeattn_arithmetic read as an int (a C caller may store any):
// `integer` for the int8 arithmetic; outside the enum BAD_OPTION; the int8
// arithmetic in a build that left it out NOT_BUILT.
inline edgeattn_status arithmetic_of(int arithmetic, bool &integer) {
    integer = arithmetic == EDGEATTN_ARITHMETIC_INT8;
    if (!integer && arithmetic != EDGEATTN_ARITHMETIC_FLOAT) return EDGEATTN_ERR_BAD_OPTION;
    return integer && !with_int8_arithmetic ? EDGEATTN_ERR_NOT_BUILT : EDGEATTN_OK;
}

// A weight matrix's arithmetic: an enum value; integer only on int8
// weights (`type`), of at most integer_max_features inputs, in an op that
// `takes_integer`.
inline edgeattn_status arithmetic_status(int arithmetic, edgeattn_dtype type, size_t in,
                                         bool takes_integer) {
    bool integer = false;
    if (edgeattn_status st = arithmetic_of(arithmetic, integer)) return st;
    if (!integer) return EDGEATTN_OK;
    if (!takes_integer || type != EDGEATTN_DTYPE_INT8) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    return in > integer_max_features ? EDGEATTN_ERR_SIZE_OVERFLOW : EDGEATTN_OK;
}

// A by-pointer argument struct (dims, valid lengths, mask, weights), copied
// before the call writes anything: a caller may keep the struct inside an
// output or the workspace, which the call then overwrites. NULL stays NULL.
// Copied as bytes, so an enum field holding any int is not loaded as the
// enum type.
template <class T>
inline const T *read_argument(const T *arg, T &local) {
    if (!arg) return nullptr;
    memcpy(&local, arg, sizeof local);
    return &local;
}

inline bool is_float_aligned(const void *p) {
    return reinterpret_cast<uintptr_t>(p) % alignof(float) == 0;
}

// Aligned for its elements (floats: 4, binary16: 2, int8: any).
inline bool is_element_aligned(const tensor_span &s) {
    return reinterpret_cast<uintptr_t>(s.data) % s.element_bytes == 0;
}

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte, measured
// from the lower start, so a span said to run past the end of the address
// space overlaps everything after its start; an empty span overlaps nothing.
// Inline: a call checks a dozen pairs.
__attribute__((always_inline)) inline bool spans_overlap(const void *a, size_t a_bytes, const void *b,
                                                         size_t b_bytes) {
    const uintptr_t a0 = reinterpret_cast<uintptr_t>(a), b0 = reinterpret_cast<uintptr_t>(b);
    return a0 >= b0 ? a0 - b0 < b_bytes && a_bytes != 0 : b0 - a0 < a_bytes && b_bytes != 0;
}

// A span's bytes as [first, last], inclusive (a span running past the top
// of the address space ends there: it overlaps everything after its start,
// as spans_overlap). A null or empty span is {UINTPTR_MAX, 0}, which
// overlaps nothing: any other span starts above 0 (at a non-null address).
struct byte_range {
    uintptr_t first, last;
};

inline byte_range byte_range_of(const tensor_span &s) {
    const size_t bytes = s.bytes();
    if (!s.data || bytes == 0) return {UINTPTR_MAX, 0};
    const uintptr_t first = reinterpret_cast<uintptr_t>(s.data);
    uintptr_t last = 0;
    if (__builtin_add_overflow(first, bytes - 1, &last)) last = UINTPTR_MAX;
    return {first, last};
}

inline bool ranges_overlap(const byte_range &a, const byte_range &b) { return a.first <= b.last && b.first <= a.last; }

// Whether one of `n` output ranges touches one of `inputs`: each input's
// range found once.
inline bool ranges_touch(const byte_range *outputs, size_t n, const tensor_span *inputs, size_t num_inputs) {
    for (size_t i = 0; i < num_inputs; ++i) {
        const byte_range in = byte_range_of(inputs[i]);
        for (size_t o = 0; o < n; ++o)
            if (ranges_overlap(outputs[o], in)) return true;
    }
    return false;
}

// Every output must be disjoint from every input and from every other
// output (and, when given, from every span of `more_inputs`: a call's
// parameters beside its activations, without copying both into one list).
// Null spans (optional tensors not given or not requested) touch nothing.
// Each span's range is found once, outputs 8 at a time (a call has a
// few), not once per pair (d2l's sdpa example, Cortex-M4F -O3: 20 of the
// checks' 170 instructions fewer). Inline: out of line, the spans the call
// keeps in registers went through memory (135 instructions more).
inline edgeattn_status check_disjoint(const tensor_span *outputs, size_t num_outputs,
                                      const tensor_span *inputs, size_t num_inputs,
                                      const tensor_span *more_inputs = nullptr, size_t num_more = 0) {
    constexpr size_t chunk = 8;
    for (size_t o0 = 0; o0 < num_outputs; o0 += chunk) {
        const size_t n = num_outputs - o0 < chunk ? num_outputs - o0 : chunk;
        byte_range out[chunk];
        for (size_t o = 0; o < n; ++o) out[o] = byte_range_of(outputs[o0 + o]);
        if (ranges_touch(out, n, inputs, num_inputs) || ranges_touch(out, n, more_inputs, num_more) ||
            ranges_touch(out, n, outputs, o0))
            return EDGEATTN_ERR_OVERLAP;
        for (size_t o = 1; o < n; ++o)
            for (size_t p = 0; p < o; ++p)
                if (ranges_overlap(out[o], out[p])) return EDGEATTN_ERR_OVERLAP;
    }
    return EDGEATTN_OK;
}

// The valid lengths of rows (batch, queries): where row (b, i) finds its
// length. lens == nullptr means nothing is masked.
struct valid_lens_view {
    const int32_t *lens = nullptr;
    size_t batch_stride = 0;  // per batch: 1, per query: queries
    size_t query_stride = 0;  // per batch: 0, per query: 1

    // Valid positions of row (b, i) among `keys`, clamped to [0, keys].
    size_t of_row(size_t b, size_t i, size_t keys) const {
        if (!lens) return keys;
        const int32_t n = lens[b * batch_stride + i * query_stride];
        return static_cast<size_t>(n) < keys ? static_cast<size_t>(n) : keys;
    }
};

// Checks valid_lens against (batch, queries) and fills `view`. A length
// above `keys` masks nothing (as d2l); a negative one is an error.
inline edgeattn_status check_valid_lens(const edgeattn_valid_lens *valid_lens, size_t batch,
                                        size_t queries, valid_lens_view &view) {
    view = valid_lens_view{};
    edgeattn_valid_lens given;
    if (!read_argument(valid_lens, given)) return EDGEATTN_OK;
    const int kind = enum_as_int(given.kind);  // a C caller may store any int there
    size_t count = 0;
    if (kind == EDGEATTN_VALID_LENS_NONE) {
        return EDGEATTN_OK;
    } else if (kind == EDGEATTN_VALID_LENS_PER_BATCH) {
        count = batch;
        view.batch_stride = 1;
    } else if (kind == EDGEATTN_VALID_LENS_PER_QUERY) {
        count = batch * queries;  // cannot overflow: the caller checked (batch, queries, ...) sizes
        view.batch_stride = queries;
        view.query_stride = 1;
    } else {
        return EDGEATTN_ERR_BAD_VALID_LENS_KIND;
    }
    if (!given.lens) return EDGEATTN_ERR_NULL_POINTER;
    if (reinterpret_cast<uintptr_t>(given.lens) % alignof(int32_t) != 0) return EDGEATTN_ERR_MISALIGNED;
    for (size_t r = 0; r < count; ++r)
        if (given.lens[r] < 0) return EDGEATTN_ERR_NEGATIVE_VALID_LEN;
    view.lens = given.lens;
    return EDGEATTN_OK;
}

// Bytes of the valid_lens array, for overlap checks against outputs.
inline size_t valid_lens_bytes(const valid_lens_view &view, size_t batch, size_t queries) {
    if (!view.lens) return 0;
    return (view.query_stride ? batch * queries : batch) * sizeof(int32_t);
}

// An op whose threads share all of its scratch (a dense layer's packed
// W^T, a cache store's projected rows) still sizes its workspace by thread
// count: each thread past the first adds a slot of one cache line
// (floats_per_cache_line), so a workspace sized for one thread gives a
// serial call, as for the ops with scratch per thread; the call counts its
// threads with scratch_slots(one, floats_per_cache_line, bytes). false when
// the size overflows.
inline bool add_thread_lines(size_t one_thread_bytes, size_t max_threads, size_t &bytes) {
    size_t lines = 0;
    return !mul_overflows(max_threads > 1 ? max_threads - 1 : 0, floats_per_cache_line * sizeof(float), lines) &&
           !add_overflows(one_thread_bytes, lines, bytes);
}

// How many threads' scratch a workspace of `workspace_bytes` holds, given a
// layout's size for one thread and the size of each further thread's slot.
inline size_t scratch_slots(size_t one_thread_bytes, size_t floats_per_slot,
                            size_t workspace_bytes) {
    return 1 + (workspace_bytes - one_thread_bytes) / (floats_per_slot * sizeof(float));
}

}  // namespace detail
}  // namespace edgeattn

#endif
