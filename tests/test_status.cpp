// Bad input gets its own status and leaves every output byte untouched.
// (The hardening issue extends this; here each check an entry point makes
// is exercised once.)
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr float pattern = -12345.0f;

// An output buffer filled with a pattern, with a check that it still is.
struct guarded {
    std::vector<float> data;
    explicit guarded(std::size_t n) : data(n, pattern) {}
    float *ptr() { return data.data(); }
    bool untouched() const {
        for (float v : data)
            if (std::memcmp(&v, &pattern, sizeof v) != 0) return false;
        return true;
    }
};

// A small multi-head problem: (B, Q, K) = (2, 3, 4), q/k/v sizes 5/6/7, h = 8, 2 heads.
struct mha_problem {
    edgeattn_attention_dims dims{2, 3, 4, 5, 6, 7, 8, 2};
    std::vector<float> q = std::vector<float>(2 * 3 * 5, 0.5f), k = std::vector<float>(2 * 4 * 6, 0.25f),
                       v = std::vector<float>(2 * 4 * 7, 1.0f);
    std::vector<float> W_q = std::vector<float>(8 * 5, 0.1f), W_k = std::vector<float>(8 * 6, 0.1f),
                       W_v = std::vector<float>(8 * 7, 0.1f), W_o = std::vector<float>(8 * 8, 0.1f);
    edgeattn_mha_weights weights{W_q.data(), W_k.data(), W_v.data(), W_o.data(), nullptr, nullptr, nullptr, nullptr};
    std::vector<int32_t> lens{2, 4};
    edgeattn_valid_lens valid_lens{EDGEATTN_VALID_LENS_PER_BATCH, lens.data()};
    std::vector<float> workspace;
    guarded out{2 * 3 * 8}, attn{2 * 2 * 3 * 4};

    mha_problem() : workspace(edgeattn_multi_head_attention_workspace_size(&dims, 1) / sizeof(float) + 1) {}

    const float *queries = q.data();  // a case may replace it

    edgeattn_status run() {
        return edgeattn_multi_head_attention(&dims, queries, k.data(), v.data(), &valid_lens, &weights,
                                             workspace.data(), edgeattn_multi_head_attention_workspace_size(&dims, 1),
                                             out.ptr(), attn.ptr());
    }
    bool outputs_untouched() const { return out.untouched() && attn.untouched(); }
};

}  // namespace

TEST_CASE("every status has its own text") {
    std::set<std::string> texts;
    for (int s = 0; s >= EDGEATTN_ERR_UNSUPPORTED_ISA; --s) {
        const char *t = edgeattn_status_str(static_cast<edgeattn_status>(s));
        REQUIRE(t != nullptr);
        texts.insert(t);
    }
    CHECK(texts.size() == 1 - EDGEATTN_ERR_UNSUPPORTED_ISA);
    CHECK(std::string(edgeattn_status_str(static_cast<edgeattn_status>(-999))) == "unknown status");
}

