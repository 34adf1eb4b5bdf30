// Where a caller keeps what it passes by pointer does not change a call.
//
//   - Structs: every C entry point reads its dims, options (valid lengths
//     and mask), weights descriptor or weight matrix, KV cache struct and
//     config, and workspace requests before it writes anything, so a copy of
//     one inside the workspace, or inside an output, gives bit for bit what
//     the same call gives with the struct elsewhere; that result itself meets
//     the float64 reference (tests/reference.hpp). The KV cache calls may
//     instead refuse a cache struct in the cache memory with
//     EDGEATTN_ERR_OVERLAP, writing nothing.
//   - Arrays the call reads (valid lengths, key ranges, bias, weights,
//     scales, packed weights, a cache's memory): an output or the workspace
//     over one is EDGEATTN_ERR_OVERLAP, nothing written.
//   - Enums, in a struct or as an argument, holding any int a C caller may
//     store (-1, INT_MIN, past the enumerators): the documented status,
//     nothing written, and the int never loaded as the enum type (which the
//     UndefinedBehaviorSanitizer builds check). The by-value ones are called
//     from C (enum_args_from_c.c): C++ cannot make such an enum value.
//
// Each call's buffers live in one arena, so "nothing written" covers every
// output, the workspace and the gaps between them. The calls that take no
// struct (sequence mask, positional encoding, the int8 / binary16
// converters) and those that write nothing (the *_size functions) have
// nothing to place here; test_status checks their overlaps. A KV cache's
// reset and truncate write only its lengths, too small to hold a struct.
// The workspace query writes one size_t, which a copy of its requests may
// cover.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "enum_args_from_c.h"
#include "reference.hpp"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

using edgeattn_ref::Mask;
using edgeattn_ref::ValidLens;
using test_calls::dense_request;
using test_calls::dense_workspace_bytes;
using test_calls::f32;
using test_calls::fp32_weights;
using test_calls::request;
using test_calls::size_of;
using test_calls::workspace_bytes;

namespace {

constexpr float pattern = -12345.0f;
constexpr std::size_t gap = 16;  // floats of pattern between buffers

// Buffers carved from one block of floats, with a snapshot to compare with.
struct arena {
    std::vector<float> mem = std::vector<float>(1 << 15, pattern);
    std::vector<float> snapshot;
    std::size_t used = gap;

    // n floats of the pattern (outputs, workspace), on a 64-byte step
    float *take(std::size_t n) {
        REQUIRE(used + n + gap <= mem.size());
        float *p = mem.data() + used;
        used += (n + gap + 15) / 16 * 16;
        return p;
    }
    // n inputs, uniform in [-scale, scale], reproducible from `seed`
    float *values(std::size_t n, unsigned seed, float scale) {
        float *p = take(n);
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(-scale, scale);
        for (std::size_t i = 0; i < n; ++i) p[i] = u(rng);
        return p;
    }
    int32_t *ints(const std::vector<int32_t> &v) {
        float *p = take(v.size());
        std::memcpy(p, v.data(), v.size() * sizeof(int32_t));
        return reinterpret_cast<int32_t *>(p);
    }
    void *bytes(std::size_t n) { return take((n + 3) / 4); }
    bool holds(const void *p, std::size_t n) const {
        const auto *c = static_cast<const unsigned char *>(p), *base = reinterpret_cast<const unsigned char *>(mem.data());
        return c >= base && c + n <= base + mem.size() * sizeof(float);
    }
    void seal() { snapshot = mem; }
    bool untouched() const { return std::memcmp(mem.data(), snapshot.data(), mem.size() * sizeof(float)) == 0; }
};

std::vector<double> widen(const float *p, std::size_t n) { return std::vector<double>(p, p + n); }

// ||got - want|| / ||want|| within the golden bar (1e-5); false on a
// non-finite value.
bool meets_reference(const float *got, const std::vector<double> &want) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (!std::isfinite(got[i])) return false;
        diff += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return ref > 0 && std::sqrt(diff / ref) <= 1e-5;
}

// A struct the call takes by pointer: `slot` is the pointer it gets.
struct struct_arg {
    std::string name;
    const void **slot;
    std::size_t bytes;
};

// An output or the workspace: where a struct may be copied to (byte
// offsets `places`; none given: its start and its end), and whether its
// bytes are part of the call's result.
struct buffer_arg {
    std::string name;
    float **slot;     // the pointer the call gets
    std::size_t bytes;
    bool compared;    // an output (the workspace's contents are unspecified)
    bool movable;     // an argument of its own (not memory reached through a struct)
    std::vector<std::size_t> places;
};

// An array the call reads besides its activations.
struct array_arg {
    std::string name;
    const void *data;
    std::size_t bytes;
};

// One call with its arguments as made; a new one for every case.
struct problem {
    arena a;
    std::vector<struct_arg> structs;
    std::vector<buffer_arg> buffers;
    std::vector<array_arg> arrays;
    bool may_refuse = false;  // a struct in a buffer may be EDGEATTN_ERR_OVERLAP instead

    problem() = default;
    problem(const problem &) = delete;
    problem &operator=(const problem &) = delete;
    virtual ~problem() = default;
    virtual edgeattn_status run() = 0;
    // after run(), every argument where it was made: the float64 reference
    virtual void check_reference() = 0;
    // what the call produced, to compare bit for bit
    virtual std::vector<unsigned char> result() {
        std::vector<unsigned char> r;
        for (const buffer_arg &b : buffers)
            if (b.compared) {
                const auto *p = reinterpret_cast<const unsigned char *>(*b.slot);
                r.insert(r.end(), p, p + b.bytes);
            }
        return r;
    }
};

using factory = std::function<std::unique_ptr<problem>()>;

template <class P, class... Args>
factory make(Args... args) {
    return [=] { return std::unique_ptr<problem>(new P(args...)); };
}

// Every struct copied into every output and the workspace (at each place):
// the same result bit for bit, or, where allowed, EDGEATTN_ERR_OVERLAP with
// nothing written. A struct larger than a buffer (the weights descriptor in
// additive attention's weights) starts at the buffer's start and covers all
// of it, its last bytes in the gap after it.
void check_struct_placement(const factory &make_problem) {
    std::unique_ptr<problem> normal = make_problem();
    REQUIRE(normal->run() == EDGEATTN_OK);
    normal->check_reference();
    const std::vector<unsigned char> want = normal->result();
    REQUIRE(!normal->structs.empty());
    REQUIRE(!normal->buffers.empty());
    std::size_t placed = 0;
    for (std::size_t s = 0; s < normal->structs.size(); ++s)
        for (std::size_t b = 0; b < normal->buffers.size(); ++b) {
            const buffer_arg &nb = normal->buffers[b];
            const std::size_t size = normal->structs[s].bytes;
            std::vector<std::size_t> places = nb.places;
            if (places.empty()) places = {0, nb.bytes >= size ? (nb.bytes - size) / 8 * 8 : 0};
            for (std::size_t offset : places) {
                std::unique_ptr<problem> p = make_problem();
                const struct_arg &st = p->structs[s];
                const buffer_arg &buf = p->buffers[b];
                INFO(st.name << " inside " << buf.name << " at byte " << offset);
                if (st.bytes > buf.bytes) {
                    REQUIRE(offset == 0);
                    REQUIRE(st.bytes - buf.bytes <= gap * sizeof(float));
                } else {
                    REQUIRE(offset + st.bytes <= buf.bytes);
                }
                void *at = reinterpret_cast<unsigned char *>(*buf.slot) + offset;
                std::memcpy(at, *st.slot, st.bytes);
                *st.slot = at;
                p->a.seal();
                const edgeattn_status status = p->run();
                if (status == EDGEATTN_OK) {
                    CHECK(p->result() == want);
                } else {
                    CHECK(p->may_refuse);
                    CHECK(status == EDGEATTN_ERR_OVERLAP);
                    CHECK(p->a.untouched());
                }
                ++placed;
            }
        }
    CHECK(placed >= 2 * normal->structs.size());
}

