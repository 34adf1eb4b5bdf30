// Test firmware for the Cortex-M4F port: every golden case of tests/golden/
// (embedded in flash by embed_golden.cmake) through
//   - the C API, with runtime dimensions and a workspace sized by
//     edgeattn_workspace_size(..., 1, ...), with and without attention weights;
//   - the C API with packed weights (edgeattn_mha_pack, edgeattn_dense_pack)
//     for the multi-head, projection (linear) and KV-cache decode cases;
//   - the C++17 fixed-size API, with the case's dimensions as template
//     arguments (checked against the case file at compile time) and the
//     module object, workspace included, in a static arena: every case
//     except the masked / grouped-query attention and linear ones, which
//     have no fixed-size module (has_cpp_twin); decode cases through
//     edgeattn::KVCache;
// held to tests/golden/FORMAT.md's bar (the constants of conform/accuracy.hpp;
// a decode's chunk_status exactly). Decoder cases (FORMAT.md, "Decoder
// cases") follow tests/conform/run_case.cpp: valid lengths and masks in the
// call's edgeattn_attention_options; kv_cache_decode step by step (truncate,
// edgeattn_kv_cache_store, edgeattn_kv_cache_attend with causal = 1 and the
// step's rows of key_ranges and bias), a refused step (cache full) recorded
// and skipped; the cache calls given the case's RoPE, window cache, sliding
// mask and projection-free matrices; op rope_apply through edgeattn_rope_apply.
// Then RoPE (rope_checks.cpp): the runtime and flash tables, the rotation.
// It reports one line per check over semihosting and ends with
// "N passed, N failed"; the exit status (QEMU's) is 0 only if all passed.
//
// Nothing here allocates: inputs and weights are read from flash, outputs
// and workspaces are static arrays (KV caches, packed weights and a decode's
// step buffers are slices of the static arena).
#include <edgeattn/edgeattn.h>
#include <edgeattn/edgeattn.hpp>
#include <edgeattn/kv_cache.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>

#include "conform/accuracy.hpp"
#include "golden_cases.hpp"
#include "report.hpp"
#include "rope_checks.hpp"
#include "workspace_request.hpp"

using firmware::Line;
using golden::golden_case;
using golden::kind;
using golden::role;
using golden::tensor;

namespace {

// ------------------------------------------------------------ static memory

// The C API's workspace, or the C++ API's module object (workspace inside).
alignas(64) unsigned char arena[1536 * 1024];
// Reduced-precision weights of the case at hand (FORMAT.md, "Reduced
// precision"), made into the library's stored form: int8 from the case's
// i32 values, binary16 from its f32 ones. Emptied by every Check.
alignas(64) unsigned char stored_pool[32 * 1024];
std::size_t stored_used = 0;
// Outputs, and the positional table and X + P of the self-attention case.
alignas(64) float out_output[golden::max_elements];
alignas(64) float out_weights[golden::max_elements];
alignas(64) float table_P[golden::max_elements];
alignas(64) float x_plus_p[golden::max_elements];

std::size_t passed = 0, failed = 0;
std::size_t cpp_runs = 0;  // golden cases run through the C++ API

// ------------------------------------------------------------ the case data

bool same(const char *a, const char *b) { return std::strcmp(a, b) == 0; }

const tensor *find(const golden_case &c, role r, const char *name) {
    for (std::size_t i = 0; i < c.tensor_count; ++i)
        if (c.tensors[i].role == r && same(c.tensors[i].name, name)) return &c.tensors[i];
    return nullptr;
}

bool has_shape(const tensor &t, std::initializer_list<std::size_t> shape) {
    if (t.rank != shape.size()) return false;
    std::size_t i = 0;
    for (std::size_t d : shape)
        if (t.shape[i++] != d) return false;
    return true;
}

// Shape arrays of the generated header, compared at compile time.
template <std::size_t N>
constexpr bool shape_is(const std::size_t (&shape)[N], std::initializer_list<std::size_t> want) {
    if (N != want.size()) return false;
    std::size_t i = 0;
    for (std::size_t d : want)
        if (shape[i++] != d) return false;
    return true;
}

long param(const golden_case &c, const char *key, long fallback) {
    for (std::size_t i = 0; i < c.param_count; ++i)
        if (same(c.params[i].key, key)) return c.params[i].value;
    return fallback;
}

// The decoder mask of a case (Check::mask), as the attention calls' options
// and the KV cache's attend take it.
struct Mask {
    edgeattn_attention_mask mask{};
};

// One check (a case through one API): collects why it failed, if it did.
class Check {
  public:
    Check(const char *api, const golden_case &c) : api_(api), case_(c) { stored_used = 0; }

    // An input tensor of kind f32 with the given shape, or null (and failed).
    const float *f32(const char *name, std::initializer_list<std::size_t> shape) {
        const tensor *t = find(case_, role::input, name);
        if (!t || t->kind != kind::f32 || !has_shape(*t, shape)) {
            fail("input missing or of another shape: ", name);
            return nullptr;
        }
        return static_cast<const float *>(t->data);
    }
    // Optional f32 input (biases): null when absent.
    const float *optional_f32(const char *name, std::initializer_list<std::size_t> shape) {
        return find(case_, role::input, name) ? f32(name, shape) : nullptr;
    }

    // valid_lens of the case: none, (B) or (B, Q).
    edgeattn_valid_lens valid_lens(std::size_t B, std::size_t Q) {
        const tensor *t = find(case_, role::input, "valid_lens");
        if (!t) return {EDGEATTN_VALID_LENS_NONE, nullptr};
        const auto *lens = static_cast<const std::int32_t *>(t->data);
        if (t->kind == kind::i32 && has_shape(*t, {B})) return {EDGEATTN_VALID_LENS_PER_BATCH, lens};
        if (t->kind == kind::i32 && has_shape(*t, {B, Q})) return {EDGEATTN_VALID_LENS_PER_QUERY, lens};
        fail("valid_lens of another shape", "");
        return {EDGEATTN_VALID_LENS_NONE, nullptr};
    }

    // An input tensor of kind i32 with the given shape, or null (and failed).
    const std::int32_t *i32(const char *name, std::initializer_list<std::size_t> shape) {
        const tensor *t = find(case_, role::input, name);
        if (!t || t->kind != kind::i32 || !has_shape(*t, shape)) {
            fail("input missing or of another shape: ", name);
            return nullptr;
        }
        return static_cast<const std::int32_t *>(t->data);
    }

    // The decoder mask of the case (FORMAT.md, "Decoder cases"): param causal
    // (0/1), key_ranges i32 (B,2) or (B,rows,2), bias f32 (1|B, 1|max_bias_heads,
    // rows, keys); zero when none is given.
    Mask mask(std::size_t B, std::size_t rows, std::size_t max_bias_heads, std::size_t keys) {
        Mask m;
        const long causal = param(case_, "causal", -1);
        if (causal > 1) fail("param causal is neither 0 nor 1", "");
        m.mask.causal = causal == 1 ? 1 : 0;
        m.mask.ranges_kind = EDGEATTN_KEY_RANGES_NONE;
        if (const tensor *t = find(case_, role::input, "key_ranges")) {
            if (t->kind == kind::i32 && has_shape(*t, {B, 2})) m.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_BATCH;
            else if (t->kind == kind::i32 && has_shape(*t, {B, rows, 2}))
                m.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_QUERY;
            else fail("key_ranges of another kind or shape", "");
            m.mask.key_ranges = static_cast<const std::int32_t *>(t->data);
        }
        if (const tensor *t = find(case_, role::input, "bias")) {
            if (t->kind != kind::f32 || t->rank != 4 || (t->shape[0] != 1 && t->shape[0] != B) ||
                (t->shape[1] != 1 && t->shape[1] != max_bias_heads) || t->shape[2] != rows || t->shape[3] != keys) {
                fail("bias of another kind or shape", "");
            } else {
                m.mask.bias = static_cast<const float *>(t->data);
                m.mask.bias_batch = t->shape[0];
                m.mask.bias_heads = t->shape[1];
                m.mask.bias_keys = t->shape[3];
            }
        }
        return m;
    }

    bool ok() const { return ok_; }

    void status(edgeattn_status st, const char *call) {
        if (st != EDGEATTN_OK) fail(call, edgeattn_status_str(st));
    }

