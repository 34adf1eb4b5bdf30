// Every golden case through the C API, held to FORMAT.md's bar.
// main() is isa_main.cpp: CTest runs this once per kernel path.
#include <doctest/doctest.h>

#include "conform/accuracy.hpp"
#include "conform/case_file.hpp"
#include "conform/run_case.hpp"

#include "golden_files.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

using namespace edgeattn_conform;

namespace {

// Runs `in` with a workspace for `threads` (0: the default) and checks every
// expected tensor; `label` names the run in messages.
void check_case(const Case &in, const std::string &label, std::size_t threads = 0, bool packed_weights = false) {
    Case out;
    std::string err;
    bool ran = run_case(in, out, err, threads, packed_weights);
    CHECK_MESSAGE(ran, label << ": " << err);
    if (!ran) return;
    std::string report;
    bool ok = check_results(in, out, report);
    CHECK_MESSAGE(ok, label << ":\n" << report);
}

// Drops the expected attention_weights of a case (so the run does not ask
// for them); false when it had none.
bool drop_expected_weights(Case &c) {
    auto is_weights = [](const Tensor &t) { return t.role == Role::expect && t.name == "attention_weights"; };
    auto it = std::remove_if(c.tensors.begin(), c.tensors.end(), is_weights);
    if (it == c.tensors.end()) return false;
    c.tensors.erase(it, c.tensors.end());
    return true;
}

// Tensor `name` of `role` in c, or nullptr.
Tensor *find_tensor(Case &c, Role role, const std::string &name) {
    for (Tensor &t : c.tensors)
        if (t.role == role && t.name == name) return &t;
    return nullptr;
}

// Multi-head or dot-product attention with a decoder option: a mask in the
// call's options or grouped-query heads (any of num_kv_heads, causal,
// key_ranges, bias present).
bool is_masked_attention(const Case &c) {
    if (c.op != "multi_head_attention" && c.op != "dot_product_attention") return false;
    return c.find_param("num_kv_heads") || c.find_param("causal") || c.find(Role::input, "key_ranges") ||
           c.find(Role::input, "bias");
}

// A kv_cache_decode case whose every step is accepted and truncates
// nothing, and whose every token sees a key (every_row_sees_a_key): its
// output is then the causal attention of all T tokens however they are fed
// (RoPE and a sliding-window mask depend on a token's position only). Not a
// window cache: a step of several tokens into a full window overwrites rows
// its earlier queries would have seen one token a step. False for any other
// case.
bool every_row_sees_a_key(const Case &c);
bool plain_decode(const Case &c) {
    if (c.op != "kv_cache_decode") return false;
    if (const Param *w = c.find_param("window"))
        if (w->value != 0) return false;
    const Tensor *status = c.find(Role::expect, "chunk_status");
    const Tensor *trunc = c.find(Role::input, "truncate");
    if (!status) return false;
    for (double v : status->values)
        if (v != 0) return false;
    if (trunc)
        for (double v : trunc->values)
            if (v != -1) return false;
    return every_row_sees_a_key(c);
}

// Whether every token of decode case c sees, in its own row, at least one
// cache position whose bias (if any) is not below -1e5. A row that sees
// none gets uniform weights over the K cached positions (FORMAT.md),
// and K depends on how the tokens are fed. Token t sits at cache position t
// (no truncation), so causal lets it see positions 0..t.
bool every_row_sees_a_key(const Case &c) {
    const Tensor *X = c.find(Role::input, "X");
    const Tensor *kr = c.find(Role::input, "key_ranges");
    const Tensor *bias = c.find(Role::input, "bias");
    REQUIRE((X && X->shape.size() == 3));
    REQUIRE((!kr || kr->shape.size() == 2 || kr->shape.size() == 3));
    REQUIRE((!bias || bias->shape.size() == 4));
    const std::size_t B = X->shape[0], T = X->shape[1];
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            double lo = 0, hi = static_cast<double>(t + 1);
            if (kr) {
                const std::size_t at = kr->shape.size() == 2 ? b * 2 : (b * T + t) * 2;
                lo = std::max(lo, kr->values[at]);
                hi = std::min(hi, kr->values[at + 1]);
            }
            if (hi <= lo) return false;
            if (!bias) continue;
            const std::size_t Bb = bias->shape[0], Hb = bias->shape[1], cap = bias->shape[3];
            for (std::size_t hb = 0; hb < Hb; ++hb) {
                const double *row = bias->values.data() + (((Bb == 1 ? 0 : b) * Hb + hb) * T + t) * cap;
                bool sees = false;
                for (std::size_t j = static_cast<std::size_t>(lo); j < static_cast<std::size_t>(hi); ++j)
                    sees = sees || row[j] > -1e5;
                if (!sees) return false;
            }
        }
    return true;
}

