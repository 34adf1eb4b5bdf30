// Every op that takes a workspace, given exactly the bytes
// edgeattn_workspace_size() asks for (for the thread count the call may use), with
// guard bytes on both sides: the guards must come back as they went in and
// the results must be the float64 reference's. Outputs, attention weights,
// packed weights and KV cache memory get the same guards at their documented
// sizes, so a write one element past any buffer the caller sized from the
// API shows. Shapes cover both attention paths (weights materialised with
// K <= 256 and beyond; streaming over key blocks when no weights are asked
// for), query counts that are not multiples of 8, valid lengths, masks,
// grouped-query heads and several thread counts, with the workspace sized
// for as many threads as run or for fewer. CTest runs the program once per
// kernel path (EDGEATTN_ISA).
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define WS_BOUNDS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WS_BOUNDS_ASAN 1
#endif
#endif
#if defined(WS_BOUNDS_ASAN)
#include <sanitizer/asan_interface.h>
#endif

using edgeattn_ref::Mask;
using edgeattn_ref::ValidLens;
using test_calls::dense_workspace_bytes;
using test_calls::f32;
using test_calls::workspace_bytes;
using test_paths::random_floats;
using test_paths::rel_l2;
using test_paths::widen;

namespace {

// ------------------------------------------------------------------ guards

constexpr std::size_t guard_bytes = 256;

// 67 is odd, so the 256 guard bytes are 256 different values: neither a
// fill with one byte value (0, 0xFF) nor a copy of the neighbouring bytes
// leaves them as they were.
unsigned char guard_byte(std::size_t i) { return static_cast<unsigned char>(0xA5u + 67u * i); }

// `bytes` bytes for the library with guard_bytes of a pattern before and
// after. The body starts `skew` bytes past a 64-byte boundary (the API
// promises to work with 4-byte alignment) and is filled with 0xFF bytes,
// NaN as floats: scratch read before it is written, or an output element
// left unwritten, shows in the results. Under AddressSanitizer the guards
// are poisoned as well, so reads past either end fail too.
class guarded {
public:
    explicit guarded(std::size_t bytes, std::size_t skew = 0)
        : store_((2 * guard_bytes + 64 + skew + bytes) / sizeof(float) + 1), bytes_(bytes) {
        const std::uintptr_t raw = reinterpret_cast<std::uintptr_t>(store_.data());
        data_ = reinterpret_cast<unsigned char *>((raw + guard_bytes + 63) / 64 * 64 + skew);
        for (std::size_t i = 0; i < guard_bytes; ++i) {
            front()[i] = guard_byte(i);
            back()[i] = guard_byte(i + 1);
        }
        if (bytes_) std::memset(data_, 0xFF, bytes_);
        poison(true);
    }
    guarded(const guarded &) = delete;
    guarded &operator=(const guarded &) = delete;
    ~guarded() { poison(false); }

    void *data() { return data_; }
    float *floats() { return reinterpret_cast<float *>(data_); }
    std::size_t bytes() const { return bytes_; }

    // Empty when both guards are as they were; else which bytes changed.
    std::string damage() {
        poison(false);
        std::size_t before = 0, after = 0, nearest_before = 0, first_after = 0;
        for (std::size_t i = 0; i < guard_bytes; ++i) {
            if (front()[i] != guard_byte(i)) {
                ++before;
                nearest_before = guard_bytes - i;
            }
            if (back()[i] != guard_byte(i + 1) && after++ == 0) first_after = i;
        }
        poison(true);
        if (before == 0 && after == 0) return std::string();
        std::ostringstream what;
        if (after) what << after << " guard bytes changed after the end (the first at end + " << first_after << ") ";
        if (before) what << before << " guard bytes changed before the start (the nearest at start - " << nearest_before << ")";
        what << " of " << bytes_ << " bytes";
        return what.str();
    }

private:
    unsigned char *front() { return data_ - guard_bytes; }
    unsigned char *back() { return data_ + bytes_; }
    void poison(bool on) {
#if defined(WS_BOUNDS_ASAN)
        if (on) {
            ASAN_POISON_MEMORY_REGION(front(), guard_bytes);
            ASAN_POISON_MEMORY_REGION(back(), guard_bytes);
        } else {
            ASAN_UNPOISON_MEMORY_REGION(front(), guard_bytes);
            ASAN_UNPOISON_MEMORY_REGION(back(), guard_bytes);
        }
#else
        (void)on;
#endif
    }