// Every output and the workspace moved onto every array the call reads (at
// its start and at its last four bytes): EDGEATTN_ERR_OVERLAP, nothing written.
void check_array_overlap(const factory &make_problem) {
    std::unique_ptr<problem> normal = make_problem();
    REQUIRE(!normal->arrays.empty());
    for (std::size_t r = 0; r < normal->arrays.size(); ++r)
        for (std::size_t b = 0; b < normal->buffers.size(); ++b) {
            if (!normal->buffers[b].movable) continue;
            for (bool at_end : {false, true}) {
                std::unique_ptr<problem> p = make_problem();
                const array_arg &arr = p->arrays[r];
                const buffer_arg &buf = p->buffers[b];
                INFO(buf.name << " over " << arr.name << (at_end ? " (its last bytes)" : " (its start)"));
                const std::size_t offset = at_end ? (arr.bytes - 1) / 4 * 4 : 0;
                float *moved = reinterpret_cast<float *>(const_cast<unsigned char *>(
                    static_cast<const unsigned char *>(arr.data) + offset));
                REQUIRE(p->a.holds(moved, buf.bytes));
                *buf.slot = moved;
                p->a.seal();
                CHECK(p->run() == EDGEATTN_ERR_OVERLAP);
                CHECK(p->a.untouched());
            }
        }
}

template <class T>
void set_int(T &field, int value) {  // as a C caller may store it
    static_assert(sizeof(T) == sizeof(int), "int-sized enums");
    std::memcpy(&field, &value, sizeof value);
}

const int bad_enum_values[] = {-1, INT_MIN, 3, 1000, INT_MAX};

// ------------------------------------------------------------ the problems

// Shapes shared by the attention problems: (B, Q, K) = (2, 3, 4), query,
// key and value sizes 5, 6, 7, h = 8 in 2 heads.
constexpr std::size_t B = 2, Q = 3, K = 4, QS = 5, KS = 6, VS = 7, HID = 8, HEADS = 2;

struct softmax_problem : problem {
    edgeattn_softmax_dims dims{B, Q, K};
    const float *X = a.values(B * Q * K, 1, 3.0f);
    int32_t *lens = a.ints({1, 0, 9, 4, 2, 3});
    edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens};
    float *Y = a.take(B * Q * K);
    const void *dims_arg = &dims, *vl_arg = &vl;

    softmax_problem() {
        structs = {{"dims", &dims_arg, sizeof dims}, {"valid_lens", &vl_arg, sizeof vl}};
        buffers = {{"Y", &Y, B * Q * K * 4, true, true, {}}};
        arrays = {{"valid lengths", lens, B * Q * 4}};
    }
    edgeattn_status run() override {
        return edgeattn_masked_softmax(static_cast<const edgeattn_softmax_dims *>(dims_arg), X,
                                       static_cast<const edgeattn_valid_lens *>(vl_arg), Y);
    }
    void check_reference() override {
        std::vector<double> want(B * Q * K);
        ValidLens r;
        r.kind = ValidLens::per_query;
        r.lens.assign(lens, lens + B * Q);
        edgeattn_ref::masked_softmax(B, Q, K, widen(X, B * Q * K).data(), r, want.data());
        CHECK(meets_reference(Y, want));
    }
};

// A mask of the decoder calls: causal, a key range per batch element and a
// bias (one plane, or one per head), for a call of `rows` queries over
// `keys` keys (bias rows of `bias_keys` floats).
struct mask_part {
    int32_t *ranges = nullptr;
    float *bias = nullptr;
    std::size_t rows = 0, bias_heads = 1, bias_keys = 0;
    edgeattn_attention_mask mask{};

    void make(arena &a, std::size_t rows_, std::size_t heads, std::size_t keys, unsigned seed) {
        rows = rows_;
        ranges = a.ints({0, static_cast<int32_t>(keys) - 1, 1, static_cast<int32_t>(keys)});
        bias_heads = heads;
        bias_keys = keys;
        bias = a.values(heads * rows * keys, seed, 0.5f);
        mask = {1, EDGEATTN_KEY_RANGES_PER_BATCH, ranges, bias, 1, heads, keys, 0};
    }
    void add_arrays(std::vector<array_arg> &arrays) const {
        arrays.push_back({"key ranges", ranges, 2 * B * 4});
        arrays.push_back({"bias", bias, bias_heads * rows * bias_keys * 4});
    }
    Mask reference() const {
        Mask m;
        m.causal = true;
        m.ranges_kind = Mask::per_batch;
        m.ranges.assign(ranges, ranges + 2 * B);
        m.bias.assign(bias, bias + bias_heads * rows * bias_keys);
        m.bias_batch = 1;
        m.bias_heads = bias_heads;
        m.bias_keys = bias_keys;
        return m;
    }
};

// Multi-head weights in the arena: fp32, or stored types (W_q int8, W_k
// fp16, W_v int8, W_o fp32), with their exact values for the reference.
struct mha_params {
    std::size_t rows[4] = {}, cols[4] = {};
    const float *W[4] = {}, *b[4] = {};
    const void *data[4] = {};
    const float *scales[4] = {};
    edgeattn_dtype types[4] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32};
    std::vector<double> exact[4], bias[4];
    edgeattn_weights w{};

    void make(arena &a, const edgeattn_attention_dims &d, bool typed, unsigned seed) {
        const std::size_t kv = (d.num_kv_heads ? d.num_kv_heads : d.num_heads) * (d.num_hiddens / d.num_heads);
        const std::size_t r[4] = {d.num_hiddens, kv, kv, d.num_hiddens};
        const std::size_t c[4] = {d.query_size, d.key_size, d.value_size, d.num_hiddens};
        if (typed) {
            types[0] = types[2] = EDGEATTN_DTYPE_INT8;
            types[1] = EDGEATTN_DTYPE_F16;
        }
        for (int i = 0; i < 4; ++i) {
            rows[i] = r[i];
            cols[i] = c[i];
            const std::size_t n = r[i] * c[i];
            W[i] = a.values(n, seed + i, 1.0f / std::sqrt(static_cast<float>(c[i])));
            b[i] = i == 1 ? nullptr : a.values(r[i], seed + 10 + i, 0.2f);  // b_k left out
            exact[i].assign(W[i], W[i] + n);
            if (b[i]) bias[i].assign(b[i], b[i] + r[i]);
            data[i] = W[i];
            if (types[i] == EDGEATTN_DTYPE_INT8) {
                auto *q = static_cast<int8_t *>(a.bytes(n));
                float *s = a.take(r[i]);
                REQUIRE(edgeattn_quantize_int8(r[i], c[i], W[i], q, s) == EDGEATTN_OK);
                for (std::size_t j = 0; j < n; ++j) exact[i][j] = static_cast<double>(s[j / c[i]]) * q[j];
                data[i] = q;
                scales[i] = s;
            } else if (types[i] == EDGEATTN_DTYPE_F16) {
                auto *h = static_cast<uint16_t *>(a.bytes(2 * n));
                REQUIRE(edgeattn_float_to_half(n, W[i], h) == EDGEATTN_OK);
                for (std::size_t j = 0; j < n; ++j) exact[i][j] = edgeattn_ref::half_value(h[j]);
                data[i] = h;
            }
        }
        edgeattn_weight_matrix m[4];
        for (int i = 0; i < 4; ++i) m[i] = {types[i], data[i], scales[i]};
        w = {m[0], m[1], m[2], m[3], b[0], b[1], b[2], b[3]};
    }
    // the arrays a call reads: the projections `used` names (bit i: W[i])
    void add_arrays(std::vector<array_arg> &arrays, unsigned used = 15) const {
        const char *names[4] = {"W_q", "W_k", "W_v", "W_o"};
        for (int i = 0; i < 4; ++i) {
            if (!(used >> i & 1u)) continue;
            const std::size_t n = rows[i] * cols[i];
            const std::size_t element = types[i] == EDGEATTN_DTYPE_INT8 ? 1 : types[i] == EDGEATTN_DTYPE_F16 ? 2 : 4;
            arrays.push_back({names[i], data[i], n * element});
            if (scales[i]) arrays.push_back({std::string(names[i]) + "'s scales", scales[i], rows[i] * 4});
            if (b[i]) arrays.push_back({std::string("b") + (names[i] + 1), b[i], rows[i] * 4});
        }
    }
    edgeattn_ref::MhaWeights reference() const {
        auto c = [&](int i) { return bias[i].empty() ? nullptr : bias[i].data(); };
        return {exact[0].data(), exact[1].data(), exact[2].data(), exact[3].data(), c(0), c(1), c(2), c(3)};
    }
};

