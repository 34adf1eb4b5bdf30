// Fills a kernel_table from the kernel templates for one batch type. Only
// src/arch/*.cpp include this, each compiled with its own ISA flags; the
// kernels live in an anonymous namespace so no instantiation compiled for
// one ISA can be merged by the linker into another path.
#ifndef EDGEATTN_KERNELS_MAKE_KERNEL_TABLE_HPP
#define EDGEATTN_KERNELS_MAKE_KERNEL_TABLE_HPP

#include "../features.hpp"
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

// The plain C++ path built for size never packs fp32 operands: its
// one-row products gain nothing from packed panels (one lane, no cache
// lines to fill on a Cortex-M), so every product reads its operands in
// place and the packing code is not linked (d2l's int8 block, Cortex-M4F MinSizeRel: 1,488 B).
template <class B>
constexpr bool path_packs() {
    return with_packing && !compact_kernels<B>();
}

template <class B>
constexpr kernel_table make_kernel_table(edgeattn_isa isa) {
    return kernel_table{isa,
                        gemm_tile<B>::width,
                        path_packs<B>() ? &pack_transposed<B> : nullptr,
                        path_packs<B>() ? &pack<B> : nullptr,
                        path_packs<B>() ? &gemm_packed<B> : nullptr,
                        &gemm_nt_direct<B>,
                        &gemm_nn_direct<B>,
                        &masked_softmax_rows<B>,
                        &online_softmax_block<B>,
                        &exp_array<B>,
                        &exp_nonpositive_array<B>,
                        with_score_options ? &softcap_array<B> : nullptr,
                        &add<B>,
                        &scale<B>,
                        &add_scaled<B>,
                        &scale_final<B>,
                        with_half ? &widen_half_array<B> : nullptr,
                        with_half ? &round_half_array<B> : nullptr};
}

template <class B>
constexpr stored_weight_table make_stored_weight_table() {
    // A type the build leaves out (features.hpp) has no kernels: its calls
    // are refused before they reach them.
    constexpr stored_weight_kernels none{nullptr, nullptr};
    return stored_weight_table{
        with_int8 ? stored_weight_kernels{&gemm_packed_weights<B, int8_t>, &gemm_nt_direct_weights<B, int8_t>} : none,
        with_half ? stored_weight_kernels{&gemm_packed_weights<B, uint16_t>, &gemm_nt_direct_weights<B, uint16_t>}
                  : none};
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
    return cache_kernel_table{with_int8 ? &gemm_nn_direct_stored<B, int8_t> : nullptr,
                              with_half ? &gemm_nn_direct_stored<B, uint16_t> : nullptr};
}

template <class B>
constexpr decode_kernel_table make_decode_kernel_table() {
    return decode_kernel_table{&decode_values<B, float>,
                               with_int8 ? &decode_values<B, int8_t> : nullptr,
                               with_half ? &decode_values<B, uint16_t> : nullptr,
                               &decode_scores<B, float>,
                               with_int8 ? &decode_scores<B, int8_t> : nullptr,
                               with_half ? &decode_scores<B, uint16_t> : nullptr};
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
