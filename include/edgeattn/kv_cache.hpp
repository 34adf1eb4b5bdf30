/// @file
/// edgeattn C++17 fixed-size KV cache: the twin of the C API's
/// ::edgeattn_kv_cache (edgeattn/decoder.h) whose sizes are template
/// parameters and whose memory is a member array, so sizeof(KVCache) is the
/// RAM a decoder's cache needs and shapes that cannot work fail at compile
/// time. Every member is a thin layer over one C call on the owned cache:
/// same arguments (minus the cache), same kernels, same status codes.
#ifndef EDGEATTN_KV_CACHE_HPP
#define EDGEATTN_KV_CACHE_HPP

#include <cstddef>
#include <cstdint>

#include "detail/workspace_layout.hpp"
#include "edgeattn.h"
#include "edgeattn.hpp"

namespace edgeattn {

/// A KV cache for incremental decoding that owns its memory: keys and
/// values (Batch, KvHeads, Capacity, HeadSize) and the Batch lengths, in one
/// 64-byte aligned member array. The constructor lays it out with
/// edgeattn_kv_cache_init() (no heap, no exceptions); the members are the
/// C calls on it. The cache holds pointers into itself, so it can be neither
/// copied nor moved: make it a static, a member, or a local that lives as
/// long as the decoding.
///
/// One decode step of a self-attention block with n new tokens X_new
/// (Batch, n, d) is append(&dims, n, X_new, X_new, &weights, ...) then
/// attention(&dims, X_new, &causal, &weights, ...) with dims.queries = n,
/// dims.keys = Capacity and a mask with causal = 1.
/// @tparam Batch B: sequences decoded side by side
/// @tparam KvHeads H_kv: key/value heads (dims.num_kv_heads, or num_heads without GQA)
/// @tparam HeadSize features per head, num_hiddens / num_heads
/// @tparam Capacity positions each batch element can hold (<= INT32_MAX)
template <std::size_t Batch, std::size_t KvHeads, std::size_t HeadSize, std::size_t Capacity>
class KVCache {
    static_assert(Batch > 0 && KvHeads > 0 && HeadSize > 0 && Capacity > 0,
                  "dimensions must be positive");
    static_assert(Capacity <= static_cast<std::size_t>(INT32_MAX),
                  "the capacity must fit in an int32 length");
    static_assert(detail::tensor_fits(Batch, KvHeads, Capacity, HeadSize) &&
                      detail::make_kv_cache_layout(Batch, KvHeads, HeadSize, Capacity).bytes != 0,
                  "the cache's size overflows size_t");

  public:
    /// Bytes of the member memory: keys, values and lengths, each 64-byte
    /// aligned; edgeattn_kv_cache_size() of these sizes (one layout serves both).
    static constexpr std::size_t memory_bytes =
        detail::make_kv_cache_layout(Batch, KvHeads, HeadSize, Capacity).bytes;

    /// Lays the cache out in the member memory and empties it (every length
    /// 0): edgeattn_kv_cache_init(). Its status is init_status().
    KVCache() noexcept
        : init_status_(edgeattn_kv_cache_init(&cache_, Batch, KvHeads, HeadSize, Capacity, memory_,
                                              memory_bytes)) {}

    /// Not copyable: the cache points into its own memory.
    KVCache(const KVCache &) = delete;
    /// Not assignable: the cache points into its own memory.
    /// @return never (deleted)
    KVCache &operator=(const KVCache &) = delete;

    /// The status of the constructor's edgeattn_kv_cache_init(): ::EDGEATTN_OK
    /// for any sizes that compile (otherwise every call returns
    /// ::EDGEATTN_ERR_BAD_CACHE).
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_init() returned
    Status init_status() const noexcept { return init_status_; }

    /// edgeattn_kv_cache_append(): projects `tokens` new tokens' keys and
    /// values with W_k, W_v (+ b_k, b_v) and writes them after every batch
    /// element's cached positions; lengths grow by `tokens`. Refused whole
    /// (::EDGEATTN_ERR_CACHE_FULL, nothing written) when any batch element
    /// has fewer than `tokens` free positions.
    /// @param dims       batch = Batch, key_size, value_size, num_hiddens,
    ///                   num_heads, num_kv_heads (num_hiddens / num_heads = HeadSize,
    ///                   num_kv_heads or num_heads = KvHeads)
    /// @param tokens     T > 0: tokens appended to each batch element
    /// @param keys       (Batch, T, key_size): the new tokens' key inputs (X in self-attention)
    /// @param values     (Batch, T, value_size)
    /// @param weights    W_k (KvHeads * HeadSize, key_size), W_v (KvHeads * HeadSize, value_size),
    ///                   b_k, b_v or nullptr; W_q, W_o are not read
    /// @param workspace  edgeattn_kv_cache_append_workspace_size() bytes
    /// @param workspace_bytes its size in bytes
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_append() returns
    Status append(const edgeattn_attention_dims *dims, std::size_t tokens, const float *keys,
                  const float *values, const edgeattn_mha_weights *weights, void *workspace,
                  std::size_t workspace_bytes) noexcept {
        return edgeattn_kv_cache_append(&cache_, dims, tokens, keys, values, weights, workspace,
                                        workspace_bytes);
    }