    // Compares `got` with the expected tensor `name` (which must exist unless
    // `optional`) against FORMAT.md's bar.
    void expect(const char *name, const float *got, std::size_t count, bool optional = false) {
        const tensor *t = find(case_, role::expect, name);
        if (!t) {
            if (!optional) fail("no expected tensor ", name);
            return;
        }
        if (t->kind != kind::f64 || t->count != count) {
            fail("expected tensor of another kind or size: ", name);
            return;
        }
        ++compared_;
        const auto *ref = static_cast<const double *>(t->data);
        const bool p_table = same(case_.op, "positional_encoding") && same(name, "P");
        double diff2 = 0, ref2 = 0, max_abs = 0;
        std::size_t nonfinite = 0;
        for (std::size_t i = 0; i < count; ++i) {
            if (!std::isfinite(got[i])) {
                ++nonfinite;
                continue;
            }
            const double d = static_cast<double>(got[i]) - ref[i];
            diff2 += d * d;
            ref2 += ref[i] * ref[i];
            max_abs = std::fmax(max_abs, std::fabs(d));
        }
        const double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
        const bool ok = nonfinite == 0 && rel <= edgeattn_conform::kMaxRelL2 &&
                        (!p_table || max_abs <= edgeattn_conform::kMaxPTableAbs);
        if (worst_rel_ < rel) worst_rel_ = rel;
        if (!ok) {
            Line() << "       " << case_.name << ": " << name << ": rel L2 " << rel << ", max |diff| "
                   << max_abs << ", " << nonfinite << " not finite";
            ok_ = false;
        }
    }

    // Compares `got` with the expected i32 tensor `name` exactly (a status).
    void expect_exact(const char *name, const std::int32_t *got, std::size_t count) {
        const tensor *t = find(case_, role::expect, name);
        if (!t || t->kind != kind::i32 || t->count != count) {
            fail("no expected i32 tensor of this size: ", name);
            return;
        }
        ++compared_;
        const auto *ref = static_cast<const std::int32_t *>(t->data);
        for (std::size_t i = 0; i < count; ++i)
            if (got[i] != ref[i]) {
                Line() << "       " << case_.name << ": " << name << "[" << i << "] is " << int(got[i])
                       << ", expected " << int(ref[i]);
                ok_ = false;
            }
    }

    void fail(const char *what, const char *detail) {
        Line() << "       " << case_.name << ": " << what << detail;
        ok_ = false;
    }

    void note(const char *text, std::size_t bytes) {
        note_ = text;
        bytes_ = bytes;
    }

    ~Check() {
        if (compared_ == 0 && ok_) fail("nothing compared", "");
        (ok_ ? passed : failed) += 1;
        Line line;
        line << (ok_ ? "ok     " : "FAIL   ") << api_ << " " << case_.name << ": worst rel L2 " << worst_rel_;
        if (note_) line << ", " << note_ << " " << bytes_ << " bytes";
    }

  private:
    const char *api_;
    const golden_case &case_;
    bool ok_ = true;
    std::size_t compared_ = 0;
    double worst_rel_ = 0;
    const char *note_ = nullptr;
    std::size_t bytes_ = 0;
};

// ------------------------------------------------------------ the C API

bool fits(Check &k, std::size_t floats) {
    if (floats <= golden::max_elements) return true;
    k.fail("an output is larger than the static buffers", "");
    return false;
}

// edgeattn_workspace_size of `count` calls for one thread; 0 (and failed)
// on an error.
std::size_t workspace_size(Check &k, const edgeattn_workspace_request *calls, std::size_t count = 1) {
    std::size_t bytes = 0;
    const edgeattn_status st = edgeattn_workspace_size(calls, count, 1, &bytes);
    if (st != EDGEATTN_OK) {
        k.fail("edgeattn_workspace_size: ", edgeattn_status_str(st));
        return 0;
    }
    return bytes;
}

std::size_t workspace_size(Check &k, const edgeattn_workspace_request &call) { return workspace_size(k, &call); }

edgeattn_weight_matrix f32_matrix(const float *data) { return {EDGEATTN_DTYPE_F32, data, nullptr, EDGEATTN_ARITHMETIC_FLOAT}; }

void *workspace(Check &k, std::size_t bytes) {
    if (bytes == 0 || bytes > sizeof arena) {
        k.fail("workspace size 0 or larger than the arena", "");
        return nullptr;
    }
    k.note("workspace", bytes);
    return arena;
}

// Several buffers of one check carved from the arena, each 64-byte aligned:
// packed weights and a workspace, or a KV cache, its step buffers and a
// workspace. `from` skips what already lies at the arena's start (a module).
class Scratch {
  public:
    explicit Scratch(Check &k, std::size_t from = 0) : k_(k), used_(from) {}

    // `count` elements of T, or null (and failed) when the arena is full.
    template <class T>
    T *take(std::size_t count) {
        const std::size_t start = (used_ + 63) / 64 * 64;
        if (start > sizeof arena || count > (sizeof arena - start) / sizeof(T)) {
            k_.fail("the arena is too small for this case", "");
            return nullptr;
        }
        used_ = start + count * sizeof(T);
        return static_cast<T *>(static_cast<void *>(arena + start));
    }

    // A workspace or cache of `bytes` (from a size query: 0 is a failure).
    void *bytes(std::size_t bytes, const char *what) {
        if (bytes == 0) {
            k_.fail("size 0 from the library for ", what);
            return nullptr;
        }
        return take<unsigned char>(bytes);
    }

    std::size_t used() const { return used_; }

