// Multi-head weights packed once (edgeattn_mha_pack and
// edgeattn_mha_packed): every refusal has its status and leaves outputs
// untouched; one packed buffer serves every kernel path (packed under one,
// run under each, checked against the float64 reference); results do not
// depend on the thread count. The golden cases run through the packed
// calls in test_golden_c and test_reference_shapes.
#include <doctest/doctest.h>

#include "call_helpers.hpp"
#include "conform/accuracy.hpp"
#include "reference.hpp"

#include <edgeattn/edgeattn.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

using test_calls::fp32_weights;
using test_calls::workspace_bytes;

namespace {

constexpr float kPattern = -777.25f;

std::vector<float> random_floats(std::size_t n, unsigned seed, float scale) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float &x : v) x = u(rng);
    return v;
}

bool all_pattern(const std::vector<float> &v) {
    for (float x : v)
        if (std::memcmp(&x, &kPattern, sizeof x) != 0) return false;
    return true;
}

// One multi-head problem: (B,Q,K) = (3,8,6), q,k,v = 12,10,7, h = 40, H = 4,
// biases b_q and b_o, per-batch valid lengths; 24 query rows and 18 key
// rows, so both the few-rows and the many-rows products run.
struct Problem {
    edgeattn_attention_dims dims{3, 8, 6, 12, 10, 7, 40, 4, 0, 0};
    std::vector<float> q = random_floats(3 * 8 * 12, 1, 1.0f), k = random_floats(3 * 6 * 10, 2, 1.0f),
                       v = random_floats(3 * 6 * 7, 3, 1.0f);
    std::vector<float> W[4] = {random_floats(40 * 12, 4, 0.3f), random_floats(40 * 10, 5, 0.3f),
                               random_floats(40 * 7, 6, 0.3f), random_floats(40 * 40, 7, 0.15f)};
    std::vector<float> b_q = random_floats(40, 8, 0.1f), b_o = random_floats(40, 9, 0.1f);
    std::vector<std::int32_t> lens{6, 2, 0};
    edgeattn_attention_options options{{EDGEATTN_VALID_LENS_PER_BATCH, lens.data()}, {}, {}, 0.0f, 0.0f,
                                       EDGEATTN_MASKING_D2L, EDGEATTN_WEIGHTS_SOFTMAX, EDGEATTN_DTYPE_F32};
    edgeattn_weights weights =
        fp32_weights(W[0].data(), W[1].data(), W[2].data(), W[3].data(), b_q.data(), nullptr, nullptr, b_o.data());
    std::vector<float> workspace = std::vector<float>(workspace_bytes(EDGEATTN_OP_MHA, dims, 8) / 4);
    std::vector<float> output = std::vector<float>(3 * 8 * 40, kPattern);
    std::vector<float> attention = std::vector<float>(3 * 4 * 8 * 6, kPattern);

    // Weights packed into a buffer of the size the library asks for.
    std::vector<float> pack() const {
        std::vector<float> packed(edgeattn_mha_packed_size(&dims, &weights) / 4);
        REQUIRE(!packed.empty());
        REQUIRE(edgeattn_mha_pack(&dims, &weights, packed.data(), packed.size() * 4) == EDGEATTN_OK);
        return packed;
    }

    edgeattn_status run(const edgeattn_attention_dims &d, const void *packed, std::size_t packed_bytes) {
        return edgeattn_mha_packed(&d, q.data(), k.data(), v.data(), packed, packed_bytes, &options,
                                   workspace.data(), workspace.size() * 4, output.data(), attention.data());
    }

    // The float64 reference's output and weights.
    void reference(std::vector<double> &out, std::vector<double> &w) const {
        std::vector<double> qd(q.begin(), q.end()), kd(k.begin(), k.end()), vd(v.begin(), v.end());
        std::vector<double> Wd[4], bq(b_q.begin(), b_q.end()), bo(b_o.begin(), b_o.end());
        for (int i = 0; i < 4; ++i) Wd[i].assign(W[i].begin(), W[i].end());
        edgeattn_ref::ValidLens vl;
        vl.kind = edgeattn_ref::ValidLens::per_batch;
        vl.lens = lens;
        const edgeattn_ref::MhaWeights rw{Wd[0].data(), Wd[1].data(), Wd[2].data(), Wd[3].data(),
                                          bq.data(),    nullptr,      nullptr,      bo.data()};
        out.assign(output.size(), 0.0);
        w.assign(attention.size(), 0.0);
        edgeattn_ref::multi_head_attention(3, 8, 6, 12, 10, 7, 40, 4, qd.data(), kd.data(), vd.data(), vl, rw,
                                           out.data(), w.data());
    }
};

