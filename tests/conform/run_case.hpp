// Runs one case file's op through the edgeattn C API.
#ifndef EDGEATTN_TESTS_RUN_CASE_HPP
#define EDGEATTN_TESTS_RUN_CASE_HPP

#include "case_file.hpp"

#include <cstddef>
#include <string>

namespace edgeattn_conform {

// Threads a workspace is sized for when run_case is given 0: OpenMP's
// maximum where this file is built with OpenMP, else 64 (more room than any
// call here uses; the library uses at most what the workspace fits).
std::size_t default_max_threads();

// Runs in.op on the input tensors and params of `in`. On success `out` holds
// in's version, op, params and input tensors, then one `result` tensor per
// `expect` tensor of `in`, same name and shape, in the same order (kind f32,
// or i32 for an integer output: kv_cache_decode's chunk_status); a case with
// no expected tensors gets every output the op has.
// Optional outputs (attention_weights) are requested from the library only
// when expected, so a case without them exercises the weight-free path.
// A malformed or unsupported case, or a library error, gives false and a
// one-line `err`; nothing crashes and no allocation exceeds kMaxElements
// floats per tensor. Valid lengths and the decoder's masks (causal,
// key_ranges, bias) go in the call's edgeattn_attention_options; workspaces
// are sized by edgeattn_workspace_size. Self-attention is edgeattn_mha with
// X + P as queries, keys and values. With packed_weights, multi-head and
// self-attention pack their weights once (edgeattn_mha_pack) and run
// edgeattn_mha_packed, kv_cache_decode likewise (edgeattn_kv_cache_store_packed
// and edgeattn_kv_cache_attend_packed; a projection-free decode runs
// unpacked), and linear packs with edgeattn_dense_pack for
// edgeattn_dense_packed. A decode's RoPE params make a table with
// edgeattn_rope_table for the cache calls' options.rope; rope_apply runs
// edgeattn_rope_apply.
bool run_case(const Case &in, Case &out, std::string &err, std::size_t max_threads = 0,
              bool packed_weights = false);

} // namespace edgeattn_conform

#endif
