// Maps a case file onto the C API calls; see run_case.hpp. Shapes are in
// d2l's (batch, queries, keys) notation: B, Q, K; q, k, v the feature sizes
// of a query, key and value; h = num_hiddens; H = num_heads; H_kv =
// num_kv_heads, h_kv = H_kv * h / H (grouped-query heads). The decoder ops
// (masks, linear, kv_cache_decode) follow tests/golden/FORMAT.md, "Decoder
// cases".
#include "run_case.hpp"
#include "../workspace_request.hpp"

#include <edgeattn/edgeattn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace edgeattn_conform {

std::size_t default_max_threads() {
#ifdef _OPENMP
    int n = omp_get_max_threads();
    return n > 0 ? static_cast<std::size_t>(n) : 1;
#else
    return 64;
#endif
}

namespace {

using Shape = std::vector<std::size_t>;

// Above this a case is refused rather than allocated (a fuzzed case can ask
// for any size).
constexpr std::size_t kMaxWorkspaceBytes = std::size_t(1) << 30;

// Element count of `shape`, false when it passes kMaxElements.
bool capped_count(const Shape &shape, std::size_t &n) {
    std::uint64_t c = 1;
    for (std::size_t d : shape) {
        if (d != 0 && c > kMaxElements / d) return false;
        c *= d;
    }
    if (c > kMaxElements) return false;
    n = static_cast<std::size_t>(c);
    return true;
}

struct Output {
    std::string name;
    Shape shape;
    Kind kind = Kind::f32;   // of the result tensor; i32 values are held exactly in the floats
    bool wanted = false;     // the case expects it (or expects nothing)
    std::vector<float> data; // allocated when wanted or the call needs it
};

// Scratch memory, 64-byte aligned; never a null pointer. Left uninitialised
// (the API ignores a workspace's contents), so pages the library does not
// touch cost no memory.
struct Aligned {
    std::unique_ptr<unsigned char[]> mem;
    void *p = nullptr;
    std::size_t bytes = 0;

    // False when `bytes` passes kMaxWorkspaceBytes (nothing allocated).
    bool reset(std::size_t n) {
        if (n > kMaxWorkspaceBytes) return false;
        mem.reset(new unsigned char[n + 64]);
        std::uintptr_t a = reinterpret_cast<std::uintptr_t>(mem.get());
        p = mem.get() + ((64 - a % 64) % 64);
        bytes = n;
        return true;
    }
};

// One case's inputs, params and outputs, with the checks shared by all ops.
// Every method returns false after setting err.
class Runner {
public:
    Runner(const Case &c, std::string &err, std::size_t threads, bool packed_weights)
        : c_(c), err_(err), threads_(threads), packed_weights_(packed_weights) {}

    const Case &c() const { return c_; }
    std::size_t threads() const { return threads_; }
    bool packed_weights() const { return packed_weights_; }

    bool fail(const std::string &msg) {
        err_ = msg;
        return false;
    }

    // A typo in a name ("valid_len") must not silently drop a tensor.
    bool allow(std::initializer_list<const char *> inputs, std::initializer_list<const char *> params) {
        for (const Tensor &t : c_.tensors) {
            if (t.role == Role::result)
                return fail("input case holds a result tensor '" + t.name + "'; give it the original case");
            if (t.role != Role::input) continue;
            if (!listed(inputs, t.name)) return fail("op " + c_.op + " takes no input tensor '" + t.name + "'");
        }
        for (const Param &p : c_.params)
            if (!listed(params, p.key)) return fail("op " + c_.op + " takes no param '" + p.key + "'");
        return true;
    }

    bool has(const char *name) const { return c_.find(Role::input, name) != nullptr; }

    // Input `name` as floats; must be f32 of the given rank.
    bool f32(const char *name, std::size_t rank, std::vector<float> &v, Shape &shape) {
        const Tensor *t = c_.find(Role::input, name);
        if (!t) return fail("op " + c_.op + " needs input tensor '" + std::string(name) + "'");
        if (t->kind != Kind::f32) return fail(std::string("input '") + name + "' must be f32");
        if (t->shape.size() != rank)
            return fail(std::string("input '") + name + "' must have rank " + std::to_string(rank) +
                        ", has shape " + shape_string(t->shape));
        v.assign(t->values.begin(), t->values.end());
        shape = t->shape;
        return true;
    }

    // Input `name` with exactly the shape `want`, described as `desc` ("(h,q)").
    bool f32_shaped(const char *name, const Shape &want, const char *desc, std::vector<float> &v) {
        Shape s;
        if (!f32(name, want.size(), v, s)) return false;
        if (s != want)
            return fail(std::string("input '") + name + "' has shape " + shape_string(s) + ", expected " + desc +
                        " = " + shape_string(want));
        return true;
    }

    // Input `name` as int32; must be i32 of the given rank.
    bool i32(const char *name, std::size_t rank, std::vector<std::int32_t> &v, Shape &shape) {
        const Tensor *t = c_.find(Role::input, name);
        if (!t) return fail("op " + c_.op + " needs input tensor '" + std::string(name) + "'");
        if (t->kind != Kind::i32) return fail(std::string("input '") + name + "' must be i32");
        if (t->shape.size() != rank)
            return fail(std::string("input '") + name + "' must have rank " + std::to_string(rank) +
                        ", has shape " + shape_string(t->shape));
        v.resize(t->values.size());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(t->values[i]); // exact
        shape = t->shape;
        return true;
    }

    // A non-negative integer param; absent gives `dflt`, or an error when dflt < 0.
    bool param(const char *key, long long dflt, std::size_t &v) {
        const Param *p = c_.find_param(key);
        if (!p) {
            if (dflt < 0) return fail("op " + c_.op + " needs param '" + std::string(key) + "'");
            v = static_cast<std::size_t>(dflt);
            return true;
        }
        if (p->value < 0 || static_cast<std::uint64_t>(p->value) > kMaxElements)
            return fail(std::string("param '") + key + "' = " + std::to_string(p->value) + " is out of range 0.." +
                        std::to_string(kMaxElements));
        v = static_cast<std::size_t>(p->value);
        return true;
    }

    // valid_lens: absent, (B) per batch element, or (B,Q) per query.
    bool valid_lens(std::size_t B, std::size_t Q, std::vector<std::int32_t> &lens, edgeattn_valid_lens &vl) {
        vl.kind = EDGEATTN_VALID_LENS_NONE;
        vl.lens = nullptr;
        const Tensor *t = c_.find(Role::input, "valid_lens");
        if (!t) return true;
        if (t->kind != Kind::i32) return fail("input 'valid_lens' must be i32");
        if (t->shape == Shape{B}) vl.kind = EDGEATTN_VALID_LENS_PER_BATCH;
        else if (t->shape == Shape{B, Q}) vl.kind = EDGEATTN_VALID_LENS_PER_QUERY;
        else
            return fail("input 'valid_lens' has shape " + shape_string(t->shape) + ", expected (B) = " +
                        shape_string({B}) + " or (B,Q) = " + shape_string({B, Q}));
        lens.assign(t->values.begin(), t->values.end()); // i32 values convert exactly
        vl.lens = lens.data();
        return true;
    }

