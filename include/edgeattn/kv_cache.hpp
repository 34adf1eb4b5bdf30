/// @file
/// edgeattn C++17 fixed-size KV cache: the twin of the C API's
/// ::edgeattn_kv_cache (edgeattn/kv_cache.h) whose sizes are template
/// parameters and whose memory is a member array, so sizeof(KVCache) is the
/// RAM a decoder's cache needs and shapes that cannot work fail at compile
/// time. Every member is a thin layer over one C call on the owned cache:
/// same arguments (minus the cache), same kernels, same status codes.
#ifndef EDGEATTN_KV_CACHE_HPP
#define EDGEATTN_KV_CACHE_HPP

#include <cstddef>
#include <cstdint>

#include "deprecated.h"
#include "detail/module_common.hpp"
#include "detail/workspace_layout.hpp"
#include "kv_cache.h"

namespace edgeattn {

/// A KV cache for incremental decoding that owns its memory: keys and
/// values (Batch, KvHeads, Capacity, HeadSize) and the Batch lengths, in one
/// 64-byte aligned member array. The constructor lays it out with
/// edgeattn_kv_cache_setup() (no heap, no exceptions); the members are the
/// C calls on it. The cache holds pointers into itself, so it can be neither
/// copied nor moved: make it a static, a member, or a local that lives as
/// long as the decoding.
///
/// One decode step of a self-attention block with n new tokens X_new
/// (Batch, n, d) is store(&dims, n, X_new, X_new, &weights, ...) then
/// attend(&dims, X_new, &weights, &options, ...) with dims.queries = n,
/// dims.keys = Capacity and options.mask.causal = 1.
/// @tparam Batch B: sequences decoded side by side
/// @tparam KvHeads H_kv: key/value heads (dims.num_kv_heads, or num_heads without GQA)
/// @tparam HeadSize features per head, num_hiddens / num_heads
/// @tparam Capacity positions each batch element can hold (<= INT32_MAX)
/// @tparam Window W: 0, or a window cache of the last W tokens (edgeattn_kv_cache_config::window)
/// @tparam Sinks S: tokens kept from the stream's start, with a window (Capacity = Sinks + Window)
/// @tparam ValueHeadSize dv: features of a value row, dims.value_hiddens / num_heads
///         (edgeattn_kv_cache_config::value_head_size); 0 means HeadSize
template <std::size_t Batch, std::size_t KvHeads, std::size_t HeadSize, std::size_t Capacity,
          std::size_t Window = 0, std::size_t Sinks = 0, std::size_t ValueHeadSize = 0>
class KVCache {
    static_assert(Batch > 0 && KvHeads > 0 && HeadSize > 0 && Capacity > 0,
                  "dimensions must be positive");
    static_assert(Window == 0 ? Sinks == 0 : Sinks <= Capacity && Capacity - Sinks == Window,
                  "a window cache holds Capacity = Sinks + Window rows; sinks need a window");
    static_assert(Capacity <= static_cast<std::size_t>(INT32_MAX),
                  "the capacity must fit in an int32 length");
    static_assert(detail::tensor_fits(Batch, KvHeads, Capacity, HeadSize) &&
                      detail::make_kv_cache_layout(Batch, KvHeads, HeadSize, Capacity, 4, ValueHeadSize).bytes != 0,
                  "the cache's size overflows size_t");

  public:
    /// Bytes of the member memory: keys, values, lengths and positions, each 64-byte
    /// aligned; edgeattn_kv_cache_memory_size() of these sizes (one layout serves both).
    static constexpr std::size_t memory_bytes =
        detail::make_kv_cache_layout(Batch, KvHeads, HeadSize, Capacity, 4, ValueHeadSize).bytes;

    /// Lays the cache out in the member memory and empties it (every length
    /// 0): edgeattn_kv_cache_setup(). Its status is init_status().
    KVCache() noexcept
        : init_status_(setup(cache_, memory_)) {}

    /// Not copyable: the cache points into its own memory.
    KVCache(const KVCache &) = delete;
    /// Not assignable: the cache points into its own memory.
    /// @return never (deleted)
    KVCache &operator=(const KVCache &) = delete;

    /// The status of the constructor's edgeattn_kv_cache_setup(): ::EDGEATTN_OK
    /// for any sizes that compile (otherwise every call returns
    /// ::EDGEATTN_ERR_BAD_CACHE).
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_setup() returned
    Status init_status() const noexcept { return init_status_; }

