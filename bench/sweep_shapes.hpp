// Forced into the sweep programs (edgeattn-sweep, edgeattn-sweep-libtorch,
// edgeattn-sweep-onednn; -include, see CMakeLists.txt): they are the
// programs edgeattn-bench[-<peer>] built from the same sources, with the
// attention shapes replaced by a sweep over the sequence length at d2l-ish
// fixed width, d_model 256 and 4 heads (head_dim 64), batch 1. Their sdpa,
// sdpa_weights, mha and mha_weights benchmarks then trace time against seq
// (names as always, e.g. sdpa/edgeattn/1x512x256x4) for
// bench/make_performance_page's time_vs_seq.png, which runs them with
// --benchmark_filter='^(sdpa|sdpa_weights|mha|mha_weights)/' (the other ops
// are registered too).
#ifndef EDGEATTN_BENCH_SWEEP_SHAPES_HPP
#define EDGEATTN_BENCH_SWEEP_SHAPES_HPP

#include "common.hpp"

namespace ebench {

constexpr AttentionShape sweep_attention_shapes[] = {
    {1, 32, 256, 4},  {1, 64, 256, 4},   {1, 128, 256, 4},  {1, 256, 256, 4},
    {1, 512, 256, 4}, {1, 1024, 256, 4}, {1, 2048, 256, 4}};

}  // namespace ebench

// common.hpp is included above, so its own attention_shapes keeps its name;
// every later use in the program's sources reads the sweep instead.
#define attention_shapes sweep_attention_shapes

#endif