// The attention calls: scaled dot product (edgeattn_sdpa, valid lengths
// alone or with a mask), additive (fp32, or int8 W_q and fp16 W_k),
// multi-head (edgeattn_mha: fp32, masked, stored types with a mask;
// edgeattn_mha_packed: unmasked, masked) and self-attention (edgeattn_mha
// and edgeattn_mha_packed with X as queries, keys and values).
enum class op {
    dot,
    dot_masked,
    additive,
    additive_typed,
    mha,
    mha_masked,
    mha_typed,
    mha_packed,
    mha_masked_packed,
    self,
    self_packed
};

struct attention_problem : problem {
    op kind;
    edgeattn_attention_dims dims{};
    const float *q = nullptr, *k = nullptr, *v = nullptr;
    int32_t *lens = nullptr;
    edgeattn_attention_options opt{};
    mask_part m;
    mha_params p;
    // additive attention's weights
    const float *aW_q = nullptr, *aW_k = nullptr, *a_w_v = nullptr;
    int8_t *aq8 = nullptr;
    float *aq_scales = nullptr;
    uint16_t *ak16 = nullptr;
    std::vector<double> a_exact_q, a_exact_k;
    edgeattn_weights aw{};
    float *packed = nullptr;
    std::size_t packed_bytes = 0;
    float *out = nullptr, *attn = nullptr, *ws = nullptr;
    std::size_t ws_bytes = 0, out_features = 0, heads = 1;
    const void *dims_arg = &dims, *opt_arg = &opt, *w_arg = nullptr;

    bool self() const { return kind == op::self || kind == op::self_packed; }
    bool multi_head() const { return kind >= op::mha; }
    bool masked() const { return kind == op::dot_masked || kind == op::mha_masked || kind == op::mha_typed ||
                                 kind == op::mha_masked_packed; }
    bool packed_weights() const { return kind == op::mha_packed || kind == op::mha_masked_packed || kind == op::self_packed; }

    explicit attention_problem(op which) : kind(which) {
        const std::size_t n = self() ? Q : K;
        if (kind == op::dot || kind == op::dot_masked) {
            dims = {B, Q, K, QS, 0, VS, 0, 0, 0, 0};
            out_features = VS;
        } else if (kind == op::additive || kind == op::additive_typed) {
            dims = {B, Q, K, QS, KS, VS, HID, 0, 0, 0};
            out_features = VS;
        } else if (self()) {
            // X (B, Q, HID) as queries, keys and values
            dims = {B, Q, Q, HID, HID, HID, HID, HEADS, 0, 0};
            out_features = HID;
            heads = HEADS;
        } else {
            // grouped-query heads (one key/value head) where a mask is taken too
            dims = {B, Q, K, QS, KS, VS, HID, HEADS, masked() ? std::size_t{1} : 0, 0};
            out_features = HID;
            heads = HEADS;
        }
        const std::size_t qs = self() ? HID : QS, ks = self() ? HID : kind <= op::dot_masked ? QS : KS,
                          vs = self() ? HID : VS;
        q = a.values(B * Q * qs, 1, 1.0f);
        k = self() ? q : a.values(B * n * ks, 2, 1.0f);
        v = self() ? q : a.values(B * n * vs, 3, 1.0f);
        lens = a.ints({2, static_cast<int32_t>(n)});
        opt.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
        arrays.push_back({"valid lengths", lens, B * 4});
        if (masked()) {
            m.make(a, Q, kind == op::dot_masked ? 1 : HEADS, n, 4);
            m.add_arrays(arrays);
            opt.mask = m.mask;
        }
        structs = {{"dims", &dims_arg, sizeof dims}, {"options", &opt_arg, sizeof opt}};
        if (kind == op::additive || kind == op::additive_typed) make_additive();
        if (multi_head()) {
            p.make(a, dims, kind == op::mha_typed, 20);
            if (packed_weights()) {
                packed_bytes = edgeattn_mha_packed_size(&dims, &p.w);
                REQUIRE(packed_bytes > 0);
                packed = a.take(packed_bytes / 4);
                REQUIRE(edgeattn_mha_pack(&dims, &p.w, packed, packed_bytes) == EDGEATTN_OK);
                arrays.push_back({"packed weights", packed, packed_bytes});
            } else {
                p.add_arrays(arrays);
                w_arg = &p.w;
                structs.push_back({"weights", &w_arg, sizeof p.w});
            }
        }
        out = a.take(B * Q * out_features);
        attn = a.take(B * heads * Q * n);
        ws_bytes = workspace_bytes(kind <= op::dot_masked ? EDGEATTN_OP_SDPA
                                   : multi_head()         ? EDGEATTN_OP_MHA
                                                          : EDGEATTN_OP_ADDITIVE,
                                   dims, 1);
        REQUIRE(ws_bytes > 0);
        ws = a.take(ws_bytes / 4);
        buffers = {{"output", &out, B * Q * out_features * 4, true, true, {}},
                   {"attention weights", &attn, B * heads * Q * n * 4, true, true, {}},
                   {"workspace", &ws, ws_bytes, false, true, {}}};
    }

