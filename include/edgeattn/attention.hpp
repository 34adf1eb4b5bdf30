/// @file
/// edgeattn C++17 fixed-size attention modules: dimensions are template
/// parameters, the workspace is a member array, so sizeof(Module) is the RAM
/// a module needs and shapes that cannot work fail at compile time. Each
/// module is a thin layer over the C API (edgeattn/attention.h): same
/// kernels, same status codes.
///
/// Tensors are flat row-major float arrays with the shapes given per module in
/// d2l's (batch, queries, keys) notation; weights are borrowed (in flash on a
/// microcontroller), in torch.nn.Linear's (out, in) layout, in any
/// edgeattn_dtype. MaxThreads is how many OpenMP threads a call may use (the
/// workspace grows with it).
#ifndef EDGEATTN_ATTENTION_HPP
#define EDGEATTN_ATTENTION_HPP

#include <cstddef>

#include "attention.h"
#include "deprecated.h"
#include "detail/module_common.hpp"
#include "detail/packed_weights_layout.hpp"
#include "detail/workspace_layout.hpp"
#include "positional.h"
#include "positional_encoding.hpp"

namespace edgeattn {

/// d2l's masked_softmax: X, Y (Batch, Queries, Keys); Y may be X.
/// No workspace: edgeattn_masked_softmax() with fixed dims.
/// @tparam Batch B @tparam Queries Q @tparam Keys K (the softmax axis)
/// @param X          scores, (Batch, Queries, Keys)
/// @param valid_lens nullptr (no mask), or (Batch) or (Batch, Queries) valid lengths
/// @param Y          weights, (Batch, Queries, Keys); may be X
/// @return ::EDGEATTN_OK, or the status the C call returns: invalid pointers,
///         alignment, valid lengths or overlaps (the workspace is always large enough)
template <std::size_t Batch, std::size_t Queries, std::size_t Keys>
Status masked_softmax(const float *X, const ValidLens *valid_lens, float *Y) {
    static_assert(Batch > 0 && Queries > 0 && Keys > 0, "dimensions must be positive");
    static_assert(detail::tensor_fits(Batch, Queries, Keys), "the tensor's size overflows size_t");
    const edgeattn_softmax_dims dims{Batch, Queries, Keys};
    return edgeattn_masked_softmax(&dims, X, valid_lens, Y);
}

/// Scaled dot-product attention: queries (Batch, Queries, Dim), keys
/// (Batch, Keys, Dim), values (Batch, Keys, ValueSize) -> output (Batch,
/// Queries, ValueSize); attention_weights (Batch, Queries, Keys) if not null.
/// The workspace for MaxThreads threads is a member (sizeof is the RAM).
/// @tparam Batch B @tparam Queries Q @tparam Keys K @tparam Dim d (query = key features)
/// @tparam ValueSize v @tparam MaxThreads threads a call may use
template <std::size_t Batch, std::size_t Queries, std::size_t Keys, std::size_t Dim,
          std::size_t ValueSize, std::size_t MaxThreads = 1>
class DotProductAttention {
    static_assert(Batch > 0 && Queries > 0 && Keys > 0 && Dim > 0 && ValueSize > 0 &&
                      MaxThreads > 0,
                  "dimensions must be positive");
    static_assert(detail::tensor_fits(Batch, Queries, Dim) && detail::tensor_fits(Batch, Keys, Dim) &&
                      detail::tensor_fits(Batch, Keys, ValueSize) &&
                      detail::tensor_fits(Batch, Queries, ValueSize) && detail::tensor_fits(Batch, Queries, Keys),
                  "a tensor's size overflows size_t");

  public:
    /// The C API's dims of this module.
    static constexpr edgeattn_attention_dims dims{Batch, Queries, Keys, Dim, Dim, ValueSize, 0, 0, 0, 0};