  private:
    Check &k_;
    std::size_t used_;
};

// Weight matrix `name` (rows, cols) of the case in its stored type (param
// weight_type: 0 f32, 1 binary16, 2 int8 with NAME_scales).
edgeattn_weight_matrix stored_matrix(Check &k, const golden_case &c, const char *name, std::size_t rows,
                                     std::size_t cols) {
    const long type = param(c, "weight_type", 0);
    edgeattn_weight_matrix m{EDGEATTN_DTYPE_F32, nullptr, nullptr, EDGEATTN_ARITHMETIC_FLOAT};
    if (type == 0) {
        m.data = k.f32(name, {rows, cols});
        return m;
    }
    const std::size_t n = rows * cols, start = (stored_used + 63) / 64 * 64;
    if (type != 1 && type != 2) {
        k.fail("param weight_type is not 0, 1 or 2", "");
        return m;
    }
    if (start > sizeof stored_pool || n * (type == 2 ? 1 : 2) > sizeof stored_pool - start) {
        k.fail("the pool for stored weights is too small for ", name);
        return m;
    }
    stored_used = start + n * (type == 2 ? 1 : 2);
    if (type == 2) {
        char scales_name[64] = {};
        std::strncpy(scales_name, name, sizeof scales_name - 8);
        std::strcat(scales_name, "_scales");
        const std::int32_t *q = k.i32(name, {rows, cols});
        const float *scales = k.f32(scales_name, {rows});
        if (!q || !scales) return m;
        auto *q8 = reinterpret_cast<std::int8_t *>(stored_pool + start);
        for (std::size_t i = 0; i < n; ++i) q8[i] = static_cast<std::int8_t>(q[i]);
        return {EDGEATTN_DTYPE_INT8, q8, scales, EDGEATTN_ARITHMETIC_FLOAT};
    }
    const float *f = k.f32(name, {rows, cols});
    if (!f) return m;
    auto *h = reinterpret_cast<std::uint16_t *>(stored_pool + start);
    k.status(edgeattn_float_to_half(n, f, h), "edgeattn_float_to_half: ");
    return {EDGEATTN_DTYPE_F16, h, nullptr, EDGEATTN_ARITHMETIC_FLOAT};
}

// Multi-head weights of a case, each matrix in the stored type of param
// weight_type (fp32 without it); true when every matrix was read. Value
// heads of their own width (param value_hiddens hv): W_v, b_v have hv_kv
// rows, W_o hv columns (0: h_kv, h).
bool mha_weights_of(Check &k, const golden_case &c, std::size_t h, std::size_t h_kv, std::size_t qs, std::size_t ks,
                    std::size_t vs, edgeattn_weights &w, std::size_t hv = 0, std::size_t hv_kv = 0) {
    if (!hv) hv = h;
    if (!hv_kv) hv_kv = h_kv;
    const float *biases[4] = {k.optional_f32("b_q", {h}), k.optional_f32("b_k", {h_kv}),
                              k.optional_f32("b_v", {hv_kv}), k.optional_f32("b_o", {h})};
    w = {stored_matrix(k, c, "W_q", h, qs),   stored_matrix(k, c, "W_k", h_kv, ks),
         stored_matrix(k, c, "W_v", hv_kv, vs), stored_matrix(k, c, "W_o", h, hv),
         biases[0], biases[1], biases[2], biases[3]};
    return w.W_q.data && w.W_k.data && w.W_v.data && w.W_o.data;
}

void c_softmax(Check &k, const golden_case &c) {
    const tensor *x = find(c, role::input, "X");
    if (!x || x->rank != 3) return k.fail("no input X of rank 3", "");
    const std::size_t B = x->shape[0], Q = x->shape[1], K = x->shape[2];
    const float *X = k.f32("X", {B, Q, K});
    const edgeattn_valid_lens vl = k.valid_lens(B, Q);
    if (!X || !fits(k, B * Q * K)) return;
    const edgeattn_softmax_dims dims{B, Q, K};
    k.status(edgeattn_masked_softmax(&dims, X, &vl, out_output), "edgeattn_masked_softmax: ");
    k.expect("Y", out_output, B * Q * K);
}

// The score options of a case (FORMAT.md, "Score options"): params
// mask_window, right_window, alignment, masking, weights_output and the
// input score_options f32 (3) = scale, softcap, alibi_max_bias.
void score_options(Check &k, const golden_case &c, edgeattn_attention_options &o) {
    o.mask.window = static_cast<std::size_t>(param(c, "mask_window", 0));
    o.mask.right_window = static_cast<std::size_t>(param(c, "right_window", 0));
    o.mask.alignment = static_cast<edgeattn_query_alignment>(param(c, "alignment", 0));
    o.masking = static_cast<edgeattn_masking>(param(c, "masking", 0));
    o.weights_output = static_cast<edgeattn_weights_output>(param(c, "weights_output", 0));
    if (find(c, role::input, "score_options")) {
        const float *v = k.f32("score_options", {3});
        if (!v) return;
        o.scale = v[0];
        o.softcap = v[1];
        o.mask.alibi_max_bias = v[2];
    }
}

// Dot-product, additive and multi-head attention: queries, keys, values;
// valid lengths and a decoder mask (causal, key_ranges, bias) in the call's
// options, as the host runner (tests/conform/run_case.cpp) passes them.
// `packed` (multi-head only): weights from edgeattn_mha_pack() and
// edgeattn_mha_packed().
void c_attention(Check &k, const golden_case &c, bool with_weights, bool packed = false) {
    const tensor *q = find(c, role::input, "queries"), *kk = find(c, role::input, "keys"),
                 *v = find(c, role::input, "values");
    if (!q || !kk || !v || q->rank != 3 || kk->rank != 3 || v->rank != 3)
        return k.fail("queries, keys or values missing", "");
    edgeattn_attention_dims d{q->shape[0], q->shape[1], kk->shape[1], q->shape[2],
                              kk->shape[2], v->shape[2], 0,           0, 0, 0};
    const float *Q = k.f32("queries", {d.batch, d.queries, d.query_size});
    const float *K = k.f32("keys", {d.batch, d.keys, d.key_size});
    const float *V = k.f32("values", {d.batch, d.keys, d.value_size});
    edgeattn_attention_options options{};
    options.valid_lens = k.valid_lens(d.batch, d.queries);
    if (!Q || !K || !V) return;
    float *weights = with_weights ? out_weights : nullptr;
    std::size_t out_features = d.value_size, heads = 1;
    if (same(c.op, "dot_product_attention")) {
        options.mask = k.mask(d.batch, d.queries, 1, d.keys).mask;
        score_options(k, c, options);
        void *ws = workspace(k, workspace_size(k, test_calls::request(EDGEATTN_OP_SDPA, d)));
        if (!ws || !k.ok() || !fits(k, d.batch * d.queries * d.keys) ||
            !fits(k, d.batch * d.queries * d.value_size))
            return;
        k.status(edgeattn_sdpa(&d, Q, K, V, &options, ws, sizeof arena, out_output, weights), "edgeattn_sdpa: ");
    } else if (same(c.op, "additive_attention")) {
        d.num_hiddens = static_cast<std::size_t>(param(c, "num_hiddens", 0));
        const std::size_t h = d.num_hiddens;
        // weight_type stores W_q and W_k; w_v, the (1, h) scoring row, is f32.
        edgeattn_weights w{};
        w.W_q = stored_matrix(k, c, "W_q", h, d.query_size);
        w.W_k = stored_matrix(k, c, "W_k", h, d.key_size);
        w.W_v = f32_matrix(k.f32("w_v", {1, h}));
        void *ws = workspace(k, workspace_size(k, test_calls::request(EDGEATTN_OP_ADDITIVE, d)));
        if (!w.W_q.data || !w.W_k.data || !w.W_v.data || !ws || !fits(k, d.batch * d.queries * d.keys) ||
            !fits(k, d.batch * d.queries * d.value_size))
            return;
        k.status(edgeattn_additive(&d, Q, K, V, &w, &options, ws, sizeof arena, out_output, weights),
                 "edgeattn_additive: ");
    } else {
        d.num_hiddens = static_cast<std::size_t>(param(c, "num_hiddens", 0));
        d.num_heads = static_cast<std::size_t>(param(c, "num_heads", 0));
        // Grouped-query heads: W_k, W_v, b_k, b_v have h_kv = H_kv * h / H rows.
        const long kv_heads = param(c, "num_kv_heads", -1);
        d.num_kv_heads = kv_heads > 0 ? static_cast<std::size_t>(kv_heads) : 0;
        const std::size_t h = d.num_hiddens;
        const std::size_t h_kv = d.num_kv_heads && d.num_heads ? d.num_kv_heads * (h / d.num_heads) : h;
        // Value heads of their own width (param value_hiddens), and no
        // projections (param projection_free: every matrix NONE, the
        // output the heads; packed weights hold matrices, so a packed run
        // runs it unpacked).
        d.value_hiddens = static_cast<std::size_t>(param(c, "value_hiddens", 0));
        const std::size_t hv = d.value_hiddens ? d.value_hiddens : h;
        const std::size_t hv_kv = d.num_heads ? (d.num_kv_heads ? d.num_kv_heads : d.num_heads) * (hv / d.num_heads)
                                              : hv;
        const bool projection_free = param(c, "projection_free", 0) == 1;
        if (projection_free) packed = false;
        edgeattn_weights w{};
        const edgeattn_weight_matrix none{EDGEATTN_DTYPE_NONE, nullptr, nullptr, EDGEATTN_ARITHMETIC_FLOAT};
        if (projection_free) w = {none, none, none, none, nullptr, nullptr, nullptr, nullptr};
        const bool read = projection_free ||
                          mha_weights_of(k, c, h, h_kv, d.query_size, d.key_size, d.value_size, w, hv, hv_kv);
        options.mask = k.mask(d.batch, d.queries, d.num_heads, d.keys).mask;
        score_options(k, c, options);
        out_features = projection_free ? hv : h;
        heads = d.num_heads;
        if (!read || !k.ok() || !fits(k, d.batch * heads * d.queries * d.keys) ||
            !fits(k, d.batch * d.queries * out_features))
            return;
        if (packed) {
            Scratch mem(k);
            const std::size_t packed_bytes = edgeattn_mha_packed_size(&d, &w);
            void *p = mem.bytes(packed_bytes, "edgeattn_mha_packed_size");
            const std::size_t ws_bytes = workspace_size(k, test_calls::request(EDGEATTN_OP_MHA, d));
            void *ws = mem.bytes(ws_bytes, "edgeattn_workspace_size");
            if (!p || !ws) return;
            k.note("packed weights + workspace", mem.used());
            k.status(edgeattn_mha_pack(&d, &w, p, packed_bytes), "edgeattn_mha_pack: ");
            k.status(edgeattn_mha_packed(&d, Q, K, V, p, packed_bytes, &options, ws, ws_bytes, out_output, weights),
                     "edgeattn_mha_packed: ");
        } else {
            void *ws = workspace(k, workspace_size(k, test_calls::request(EDGEATTN_OP_MHA, d)));
            if (!ws) return;
            k.status(edgeattn_mha(&d, Q, K, V, &w, &options, ws, sizeof arena, out_output, weights), "edgeattn_mha: ");
        }
    }
    k.expect("output", out_output, d.batch * d.queries * out_features);
    if (with_weights) k.expect("attention_weights", out_weights, d.batch * heads * d.queries * d.keys);
}

void c_positional_encoding(Check &k, const golden_case &c) {
    const tensor *x = find(c, role::input, "X");
    if (!x || x->rank != 3) return k.fail("no input X of rank 3", "");
    const std::size_t B = x->shape[0], n = x->shape[1], d = x->shape[2];
    const std::size_t max_len = static_cast<std::size_t>(param(c, "max_len", 0));
    const float *X = k.f32("X", {B, n, d});
    if (!X || !fits(k, max_len * d) || !fits(k, B * n * d)) return;
    k.status(edgeattn_positional_encoding_table(max_len, d, table_P), "edgeattn_positional_encoding_table: ");
    k.status(edgeattn_positional_encoding_add_at(B, n, d, 0, X, table_P, max_len, out_output),
             "edgeattn_positional_encoding_add_at: ");
    k.expect("output", out_output, B * n * d);
    k.expect("P", table_P, max_len * d);
}

// d2l's Transformer input: self-attention on X + P, edgeattn_mha with X + P
// as queries, keys and values.
void c_self_attention(Check &k, const golden_case &c, bool with_weights) {
    const tensor *x = find(c, role::input, "X");
    if (!x || x->rank != 3) return k.fail("no input X of rank 3", "");
    const std::size_t B = x->shape[0], n = x->shape[1], h = x->shape[2];
    const std::size_t max_len = static_cast<std::size_t>(param(c, "max_len", 0));
    const std::size_t heads = static_cast<std::size_t>(param(c, "num_heads", 0));
    const edgeattn_attention_dims d{B, n, n, h, h, h, h, heads, 0, 0};
    const float *X = k.f32("X", {B, n, h});
    edgeattn_attention_options options{};
    options.valid_lens = k.valid_lens(B, n);
    const edgeattn_weights w{f32_matrix(k.f32("W_q", {h, h})), f32_matrix(k.f32("W_k", {h, h})),
                             f32_matrix(k.f32("W_v", {h, h})), f32_matrix(k.f32("W_o", {h, h})),
                             k.optional_f32("b_q", {h}),       k.optional_f32("b_k", {h}),
                             k.optional_f32("b_v", {h}),       k.optional_f32("b_o", {h})};
    void *ws = workspace(k, workspace_size(k, test_calls::request(EDGEATTN_OP_MHA, d)));
    if (!X || !w.W_q.data || !w.W_k.data || !w.W_v.data || !w.W_o.data || !ws || !fits(k, max_len * h) ||
        !fits(k, B * n * h) || !fits(k, B * heads * n * n))
        return;
    k.status(edgeattn_positional_encoding_table(max_len, h, table_P), "edgeattn_positional_encoding_table: ");
    k.status(edgeattn_positional_encoding_add_at(B, n, h, 0, X, table_P, max_len, x_plus_p),
             "edgeattn_positional_encoding_add_at: ");
    float *weights = with_weights ? out_weights : nullptr;
    k.status(edgeattn_mha(&d, x_plus_p, x_plus_p, x_plus_p, &w, &options, ws, sizeof arena, out_output, weights),
             "edgeattn_mha: ");
    k.expect("output", out_output, B * n * h);
    if (with_weights) k.expect("attention_weights", out_weights, B * heads * n * n);
}

// torch.nn.Linear: y (rows, out) = x (rows, in) W^T (+ b) through
// edgeattn_dense(); `packed`: through edgeattn_dense_pack() + edgeattn_dense_packed().
void c_linear(Check &k, const golden_case &c, bool packed) {
    const tensor *x = find(c, role::input, "x"), *W = find(c, role::input, "W");
    if (!x || !W || x->rank != 2 || W->rank != 2) return k.fail("no inputs x and W of rank 2", "");
    const edgeattn_dense_dims d{x->shape[0], x->shape[1], W->shape[0]};
    const float *xs = k.f32("x", {d.rows, d.in_features});
    const edgeattn_weight_matrix Wm = stored_matrix(k, c, "W", d.out_features, d.in_features);
    const float *b = k.optional_f32("b", {d.out_features});
    if (!xs || !Wm.data || !k.ok() || !fits(k, d.rows * d.out_features)) return;
    Scratch mem(k);
    if (packed) {
        const std::size_t bytes = edgeattn_dense_packed_size(&d, &Wm);
        void *p = mem.bytes(bytes, "edgeattn_dense_packed_size");
        if (!p) return;
        k.note("packed weights", bytes);
        k.status(edgeattn_dense_pack(&d, &Wm, b, p, bytes), "edgeattn_dense_pack: ");
        k.status(edgeattn_dense_packed(&d, xs, p, bytes, out_output), "edgeattn_dense_packed: ");
    } else {
        edgeattn_workspace_request request{};
        request.op = EDGEATTN_OP_DENSE;
        request.dense = d;
        const std::size_t bytes = workspace_size(k, request);
        void *ws = mem.bytes(bytes, "edgeattn_workspace_size");
        if (!ws) return;
        k.note("workspace", bytes);
        k.status(edgeattn_dense(&d, xs, &Wm, b, ws, bytes, out_output), "edgeattn_dense: ");
    }
    k.expect("y", out_output, d.rows * d.out_features);
}

// ------------------------------------------------------------ KV-cache decoding

// A kv_cache_decode case (FORMAT.md, "Decoder cases"), read and checked once.
struct Decode {
    std::size_t B = 0, T = 0, dm = 0, h = 0, H = 0, H_kv = 0, head_size = 0, capacity = 0;
    std::size_t S = 0, n_max = 0;  // steps, most tokens of a step
    const float *X = nullptr;       // (B, T, dm): queries = keys = values
    const std::int32_t *chunks = nullptr, *truncate = nullptr;  // (S); truncate may be null (none)
    edgeattn_weights w{};           // each matrix in the stored type of param weight_type
    Mask mask;                      // key_ranges (B,2) or (B,T,2), bias (Bb,Hb,T,capacity)
    edgeattn_attention_dims d{};    // queries set per step
    std::size_t window = 0, sinks = 0;  // a window cache (params window, sinks)
    edgeattn_rope_table_config rope{};  // params rope_*: rotary_dims 0 is none
    long rope_layout = 0;
    const std::int32_t *rope_offset = nullptr;  // (B) or null
    bool projection_free = false;   // X holds the projected rows; every matrix EDGEATTN_DTYPE_NONE
    std::size_t value_hiddens = 0, value_head = 0;  // param value_hiddens (0: h), dv
};

bool read_decode(Check &k, const golden_case &c, Decode &z) {
    const tensor *x = find(c, role::input, "X"), *ch = find(c, role::input, "chunks");
    if (!x || x->rank != 3 || !ch || ch->rank != 1) {
        k.fail("no input X of rank 3 or chunks of rank 1", "");
        return false;
    }
    z.B = x->shape[0];
    z.T = x->shape[1];
    z.dm = x->shape[2];
    z.S = ch->shape[0];
    z.h = static_cast<std::size_t>(param(c, "num_hiddens", 0));
    z.H = static_cast<std::size_t>(param(c, "num_heads", 0));
    const long kv_heads = param(c, "num_kv_heads", 0);
    z.H_kv = kv_heads > 0 ? static_cast<std::size_t>(kv_heads) : z.H;
    const long capacity = param(c, "capacity", 0);
    z.capacity = capacity > 0 ? static_cast<std::size_t>(capacity) : 0;
    if (z.H == 0 || z.h % z.H != 0 || z.H % z.H_kv != 0 || z.capacity == 0 || z.S == 0) {
        k.fail("params num_hiddens, num_heads, num_kv_heads or capacity out of range, or no step", "");
        return false;
    }
    z.head_size = z.h / z.H;
    // Value heads of their own width (param value_hiddens hv): dv = hv / H.
    const std::size_t hv = static_cast<std::size_t>(param(c, "value_hiddens", 0));
    if (hv % z.H != 0) {
        k.fail("param value_hiddens not a multiple of num_heads", "");
        return false;
    }
    z.value_hiddens = hv;
    z.value_head = hv ? hv / z.H : z.head_size;
    const std::size_t h = z.h, h_kv = z.H_kv * z.head_size;
    z.X = k.f32("X", {z.B, z.T, z.dm});
    z.chunks = k.i32("chunks", {z.S});
    z.truncate = find(c, role::input, "truncate") ? k.i32("truncate", {z.S}) : nullptr;
    z.projection_free = param(c, "projection_free", 0) == 1;
    const edgeattn_weight_matrix none{EDGEATTN_DTYPE_NONE, nullptr, nullptr, EDGEATTN_ARITHMETIC_FLOAT};
    if (z.projection_free) z.w = {none, none, none, none, nullptr, nullptr, nullptr, nullptr};
    const bool read =
        z.projection_free || mha_weights_of(k, c, h, h_kv, z.dm, z.dm, z.dm, z.w, hv, z.H_kv * z.value_head);
    z.mask = k.mask(z.B, z.T, z.H, z.capacity);
    z.mask.mask.window = static_cast<std::size_t>(param(c, "mask_window", 0));
    z.window = static_cast<std::size_t>(param(c, "window", 0));
    z.sinks = static_cast<std::size_t>(param(c, "sinks", 0));
    z.rope = {static_cast<std::size_t>(param(c, "rope_max_positions", 0)),
              static_cast<std::size_t>(param(c, "rope_dims", 0)), static_cast<double>(param(c, "rope_theta", 0)),
              static_cast<double>(param(c, "rope_scale", 0))};
    z.rope_layout = param(c, "rope_layout", 0);
    if (find(c, role::input, "rope_offset")) z.rope_offset = k.i32("rope_offset", {z.B});
    if (!z.X || !z.chunks || !read || !k.ok()) return false;
    std::size_t sum = 0;
    for (std::size_t s = 0; s < z.S; ++s) {
        if (z.chunks[s] <= 0 || (z.truncate && z.truncate[s] < -1)) {
            k.fail("a chunk below 1 or a truncate below -1", "");
            return false;
        }
        const std::size_t n = static_cast<std::size_t>(z.chunks[s]);
        sum += n;
        if (n > z.n_max) z.n_max = n;
    }
    if (sum != z.T) {
        k.fail("the chunks do not sum to T", "");
        return false;
    }
    z.d = {z.B, 1, z.capacity, z.dm, z.dm, z.dm, h, z.H, static_cast<std::size_t>(kv_heads > 0 ? kv_heads : 0),
           z.value_hiddens};
    return true;
}

// The C API's cache with the member calls of edgeattn::KVCache, so one
// decode loop serves both. It also takes a case's RoPE (KVCache's store
// takes no options): stores rotate their keys, attends their queries, at
// the stream positions, plus rope_offset[b] when the case gives it.
struct CCache {
    edgeattn_kv_cache c{};
    edgeattn_rope rope{};                       // table null: none
    const std::int32_t *offset = nullptr;       // rope_offset (B) or null
    std::int32_t *starts = nullptr;             // (B): the rope's positions of a call with offsets