    void make_additive() {
        aW_q = a.values(HID * QS, 30, 0.5f);
        aW_k = a.values(HID * KS, 31, 0.5f);
        a_w_v = a.values(HID, 32, 1.0f);
        a_exact_q.assign(aW_q, aW_q + HID * QS);
        a_exact_k.assign(aW_k, aW_k + HID * KS);
        aw = fp32_weights(aW_q, aW_k, a_w_v, nullptr);
        if (kind == op::additive_typed) {  // W_q int8, W_k fp16
            aq8 = static_cast<int8_t *>(a.bytes(HID * QS));
            aq_scales = a.take(HID);
            REQUIRE(edgeattn_quantize_int8(HID, QS, aW_q, aq8, aq_scales) == EDGEATTN_OK);
            ak16 = static_cast<uint16_t *>(a.bytes(2 * HID * KS));
            REQUIRE(edgeattn_float_to_half(HID * KS, aW_k, ak16) == EDGEATTN_OK);
            for (std::size_t j = 0; j < HID * QS; ++j) a_exact_q[j] = static_cast<double>(aq_scales[j / QS]) * aq8[j];
            for (std::size_t j = 0; j < HID * KS; ++j) a_exact_k[j] = edgeattn_ref::half_value(ak16[j]);
            aw.W_q = {EDGEATTN_DTYPE_INT8, aq8, aq_scales};
            aw.W_k = {EDGEATTN_DTYPE_F16, ak16, nullptr};
            arrays.push_back({"W_q", aq8, HID * QS});
            arrays.push_back({"W_q's scales", aq_scales, HID * 4});
            arrays.push_back({"W_k", ak16, 2 * HID * KS});
        } else {
            arrays.push_back({"W_q", aW_q, HID * QS * 4});
            arrays.push_back({"W_k", aW_k, HID * KS * 4});
        }
        arrays.push_back({"w_v", a_w_v, HID * 4});
        w_arg = &aw;
        structs.push_back({"weights", &w_arg, sizeof aw});
    }

    edgeattn_status run() override {
        const auto *d = static_cast<const edgeattn_attention_dims *>(dims_arg);
        const auto *o = static_cast<const edgeattn_attention_options *>(opt_arg);
        const auto *w = static_cast<const edgeattn_weights *>(w_arg);
        switch (kind) {
            case op::dot:
            case op::dot_masked: return edgeattn_sdpa(d, q, k, v, o, ws, ws_bytes, out, attn);
            case op::additive:
            case op::additive_typed: return edgeattn_additive(d, q, k, v, w, o, ws, ws_bytes, out, attn);
            case op::mha:
            case op::mha_masked:
            case op::mha_typed:
            case op::self: return edgeattn_mha(d, q, k, v, w, o, ws, ws_bytes, out, attn);
            case op::mha_packed:
            case op::mha_masked_packed:
            case op::self_packed:
                return edgeattn_mha_packed(d, q, k, v, packed, packed_bytes, o, ws, ws_bytes, out, attn);
        }
        return EDGEATTN_ERR_NULL_POINTER;
    }

    void check_reference() override {
        const std::size_t n = self() ? Q : K, qs = self() ? HID : QS,
                          ks = self() ? HID : kind <= op::dot_masked ? QS : KS, vs = self() ? HID : VS;
        const std::vector<double> qd = widen(q, B * Q * qs), kd = widen(k, B * n * ks), vd = widen(v, B * n * vs);
        ValidLens r;
        r.kind = ValidLens::per_batch;
        r.lens.assign(lens, lens + B);
        std::vector<double> want_out(B * Q * out_features), want_w(B * heads * Q * n);
        const Mask mask = masked() ? m.reference() : Mask{};
        if (kind == op::dot)
            edgeattn_ref::dot_product_attention(B, Q, n, qs, vs, qd.data(), kd.data(), vd.data(), r, want_out.data(),
                                                want_w.data());
        else if (kind == op::dot_masked)
            edgeattn_ref::dot_product_attention_masked(B, Q, n, qs, vs, qd.data(), kd.data(), vd.data(), r, mask,
                                                       want_out.data(), want_w.data());
        else if (kind == op::additive || kind == op::additive_typed)
            edgeattn_ref::additive_attention(B, Q, n, qs, ks, vs, HID, qd.data(), kd.data(), vd.data(), r,
                                             a_exact_q.data(), a_exact_k.data(), widen(a_w_v, HID).data(),
                                             want_out.data(), want_w.data());
        else
            edgeattn_ref::multi_head_attention_masked(B, Q, n, qs, ks, vs, HID, HEADS,
                                                      dims.num_kv_heads ? dims.num_kv_heads : HEADS, qd.data(),
                                                      kd.data(), vd.data(), r, mask, p.reference(), want_out.data(),
                                                      want_w.data());
        // Weights packed once are the fp32 ones: the reference's too.
        CHECK(meets_reference(out, want_out));
        CHECK(meets_reference(attn, want_w));
    }
};

// Packing multi-head weights once (fp32 or stored types).
struct mha_pack_problem : problem {
    bool typed;
    edgeattn_attention_dims dims{B, Q, K, QS, KS, VS, HID, HEADS, 1, 0};
    mha_params p;
    float *packed = nullptr;
    std::size_t packed_bytes = 0;
    const void *dims_arg = &dims, *w_arg = nullptr;

    explicit mha_pack_problem(bool typed_) : typed(typed_) {
        p.make(a, dims, typed, 40);
        p.add_arrays(arrays);
        packed_bytes = edgeattn_mha_packed_size(&dims, &p.w);
        REQUIRE(packed_bytes > 0);
        packed = a.take(packed_bytes / 4);
        w_arg = &p.w;
        structs = {{"dims", &dims_arg, sizeof dims}, {"weights", &w_arg, sizeof p.w}};
        buffers = {{"packed weights", &packed, packed_bytes, true, true, {}}};
    }
    edgeattn_status run() override {
        return edgeattn_mha_pack(static_cast<const edgeattn_attention_dims *>(dims_arg),
                                 static_cast<const edgeattn_weights *>(w_arg), packed, packed_bytes);
    }
    // What was packed, used: multi-head attention against float64.
    void check_reference() override {
        std::mt19937 rng(7);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        std::vector<float> x(B * Q * QS), y(B * K * KS), z(B * K * VS), out(B * Q * HID);
        for (std::vector<float> *t : {&x, &y, &z})
            for (float &e : *t) e = u(rng);
        const std::size_t ws_bytes = workspace_bytes(EDGEATTN_OP_MHA, dims, 1);
        REQUIRE(ws_bytes > 0);
        std::vector<float> ws(ws_bytes / 4);
        REQUIRE(edgeattn_mha_packed(&dims, x.data(), y.data(), z.data(), packed, packed_bytes, nullptr, ws.data(),
                                    ws.size() * 4, out.data(), nullptr) == EDGEATTN_OK);
        std::vector<double> want(B * Q * HID), want_w(B * HEADS * Q * K);
        edgeattn_ref::multi_head_attention_masked(B, Q, K, QS, KS, VS, HID, HEADS, 1,
                                                  std::vector<double>(x.begin(), x.end()).data(),
                                                  std::vector<double>(y.begin(), y.end()).data(),
                                                  std::vector<double>(z.begin(), z.end()).data(), ValidLens{}, Mask{},
                                                  p.reference(), want.data(), want_w.data());
        CHECK(meets_reference(out.data(), want));
    }
};

// The dense layer: as given (fp32 or int8), packed once (fp32 or int8), and
// the call on weights packed once. 20 rows: more than the few for which W
// is read in place, so the workspace holds W^T packed per call.
enum class lin { plain, typed, pack, pack_typed, packed };