    /// edgeattn_sdpa() on the member workspace.
    /// @param queries (Batch, Queries, Dim)
    /// @param keys    (Batch, Keys, Dim)
    /// @param values  (Batch, Keys, ValueSize)
    /// @param valid_lens nullptr (no mask), or (Batch) or (Batch, Queries) valid lengths
    /// @param output     (Batch, Queries, ValueSize)
    /// @param attention_weights nullptr, or (Batch, Queries, Keys)
    /// @return ::EDGEATTN_OK, or the status the C call returns: invalid pointers,
    ///         alignment, valid lengths or overlaps (the workspace is always large enough)
    Status forward(const float *queries, const float *keys, const float *values,
                   const ValidLens *valid_lens, float *output,
                   float *attention_weights = nullptr) {
        const edgeattn_attention_options options = detail::options_of(valid_lens);
        return edgeattn_sdpa(&dims, queries, keys, values, &options, workspace_.data(),
                             workspace_.bytes, output, attention_weights);
    }

  private:
    detail::workspace_storage<detail::make_dot_product_layout(Queries, Keys, Dim, ValueSize, MaxThreads).bytes> workspace_;
};

/// Additive attention with W_q (NumHiddens, QuerySize), W_k (NumHiddens,
/// KeySize), w_v (1, NumHiddens): queries (Batch, Queries, QuerySize), keys
/// (Batch, Keys, KeySize), values (Batch, Keys, ValueSize) -> output (Batch,
/// Queries, ValueSize); attention_weights (Batch, Queries, Keys) if not null.
/// The workspace for MaxThreads threads is a member (sizeof is the RAM).
/// @tparam Batch B @tparam Queries Q @tparam Keys K @tparam QuerySize q
/// @tparam KeySize k @tparam ValueSize v @tparam NumHiddens h
/// @tparam MaxThreads threads a call may use
template <std::size_t Batch, std::size_t Queries, std::size_t Keys, std::size_t QuerySize,
          std::size_t KeySize, std::size_t ValueSize, std::size_t NumHiddens,
          std::size_t MaxThreads = 1>
class AdditiveAttention {
    static_assert(Batch > 0 && Queries > 0 && Keys > 0 && QuerySize > 0 && KeySize > 0 &&
                      ValueSize > 0 && NumHiddens > 0 && MaxThreads > 0,
                  "dimensions must be positive");
    static_assert(detail::tensor_fits(Batch, Queries, QuerySize) && detail::tensor_fits(Batch, Keys, KeySize) &&
                      detail::tensor_fits(Batch, Keys, ValueSize) &&
                      detail::tensor_fits(Batch, Queries, ValueSize) && detail::tensor_fits(Batch, Queries, Keys) &&
                      detail::tensor_fits(NumHiddens, QuerySize) && detail::tensor_fits(NumHiddens, KeySize),
                  "a tensor's size overflows size_t");

  public:
    /// The C API's dims of this module.
    static constexpr edgeattn_attention_dims dims{Batch,   Queries,   Keys,       QuerySize,
                                                  KeySize, ValueSize, NumHiddens, 0, 0, 0};

    /// Borrows the weights (the pointers are copied, not the arrays).
    /// @param weights W_q (NumHiddens, QuerySize), W_k (NumHiddens, KeySize), W_v = w_v
    ///                (1, NumHiddens), each in any edgeattn_dtype
    explicit AdditiveAttention(const edgeattn_weights &weights) : weights_(weights) {}

/// @cond DEPRECATED_NAMES
#ifndef EDGEATTN_NO_DEPRECATED
    /// fp32 weights in the 0.x struct.
    [[deprecated("use the edgeattn_weights constructor")]] explicit AdditiveAttention(
        const edgeattn_additive_weights &weights)
        : weights_(edgeattn_detail_additive_weights(edgeattn_detail_f32_matrix(weights.W_q),
                                                    edgeattn_detail_f32_matrix(weights.W_k),
                                                    weights.w_v)) {}
#endif
/// @endcond

    /// edgeattn_additive() on the member workspace.
    /// @param queries (Batch, Queries, QuerySize)
    /// @param keys    (Batch, Keys, KeySize)
    /// @param values  (Batch, Keys, ValueSize)
    /// @param valid_lens nullptr (no mask), or (Batch) or (Batch, Queries) valid lengths
    /// @param output     (Batch, Queries, ValueSize)
    /// @param attention_weights nullptr, or (Batch, Queries, Keys)
    /// @return ::EDGEATTN_OK, or the status the C call returns: invalid pointers,
    ///         alignment, valid lengths or overlaps (the workspace is always large enough)
    Status forward(const float *queries, const float *keys, const float *values,
                   const ValidLens *valid_lens, float *output,
                   float *attention_weights = nullptr) {
        const edgeattn_attention_options options = detail::options_of(valid_lens);
        return edgeattn_additive(&dims, queries, keys, values, &weights_, &options,
                                 workspace_.data(), workspace_.bytes, output, attention_weights);
    }