void check_against(const char *what, const std::vector<float> &got, const std::vector<double> &want) {
    std::vector<double> g(got.begin(), got.end());
    auto r = edgeattn_conform::check_values(what, g.data(), want.data(), want.size(), false);
    CHECK_MESSAGE(r.ok, r.message);
}

}  // namespace

TEST_CASE("edgeattn_mha_pack refuses bad arguments and writes nothing") {
    Problem p;
    const std::size_t bytes = edgeattn_mha_packed_size(&p.dims, &p.weights);
    REQUIRE(bytes > 0);
    std::vector<float> packed(bytes / 4 + 64, kPattern);
    CHECK(edgeattn_mha_pack(nullptr, &p.weights, packed.data(), bytes) == EDGEATTN_ERR_NULL_POINTER);
    CHECK(edgeattn_mha_pack(&p.dims, nullptr, packed.data(), bytes) == EDGEATTN_ERR_NULL_POINTER);
    CHECK(edgeattn_mha_pack(&p.dims, &p.weights, nullptr, bytes) == EDGEATTN_ERR_NULL_POINTER);
    edgeattn_weights no_wk = p.weights;
    no_wk.W_k.data = nullptr;
    CHECK(edgeattn_mha_pack(&p.dims, &no_wk, packed.data(), bytes) == EDGEATTN_ERR_NULL_POINTER);
    edgeattn_attention_dims d = p.dims;
    d.value_size = 0;
    CHECK(edgeattn_mha_packed_size(&d, &p.weights) == 0);
    CHECK(edgeattn_mha_pack(&d, &p.weights, packed.data(), bytes) == EDGEATTN_ERR_ZERO_DIMENSION);
    d = p.dims;
    d.num_heads = 3;
    CHECK(edgeattn_mha_packed_size(&d, &p.weights) == 0);
    CHECK(edgeattn_mha_pack(&d, &p.weights, packed.data(), bytes) == EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
    d = p.dims;
    d.query_size = d.num_hiddens = ~std::size_t{0} / 8;
    d.num_heads = 1;
    CHECK(edgeattn_mha_packed_size(&d, &p.weights) == 0);
    CHECK(edgeattn_mha_pack(&d, &p.weights, packed.data(), bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    CHECK(edgeattn_mha_pack(&p.dims, &p.weights, packed.data(), bytes - 1) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    CHECK(edgeattn_mha_pack(&p.dims, &p.weights, reinterpret_cast<char *>(packed.data()) + 1, bytes) ==
          EDGEATTN_ERR_MISALIGNED);
    // The packed buffer over one of the matrices it reads.
    std::vector<float> shared(bytes / 4 + p.W[1].size(), kPattern);
    std::memcpy(shared.data() + 5, p.W[1].data(), p.W[1].size() * 4);
    edgeattn_weights overlapping = p.weights;
    overlapping.W_k.data = shared.data() + 5;
    std::vector<float> before = shared;
    CHECK(edgeattn_mha_pack(&p.dims, &overlapping, shared.data(), bytes) == EDGEATTN_ERR_OVERLAP);
    CHECK(shared == before);
    CHECK(all_pattern(packed));
}

TEST_CASE("edgeattn_mha_packed refuses weights packed for something else and writes nothing") {
    Problem p;
    std::vector<float> packed = p.pack();
    const std::size_t bytes = packed.size() * 4;

    // Never packed: a zeroed buffer of the right size.
    std::vector<float> zeros(packed.size(), 0.0f);
    CHECK(p.run(p.dims, zeros.data(), bytes) == EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    // Packed for other sizes: another head count (same byte size), another query size.
    edgeattn_attention_dims other = p.dims;
    other.num_heads = 8;
    CHECK(p.run(other, packed.data(), bytes) == EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    other = p.dims;
    other.query_size = 11;
    std::vector<float> q11(3 * 8 * 11, 0.5f);
    CHECK(edgeattn_mha_packed(&other, q11.data(), p.k.data(), p.v.data(), packed.data(), bytes, &p.options,
                              p.workspace.data(), p.workspace.size() * 4, p.output.data(), p.attention.data()) ==
          EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    // A buffer said to be shorter than the layout.
    CHECK(p.run(p.dims, packed.data(), bytes - 4) == EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    CHECK(p.run(p.dims, nullptr, bytes) == EDGEATTN_ERR_NULL_POINTER);
    CHECK(p.run(p.dims, reinterpret_cast<char *>(packed.data()) + 2, bytes) == EDGEATTN_ERR_MISALIGNED);
    CHECK(all_pattern(p.output));
    CHECK(all_pattern(p.attention));

    // The output written over the packed weights.
    std::vector<float> before = packed;
    CHECK(edgeattn_mha_packed(&p.dims, p.q.data(), p.k.data(), p.v.data(), packed.data(), bytes, &p.options,
                              p.workspace.data(), p.workspace.size() * 4, packed.data() + 8, nullptr) ==
          EDGEATTN_ERR_OVERLAP);
    CHECK(packed == before);

    // Self-attention (X as queries, keys and values) checks the same way.
    edgeattn_attention_dims self{2, 5, 5, 16, 16, 16, 16, 4, 0, 0};
    std::vector<float> X(2 * 5 * 16, 0.25f), out(2 * 5 * 16, kPattern);
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, self, 1) / 4);
    CHECK(edgeattn_mha_packed(&self, X.data(), X.data(), X.data(), packed.data(), bytes, nullptr, ws.data(),
                              ws.size() * 4, out.data(), nullptr) == EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    CHECK(all_pattern(out));
}

TEST_CASE("weights packed once serve every kernel path") {
    Problem p;
    std::vector<double> want_out, want_w;
    p.reference(want_out, want_w);
    const edgeattn_isa first = edgeattn_current_isa();
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_SCALAR) == EDGEATTN_OK);
    std::vector<float> packed = p.pack();  // packed while the scalar path is in use
    for (int i = EDGEATTN_ISA_SCALAR; i <= EDGEATTN_ISA_HELIUM; ++i) {
        const edgeattn_isa isa = static_cast<edgeattn_isa>(i);
        if (!edgeattn_isa_supported(isa)) continue;
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        INFO("kernel path " << std::string(edgeattn_isa_name(isa)));
        REQUIRE(p.run(p.dims, packed.data(), packed.size() * 4) == EDGEATTN_OK);
        check_against("output", p.output, want_out);
        check_against("attention weights", p.attention, want_w);
    }
    REQUIRE(edgeattn_set_isa(first) == EDGEATTN_OK);
}

TEST_CASE("packed-weight results are bitwise the same for 1, 2 and 8 threads") {
    Problem p;
    p.dims = {4, 40, 40, 12, 10, 7, 40, 4, 0, 0};  // big enough for a thread team
    p.q = random_floats(4 * 40 * 12, 11, 1.0f);
    p.k = random_floats(4 * 40 * 10, 12, 1.0f);
    p.v = random_floats(4 * 40 * 7, 13, 1.0f);
    p.lens = {40, 7, 0, 33};
    p.options.valid_lens.lens = p.lens.data();
    p.workspace.assign(workspace_bytes(EDGEATTN_OP_MHA, p.dims, 8) / 4, 0.0f);
    p.output.assign(4 * 40 * 40, 0.0f);
    p.attention.assign(4 * 4 * 40 * 40, 0.0f);
    std::vector<float> packed = p.pack();
    std::vector<float> first_out, first_w;
    for (int threads : {1, 2, 8, 1}) {
#if defined(_OPENMP)
        omp_set_num_threads(threads);
#endif
        REQUIRE(p.run(p.dims, packed.data(), packed.size() * 4) == EDGEATTN_OK);
        if (first_out.empty()) {
            first_out = p.output;
            first_w = p.attention;
            continue;
        }
        INFO(threads << " threads");
        CHECK(std::memcmp(p.output.data(), first_out.data(), first_out.size() * 4) == 0);
        CHECK(std::memcmp(p.attention.data(), first_w.data(), first_w.size() * 4) == 0);
    }
}
