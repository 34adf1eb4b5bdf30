// edgeattn-conform --dump DIR: the result tensors a run computed, one CSV
// file each (format: tools/figures/tensor_csv.hpp), for a spreadsheet or
// tools/figures/plot_figures.py. Header-only: conform_main.cpp is its one user.
#ifndef EDGEATTN_TESTS_RESULT_CSV_HPP
#define EDGEATTN_TESTS_RESULT_CSV_HPP

#include <cstddef>
#include <string>
#include <vector>

#include "../../tools/figures/tensor_csv.hpp"
#include "case_file.hpp"

namespace edgeattn_conform {

// d2l's axis names of the tensors the ops produce (tests/golden/FORMAT.md),
// "axis<i>" for any other tensor or rank.
inline std::vector<tensor_csv::Axis> csv_axes(const Tensor &t) {
    const std::size_t rank = t.shape.size();
    std::vector<const char *> names;
    if (t.name == "attention_weights" && rank == 4) names = {"batch", "head", "query", "key"};
    else if ((t.name == "attention_weights" || t.name == "Y") && rank == 3)
        names = {"batch", "query", "key"};
    else if (t.name == "output" && rank == 3) names = {"batch", "query", "feature"};
    else if (t.name == "P" && rank == 2) names = {"position", "column"};
    else if (t.name == "valid_lens" && rank <= 2) names = {"batch", "query"};
    std::vector<tensor_csv::Axis> axes;
    for (std::size_t a = 0; a < rank; ++a)
        axes.push_back({a < names.size() ? names[a] : "axis" + std::to_string(a), t.shape[a]});
    return axes;
}

// Writes DIR/<name>.csv for every result tensor of `out` and for the input
// valid_lens (the plots label masked keys with it); creates DIR if missing.
// f32 results get 9 significant digits, f64 17. False with a one-line err.
inline bool dump_results_csv(const Case &out, const std::string &dir, std::string &err) {
    if (!tensor_csv::make_directory(dir, err)) return false;
    for (const Tensor &t : out.tensors) {
        const bool wanted = t.role == Role::result || (t.role == Role::input && t.name == "valid_lens");
        if (!wanted) continue;
        const int digits = t.kind == Kind::f64 ? 17 : 9;
        if (!tensor_csv::write(dir + "/" + t.name + ".csv", t.values.data(), csv_axes(t), err,
                               digits))
            return false;
    }
    return true;
}

}  // namespace edgeattn_conform

#endif