  private:
    edgeattn_weights weights_;
    detail::workspace_storage<
        detail::make_additive_layout(Batch, Queries, Keys, QuerySize, KeySize, ValueSize,
                                     NumHiddens, MaxThreads)
            .bytes>
        workspace_;
};

/// Multi-head attention weights packed once (edgeattn_mha_pack()) into a
/// member array, for the fixed-size modules: constructed from it, their
/// calls skip the per-call packing of
/// W_q, W_k, W_v, W_o (d2l's 2x4x100x5 block: ~3x faster, bench/NOTES.md),
/// for sizeof(PackedMhaWeights) of RAM. Without it the modules read the
/// weights where they are (flash) and pack them per call into the workspace.
/// @tparam QuerySize q @tparam KeySize k @tparam ValueSize v
/// @tparam NumHiddens h @tparam NumHeads H (divides NumHiddens)
template <std::size_t QuerySize, std::size_t KeySize, std::size_t ValueSize, std::size_t NumHiddens,
          std::size_t NumHeads>
class PackedMhaWeights {
    static_assert(NumHiddens % NumHeads == 0, "num_hiddens must be divisible by num_heads");

  public:
    /// Bytes of fp32 weights packed; int8 and fp16 ones take less (the
    /// packing call checks).
    static constexpr std::size_t bytes =
        detail::make_mha_packed_weights_layout(QuerySize, KeySize, ValueSize, NumHiddens, NumHiddens).bytes;

/// @cond DEPRECATED_NAMES
#ifndef EDGEATTN_NO_DEPRECATED
    [[deprecated("pack edgeattn_weights")]] Status pack(const edgeattn_mha_weights &weights) {
        const edgeattn_weights w = edgeattn_detail_f32_weights(&weights);
        return edgeattn_mha_pack(&feature_dims, &w, storage_.data(), bytes);
    }
#endif
/// @endcond

    /// Packs the weights (they may then go away), each matrix staying in its
    /// edgeattn_dtype. Until a pack succeeds, a module built on this object
    /// returns ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH.
    /// @param weights the four matrices and their scales, fp32 biases or nullptr
    /// @return ::EDGEATTN_OK or the status of edgeattn_mha_pack()
    Status pack(const edgeattn_weights &weights) {
        return edgeattn_mha_pack(&feature_dims, &weights, storage_.data(), bytes);
    }

    /// The packed buffer, for the C *_packed calls.
    /// @return the first of #bytes bytes
    const void *data() const { return storage_.floats; }

  private:
    // Packing reads the feature sizes and heads only.
    static constexpr edgeattn_attention_dims feature_dims{1, 1, 1, QuerySize, KeySize, ValueSize,
                                                          NumHiddens, NumHeads, 0, 0};
    detail::workspace_storage<bytes> storage_{};
};

namespace detail {

// The weights a fixed-size multi-head module runs with: borrowed as given
// (packed per call) or packed once (PackedMhaWeights). The C call to make
// is a function pointer set by the constructor used, not a branch in
// forward(), so a program links only the calls its modules make: an image
// of unpacked modules carries no *_packed entry point (1.2 KB of
// Cortex-M4F flash).
class mha_module_weights {
  public:
    static mha_module_weights borrowed(const edgeattn_weights &weights) {
        return mha_module_weights(weights, nullptr, 0, &call_given);
    }
    static mha_module_weights packed_once(const void *packed, std::size_t packed_bytes) {
        return mha_module_weights(edgeattn_weights{}, packed, packed_bytes, &call_packed);
    }

    Status forward(const edgeattn_attention_dims &dims, const float *queries, const float *keys,
                   const float *values, const ValidLens *valid_lens, void *workspace,
                   std::size_t workspace_bytes, float *output, float *attention_weights) const {
        return call_(*this, dims, queries, keys, values, valid_lens, workspace, workspace_bytes, output,
                     attention_weights);
    }