    std::vector<float> store_;
    std::size_t bytes_;
    unsigned char *data_ = nullptr;
};

void check_intact(guarded &g, const std::string &what) {
    const std::string damage = g.damage();
    CHECK_MESSAGE(damage.empty(), what << ": " << damage);
}

// ----------------------------------------------------------------- threads

// How many threads run the calls, and how many the workspace is sized for:
// as many, or fewer (the op must then use only the thread slots it has).
// One thread, then teams large enough that the last slot sits at the
// workspace's end; not more cases: the suite also runs under valgrind.
struct thread_case {
    int team;
    std::size_t sized_for;
};

std::vector<thread_case> thread_cases() {
#if defined(_OPENMP)
    return {{1, 1}, {4, 4}, {8, 3}};
#else
    return {{1, 1}, {1, 4}};
#endif
}

class team_size {
public:
    explicit team_size(int n) {
#if defined(_OPENMP)
        saved_ = omp_get_max_threads();
        omp_set_num_threads(n);
#else
        (void)n;
#endif
    }
    ~team_size() {
#if defined(_OPENMP)
        omp_set_num_threads(saved_);
#endif
    }
    team_size(const team_size &) = delete;
    team_size &operator=(const team_size &) = delete;

#if defined(_OPENMP)
private:
    int saved_ = 1;
#endif
};

// Every other run gets a workspace 4 bytes past a 64-byte boundary.
std::size_t skew_of(std::size_t run) { return run % 2 ? 4 : 0; }

// (doctest prints a const char * as a pointer.)
std::string path() { return edgeattn_isa_name(edgeattn_current_isa()); }

// ---------------------------------------------------------------- inputs

// d2l's valid lengths for the reference and as the C API takes them:
// lengths of 0 (uniform rows), inside K and past it (nothing masked).
struct lengths {
    ValidLens ref;
    edgeattn_valid_lens c() const {
        const edgeattn_valid_lens_kind kind = ref.kind == ValidLens::per_batch   ? EDGEATTN_VALID_LENS_PER_BATCH
                                              : ref.kind == ValidLens::per_query ? EDGEATTN_VALID_LENS_PER_QUERY
                                                                                 : EDGEATTN_VALID_LENS_NONE;
        return {kind, ref.lens.empty() ? nullptr : ref.lens.data()};
    }
};

lengths make_lengths(ValidLens::Kind kind, std::size_t B, std::size_t Q, std::size_t K) {
    lengths l;
    l.ref.kind = kind;
    const std::size_t n = kind == ValidLens::per_batch ? B : kind == ValidLens::per_query ? B * Q : 0;
    for (std::size_t i = 0; i < n; ++i)
        l.ref.lens.push_back(static_cast<std::int32_t>(i % 3 == 1 ? K + 5 : (i * 37 + 11) % (K + 1)));
    return l;
}

// A reference mask and its C view.
struct mask_data {
    Mask ref;
    std::vector<float> bias;
    edgeattn_attention_mask c() const {
        edgeattn_attention_mask m{};
        m.causal = ref.causal;
        m.ranges_kind = ref.ranges_kind == Mask::none        ? EDGEATTN_KEY_RANGES_NONE
                        : ref.ranges_kind == Mask::per_batch ? EDGEATTN_KEY_RANGES_PER_BATCH
                                                             : EDGEATTN_KEY_RANGES_PER_QUERY;
        m.key_ranges = ref.ranges.empty() ? nullptr : ref.ranges.data();
        m.bias = bias.empty() ? nullptr : bias.data();
        m.bias_batch = ref.bias_batch;
        m.bias_heads = ref.bias_heads;
        m.bias_keys = ref.bias_keys;
        return m;
    }
    bool any() const { return ref.causal || ref.ranges_kind != Mask::none || !bias.empty(); }
};

// The options of a call: valid lengths, and the mask when there is one.
edgeattn_attention_options options_of(const lengths &l, const mask_data &m) {
    const edgeattn_valid_lens valid_lens = l.c();
    const edgeattn_attention_mask mask = m.c();
    return test_calls::options_of(&valid_lens, m.any() ? &mask : nullptr);
}

// Ranges that cut rows on both sides; a bias of bias_heads heads in rows of
// K + 3 floats (longer than K, as the API allows), rounded to float so both
// sides add the same numbers.
mask_data make_mask(std::size_t B, std::size_t Q, std::size_t K, bool causal, Mask::Ranges ranges,
                    std::size_t bias_heads) {
    mask_data m;
    m.ref.causal = causal;
    m.ref.ranges_kind = ranges;
    const std::size_t pairs = ranges == Mask::per_batch ? B : ranges == Mask::per_query ? B * Q : 0;
    for (std::size_t p = 0; p < pairs; ++p) {
        const std::int32_t start = static_cast<std::int32_t>((p * 29) % (K / 2 + 1));
        m.ref.ranges.push_back(start);
        m.ref.ranges.push_back(static_cast<std::int32_t>(start + 40 + (p * 53) % K));
    }
    if (bias_heads) {
        m.ref.bias_batch = B;
        m.ref.bias_heads = bias_heads;
        m.ref.bias_keys = K + 3;
        m.bias = random_floats(B * bias_heads * Q * (K + 3), 77, 0.5f);
        m.ref.bias.assign(m.bias.begin(), m.bias.end());
    }
    return m;
}

// One weight matrix (out, in) as stored (fp32, binary16 or int8 with
// per-row scales), with the exact values it stands for in double.
struct stored {
    edgeattn_dtype type;
    std::vector<float> f32, scales;
    std::vector<std::int8_t> i8;
    std::vector<std::uint16_t> f16;
    std::vector<double> exact;

    stored(edgeattn_dtype t, std::size_t out, std::size_t in, unsigned seed) : type(t), exact(out * in) {
        const std::vector<float> w = random_floats(out * in, seed, 1.0f / std::sqrt(static_cast<float>(in)));
        if (t == EDGEATTN_DTYPE_INT8) {
            i8.resize(out * in);
            scales.resize(out);
            REQUIRE(edgeattn_quantize_int8(out, in, w.data(), i8.data(), scales.data()) == EDGEATTN_OK);
            for (std::size_t o = 0; o < out; ++o)
                for (std::size_t i = 0; i < in; ++i) exact[o * in + i] = static_cast<double>(scales[o]) * i8[o * in + i];
        } else if (t == EDGEATTN_DTYPE_F16) {
            f16.resize(out * in);
            REQUIRE(edgeattn_float_to_half(out * in, w.data(), f16.data()) == EDGEATTN_OK);
            for (std::size_t i = 0; i < out * in; ++i) exact[i] = edgeattn_ref::half_value(f16[i]);
        } else {
            f32 = w;
            exact = widen(w);
        }
    }
    edgeattn_weight_matrix matrix() const {
        const void *data = type == EDGEATTN_DTYPE_INT8  ? static_cast<const void *>(i8.data())
                           : type == EDGEATTN_DTYPE_F16 ? static_cast<const void *>(f16.data())
                                                        : static_cast<const void *>(f32.data());
        return {type, data, type == EDGEATTN_DTYPE_INT8 ? scales.data() : nullptr};
    }
};

const edgeattn_dtype all_f32[4] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32};
const edgeattn_dtype mixed[4] = {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_INT8};