// Feeds decode case c in the steps `chunks` instead (no truncation, every
// step accepted, as plain_decode guarantees for the expected output).
void refeed(Case &c, const std::vector<double> &chunks) {
    for (const char *name : {"chunks", "truncate"}) {
        Tensor *t = find_tensor(c, Role::input, name);
        if (!t) continue;
        t->shape = {chunks.size()};
        t->values = name == std::string("chunks") ? chunks : std::vector<double>(chunks.size(), -1.0);
    }
    Tensor *status = find_tensor(c, Role::expect, "chunk_status");
    status->shape = {chunks.size()};
    status->values.assign(chunks.size(), 0.0);
}

// Every golden case file, read, with its name.
std::vector<std::pair<std::string, Case>> golden_cases() {
    std::vector<std::pair<std::string, Case>> cases;
    for (const std::string &f : golden_files()) {
        Case in;
        std::string err;
        REQUIRE_MESSAGE(read_case_file(f, in, err), err);
        cases.emplace_back(base_name(f), in);
    }
    return cases;
}

} // namespace

TEST_CASE("golden cases meet FORMAT.md's bar") {
    const auto cases = golden_cases();
    REQUIRE_MESSAGE(cases.size() >= kMinGoldenCases, "found " << cases.size() << " cases in " EDGEATTN_GOLDEN_DIR);
    for (const auto &[name, in] : cases) check_case(in, name);
}

// Without attention_weights requested the library may take another path
// (no scores matrix); the output must meet the same bar.
TEST_CASE("golden outputs without attention weights requested") {
    std::size_t with_weights = 0;
    for (auto &[name, in] : golden_cases()) {
        if (!drop_expected_weights(in)) continue;
        ++with_weights;
        check_case(in, name + " (output only)");
    }
    CHECK(with_weights >= 9); // every attention case expects weights
}

// A workspace sized for one thread must give a correct (serial) call too.
TEST_CASE("golden cases with a one-thread workspace") {
    for (const auto &[name, in] : golden_cases()) check_case(in, name + " (1 thread)", 1);
}

// Multi-head (masked or not), self-attention and KV-cache decoding with
// weights packed once (edgeattn_mha_pack + edgeattn_mha_packed and the
// cache's _packed calls), and linear through edgeattn_dense_pack +
// edgeattn_dense_packed, with and without attention weights requested.
TEST_CASE("golden multi-head, decode and linear cases through weights packed once") {
    std::size_t packed = 0, decode = 0, linear = 0, masked = 0;
    for (auto &[name, in] : golden_cases()) {
        if (in.op != "multi_head_attention" && in.op != "self_attention" && in.op != "kv_cache_decode" &&
            in.op != "linear")
            continue;
        ++packed;
        decode += in.op == "kv_cache_decode";
        linear += in.op == "linear";
        masked += is_masked_attention(in);
        check_case(in, name + " (packed weights)", 0, true);
        drop_expected_weights(in);
        check_case(in, name + " (packed weights, output only)", 1, true);
    }
    CHECK(packed >= 4 + 7 + 2 + 5);
    CHECK(decode >= 7);
    CHECK(linear >= 2);
    CHECK(masked >= 5);
}