TEST_CASE("the valid problem runs, and each bad argument gets its status with outputs untouched") {
    {
        mha_problem p;
        REQUIRE(p.run() == EDGEATTN_OK);
    }
    struct bad_case {
        const char *what;
        void (*spoil)(mha_problem &);
        edgeattn_status expected;
    };
    const bad_case cases[] = {
        {"null queries", [](mha_problem &p) { p.queries = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null W_o", [](mha_problem &p) { p.weights.W_o = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero batch", [](mha_problem &p) { p.dims.batch = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero heads", [](mha_problem &p) { p.dims.num_heads = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"heads do not divide", [](mha_problem &p) { p.dims.num_heads = 3; }, EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE},
        {"size overflow", [](mha_problem &p) { p.dims.keys = SIZE_MAX / 2; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"negative valid length", [](mha_problem &p) { p.lens[1] = -1; }, EDGEATTN_ERR_NEGATIVE_VALID_LEN},
        {"bad valid_lens kind", [](mha_problem &p) { p.valid_lens.kind = static_cast<edgeattn_valid_lens_kind>(7); },
         EDGEATTN_ERR_BAD_VALID_LENS_KIND},
        {"null lens", [](mha_problem &p) { p.valid_lens.lens = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"misaligned W_v",
         [](mha_problem &p) {
             p.weights.W_v = reinterpret_cast<const float *>(reinterpret_cast<const char *>(p.W_v.data()) + 1);
         },
         EDGEATTN_ERR_MISALIGNED},
        {"output overlaps queries", [](mha_problem &p) { p.queries = p.out.ptr() + 2; }, EDGEATTN_ERR_OVERLAP},
    };
    for (const bad_case &c : cases) {
        mha_problem p;
        c.spoil(p);
        INFO(c.what);
        CHECK(p.run() == c.expected);
        CHECK(p.outputs_untouched());
    }
}

TEST_CASE("workspace too small and overlapping outputs are refused before any write") {
    mha_problem p;
    const std::size_t need = edgeattn_multi_head_attention_workspace_size(&p.dims, 1);
    REQUIRE(need > 0);
    CHECK(edgeattn_multi_head_attention(&p.dims, p.q.data(), p.k.data(), p.v.data(), &p.valid_lens, &p.weights,
                                        p.workspace.data(), need - 4, p.out.ptr(), p.attn.ptr()) ==
          EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    CHECK(p.outputs_untouched());

    // output inside the workspace
    CHECK(edgeattn_multi_head_attention(&p.dims, p.q.data(), p.k.data(), p.v.data(), &p.valid_lens, &p.weights,
                                        p.workspace.data(), need, p.workspace.data(), p.attn.ptr()) ==
          EDGEATTN_ERR_OVERLAP);
    // weights overlapping the output
    CHECK(edgeattn_multi_head_attention(&p.dims, p.q.data(), p.k.data(), p.v.data(), &p.valid_lens, &p.weights,
                                        p.workspace.data(), need, p.out.ptr(), p.out.ptr() + 1) == EDGEATTN_ERR_OVERLAP);
    // output over the weights W_q (its (8, 5) floats start at big[0])
    std::vector<float> big(1024, pattern);
    edgeattn_mha_weights w = p.weights;
    w.W_q = big.data();
    CHECK(edgeattn_multi_head_attention(&p.dims, p.q.data(), p.k.data(), p.v.data(), &p.valid_lens, &w,
                                        p.workspace.data(), need, big.data() + 10, p.attn.ptr()) ==
          EDGEATTN_ERR_OVERLAP);
    CHECK(p.outputs_untouched());
}

TEST_CASE("masked softmax: in place is allowed, a shifted overlap is not") {
    const edgeattn_softmax_dims dims{1, 2, 4};
    std::vector<float> x{1, 2, 3, 4, 4, 3, 2, 1, pattern};
    const std::vector<int32_t> lens{3, 0};
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    CHECK(edgeattn_masked_softmax(&dims, x.data(), &vl, x.data() + 1) == EDGEATTN_ERR_OVERLAP);
    CHECK(x[1] == 2.0f);
    REQUIRE(edgeattn_masked_softmax(&dims, x.data(), &vl, x.data()) == EDGEATTN_OK);
    CHECK(x[3] == 0.0f);    // masked
    CHECK(x[4] == 0.25f);   // valid length 0: uniform
    CHECK(x[8] == pattern); // nothing past the tensor
}

TEST_CASE("dot product: key_size must match query_size (0 means the same)") {
    edgeattn_attention_dims dims{1, 2, 3, 4, 5, 2, 0, 0};
    CHECK(edgeattn_dot_product_attention_workspace_size(&dims, 1) == 0);
    std::vector<float> q(8, 1.0f), k(12, 1.0f), v(6, 1.0f), ws(1 << 16);
    guarded out(4);
    CHECK(edgeattn_dot_product_attention(&dims, q.data(), k.data(), v.data(), nullptr, ws.data(),
                                         ws.size() * sizeof(float), out.ptr(), nullptr) == EDGEATTN_ERR_SHAPE_MISMATCH);
    CHECK(out.untouched());
    dims.key_size = 0;
    CHECK(edgeattn_dot_product_attention(&dims, q.data(), k.data(), v.data(), nullptr, ws.data(),
                                         ws.size() * sizeof(float), out.ptr(), nullptr) == EDGEATTN_OK);
    CHECK(out.data[0] == doctest::Approx(1.0f));
}

TEST_CASE("forcing a kernel path: unsupported paths are refused, auto restores the best") {
    const edgeattn_isa before = edgeattn_current_isa();
    CHECK(edgeattn_set_isa(EDGEATTN_ISA_SCALAR) == EDGEATTN_OK);
    CHECK(edgeattn_current_isa() == EDGEATTN_ISA_SCALAR);
    for (int i = EDGEATTN_ISA_SSE2; i <= EDGEATTN_ISA_NEON; ++i) {
        const edgeattn_isa isa = static_cast<edgeattn_isa>(i);
        if (!edgeattn_isa_supported(isa)) {
            CHECK(edgeattn_set_isa(isa) == EDGEATTN_ERR_UNSUPPORTED_ISA);
            CHECK(edgeattn_current_isa() == EDGEATTN_ISA_SCALAR);
        }
    }
    CHECK(edgeattn_set_isa(static_cast<edgeattn_isa>(42)) == EDGEATTN_ERR_UNSUPPORTED_ISA);
    CHECK(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
    CHECK(edgeattn_current_isa() != EDGEATTN_ISA_AUTO);
    CHECK(edgeattn_set_isa(before) == EDGEATTN_OK);
}