// Multi-head weights W_q (h, q), W_k (h_kv, k), W_v (h_kv, v), W_o (h, h)
// in the given types, fp32 biases.
struct mha_model {
    std::size_t q, k, v, h, H, Hkv;
    std::vector<stored> W;
    std::vector<float> b[4];
    std::vector<double> bd[4];

    mha_model(std::size_t q_, std::size_t k_, std::size_t v_, std::size_t h_, std::size_t H_, std::size_t Hkv_,
              const edgeattn_dtype types[4], unsigned seed)
        : q(q_), k(k_), v(v_), h(h_), H(H_), Hkv(Hkv_ ? Hkv_ : H_) {
        const std::size_t hkv = Hkv * (h / H), rows[4] = {h, hkv, hkv, h}, cols[4] = {q, k, v, h};
        for (int i = 0; i < 4; ++i) {
            W.emplace_back(types[i], rows[i], cols[i], seed + i);
            b[i] = random_floats(rows[i], seed + 10 + i, 0.1f);
            bd[i] = widen(b[i]);
        }
    }
    // The matrices in their stored types (fp32 for the all_f32 model), fp32 biases.
    edgeattn_weights weights() const {
        return {W[0].matrix(), W[1].matrix(), W[2].matrix(), W[3].matrix(),
                b[0].data(),   b[1].data(),   b[2].data(),   b[3].data()};
    }
    edgeattn_ref::MhaWeights reference() const {
        return {W[0].exact.data(), W[1].exact.data(), W[2].exact.data(), W[3].exact.data(),
                bd[0].data(),      bd[1].data(),      bd[2].data(),      bd[3].data()};
    }
    edgeattn_attention_dims dims(std::size_t B, std::size_t Q, std::size_t K) const {
        return {B, Q, K, q, k, v, h, H, Hkv, 0};
    }
};

}  // namespace

// ------------------------------------------------------------ dot product

TEST_CASE("dot-product attention in exactly its workspace: guards intact, float64 results") {
    struct shape {
        const char *name;
        std::size_t B, Q, K, d, dv;
        ValidLens::Kind lens;
        bool causal;
        Mask::Ranges ranges;
        bool bias, weights;
    };
    const shape shapes[] = {
        {"Q 16 K 300 streaming", 2, 16, 300, 32, 24, ValidLens::none, false, Mask::none, false, false},
        {"Q 16 K 300 weights", 2, 16, 300, 32, 24, ValidLens::none, false, Mask::none, false, true},
        {"Q 37 K 200 per-query lengths, weights", 2, 37, 200, 20, 12, ValidLens::per_query, false, Mask::none, false,
         true},
        {"Q 37 K 200 per-query lengths, streaming", 2, 37, 200, 20, 12, ValidLens::per_query, false, Mask::none, false,
         false},
        {"Q 3 K 5 d 7, per-batch lengths, weights", 3, 3, 5, 7, 5, ValidLens::per_batch, false, Mask::none, false, true},
        {"Q 13 K 700 causal, per-query ranges, streaming", 1, 13, 700, 16, 8, ValidLens::none, true, Mask::per_query,
         false, false},
        {"Q 13 K 700 causal, per-batch ranges, bias, weights", 2, 13, 700, 16, 8, ValidLens::per_query, true,
         Mask::per_batch, true, true},
        {"Q 70 K 1100 per-batch lengths, streaming", 2, 70, 1100, 64, 40, ValidLens::per_batch, false, Mask::none, false,
         false},
        {"Q 70 K 1100 per-batch lengths, weights", 2, 70, 1100, 64, 40, ValidLens::per_batch, false, Mask::none, false,
         true},
    };
    for (const shape &s : shapes) {
        const std::vector<float> q = random_floats(s.B * s.Q * s.d, 1), k = random_floats(s.B * s.K * s.d, 2),
                                 v = random_floats(s.B * s.K * s.dv, 3);
        const lengths lens = make_lengths(s.lens, s.B, s.Q, s.K);
        const mask_data mask = make_mask(s.B, s.Q, s.K, s.causal, s.ranges, s.bias ? 1 : 0);
        std::vector<double> want(s.B * s.Q * s.dv), want_w(s.B * s.Q * s.K);
        edgeattn_ref::dot_product_attention_masked(s.B, s.Q, s.K, s.d, s.dv, widen(q).data(), widen(k).data(),
                                                   widen(v).data(), lens.ref, mask.ref, want.data(), want_w.data());
        const edgeattn_attention_dims dims{s.B, s.Q, s.K, s.d, s.d, s.dv, 0, 0, 0, 0};
        const edgeattn_attention_options opt = options_of(lens, mask);
        std::size_t run = 0;
        for (const thread_case &t : thread_cases()) {
            INFO(std::string(s.name) << "; " << t.team << " threads, workspace for " << t.sized_for << "; path " << path());
            team_size team(t.team);
            const std::size_t bytes = workspace_bytes(EDGEATTN_OP_SDPA, dims, t.sized_for);
            REQUIRE(bytes > 0);
            guarded ws(bytes, skew_of(run++)), out(want.size() * 4), attn(s.weights ? want_w.size() * 4 : 0);
            float *w = s.weights ? attn.floats() : nullptr;
            const edgeattn_status st =
                edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), &opt, ws.data(), bytes, out.floats(), w);
            REQUIRE(st == EDGEATTN_OK);
            check_intact(ws, "workspace");
            check_intact(out, "output");
            CHECK(rel_l2(out.floats(), want) <= 1e-5);
            if (s.weights) {
                check_intact(attn, "attention weights");
                CHECK(rel_l2(attn.floats(), want_w) <= 1e-5);
            }
        }
    }
}

