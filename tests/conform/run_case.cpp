// Maps a case file onto the C API calls; see run_case.hpp. Shapes are in
// d2l's (batch, queries, keys) notation: B, Q, K; q, k, v the feature sizes
// of a query, key and value; h = num_hiddens; H = num_heads.
#include "run_case.hpp"

#include <edgeattn/edgeattn.h>

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
    bool wanted = false;     // the case expects it (or expects nothing)
    std::vector<float> data; // allocated when wanted or the call needs it
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
    bool output(const char *name, const Shape &shape, bool needed) {
        const Tensor *e = c_.find(Role::expect, name);
        if (e && e->shape != shape)
            return fail(std::string("expected tensor '") + name + "' has shape " + shape_string(e->shape) +
                        " but op " + c_.op + " computes " + shape_string(shape));
        Output o;
        o.name = name;
        o.shape = shape;
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

    // Scratch of `bytes`, 64-byte aligned; never a null pointer. Left
    // uninitialised (the API ignores its contents), so pages the library
    // does not touch cost no memory.
    bool workspace(std::size_t bytes, void *&ws) {
        if (bytes > kMaxWorkspaceBytes)
            return fail("the op asks for a workspace of " + std::to_string(bytes) + " bytes, over the " +
                        std::to_string(kMaxWorkspaceBytes) + " this runner allows");
        ws_.reset(new unsigned char[bytes + 64]);
        std::uintptr_t p = reinterpret_cast<std::uintptr_t>(ws_.get());
        ws = ws_.get() + ((64 - p % 64) % 64);
        return true;
    }

    bool status(edgeattn_status s, const char *fn) {
        if (s == EDGEATTN_OK) return true;
        return fail(std::string(fn) + " returned " + std::to_string(static_cast<int>(s)) + " (" +
                    edgeattn_status_str(s) + ")");
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
        t.kind = Kind::f32;
        t.shape = o.shape;
        t.values.assign(o.data.begin(), o.data.end());
        out.tensors.push_back(std::move(t));
    }

    const Case &c_;
    std::string &err_;
    std::size_t threads_;
    bool packed_weights_;
    std::vector<Output> outputs_;
    std::unique_ptr<unsigned char[]> ws_;
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

// W_q W_k W_v W_o and, with param bias = 1, b_q b_k b_v b_o; h = num_hiddens.
struct MhaWeights {
    std::vector<float> W_q, W_k, W_v, W_o, b_q, b_k, b_v, b_o;
    edgeattn_mha_weights w{};
    std::vector<float> packed;  // edgeattn_mha_pack_weights' output, when the run packs
};

// Packs m's weights for d when the run asks for packed weights.
bool pack_mha_weights(Runner &r, const edgeattn_attention_dims &d, MhaWeights &m) {
    if (!r.packed_weights()) return true;
    const std::size_t bytes = edgeattn_mha_packed_weights_size(&d);
    if (bytes == 0) return r.fail("edgeattn_mha_packed_weights_size gave 0");
    m.packed.assign((bytes + sizeof(float) - 1) / sizeof(float), 0.0f);
    return r.status(edgeattn_mha_pack_weights(&d, &m.w, m.packed.data(), bytes), "edgeattn_mha_pack_weights");
}

bool read_mha_weights(Runner &r, const edgeattn_attention_dims &d, MhaWeights &m) {
    std::size_t h = d.num_hiddens, bias = 0;
    if (!r.param("bias", 0, bias)) return false;
    if (bias > 1) return r.fail("param 'bias' must be 0 or 1");
    if (!r.f32_shaped("W_q", {h, d.query_size}, "(h,q)", m.W_q) ||
        !r.f32_shaped("W_k", {h, d.key_size}, "(h,k)", m.W_k) ||
        !r.f32_shaped("W_v", {h, d.value_size}, "(h,v)", m.W_v) || !r.f32_shaped("W_o", {h, h}, "(h,h)", m.W_o))
        return false;
    m.w.W_q = m.W_q.data();
    m.w.W_k = m.W_k.data();
    m.w.W_v = m.W_v.data();
    m.w.W_o = m.W_o.data();
    const char *names[4] = {"b_q", "b_k", "b_v", "b_o"};
    std::vector<float> *vecs[4] = {&m.b_q, &m.b_k, &m.b_v, &m.b_o};
    const float **ptrs[4] = {&m.w.b_q, &m.w.b_k, &m.w.b_v, &m.w.b_o};
    for (int i = 0; i < 4; ++i) {
        if (!bias) {
            if (r.has(names[i])) return r.fail(std::string("input '") + names[i] + "' given with param bias = 0");
            continue;
        }
        if (!r.f32_shaped(names[i], {h}, "(h)", *vecs[i])) return false;
        *ptrs[i] = vecs[i]->data();
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
// valid_lens (B) or (B,Q), output (B,Q,out_features), the optional
// attention_weights of `weights_shape`, and a workspace of `bytes`.
struct AttentionCall {
    std::vector<std::int32_t> lens;
    edgeattn_valid_lens vl{};
    void *ws = nullptr;
    std::size_t bytes = 0;
};

bool prepare_attention(Runner &r, const edgeattn_attention_dims &d, std::size_t out_features,
                       const Shape &weights_shape, std::size_t bytes, AttentionCall &c) {
    c.bytes = bytes;
    return r.valid_lens(d.batch, d.queries, c.lens, c.vl) &&
           r.output("output", {d.batch, d.queries, out_features}, true) &&
           r.output("attention_weights", weights_shape, false) && r.expects_known() && r.workspace(bytes, c.ws);
}

bool run_dot_product(Runner &r) {
    Qkv x;
    AttentionCall c;
    if (!r.allow({"queries", "keys", "values", "valid_lens"}, {}) || !read_qkv(r, x)) return false;
    const edgeattn_attention_dims &d = x.dims;
    if (!prepare_attention(r, d, d.value_size, {d.batch, d.queries, d.keys},
                           edgeattn_dot_product_attention_workspace_size(&d, r.threads()), c))
        return false;
    return r.status(edgeattn_dot_product_attention(&d, x.q.data(), x.k.data(), x.v.data(), &c.vl, c.ws, c.bytes,
                                                   r.buffer("output"), r.buffer("attention_weights")),
                    "edgeattn_dot_product_attention");
}

bool run_additive(Runner &r) {
    Qkv x;
    AttentionCall c;
    std::vector<float> W_q, W_k, w_v;
    if (!r.allow({"queries", "keys", "values", "valid_lens", "W_q", "W_k", "w_v"}, {"num_hiddens"}) ||
        !read_qkv(r, x) || !r.param("num_hiddens", -1, x.dims.num_hiddens))
        return false;
    const edgeattn_attention_dims &d = x.dims;
    const std::size_t h = d.num_hiddens;
    if (!r.f32_shaped("W_q", {h, d.query_size}, "(h,q)", W_q) || !r.f32_shaped("W_k", {h, d.key_size}, "(h,k)", W_k) ||
        !r.f32_shaped("w_v", {1, h}, "(1,h)", w_v) ||
        !prepare_attention(r, d, d.value_size, {d.batch, d.queries, d.keys},
                           edgeattn_additive_attention_workspace_size(&d, r.threads()), c))
        return false;
    edgeattn_additive_weights w{W_q.data(), W_k.data(), w_v.data()};
    return r.status(edgeattn_additive_attention(&d, x.q.data(), x.k.data(), x.v.data(), &c.vl, &w, c.ws, c.bytes,
                                                r.buffer("output"), r.buffer("attention_weights")),
                    "edgeattn_additive_attention");
}

bool run_multi_head(Runner &r) {
    Qkv x;
    MhaWeights m;
    AttentionCall c;
    if (!r.allow({"queries", "keys", "values", "valid_lens", "W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"},
                 {"num_hiddens", "num_heads", "bias"}) ||
        !read_qkv(r, x) || !r.param("num_hiddens", -1, x.dims.num_hiddens) ||
        !r.param("num_heads", -1, x.dims.num_heads) || !read_mha_weights(r, x.dims, m))
        return false;
    const edgeattn_attention_dims &d = x.dims;
    if (!prepare_attention(r, d, d.num_hiddens, {d.batch, d.num_heads, d.queries, d.keys},
                           edgeattn_multi_head_attention_workspace_size(&d, r.threads()), c))
        return false;
    if (!pack_mha_weights(r, d, m)) return false;
    if (r.packed_weights())
        return r.status(edgeattn_multi_head_attention_packed(&d, x.q.data(), x.k.data(), x.v.data(), &c.vl,
                                                             m.packed.data(), m.packed.size() * sizeof(float), c.ws,
                                                             c.bytes, r.buffer("output"), r.buffer("attention_weights")),
                        "edgeattn_multi_head_attention_packed");
    return r.status(edgeattn_multi_head_attention(&d, x.q.data(), x.k.data(), x.v.data(), &c.vl, &m.w, c.ws, c.bytes,
                                                  r.buffer("output"), r.buffer("attention_weights")),
                    "edgeattn_multi_head_attention");
}

// Y = X + P[:n] with P (max_len, d) from the library's table; X, Y (B,n,d).
bool add_positional_encoding(Runner &r, const Shape &s, const std::vector<float> &X, std::size_t max_len,
                             float *P, float *Y) {
    return r.status(edgeattn_positional_encoding_table(max_len, s[2], P), "edgeattn_positional_encoding_table") &&
           r.status(edgeattn_positional_encoding_add(s[0], s[1], s[2], X.data(), P, max_len, Y),
                    "edgeattn_positional_encoding_add");
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

// d2l's Transformer input: MHA(X+P, X+P, X+P) with X (B,n,d), h = d.
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
    if (!read_mha_weights(r, d, m) ||
        !prepare_attention(r, d, d.num_hiddens, {d.batch, d.num_heads, d.queries, d.keys},
                           edgeattn_self_attention_workspace_size(&d, r.threads()), c))
        return false;
    if (!capped_count({max_len, s[2]}, np) || !capped_count(s, nx))
        return r.fail("param max_len = " + std::to_string(max_len) + " makes the table too large");
    std::vector<float> P(np), Xp(nx);
    if (!add_positional_encoding(r, s, X, max_len, P.data(), Xp.data()) || !pack_mha_weights(r, d, m)) return false;
    if (r.packed_weights())
        return r.status(edgeattn_self_attention_packed(&d, Xp.data(), &c.vl, m.packed.data(),
                                                       m.packed.size() * sizeof(float), c.ws, c.bytes,
                                                       r.buffer("output"), r.buffer("attention_weights")),
                        "edgeattn_self_attention_packed");
    return r.status(edgeattn_self_attention(&d, Xp.data(), &c.vl, &m.w, c.ws, c.bytes, r.buffer("output"),
                                            r.buffer("attention_weights")),
                    "edgeattn_self_attention");
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
    else return r.fail("unsupported op '" + in.op + "'");
    if (ok) r.results(out);
    return ok;
}

} // namespace edgeattn_conform
