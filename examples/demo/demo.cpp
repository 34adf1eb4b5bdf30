// edgeattn-demo: d2l's Transformer input block (positional encoding, then
// multi-head self-attention) at the shapes of d2l's self-attention example,
// on edgeattn's fixed-size API.
//
// d2l (Self-Attention and Positional Encoding) builds
//   MultiHeadAttention(num_hiddens=100, num_heads=5), batch_size=2,
//   num_queries=4, valid_lens=[3, 2], X=(2, 4, 100)
// and prints output.shape. Here the same shapes go through
// edgeattn::PositionalSelfAttention, which first adds the sinusoidal positional
// encoding (a constexpr table in .rodata), then runs 5-head self-attention
// (edgeattn_mha with X as queries, keys and values alone would skip the
// positions); the demo
// then shows one head's attention weights as a text heatmap, the module's
// RAM and its time per call. With --dump DIR it also writes what it computed
// (attention weights of every head, the output, the positional table of
// d2l's figures) and its inputs (X, valid_lens, W_q, W_k, W_v, W_o), so
// PyTorch can recompute the output, as CSV files for tools/figures/plot_figures.py.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "edgeattn/edgeattn.h"
#include "edgeattn/edgeattn.hpp"
#include "dump.hpp"
#include "heatmap.hpp"
#include "prng.hpp"
#include "timing.hpp"

namespace {

// d2l's numbers.
constexpr std::size_t batch_size = 2;
constexpr std::size_t num_queries = 4;  // n: self-attention has as many keys
constexpr std::size_t num_hiddens = 100;
constexpr std::size_t num_heads = 5;
constexpr std::int32_t valid_lens_per_batch[batch_size] = {3, 2};

constexpr std::uint64_t seed = 42;
constexpr std::size_t timed_calls = 2000;

// Everything has a size known at compile time, so it lives in static
// storage, not on the stack (a few KiB of stack is common on a
// microcontroller) and not on the heap.
using Attention = edgeattn::PositionalSelfAttention<batch_size, num_queries, num_hiddens, num_heads>;

constexpr std::size_t x_count = batch_size * num_queries * num_hiddens;  // (B, n, d)
constexpr std::size_t w_count = num_hiddens * num_hiddens;               // (d, d)
constexpr std::size_t attention_count =
    batch_size * num_heads * num_queries * num_queries;  // (B, H, queries, keys)

alignas(64) float X[x_count];
alignas(64) float W_q[w_count];
alignas(64) float W_k[w_count];
alignas(64) float W_v[w_count];
alignas(64) float W_o[w_count];
alignas(64) float output[x_count];
alignas(64) float attention_weights[attention_count];

void print_usage(std::FILE *to) {
    std::fprintf(to,
                 "usage: edgeattn-demo [--dump DIR] [--help]\n"
                 "\n"
                 "Runs d2l's Transformer input block with edgeattn: positional encoding,\n"
                 "then self-attention at the shapes of d2l's self-attention example\n"
                 "(batch_size 2, 4 queries, num_hiddens 100, 5 heads, valid_lens [3, 2]).\n"
                 "Prints the kernel path, the output shape and a few values, head 0's\n"
                 "attention weights as a text heatmap, the module's RAM and the median\n"
                 "time per call over %zu calls.\n"
                 "\n"
                 "  --dump DIR  also write what it computed as CSV files in DIR (created if\n"
                 "              missing): attention_weights.csv (batch, head, query, key),\n"
                 "              output.csv and X.csv (batch, query, feature), valid_lens.csv,\n"
                 "              W_q.csv, W_k.csv, W_v.csv, W_o.csv (out, in),\n"
                 "              positional_encoding.csv (60 positions x 32 columns, d2l's\n"
                 "              figure); tools/figures/plot_figures.py draws them\n"
                 "\n"
                 "Set EDGEATTN_ISA=scalar|sse2|avx2|avx512|neon|helium to force a kernel path.\n",
                 timed_calls);
}

// Prints what failed and why; the caller exits 1.
bool succeeded(edgeattn_status status, const char *what) {
    if (status == EDGEATTN_OK) return true;
    std::fprintf(stderr, "edgeattn-demo: %s failed: %s (status %d)\n", what,
                 edgeattn_status_str(status), static_cast<int>(status));
    return false;
}

void print_row(const char *name, const float *values, std::size_t count) {
    std::printf("%s = [", name);
    for (std::size_t i = 0; i < count; ++i) std::printf(i ? ", %+.4f" : "%+.4f", values[i]);
    std::printf(", ...]\n");
}

void print_runtime() {
    std::printf("kernel path: %s\n", edgeattn_isa_name(edgeattn_current_isa()));
#if defined(_OPENMP)
    // _OPENMP here means this program was compiled with OpenMP: its
    // CMakeLists.txt and `make demo` do so when the library has OpenMP.
    std::printf("OpenMP: on (up to %d threads); the module's workspace holds scratch for\n"
                "  MaxThreads = 1\n",
                omp_get_max_threads());
#else
    std::printf("OpenMP: off\n");
#endif
}

void make_inputs() {
    // One generator, drawn in a fixed order: X, then W_q, W_k, W_v, W_o.
    demo::SplitMix64 rng(seed);
    rng.fill_symmetric(X, x_count, 1.0f);
    demo::init_like_torch_linear(rng, W_q, num_hiddens, num_hiddens);
    demo::init_like_torch_linear(rng, W_k, num_hiddens, num_hiddens);
    demo::init_like_torch_linear(rng, W_v, num_hiddens, num_hiddens);
    demo::init_like_torch_linear(rng, W_o, num_hiddens, num_hiddens);

    std::printf("X: (%zu, %zu, %zu), uniform in [-1, 1) from SplitMix64(seed %llu)\n"
                "   (d2l uses torch.ones; random values give a more interesting heatmap)\n",
                batch_size, num_queries, num_hiddens, static_cast<unsigned long long>(seed));
    std::printf("W_q, W_k, W_v, W_o: (%zu, %zu) each, uniform in +-1/sqrt(%zu) like\n"
                "   torch.nn.Linear, no biases (d2l: bias=False)\n",
                num_hiddens, num_hiddens, num_hiddens);
    std::printf("valid_lens: [%d, %d]\n\n", static_cast<int>(valid_lens_per_batch[0]),
                static_cast<int>(valid_lens_per_batch[1]));
}

void print_output() {
    std::printf("output.shape: (%zu, %zu, %zu)\n", batch_size, num_queries, num_hiddens);
    print_row("output[0, 0, :5]", output, 5);
    print_row("output[1, 3, :5]", output + (1 * num_queries + 3) * num_hiddens, 5);
    std::printf("\n");
}

// Head 0 of both batch elements: the two valid lengths mask different keys.
void print_attention() {
    constexpr std::size_t head = 0;
    std::printf("attention_weights: (%zu, %zu, %zu, %zu) = (batch, heads, queries, keys)\n",
                batch_size, num_heads, num_queries, num_queries);
    for (std::size_t b = 0; b < batch_size; ++b) {
        std::printf("\nbatch %zu, head %zu (valid_len %d):\n", b, head,
                    static_cast<int>(valid_lens_per_batch[b]));
        const float *map = attention_weights + (b * num_heads + head) * num_queries * num_queries;
        demo::print_heatmap(map, num_queries, num_queries);
    }
    demo::print_heatmap_legend();
    std::printf("  keys at or past the valid length get weight 0: their scores are set to\n"
                "  -1e6 before the softmax (d2l's masked_softmax)\n\n");
}

void print_memory() {
    std::printf("module RAM: sizeof(PositionalSelfAttention<%zu, %zu, %zu, %zu>) = %zu bytes\n"
                "  (its X + P buffer, its workspace and the weights descriptor)\n",
                batch_size, num_queries, num_hiddens, num_heads, sizeof(Attention));
    std::printf("weights: 4 x (%zu, %zu) floats = %zu bytes, borrowed, not in the module\n"
                "  (flash on a microcontroller)\n",
                num_hiddens, num_hiddens, 4 * sizeof(W_q));
    std::printf("positional table: (%zu, %zu) floats = %zu bytes, constexpr, in .rodata\n",
                Attention::positions.max_len, Attention::positions.dim,
                sizeof(Attention::positions));
}

}  // namespace