    // The rope of a call whose first token is `back` tokens before the stream's end.
    edgeattn_rope rope_at(std::size_t back) const {
        edgeattn_rope r = rope;
        if (r.table && offset) {
            for (std::size_t b = 0; b < c.batch; ++b)
                starts[b] = c.positions[b] - static_cast<std::int32_t>(back) + offset[b];
            r.positions = starts;
        }
        return r;
    }
    edgeattn_status store(const edgeattn_attention_dims *d, std::size_t n, const float *keys, const float *values,
                          const edgeattn_weights *w, void *ws, std::size_t bytes) {
        edgeattn_attention_options o{};
        o.rope = rope_at(0);
        return edgeattn_kv_cache_store(&c, d, n, keys, values, w, &o, ws, bytes);
    }
    edgeattn_status store_packed(const edgeattn_attention_dims *d, std::size_t n, const float *keys,
                                 const float *values, const void *p, std::size_t p_bytes, void *ws,
                                 std::size_t bytes) {
        edgeattn_attention_options o{};
        o.rope = rope_at(0);
        return edgeattn_kv_cache_store_packed(&c, d, n, keys, values, p, p_bytes, &o, ws, bytes);
    }
    edgeattn_status attend(const edgeattn_attention_dims *d, const float *q, const edgeattn_weights *w,
                           const edgeattn_attention_options *o, void *ws, std::size_t bytes, float *out) const {
        edgeattn_attention_options with_rope = *o;
        with_rope.rope = rope_at(d->queries);
        return edgeattn_kv_cache_attend(&c, d, q, w, &with_rope, ws, bytes, out, nullptr);
    }
    edgeattn_status attend_packed(const edgeattn_attention_dims *d, const float *q, const void *p,
                                  std::size_t p_bytes, const edgeattn_attention_options *o, void *ws,
                                  std::size_t bytes, float *out) const {
        edgeattn_attention_options with_rope = *o;
        with_rope.rope = rope_at(d->queries);
        return edgeattn_kv_cache_attend_packed(&c, d, q, p, p_bytes, &with_rope, ws, bytes, out, nullptr);
    }
    edgeattn_status truncate(std::size_t b, std::size_t length) { return edgeattn_kv_cache_truncate(&c, b, length); }
};

// The decode of FORMAT.md and tests/conform/run_case.cpp: step s first
// truncates every batch element to truncate[s] (when >= 0), stores its
// chunks[s] tokens, then attends from them over the cache with causal = 1
// plus their rows of key_ranges and bias (copied to step buffers). A step
// refused with EDGEATTN_ERR_CACHE_FULL records that status and is skipped;
// `output` holds the accepted steps' tokens in feed order (B, T_ok, h).
// `packed`: weights from edgeattn_mha_pack(), null for the plain ones.
// Every buffer comes from `mem` (the arena).
template <class Cache>
void decode(Check &k, const Decode &z, Cache &cache, Scratch &mem, const void *packed, std::size_t packed_bytes) {
    const std::size_t B = z.B, T = z.T, dm = z.dm, h = z.h, cap = z.capacity, n_max = z.n_max;
    const bool per_query = z.mask.mask.ranges_kind == EDGEATTN_KEY_RANGES_PER_QUERY;
    const std::size_t Bb = z.mask.mask.bias ? z.mask.mask.bias_batch : 0;
    const std::size_t Hb = z.mask.mask.bias ? z.mask.mask.bias_heads : 0;
    float *xs = mem.take<float>(B * n_max * dm);   // a step's tokens
    float *ys = mem.take<float>(B * n_max * h);    // a step's output
    std::int32_t *step_ranges = per_query ? mem.take<std::int32_t>(B * n_max * 2) : nullptr;
    float *step_bias = Bb ? mem.take<float>(Bb * Hb * n_max * cap) : nullptr;
    std::int32_t *status = mem.take<std::int32_t>(z.S);
    // One workspace for both calls of every step: each step's query covers
    // its store and attend, the largest step's size is kept.
    std::size_t ws_bytes = 0;
    for (std::size_t s = 0; s < z.S; ++s) {
        edgeattn_attention_dims ds = z.d;
        ds.queries = static_cast<std::size_t>(z.chunks[s]);
        const edgeattn_workspace_request step[2] = {test_calls::request(EDGEATTN_OP_KV_CACHE_STORE, ds, ds.queries),
                                                    test_calls::request(EDGEATTN_OP_KV_CACHE_ATTEND, ds)};
        const std::size_t bytes = workspace_size(k, step, 2);
        if (bytes == 0) return k.fail("a KV cache workspace size is 0", "");
        ws_bytes = bytes > ws_bytes ? bytes : ws_bytes;
    }
    void *ws = mem.bytes(ws_bytes, "the KV cache workspaces");
    if (!xs || !ys || (per_query && !step_ranges) || (Bb && !step_bias) || !status || !ws || !fits(k, B * T * h))
        return;
    k.note("arena (module or cache, step buffers, workspace)", mem.used());

    std::size_t t0 = 0, t_ok = 0;
    for (std::size_t s = 0; s < z.S; t0 += static_cast<std::size_t>(z.chunks[s]), ++s) {
        const std::size_t n = static_cast<std::size_t>(z.chunks[s]);
        status[s] = EDGEATTN_OK;
        if (z.truncate && z.truncate[s] >= 0)
            for (std::size_t b = 0; b < B; ++b) {
                const edgeattn_status st = cache.truncate(b, static_cast<std::size_t>(z.truncate[s]));
                if (st != EDGEATTN_OK) return k.fail("edgeattn_kv_cache_truncate: ", edgeattn_status_str(st));
            }
        for (std::size_t b = 0; b < B; ++b)
            std::memcpy(xs + b * n * dm, z.X + (b * T + t0) * dm, n * dm * sizeof(float));
        edgeattn_attention_dims ds = z.d;
        ds.queries = n;
        const edgeattn_status a = packed ? cache.store_packed(&ds, n, xs, xs, packed, packed_bytes, ws, ws_bytes)
                                         : cache.store(&ds, n, xs, xs, &z.w, ws, ws_bytes);
        if (a == EDGEATTN_ERR_CACHE_FULL) {
            status[s] = a;
            continue;
        }
        if (a != EDGEATTN_OK) return k.fail("edgeattn_kv_cache_store: ", edgeattn_status_str(a));

        edgeattn_attention_options options{};
        edgeattn_attention_mask &mask = options.mask;
        mask = z.mask.mask;
        mask.causal = 1;
        if (per_query) {
            for (std::size_t b = 0; b < B; ++b)
                std::memcpy(step_ranges + b * n * 2, z.mask.mask.key_ranges + (b * T + t0) * 2,
                            n * 2 * sizeof(std::int32_t));
            mask.key_ranges = step_ranges;
        }
        if (Bb) {
            for (std::size_t bh = 0; bh < Bb * Hb; ++bh)
                std::memcpy(step_bias + bh * n * cap, z.mask.mask.bias + (bh * T + t0) * cap, n * cap * sizeof(float));
            mask.bias = step_bias;
            mask.bias_keys = cap;
        }
        const edgeattn_status q = packed
                                      ? cache.attend_packed(&ds, xs, packed, packed_bytes, &options, ws, ws_bytes, ys)
                                      : cache.attend(&ds, xs, &z.w, &options, ws, ws_bytes, ys);
        if (q != EDGEATTN_OK) return k.fail("edgeattn_kv_cache_attend: ", edgeattn_status_str(q));
        for (std::size_t b = 0; b < B; ++b)
            std::memcpy(out_output + (b * T + t_ok) * h, ys + b * n * h, n * h * sizeof(float));
        t_ok += n;
    }
    // (B, T, h) rows compacted to (B, T_ok, h), front to back.
    for (std::size_t b = 1; b < B; ++b)
        std::memmove(out_output + b * t_ok * h, out_output + b * T * h, t_ok * h * sizeof(float));
    k.expect_exact("chunk_status", status, z.S);
    k.expect("output", out_output, B * t_ok * h);
}

// The C API's cache, in the arena with everything else; `packed`: weights
// from edgeattn_mha_pack() and the cache's _packed calls.
void c_decode(Check &k, const golden_case &c, bool packed) {
    Decode z;
    if (!read_decode(k, c, z)) return;
    Scratch mem(k);
    // fp32, or (param cache_type) an int8 / fp16 cache; a window cache (params window, sinks).
    const edgeattn_kv_cache_config config{z.B,     z.H_kv,  z.head_size, z.capacity,
                                          static_cast<edgeattn_dtype>(param(c, "cache_type", 0)),
                                          z.window, z.sinks, z.value_head};
    const std::size_t cache_bytes = edgeattn_kv_cache_memory_size(&config);
    void *cache_memory = mem.bytes(cache_bytes, "edgeattn_kv_cache_memory_size");
    std::size_t packed_bytes = 0;
    void *p = nullptr;
    if (packed) {
        packed_bytes = edgeattn_mha_packed_size(&z.d, &z.w);
        p = mem.bytes(packed_bytes, "edgeattn_mha_packed_size");
        if (!p) return;
        k.status(edgeattn_mha_pack(&z.d, &z.w, p, packed_bytes), "edgeattn_mha_pack: ");
    }
    if (!cache_memory || !k.ok()) return;
    CCache cache;
    if (z.rope.rotary_dims) {  // the RoPE table (params rope_*), in the arena
        const std::size_t floats = z.rope.max_positions * z.rope.rotary_dims;
        float *table = mem.take<float>(floats);
        cache.starts = mem.take<std::int32_t>(z.B);
        if (!table || !cache.starts) return;
        k.status(edgeattn_rope_table(&z.rope, table, floats), "edgeattn_rope_table: ");
        cache.rope = {table, z.rope.max_positions, z.rope.rotary_dims, static_cast<edgeattn_rope_layout>(z.rope_layout),
                      nullptr};
        cache.offset = z.rope_offset;
    }
    if (!k.ok()) return;
    const edgeattn_status st = edgeattn_kv_cache_setup(&cache.c, &config, cache_memory, cache_bytes);
    if (st != EDGEATTN_OK) return k.fail("edgeattn_kv_cache_setup: ", edgeattn_status_str(st));
    decode(k, z, cache, mem, p, packed_bytes);
}

// op rope_apply: X (B, T, heads, head_size), positions (B) optional; the
// table from edgeattn_rope_table in the arena.
void c_rope_apply(Check &k, const golden_case &c) {
    const tensor *x = find(c, role::input, "X");
    if (!x || x->rank != 4) return k.fail("no input X of rank 4", "");
    const edgeattn_rope_dims dims{x->shape[0], x->shape[1], x->shape[2], x->shape[3]};
    const edgeattn_rope_table_config config{static_cast<std::size_t>(param(c, "rope_max_positions", 0)),
                                            static_cast<std::size_t>(param(c, "rope_dims", 0)),
                                            static_cast<double>(param(c, "rope_theta", 0)),
                                            static_cast<double>(param(c, "rope_scale", 0))};
    const std::size_t floats = config.max_positions * config.rotary_dims, n = x->count;
    const float *X = k.f32("X", {dims.batch, dims.tokens, dims.heads, dims.head_size});
    const std::int32_t *positions = find(c, role::input, "positions") ? k.i32("positions", {dims.batch}) : nullptr;
    Scratch mem(k);
    float *table = mem.take<float>(floats);
    if (!X || !table || !fits(k, n) || !k.ok()) return;
    k.note("table", floats * sizeof(float));
    k.status(edgeattn_rope_table(&config, table, floats), "edgeattn_rope_table: ");
    const edgeattn_rope rope{table, config.max_positions, config.rotary_dims,
                             static_cast<edgeattn_rope_layout>(param(c, "rope_layout", 0)), positions};
    k.status(edgeattn_rope_apply(&dims, &rope, X, out_output), "edgeattn_rope_apply: ");
    k.expect("Y", out_output, n);
}

void run_c_api(const golden_case &c) {
    const bool attention = same(c.op, "dot_product_attention") || same(c.op, "additive_attention") ||
                           same(c.op, "multi_head_attention") || same(c.op, "self_attention");
    if (same(c.op, "rope_apply")) {
        Check k("C API      ", c);
        return c_rope_apply(k, c);
    }
    if (same(c.op, "linear") || same(c.op, "kv_cache_decode")) {
        const bool linear = same(c.op, "linear");
        {
            Check k("C API      ", c);
            linear ? c_linear(k, c, false) : c_decode(k, c, false);
        }
        if (param(c, "projection_free", 0) == 1) return;  // no weights to pack
        Check k("C API packed", c);
        return linear ? c_linear(k, c, true) : c_decode(k, c, true);
    }
    {
        Check k("C API      ", c);
        if (same(c.op, "masked_softmax")) c_softmax(k, c);
        else if (same(c.op, "positional_encoding")) c_positional_encoding(k, c);
        else if (same(c.op, "self_attention")) c_self_attention(k, c, true);
        else if (attention) c_attention(k, c, true);
        else k.fail("unknown op ", c.op);
    }
    if (attention) {  // no weights requested: the library may take its streaming path
        Check k("C API (output only)", c);
        if (same(c.op, "self_attention")) c_self_attention(k, c, false);
        else c_attention(k, c, false);
    }
    if (same(c.op, "multi_head_attention")) {
        Check k("C API packed", c);
        c_attention(k, c, true, true);
    }
}

// ------------------------------------------------------------ the C++ API

template <class Module, class... Args>
Module *make_module(Args... args) {
    static_assert(sizeof(Module) <= sizeof arena, "the module does not fit the arena");
    static_assert(alignof(Module) <= 64, "the arena is 64-byte aligned");
    return ::new (static_cast<void *>(arena)) Module(args...);
}

template <std::size_t B, std::size_t Q, std::size_t K>
void cpp_softmax(const golden_case &c) {
    ++cpp_runs;
    Check k("C++ fixed  ", c);
    const float *X = k.f32("X", {B, Q, K});
    const edgeattn_valid_lens vl = k.valid_lens(B, Q);
    static_assert(B * Q * K <= golden::max_elements, "");
    if (!X) return;
    k.status(edgeattn::masked_softmax<B, Q, K>(X, &vl, out_output), "masked_softmax: ");
    k.expect("Y", out_output, B * Q * K);
}

template <std::size_t B, std::size_t Q, std::size_t K, std::size_t D, std::size_t V>
void cpp_dot(const golden_case &c) {
    ++cpp_runs;
    using Module = edgeattn::DotProductAttention<B, Q, K, D, V>;
    Check k("C++ fixed  ", c);
    const float *q = k.f32("queries", {B, Q, D}), *kk = k.f32("keys", {B, K, D}), *v = k.f32("values", {B, K, V});
    const edgeattn_valid_lens vl = k.valid_lens(B, Q);
    if (!q || !kk || !v) return;
    Module *m = make_module<Module>();
    k.note("sizeof(DotProductAttention)", sizeof(Module));
    k.status(m->forward(q, kk, v, &vl, out_output, out_weights), "DotProductAttention::forward: ");
    k.expect("output", out_output, B * Q * V);
    k.expect("attention_weights", out_weights, B * Q * K);
}

template <std::size_t B, std::size_t Q, std::size_t K, std::size_t QS, std::size_t KS, std::size_t V,
          std::size_t H>
void cpp_additive(const golden_case &c) {
    ++cpp_runs;
    using Module = edgeattn::AdditiveAttention<B, Q, K, QS, KS, V, H>;
    Check k("C++ fixed  ", c);
    const float *q = k.f32("queries", {B, Q, QS}), *kk = k.f32("keys", {B, K, KS}), *v = k.f32("values", {B, K, V});
    edgeattn_weights w{};
    w.W_q = f32_matrix(k.f32("W_q", {H, QS}));
    w.W_k = f32_matrix(k.f32("W_k", {H, KS}));
    w.W_v = f32_matrix(k.f32("w_v", {1, H}));
    const edgeattn_valid_lens vl = k.valid_lens(B, Q);
    if (!q || !kk || !v || !w.W_q.data || !w.W_k.data || !w.W_v.data) return;
    Module *m = make_module<Module>(w);
    k.note("sizeof(AdditiveAttention)", sizeof(Module));
    k.status(m->forward(q, kk, v, &vl, out_output, out_weights), "AdditiveAttention::forward: ");
    k.expect("output", out_output, B * Q * V);
    k.expect("attention_weights", out_weights, B * Q * K);
}

template <std::size_t B, std::size_t Q, std::size_t K, std::size_t QS, std::size_t KS, std::size_t VS,
          std::size_t H, std::size_t Heads>
void cpp_mha(const golden_case &c) {
    ++cpp_runs;
    using Module = edgeattn::MultiHeadAttention<B, Q, K, QS, KS, VS, H, Heads>;
    Check k("C++ fixed  ", c);
    const float *q = k.f32("queries", {B, Q, QS}), *kk = k.f32("keys", {B, K, KS}),
                *v = k.f32("values", {B, K, VS});
    const edgeattn_weights w{f32_matrix(k.f32("W_q", {H, QS})), f32_matrix(k.f32("W_k", {H, KS})),
                             f32_matrix(k.f32("W_v", {H, VS})), f32_matrix(k.f32("W_o", {H, H})),
                             k.optional_f32("b_q", {H}),        k.optional_f32("b_k", {H}),
                             k.optional_f32("b_v", {H}),        k.optional_f32("b_o", {H})};
    const edgeattn_valid_lens vl = k.valid_lens(B, Q);
    if (!q || !kk || !v || !w.W_q.data || !w.W_k.data || !w.W_v.data || !w.W_o.data) return;
    Module *m = make_module<Module>(w);
    k.note("sizeof(MultiHeadAttention)", sizeof(Module));
    k.status(m->forward(q, kk, v, &vl, out_output, out_weights), "MultiHeadAttention::forward: ");
    k.expect("output", out_output, B * Q * H);
    k.expect("attention_weights", out_weights, B * Heads * Q * K);
}

template <std::size_t B, std::size_t N, std::size_t D, std::size_t MaxLen>
void cpp_positional(const golden_case &c) {
    ++cpp_runs;
    Check k("C++ fixed  ", c);
    const float *X = k.f32("X", {B, N, D});
    if (!X) return;
    // The compile-time table, in flash (.rodata: the hygiene test checks it).
    const edgeattn::PositionalEncodingTable<MaxLen, D> &P = edgeattn::positional_encoding_table<MaxLen, D>;
    k.note("table in flash", sizeof P);
    k.status(edgeattn_positional_encoding_add_at(B, N, D, 0, X, P.data(), MaxLen, out_output),
             "edgeattn_positional_encoding_add_at: ");
    k.expect("output", out_output, B * N * D);
    k.expect("P", P.data(), MaxLen * D);
}

template <std::size_t B, std::size_t N, std::size_t D, std::size_t Heads, std::size_t MaxLen>
void cpp_self_attention(const golden_case &c) {
    ++cpp_runs;
    using Module = edgeattn::PositionalSelfAttention<B, N, D, Heads, MaxLen>;
    Check k("C++ fixed  ", c);
    const float *X = k.f32("X", {B, N, D});
    const edgeattn_weights w{f32_matrix(k.f32("W_q", {D, D})), f32_matrix(k.f32("W_k", {D, D})),
                             f32_matrix(k.f32("W_v", {D, D})), f32_matrix(k.f32("W_o", {D, D})),
                             k.optional_f32("b_q", {D}),       k.optional_f32("b_k", {D}),
                             k.optional_f32("b_v", {D}),       k.optional_f32("b_o", {D})};
    const edgeattn_valid_lens vl = k.valid_lens(B, N);
    if (!X || !w.W_q.data || !w.W_k.data || !w.W_v.data || !w.W_o.data) return;
    Module *m = make_module<Module>(w);
    k.note("sizeof(PositionalSelfAttention)", sizeof(Module));
    k.status(m->forward(X, &vl, out_output, out_weights), "PositionalSelfAttention::forward: ");
    k.expect("output", out_output, B * N * D);
    k.expect("attention_weights", out_weights, B * Heads * N * N);
}

// A decode case through edgeattn::KVCache (the cache's memory is a member:
// the object lies at the arena's start, the step buffers after it).
template <std::size_t B, std::size_t KvHeads, std::size_t HeadSize, std::size_t Capacity>
void cpp_decode(const golden_case &c) {
    ++cpp_runs;
    using Cache = edgeattn::KVCache<B, KvHeads, HeadSize, Capacity>;
    Check k("C++ fixed  ", c);
    Decode z;
    if (!read_decode(k, c, z)) return;
    if (z.B != B || z.H_kv != KvHeads || z.head_size != HeadSize || z.capacity != Capacity)
        return k.fail("the KVCache's template arguments are not the case's sizes", "");
    Cache *cache = make_module<Cache>();
    if (cache->init_status() != EDGEATTN_OK) return k.fail("KVCache: ", edgeattn_status_str(cache->init_status()));
    Scratch mem(k, sizeof(Cache));
    decode(k, z, *cache, mem, nullptr, 0);
}

// The template arguments must be the case file's dimensions: checked here at
// compile time against the generated shape arrays.
#define SHAPE(case_name, tensor_id, ...)                                                        \
    static_assert(shape_is(golden::case_name::tensor_id##_shape, {__VA_ARGS__}),                \
                  #case_name "." #tensor_id ": the template dimensions are not the case file's")

void run_cpp_api() {
    namespace g = golden;
    SHAPE(softmax_seed_1d, input_X, 2, 2, 4);
    cpp_softmax<2, 2, 4>(g::softmax_seed_1d::info);
    SHAPE(softmax_seed_2d, input_X, 2, 2, 4);
    cpp_softmax<2, 2, 4>(g::softmax_seed_2d::info);
    SHAPE(softmax_unmasked, input_X, 2, 3, 5);
    cpp_softmax<2, 3, 5>(g::softmax_unmasked::info);
    SHAPE(softmax_all_masked, input_X, 2, 3, 6);
    cpp_softmax<2, 3, 6>(g::softmax_all_masked::info);
    SHAPE(softmax_large_values, input_X, 3, 7, 37);
    cpp_softmax<3, 7, 37>(g::softmax_large_values::info);
    SHAPE(softmax_wide, input_X, 2, 4, 1029);
    cpp_softmax<2, 4, 1029>(g::softmax_wide::info);

    SHAPE(dot_seed, input_queries, 2, 1, 2);
    SHAPE(dot_seed, input_values, 2, 10, 4);
    cpp_dot<2, 1, 10, 2, 4>(g::dot_seed::info);
    SHAPE(dot_random, input_queries, 2, 5, 16);
    SHAPE(dot_random, input_values, 2, 7, 3);
    cpp_dot<2, 5, 7, 16, 3>(g::dot_random::info);
    SHAPE(dot_unmasked, input_queries, 3, 33, 64);
    SHAPE(dot_unmasked, input_values, 3, 65, 24);
    cpp_dot<3, 33, 65, 64, 24>(g::dot_unmasked::info);

    SHAPE(additive_seed, input_queries, 2, 1, 20);
    SHAPE(additive_seed, input_keys, 2, 10, 2);
    SHAPE(additive_seed, input_values, 2, 10, 4);
    SHAPE(additive_seed, input_W_q, 8, 20);
    cpp_additive<2, 1, 10, 20, 2, 4, 8>(g::additive_seed::info);
    SHAPE(additive_random, input_queries, 3, 5, 7);
    SHAPE(additive_random, input_keys, 3, 6, 4);
    SHAPE(additive_random, input_values, 3, 6, 9);
    SHAPE(additive_random, input_W_q, 10, 7);
    cpp_additive<3, 5, 6, 7, 4, 9, 10>(g::additive_random::info);

    SHAPE(mha_seed, input_queries, 2, 4, 100);
    SHAPE(mha_seed, input_keys, 2, 4, 100);
    SHAPE(mha_seed, input_values, 2, 4, 100);
    static_assert(g::mha_seed::param_num_hiddens == 100 && g::mha_seed::param_num_heads == 5, "");
    cpp_mha<2, 4, 4, 100, 100, 100, 100, 5>(g::mha_seed::info);
    SHAPE(mha_self_random, input_queries, 2, 9, 100);
    SHAPE(mha_self_random, input_keys, 2, 9, 100);
    SHAPE(mha_self_random, input_values, 2, 9, 100);
    static_assert(g::mha_self_random::param_num_hiddens == 100 && g::mha_self_random::param_num_heads == 5, "");
    cpp_mha<2, 9, 9, 100, 100, 100, 100, 5>(g::mha_self_random::info);
    SHAPE(mha_cross_bias, input_queries, 2, 3, 12);
    SHAPE(mha_cross_bias, input_keys, 2, 6, 20);
    SHAPE(mha_cross_bias, input_values, 2, 6, 24);
    static_assert(g::mha_cross_bias::param_num_hiddens == 16 && g::mha_cross_bias::param_num_heads == 4, "");
    cpp_mha<2, 3, 6, 12, 20, 24, 16, 4>(g::mha_cross_bias::info);

    SHAPE(posenc_seed, input_X, 1, 60, 32);
    static_assert(g::posenc_seed::param_max_len == 1000, "");
    cpp_positional<1, 60, 32, 1000>(g::posenc_seed::info);
    SHAPE(posenc_odd_dim, input_X, 2, 17, 7);
    static_assert(g::posenc_odd_dim::param_max_len == 50, "");
    cpp_positional<2, 17, 7, 50>(g::posenc_odd_dim::info);

    SHAPE(self_attention_pe, input_X, 2, 10, 32);
    static_assert(g::self_attention_pe::param_num_heads == 4 && g::self_attention_pe::param_max_len == 1000, "");
    cpp_self_attention<2, 10, 32, 4, 1000>(g::self_attention_pe::info);

    // KVCache<B, H_kv, h / H, capacity> of each decode case.
#define DECODE(case_name, B, T, d, h, H, H_kv, capacity)                                                \
    SHAPE(case_name, input_X, B, T, d);                                                                 \
    static_assert(g::case_name::param_num_hiddens == h && g::case_name::param_num_heads == H &&        \
                      g::case_name::param_num_kv_heads == H_kv && g::case_name::param_capacity == capacity, \
                  #case_name ": the KVCache sizes are not the case file's");                            \
    cpp_decode<B, H_kv, h / H, capacity>(g::case_name::info)
    DECODE(decode_steps, 2, 12, 12, 16, 4, 4, 16);
    DECODE(decode_gqa, 2, 10, 10, 16, 4, 1, 12);
    DECODE(decode_gqa_half, 2, 9, 16, 24, 6, 3, 10);
    DECODE(decode_left_pad, 2, 10, 12, 16, 4, 2, 12);
    DECODE(decode_window_bias, 2, 10, 12, 16, 4, 2, 12);
    DECODE(decode_cache_full, 2, 10, 12, 16, 4, 2, 8);
    DECODE(decode_truncate, 2, 12, 12, 16, 4, 4, 12);
    DECODE(decode_sliding_mask, 2, 10, 12, 16, 4, 2, 12);
#undef DECODE
}

// Whether a case has a fixed-size C++ twin for run_cpp_api(): the C++ API
// has no masked or grouped-query attention, no score options and no
// projection module, so those cases run through the C API only.
bool has_cpp_twin(const golden_case &c) {
    if (same(c.op, "linear") || param(c, "weight_type", 0) != 0 || param(c, "cache_type", 0) != 0) return false;
    // edgeattn::KVCache's store takes no rope; the window and projection-free
    // cases run through the C API only, and rope_apply is a C call
    if (same(c.op, "rope_apply") || param(c, "rope_dims", 0) != 0 || param(c, "window", 0) != 0 ||
        param(c, "projection_free", 0) != 0 || param(c, "value_hiddens", 0) != 0)
        return false;
    if (same(c.op, "dot_product_attention") || same(c.op, "multi_head_attention"))
        return param(c, "num_kv_heads", -1) < 0 && param(c, "causal", -1) < 0 &&
               !find(c, role::input, "key_ranges") && !find(c, role::input, "bias") &&
               !find(c, role::input, "score_options") && param(c, "masking", 0) == 0 &&
               param(c, "alignment", 0) == 0 && param(c, "weights_output", 0) == 0 &&
               param(c, "mask_window", 0) == 0 && param(c, "right_window", 0) == 0;
    return true;
}

}  // namespace

// The paths a bare-metal build must have: the plain C++ one, and Helium
// where the library was built for it (EDGEATTN_FIRMWARE_HELIUM, from the
// build's kernel paths); the best one first, as dispatch picks it.
int main() {
#if defined(EDGEATTN_FIRMWARE_HELIUM)
    const edgeattn_isa paths[] = {EDGEATTN_ISA_HELIUM, EDGEATTN_ISA_SCALAR};
#else
    const edgeattn_isa paths[] = {EDGEATTN_ISA_SCALAR};
#endif
    Line() << "edgeattn test firmware: " << golden::case_count << " golden cases, kernel path "
           << edgeattn_isa_name(edgeattn_current_isa());
    if (edgeattn_current_isa() != paths[0] || edgeattn_isa_supported(EDGEATTN_ISA_NEON)) {
        Line() << "FAIL   the build must run " << edgeattn_isa_name(paths[0]) << " by default, and have no NEON";
        ++failed;
    }
    std::size_t twins = 0;
    for (std::size_t i = 0; i < golden::case_count; ++i) twins += has_cpp_twin(golden::cases[i]) ? 1 : 0;
    for (edgeattn_isa path : paths) {
        if (edgeattn_set_isa(path) != EDGEATTN_OK) {
            Line() << "FAIL   kernel path " << edgeattn_isa_name(path) << " is not in the library";
            ++failed;
            continue;
        }
        Line() << "kernel path " << edgeattn_isa_name(path);
        cpp_runs = 0;
        for (std::size_t i = 0; i < golden::case_count; ++i) run_c_api(golden::cases[i]);
        run_cpp_api();
        firmware::run_rope_checks(passed, failed);
        if (cpp_runs != twins) {
            Line() << "FAIL   " << cpp_runs << " of " << twins
                   << " golden cases with a C++ fixed-size twin have a C++ run: add the new ones to run_cpp_api()";
            ++failed;
        }
    }
    edgeattn_set_isa(EDGEATTN_ISA_AUTO);
    Line() << passed << " passed, " << failed << " failed";
    return failed == 0 && passed > 0 ? 0 : 1;
}
