// Test firmware for the Cortex-M4F port: every golden case of tests/golden/
// (embedded in flash by embed_golden.cmake) through
//   - the C API, with runtime dimensions and a workspace sized by
//     edgeattn_*_workspace_size(dims, 1), with and without attention weights;
//   - the C++17 fixed-size API, with the case's dimensions as template
//     arguments (checked against the case file at compile time) and the
//     module object, workspace included, in a static arena;
// held to tests/golden/FORMAT.md's bar (the constants of conform/accuracy.hpp).
// It reports one line per check over semihosting and ends with
// "N passed, N failed"; the exit status (QEMU's) is 0 only if all passed.
//
// Nothing here allocates: inputs and weights are read from flash, outputs
// and workspaces are static arrays.
#include <edgeattn/edgeattn.h>
#include <edgeattn/edgeattn.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>

#include "conform/accuracy.hpp"
#include "golden_cases.hpp"
#include "report.hpp"

using firmware::Line;
using golden::golden_case;
using golden::kind;
using golden::role;
using golden::tensor;

namespace {

// ------------------------------------------------------------ static memory

// The C API's workspace, or the C++ API's module object (workspace inside).
alignas(64) unsigned char arena[1536 * 1024];
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

// One check (a case through one API): collects why it failed, if it did.
class Check {
  public:
    Check(const char *api, const golden_case &c) : api_(api), case_(c) {}

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

void *workspace(Check &k, std::size_t bytes) {
    if (bytes == 0 || bytes > sizeof arena) {
        k.fail("workspace size 0 or larger than the arena", "");
        return nullptr;
    }
    k.note("workspace", bytes);
    return arena;
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

// Dot-product, additive and multi-head attention: queries, keys, values.
void c_attention(Check &k, const golden_case &c, bool with_weights) {
    const tensor *q = find(c, role::input, "queries"), *kk = find(c, role::input, "keys"),
                 *v = find(c, role::input, "values");
    if (!q || !kk || !v || q->rank != 3 || kk->rank != 3 || v->rank != 3)
        return k.fail("queries, keys or values missing", "");
    edgeattn_attention_dims d{q->shape[0], q->shape[1], kk->shape[1], q->shape[2],
                              kk->shape[2], v->shape[2], 0,           0, 0};
    const float *Q = k.f32("queries", {d.batch, d.queries, d.query_size});
    const float *K = k.f32("keys", {d.batch, d.keys, d.key_size});
    const float *V = k.f32("values", {d.batch, d.keys, d.value_size});
    const edgeattn_valid_lens vl = k.valid_lens(d.batch, d.queries);
    if (!Q || !K || !V) return;
    float *weights = with_weights ? out_weights : nullptr;
    std::size_t out_features = d.value_size, heads = 1;
    if (same(c.op, "dot_product_attention")) {
        void *ws = workspace(k, edgeattn_dot_product_attention_workspace_size(&d, 1));
        if (!ws || !fits(k, d.batch * d.queries * d.keys) || !fits(k, d.batch * d.queries * d.value_size)) return;
        k.status(edgeattn_dot_product_attention(&d, Q, K, V, &vl, ws, sizeof arena, out_output, weights),
                 "edgeattn_dot_product_attention: ");
    } else if (same(c.op, "additive_attention")) {
        d.num_hiddens = static_cast<std::size_t>(param(c, "num_hiddens", 0));
        const std::size_t h = d.num_hiddens;
        const edgeattn_additive_weights w{k.f32("W_q", {h, d.query_size}), k.f32("W_k", {h, d.key_size}),
                                          k.f32("w_v", {1, h})};
        void *ws = workspace(k, edgeattn_additive_attention_workspace_size(&d, 1));
        if (!w.W_q || !w.W_k || !w.w_v || !ws || !fits(k, d.batch * d.queries * d.keys) ||
            !fits(k, d.batch * d.queries * d.value_size))
            return;
        k.status(edgeattn_additive_attention(&d, Q, K, V, &vl, &w, ws, sizeof arena, out_output, weights),
                 "edgeattn_additive_attention: ");
    } else {
        d.num_hiddens = static_cast<std::size_t>(param(c, "num_hiddens", 0));
        d.num_heads = static_cast<std::size_t>(param(c, "num_heads", 0));
        const std::size_t h = d.num_hiddens;
        const edgeattn_mha_weights w{k.f32("W_q", {h, d.query_size}), k.f32("W_k", {h, d.key_size}),
                                     k.f32("W_v", {h, d.value_size}), k.f32("W_o", {h, h}),
                                     k.optional_f32("b_q", {h}),      k.optional_f32("b_k", {h}),
                                     k.optional_f32("b_v", {h}),      k.optional_f32("b_o", {h})};
        void *ws = workspace(k, edgeattn_multi_head_attention_workspace_size(&d, 1));
        out_features = h;
        heads = d.num_heads;
        if (!w.W_q || !w.W_k || !w.W_v || !w.W_o || !ws || !fits(k, d.batch * heads * d.queries * d.keys) ||
            !fits(k, d.batch * d.queries * h))
            return;
        k.status(edgeattn_multi_head_attention(&d, Q, K, V, &vl, &w, ws, sizeof arena, out_output, weights),
                 "edgeattn_multi_head_attention: ");
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
    k.status(edgeattn_positional_encoding_add(B, n, d, X, table_P, max_len, out_output),
             "edgeattn_positional_encoding_add: ");
    k.expect("output", out_output, B * n * d);
    k.expect("P", table_P, max_len * d);
}

// d2l's Transformer input: self-attention on X + P.
void c_self_attention(Check &k, const golden_case &c, bool with_weights) {
    const tensor *x = find(c, role::input, "X");
    if (!x || x->rank != 3) return k.fail("no input X of rank 3", "");
    const std::size_t B = x->shape[0], n = x->shape[1], h = x->shape[2];
    const std::size_t max_len = static_cast<std::size_t>(param(c, "max_len", 0));
    const std::size_t heads = static_cast<std::size_t>(param(c, "num_heads", 0));
    const edgeattn_attention_dims d{B, n, n, h, h, h, h, heads, 0};
    const float *X = k.f32("X", {B, n, h});
    const edgeattn_valid_lens vl = k.valid_lens(B, n);
    const edgeattn_mha_weights w{k.f32("W_q", {h, h}),       k.f32("W_k", {h, h}),
                                 k.f32("W_v", {h, h}),       k.f32("W_o", {h, h}),
                                 k.optional_f32("b_q", {h}), k.optional_f32("b_k", {h}),
                                 k.optional_f32("b_v", {h}), k.optional_f32("b_o", {h})};
    void *ws = workspace(k, edgeattn_self_attention_workspace_size(&d, 1));
    if (!X || !w.W_q || !w.W_k || !w.W_v || !w.W_o || !ws || !fits(k, max_len * h) || !fits(k, B * n * h) ||
        !fits(k, B * heads * n * n))
        return;
    k.status(edgeattn_positional_encoding_table(max_len, h, table_P), "edgeattn_positional_encoding_table: ");
    k.status(edgeattn_positional_encoding_add(B, n, h, X, table_P, max_len, x_plus_p),
             "edgeattn_positional_encoding_add: ");
    float *weights = with_weights ? out_weights : nullptr;
    k.status(edgeattn_self_attention(&d, x_plus_p, &vl, &w, ws, sizeof arena, out_output, weights),
             "edgeattn_self_attention: ");
    k.expect("output", out_output, B * n * h);
    if (with_weights) k.expect("attention_weights", out_weights, B * heads * n * n);
}

void run_c_api(const golden_case &c) {
    const bool attention = same(c.op, "dot_product_attention") || same(c.op, "additive_attention") ||
                           same(c.op, "multi_head_attention") || same(c.op, "self_attention");
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
    const edgeattn_additive_weights w{k.f32("W_q", {H, QS}), k.f32("W_k", {H, KS}), k.f32("w_v", {1, H})};
    const edgeattn_valid_lens vl = k.valid_lens(B, Q);
    if (!q || !kk || !v || !w.W_q || !w.W_k || !w.w_v) return;
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
    const edgeattn_mha_weights w{k.f32("W_q", {H, QS}),      k.f32("W_k", {H, KS}),
                                 k.f32("W_v", {H, VS}),      k.f32("W_o", {H, H}),
                                 k.optional_f32("b_q", {H}), k.optional_f32("b_k", {H}),
                                 k.optional_f32("b_v", {H}), k.optional_f32("b_o", {H})};
    const edgeattn_valid_lens vl = k.valid_lens(B, Q);
    if (!q || !kk || !v || !w.W_q || !w.W_k || !w.W_v || !w.W_o) return;
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
    k.status(edgeattn_positional_encoding_add(B, N, D, X, P.data(), MaxLen, out_output),
             "edgeattn_positional_encoding_add: ");
    k.expect("output", out_output, B * N * D);
    k.expect("P", P.data(), MaxLen * D);
}

template <std::size_t B, std::size_t N, std::size_t D, std::size_t Heads, std::size_t MaxLen>
void cpp_self_attention(const golden_case &c) {
    ++cpp_runs;
    using Module = edgeattn::SelfAttention<B, N, D, Heads, MaxLen>;
    Check k("C++ fixed  ", c);
    const float *X = k.f32("X", {B, N, D});
    const edgeattn_mha_weights w{k.f32("W_q", {D, D}),       k.f32("W_k", {D, D}),
                                 k.f32("W_v", {D, D}),       k.f32("W_o", {D, D}),
                                 k.optional_f32("b_q", {D}), k.optional_f32("b_k", {D}),
                                 k.optional_f32("b_v", {D}), k.optional_f32("b_o", {D})};
    const edgeattn_valid_lens vl = k.valid_lens(B, N);
    if (!X || !w.W_q || !w.W_k || !w.W_v || !w.W_o) return;
    Module *m = make_module<Module>(w);
    k.note("sizeof(SelfAttention)", sizeof(Module));
    k.status(m->forward(X, &vl, out_output, out_weights), "SelfAttention::forward: ");
    k.expect("output", out_output, B * N * D);
    k.expect("attention_weights", out_weights, B * Heads * N * N);
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
}

}  // namespace

int main() {
    Line() << "edgeattn test firmware: " << golden::case_count << " golden cases, kernel path "
           << edgeattn_isa_name(edgeattn_current_isa());
    if (edgeattn_current_isa() != EDGEATTN_ISA_SCALAR || edgeattn_isa_supported(EDGEATTN_ISA_NEON)) {
        Line() << "FAIL   the Cortex-M4F build must run the scalar path only";
        ++failed;
    }
    for (std::size_t i = 0; i < golden::case_count; ++i) run_c_api(golden::cases[i]);
    run_cpp_api();
    if (cpp_runs != golden::case_count) {
        Line() << "FAIL   " << cpp_runs << " of " << golden::case_count
               << " golden cases have a C++ fixed-size run: add the new ones to run_cpp_api()";
        ++failed;
    }
    Line() << passed << " passed, " << failed << " failed";
    return failed == 0 && passed > 0 ? 0 : 1;
}
