// edgeattn-demo --dump DIR: what the demo computed, as CSV files for
// tools/figures/plot_figures.py (format: tools/figures/tensor_csv.hpp).
#ifndef EDGEATTN_DEMO_DUMP_HPP
#define EDGEATTN_DEMO_DUMP_HPP

#include <cstddef>
#include <cstdint>

namespace demo {

// One forward call of the demo's PositionalSelfAttention: shapes and the arrays.
struct SelfAttentionRun {
    std::size_t batch, queries, num_hiddens, num_heads;
    const std::int32_t *valid_lens;  // (batch)
    const float *X;                  // (batch, queries, num_hiddens), before positions
    const float *output;             // (batch, queries, num_hiddens)
    const float *attention_weights;  // (batch, heads, queries, keys = queries)
    // (num_hiddens, num_hiddens), (out, in) as torch.nn.Linear stores them:
    // with X and valid_lens, all PyTorch needs to recompute the output.
    const float *W_q, *W_k, *W_v, *W_o;
};

// Creates DIR if needed and writes there
//   attention_weights.csv  (batch, head, query, key)
//   output.csv, X.csv      (batch, query, feature)
//   valid_lens.csv         (batch)
//   W_q.csv, W_k.csv, W_v.csv, W_o.csv (out, in)
//   positional_encoding.csv (position, column): edgeattn's table for d2l's
//       figures, 60 positions x 32 columns
// and prints one line per file. On failure prints why on stderr and
// returns false.
bool dump_run(const char *dir, const SelfAttentionRun &run);

}  // namespace demo

#endif