struct dense_problem : problem {
    static constexpr std::size_t rows = 20, in = 5, outs = 8;
    lin kind;
    edgeattn_dense_dims dims{rows, in, outs};
    const float *x = a.values(rows * in, 50, 1.0f), *W = a.values(outs * in, 51, 0.5f), *b = a.values(outs, 52, 0.2f);
    int8_t *q8 = nullptr;
    float *scales = nullptr;
    edgeattn_weight_matrix Wm = f32(W);
    std::vector<double> exact = std::vector<double>(W, W + outs * in);
    float *y = nullptr, *ws = nullptr, *packed = nullptr;
    std::size_t ws_bytes = 0, packed_bytes = 0;
    const void *dims_arg = &dims, *W_arg = &Wm;

    bool typed() const { return kind == lin::typed || kind == lin::pack_typed; }
    bool packs() const { return kind == lin::pack || kind == lin::pack_typed; }

    explicit dense_problem(lin which) : kind(which) {
        if (typed()) {
            q8 = static_cast<int8_t *>(a.bytes(outs * in));
            scales = a.take(outs);
            REQUIRE(edgeattn_quantize_int8(outs, in, W, q8, scales) == EDGEATTN_OK);
            Wm = {EDGEATTN_DTYPE_INT8, q8, scales};
            for (std::size_t j = 0; j < outs * in; ++j) exact[j] = static_cast<double>(scales[j / in]) * q8[j];
            arrays = {{"W", q8, outs * in}, {"W's scales", scales, outs * 4}};
        } else {
            arrays = {{"W", W, outs * in * 4}};
        }
        arrays.push_back({"b", b, outs * 4});
        structs = {{"dims", &dims_arg, sizeof dims}};
        if (kind != lin::packed) structs.push_back({"W", &W_arg, sizeof Wm});
        if (packs() || kind == lin::packed) {
            packed_bytes = edgeattn_dense_packed_size(&dims, &Wm);
            REQUIRE(packed_bytes > 0);
            packed = a.take(packed_bytes / 4);
        }
        if (kind == lin::packed) {
            REQUIRE(edgeattn_dense_pack(&dims, &Wm, b, packed, packed_bytes) == EDGEATTN_OK);
            arrays = {{"packed weights", packed, packed_bytes}};
        }
        if (packs()) {
            buffers = {{"packed weights", &packed, packed_bytes, true, true, {}}};
            return;
        }
        y = a.take(rows * outs);
        buffers = {{"y", &y, rows * outs * 4, true, true, {}}};
        if (kind != lin::packed) {
            ws_bytes = dense_workspace_bytes(dims, 1);
            REQUIRE(ws_bytes > 0);
            ws = a.take(ws_bytes / 4);
            buffers.push_back({"workspace", &ws, ws_bytes, false, true, {}});
        }
    }
    edgeattn_status run() override {
        const auto *d = static_cast<const edgeattn_dense_dims *>(dims_arg);
        const auto *m = static_cast<const edgeattn_weight_matrix *>(W_arg);
        switch (kind) {
            case lin::plain:
            case lin::typed: return edgeattn_dense(d, x, m, b, ws, ws_bytes, y);
            case lin::pack:
            case lin::pack_typed: return edgeattn_dense_pack(d, m, b, packed, packed_bytes);
            case lin::packed: return edgeattn_dense_packed(d, x, packed, packed_bytes, y);
        }
        return EDGEATTN_ERR_NULL_POINTER;
    }
    void check_reference() override {
        std::vector<float> got(rows * outs);
        if (packs())
            REQUIRE(edgeattn_dense_packed(&dims, x, packed, packed_bytes, got.data()) == EDGEATTN_OK);
        else
            std::memcpy(got.data(), y, got.size() * 4);
        std::vector<double> want(rows * outs);
        edgeattn_ref::linear(rows, in, outs, widen(x, rows * in).data(), exact.data(), widen(b, outs).data(),
                             want.data());
        CHECK(meets_reference(got.data(), want));
    }
};

// ------------------------------------------------------------ KV cache

// A cache of B = 2, one key/value head of 8 features (h = 16, 2 query
// heads), capacity 8, holding `filled` prefilled tokens; then a store of 4
// tokens or an attend of 2 queries (causal, key ranges, a bias).
enum class kv { store, store_typed, store_packed, attend, attend_typed, attend_packed };

struct kv_problem : problem {
    static constexpr std::size_t H = 2, HKV = 1, HS = 8, H_ALL = H * HS, CAP = 8, STEP = 4, QUERIES = 2;
    kv kind;
    std::size_t filled;
    edgeattn_attention_dims dims{B, STEP, CAP, QS, KS, VS, H_ALL, H, HKV, 0};
    mha_params p;
    float *packed = nullptr;
    std::size_t packed_bytes = 0;
    edgeattn_kv_cache cache{};
    float *memory = nullptr;
    std::size_t memory_bytes = 0;
    const float *keys[2] = {}, *values[2] = {}, *queries = nullptr;  // prefill, step
    mask_part m;
    edgeattn_attention_options opt{};  // a store's: all zero; an attend's: the mask
    float *out = nullptr, *attn = nullptr, *ws = nullptr;
    std::size_t ws_bytes = 0;
    const void *cache_arg = &cache, *dims_arg = &dims, *w_arg = nullptr, *opt_arg = &opt;

    bool stores() const { return kind == kv::store || kind == kv::store_typed || kind == kv::store_packed; }
    bool typed() const { return kind == kv::store_typed || kind == kv::attend_typed; }
    bool packed_weights() const { return kind == kv::store_packed || kind == kv::attend_packed; }