    // Declares an output of the op. `needed`: the call takes it even when
    // the case does not expect it. Checks the expected tensor's shape.
    bool output(const char *name, const Shape &shape, bool needed, Kind kind = Kind::f32) {
        const Tensor *e = c_.find(Role::expect, name);
        if (e && e->shape != shape)
            return fail(std::string("expected tensor '") + name + "' has shape " + shape_string(e->shape) +
                        " but op " + c_.op + " computes " + shape_string(shape));
        Output o;
        o.name = name;
        o.shape = shape;
        o.kind = kind;
        o.wanted = e != nullptr || !expects_any();
        if (o.wanted || needed) {
            std::size_t n = 0;
            if (!capped_count(shape, n))
                return fail(std::string("output '") + name + "' of shape " + shape_string(shape) + " has more than " +
                            std::to_string(kMaxElements) + " elements");
            o.data.assign(n, 0.0f);
        }
        outputs_.push_back(std::move(o));
        return true;
    }

    // The output's buffer, or nullptr when it is neither wanted nor needed.
    float *buffer(const char *name) {
        for (Output &o : outputs_)
            if (o.name == name) return o.data.empty() ? nullptr : o.data.data();
        return nullptr;
    }

    // Every expected tensor must be one the op computes.
    bool expects_known() {
        for (const Tensor &t : c_.tensors) {
            if (t.role != Role::expect) continue;
            bool known = false;
            for (const Output &o : outputs_) known = known || o.name == t.name;
            if (!known) return fail("op " + c_.op + " has no output '" + t.name + "' to compare with");
        }
        return true;
    }

    // Scratch of `bytes` in `buf` (see Aligned), `what` naming it in the refusal.
    bool alloc(std::size_t bytes, Aligned &buf, const char *what = "a workspace") {
        if (buf.reset(bytes)) return true;
        return fail(std::string("the op asks for ") + what + " of " + std::to_string(bytes) + " bytes, over the " +
                    std::to_string(kMaxWorkspaceBytes) + " this runner allows");
    }

    // The op's one workspace of `bytes` (see Aligned).
    bool workspace(std::size_t bytes, void *&ws) {
        if (!alloc(bytes, ws_)) return false;
        ws = ws_.p;
        return true;
    }

    bool status(edgeattn_status s, const char *fn) {
        if (s == EDGEATTN_OK) return true;
        return fail(std::string(fn) + " returned " + std::to_string(static_cast<int>(s)) + " (" +
                    edgeattn_status_str(s) + ")");
    }

    // Workspace bytes of one call for this run's thread count
    // (edgeattn_workspace_size with the one request).
    bool workspace_size(const edgeattn_workspace_request &request, std::size_t &bytes) {
        return status(edgeattn_workspace_size(&request, 1, threads_, &bytes), "edgeattn_workspace_size");
    }

    // Writes the case copy and the wanted outputs, in the order of the
    // expected tensors (or the op's order when nothing is expected).
    void results(Case &out) const {
        out = Case();
        out.version = c_.version;
        out.op = c_.op;
        out.params = c_.params;
        for (const Tensor &t : c_.tensors)
            if (t.role == Role::input) out.tensors.push_back(t);
        if (expects_any()) {
            for (const Tensor &t : c_.tensors)
                if (t.role == Role::expect) add_result(out, *find(t.name));
        } else {
            for (const Output &o : outputs_) add_result(out, o);
        }
    }

private:
    static bool listed(std::initializer_list<const char *> names, const std::string &n) {
        for (const char *x : names)
            if (n == x) return true;
        return false;
    }
    bool expects_any() const {
        for (const Tensor &t : c_.tensors)
            if (t.role == Role::expect) return true;
        return false;
    }
    const Output *find(const std::string &name) const {
        for (const Output &o : outputs_)
            if (o.name == name) return &o;
        return nullptr;
    }
    static void add_result(Case &out, const Output &o) {
        Tensor t;
        t.role = Role::result;
        t.name = o.name;
        t.kind = o.kind;
        t.shape = o.shape;
        t.values.assign(o.data.begin(), o.data.end());
        out.tensors.push_back(std::move(t));
    }