int main(int argc, char **argv) {
    const char *dump_dir = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            print_usage(stdout);
            return 0;
        }
        if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc) {
            dump_dir = argv[++i];
            continue;
        }
        std::fprintf(stderr, "edgeattn-demo: unknown option '%s'\n\n", argv[i]);
        print_usage(stderr);
        return 2;
    }

    std::printf("edgeattn-demo: d2l's Transformer input block (positions + self-attention)\n");
    print_runtime();
    std::printf("\n");
    make_inputs();

    edgeattn_weights weights{};
    weights.W_q = {EDGEATTN_DTYPE_F32, W_q, nullptr};
    weights.W_k = {EDGEATTN_DTYPE_F32, W_k, nullptr};
    weights.W_v = {EDGEATTN_DTYPE_F32, W_v, nullptr};
    weights.W_o = {EDGEATTN_DTYPE_F32, W_o, nullptr};
    const edgeattn_valid_lens valid_lens{EDGEATTN_VALID_LENS_PER_BATCH, valid_lens_per_batch};
    // ~16 KiB: static, for the reason the buffers above are.
    static Attention attention(weights);

    if (!succeeded(attention.forward(X, &valid_lens, output, attention_weights), "forward"))
        return 1;
    print_output();
    print_attention();
    print_memory();
    if (dump_dir) {
        std::printf("\n");
        const demo::SelfAttentionRun run{batch_size, num_queries, num_hiddens, num_heads,
                                         valid_lens_per_batch, X, output, attention_weights,
                                         W_q, W_k, W_v, W_o};
        if (!demo::dump_run(dump_dir, run)) return 1;
    }

    bool ok = false;
    const double microseconds = demo::median_microseconds(
        timed_calls,
        [&] {
            return succeeded(attention.forward(X, &valid_lens, output, attention_weights),
                             "forward (timed)");
        },
        ok);
    if (!ok) return 1;
    std::printf("time per call: %.2f us (median of %zu calls, attention weights included;\n"
                "  steady_clock, informative only, not a benchmark)\n",
                microseconds, timed_calls);
    return 0;
}