    /// edgeattn_kv_cache_append_packed(): append() with weights from
    /// edgeattn_mha_pack_weights().
    /// @param dims       as for append(), plus query_size as packed
    /// @param tokens     T > 0
    /// @param keys       (Batch, T, key_size)
    /// @param values     (Batch, T, value_size)
    /// @param packed     from edgeattn_mha_pack_weights() for these dims
    /// @param packed_bytes its size in bytes
    /// @param workspace  edgeattn_kv_cache_append_workspace_size() bytes
    /// @param workspace_bytes its size in bytes
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_append_packed() returns
    Status append_packed(const edgeattn_attention_dims *dims, std::size_t tokens, const float *keys,
                         const float *values, const void *packed, std::size_t packed_bytes,
                         void *workspace, std::size_t workspace_bytes) noexcept {
        return edgeattn_kv_cache_append_packed(&cache_, dims, tokens, keys, values, packed,
                                               packed_bytes, workspace, workspace_bytes);
    }

    /// edgeattn_kv_cache_attention(): multi-head attention of Q new queries
    /// over everything cached (batch element b: its length(b) positions),
    /// projected with W_q (+ b_q), heads concatenated, then W_o (+ b_o).
    /// For a decode step, append the step's tokens first and pass a mask with
    /// causal = 1 (a single token sees the whole cache without one).
    /// @param dims       batch = Batch, queries = Q, keys = Capacity, query_size,
    ///                   num_hiddens, num_heads, num_kv_heads
    /// @param queries    (Batch, Q, query_size)
    /// @param mask       nullptr, or causal / key ranges / bias over cache positions
    ///                   (::edgeattn_attention_mask; bias rows of bias_keys >= Capacity floats)
    /// @param weights    W_q (num_hiddens, query_size), W_o (num_hiddens, num_hiddens),
    ///                   b_q, b_o or nullptr; W_k, W_v are not read
    /// @param workspace  edgeattn_kv_cache_attention_workspace_size() bytes
    /// @param workspace_bytes its size in bytes
    /// @param output     (Batch, Q, num_hiddens)
    /// @param attention_weights nullptr, or (Batch, num_heads, Q, Capacity); columns
    ///                   at or past length(b) are 0
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_attention() returns
    Status attention(const edgeattn_attention_dims *dims, const float *queries,
                     const edgeattn_attention_mask *mask, const edgeattn_mha_weights *weights,
                     void *workspace, std::size_t workspace_bytes, float *output,
                     float *attention_weights = nullptr) const noexcept {
        return edgeattn_kv_cache_attention(&cache_, dims, queries, mask, weights, workspace,
                                           workspace_bytes, output, attention_weights);
    }

    /// edgeattn_kv_cache_attention_packed(): attention() with weights from
    /// edgeattn_mha_pack_weights().
    /// @param dims       as for attention(), plus key_size, value_size as packed
    /// @param queries    (Batch, Q, query_size)
    /// @param mask       nullptr, or as for attention()
    /// @param packed     from edgeattn_mha_pack_weights() for these dims
    /// @param packed_bytes its size in bytes
    /// @param workspace  edgeattn_kv_cache_attention_workspace_size() bytes
    /// @param workspace_bytes its size in bytes
    /// @param output     (Batch, Q, num_hiddens)
    /// @param attention_weights nullptr, or (Batch, num_heads, Q, Capacity)
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_attention_packed() returns
    Status attention_packed(const edgeattn_attention_dims *dims, const float *queries,
                            const edgeattn_attention_mask *mask, const void *packed,
                            std::size_t packed_bytes, void *workspace,
                            std::size_t workspace_bytes, float *output,
                            float *attention_weights = nullptr) const noexcept {
        return edgeattn_kv_cache_attention_packed(&cache_, dims, queries, mask, packed,
                                                  packed_bytes, workspace, workspace_bytes, output,
                                                  attention_weights);
    }

    /// edgeattn_kv_cache_truncate(): drops batch element b's positions from
    /// `length` on (beam search, a rejected draft); its next append writes there.
    /// @param batch_index b < Batch
    /// @param length      the new length, at most length(b)
    /// @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_BAD_CACHE (b >= Batch, or
    ///         `length` above the current length)
    Status truncate(std::size_t batch_index, std::size_t length) noexcept {
        return edgeattn_kv_cache_truncate(&cache_, batch_index, length);
    }

    /// edgeattn_kv_cache_reset(): empties every batch element (lengths 0),
    /// to decode new sequences.
    /// @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_BAD_CACHE if the constructor's init failed
    Status reset() noexcept { return edgeattn_kv_cache_reset(&cache_); }

    /// Positions batch element b holds (0 to Capacity).
    /// @param batch_index b
    /// @return its length; 0 for b >= Batch or a cache whose init failed
    std::size_t length(std::size_t batch_index) const noexcept {
        if (init_status_ != EDGEATTN_OK || batch_index >= Batch) return 0;
        return static_cast<std::size_t>(cache_.lengths[batch_index]);
    }

    /// The C cache this object wraps (read-only), for the C calls.
    /// @return the ::edgeattn_kv_cache over the member memory
    const edgeattn_kv_cache &c_cache() const noexcept { return cache_; }

  private:
    alignas(64) unsigned char memory_[memory_bytes];  // keys, values, lengths
    edgeattn_kv_cache cache_{};
    Status init_status_;
};

}  // namespace edgeattn

#endif