// ---------------------------------------------------------------- additive

TEST_CASE("additive attention (fp32 and stored W_q, W_k) in exactly its workspace: guards intact, float64 results") {
    struct shape {
        const char *name;
        std::size_t B, Q, K, qs, ks, vs, h;
        ValidLens::Kind lens;
        bool weights;
    };
    const shape shapes[] = {
        {"Q 11 K 300 per-query lengths, streaming", 2, 11, 300, 12, 10, 9, 8, ValidLens::per_query, false},
        {"Q 20 K 100 per-batch lengths, weights", 2, 20, 100, 6, 5, 7, 10, ValidLens::per_batch, true},
        {"Q 9 K 257 weights", 1, 9, 257, 5, 3, 4, 6, ValidLens::none, true},
        {"Q 64 K 400 streaming", 2, 64, 400, 16, 16, 16, 16, ValidLens::none, false},
    };
    const edgeattn_dtype forms[2][2] = {{EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32},
                                        {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F16}};
    for (const shape &s : shapes)
        for (const auto &types : forms) {
            const bool typed = types[0] != EDGEATTN_DTYPE_F32;
            const std::vector<float> q = random_floats(s.B * s.Q * s.qs, 11), k = random_floats(s.B * s.K * s.ks, 12),
                                     v = random_floats(s.B * s.K * s.vs, 13), w_v = random_floats(s.h, 14);
            const stored W_q(types[0], s.h, s.qs, 15), W_k(types[1], s.h, s.ks, 16);
            const lengths lens = make_lengths(s.lens, s.B, s.Q, s.K);
            std::vector<double> want(s.B * s.Q * s.vs), want_w(s.B * s.Q * s.K);
            edgeattn_ref::additive_attention(s.B, s.Q, s.K, s.qs, s.ks, s.vs, s.h, widen(q).data(), widen(k).data(),
                                             widen(v).data(), lens.ref, W_q.exact.data(), W_k.exact.data(),
                                             widen(w_v).data(), want.data(), want_w.data());
            const edgeattn_attention_dims dims{s.B, s.Q, s.K, s.qs, s.ks, s.vs, s.h, 0, 0, 0};
            const edgeattn_attention_options opt = options_of(lens, mask_data{});
            const edgeattn_weights aw{W_q.matrix(), W_k.matrix(), f32(w_v.data()), {}, nullptr, nullptr, nullptr, nullptr};
            std::size_t run = 0;
            for (const thread_case &t : thread_cases()) {
                INFO(std::string(s.name) << std::string(typed ? ", int8 W_q, fp16 W_k" : "") << "; " << t.team << " threads, workspace for "
                            << t.sized_for << "; path " << path());
                team_size team(t.team);
                const std::size_t bytes = workspace_bytes(EDGEATTN_OP_ADDITIVE, dims, t.sized_for);
                REQUIRE(bytes > 0);
                guarded ws(bytes, skew_of(run++)), out(want.size() * 4), attn(s.weights ? want_w.size() * 4 : 0);
                float *w = s.weights ? attn.floats() : nullptr;
                const edgeattn_status st =
                    edgeattn_additive(&dims, q.data(), k.data(), v.data(), &aw, &opt, ws.data(), bytes, out.floats(), w);
                REQUIRE(st == EDGEATTN_OK);
                check_intact(ws, "workspace");
                check_intact(out, "output");
                CHECK(rel_l2(out.floats(), want) <= 1e-5);
                if (s.weights) {
                    check_intact(attn, "attention weights");
                    CHECK(rel_l2(attn.floats(), want_w) <= 1e-5);
                }
            }
        }
}

// -------------------------------------------------------------- multi-head