    explicit kv_problem(kv which) : kind(which), filled(stores() ? 2 : 4) {
        may_refuse = true;
        p.make(a, dims, typed(), 60);
        if (packed_weights()) {
            packed_bytes = edgeattn_mha_packed_size(&dims, &p.w);
            packed = a.take(packed_bytes / 4);
            REQUIRE(edgeattn_mha_pack(&dims, &p.w, packed, packed_bytes) == EDGEATTN_OK);
        }
        const edgeattn_kv_cache_config config{B, HKV, HS, CAP, EDGEATTN_DTYPE_F32, 0, 0, 0};
        memory_bytes = edgeattn_kv_cache_memory_size(&config);
        REQUIRE(memory_bytes > 0);
        memory = a.take(memory_bytes / 4);
        REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory, memory_bytes) == EDGEATTN_OK);
        keys[0] = a.values(B * filled * KS, 61, 1.0f);
        values[0] = a.values(B * filled * VS, 62, 1.0f);
        edgeattn_attention_dims prefill = dims;
        prefill.queries = filled;
        REQUIRE(store(&cache, &prefill, filled, keys[0], values[0], nullptr, a.take(store_ws(filled) / 4),
                      store_ws(filled)) == EDGEATTN_OK);
        w_arg = &p.w;
        structs = {{"cache", &cache_arg, sizeof cache}, {"dims", &dims_arg, sizeof dims}};
        if (!packed_weights()) structs.push_back({"weights", &w_arg, sizeof p.w});
        structs.push_back({"options", &opt_arg, sizeof opt});
        const auto base = reinterpret_cast<const unsigned char *>(memory);
        const std::size_t cached = B * HKV * CAP * HS * 4;
        arrays = {{"cached keys", cache.keys, cached}, {"cached values", cache.values, cached},
                  {"cache lengths", cache.lengths, B * 4}};
        if (packed_weights())
            arrays.push_back({"packed weights", packed, packed_bytes});
        else
            p.add_arrays(arrays, stores() ? 6u : 9u);
        if (stores()) {
            keys[1] = a.values(B * STEP * KS, 63, 1.0f);
            values[1] = a.values(B * STEP * VS, 64, 1.0f);
            ws_bytes = store_ws(STEP);
            ws = a.take(ws_bytes / 4);
            // A struct in the cache goes where this store writes: the
            // keys of batch element 0 and the values of batch element 1
            // from position `filled` on.
            const std::size_t row = HS * 4;
            const std::size_t key_place = reinterpret_cast<const unsigned char *>(cache.keys) - base + filled * row;
            const std::size_t value_place =
                reinterpret_cast<const unsigned char *>(cache.values) - base + (CAP + filled) * row;
            buffers = {{"workspace", &ws, ws_bytes, false, true, {}},
                       {"cache memory", &memory, memory_bytes, false, false, {key_place, value_place}}};
            return;
        }
        dims.queries = QUERIES;
        queries = a.values(B * QUERIES * QS, 65, 1.0f);
        m.make(a, QUERIES, H, CAP, 66);
        opt.mask = m.mask;
        m.add_arrays(arrays);
        out = a.take(B * QUERIES * H_ALL);
        attn = a.take(B * H * QUERIES * CAP);
        ws_bytes = workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 1);
        REQUIRE(ws_bytes > 0);
        ws = a.take(ws_bytes / 4);
        buffers = {{"output", &out, B * QUERIES * H_ALL * 4, true, true, {}},
                   {"attention weights", &attn, B * H * QUERIES * CAP * 4, true, true, {}},
                   {"workspace", &ws, ws_bytes, false, true, {}}};
    }
    std::size_t store_ws(std::size_t tokens) const {
        const std::size_t bytes = workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, tokens);
        REQUIRE(bytes > 0);
        return bytes;
    }
    edgeattn_status store(edgeattn_kv_cache *c, const edgeattn_attention_dims *d, std::size_t tokens, const float *x,
                          const float *y, const edgeattn_attention_options *o, void *w, std::size_t w_bytes) {
        if (packed_weights())
            return edgeattn_kv_cache_store_packed(c, d, tokens, x, y, packed, packed_bytes, o, w, w_bytes);
        return edgeattn_kv_cache_store(c, d, tokens, x, y, static_cast<const edgeattn_weights *>(w_arg ? w_arg : &p.w),
                                       o, w, w_bytes);
    }
    edgeattn_status run() override {
        auto *c = const_cast<edgeattn_kv_cache *>(static_cast<const edgeattn_kv_cache *>(cache_arg));
        const auto *d = static_cast<const edgeattn_attention_dims *>(dims_arg);
        const auto *o = static_cast<const edgeattn_attention_options *>(opt_arg);
        if (stores()) return store(c, d, STEP, keys[1], values[1], o, ws, ws_bytes);
        if (packed_weights())
            return edgeattn_kv_cache_attend_packed(c, d, queries, packed, packed_bytes, o, ws, ws_bytes, out, attn);
        return edgeattn_kv_cache_attend(c, d, queries, static_cast<const edgeattn_weights *>(w_arg), o, ws, ws_bytes,
                                        out, attn);
    }
    // A store's result: the lengths and every cached row up to them.
    std::vector<unsigned char> result() override {
        if (!stores()) return problem::result();
        std::vector<unsigned char> r(reinterpret_cast<const unsigned char *>(cache.lengths),
                                     reinterpret_cast<const unsigned char *>(cache.lengths + B));
        for (std::size_t b = 0; b < B; ++b)
            for (const float *plane : {cache.keys, cache.values}) {
                const auto *rows = reinterpret_cast<const unsigned char *>(plane + b * HKV * CAP * HS);
                r.insert(r.end(), rows, rows + static_cast<std::size_t>(cache.lengths[b]) * HS * 4);
            }
        return r;
    }
    void check_reference() override {
        // Every token so far, batch element by batch element.
        const std::size_t total = stores() ? filled + STEP : filled;
        std::vector<double> x(B * total * KS), y(B * total * VS);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < total; ++t) {
                const bool first = t < filled;
                const std::size_t n = first ? filled : STEP, at = first ? t : t - filled;
                for (std::size_t c = 0; c < KS; ++c) x[(b * total + t) * KS + c] = keys[first ? 0 : 1][(b * n + at) * KS + c];
                for (std::size_t c = 0; c < VS; ++c) y[(b * total + t) * VS + c] = values[first ? 0 : 1][(b * n + at) * VS + c];
            }
        const edgeattn_ref::MhaWeights w = p.reference();
        if (stores()) {
            for (std::size_t b = 0; b < B; ++b) {
                CHECK(cache.lengths[b] == static_cast<int32_t>(total));
                std::vector<double> k(total * HS), v(total * HS);
                edgeattn_ref::linear(total, KS, HS, x.data() + b * total * KS, w.W_k, w.b_k, k.data());
                edgeattn_ref::linear(total, VS, HS, y.data() + b * total * VS, w.W_v, w.b_v, v.data());
                CHECK(meets_reference(cache.keys + b * CAP * HS, k));
                CHECK(meets_reference(cache.values + b * CAP * HS, v));
            }
            return;
        }
        std::vector<double> want(B * QUERIES * H_ALL), want_w(B * H * QUERIES * total);
        Mask mask = m.reference();
        edgeattn_ref::multi_head_attention_masked(B, QUERIES, total, QS, KS, VS, H_ALL, H, HKV,
                                                  widen(queries, B * QUERIES * QS).data(), x.data(), y.data(),
                                                  ValidLens{}, mask, w, want.data(), want_w.data());
        CHECK(meets_reference(out, want));
        std::vector<double> want_all(B * H * QUERIES * CAP, 0.0);  // 0 past the cached positions
        for (std::size_t r = 0; r < B * H * QUERIES; ++r)
            for (std::size_t j = 0; j < total; ++j) want_all[r * CAP + j] = want_w[r * total + j];
        CHECK(meets_reference(attn, want_all));
    }
};

// A cache's setup: its config inside the cache memory (at its start, where
// the lengths are written and at its end) and inside the cache struct it
// fills. The result: the struct's sizes and its pointers as offsets into
// the memory, the lengths, and the struct accepted by a reset.
struct kv_setup_problem : problem {
    static constexpr std::size_t HKV = 2, HS = 8, CAP = 8;
    edgeattn_kv_cache_config config;
    float *memory = nullptr, *cache_out = nullptr;  // cache_out: where the struct is written
    std::size_t memory_bytes = 0;
    const void *config_arg = &config;