    /// edgeattn_kv_cache_store(): projects `tokens` new tokens' keys and
    /// values with W_k, W_v (+ b_k, b_v) and writes them after every batch
    /// element's cached positions; lengths grow by `tokens` (a window cache:
    /// up to Capacity). Refused whole
    /// (::EDGEATTN_ERR_CACHE_FULL, nothing written) when any batch element
    /// of a cache without a window has fewer than `tokens` free positions.
    /// @param dims       batch = Batch, key_size, value_size, num_hiddens,
    ///                   num_heads, num_kv_heads (num_hiddens / num_heads = HeadSize,
    ///                   num_kv_heads or num_heads = KvHeads)
    /// @param tokens     T > 0: tokens stored for each batch element
    /// @param keys       (Batch, T, key_size): the new tokens' key inputs (X in self-attention)
    /// @param values     (Batch, T, value_size)
    /// @param weights    W_k (KvHeads * HeadSize, key_size), W_v (KvHeads * HeadSize, value_size)
    ///                   in any edgeattn_dtype, b_k, b_v or nullptr; W_q, W_o are not read
    /// @param workspace  edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_STORE
    /// @param workspace_bytes its size in bytes
    /// @param options    nullptr, or a rope: the keys rotated before they are stored
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_store() returns
    Status store(const edgeattn_attention_dims *dims, std::size_t tokens, const float *keys,
                 const float *values, const edgeattn_weights *weights, void *workspace,
                 std::size_t workspace_bytes, const edgeattn_attention_options *options = nullptr) noexcept {
        return edgeattn_kv_cache_store(&cache_, dims, tokens, keys, values, weights, options,
                                       workspace, workspace_bytes);
    }

    /// edgeattn_kv_cache_store_packed(): store() with weights from edgeattn_mha_pack().
    /// @param dims       as for store(), plus query_size as packed
    /// @param tokens     T > 0
    /// @param keys       (Batch, T, key_size)
    /// @param values     (Batch, T, value_size)
    /// @param packed     from edgeattn_mha_pack() for these dims
    /// @param packed_bytes its size in bytes
    /// @param workspace  edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_STORE
    /// @param workspace_bytes its size in bytes
    /// @param options    nullptr, or a rope, as for store()
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_store_packed() returns
    Status store_packed(const edgeattn_attention_dims *dims, std::size_t tokens, const float *keys,
                        const float *values, const void *packed, std::size_t packed_bytes,
                        void *workspace, std::size_t workspace_bytes,
                        const edgeattn_attention_options *options = nullptr) noexcept {
        return edgeattn_kv_cache_store_packed(&cache_, dims, tokens, keys, values, packed,
                                              packed_bytes, options, workspace, workspace_bytes);
    }

    /// edgeattn_kv_cache_attend(): multi-head attention of Q new queries
    /// over everything cached (batch element b: its length(b) positions),
    /// projected with W_q (+ b_q), heads concatenated, then W_o (+ b_o).
    /// For a decode step, store the step's tokens first and pass
    /// options->mask.causal = 1 (a single token sees the whole cache without it).
    /// @param dims       batch = Batch, queries = Q, keys = Capacity (or 0), query_size,
    ///                   num_hiddens, num_heads, num_kv_heads
    /// @param queries    (Batch, Q, query_size)
    /// @param weights    W_q (num_hiddens, query_size), W_o (num_hiddens, num_hiddens)
    ///                   in any edgeattn_dtype, b_q, b_o or nullptr; W_k, W_v are not read
    /// @param options    nullptr, or a mask over cache positions (bias rows of
    ///                   bias_keys >= Capacity floats) and a rope (the queries rotated)
    /// @param workspace  edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_ATTEND
    /// @param workspace_bytes its size in bytes
    /// @param output     (Batch, Q, num_hiddens)
    /// @param attention_weights nullptr, or (Batch, num_heads, Q, Capacity); columns
    ///                   at or past length(b) are 0
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_attend() returns
    Status attend(const edgeattn_attention_dims *dims, const float *queries,
                  const edgeattn_weights *weights, const edgeattn_attention_options *options,
                  void *workspace, std::size_t workspace_bytes, float *output,
                  float *attention_weights = nullptr) const noexcept {
        return edgeattn_kv_cache_attend(&cache_, dims, queries, weights, options, workspace,
                                        workspace_bytes, output, attention_weights);
    }

