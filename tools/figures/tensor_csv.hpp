// Writer of the dump format: one row-major tensor as one plain CSV file.
// edgeattn-demo --dump and edgeattn-conform --dump write it; tensor_csv.py
// reads it back for plot_figures.py. Header-only, so each program includes
// it by relative path and no build file has to list it. Not part of the
// library (it uses the file system and the heap).
//
// A tensor with axes (batch 2, head 5, query 4, key 4) becomes
//
//   batch,head,query,key_0,key_1,key_2,key_3
//   0,0,0,0.334,0.333,0.333,0
//   ...                                       (2 * 5 * 4 lines)
//
// that is: one index column per leading axis, then one column per index of
// the last axis named "<axis>_<j>", and one line per index of the leading
// axes in row-major order. A rank-1 tensor is a single line with no index
// columns; a scalar is one column named "value".
#ifndef EDGEATTN_TOOLS_FIGURES_TENSOR_CSV_HPP
#define EDGEATTN_TOOLS_FIGURES_TENSOR_CSV_HPP

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace tensor_csv {

struct Axis {
    std::string name;
    std::size_t size;
};

// Creates DIR and its parents if missing; false (with a one-line err) when
// that fails or DIR is not a directory.
inline bool make_directory(const std::string &dir, std::string &err) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!ec && std::filesystem::is_directory(dir, ec)) return true;
    err = "cannot create directory '" + dir + "'" + (ec ? ": " + ec.message() : std::string());
    return false;
}

// Writes values (row-major, shape given by axes) to PATH in the format above,
// each value as %.<digits>g (9 digits round-trip a float, 17 a double).
// False, with a one-line err, when PATH cannot be written.
template <class Value>
bool write(const std::string &path, const Value *values, const std::vector<Axis> &axes,
           std::string &err, int digits = 9) {
    std::FILE *file = std::fopen(path.c_str(), "w");
    if (!file) {
        err = "cannot write '" + path + "'";
        return false;
    }
    const std::size_t leading = axes.empty() ? 0 : axes.size() - 1;
    std::size_t rows = 1;
    for (std::size_t a = 0; a < leading; ++a) {
        std::fprintf(file, "%s,", axes[a].name.c_str());
        rows *= axes[a].size;
    }
    const std::size_t columns = axes.empty() ? 1 : axes.back().size;
    for (std::size_t j = 0; j < columns; ++j) {
        if (axes.empty()) std::fprintf(file, "value");
        else std::fprintf(file, "%s%s_%zu", j ? "," : "", axes.back().name.c_str(), j);
    }
    std::fprintf(file, "\n");

    std::vector<std::size_t> index(leading, 0);
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t i : index) std::fprintf(file, "%zu,", i);
        for (std::size_t j = 0; j < columns; ++j)
            std::fprintf(file, "%s%.*g", j ? "," : "", digits,
                         static_cast<double>(values[r * columns + j]));
        std::fprintf(file, "\n");
        for (std::size_t a = leading; a-- > 0;) {  // odometer over the leading axes
            if (++index[a] < axes[a].size) break;
            index[a] = 0;
        }
    }
    const bool ok = std::ferror(file) == 0;
    if (std::fclose(file) != 0 || !ok) {
        err = "error writing '" + path + "'";
        return false;
    }
    return true;
}

}  // namespace tensor_csv

#endif