TEST_CASE("multi-head attention (plain, masked, packed, typed) in exactly its workspace: guards intact, float64 "
          "results") {
    struct shape {
        const char *name;
        std::size_t B, Q, K, q, k, v, h, H, Hkv;
        ValidLens::Kind lens;
        bool causal;
        Mask::Ranges ranges;
        bool bias_per_head, weights;
    };
    const shape shapes[] = {
        {"Q 9 K 300 per-query lengths, streaming", 2, 9, 300, 12, 10, 14, 24, 4, 0, ValidLens::per_query, false,
         Mask::none, false, false},
        {"Q 21 K 130 multi-query, per-batch ranges, bias per head, weights", 2, 21, 130, 16, 16, 16, 32, 4, 1,
         ValidLens::none, false, Mask::per_batch, true, true},
        {"Q 270 K 270 causal, per-query ranges, grouped kv 2, streaming", 1, 270, 270, 16, 16, 16, 32, 4, 2,
         ValidLens::none, true, Mask::per_query, false, false},
        {"Q 5 K 3 weights", 3, 5, 3, 7, 6, 5, 12, 3, 0, ValidLens::per_batch, false, Mask::none, false, true},
        {"Q 64 K 400 per-batch lengths, streaming", 2, 64, 400, 32, 32, 32, 64, 4, 0, ValidLens::per_batch, false,
         Mask::none, false, false},
        {"Q 64 K 400 grouped kv 2, causal, weights", 2, 64, 400, 32, 32, 32, 64, 4, 2, ValidLens::none, true,
         Mask::none, false, true},
    };
    for (const shape &s : shapes) {
        const mha_model f32(s.q, s.k, s.v, s.h, s.H, s.Hkv, all_f32, 21), typed(s.q, s.k, s.v, s.h, s.H, s.Hkv, mixed, 31);
        const std::vector<float> q = random_floats(s.B * s.Q * s.q, 22), k = random_floats(s.B * s.K * s.k, 23),
                                 v = random_floats(s.B * s.K * s.v, 24);
        const lengths lens = make_lengths(s.lens, s.B, s.Q, s.K);
        const mask_data mask = make_mask(s.B, s.Q, s.K, s.causal, s.ranges, s.bias_per_head ? s.H : 0);
        const std::vector<double> qd = widen(q), kd = widen(k), vd = widen(v);
        std::vector<double> want[2], want_w[2];
        const mha_model *models[2] = {&f32, &typed};
        for (int m = 0; m < 2; ++m) {
            want[m].resize(s.B * s.Q * s.h);
            want_w[m].resize(s.B * s.H * s.Q * s.K);
            edgeattn_ref::multi_head_attention_masked(s.B, s.Q, s.K, s.q, s.k, s.v, s.h, s.H, f32.Hkv, qd.data(),
                                                      kd.data(), vd.data(), lens.ref, mask.ref, models[m]->reference(),
                                                      want[m].data(), want_w[m].data());
        }
        const edgeattn_attention_dims dims = f32.dims(s.B, s.Q, s.K);
        const edgeattn_attention_options opt = options_of(lens, mask);
        const edgeattn_weights w = f32.weights();
        const edgeattn_weights tw = typed.weights();

        // Weights packed once into exactly their documented bytes.
        const std::size_t packed_bytes = edgeattn_mha_packed_size(&dims, &w);
        const std::size_t typed_packed_bytes = edgeattn_mha_packed_size(&dims, &tw);
        REQUIRE(packed_bytes > 0);
        REQUIRE(typed_packed_bytes > 0);
        guarded packed(packed_bytes), typed_packed(typed_packed_bytes);
        REQUIRE(edgeattn_mha_pack(&dims, &w, packed.data(), packed_bytes) == EDGEATTN_OK);
        REQUIRE(edgeattn_mha_pack(&dims, &tw, typed_packed.data(), typed_packed_bytes) == EDGEATTN_OK);
        {
            INFO(std::string(s.name));
            check_intact(packed, "packed weights");
            check_intact(typed_packed, "packed int8 / fp16 weights");
        }

        const std::string form_names[] = {"unpacked", "packed", "typed", "typed, packed"};
        std::size_t run = 0;
        for (const thread_case &t : thread_cases())
            for (int form = 0; form < 4; ++form) {
                INFO(std::string(s.name) << "; " << form_names[form] << "; " << t.team << " threads, workspace for " << t.sized_for
                            << "; path " << path());
                team_size team(t.team);
                const std::size_t bytes = workspace_bytes(EDGEATTN_OP_MHA, dims, t.sized_for);
                REQUIRE(bytes > 0);
                const int m = form >= 2;
                guarded ws(bytes, skew_of(run++)), out(want[m].size() * 4), attn(s.weights ? want_w[m].size() * 4 : 0);
                float *aw = s.weights ? attn.floats() : nullptr;
                edgeattn_status st = EDGEATTN_OK;
                switch (form) {
                    case 0:
                        st = edgeattn_mha(&dims, q.data(), k.data(), v.data(), &w, &opt, ws.data(), bytes, out.floats(),
                                          aw);
                        break;
                    case 1:
                        st = edgeattn_mha_packed(&dims, q.data(), k.data(), v.data(), packed.data(), packed_bytes, &opt,
                                                 ws.data(), bytes, out.floats(), aw);
                        break;
                    case 2:
                        st = edgeattn_mha(&dims, q.data(), k.data(), v.data(), &tw, &opt, ws.data(), bytes,
                                          out.floats(), aw);
                        break;
                    default:
                        st = edgeattn_mha_packed(&dims, q.data(), k.data(), v.data(), typed_packed.data(),
                                                 typed_packed_bytes, &opt, ws.data(), bytes, out.floats(), aw);
                }
                REQUIRE(st == EDGEATTN_OK);
                check_intact(ws, "workspace");
                check_intact(out, "output");
                CHECK(rel_l2(out.floats(), want[m]) <= 1e-5);
                if (s.weights) {
                    check_intact(attn, "attention weights");
                    CHECK(rel_l2(attn.floats(), want_w[m]) <= 1e-5);
                }
            }
    }
}

// ---------------------------------------------------------- self-attention