  private:
    using call_fn = Status (*)(const mha_module_weights &, const edgeattn_attention_dims &, const float *,
                               const float *, const float *, const ValidLens *, void *, std::size_t, float *,
                               float *);

    mha_module_weights(const edgeattn_weights &given, const void *packed, std::size_t packed_bytes,
                       call_fn call)
        : given_(given), packed_(packed), packed_bytes_(packed_bytes), call_(call) {}

    static Status call_given(const mha_module_weights &w, const edgeattn_attention_dims &dims, const float *queries,
                             const float *keys, const float *values, const ValidLens *valid_lens, void *workspace,
                             std::size_t workspace_bytes, float *output, float *attention_weights) {
        const edgeattn_attention_options options = options_of(valid_lens);
        return edgeattn_mha(&dims, queries, keys, values, &w.given_, &options, workspace, workspace_bytes,
                            output, attention_weights);
    }
    static Status call_packed(const mha_module_weights &w, const edgeattn_attention_dims &dims,
                              const float *queries, const float *keys, const float *values,
                              const ValidLens *valid_lens, void *workspace, std::size_t workspace_bytes,
                              float *output, float *attention_weights) {
        const edgeattn_attention_options options = options_of(valid_lens);
        return edgeattn_mha_packed(&dims, queries, keys, values, w.packed_, w.packed_bytes_, &options,
                                   workspace, workspace_bytes, output, attention_weights);
    }

    edgeattn_weights given_;
    const void *packed_;
    std::size_t packed_bytes_;
    call_fn call_;
};

}  // namespace detail

/// d2l's MultiHeadAttention: queries (Batch, Queries, QuerySize), keys
/// (Batch, Keys, KeySize), values (Batch, Keys, ValueSize) -> output (Batch,
/// Queries, NumHiddens); attention_weights (Batch, NumHeads, Queries, Keys)
/// if not null. Self-attention without positions is forward(X, X, X, ...).
/// The workspace for MaxThreads threads is a member (sizeof is the RAM).
/// @tparam Batch B @tparam Queries Q @tparam Keys K @tparam QuerySize q
/// @tparam KeySize k @tparam ValueSize v @tparam NumHiddens h
/// @tparam NumHeads H (divides NumHiddens) @tparam MaxThreads threads a call may use
template <std::size_t Batch, std::size_t Queries, std::size_t Keys, std::size_t QuerySize,
          std::size_t KeySize, std::size_t ValueSize, std::size_t NumHiddens,
          std::size_t NumHeads, std::size_t MaxThreads = 1>
class MultiHeadAttention {
    static_assert(Batch > 0 && Queries > 0 && Keys > 0 && QuerySize > 0 && KeySize > 0 &&
                      ValueSize > 0 && NumHiddens > 0 && NumHeads > 0 && MaxThreads > 0,
                  "dimensions must be positive");
    static_assert(NumHiddens % NumHeads == 0, "num_hiddens must be divisible by num_heads");
    static_assert(detail::tensor_fits(Batch, Queries, QuerySize) && detail::tensor_fits(Batch, Keys, KeySize) &&
                      detail::tensor_fits(Batch, Keys, ValueSize) &&
                      detail::tensor_fits(Batch, Queries, NumHiddens) &&
                      detail::tensor_fits(Batch, NumHeads, Queries, Keys) &&
                      detail::tensor_fits(NumHiddens, NumHiddens),
                  "a tensor's size overflows size_t");

  public:
    /// The C API's dims of this module.
    static constexpr edgeattn_attention_dims dims{Batch,     Queries,   Keys,       QuerySize,
                                                  KeySize,   ValueSize, NumHiddens, NumHeads, 0, 0};

/// @cond DEPRECATED_NAMES
#ifndef EDGEATTN_NO_DEPRECATED
    [[deprecated("use the edgeattn_weights constructor")]] explicit MultiHeadAttention(
        const edgeattn_mha_weights &weights)
        : weights_(detail::mha_module_weights::borrowed(edgeattn_detail_f32_weights(&weights))) {}
#endif
/// @endcond