    const Case &c_;
    std::string &err_;
    std::size_t threads_;
    bool packed_weights_;
    std::vector<Output> outputs_;
    Aligned ws_;
};

// queries (B,Q,q), keys (B,K,k), values (B,K,v), as dot-product, additive
// and multi-head attention take them.
struct Qkv {
    std::vector<float> q, k, v;
    edgeattn_attention_dims dims{};
};

bool read_qkv(Runner &r, Qkv &x) {
    Shape sq, sk, sv;
    if (!r.f32("queries", 3, x.q, sq) || !r.f32("keys", 3, x.k, sk) || !r.f32("values", 3, x.v, sv)) return false;
    if (sk[0] != sq[0] || sv[0] != sq[0])
        return r.fail("batch sizes differ: queries " + shape_string(sq) + ", keys " + shape_string(sk) + ", values " +
                      shape_string(sv));
    if (sv[1] != sk[1])
        return r.fail("keys " + shape_string(sk) + " and values " + shape_string(sv) + " differ in K");
    x.dims.batch = sq[0];
    x.dims.queries = sq[1];
    x.dims.keys = sk[1];
    x.dims.query_size = sq[2];
    x.dims.key_size = sk[2];
    x.dims.value_size = sv[2];
    return true;
}

// A weight matrix as a case stores it (FORMAT.md, "Reduced precision"):
// param weight_type 0 (absent): f32; 1: f32 values that are all binary16
// values; 2: i32 in [-127, 127] and NAME_scales f32 (rows).
struct StoredMatrix {
    std::vector<float> f32, scales;
    std::vector<std::int8_t> i8;
    std::vector<std::uint16_t> f16;
    edgeattn_weight_matrix m{};
};

bool read_stored_matrix(Runner &r, const char *name, std::size_t type, const Shape &want, const char *desc,
                        StoredMatrix &s) {
    if (type == EDGEATTN_DTYPE_INT8) {
        std::vector<std::int32_t> q;
        Shape sq;
        if (!r.i32(name, want.size(), q, sq)) return false;
        if (sq != want)
            return r.fail(std::string("input '") + name + "' has shape " + shape_string(sq) + ", expected " + desc +
                          " = " + shape_string(want));
        s.i8.resize(q.size());
        for (std::size_t i = 0; i < q.size(); ++i) {
            if (q[i] < -127 || q[i] > 127)
                return r.fail(std::string("input '") + name + "' holds " + std::to_string(q[i]) +
                              ", outside an int8 weight's [-127, 127]");
            s.i8[i] = static_cast<std::int8_t>(q[i]);
        }
        const std::string scales = std::string(name) + "_scales";
        if (!r.f32_shaped(scales.c_str(), {want[0]}, "(rows)", s.scales)) return false;
        s.m = {EDGEATTN_DTYPE_INT8, s.i8.data(), s.scales.data(), EDGEATTN_ARITHMETIC_FLOAT};
        return true;
    }
    if (!r.f32_shaped(name, want, desc, s.f32)) return false;
    if (type == 0) {
        s.m = {EDGEATTN_DTYPE_F32, s.f32.data(), nullptr, EDGEATTN_ARITHMETIC_FLOAT};
        return true;
    }
    if (type != EDGEATTN_DTYPE_F16) return r.fail("param 'weight_type' must be 0 (f32), 1 (fp16) or 2 (int8)");
    s.f16.resize(s.f32.size());
    std::vector<float> back(s.f32.size());
    if (s.f32.empty() || !r.status(edgeattn_float_to_half(s.f32.size(), s.f32.data(), s.f16.data()),
                                   "edgeattn_float_to_half") ||
        !r.status(edgeattn_half_to_float(s.f16.size(), s.f16.data(), back.data()), "edgeattn_half_to_float"))
        return false;
    if (back != s.f32) return r.fail(std::string("input '") + name + "' holds a value that is not a binary16 value");
    s.m = {EDGEATTN_DTYPE_F16, s.f16.data(), nullptr, EDGEATTN_ARITHMETIC_FLOAT};
    return true;
}

// W_q W_k W_v W_o and, with param bias = 1, b_q b_k b_v b_o; h = num_hiddens.
// The matrices are stored as param weight_type says (0 or absent: fp32).
struct MhaWeights {
    std::vector<float> b_q, b_k, b_v, b_o;
    StoredMatrix W[4];
    std::size_t weight_type = 0;
    edgeattn_weights w{};
    std::vector<float> packed;  // edgeattn_mha_pack's output, when the run packs
};

// Packs m's weights for d when the run asks for packed weights.
bool pack_mha_weights(Runner &r, const edgeattn_attention_dims &d, MhaWeights &m) {
    if (!r.packed_weights()) return true;
    const std::size_t bytes = edgeattn_mha_packed_size(&d, &m.w);
    if (bytes == 0) return r.fail("edgeattn_mha_packed_size gave 0");
    m.packed.assign((bytes + sizeof(float) - 1) / sizeof(float), 0.0f);
    return r.status(edgeattn_mha_pack(&d, &m.w, m.packed.data(), bytes), "edgeattn_mha_pack");
}

// Rows of W_k and W_v: h_kv = H_kv * h / H, or h when d.num_kv_heads is 0
// (plain multi-head attention; the library's num_heads % num_kv_heads check
// is left to the library, which is what a case may test).
bool kv_hiddens(Runner &r, const edgeattn_attention_dims &d, std::size_t &h_kv) {
    if (d.num_kv_heads == 0) {
        h_kv = d.num_hiddens;
        return true;
    }
    if (d.num_heads == 0 || d.num_hiddens % d.num_heads != 0)
        return r.fail("param num_kv_heads needs num_heads = " + std::to_string(d.num_heads) +
                      " to divide num_hiddens = " + std::to_string(d.num_hiddens));
    const std::uint64_t n = static_cast<std::uint64_t>(d.num_kv_heads) * (d.num_hiddens / d.num_heads);
    if (n > kMaxElements)
        return r.fail("num_kv_heads * num_hiddens / num_heads = " + std::to_string(n) + " is over " +
                      std::to_string(kMaxElements));
    h_kv = static_cast<std::size_t>(n);
    return true;
}

// d's weights; W_k, b_k have h_kv rows (kv_hiddens), W_v, b_v hv_kv
// (hv_kv: the value projection's rows, h_kv unless d.value_hiddens is set;
// W_o then has d.value_hiddens columns).
bool read_mha_weights(Runner &r, const edgeattn_attention_dims &d, std::size_t h_kv, MhaWeights &m,
                      std::size_t hv_kv = 0) {
    std::size_t h = d.num_hiddens, bias = 0, hv = d.value_hiddens ? d.value_hiddens : h;
    if (!hv_kv) hv_kv = h_kv;
    if (!r.param("bias", 0, bias)) return false;
    if (bias > 1) return r.fail("param 'bias' must be 0 or 1");
    const bool gqa = h_kv != h;
    if (!r.param("weight_type", 0, m.weight_type) ||
        !read_stored_matrix(r, "W_q", m.weight_type, {h, d.query_size}, "(h,q)", m.W[0]) ||
        !read_stored_matrix(r, "W_k", m.weight_type, {h_kv, d.key_size}, gqa ? "(h_kv,k)" : "(h,k)", m.W[1]) ||
        !read_stored_matrix(r, "W_v", m.weight_type, {hv_kv, d.value_size}, gqa ? "(hv_kv,v)" : "(h,v)", m.W[2]) ||
        !read_stored_matrix(r, "W_o", m.weight_type, {h, hv}, "(h,hv)", m.W[3]))
        return false;
    m.w.W_q = m.W[0].m;
    m.w.W_k = m.W[1].m;
    m.w.W_v = m.W[2].m;
    m.w.W_o = m.W[3].m;
    const char *names[4] = {"b_q", "b_k", "b_v", "b_o"};
    const std::size_t rows[4] = {h, h_kv, hv_kv, h};
    std::vector<float> *vecs[4] = {&m.b_q, &m.b_k, &m.b_v, &m.b_o};
    const float **ptrs[4] = {&m.w.b_q, &m.w.b_k, &m.w.b_v, &m.w.b_o};
    for (int i = 0; i < 4; ++i) {
        if (!bias) {
            if (r.has(names[i])) return r.fail(std::string("input '") + names[i] + "' given with param bias = 0");
            continue;
        }
        if (!r.f32_shaped(names[i], {rows[i]}, rows[i] == h ? "(h)" : "(h_kv)", *vecs[i])) return false;
        *ptrs[i] = vecs[i]->data();
    }
    return true;
}

// The decoder mask inputs: param causal (0/1), input key_ranges i32 (B,2)
// or (B,rows,2), input bias f32 (1 or B, 1 or max_bias_heads, rows, keys);
// rows_desc and keys_desc name rows and keys in messages ("Q", "K").
struct MaskInputs {
    bool present = false; // any of them given
    std::size_t causal = 0;
    std::vector<std::int32_t> ranges;
    Shape ranges_shape;
    std::vector<float> bias;
    Shape bias_shape;
    edgeattn_attention_mask mask{}; // pointing into ranges and bias
};

bool read_mask(Runner &r, std::size_t B, std::size_t rows, const char *rows_desc, std::size_t max_bias_heads,
               std::size_t keys, const char *keys_desc, MaskInputs &mk) {
    const bool has_causal = r.c().find_param("causal") != nullptr;
    if (!r.param("causal", 0, mk.causal)) return false;
    if (mk.causal > 1) return r.fail("param 'causal' must be 0 or 1");
    edgeattn_attention_mask &m = mk.mask;
    m = edgeattn_attention_mask{};
    m.causal = static_cast<std::int32_t>(mk.causal);
    m.ranges_kind = EDGEATTN_KEY_RANGES_NONE;
    mk.present = has_causal;
    if (r.has("key_ranges")) {
        const Tensor *t = r.c().find(Role::input, "key_ranges");
        if (!r.i32("key_ranges", t->shape.size(), mk.ranges, mk.ranges_shape)) return false;
        if (mk.ranges_shape == Shape{B, 2}) m.ranges_kind = EDGEATTN_KEY_RANGES_PER_BATCH;
        else if (mk.ranges_shape == Shape{B, rows, 2}) m.ranges_kind = EDGEATTN_KEY_RANGES_PER_QUERY;
        else
            return r.fail("input 'key_ranges' has shape " + shape_string(mk.ranges_shape) + ", expected (B,2) = " +
                          shape_string({B, 2}) + " or (B," + rows_desc + ",2) = " + shape_string({B, rows, 2}));
        m.key_ranges = mk.ranges.data();
        mk.present = true;
    }
    if (r.has("bias")) {
        if (!r.f32("bias", 4, mk.bias, mk.bias_shape)) return false;
        const Shape &s = mk.bias_shape;
        if ((s[0] != 1 && s[0] != B) || (s[1] != 1 && s[1] != max_bias_heads) || s[2] != rows || s[3] != keys)
            return r.fail("input 'bias' has shape " + shape_string(s) + ", expected (1 or B, " +
                          (max_bias_heads == 1 ? std::string("1") : std::string("1 or H")) + ", " + rows_desc +
                          ", " + keys_desc + ") with B = " + std::to_string(B) + ", H = " +
                          std::to_string(max_bias_heads) + ", " + rows_desc + " = " + std::to_string(rows) + ", " +
                          keys_desc + " = " + std::to_string(keys));
        m.bias = mk.bias.data();
        m.bias_batch = s[0];
        m.bias_heads = s[1];
        m.bias_keys = s[3];
        mk.present = true;
    }
    return true;
}

// ONNX Attention's score options (FORMAT.md, "Score options"): params
// mask_window, right_window, alignment (0..2), masking (0..1),
// weights_output (0..3); input score_options f32 (3) = scale, softcap,
// alibi_max_bias. Absent: 0, d2l's behaviour.
bool read_score_options(Runner &r, edgeattn_attention_options &o) {
    std::size_t window = 0, right = 0, alignment = 0, masking = 0, weights_output = 0;
    if (!r.param("mask_window", 0, window) || !r.param("right_window", 0, right) ||
        !r.param("alignment", 0, alignment) || !r.param("masking", 0, masking) ||
        !r.param("weights_output", 0, weights_output))
        return false;
    if (alignment > 2 || masking > 1 || weights_output > 3)
        return r.fail("params alignment 0..2, masking 0..1 and weights_output 0..3");
    o.mask.window = window;
    o.mask.right_window = right;
    o.mask.alignment = static_cast<edgeattn_query_alignment>(alignment);
    o.masking = static_cast<edgeattn_masking>(masking);
    o.weights_output = static_cast<edgeattn_weights_output>(weights_output);
    if (r.has("score_options")) {
        std::vector<float> v;
        Shape s;
        if (!r.f32("score_options", 1, v, s)) return false;
        if (s != Shape{3}) return r.fail("input 'score_options' must be (3): scale, softcap, alibi_max_bias");
        o.scale = v[0];
        o.softcap = v[1];
        o.mask.alibi_max_bias = v[2];
    }
    return true;
}

bool run_masked_softmax(Runner &r) {
    std::vector<float> X;
    Shape s;
    std::vector<std::int32_t> lens;
    edgeattn_valid_lens vl;
    if (!r.allow({"X", "valid_lens"}, {}) || !r.f32("X", 3, X, s) || !r.valid_lens(s[0], s[1], lens, vl) ||
        !r.output("Y", s, true) || !r.expects_known())
        return false;
    edgeattn_softmax_dims dims{s[0], s[1], s[2]};
    return r.status(edgeattn_masked_softmax(&dims, X.data(), &vl, r.buffer("Y")), "edgeattn_masked_softmax");
}

// The part every attention op shares once its inputs are read:
// valid_lens (B) or (B,Q) into the call's options, output
// (B,Q,out_features), the optional attention_weights of `weights_shape`,
// and the workspace edgeattn_workspace_size gives `op` for d.
struct AttentionCall {
    std::vector<std::int32_t> lens;
    edgeattn_attention_options options{};
    void *ws = nullptr;
    std::size_t bytes = 0;
};

bool prepare_attention(Runner &r, const edgeattn_attention_dims &d, edgeattn_op op, std::size_t out_features,
                       const Shape &weights_shape, AttentionCall &c) {
    return r.valid_lens(d.batch, d.queries, c.lens, c.options.valid_lens) &&
           r.output("output", {d.batch, d.queries, out_features}, true) &&
           r.output("attention_weights", weights_shape, false) && r.expects_known() &&
           r.workspace_size(test_calls::request(op, d), c.bytes) && r.workspace(c.bytes, c.ws);
}

bool run_dot_product(Runner &r) {
    Qkv x;
    AttentionCall c;
    MaskInputs mk;
    if (!r.allow({"queries", "keys", "values", "valid_lens", "key_ranges", "bias", "score_options"},
                 {"causal", "mask_window", "right_window", "alignment", "masking", "weights_output"}) ||
        !read_qkv(r, x))
        return false;
    const edgeattn_attention_dims &d = x.dims;
    if (!read_mask(r, d.batch, d.queries, "Q", 1, d.keys, "K", mk) ||
        !prepare_attention(r, d, EDGEATTN_OP_SDPA, d.value_size, {d.batch, d.queries, d.keys}, c))
        return false;
    c.options.mask = mk.mask;
    if (!read_score_options(r, c.options)) return false;
    return r.status(edgeattn_sdpa(&d, x.q.data(), x.k.data(), x.v.data(), &c.options, c.ws, c.bytes,
                                  r.buffer("output"), r.buffer("attention_weights")),
                    "edgeattn_sdpa");
}

bool run_additive(Runner &r) {
    Qkv x;
    AttentionCall c;
    StoredMatrix W_q, W_k, w_v;
    std::size_t type = 0;
    if (!r.allow({"queries", "keys", "values", "valid_lens", "W_q", "W_k", "w_v", "W_q_scales", "W_k_scales"},
                 {"num_hiddens", "weight_type"}) ||
        !read_qkv(r, x) || !r.param("num_hiddens", -1, x.dims.num_hiddens) || !r.param("weight_type", 0, type))
        return false;
    const edgeattn_attention_dims &d = x.dims;
    const std::size_t h = d.num_hiddens;
    // weight_type stores W_q and W_k; w_v, the (1,h) scoring row, is f32.
    if (!read_stored_matrix(r, "W_q", type, {h, d.query_size}, "(h,q)", W_q) ||
        !read_stored_matrix(r, "W_k", type, {h, d.key_size}, "(h,k)", W_k) ||
        !read_stored_matrix(r, "w_v", 0, {1, h}, "(1,h)", w_v) ||
        !prepare_attention(r, d, EDGEATTN_OP_ADDITIVE, d.value_size, {d.batch, d.queries, d.keys}, c))
        return false;
    edgeattn_weights w{};
    w.W_q = W_q.m;
    w.W_k = W_k.m;
    w.W_v = w_v.m;
    return r.status(edgeattn_additive(&d, x.q.data(), x.k.data(), x.v.data(), &w, &c.options, c.ws, c.bytes,
                                      r.buffer("output"), r.buffer("attention_weights")),
                    "edgeattn_additive");
}

// Masks (causal, key_ranges, bias) and valid_lens in the options;
// grouped-query heads with param num_kv_heads; value heads of their own
// width with param value_hiddens (hv); no projections with param
// projection_free = 1 (every matrix EDGEATTN_DTYPE_NONE, output the heads
// (B,Q,hv)); with packed weights through edgeattn_mha_pack +
// edgeattn_mha_packed (a projection-free case runs unpacked: packed
// weights hold matrices).
bool run_multi_head(Runner &r) {
    Qkv x;
    MhaWeights m;
    AttentionCall c;
    MaskInputs mk;
    std::size_t h_kv = 0, projection_free = 0;
    if (!r.allow({"queries", "keys", "values", "valid_lens", "W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o",
                  "key_ranges", "bias", "W_q_scales", "W_k_scales", "W_v_scales", "W_o_scales", "score_options"},
                 {"num_hiddens", "num_heads", "bias", "num_kv_heads", "causal", "weight_type", "mask_window",
                  "right_window", "alignment", "masking", "weights_output", "value_hiddens", "projection_free"}) ||
        !read_qkv(r, x) || !r.param("num_hiddens", -1, x.dims.num_hiddens) ||
        !r.param("num_heads", -1, x.dims.num_heads) || !r.param("num_kv_heads", 0, x.dims.num_kv_heads) ||
        !r.param("value_hiddens", 0, x.dims.value_hiddens) || !r.param("projection_free", 0, projection_free) ||
        !kv_hiddens(r, x.dims, h_kv))
        return false;
    if (projection_free > 1) return r.fail("param 'projection_free' must be 0 or 1");
    const edgeattn_attention_dims &d = x.dims;
    const std::size_t hv = d.value_hiddens ? d.value_hiddens : d.num_hiddens;
    if (d.num_heads == 0 || hv % d.num_heads != 0 || hv > kMaxElements)
        return r.fail("param value_hiddens must be a multiple of num_heads");
    const std::size_t hv_kv = (d.num_kv_heads ? d.num_kv_heads : d.num_heads) * (hv / d.num_heads);
    if (projection_free) {
        for (const char *n : {"W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"})
            if (r.has(n)) return r.fail(std::string("input '") + n + "' given with param projection_free = 1");
        m.w.W_q.type = m.w.W_k.type = m.w.W_v.type = m.w.W_o.type = EDGEATTN_DTYPE_NONE;
    } else if (!read_mha_weights(r, x.dims, h_kv, m, hv_kv)) {
        return false;
    }
    if (!read_mask(r, d.batch, d.queries, "Q", d.num_heads, d.keys, "K", mk) ||
        !prepare_attention(r, d, EDGEATTN_OP_MHA, projection_free ? hv : d.num_hiddens,
                           {d.batch, d.num_heads, d.queries, d.keys}, c))
        return false;
    if (!projection_free && !pack_mha_weights(r, d, m)) return false;
    c.options.mask = mk.mask;
    if (!read_score_options(r, c.options)) return false;
    if (r.packed_weights() && !projection_free)
        return r.status(edgeattn_mha_packed(&d, x.q.data(), x.k.data(), x.v.data(), m.packed.data(),
                                            m.packed.size() * sizeof(float), &c.options, c.ws, c.bytes,
                                            r.buffer("output"), r.buffer("attention_weights")),
                        "edgeattn_mha_packed");
    return r.status(edgeattn_mha(&d, x.q.data(), x.k.data(), x.v.data(), &m.w, &c.options, c.ws, c.bytes,
                                 r.buffer("output"), r.buffer("attention_weights")),
                    "edgeattn_mha");
}

// Y = X + P[:n] with P (max_len, d) from the library's table; X, Y (B,n,d).
bool add_positional_encoding(Runner &r, const Shape &s, const std::vector<float> &X, std::size_t max_len,
                             float *P, float *Y) {
    return r.status(edgeattn_positional_encoding_table(max_len, s[2], P), "edgeattn_positional_encoding_table") &&
           r.status(edgeattn_positional_encoding_add_at(s[0], s[1], s[2], 0, X.data(), P, max_len, Y),
                    "edgeattn_positional_encoding_add_at");
}

bool run_positional_encoding(Runner &r) {
    std::vector<float> X;
    Shape s;
    std::size_t max_len = 0;
    if (!r.allow({"X"}, {"max_len"}) || !r.f32("X", 3, X, s) || !r.param("max_len", -1, max_len) ||
        !r.output("output", s, true) || !r.output("P", {max_len, s[2]}, true) || !r.expects_known())
        return false;
    return add_positional_encoding(r, s, X, max_len, r.buffer("P"), r.buffer("output"));
}

// d2l's Transformer input: MHA(X+P, X+P, X+P) with X (B,n,d), h = d:
// edgeattn_mha (or edgeattn_mha_packed) with X+P as queries, keys and values.
bool run_self_attention(Runner &r) {
    std::vector<float> X;
    Shape s;
    std::size_t max_len = 0;
    edgeattn_attention_dims d{};
    if (!r.allow({"X", "valid_lens", "W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"},
                 {"num_hiddens", "num_heads", "bias", "max_len"}) ||
        !r.f32("X", 3, X, s) || !r.param("max_len", -1, max_len) || !r.param("num_heads", -1, d.num_heads) ||
        !r.param("num_hiddens", static_cast<long long>(s[2]), d.num_hiddens))
        return false;
    if (d.num_hiddens != s[2])
        return r.fail("param num_hiddens = " + std::to_string(d.num_hiddens) + " differs from d = " +
                      std::to_string(s[2]) + " of X " + shape_string(s));
    d.batch = s[0];
    d.queries = d.keys = s[1];
    d.query_size = d.key_size = d.value_size = s[2];
    MhaWeights m;
    AttentionCall c;
    std::size_t np = 0, nx = 0;
    if (!read_mha_weights(r, d, d.num_hiddens, m) ||
        !prepare_attention(r, d, EDGEATTN_OP_MHA, d.num_hiddens, {d.batch, d.num_heads, d.queries, d.keys}, c))
        return false;
    if (!capped_count({max_len, s[2]}, np) || !capped_count(s, nx))
        return r.fail("param max_len = " + std::to_string(max_len) + " makes the table too large");
    std::vector<float> P(np), Xp(nx);
    if (!add_positional_encoding(r, s, X, max_len, P.data(), Xp.data()) || !pack_mha_weights(r, d, m)) return false;
    if (r.packed_weights())
        return r.status(edgeattn_mha_packed(&d, Xp.data(), Xp.data(), Xp.data(), m.packed.data(),
                                            m.packed.size() * sizeof(float), &c.options, c.ws, c.bytes,
                                            r.buffer("output"), r.buffer("attention_weights")),
                        "edgeattn_mha_packed");
    return r.status(edgeattn_mha(&d, Xp.data(), Xp.data(), Xp.data(), &m.w, &c.options, c.ws, c.bytes,
                                 r.buffer("output"), r.buffer("attention_weights")),
                    "edgeattn_mha");
}

// torch.nn.Linear: y (rows,out) = x (rows,in) W^T + b, W (out,in), b (out)
// optional, through edgeattn_dense; with packed weights through
// edgeattn_dense_pack + edgeattn_dense_packed.
bool run_linear(Runner &r) {
    std::vector<float> x, b;
    Shape sx;
    std::size_t type = 0;
    if (!r.allow({"x", "W", "W_scales", "b"}, {"weight_type"}) || !r.param("weight_type", 0, type) ||
        !r.f32("x", 2, x, sx))
        return false;
    const Tensor *tw = r.c().find(Role::input, "W");
    if (!tw) return r.fail("op linear needs input tensor 'W'");
    if (tw->shape.size() != 2) return r.fail("input 'W' must have rank 2, has shape " + shape_string(tw->shape));
    if (tw->shape[1] != sx[1])
        return r.fail("W (out,in) = " + shape_string(tw->shape) + " and x (rows,in) = " + shape_string(sx) +
                      " differ in in_features");
    edgeattn_dense_dims d{sx[0], sx[1], tw->shape[0]};
    StoredMatrix W;
    if (!read_stored_matrix(r, "W", type, {d.out_features, d.in_features}, "(out,in)", W)) return false;
    const bool has_b = r.has("b");
    if (has_b && !r.f32_shaped("b", {d.out_features}, "(out)", b)) return false;
    const float *bp = has_b ? b.data() : nullptr;
    if (!r.output("y", {d.rows, d.out_features}, true) || !r.expects_known()) return false;
    if (r.packed_weights()) {
        const std::size_t bytes = edgeattn_dense_packed_size(&d, &W.m);
        if (bytes == 0) return r.fail("edgeattn_dense_packed_size gave 0");
        Aligned packed;
        return r.alloc(bytes, packed, "packed weights") &&
               r.status(edgeattn_dense_pack(&d, &W.m, bp, packed.p, bytes), "edgeattn_dense_pack") &&
               r.status(edgeattn_dense_packed(&d, x.data(), packed.p, bytes, r.buffer("y")), "edgeattn_dense_packed");
    }
    edgeattn_workspace_request request{};
    request.op = EDGEATTN_OP_DENSE;
    request.dense = d;
    void *ws = nullptr;
    std::size_t bytes = 0;
    if (!r.workspace_size(request, bytes) || !r.workspace(bytes, ws)) return false;
    return r.status(edgeattn_dense(&d, x.data(), &W.m, bp, ws, bytes, r.buffer("y")), "edgeattn_dense");
}

// RoPE params (FORMAT.md, "RoPE and window caches"): rope_dims (0 or absent:
// none), rope_layout (0 NeoX, 1 GPT-J), rope_theta (0: 10000), rope_scale
// (0: 1), rope_max_positions; the table made by edgeattn_rope_table.
struct RopeInputs {
    std::vector<float> table;
    edgeattn_rope rope{};  // table NULL: none; positions set per call
};

bool read_rope(Runner &r, RopeInputs &ri) {
    std::size_t dims = 0, layout = 0, theta = 0, scale = 0, max_positions = 0;
    if (!r.param("rope_dims", 0, dims) || !r.param("rope_layout", 0, layout) || !r.param("rope_theta", 0, theta) ||
        !r.param("rope_scale", 0, scale) || !r.param("rope_max_positions", 0, max_positions))
        return false;
    if (dims == 0) {
        for (const char *key : {"rope_layout", "rope_theta", "rope_scale", "rope_max_positions"})
            if (r.c().find_param(key)) return r.fail(std::string("param '") + key + "' given without rope_dims");
        return true;
    }
    std::size_t n = 0;
    if (!capped_count({max_positions, dims}, n))
        return r.fail("the RoPE table (rope_max_positions, rope_dims) has more than " + std::to_string(kMaxElements) +
                      " elements");
    const edgeattn_rope_table_config config{max_positions, dims, static_cast<double>(theta),
                                            static_cast<double>(scale)};
    ri.table.assign(n ? n : 1, 0.0f);
    if (!r.status(edgeattn_rope_table(&config, ri.table.data(), n), "edgeattn_rope_table")) return false;
    ri.rope.table = ri.table.data();
    ri.rope.max_positions = max_positions;
    ri.rope.rotary_dims = dims;
    ri.rope.layout = static_cast<edgeattn_rope_layout>(layout);  // any int: the library checks it
    return true;
}

// Y = RoPE(X) (FORMAT.md, "RoPE and window caches"): X (B,T,heads,head_size),
// positions i32 (B) optional, through edgeattn_rope_apply.
bool run_rope_apply(Runner &r) {
    std::vector<float> X;
    Shape sx;
    RopeInputs ri;
    if (!r.allow({"X", "positions"}, {"rope_dims", "rope_layout", "rope_theta", "rope_scale", "rope_max_positions"}) ||
        !r.f32("X", 4, X, sx) || !read_rope(r, ri))
        return false;
    if (!ri.rope.table) return r.fail("op rope_apply needs param 'rope_dims'");
    std::vector<std::int32_t> positions;
    if (r.has("positions")) {
        Shape sp;
        if (!r.i32("positions", 1, positions, sp)) return false;
        if (sp != Shape{sx[0]})
            return r.fail("input 'positions' has shape " + shape_string(sp) + ", expected (B) = " +
                          shape_string({sx[0]}));
        ri.rope.positions = positions.data();
    }
    const edgeattn_rope_dims dims{sx[0], sx[1], sx[2], sx[3]};
    if (!r.output("Y", sx, true) || !r.expects_known()) return false;
    return r.status(edgeattn_rope_apply(&dims, &ri.rope, X.data(), r.buffer("Y")), "edgeattn_rope_apply");
}

// Self-attention decoding over a KV cache (FORMAT.md, "Decoding"): X (B,T,d) fed
// in steps of chunks[s] tokens; before step s every batch element is
// truncated to truncate[s] (when >= 0); the step stores its tokens
// (edgeattn_kv_cache_store) and attends with causal = 1 plus its rows of
// key_ranges and bias (edgeattn_kv_cache_attend). A step the cache has
// no room for (EDGEATTN_ERR_CACHE_FULL) gets chunk_status -16 and is
// skipped; `output` holds the accepted steps' tokens in feed order.
bool run_kv_cache_decode(Runner &r) {
    std::vector<float> X;
    Shape sx;
    edgeattn_attention_dims d{};
    std::size_t capacity = 0;
    if (!r.allow({"X", "chunks", "truncate", "W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o", "key_ranges",
                  "bias", "W_q_scales", "W_k_scales", "W_v_scales", "W_o_scales", "rope_offset"},
                 {"num_hiddens", "num_heads", "num_kv_heads", "bias", "capacity", "weight_type", "cache_type", "window",
                  "sinks", "rope_dims", "rope_layout", "rope_theta", "rope_scale", "rope_max_positions", "mask_window",
                  "projection_free", "value_hiddens"}) ||
        !r.f32("X", 3, X, sx) || !r.param("num_hiddens", -1, d.num_hiddens) ||
        !r.param("num_heads", -1, d.num_heads) || !r.param("num_kv_heads", 0, d.num_kv_heads) ||
        !r.param("capacity", -1, capacity) || !r.param("value_hiddens", 0, d.value_hiddens))
        return false;
    const std::size_t B = sx[0], T = sx[1], dm = sx[2], h = d.num_hiddens, H = d.num_heads;
    if (H == 0 || h % H != 0)
        return r.fail("param num_heads = " + std::to_string(H) + " must be positive and divide num_hiddens = " +
                      std::to_string(h));
    // Value heads of their own width: hv = value_hiddens (0: h), dv = hv / H.
    const std::size_t hv = d.value_hiddens ? d.value_hiddens : h;
    if (hv % H != 0 || hv > kMaxElements) return r.fail("param value_hiddens must be a multiple of num_heads");
    const std::size_t H_kv = d.num_kv_heads ? d.num_kv_heads : H, head_size = h / H, value_head = hv / H;
    d.batch = B;
    d.keys = capacity;
    d.query_size = d.key_size = d.value_size = dm;
    MhaWeights m;
    std::size_t h_kv = 0, projection_free = 0;
    if (!kv_hiddens(r, d, h_kv) || !r.param("projection_free", 0, projection_free)) return false;
    if (projection_free > 1) return r.fail("param 'projection_free' must be 0 or 1");
    if (projection_free && hv != h) return r.fail("param value_hiddens given with param projection_free = 1");
    if (projection_free) {
        // X holds the projected rows: queries = keys = values (so h_kv = h),
        // and the output is the concatenated heads. No weights to read or pack.
        for (const char *n : {"W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"})
            if (r.has(n)) return r.fail(std::string("input '") + n + "' given with param projection_free = 1");
        const edgeattn_weight_matrix none{EDGEATTN_DTYPE_NONE, nullptr, nullptr, EDGEATTN_ARITHMETIC_FLOAT};
        m.w.W_q = m.w.W_k = m.w.W_v = m.w.W_o = none;
    } else if (!read_mha_weights(r, d, h_kv, m, H_kv * value_head)) {
        return false;
    }
    const bool packed = r.packed_weights() && !projection_free;

    // RoPE (its table), per batch element offsets rope_offset i32 (B).
    RopeInputs ri;
    std::vector<std::int32_t> rope_offset, rope_start(B);
    if (!read_rope(r, ri)) return false;
    if (r.has("rope_offset")) {
        Shape so;
        if (!ri.rope.table) return r.fail("input 'rope_offset' given without param rope_dims");
        if (!r.i32("rope_offset", 1, rope_offset, so)) return false;
        if (so != Shape{B})
            return r.fail("input 'rope_offset' has shape " + shape_string(so) + ", expected (B) = " +
                          shape_string({B}));
    }

    // The steps: chunks > 0 summing to T, truncate -1 or a length.
    std::vector<std::int32_t> chunks, trunc;
    Shape sc, st;
    if (!r.i32("chunks", 1, chunks, sc)) return false;
    const std::size_t S = chunks.size();
    if (S == 0) return r.fail("input 'chunks' is empty: a decode needs at least one step");
    std::uint64_t sum = 0;
    std::size_t n_max = 0;
    for (std::size_t s = 0; s < S; ++s) {
        if (chunks[s] <= 0)
            return r.fail("chunks[" + std::to_string(s) + "] = " + std::to_string(chunks[s]) +
                          ": every step feeds at least one token");
        sum += static_cast<std::uint64_t>(chunks[s]);
        if (static_cast<std::size_t>(chunks[s]) > n_max) n_max = static_cast<std::size_t>(chunks[s]);
    }
    if (sum != T)
        return r.fail("input 'chunks' sums to " + std::to_string(sum) + " tokens but X " + shape_string(sx) +
                      " has T = " + std::to_string(T));
    if (r.has("truncate")) {
        if (!r.i32("truncate", 1, trunc, st)) return false;
        if (st != sc)
            return r.fail("input 'truncate' has shape " + shape_string(st) + ", expected (S) = " + shape_string(sc));
        for (std::size_t s = 0; s < S; ++s)
            if (trunc[s] < -1)
                return r.fail("truncate[" + std::to_string(s) + "] = " + std::to_string(trunc[s]) +
                              " is neither -1 (none) nor a length");
    } else {
        trunc.assign(S, -1);
    }

    // key_ranges (B,2) or (B,T,2) and bias (Bb,Hb,T,capacity), rows by token.
    MaskInputs mk;
    if (!read_mask(r, B, T, "T", H, capacity, "capacity", mk)) return false;
    const bool per_query = mk.mask.ranges_kind == EDGEATTN_KEY_RANGES_PER_QUERY;
    const std::size_t Bb = mk.bias_shape.empty() ? 0 : mk.bias_shape[0];
    const std::size_t Hb = mk.bias_shape.empty() ? 0 : mk.bias_shape[1];

    // Buffers, all within kMaxElements floats: X of a step, a step's output,
    // the outputs of all accepted tokens (at most B*T*h), a step's mask rows.
    std::size_t n_out = 0, n_xs = 0, n_ys = 0, n_bias = 0;
    if (!capped_count({B, T, h}, n_out) || !capped_count({B, n_max, dm}, n_xs) || !capped_count({B, n_max, h}, n_ys) ||
        (Bb && !capped_count({Bb, Hb, n_max, capacity}, n_bias)))
        return r.fail("the decode's buffers have more than " + std::to_string(kMaxElements) + " elements");
    std::vector<float> out_all(n_out), xs(n_xs), ys(n_ys), step_bias(n_bias);
    std::vector<std::int32_t> step_ranges(per_query ? B * n_max * 2 : 0);

    // The cache, fp32 or (param cache_type, FORMAT.md "Reduced precision") int8 / fp16.
    std::size_t cache_type = 0;
    if (!r.param("cache_type", 0, cache_type)) return false;
    if (cache_type > EDGEATTN_DTYPE_INT8) return r.fail("param 'cache_type' must be 0 (f32), 1 (fp16) or 2 (int8)");
    std::size_t window = 0, sinks = 0, mask_window = 0;
    if (!r.param("window", 0, window) || !r.param("sinks", 0, sinks) || !r.param("mask_window", 0, mask_window))
        return false;
    const edgeattn_kv_cache_config config{B, H_kv, head_size, capacity, static_cast<edgeattn_dtype>(cache_type),
                                          window, sinks, value_head};
    const std::size_t cache_bytes = edgeattn_kv_cache_memory_size(&config);
    if (cache_bytes == 0)
        return r.fail("edgeattn_kv_cache_memory_size(batch " + std::to_string(B) + ", kv heads " +
                      std::to_string(H_kv) + ", head size " + std::to_string(head_size) + ", capacity " +
                      std::to_string(capacity) + ", window " + std::to_string(window) + ", sinks " +
                      std::to_string(sinks) + ") gave 0");
    Aligned cache_mem, store_ws, attend_ws;
    edgeattn_kv_cache cache{};
    if (!r.alloc(cache_bytes, cache_mem, "a KV cache") ||
        !r.status(edgeattn_kv_cache_setup(&cache, &config, cache_mem.p, cache_bytes), "edgeattn_kv_cache_setup"))
        return false;
    if (packed && !pack_mha_weights(r, d, m)) return false;
    const std::size_t packed_bytes = m.packed.size() * sizeof(float);
    // A call's rope: the stream position (the cache's own, when no offset is
    // given) plus rope_offset[b] for its first token.
    auto rope_for = [&](std::size_t first_back) {
        edgeattn_rope rope = ri.rope;
        if (rope.table && !rope_offset.empty()) {
            for (std::size_t b = 0; b < B; ++b)
                rope_start[b] = cache.positions[b] - static_cast<std::int32_t>(first_back) + rope_offset[b];
            rope.positions = rope_start.data();
        }
        return rope;
    };

    std::vector<float> status(S, 0.0f);
    std::size_t t0 = 0, t_ok = 0;
    for (std::size_t s = 0; s < S; t0 += static_cast<std::size_t>(chunks[s]), ++s) {
        const std::size_t n = static_cast<std::size_t>(chunks[s]);
        if (trunc[s] >= 0)
            for (std::size_t b = 0; b < B; ++b)
                if (!r.status(edgeattn_kv_cache_truncate(&cache, b, static_cast<std::size_t>(trunc[s])),
                              "edgeattn_kv_cache_truncate"))
                    return false;
        for (std::size_t b = 0; b < B; ++b)
            std::copy(X.begin() + static_cast<std::ptrdiff_t>((b * T + t0) * dm),
                      X.begin() + static_cast<std::ptrdiff_t>((b * T + t0 + n) * dm),
                      xs.begin() + static_cast<std::ptrdiff_t>(b * n * dm));
        edgeattn_attention_dims ds = d;
        ds.queries = n;

        std::size_t store_bytes = 0;
        if (!r.workspace_size(test_calls::request(EDGEATTN_OP_KV_CACHE_STORE, ds, n), store_bytes)) return false;
        if (store_bytes > store_ws.bytes || !store_ws.p)
            if (!r.alloc(store_bytes, store_ws)) return false;
        edgeattn_attention_options store_options{};
        store_options.rope = rope_for(0);
        const edgeattn_status a =
            packed
                ? edgeattn_kv_cache_store_packed(&cache, &ds, n, xs.data(), xs.data(), m.packed.data(), packed_bytes,
                                                 &store_options, store_ws.p, store_ws.bytes)
                : edgeattn_kv_cache_store(&cache, &ds, n, xs.data(), xs.data(), &m.w, &store_options, store_ws.p,
                                          store_ws.bytes);
        if (a == EDGEATTN_ERR_CACHE_FULL) {
            status[s] = static_cast<float>(EDGEATTN_ERR_CACHE_FULL);
            continue;
        }
        if (!r.status(a, packed ? "edgeattn_kv_cache_store_packed" : "edgeattn_kv_cache_store")) return false;

        edgeattn_attention_options options{};
        options.rope = rope_for(n);
        edgeattn_attention_mask &mask = options.mask;
        mask = mk.mask;
        mask.causal = 1;
        mask.window = mask_window;
        if (per_query) {
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t i = 0; i < n; ++i)
                    for (std::size_t e = 0; e < 2; ++e)
                        step_ranges[(b * n + i) * 2 + e] = mk.ranges[(b * T + t0 + i) * 2 + e];
            mask.key_ranges = step_ranges.data();
        }
        if (Bb) {
            for (std::size_t bh = 0; bh < Bb * Hb; ++bh)
                for (std::size_t i = 0; i < n; ++i)
                    std::copy(mk.bias.begin() + static_cast<std::ptrdiff_t>((bh * T + t0 + i) * capacity),
                              mk.bias.begin() + static_cast<std::ptrdiff_t>((bh * T + t0 + i + 1) * capacity),
                              step_bias.begin() + static_cast<std::ptrdiff_t>((bh * n + i) * capacity));
            mask.bias = step_bias.data();
            mask.bias_keys = capacity;
        }
        std::size_t attend_bytes = 0;
        if (!r.workspace_size(test_calls::request(EDGEATTN_OP_KV_CACHE_ATTEND, ds), attend_bytes)) return false;
        if (attend_bytes > attend_ws.bytes || !attend_ws.p)
            if (!r.alloc(attend_bytes, attend_ws)) return false;
        const edgeattn_status q =
            packed
                ? edgeattn_kv_cache_attend_packed(&cache, &ds, xs.data(), m.packed.data(), packed_bytes, &options,
                                                  attend_ws.p, attend_ws.bytes, ys.data(), nullptr)
                : edgeattn_kv_cache_attend(&cache, &ds, xs.data(), &m.w, &options, attend_ws.p, attend_ws.bytes,
                                           ys.data(), nullptr);
        if (!r.status(q, packed ? "edgeattn_kv_cache_attend_packed" : "edgeattn_kv_cache_attend")) return false;
        for (std::size_t b = 0; b < B; ++b)
            std::copy(ys.begin() + static_cast<std::ptrdiff_t>(b * n * h),
                      ys.begin() + static_cast<std::ptrdiff_t>((b + 1) * n * h),
                      out_all.begin() + static_cast<std::ptrdiff_t>((b * T + t_ok) * h));
        t_ok += n;
    }

