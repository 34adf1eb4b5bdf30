// libFuzzer harness of edgeattn-conform's case-file reader: arbitrary bytes
// into parse_case. A refusal must be one line; an accepted case must survive
// format_case and a second parse unchanged (same op, params, tensor names,
// roles, kinds, shapes and values, NaN for NaN), and run_case must either
// run it or refuse it with one line. Under ASan + UBSan, so a read past the
// text or an overflowing size is a crash.
#include "conform/case_file.hpp"
#include "conform/run_case.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "fuzz_case_file: %s: %s\n", what, detail.c_str());
    std::abort();
}

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void check_same(const edgeattn_conform::Case &a, const edgeattn_conform::Case &b) {
    if (a.version != b.version || a.op != b.op || a.params.size() != b.params.size() ||
        a.tensors.size() != b.tensors.size())
        fail("round trip changed the case", a.op);
    for (std::size_t i = 0; i < a.params.size(); ++i)
        if (a.params[i].key != b.params[i].key || a.params[i].value != b.params[i].value)
            fail("round trip changed a param", a.params[i].key);
    for (std::size_t i = 0; i < a.tensors.size(); ++i) {
        const auto &x = a.tensors[i], &y = b.tensors[i];
        if (x.role != y.role || x.name != y.name || x.kind != y.kind || x.shape != y.shape ||
            x.values.size() != y.values.size())
            fail("round trip changed a tensor", x.name);
        for (std::size_t j = 0; j < x.values.size(); ++j)
            if (!same_value(x.values[j], y.values[j])) fail("round trip changed a value", x.name);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    using namespace edgeattn_conform;
    const std::string text(reinterpret_cast<const char *>(data), size);
    Case c;
    std::string err;
    if (!parse_case(text, c, err)) {
        if (err.empty() || err.find('\n') != std::string::npos) fail("refusal is not one line", err);
        return 0;
    }
    Case back;
    if (!parse_case(format_case(c), back, err)) fail("the written case does not parse", err);
    check_same(c, back);
    Case out;
    if (!run_case(c, out, err, 2) && (err.empty() || err.find('\n') != std::string::npos))
        fail("run_case refusal is not one line", err);
    return 0;
}