    /// Borrows the weights (the descriptor is copied, not the arrays), each
    /// matrix in its own edgeattn_dtype; e.g. int8 arrays in flash.
    /// @param weights W_q (NumHiddens, QuerySize), W_k (NumHiddens, KeySize),
    ///                W_v (NumHiddens, ValueSize), W_o (NumHiddens, NumHiddens)
    ///                and their scales; fp32 biases (NumHiddens) or nullptr
    explicit MultiHeadAttention(const edgeattn_weights &weights)
        : weights_(detail::mha_module_weights::borrowed(weights)) {}

    /// The packed-weights form of this module's sizes.
    using Packed = PackedMhaWeights<QuerySize, KeySize, ValueSize, NumHiddens, NumHeads>;

    /// Borrows weights packed once (Packed::pack()); forward() then runs
    /// edgeattn_mha_packed().
    /// @param packed packed weights of this module's sizes; must outlive the module
    explicit MultiHeadAttention(const Packed &packed)
        : weights_(detail::mha_module_weights::packed_once(packed.data(), Packed::bytes)) {}

    /// edgeattn_mha() on the member workspace.
    /// @param queries (Batch, Queries, QuerySize)
    /// @param keys    (Batch, Keys, KeySize)
    /// @param values  (Batch, Keys, ValueSize)
    /// @param valid_lens nullptr (no mask), or (Batch) or (Batch, Queries) valid lengths
    /// @param output     (Batch, Queries, NumHiddens)
    /// @param attention_weights nullptr, or (Batch, NumHeads, Queries, Keys)
    /// @return ::EDGEATTN_OK, or the status the C call returns: invalid pointers,
    ///         alignment, valid lengths or overlaps (the workspace is always large enough)
    Status forward(const float *queries, const float *keys, const float *values,
                   const ValidLens *valid_lens, float *output,
                   float *attention_weights = nullptr) {
        return weights_.forward(dims, queries, keys, values, valid_lens, workspace_.data(), workspace_.bytes,
                                output, attention_weights);
    }

  private:
    detail::mha_module_weights weights_;
    detail::workspace_storage<
        detail::make_multi_head_layout(Batch, Queries, Keys, QuerySize, KeySize, ValueSize,
                                       NumHiddens, NumHeads, MaxThreads)
            .bytes>
        workspace_;
};

/// The input block of d2l's Transformer: X + P (sinusoidal positions from a
/// compile-time table in .rodata), then multi-head self-attention with
/// W_q, W_k, W_v, W_o all (Dim, Dim). (Self-attention alone, without the
/// positions, is MultiHeadAttention with X three times.) X (Batch, SeqLen, Dim) -> output
/// (Batch, SeqLen, Dim); attention_weights (Batch, NumHeads, SeqLen, SeqLen).
/// Members: the X + P buffer (Batch * SeqLen * Dim floats) and the workspace
/// for MaxThreads threads (sizeof is the RAM).
/// @tparam Batch B @tparam SeqLen n (queries = keys) @tparam Dim d = num_hiddens
/// @tparam NumHeads H (divides Dim) @tparam MaxLen rows of the positional table (>= SeqLen)
/// @tparam MaxThreads threads a call may use
template <std::size_t Batch, std::size_t SeqLen, std::size_t Dim, std::size_t NumHeads,
          std::size_t MaxLen = SeqLen, std::size_t MaxThreads = 1>
class PositionalSelfAttention {
    static_assert(Batch > 0 && SeqLen > 0 && Dim > 0 && NumHeads > 0 && MaxThreads > 0,
                  "dimensions must be positive");
    static_assert(Dim % NumHeads == 0, "num_hiddens must be divisible by num_heads");
    static_assert(SeqLen <= MaxLen, "the sequence is longer than the positional table");
    static_assert(detail::tensor_fits(Batch, SeqLen, Dim) && detail::tensor_fits(Batch, NumHeads, SeqLen, SeqLen) &&
                      detail::tensor_fits(MaxLen, Dim) && detail::tensor_fits(Dim, Dim),
                  "a tensor's size overflows size_t");

