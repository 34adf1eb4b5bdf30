// The 64-byte header at the start of weights packed once (multi-head
// attention's and a projection's): what they were packed for. The magic and
// version catch a buffer that was never packed (or by another layout or
// op); the sizes catch weights packed for another model.
#ifndef EDGEATTN_PACKED_HEADER_HPP
#define EDGEATTN_PACKED_HEADER_HPP

#include <stdint.h>
#include <string.h>

#include "edgeattn/detail/packed_weights_layout.hpp"
#include "edgeattn/edgeattn.h"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

struct packed_header {
    uint32_t magic;
    uint32_t version;
    uint64_t sizes[6];  // what the op's sizes are, in the op's order; unused ones 0
    uint32_t biases;        // bit i: bias i was given
    uint32_t weight_types;  // bits 4i..4i+3: matrix i's edgeattn_dtype (0, fp32, before types)
};
static_assert(sizeof(packed_header) <= packed_weights_header_floats * sizeof(float),
              "the header must fit its slot in the layout");

inline packed_header make_packed_header(uint32_t magic, uint32_t version, const size_t *sizes,
                                        size_t num_sizes) {
    packed_header h;
    memset(&h, 0, sizeof h);
    h.magic = magic;
    h.version = version;
    for (size_t i = 0; i < num_sizes && i < 6; ++i) h.sizes[i] = sizes[i];
    return h;
}

// Whether `packed` starts with `want` (its bias bits aside, returned in
// `biases`; at most `max_bias_bits` of them).
inline bool packed_header_matches(const void *packed, packed_header want, uint32_t max_bias_bits,
                                  uint32_t &biases) {
    packed_header have;
    memcpy(&have, packed, sizeof have);
    want.biases = have.biases;
    biases = have.biases;
    return have.biases < (1u << max_bias_bits) && memcmp(&have, &want, sizeof have) == 0;
}

// The stored types of the matrices in a packed buffer (count of them):
// EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH when one is not an edgeattn_dtype,
// EDGEATTN_ERR_NOT_BUILT when one is a type the build left out (a buffer
// packed by a build that has it: its kernels are not in this one).
inline edgeattn_status packed_weight_types(const void *packed, size_t count, edgeattn_dtype *types) {
    packed_header have;
    memcpy(&have, packed, sizeof have);
    if (count < 8 && have.weight_types >> (4 * count) != 0) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    for (size_t i = 0; i < count; ++i) {
        const uint32_t t = have.weight_types >> (4 * i) & 15u;
        if (t > EDGEATTN_DTYPE_INT8) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
        if (edgeattn_status st = stored_type_status(static_cast<int>(t))) return st;
        types[i] = static_cast<edgeattn_dtype>(t);
    }
    return EDGEATTN_OK;
}

inline uint32_t weight_type_bits(const edgeattn_dtype *types, size_t count) {
    uint32_t bits = 0;
    for (size_t i = 0; i < count; ++i) bits |= static_cast<uint32_t>(types[i]) << (4 * i);
    return bits;
}

// Writes the header (and zeroes the rest of its slot).
inline void write_packed_header(void *packed, const packed_header &h) {
    memset(packed, 0, packed_weights_header_floats * sizeof(float));
    memcpy(packed, &h, sizeof h);
}

}  // namespace detail
}  // namespace edgeattn

#endif