TEST_CASE("self-attention (multi-head attention with X as queries, keys and values; unpacked and packed) in exactly "
          "its workspace: guards intact, float64 results") {
    struct shape {
        const char *name;
        std::size_t B, n, d, H;
        ValidLens::Kind lens;
        bool weights;
    };
    const shape shapes[] = {
        {"n 300 per-query lengths, streaming", 2, 300, 32, 4, ValidLens::per_query, false},
        {"n 50 per-batch lengths, weights", 2, 50, 24, 3, ValidLens::per_batch, true},
        {"n 7 weights", 3, 7, 8, 2, ValidLens::none, true},
    };
    for (const shape &s : shapes) {
        const mha_model model(s.d, s.d, s.d, s.d, s.H, 0, all_f32, 41);
        const std::vector<float> X = random_floats(s.B * s.n * s.d, 42);
        const std::vector<double> Xd = widen(X);
        const lengths lens = make_lengths(s.lens, s.B, s.n, s.n);
        std::vector<double> want(s.B * s.n * s.d), want_w(s.B * s.H * s.n * s.n);
        edgeattn_ref::multi_head_attention(s.B, s.n, s.n, s.d, s.d, s.d, s.d, s.H, Xd.data(), Xd.data(), Xd.data(),
                                           lens.ref, model.reference(), want.data(), want_w.data());
        // every feature size d, keys = queries = n
        const edgeattn_attention_dims dims{s.B, s.n, s.n, s.d, s.d, s.d, s.d, s.H, 0, 0};
        const edgeattn_attention_options opt = options_of(lens, mask_data{});
        const edgeattn_weights w = model.weights();
        const std::size_t packed_bytes = edgeattn_mha_packed_size(&dims, &w);
        REQUIRE(packed_bytes > 0);
        guarded packed(packed_bytes);
        REQUIRE(edgeattn_mha_pack(&dims, &w, packed.data(), packed_bytes) == EDGEATTN_OK);
        check_intact(packed, "packed weights");
        std::size_t run = 0;
        for (const thread_case &t : thread_cases())
            for (int form = 0; form < 2; ++form) {
                INFO(std::string(s.name) << std::string(form ? "; packed" : "") << "; " << t.team << " threads, workspace for " << t.sized_for
                            << "; path " << path());
                team_size team(t.team);
                const std::size_t bytes = workspace_bytes(EDGEATTN_OP_MHA, dims, t.sized_for);
                REQUIRE(bytes > 0);
                guarded ws(bytes, skew_of(run++)), out(want.size() * 4), attn(s.weights ? want_w.size() * 4 : 0);
                float *aw = s.weights ? attn.floats() : nullptr;
                const edgeattn_status st =
                    form ? edgeattn_mha_packed(&dims, X.data(), X.data(), X.data(), packed.data(), packed_bytes, &opt,
                                               ws.data(), bytes, out.floats(), aw)
                         : edgeattn_mha(&dims, X.data(), X.data(), X.data(), &w, &opt, ws.data(), bytes, out.floats(),
                                        aw);
                REQUIRE(st == EDGEATTN_OK);
                check_intact(ws, "workspace");
                check_intact(out, "output");
                CHECK(rel_l2(out.floats(), want) <= 1e-5);
                if (s.weights) {
                    check_intact(attn, "attention weights");
                    CHECK(rel_l2(attn.floats(), want_w) <= 1e-5);
                }
            }
    }
}

// ---------------------------------------------------------------- KV cache

namespace {

// Tolerance of a decode against float64 attention over the exact
// projections: fp32 rows meet the golden bar; binary16 rows are within
// 2^-11 of the projections and int8 rows within half a step of max|x|/127,
// and those errors go through the softmax and the weighted sum.
double decode_bound(edgeattn_dtype storage) {
    return storage == EDGEATTN_DTYPE_INT8 ? 2e-2 : storage == EDGEATTN_DTYPE_F16 ? 2e-3 : 1e-5;
}

std::string type_name(edgeattn_dtype t) {
    return t == EDGEATTN_DTYPE_INT8 ? "int8" : t == EDGEATTN_DTYPE_F16 ? "fp16" : "fp32";
}

}  // namespace