    /// edgeattn_kv_cache_attend_packed(): attend() with weights from edgeattn_mha_pack().
    /// @param dims       as for attend(), plus key_size, value_size as packed
    /// @param queries    (Batch, Q, query_size)
    /// @param packed     from edgeattn_mha_pack() for these dims
    /// @param packed_bytes its size in bytes
    /// @param options    nullptr, or as for attend()
    /// @param workspace  edgeattn_workspace_size() bytes for EDGEATTN_OP_KV_CACHE_ATTEND
    /// @param workspace_bytes its size in bytes
    /// @param output     (Batch, Q, num_hiddens)
    /// @param attention_weights nullptr, or (Batch, num_heads, Q, Capacity)
    /// @return ::EDGEATTN_OK, or the status edgeattn_kv_cache_attend_packed() returns
    Status attend_packed(const edgeattn_attention_dims *dims, const float *queries,
                         const void *packed, std::size_t packed_bytes,
                         const edgeattn_attention_options *options, void *workspace,
                         std::size_t workspace_bytes, float *output,
                         float *attention_weights = nullptr) const noexcept {
        return edgeattn_kv_cache_attend_packed(&cache_, dims, queries, packed, packed_bytes,
                                               options, workspace, workspace_bytes, output,
                                               attention_weights);
    }

/// @cond DEPRECATED_NAMES
#ifndef EDGEATTN_NO_DEPRECATED
    /// 0.x name of store() with fp32 weights.
    [[deprecated("use store()")]] Status append(const edgeattn_attention_dims *dims,
                                                std::size_t tokens, const float *keys,
                                                const float *values,
                                                const edgeattn_mha_weights *weights,
                                                void *workspace,
                                                std::size_t workspace_bytes) noexcept {
        if (!weights) return EDGEATTN_ERR_NULL_POINTER;
        const edgeattn_weights w = edgeattn_detail_f32_weights(weights);
        return store(dims, tokens, keys, values, &w, workspace, workspace_bytes);
    }
    /// 0.x name of store_packed().
    [[deprecated("use store_packed()")]] Status append_packed(
        const edgeattn_attention_dims *dims, std::size_t tokens, const float *keys,
        const float *values, const void *packed, std::size_t packed_bytes, void *workspace,
        std::size_t workspace_bytes) noexcept {
        return store_packed(dims, tokens, keys, values, packed, packed_bytes, workspace,
                            workspace_bytes);
    }
    /// 0.x name of attend() with fp32 weights and a mask.
    [[deprecated("use attend()")]] Status attention(const edgeattn_attention_dims *dims,
                                                    const float *queries,
                                                    const edgeattn_attention_mask *mask,
                                                    const edgeattn_mha_weights *weights,
                                                    void *workspace, std::size_t workspace_bytes,
                                                    float *output,
                                                    float *attention_weights = nullptr) const noexcept {
        if (!weights) return EDGEATTN_ERR_NULL_POINTER;
        const edgeattn_weights w = edgeattn_detail_f32_weights(weights);
        const edgeattn_attention_options o = edgeattn_detail_options(nullptr, mask);
        return attend(dims, queries, &w, &o, workspace, workspace_bytes, output,
                      attention_weights);
    }
    /// 0.x name of attend_packed() with a mask.
    [[deprecated("use attend_packed()")]] Status attention_packed(
        const edgeattn_attention_dims *dims, const float *queries,
        const edgeattn_attention_mask *mask, const void *packed, std::size_t packed_bytes,
        void *workspace, std::size_t workspace_bytes, float *output,
        float *attention_weights = nullptr) const noexcept {
        const edgeattn_attention_options o = edgeattn_detail_options(nullptr, mask);
        return attend_packed(dims, queries, packed, packed_bytes, &o, workspace, workspace_bytes,
                             output, attention_weights);
    }
#endif
/// @endcond

    /// edgeattn_kv_cache_truncate(): drops batch element b's positions from
    /// `length` on (beam search, a rejected draft); its next store writes there.
    /// @param batch_index b < Batch
    /// @param length      the new length, at most length(b)
    /// @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_PAST_CACHE_LENGTH (b >= Batch, or
    ///         `length` above the current length), ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED
    ///         (a window cache whose ring has wrapped)
    Status truncate(std::size_t batch_index, std::size_t length) noexcept {
        return edgeattn_kv_cache_truncate(&cache_, batch_index, length);
    }

    /// edgeattn_kv_cache_reset(): empties every batch element (lengths and
    /// positions 0), to decode new sequences.
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
    static Status setup(edgeattn_kv_cache &cache, unsigned char *memory) noexcept {
        const edgeattn_kv_cache_config config{Batch,  KvHeads, HeadSize,      Capacity, EDGEATTN_DTYPE_F32,
                                              Window, Sinks,   ValueHeadSize, EDGEATTN_ARITHMETIC_FLOAT};
        return edgeattn_kv_cache_setup(&cache, &config, memory, memory_bytes);
    }

    alignas(64) unsigned char memory_[memory_bytes];  // keys, values, lengths, positions
    edgeattn_kv_cache cache_{};
    Status init_status_;
};

}  // namespace edgeattn

#endif
