// Types of the golden cases embedded in the test firmware; the data itself
// is golden_cases.hpp, generated from tests/golden/*.case at build time by
// embed_golden.cmake.
#ifndef EDGEATTN_FIRMWARE_GOLDEN_HPP
#define EDGEATTN_FIRMWARE_GOLDEN_HPP

#include <cstddef>
#include <cstdint>

namespace golden {

enum class role { input, expect };
enum class kind { f32, f64, i32 };

struct param {
    const char *key;
    long value;
};

struct tensor {
    golden::role role;
    const char *name;
    golden::kind kind;
    std::size_t rank;
    const std::size_t *shape;
    const void *data;  // float (f32), double (f64) or std::int32_t (i32)
    std::size_t count;
};

struct golden_case {
    const char *name;
    const char *op;
    const param *params;
    std::size_t param_count;
    const tensor *tensors;
    std::size_t tensor_count;
};

}  // namespace golden

#endif
