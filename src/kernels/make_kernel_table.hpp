// Fills a kernel_table from the kernel templates for one batch type. Only
// src/arch/*.cpp include this, each compiled with its own ISA flags; the
// kernels live in an anonymous namespace so no instantiation compiled for
// one ISA can be merged by the linker into another path.
#ifndef EDGEATTN_KERNELS_MAKE_KERNEL_TABLE_HPP
#define EDGEATTN_KERNELS_MAKE_KERNEL_TABLE_HPP

#include "add.hpp"
#include "additive.hpp"
#include "decode.hpp"
#include "gemm.hpp"
#include "kernel_table.hpp"
#include "softcap.hpp"
#include "softmax.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <class B>
constexpr kernel_table make_kernel_table(edgeattn_isa isa) {
    return kernel_table{isa,
                        gemm_tile<B>::width,
                        &pack_transposed<B>,
                        &pack<B>,
                        &gemm_packed<B>,
                        &gemm_nt_direct<B>,
                        &gemm_nn_direct<B>,
                        &masked_softmax_rows<B>,
                        &online_softmax_block<B>,
                        &exp_array<B>,
                        &exp_nonpositive_array<B>,
                        &softcap_array<B>,
                        &add<B>,
                        &scale<B>,
                        &add_scaled<B>,
                        &scale_final<B>,
                        &widen_half_array<B>,
                        &round_half_array<B>};
}

template <class B>
constexpr stored_weight_table make_stored_weight_table() {
    return stored_weight_table{{&gemm_packed_weights<B, int8_t>, &gemm_nt_direct_weights<B, int8_t>},
                               {&gemm_packed_weights<B, uint16_t>, &gemm_nt_direct_weights<B, uint16_t>}};
}

template <class B>
constexpr softmax_kernel_table make_softmax_kernel_table() {
    return softmax_kernel_table{&masked_softmax_rows<B>};
}

template <class B>
constexpr add_kernel_table make_add_kernel_table() {
    return add_kernel_table{&add<B>};
}

template <class B>
constexpr additive_kernel_table make_additive_kernel_table() {
    return additive_kernel_table{&additive_scores_row<B>};
}

template <class B>
constexpr cache_kernel_table make_cache_kernel_table() {
    return cache_kernel_table{&gemm_nn_direct_stored<B, int8_t>, &gemm_nn_direct_stored<B, uint16_t>};
}

template <class B>
constexpr decode_kernel_table make_decode_kernel_table() {
    return decode_kernel_table{&decode_values<B, float>, &decode_values<B, int8_t>, &decode_values<B, uint16_t>,
                               &decode_scores<B, float>, &decode_scores<B, int8_t>, &decode_scores<B, uint16_t>};
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