    explicit kv_setup_problem(edgeattn_dtype storage) : config{B, HKV, HS, CAP, storage, 0, 0, 0} {
        memory_bytes = edgeattn_kv_cache_memory_size(&config);
        REQUIRE(memory_bytes > 0);
        memory = a.take(memory_bytes / 4);
        cache_out = a.take((sizeof(edgeattn_kv_cache) + 3) / 4);
        // where setup writes in the memory: the lengths (the offsets do not
        // depend on where the memory is)
        std::vector<float> probe_memory(memory_bytes / 4);
        edgeattn_kv_cache probe;
        REQUIRE(edgeattn_kv_cache_setup(&probe, &config, probe_memory.data(), memory_bytes) == EDGEATTN_OK);
        const std::size_t lengths_at = static_cast<std::size_t>(reinterpret_cast<const unsigned char *>(probe.lengths) -
                                                                reinterpret_cast<const unsigned char *>(probe_memory.data()));
        const std::size_t last = (memory_bytes - sizeof config) / 8 * 8;
        structs = {{"config", &config_arg, sizeof config}};
        buffers = {{"cache memory", &memory, memory_bytes, false, false, {0, lengths_at < last ? lengths_at : last, last}},
                   {"cache struct", &cache_out, sizeof(edgeattn_kv_cache), false, false, {}}};
    }
    edgeattn_kv_cache *cache() const { return reinterpret_cast<edgeattn_kv_cache *>(cache_out); }
    edgeattn_status run() override {
        return edgeattn_kv_cache_setup(cache(), static_cast<const edgeattn_kv_cache_config *>(config_arg), memory,
                                       memory_bytes);
    }
    std::vector<unsigned char> result() override {
        const edgeattn_kv_cache c = *cache();
        const auto offset = [&](const void *p) {
            return p ? static_cast<std::size_t>(static_cast<const unsigned char *>(p) -
                                                reinterpret_cast<const unsigned char *>(memory))
                     : SIZE_MAX;
        };
        const std::size_t fields[] = {c.storage,          c.batch,           c.num_kv_heads,        c.head_size,
                                      c.capacity,         offset(c.keys),    offset(c.values),      offset(c.lengths),
                                      offset(c.stored_keys), offset(c.stored_values), offset(c.key_scales),
                                      offset(c.value_scales), static_cast<std::size_t>(c.lengths[0]),
                                      static_cast<std::size_t>(c.lengths[1]),
                                      static_cast<std::size_t>(edgeattn_kv_cache_reset(cache()))};
        const auto *bytes = reinterpret_cast<const unsigned char *>(fields);
        return std::vector<unsigned char>(bytes, bytes + sizeof fields);
    }
    void check_reference() override {
        const edgeattn_kv_cache &c = *cache();
        CHECK(c.storage == static_cast<uint32_t>(config.storage));
        CHECK((c.batch == B && c.num_kv_heads == HKV && c.head_size == HS && c.capacity == CAP));
        CHECK((c.lengths[0] == 0 && c.lengths[1] == 0));
        CHECK(edgeattn_kv_cache_reset(cache()) == EDGEATTN_OK);
    }
};

// The workspace query for a decoder step: a cache store, an attend and a
// dense layer. It writes one size_t (at the start of `out`); a copy of the
// requests there, or further on, must give the same size.
struct workspace_query_problem : problem {
    edgeattn_workspace_request calls[3] = {};
    float *out = nullptr;
    const void *calls_arg = calls;

    workspace_query_problem() {
        const edgeattn_attention_dims dims{B, 4, 8, QS, KS, VS, 16, 2, 1, 0};
        calls[0] = request(EDGEATTN_OP_KV_CACHE_STORE, dims, 4);
        calls[1] = request(EDGEATTN_OP_KV_CACHE_ATTEND, dims);
        calls[2] = dense_request({B * 4, 16, 64});
        out = a.take(128);
        structs = {{"requests", &calls_arg, sizeof calls}};
        buffers = {{"bytes", &out, 128 * 4, true, false, {0, 8, (128 * 4 - sizeof calls) / 8 * 8}}};
    }
    std::size_t *bytes() const { return reinterpret_cast<std::size_t *>(out); }
    edgeattn_status run() override {
        return edgeattn_workspace_size(static_cast<const edgeattn_workspace_request *>(calls_arg), 3, 4, bytes());
    }
    std::vector<unsigned char> result() override {
        const auto *p = reinterpret_cast<const unsigned char *>(bytes());
        return std::vector<unsigned char>(p, p + sizeof(std::size_t));
    }
    // The size of the set is the largest of its calls' sizes.
    void check_reference() override {
        std::size_t largest = 0;
        for (const edgeattn_workspace_request &r : calls) {
            const std::size_t one = size_of(r, 4);
            CHECK(one > 0);
            largest = one > largest ? one : largest;
        }
        CHECK(*bytes() == largest);
    }
};

}  // namespace

// ------------------------------------------------------------ structs

TEST_CASE("masked_softmax: dims and valid_lens inside Y give the same result") {
    check_struct_placement(make<softmax_problem>());
}

TEST_CASE("sdpa: each struct inside each output and the workspace") {
    check_struct_placement(make<attention_problem>(op::dot));
    check_struct_placement(make<attention_problem>(op::dot_masked));
}

TEST_CASE("additive attention: each struct inside each output and the workspace") {
    check_struct_placement(make<attention_problem>(op::additive));
    check_struct_placement(make<attention_problem>(op::additive_typed));
}

TEST_CASE("multi-head attention: each struct inside each output and the workspace") {
    for (op o : {op::mha, op::mha_masked, op::mha_typed, op::mha_packed, op::mha_masked_packed}) {
        INFO("op " << static_cast<int>(o));
        check_struct_placement(make<attention_problem>(o));
    }
}

TEST_CASE("self-attention (X as queries, keys and values): each struct inside each output and the workspace") {
    check_struct_placement(make<attention_problem>(op::self));
    check_struct_placement(make<attention_problem>(op::self_packed));
}

TEST_CASE("packing multi-head weights: dims and weights inside the packed buffer") {
    check_struct_placement(make<mha_pack_problem>(false));
    check_struct_placement(make<mha_pack_problem>(true));
}

TEST_CASE("dense layer: dims and W inside y, the workspace and the packed buffer") {
    for (lin l : {lin::plain, lin::typed, lin::pack, lin::pack_typed, lin::packed}) {
        INFO("form " << static_cast<int>(l));
        check_struct_placement(make<dense_problem>(l));
    }
}

TEST_CASE("workspace query: the requests inside the size it writes") {
    check_struct_placement(make<workspace_query_problem>());
}

// ------------------------------------------------------------ arrays

TEST_CASE("an output or the workspace over an array the call reads is an overlap") {
    check_array_overlap(make<softmax_problem>());
    for (op o : {op::dot, op::dot_masked, op::additive, op::additive_typed, op::mha, op::mha_masked, op::mha_typed,
                 op::mha_packed, op::mha_masked_packed, op::self, op::self_packed}) {
        INFO("op " << static_cast<int>(o));
        check_array_overlap(make<attention_problem>(o));
    }
    check_array_overlap(make<mha_pack_problem>(false));
    check_array_overlap(make<mha_pack_problem>(true));
    for (lin l : {lin::plain, lin::typed, lin::pack, lin::pack_typed, lin::packed}) {
        INFO("form " << static_cast<int>(l));
        check_array_overlap(make<dense_problem>(l));
    }
}

// ------------------------------------------------------------ enums