  public:
    /// The C API's dims of this module.
    static constexpr edgeattn_attention_dims dims{Batch, SeqLen, SeqLen, Dim,
                                                  Dim,   Dim,    Dim,    NumHeads, 0, 0};
    /// The positional table P (MaxLen, Dim) added to X, in .rodata.
    static constexpr const PositionalEncodingTable<MaxLen, Dim> &positions =
        positional_encoding_table<MaxLen, Dim>;

/// @cond DEPRECATED_NAMES
#ifndef EDGEATTN_NO_DEPRECATED
    [[deprecated("use the edgeattn_weights constructor")]] explicit PositionalSelfAttention(
        const edgeattn_mha_weights &weights)
        : weights_(detail::mha_module_weights::borrowed(edgeattn_detail_f32_weights(&weights))) {}
#endif
/// @endcond

    /// Borrows weights stored in int8 / fp16 (or fp32), each matrix in its own
    /// edgeattn_dtype (edgeattn/convert.h makes them): an int8 d2l block keeps a
    /// quarter of the fp32 weight bytes in flash.
    /// @param weights W_q, W_k, W_v, W_o, each (Dim, Dim) as stored; biases (Dim) or nullptr
    explicit PositionalSelfAttention(const edgeattn_weights &weights)
        : weights_(detail::mha_module_weights::borrowed(weights)) {}

    /// The packed-weights form of this module's sizes.
    using Packed = PackedMhaWeights<Dim, Dim, Dim, Dim, NumHeads>;

    /// Borrows weights packed once (Packed::pack()): forward() skips the
    /// per-call packing.
    /// @param packed packed weights of this module's sizes; must outlive the module
    explicit PositionalSelfAttention(const Packed &packed)
        : weights_(detail::mha_module_weights::packed_once(packed.data(), Packed::bytes)) {}

    /// X + P[:SeqLen] into the member buffer (edgeattn_positional_encoding_add_at()),
    /// then edgeattn_mha() with X + P as queries, keys and values with the member workspace.
    /// @param X (Batch, SeqLen, Dim), without positions; must not be the member buffer
    /// @param valid_lens nullptr (no mask), or (Batch) or (Batch, Queries) valid lengths
    /// @param output     (Batch, SeqLen, Dim)
    /// @param attention_weights nullptr, or (Batch, NumHeads, SeqLen, SeqLen)
    /// @return ::EDGEATTN_OK, or the status the C call returns: invalid pointers,
    ///         alignment, valid lengths or overlaps (the workspace is always large enough)
    Status forward(const float *X, const ValidLens *valid_lens, float *output,
                   float *attention_weights = nullptr) {
        if (X == inputs_with_positions_) return EDGEATTN_ERR_OVERLAP;
        const Status st = edgeattn_positional_encoding_add_at(Batch, SeqLen, Dim, 0, X, positions.data(),
                                                              MaxLen, inputs_with_positions_);
        if (st != EDGEATTN_OK) return st;
        return weights_.forward(dims, inputs_with_positions_, inputs_with_positions_, inputs_with_positions_,
                                valid_lens, workspace_.data(), workspace_.bytes, output, attention_weights);
    }

  private:
    detail::mha_module_weights weights_;
    alignas(64) float inputs_with_positions_[Batch * SeqLen * Dim];  // X + P
    detail::workspace_storage<
        detail::make_multi_head_layout(Batch, SeqLen, SeqLen, Dim, Dim, Dim, Dim, NumHeads,
                                       MaxThreads)
            .bytes>
        workspace_;
};

/// The 0.x name of PositionalSelfAttention: deprecated, because
/// self-attention alone is multi-head attention of (X, X, X) without the
/// positional encoding, and the two must not share a name.
template <std::size_t Batch, std::size_t SeqLen, std::size_t Dim, std::size_t NumHeads,
          std::size_t MaxLen = SeqLen, std::size_t MaxThreads = 1>
using SelfAttention [[deprecated(
    "renamed edgeattn::PositionalSelfAttention (it adds the positional encoding; "
    "edgeattn_mha does not)")]] =
    PositionalSelfAttention<Batch, SeqLen, Dim, NumHeads, MaxLen, MaxThreads>;

}  // namespace edgeattn

#endif /* EDGEATTN_ATTENTION_HPP */