// The decoder's golden cases (make_decoder_golden.py) are all there: each op
// and each masked attention op has cases for the tests above to run on every
// kernel path (CTest runs this binary once per path).
TEST_CASE("golden decoder cases are present") {
    std::size_t decode = 0, linear = 0, masked_mha = 0, masked_dot = 0, gqa = 0, cache_full = 0, truncating = 0;
    for (const auto &[name, in] : golden_cases()) {
        decode += in.op == "kv_cache_decode";
        linear += in.op == "linear";
        masked_mha += in.op == "multi_head_attention" && is_masked_attention(in);
        masked_dot += in.op == "dot_product_attention" && is_masked_attention(in);
        const Param *kv = in.find_param("num_kv_heads");
        const Param *heads = in.find_param("num_heads");
        gqa += kv && heads && kv->value != heads->value;
        if (const Tensor *st = in.find(Role::expect, "chunk_status"))
            cache_full += std::count(st->values.begin(), st->values.end(), -16.0) > 0;
        if (const Tensor *tr = in.find(Role::input, "truncate"))
            truncating += std::count(tr->values.begin(), tr->values.end(), -1.0) != static_cast<long>(tr->count());
    }
    CHECK(decode >= 7);
    CHECK(linear >= 2);
    CHECK(masked_mha >= 5);
    CHECK(masked_dot >= 1);
    CHECK(gqa >= 4);       // multi-head and decode with H_kv < H
    CHECK(cache_full >= 1); // a step refused with EDGEATTN_ERR_CACHE_FULL
    CHECK(truncating >= 1); // edgeattn_kv_cache_truncate between steps
}

// The cases of RoPE (fused into the cache calls, both layouts, partial,
// offsets), window caches (with sinks, wrapping; fp32 and int8), the
// sliding-window mask, projection-free calls and rope_apply are there.
TEST_CASE("golden RoPE and window-cache cases are present") {
    std::size_t rope = 0, gptj = 0, partial = 0, offsets = 0, window = 0, sinks = 0, typed_window = 0,
                mask_window = 0, projection_free = 0, rope_apply = 0;
    auto value = [](const Case &c, const char *key) {
        const Param *p = c.find_param(key);
        return p ? p->value : 0;
    };
    for (const auto &[name, in] : golden_cases()) {
        rope_apply += in.op == "rope_apply";
        if (in.op != "kv_cache_decode") continue;
        const std::int64_t dims = value(in, "rope_dims"), H = value(in, "num_heads");
        rope += dims > 0;
        gptj += dims > 0 && value(in, "rope_layout") == 1;
        partial += dims > 0 && H > 0 && dims < value(in, "num_hiddens") / H;
        offsets += in.find(Role::input, "rope_offset") != nullptr;
        window += value(in, "window") > 0;
        sinks += value(in, "sinks") > 0;
        typed_window += value(in, "window") > 0 && value(in, "cache_type") != 0;
        mask_window += value(in, "mask_window") > 0;
        projection_free += value(in, "projection_free") == 1;
    }
    CHECK(rope >= 4);
    CHECK(gptj >= 1);
    CHECK(partial >= 1);
    CHECK(offsets >= 1);
    CHECK(window >= 3);
    CHECK(sinks >= 2);
    CHECK(typed_window >= 1);
    CHECK(mask_window >= 1);
    CHECK(projection_free >= 1);
    CHECK(rope_apply >= 1);
}

// A decode whose steps are all accepted, that truncates nothing and whose
// every token sees a key gives the same output however its tokens are fed: one token a step (the Q = 1 path every
// decoder runs), and all T at once (a causal prefill) when they fit the cache.
TEST_CASE("golden decode cases fed one token a step, and all at once") {
    std::size_t refed = 0;
    for (auto &[name, in] : golden_cases()) {
        if (!plain_decode(in)) continue;
        ++refed;
        const Tensor *X = in.find(Role::input, "X");
        const Param *cap = in.find_param("capacity");
        REQUIRE((X && X->shape.size() == 3 && cap));
        const std::size_t T = X->shape[1];
        Case one = in;
        refeed(one, std::vector<double>(T, 1.0));
        check_case(one, name + " (one token a step)");
        check_case(one, name + " (one token a step, packed weights)", 1, true);
        if (cap->value >= static_cast<std::int64_t>(T)) {
            Case all = in;
            refeed(all, {static_cast<double>(T)});
            check_case(all, name + " (all tokens in one step)");
            check_case(all, name + " (all tokens in one step, packed weights)", 1, true);
        }
    }
    CHECK(refed >= 3);
}