TEST_CASE("KV cache store and attend in exactly their workspaces and cache memory: guards intact, float64 "
          "results") {
    // A prefill longer than a row block and than a key block, decode steps
    // of 1 and 3 tokens (grouped-query heads gather them per key/value head
    // when no weights are asked for), then 26 tokens that fill the cache to
    // its last position; causal with a sliding window. Keys and values of
    // other sizes than the queries (grouped-query case), so each projection
    // packs its own W^T in the store's workspace.
    const std::size_t B = 2, h = 64, H = 4, hs = h / H, capacity = 300, window = 100;
    const std::size_t chunks[] = {270, 1, 3, 26}, total = 300;
    enum form { unpacked, packed_form, typed_form };
    struct config {
        edgeattn_dtype storage;
        form weights_form;
    };
    const config configs[] = {{EDGEATTN_DTYPE_F32, unpacked},
                              {EDGEATTN_DTYPE_F32, packed_form},
                              {EDGEATTN_DTYPE_F32, typed_form},
                              {EDGEATTN_DTYPE_F16, unpacked},
                              {EDGEATTN_DTYPE_INT8, typed_form}};
    const std::string form_names[] = {"unpacked", "packed", "typed"};
    struct heads {
        std::size_t Hkv, q, k, v;
    };
    for (const heads &g : {heads{2, 32, 24, 40}, heads{4, 32, 32, 32}}) {
        const std::size_t Hkv = g.Hkv;
        const mha_model f32(g.q, g.k, g.v, h, H, Hkv, all_f32, 51), typed(g.q, g.k, g.v, h, H, Hkv, mixed, 61);
        const std::vector<float> Xq = random_floats(B * total * g.q, 52), Xk = random_floats(B * total * g.k, 53),
                                 Xv = random_floats(B * total * g.v, 54);
        const std::vector<double> Xqd = widen(Xq), Xkd = widen(Xk), Xvd = widen(Xv);
        const edgeattn_attention_dims full = f32.dims(B, chunks[0], capacity);
        const edgeattn_weights w = f32.weights();
        const edgeattn_weights tw = typed.weights();
        const std::size_t packed_bytes = edgeattn_mha_packed_size(&full, &w);
        REQUIRE(packed_bytes > 0);
        guarded packed(packed_bytes);
        REQUIRE(edgeattn_mha_pack(&full, &w, packed.data(), packed_bytes) == EDGEATTN_OK);

        // The reference of each step: its queries over every token so far,
        // for each model and batch element.
        struct step_ref {
            std::size_t n, L;
            Mask mask;  // one batch element's rows
            std::vector<double> want[2][2], want_w[2][2];  // [model][b]
        };
        std::vector<step_ref> steps;
        std::size_t done = 0;
        for (std::size_t n : chunks) {
            step_ref r;
            r.n = n;
            r.L = done + n;
            r.mask.causal = true;
            r.mask.ranges_kind = Mask::per_query;
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t pos = i + r.L - n;
                r.mask.ranges.push_back(static_cast<std::int32_t>(pos + 1 > window ? pos + 1 - window : 0));
                r.mask.ranges.push_back(static_cast<std::int32_t>(pos + 1));
            }
            const mha_model *models[2] = {&f32, &typed};
            for (int m = 0; m < 2; ++m)
                for (std::size_t b = 0; b < B; ++b) {
                    r.want[m][b].resize(n * h);
                    r.want_w[m][b].resize(H * n * r.L);
                    edgeattn_ref::multi_head_attention_masked(
                        1, n, r.L, g.q, g.k, g.v, h, H, Hkv, Xqd.data() + (b * total + done) * g.q,
                        Xkd.data() + b * total * g.k, Xvd.data() + b * total * g.v, ValidLens{}, r.mask,
                        models[m]->reference(), r.want[m][b].data(), r.want_w[m][b].data());
                }
            steps.push_back(r);
            done = r.L;
        }

        // Every thread case with fp32 weights and cache; the last (most
        // threads, workspace for fewer) with the other forms.
        const std::vector<thread_case> all_cases = thread_cases();
        const std::vector<thread_case> last = {all_cases.back()};
        std::size_t run = 0;
        for (const config &c : configs)
            for (const thread_case &t : &c == configs ? all_cases : last) {
                team_size team(t.team);
                const edgeattn_kv_cache_config cache_config{B, Hkv, hs, capacity, c.storage, 0, 0, 0};
                const std::size_t memory_bytes = edgeattn_kv_cache_memory_size(&cache_config);
                REQUIRE(memory_bytes > 0);
                guarded memory(memory_bytes);
                edgeattn_kv_cache cache;
                REQUIRE(edgeattn_kv_cache_setup(&cache, &cache_config, memory.data(), memory_bytes) == EDGEATTN_OK);
                const int m = c.weights_form == typed_form;
                done = 0;
                for (const step_ref &r : steps) {
                    INFO("kv heads " << Hkv << ", " << type_name(c.storage) << " cache, " << form_names[c.weights_form]
                                     << " weights; step of " << r.n << " tokens to " << r.L << "; " << t.team
                                     << " threads, workspace for " << t.sized_for << "; path " << path());
                    const edgeattn_attention_dims step = f32.dims(B, r.n, capacity);
                    // The step's rows of the queries, keys and values.
                    auto rows_of = [&](const std::vector<float> &all, std::size_t size) {
                        std::vector<float> part(B * r.n * size);
                        for (std::size_t b = 0; b < B; ++b)
                            std::memcpy(part.data() + b * r.n * size, all.data() + (b * total + done) * size,
                                        r.n * size * 4);
                        return part;
                    };
                    const std::vector<float> xq = rows_of(Xq, g.q), xk = rows_of(Xk, g.k), xv = rows_of(Xv, g.v);

                    const std::size_t store_bytes = workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, step, t.sized_for, r.n);
                    REQUIRE(store_bytes > 0);
                    {
                        guarded ws(store_bytes, skew_of(run++));
                        const edgeattn_status st =
                            c.weights_form == packed_form
                                ? edgeattn_kv_cache_store_packed(&cache, &step, r.n, xk.data(), xv.data(), packed.data(),
                                                                 packed_bytes, nullptr, ws.data(), store_bytes)
                                : edgeattn_kv_cache_store(&cache, &step, r.n, xk.data(), xv.data(),
                                                          c.weights_form == typed_form ? &tw : &w, nullptr, ws.data(),
                                                          store_bytes);
                        REQUIRE(st == EDGEATTN_OK);
                        check_intact(ws, "store workspace");
                        check_intact(memory, "cache memory after the store");
                    }

                    mask_data mask;
                    mask.ref = r.mask;
                    mask.ref.ranges.clear();
                    for (std::size_t b = 0; b < B; ++b)
                        mask.ref.ranges.insert(mask.ref.ranges.end(), r.mask.ranges.begin(), r.mask.ranges.end());
                    edgeattn_attention_options opt{};
                    opt.mask = mask.c();
                    const std::size_t bytes = workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, step, t.sized_for);
                    REQUIRE(bytes > 0);
                    for (bool with_weights : {false, true}) {
                        INFO(std::string(with_weights ? "with weights" : "streaming"));
                        guarded ws(bytes, skew_of(run++)), out(B * r.n * h * 4),
                            attn(with_weights ? B * H * r.n * capacity * 4 : 0);
                        float *aw = with_weights ? attn.floats() : nullptr;
                        const edgeattn_status st =
                            c.weights_form == packed_form
                                ? edgeattn_kv_cache_attend_packed(&cache, &step, xq.data(), packed.data(), packed_bytes,
                                                                  &opt, ws.data(), bytes, out.floats(), aw)
                                : edgeattn_kv_cache_attend(&cache, &step, xq.data(),
                                                           c.weights_form == typed_form ? &tw : &w, &opt, ws.data(),
                                                           bytes, out.floats(), aw);
                        REQUIRE(st == EDGEATTN_OK);
                        check_intact(ws, "attend workspace");
                        check_intact(out, "output");
                        check_intact(memory, "cache memory after the attend");
                        if (with_weights) check_intact(attn, "attention weights");
                        for (std::size_t b = 0; b < B; ++b) {
                            INFO("batch element " << b);
                            CHECK(rel_l2(out.floats() + b * r.n * h, r.want[m][b]) <= decode_bound(c.storage));
                            if (!with_weights) continue;
                            // (H, n, capacity) rows: the first L columns are the
                            // weights, the rest (positions not cached) 0.
                            std::vector<float> got(H * r.n * r.L);
                            std::size_t nonzero_past_length = 0;
                            for (std::size_t row = 0; row < H * r.n; ++row) {
                                const float *src = attn.floats() + (b * H * r.n + row) * capacity;
                                std::memcpy(got.data() + row * r.L, src, r.L * 4);
                                for (std::size_t j = r.L; j < capacity; ++j) nonzero_past_length += src[j] != 0.0f;
                            }
                            CHECK(nonzero_past_length == 0);
                            CHECK(rel_l2(got.data(), r.want_w[m][b]) <= decode_bound(c.storage));
                        }
                    }
                    done = r.L;
                }
                // Full now. With room left in batch element 0 only, one more
                // token is refused and not one byte of the cache changes: the
                // last element's next position lies past its memory.
                REQUIRE(edgeattn_kv_cache_truncate(&cache, 0, capacity - 5) == EDGEATTN_OK);
                const std::vector<unsigned char> before(static_cast<unsigned char *>(memory.data()),
                                                        static_cast<unsigned char *>(memory.data()) + memory_bytes);
                const edgeattn_attention_dims one = f32.dims(B, 1, capacity);
                const std::size_t store_bytes = workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, one, 1, 1);
                guarded ws(store_bytes);
                CHECK(edgeattn_kv_cache_store(&cache, &one, 1, Xk.data(), Xv.data(), &w, nullptr, ws.data(),
                                              store_bytes) == EDGEATTN_ERR_CACHE_FULL);
                check_intact(ws, "store workspace of a refused store");
                check_intact(memory, "cache memory after a refused store");
                CHECK(std::memcmp(before.data(), memory.data(), memory_bytes) == 0);
            }
        check_intact(packed, "packed weights");
    }
}

