#include "dump.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "../../tools/figures/tensor_csv.hpp"
#include "edgeattn/positional_encoding.hpp"

namespace demo {
namespace {

// d2l's positional-encoding figures: encoding_dim, num_steps = 32, 60.
constexpr std::size_t figure_positions = 60;
constexpr std::size_t figure_columns = 32;

template <class Value>
bool write_one(const std::string &dir, const char *name, const Value *values,
               const std::vector<tensor_csv::Axis> &axes) {
    const std::string path = dir + "/" + name + ".csv";
    std::string err;
    if (!tensor_csv::write(path, values, axes, err)) {
        std::fprintf(stderr, "edgeattn-demo: --dump: %s\n", err.c_str());
        return false;
    }
    std::printf("  %s (", path.c_str());
    for (std::size_t a = 0; a < axes.size(); ++a)
        std::printf("%s%s %zu", a ? ", " : "", axes[a].name.c_str(), axes[a].size);
    std::printf(")\n");
    return true;
}

}  // namespace

bool dump_run(const char *dir, const SelfAttentionRun &run) {
    std::string err;
    if (!tensor_csv::make_directory(dir, err)) {
        std::fprintf(stderr, "edgeattn-demo: --dump: %s\n", err.c_str());
        return false;
    }
    const std::vector<tensor_csv::Axis> activations{
        {"batch", run.batch}, {"query", run.queries}, {"feature", run.num_hiddens}};
    const std::vector<tensor_csv::Axis> weight{{"out", run.num_hiddens}, {"in", run.num_hiddens}};
    const auto &table = edgeattn::positional_encoding_table<figure_positions, figure_columns>;

    std::printf("dumped to %s:\n", dir);
    return write_one(dir, "attention_weights", run.attention_weights,
                     {{"batch", run.batch},
                      {"head", run.num_heads},
                      {"query", run.queries},
                      {"key", run.queries}}) &&
           write_one(dir, "output", run.output, activations) &&
           write_one(dir, "X", run.X, activations) &&
           write_one(dir, "valid_lens", run.valid_lens, {{"batch", run.batch}}) &&
           write_one(dir, "W_q", run.W_q, weight) && write_one(dir, "W_k", run.W_k, weight) &&
           write_one(dir, "W_v", run.W_v, weight) && write_one(dir, "W_o", run.W_o, weight) &&
           write_one(dir, "positional_encoding", table.data(),
                     {{"position", figure_positions}, {"column", figure_columns}});
}

}  // namespace demo
