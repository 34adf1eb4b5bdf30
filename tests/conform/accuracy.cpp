// FORMAT.md's accuracy bar; see accuracy.hpp.
#include "accuracy.hpp"

#include <cmath>
#include <cstdio>

namespace edgeattn_conform {

Verdict check_values(const std::string &name, const double *got, const double *ref, std::size_t n,
                     bool p_table) {
    double diff2 = 0, ref2 = 0, max_abs = 0;
    std::size_t nonfinite = 0, first_bad = n, worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(got[i])) {
            if (nonfinite++ == 0) first_bad = i;
            continue;
        }
        double d = got[i] - ref[i];
        diff2 += d * d;
        ref2 += ref[i] * ref[i];
        if (std::fabs(d) > max_abs) {
            max_abs = std::fabs(d);
            worst = i;
        }
    }
    // An all-zero reference has no scale: hold the error itself to the bar.
    double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    Verdict v;
    char buf[256];
    if (nonfinite) {
        std::snprintf(buf, sizeof buf, "%s: %zu of %zu values not finite (first at flat index %zu: %g)",
                      name.c_str(), nonfinite, n, first_bad, got[first_bad]);
        v.message = buf;
        return v;
    }
    bool rel_ok = rel <= kMaxRelL2;
    bool abs_ok = !p_table || max_abs <= kMaxPTableAbs;
    v.ok = rel_ok && abs_ok;
    std::snprintf(buf, sizeof buf, "%s: rel L2 %.3g (bar %g), max |diff| %.3g at flat index %zu%s%s",
                  name.c_str(), rel, kMaxRelL2, max_abs, worst,
                  p_table ? (abs_ok ? " (table bar 2.5e-7 ok)" : " (over the table bar 2.5e-7)") : "",
                  v.ok ? "" : " FAIL");
    v.message = buf;
    return v;
}

// An i32 tensor (kv_cache_decode's chunk_status: statuses) must match
// exactly; the relative L2 bar would let a wrong entry pass in a long one.
static Verdict check_exact(const std::string &name, const double *got, const double *ref, std::size_t n) {
    std::size_t differ = 0, first = n;
    for (std::size_t i = 0; i < n; ++i)
        if (!(got[i] == ref[i]) && differ++ == 0) first = i;
    Verdict v;
    char buf[256];
    if (differ)
        std::snprintf(buf, sizeof buf, "%s: %zu of %zu values differ (first at flat index %zu: %g, expected %g) FAIL",
                      name.c_str(), differ, n, first, got[first], ref[first]);
    else
        std::snprintf(buf, sizeof buf, "%s: all %zu values exact", name.c_str(), n);
    v.ok = differ == 0;
    v.message = buf;
    return v;
}

bool is_p_table(const std::string &op, const std::string &tensor_name) {
    return op == "positional_encoding" && tensor_name == "P";
}

bool check_results(const Case &in, const Case &out, std::string &report) {
    bool all_ok = true, any = false;
    for (const Tensor &want : in.tensors) {
        if (want.role != Role::expect) continue;
        any = true;
        const Tensor *got = out.find(Role::result, want.name);
        if (!got) {
            report += want.name + ": no result tensor\n";
            all_ok = false;
            continue;
        }
        if (got->shape != want.shape) {
            report += want.name + ": result shape " + shape_string(got->shape) + ", expected " +
                      shape_string(want.shape) + "\n";
            all_ok = false;
            continue;
        }
        Verdict v = want.kind == Kind::i32
                        ? check_exact(want.name, got->values.data(), want.values.data(), want.values.size())
                        : check_values(want.name, got->values.data(), want.values.data(), want.values.size(),
                                       is_p_table(in.op, want.name));
        report += v.message + "\n";
        all_ok = all_ok && v.ok;
    }
    if (!any) {
        report += "the input case has no expected tensors to check against\n";
        return false;
    }
    return all_ok;
}

} // namespace edgeattn_conform