TEST_CASE("an enum field holding any int: its status, nothing written") {
    for (int bad : bad_enum_values) {
        INFO("value " << bad);
        {
            softmax_problem p;
            set_int(p.vl.kind, bad);
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_BAD_VALID_LENS_KIND);
            CHECK(p.a.untouched());
        }
        for (op o : {op::dot, op::additive_typed, op::mha, op::mha_typed, op::self_packed}) {
            attention_problem p(o);
            set_int(p.opt.valid_lens.kind, bad);
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_BAD_VALID_LENS_KIND);
            CHECK(p.a.untouched());
        }
        for (op o : {op::dot_masked, op::mha_masked, op::mha_typed, op::mha_masked_packed}) {
            attention_problem p(o);
            set_int(p.opt.mask.ranges_kind, bad);
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_BAD_KEY_RANGE);
            CHECK(p.a.untouched());
        }
        for (int matrix = 0; matrix < 4; ++matrix) {
            // EDGEATTN_DTYPE_NONE is a projection left out for edgeattn_mha
            // (its refusals: test_status.cpp); every other value is refused.
            for (op o : {op::mha, op::mha_typed}) {
                if (bad == EDGEATTN_DTYPE_NONE) break;
                attention_problem p(o);
                edgeattn_weight_matrix *m[4] = {&p.p.w.W_q, &p.p.w.W_k, &p.p.w.W_v, &p.p.w.W_o};
                set_int(m[matrix]->type, bad);
                p.a.seal();
                CHECK(p.run() == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
                CHECK(p.a.untouched());
            }
            for (bool typed : {false, true}) {
                mha_pack_problem pack(typed);
                edgeattn_weight_matrix *n[4] = {&pack.p.w.W_q, &pack.p.w.W_k, &pack.p.w.W_v, &pack.p.w.W_o};
                set_int(n[matrix]->type, bad);
                pack.a.seal();
                CHECK(edgeattn_mha_packed_size(&pack.dims, &pack.p.w) == 0);
                CHECK(pack.run() == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
                CHECK(pack.a.untouched());
            }
        }
        for (int matrix = 0; matrix < 3; ++matrix)
            for (op o : {op::additive, op::additive_typed}) {
                attention_problem p(o);
                edgeattn_weight_matrix *m[3] = {&p.aw.W_q, &p.aw.W_k, &p.aw.W_v};
                set_int(m[matrix]->type, bad);
                p.a.seal();
                CHECK(p.run() == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
                CHECK(p.a.untouched());
            }
        for (lin l : {lin::plain, lin::typed, lin::pack, lin::pack_typed}) {
            dense_problem p(l);
            set_int(p.Wm.type, bad);
            p.a.seal();
            CHECK(edgeattn_dense_packed_size(&p.dims, &p.Wm) == 0);
            CHECK(p.run() == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
            CHECK(p.a.untouched());
        }
        {
            workspace_query_problem p;
            set_int(p.calls[1].op, bad == 3 ? 7 : bad);  // 3 is EDGEATTN_OP_MHA
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
            CHECK(p.a.untouched());
        }
    }
}

TEST_CASE("an enum argument holding any int, as C passes it") {
    const edgeattn_isa before = edgeattn_current_isa();
    const edgeattn_dense_dims dims{3, 5, 8};
    const edgeattn_attention_dims attention{2, 3, 4, 5, 5, 7, 8, 2, 0, 0};
    for (int bad : bad_enum_values) {
        INFO("value " << bad);
        if (bad != 3) {  // 3 is AVX2, a path
            CHECK(c_set_isa(bad) == EDGEATTN_ERR_UNSUPPORTED_ISA);
            CHECK(edgeattn_current_isa() == before);
            CHECK(c_isa_supported(bad) == 0);
            CHECK(std::string(c_isa_name(bad)) == "unknown");
        }
        CHECK(c_dense_packed_size(&dims, bad) == 0);
        if (bad != -1) CHECK(std::string(c_status_str(bad)) == "unknown status");
        if (bad != 3) {  // 3 is EDGEATTN_OP_MHA
            std::size_t bytes = 12345;
            CHECK(c_workspace_size(bad, &attention, 0, 1, &bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
            CHECK(bytes == 12345);
        }
    }
    CHECK(std::string(c_status_str(-1)) == edgeattn_status_str(EDGEATTN_ERR_NULL_POINTER));
    CHECK(std::string(c_status_str(-24)) == edgeattn_status_str(EDGEATTN_ERR_PAST_CACHE_LENGTH));
    CHECK(std::string(c_isa_name(EDGEATTN_ISA_SCALAR)) == "scalar");
    CHECK(c_isa_supported(EDGEATTN_ISA_SCALAR) == 1);
    CHECK(c_dense_packed_size(&dims, EDGEATTN_DTYPE_INT8) > 0);
    std::size_t bytes = 0;
    CHECK(c_workspace_size(EDGEATTN_OP_MHA, &attention, 0, 1, &bytes) == EDGEATTN_OK);
    CHECK(bytes > 0);
    CHECK(edgeattn_current_isa() == before);
}

// ------------------------------------------------------------ KV cache

TEST_CASE("KV cache: each struct inside the workspace, each output and the cache memory it writes") {
    for (kv k : {kv::store, kv::store_typed, kv::store_packed, kv::attend, kv::attend_typed, kv::attend_packed}) {
        INFO("call " << static_cast<int>(k));
        check_struct_placement(make<kv_problem>(k));
    }
}

TEST_CASE("KV cache setup: the config inside the cache memory and the cache struct it fills") {
    for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8}) {
        INFO("storage " << static_cast<int>(storage));
        check_struct_placement(make<kv_setup_problem>(storage));
    }
}

TEST_CASE("KV cache: an output or the workspace over an array the call reads is an overlap") {
    for (kv k : {kv::store, kv::store_typed, kv::store_packed, kv::attend, kv::attend_typed, kv::attend_packed}) {
        INFO("call " << static_cast<int>(k));
        check_array_overlap(make<kv_problem>(k));
    }
}

TEST_CASE("KV cache: an enum holding any int, in the weights, the options or as the storage type") {
    for (int bad : bad_enum_values) {
        INFO("value " << bad);
        // 3, EDGEATTN_DTYPE_NONE, is a matrix type the cache calls take
        // (test_window_cache.cpp); it stays a bad storage type below.
        for (kv k : {kv::store_typed, kv::attend_typed}) {
            if (bad == EDGEATTN_DTYPE_NONE) break;
            kv_problem p(k);
            set_int(p.p.w.W_k.type, bad);  // what the store reads
            set_int(p.p.w.W_o.type, bad);  // what the attend reads
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
            CHECK(p.a.untouched());
        }
        // a store takes no mask: any key-range kind but NONE is refused
        for (kv k : {kv::store, kv::store_packed}) {
            kv_problem p(k);
            set_int(p.opt.mask.ranges_kind, bad);
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
            CHECK(p.a.untouched());
        }
        // nor does either take valid lengths
        for (kv k : {kv::store, kv::attend, kv::attend_packed}) {
            kv_problem p(k);
            set_int(p.opt.valid_lens.kind, bad);
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
            CHECK(p.a.untouched());
        }
        for (kv k : {kv::attend, kv::attend_packed}) {
            kv_problem p(k);
            set_int(p.opt.mask.ranges_kind, bad);
            p.a.seal();
            CHECK(p.run() == EDGEATTN_ERR_BAD_KEY_RANGE);
            CHECK(p.a.untouched());
        }
        CHECK(c_kv_cache_memory_size(B, 1, 8, 8, bad) == 0);
        arena a;
        float *memory = a.take(1024);
        edgeattn_kv_cache cache{};
        const edgeattn_kv_cache before = cache;
        a.seal();
        CHECK(c_kv_cache_setup(&cache, B, 1, 8, 8, bad, memory, 4096) == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
        CHECK(a.untouched());
        CHECK(std::memcmp(&cache, &before, sizeof cache) == 0);
        edgeattn_kv_cache_config config{B, 1, 8, 8, EDGEATTN_DTYPE_F32, 0, 0, 0};
        set_int(config.storage, bad);  // the same, stored in the config from C++
        CHECK(edgeattn_kv_cache_memory_size(&config) == 0);
        CHECK(edgeattn_kv_cache_setup(&cache, &config, memory, 4096) == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
        CHECK(a.untouched());
        CHECK(std::memcmp(&cache, &before, sizeof cache) == 0);
    }
}