// -------------------------------------------------------------- projection

TEST_CASE("dense (fp32, int8, fp16; per call and packed once) in exactly its workspace: guards intact, float64 "
          "results") {
    struct shape {
        std::size_t rows, in, out;
        bool bias;
    };
    // few rows (W read in place; 16 is the most), rows past that (W^T packed
    // per call) with a partial panel, enough work for several threads, tails
    // narrower than a vector
    const shape shapes[] = {{3, 37, 70, true},     {16, 37, 70, true}, {40, 37, 70, false},
                            {100, 300, 130, true}, {17, 5, 3, true}};
    const edgeattn_dtype types[] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F16};
    for (const shape &s : shapes)
        for (edgeattn_dtype type : types) {
            const stored W(type, s.out, s.in, 71);
            const std::vector<float> x = random_floats(s.rows * s.in, 72), b = random_floats(s.out, 73, 0.1f);
            const std::vector<double> bd = widen(b);
            std::vector<double> want(s.rows * s.out);
            edgeattn_ref::linear(s.rows, s.in, s.out, widen(x).data(), W.exact.data(), s.bias ? bd.data() : nullptr,
                                 want.data());
            const edgeattn_dense_dims dims{s.rows, s.in, s.out};
            const edgeattn_weight_matrix m = W.matrix();
            const float *bias = s.bias ? b.data() : nullptr;
            const std::size_t packed_bytes = edgeattn_dense_packed_size(&dims, &m);
            REQUIRE(packed_bytes > 0);
            guarded packed(packed_bytes);
            REQUIRE(edgeattn_dense_pack(&dims, &m, bias, packed.data(), packed_bytes) == EDGEATTN_OK);
            std::size_t run = 0;
            for (const thread_case &t : thread_cases()) {
                INFO(s.rows << "x" << s.in << "x" << s.out << ", " << type_name(type) << "; " << t.team
                            << " threads, workspace for " << t.sized_for << "; path " << path());
                team_size team(t.team);
                const std::size_t bytes = dense_workspace_bytes(dims, t.sized_for);
                REQUIRE(bytes > 0);
                guarded ws(bytes, skew_of(run++)), y(want.size() * 4), yp(want.size() * 4);
                const edgeattn_status st = edgeattn_dense(&dims, x.data(), &m, bias, ws.data(), bytes, y.floats());
                REQUIRE(st == EDGEATTN_OK);
                REQUIRE(edgeattn_dense_packed(&dims, x.data(), packed.data(), packed_bytes, yp.floats()) == EDGEATTN_OK);
                check_intact(ws, "workspace");
                check_intact(y, "output");
                check_intact(yp, "output of the packed call");
                check_intact(packed, "packed weights");
                CHECK(rel_l2(y.floats(), want) <= 1e-5);
                CHECK(rel_l2(yp.floats(), want) <= 1e-5);
            }
        }
}