    // The outputs, now that T_ok is known: (B,T,h) rows compacted to (B,T_ok,h).
    if (!r.output("chunk_status", {S}, true, Kind::i32) || !r.output("output", {B, t_ok, h}, true) ||
        !r.expects_known())
        return false;
    std::copy(status.begin(), status.end(), r.buffer("chunk_status"));
    if (float *y = r.buffer("output"))
        for (std::size_t b = 0; b < B; ++b)
            std::copy(out_all.begin() + static_cast<std::ptrdiff_t>(b * T * h),
                      out_all.begin() + static_cast<std::ptrdiff_t>((b * T + t_ok) * h), y + b * t_ok * h);
    return true;
}

} // namespace

bool run_case(const Case &in, Case &out, std::string &err, std::size_t max_threads, bool packed_weights) {
    Runner r(in, err, max_threads ? max_threads : default_max_threads(), packed_weights);
    bool ok;
    if (in.op == "masked_softmax") ok = run_masked_softmax(r);
    else if (in.op == "dot_product_attention") ok = run_dot_product(r);
    else if (in.op == "additive_attention") ok = run_additive(r);
    else if (in.op == "multi_head_attention") ok = run_multi_head(r);
    else if (in.op == "positional_encoding") ok = run_positional_encoding(r);
    else if (in.op == "self_attention") ok = run_self_attention(r);
    else if (in.op == "linear") ok = run_linear(r);
    else if (in.op == "kv_cache_decode") ok = run_kv_cache_decode(r);
    else if (in.op == "rope_apply") ok = run_rope_apply(r);
    else return r.fail("unsupported op '" + in.op + "'");
    if (ok) r.results(out);
    return ok;
}

} // namespace edgeattn_conform
