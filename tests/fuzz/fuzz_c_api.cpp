// libFuzzer harness of the C API (README, "Error handling and numeric edge
// cases"). The input picks an op, a kernel path, dimensions (small, zero, or
// large enough to overflow size_t), valid lengths (any kind, any int32),
// a workspace size around the one asked for, values, and at most one
// spoiled pointer (NULL, misaligned, or aimed into another buffer). Then:
//
//   - the status is one the arguments call for, by rules written here from
//     edgeattn.h (not from src/): OK exactly when nothing is wrong;
//   - on an error, no byte of any buffer changed;
//   - on success, the inputs are unchanged and the outputs meet the float64
//     reference (tests/reference.hpp), or, where inputs hold +-inf or NaN,
//     the documented edge semantics.
//
// Every buffer is its own heap block of exactly its size, so ASan reports
// any read or write past what the dimensions allow.
#include <fuzzer/FuzzedDataProvider.h>

#include <edgeattn/edgeattn.h>

#include "reference.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using edgeattn_ref::ValidLens;

// Real buffers stay below this many elements; calls with larger tensors run
// only when an error is certain, against small stand-in buffers.
constexpr std::size_t kMaxElements = 1 << 14;

const char *g_op = "";  // for messages

[[noreturn]] void fail(const char *what, int status = 0) {
    std::fprintf(stderr, "fuzz_c_api: %s (status %d: %s)\n", what, status,
                 edgeattn_status_str(static_cast<edgeattn_status>(status)));
    std::abort();
}

#define FUZZ_CHECK(cond, what, status) \
    do {                               \
        if (!(cond)) fail(what, status); \
    } while (0)

// ------------------------------------------------------------ inputs

struct Input {
    FuzzedDataProvider in;
    bool special = false;  // values may be +-inf, NaN, +-1e30, FLT_MAX

    Input(const std::uint8_t *data, std::size_t size) : in(data, size) {}
    std::uint8_t byte() { return in.ConsumeIntegral<std::uint8_t>(); }

    // 1..8 mostly, sometimes 0, sometimes a size that overflows in products
    std::size_t dim() {
        const std::uint8_t b = byte();
        if (b < 224) return 1 + b % 8;
        if (b < 236) return 0;
        const std::size_t half_bits = std::size_t{1} << (4 * sizeof(std::size_t));
        const std::size_t large[] = {SIZE_MAX,     SIZE_MAX / 2, SIZE_MAX / 3,  SIZE_MAX / 4,     SIZE_MAX / 5,
                                     SIZE_MAX / 8, SIZE_MAX / 16, SIZE_MAX / 63, half_bits,       half_bits / 2,
                                     half_bits * 4, 4096,        300,           257,              1000,
                                     SIZE_MAX / 1024, SIZE_MAX / 7, 1 << 20,     SIZE_MAX / 4 + 1, half_bits + 1};
        return large[(b - 236) % (sizeof large / sizeof large[0])];
    }
    float value(float unit) {
        const std::int8_t b = in.ConsumeIntegral<std::int8_t>();
        if (special) switch (static_cast<std::uint8_t>(b)) {
                case 0x80: return NAN;
                case 0x81: return INFINITY;
                case 0x82: return -INFINITY;
                case 0x83: return 1e30f;
                case 0x84: return -1e30f;
                case 0x85: return FLT_MAX;
                default: break;
            }
        return static_cast<float>(b) * unit;  // exact: multiples of 1/32 or 1/128
    }
    std::int32_t valid_len(std::size_t keys) {
        const std::uint8_t b = byte();
        if (b < 240) return static_cast<std::int32_t>(b % (keys < 250 ? keys + 3 : 253));  // 0 .. K + 2
        if (b < 248) return -1 - static_cast<std::int32_t>(b - 240);
        return in.ConsumeIntegral<std::int32_t>();
    }
};

// ------------------------------------------------------------ buffers

enum class Role { input, output, workspace };

// An argument buffer: a heap block of exactly its size, filled with values
// (inputs) or a pattern (outputs, workspace), and what the call claims of
// it. `ptr` is what the call gets; a spoiled pointer may be NULL, misaligned
// or point into another buffer.
struct Buffer {
    Role role;
    bool required;
    bool param = false;     // a weight matrix or bias: smaller values
    bool overflow = false;  // its claimed size overflows size_t
    std::size_t claimed = 0;  // bytes the dimensions give it
    std::size_t bytes = 0;    // bytes allocated
    std::unique_ptr<unsigned char[]> mem;
    unsigned char *ptr = nullptr;
    std::size_t avail = 0;    // bytes from ptr to the end of the block it points into
    std::vector<unsigned char> before;  // the block, before the call
    std::vector<unsigned char> seen;    // `claimed` bytes at ptr, before the call

    Buffer(Role r, bool req) : role(r), required(req) {}
    void allocate(std::size_t n) {
        bytes = n;
        mem.reset(new unsigned char[n ? n : 1]());
        ptr = mem.get();
        avail = n;
    }
    float *f() { return reinterpret_cast<float *>(ptr); }
    bool readable() const { return ptr && reinterpret_cast<std::uintptr_t>(ptr) % 4 == 0 && !overflow && claimed <= avail; }
    void snapshot() {
        before.assign(mem.get(), mem.get() + bytes);
        if (readable()) seen.assign(ptr, ptr + claimed);
    }
    bool unchanged() const { return bytes == 0 || std::memcmp(before.data(), mem.get(), bytes) == 0; }
    // element i of what the call was given (floats or int32)
    template <class T>
    T at(std::size_t i) const {
        T v;
        std::memcpy(&v, seen.data() + sizeof(T) * i, sizeof v);
        return v;
    }
};

// claimed = product * 4 bytes, or overflow
void claim(Buffer &b, std::size_t a, std::size_t c = 1, std::size_t d = 1, std::size_t e = 1,
           std::size_t elem = sizeof(float)) {
    std::size_t n = elem;
    for (std::size_t x : {a, c, d, e}) {
        if (x != 0 && n > SIZE_MAX / x) {
            b.overflow = true;
            return;
        }
        n *= x;
    }
    b.claimed = n;
}

struct Call {
    std::vector<Buffer *> buffers;
    std::vector<edgeattn_status> allowed;  // what may be returned; empty: only OK
    bool big = false;  // some claimed size too large to allocate: an error must come
    Buffer *lens = nullptr;  // read during validation: must be real unless an early error comes

    void allow(edgeattn_status s) { allowed.push_back(s); }
    bool allowed_status(edgeattn_status s) const {
        if (allowed.empty()) return s == EDGEATTN_OK;
        for (edgeattn_status a : allowed)
            if (a == s) return true;
        return false;
    }

    // Allocates every buffer (stand-ins when big) and fills inputs.
    void allocate(Input &in, float unit, float param_unit = 0.0f) {
        for (Buffer *b : buffers) {
            const bool too_big = b->overflow || b->claimed > kMaxElements * sizeof(float);
            big = big || too_big;
            b->allocate(too_big ? 64 : b->claimed);
            for (std::size_t i = 0; i + sizeof(float) <= b->bytes && b != lens; i += sizeof(float)) {
                const float v = b->role == Role::input ? in.value(b->param && param_unit != 0.0f ? param_unit : unit)
                                                       : -12345.0f;
                std::memcpy(b->mem.get() + i, &v, sizeof v);
            }
        }
    }

    // At most one spoiled pointer: NULL, misaligned, or into another buffer.
    void spoil(Input &in, const std::vector<std::pair<Buffer *, Buffer *>> &same_allowed) {
        const std::uint8_t how = in.byte();
        if (how < 200 || buffers.empty()) return;
        Buffer *b = buffers[in.byte() % buffers.size()];
        if (how < 215) {
            b->ptr = nullptr;
        } else if (how < 230) {
            const std::size_t shift = 1 + in.byte() % 3;
            if (b->bytes < shift) return;
            b->ptr += shift;
            b->avail -= shift;
        } else {
            // into another buffer, only where all it claims lies inside that
            // block: the call may read it before it finds the overlap
            Buffer *target = buffers[in.byte() % buffers.size()];
            if (target == b || b->overflow || b->claimed > target->bytes) return;
            const std::size_t room = (target->bytes - b->claimed) / 4;
            const std::size_t off = in.byte() % (room + 1) * 4;
            b->ptr = target->mem.get() + off;
            b->avail = target->bytes - off;
        }
        (void)same_allowed;
    }

    // The rules of edgeattn.h for pointers, alignment and overlap. `in_place`
    // lists (output, input) pairs that may be the same array exactly.
    void pointer_rules(const std::vector<std::pair<Buffer *, Buffer *>> &in_place) {
        for (Buffer *b : buffers) {
            if (b->required && !b->ptr) allow(EDGEATTN_ERR_NULL_POINTER);
            if (b->ptr && reinterpret_cast<std::uintptr_t>(b->ptr) % 4) allow(EDGEATTN_ERR_MISALIGNED);
            if (b->overflow) allow(EDGEATTN_ERR_SIZE_OVERFLOW);
        }
        for (Buffer *o : buffers) {
            if (o->role == Role::input || !o->ptr || o->overflow) continue;
            for (Buffer *x : buffers) {
                if (x == o || !x->ptr || x->overflow) continue;
                if (x->role != Role::input && x < o) continue;  // each pair of writers once
                bool exempt = false;
                for (const auto &pair : in_place)
                    if (pair.first == o && pair.second == x && o->ptr == x->ptr && o->claimed == x->claimed)
                        exempt = true;
                const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(o->ptr),
                                     c = reinterpret_cast<std::uintptr_t>(x->ptr);
                // ends saturate: a span claimed past the end of the address space
                // reaches everything after its start
                auto end = [](std::uintptr_t p, std::size_t n) { return n > UINTPTR_MAX - p ? UINTPTR_MAX : p + n; };
                if (!exempt && o->claimed && x->claimed && a < end(c, x->claimed) && c < end(a, o->claimed))
                    allow(EDGEATTN_ERR_OVERLAP);
            }
        }
    }

    // Runs the call and checks its status and, on an error, that nothing
    // changed. Returns true when the call succeeded.
    template <class F>
    bool run(F call) {
        if (big && allowed.empty()) return false;  // valid but too large to run here
        if (lens && lens->ptr && !lens->readable()) {
            // the lengths are read while validating: run only when an error
            // that comes before that is certain
            bool early = false;
            for (edgeattn_status s : allowed)
                early = early || s == EDGEATTN_ERR_NULL_POINTER || s == EDGEATTN_ERR_ZERO_DIMENSION ||
                        s == EDGEATTN_ERR_SIZE_OVERFLOW || s == EDGEATTN_ERR_MISALIGNED ||
                        s == EDGEATTN_ERR_SHAPE_MISMATCH || s == EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE ||
                        s == EDGEATTN_ERR_BAD_VALID_LENS_KIND;
            if (!early) return false;
        }
        for (Buffer *b : buffers) b->snapshot();
        const edgeattn_status st = call();
        if (!allowed_status(st)) {
            for (Buffer *b : buffers)
                std::fprintf(stderr, "  buffer role %d: block %p (%zu bytes), pointer %p, claims %zu%s\n",
                             static_cast<int>(b->role), static_cast<void *>(b->mem.get()), b->bytes,
                             static_cast<void *>(b->ptr), b->claimed, b->overflow ? " (overflows)" : "");
            std::fprintf(stderr, "fuzz_c_api: %s returned %d; allowed:", g_op, st);
            for (edgeattn_status a : allowed) std::fprintf(stderr, " %d", a);
            std::fprintf(stderr, allowed.empty() ? " 0\n" : "\n");
        }
        FUZZ_CHECK(allowed_status(st), "status not among those the arguments call for", st);
        if (st == EDGEATTN_OK) {
            for (Buffer *b : buffers) {
                bool written_in_place = false;  // an output is this block (Y == X)
                for (Buffer *o : buffers)
                    written_in_place = written_in_place || (o->role != Role::input && o->ptr == b->mem.get());
                if (b->role == Role::input && !written_in_place) FUZZ_CHECK(b->unchanged(), "an input changed", st);
            }
            return true;
        }
        for (Buffer *b : buffers) FUZZ_CHECK(b->unchanged(), "a failed call wrote", st);
        return false;
    }
};

// The n floats the call was given in b (after a successful call).
std::vector<double> doubles(const Buffer &b, std::size_t n) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = b.at<float>(i);
    return v;
}

bool all_finite(const std::vector<double> &v) {
    for (double x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

// |got - want| <= 2e-4 * max(1, max |want|) everywhere
void compare(const char *what, const float *got, const std::vector<double> &want) {
    double scale = 1.0;
    for (double w : want) scale = std::fmax(scale, std::fabs(w));
    for (std::size_t i = 0; i < want.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= 2e-4 * scale)) {
            std::fprintf(stderr, "fuzz_c_api: %s[%zu] = %.9g, reference %.9g\n", what, i, got[i], want[i]);
            fail("result differs from the float64 reference");
        }
}

// valid_lens of a call: kind (any int), lengths of `count` entries
struct Lens {
    int kind = EDGEATTN_VALID_LENS_NONE;
    Buffer buf{Role::input, false};
    edgeattn_valid_lens api{EDGEATTN_VALID_LENS_NONE, nullptr};
    bool pass_null = false;  // the call gets a NULL edgeattn_valid_lens pointer
    std::size_t count = 0;

    void choose(Input &in, std::size_t batch, std::size_t queries) {
        const std::uint8_t k = in.byte();
        kind = k < 60 ? EDGEATTN_VALID_LENS_NONE : k < 150 ? EDGEATTN_VALID_LENS_PER_BATCH
               : k < 245 ? EDGEATTN_VALID_LENS_PER_QUERY : in.in.ConsumeIntegral<int>();
        pass_null = k < 30;
        if (kind == EDGEATTN_VALID_LENS_PER_BATCH) claim(buf, batch, 1, 1, 1, 4);
        if (kind == EDGEATTN_VALID_LENS_PER_QUERY) claim(buf, batch, queries, 1, 1, 4);
        buf.required = kind == EDGEATTN_VALID_LENS_PER_BATCH || kind == EDGEATTN_VALID_LENS_PER_QUERY;
    }
    // after allocation: lengths, the struct, and the rules about them
    // Before the call is spoiled: the lengths themselves.
    void fill(Input &in, std::size_t keys) {
        const std::size_t n = buf.mem && !buf.overflow && buf.claimed <= buf.bytes ? buf.claimed / 4 : 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::int32_t v = in.valid_len(keys);
            std::memcpy(buf.mem.get() + 4 * i, &v, 4);
        }
    }
    // After: the struct, and the rules about it.
    void rules(Call &call) {
        std::memcpy(&api.kind, &kind, sizeof kind);  // C may store any int there
        api.lens = reinterpret_cast<const std::int32_t *>(buf.ptr);
        if (pass_null) return;
        if (kind < 0 || kind > 2) call.allow(EDGEATTN_ERR_BAD_VALID_LENS_KIND);
        if (!buf.required || !buf.readable()) return;
        count = buf.claimed / 4;
        for (std::size_t i = 0; i < count; ++i) {
            std::int32_t v;
            std::memcpy(&v, buf.ptr + 4 * i, 4);
            if (v < 0) call.allow(EDGEATTN_ERR_NEGATIVE_VALID_LEN);
        }
    }
    std::int32_t length(std::size_t i) const { return buf.at<std::int32_t>(i); }
    const edgeattn_valid_lens *get() const { return pass_null ? nullptr : &api; }
    // d2l's view, for the reference (only after a successful call)
    ValidLens reference() const {
        ValidLens r;
        if (pass_null || kind == EDGEATTN_VALID_LENS_NONE) return r;
        r.kind = kind == EDGEATTN_VALID_LENS_PER_BATCH ? ValidLens::per_batch : ValidLens::per_query;
        for (std::size_t i = 0; i < count; ++i) r.lens.push_back(length(i));
        return r;
    }
    // valid length of row (b, i) among K
    std::size_t of(std::size_t b, std::size_t i, std::size_t Q, std::size_t K) const {
        const ValidLens r = reference();
        const std::int64_t n = r.of(b, i, Q, K);
        return n < static_cast<std::int64_t>(K) ? static_cast<std::size_t>(n) : K;
    }
};

bool mostly(Input &in) { return in.byte() < 200; }

// ------------------------------------------------------------ the ops

void fuzz_sequence_mask(Input &in) {
    g_op = "sequence_mask";
    const std::size_t rows = in.dim(), cols = in.dim();
    const float value = in.value(1.0f / 32);
    Buffer X(Role::input, true), lens(Role::input, true), Y(Role::output, true);
    claim(X, rows, cols);
    claim(lens, rows, 1, 1, 1, 4);
    claim(Y, rows, cols);
    Call call;
    call.buffers = {&X, &lens, &Y};
    call.lens = &lens;
    call.allocate(in, 1.0f / 32);
    for (std::size_t r = 0; !lens.overflow && r * 4 < lens.bytes; ++r) {
        const std::int32_t v = in.valid_len(cols);
        std::memcpy(lens.mem.get() + 4 * r, &v, 4);
    }
    if (rows == 0 || cols == 0) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    const bool in_place = !mostly(in);
    if (in_place) Y.ptr = X.ptr;
    call.spoil(in, {});
    if (lens.readable())
        for (std::size_t r = 0; r < rows; ++r) {
            std::int32_t v;
            std::memcpy(&v, lens.ptr + 4 * r, 4);
            if (v < 0) call.allow(EDGEATTN_ERR_NEGATIVE_VALID_LEN);
        }
    call.pointer_rules({{&Y, &X}});
    if (!call.run([&] {
            return edgeattn_sequence_mask(rows, cols, X.f(), reinterpret_cast<const std::int32_t *>(lens.ptr), value,
                                          Y.f());
        }))
        return;
    for (std::size_t r = 0; r < rows; ++r) {
        const std::int32_t n = lens.at<std::int32_t>(r);
        for (std::size_t j = 0; j < cols; ++j) {
            const float x = X.at<float>(r * cols + j);
            const float want = static_cast<std::int64_t>(j) < n ? x : value;
            FUZZ_CHECK(std::memcmp(&want, Y.f() + r * cols + j, 4) == 0, "sequence_mask value", 0);
        }
    }
}

void fuzz_masked_softmax(Input &in) {
    g_op = "masked_softmax";
    edgeattn_softmax_dims dims{in.dim(), in.dim(), in.dim()};
    Lens lens;
    lens.choose(in, dims.batch, dims.queries);
    Buffer X(Role::input, true), Y(Role::output, true);
    claim(X, dims.batch, dims.queries, dims.keys);
    claim(Y, dims.batch, dims.queries, dims.keys);
    Call call;
    call.buffers = {&X, &Y};
    if (lens.buf.required && !lens.pass_null) {
        call.buffers.push_back(&lens.buf);
        call.lens = &lens.buf;
    }
    call.allocate(in, in.special ? 1.0f / 32 : 1.0f / 4);
    lens.fill(in, dims.keys);
    if (dims.batch == 0 || dims.queries == 0 || dims.keys == 0) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (!mostly(in)) Y.ptr = X.ptr;
    call.spoil(in, {});
    lens.rules(call);
    call.pointer_rules({{&Y, &X}});
    if (!call.run([&] { return edgeattn_masked_softmax(&dims, X.f(), lens.get(), Y.f()); })) return;

    const std::size_t K = dims.keys, rows = dims.batch * dims.queries;
    const std::vector<double> x = doubles(X, rows * K);
    if (!in.special) {
        std::vector<double> want(rows * K);
        edgeattn_ref::masked_softmax(dims.batch, dims.queries, K, x.data(), lens.reference(), want.data());
        compare("masked_softmax", Y.f(), want);
        return;
    }
    // Edge semantics: a NaN among the valid scores makes the row NaN; else
    // every weight is a number in [0, 1] and the row sums to 1.
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t valid = lens.of(r / dims.queries, r % dims.queries, dims.queries, K);
        bool nan = false;
        for (std::size_t j = 0; j < valid; ++j) nan = nan || std::isnan(x[r * K + j]);
        double sum = 0.0;
        for (std::size_t j = 0; j < K; ++j) {
            const float w = Y.f()[r * K + j];
            FUZZ_CHECK(nan ? std::isnan(w) : (w >= 0.0f && w <= 1.0f), "softmax edge semantics", 0);
            sum += w;
        }
        FUZZ_CHECK(nan || std::fabs(sum - 1.0) < 1e-5, "softmax row does not sum to 1", 0);
    }
}

// The attention ops share their buffers and rules.
struct Attention {
    edgeattn_attention_dims dims{};
    Lens lens;
    Buffer q{Role::input, true}, k{Role::input, true}, v{Role::input, true};
    Buffer out{Role::output, true}, weights{Role::output, false}, ws{Role::workspace, true};
    bool want_weights = true;
    std::size_t ws_need = 0;
    Call call;

    // claims of the activations and outputs; `heads` weight planes
    void claims(std::size_t out_features, std::size_t heads, bool keys_values = true) {
        claim(q, dims.batch, dims.queries, dims.query_size);
        if (keys_values) {
            claim(k, dims.batch, dims.keys, dims.key_size);
            claim(v, dims.batch, dims.keys, dims.value_size);
        }
        claim(out, dims.batch, dims.queries, out_features);
        claim(weights, dims.batch, heads, dims.queries, dims.keys);
        call.buffers = {&q, &out, &ws};
        if (keys_values) call.buffers.insert(call.buffers.end(), {&k, &v});
        if (want_weights) call.buffers.push_back(&weights);
    }
    // the workspace: around the size asked for; 0 from *_workspace_size on
    // valid dims means the size overflows
    // `size` is *_workspace_size(dims, threads); the call needs at least
    // `one`, the size for one thread (it uses as many as fit).
    void workspace(Input &in, std::size_t size, std::size_t one, bool dims_ok) {
        const std::size_t need = size;
        ws_need = one;
        if (dims_ok && one == 0) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
        const std::uint8_t how = in.byte();
        std::size_t bytes = need;
        if (how >= 200) bytes = how % 2 ? need / 2 : (need > 4 ? need - 1 - how % 4 : 0);
        else if (how >= 150) bytes = need + 4 * (how % 8);
        ws.claimed = bytes;
        if (dims_ok && one != 0 && bytes < one) call.allow(EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    }
    void finish(Input &in, std::vector<Buffer *> params) {
        for (Buffer *p : params) {
            p->param = true;
            call.buffers.push_back(p);
        }
        if (weights.overflow) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);  // refused even when not requested
        if (lens.buf.required && !lens.pass_null) {
            call.buffers.push_back(&lens.buf);
            call.lens = &lens.buf;
        }
        call.allocate(in, 1.0f / 32, 1.0f / 512);
        lens.fill(in, dims.keys);
        call.spoil(in, {});
        lens.rules(call);
        call.pointer_rules({});
    }
    float *weights_ptr() { return want_weights ? weights.f() : nullptr; }
    void check(const std::vector<double> &want_out, const std::vector<double> &want_weights_ref) {
        if (in_special) return;  // float overflow may differ from double: the run itself is the test
        if (!all_finite(want_out)) return;
        compare("output", out.f(), want_out);
        if (want_weights && weights.ptr) compare("attention_weights", weights.f(), want_weights_ref);  // NULL: not asked for
    }
    bool in_special = false;
};

void fuzz_dot_product(Input &in) {
    g_op = "dot_product_attention";
    Attention a;
    a.in_special = in.special;
    a.dims = {in.dim(), in.dim(), in.dim(), in.dim(), mostly(in) ? 0 : in.dim(), in.dim(), 0, 0};
    a.want_weights = mostly(in);
    a.lens.choose(in, a.dims.batch, a.dims.queries);
    const std::size_t d = a.dims.query_size, ks = a.dims.key_size ? a.dims.key_size : d;
    edgeattn_attention_dims claimed = a.dims;
    claimed.key_size = ks;
    std::swap(a.dims, claimed);
    a.claims(a.dims.value_size, 1);
    std::swap(a.dims, claimed);
    const bool zero = a.dims.batch == 0 || a.dims.queries == 0 || a.dims.keys == 0 || d == 0 || a.dims.value_size == 0;
    if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (ks != d) a.call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
    a.workspace(in, edgeattn_dot_product_attention_workspace_size(&a.dims, 1 + in.byte() % 4),
                edgeattn_dot_product_attention_workspace_size(&a.dims, 1), !zero && ks == d);
    a.finish(in, {});
    if (!a.call.run([&] {
            return edgeattn_dot_product_attention(&a.dims, a.q.f(), a.k.f(), a.v.f(), a.lens.get(), a.ws.ptr,
                                                  a.ws.claimed, a.out.f(), a.weights_ptr());
        }))
        return;
    const edgeattn_attention_dims &D = a.dims;
    std::vector<double> out(D.batch * D.queries * D.value_size), w(D.batch * D.queries * D.keys);
    const std::vector<double> q = doubles(a.q, D.batch * D.queries * d), k = doubles(a.k, D.batch * D.keys * d),
                              v = doubles(a.v, D.batch * D.keys * D.value_size);
    edgeattn_ref::dot_product_attention(D.batch, D.queries, D.keys, d, D.value_size, q.data(), k.data(), v.data(),
                                        a.lens.reference(), out.data(), w.data());
    a.check(out, w);
}

void fuzz_additive(Input &in) {
    g_op = "additive_attention";
    Attention a;
    a.in_special = in.special;
    a.dims = {in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), 0};
    a.want_weights = mostly(in);
    a.lens.choose(in, a.dims.batch, a.dims.queries);
    a.claims(a.dims.value_size, 1);
    const edgeattn_attention_dims &D = a.dims;
    Buffer W_q(Role::input, true), W_k(Role::input, true), w_v(Role::input, true);
    claim(W_q, D.num_hiddens, D.query_size);
    claim(W_k, D.num_hiddens, D.key_size);
    claim(w_v, D.num_hiddens);
    const bool zero = !D.batch || !D.queries || !D.keys || !D.query_size || !D.key_size || !D.value_size ||
                      !D.num_hiddens;
    if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    a.workspace(in, edgeattn_additive_attention_workspace_size(&D, 1 + in.byte() % 4),
                edgeattn_additive_attention_workspace_size(&D, 1), !zero);
    a.finish(in, {&W_q, &W_k, &w_v});
    const edgeattn_additive_weights w{W_q.f(), W_k.f(), w_v.f()};
    if (!a.call.run([&] {
            return edgeattn_additive_attention(&D, a.q.f(), a.k.f(), a.v.f(), a.lens.get(), &w, a.ws.ptr, a.ws.claimed,
                                               a.out.f(), a.weights_ptr());
        }))
        return;
    std::vector<double> out(D.batch * D.queries * D.value_size), wts(D.batch * D.queries * D.keys);
    const std::vector<double> q = doubles(a.q, D.batch * D.queries * D.query_size),
                              k = doubles(a.k, D.batch * D.keys * D.key_size),
                              v = doubles(a.v, D.batch * D.keys * D.value_size),
                              wq = doubles(W_q, D.num_hiddens * D.query_size),
                              wk = doubles(W_k, D.num_hiddens * D.key_size), wv = doubles(w_v, D.num_hiddens);
    edgeattn_ref::additive_attention(D.batch, D.queries, D.keys, D.query_size, D.key_size, D.value_size, D.num_hiddens,
                                     q.data(), k.data(), v.data(), a.lens.reference(), wq.data(), wk.data(), wv.data(),
                                     out.data(), wts.data());
    a.check(out, wts);
}

// Multi-head attention, or self-attention (queries = keys = values = X).
void fuzz_multi_head(Input &in, bool self) {
    g_op = self ? "self_attention" : "multi_head_attention";
    Attention a;
    a.in_special = in.special;
    const std::size_t heads = 1 + in.byte() % 4;
    a.dims = {in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), heads * (1 + in.byte() % 3),
              heads};
    if (!mostly(in)) a.dims.num_hiddens = in.dim();
    if (!mostly(in)) a.dims.num_heads = in.dim();
    edgeattn_attention_dims D = a.dims;  // as the op reads them
    bool mismatch = false;
    if (self) {  // keys, key_size, value_size, num_hiddens: 0 or equal
        D.keys = D.queries;
        const std::size_t d = D.query_size;
        const bool keep = mostly(in);
        a.dims.keys = keep ? 0 : a.dims.keys;
        a.dims.key_size = keep ? 0 : a.dims.key_size;
        a.dims.value_size = keep ? 0 : a.dims.value_size;
        a.dims.num_hiddens = keep ? 0 : a.dims.num_hiddens;
        for (std::size_t x : {a.dims.keys}) mismatch = mismatch || (x != 0 && x != D.queries);
        for (std::size_t x : {a.dims.key_size, a.dims.value_size, a.dims.num_hiddens})
            mismatch = mismatch || (x != 0 && x != d);
        D.key_size = D.value_size = D.num_hiddens = d;
        if (mismatch) a.call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
    }
    a.want_weights = mostly(in);
    a.lens.choose(in, D.batch, D.queries);
    std::swap(a.dims, D);
    a.claims(a.dims.num_hiddens, a.dims.num_heads, !self);
    std::swap(a.dims, D);
    const std::size_t h = D.num_hiddens;
    Buffer W_q(Role::input, true), W_k(Role::input, true), W_v(Role::input, true), W_o(Role::input, true);
    Buffer b_q(Role::input, false), b_k(Role::input, false), b_v(Role::input, false), b_o(Role::input, false);
    claim(W_q, h, D.query_size);
    claim(W_k, h, D.key_size);
    claim(W_v, h, D.value_size);
    claim(W_o, h, h);
    std::vector<Buffer *> params{&W_q, &W_k, &W_v, &W_o};
    for (Buffer *b : {&b_q, &b_k, &b_v, &b_o})
        if (in.in.ConsumeBool()) {
            claim(*b, h);
            params.push_back(b);
        }
    const bool zero = !D.batch || !D.queries || !D.keys || !D.query_size || !D.key_size || !D.value_size || !h ||
                      !D.num_heads;
    if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (!zero && h % D.num_heads) a.call.allow(EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
    const std::size_t threads = 1 + in.byte() % 4;
    auto size = [&](std::size_t t) {
        return self ? edgeattn_self_attention_workspace_size(&a.dims, t)
                    : edgeattn_multi_head_attention_workspace_size(&a.dims, t);
    };
    a.workspace(in, size(threads), size(1), !zero && !mismatch && h % D.num_heads == 0);
    a.finish(in, params);
    auto bias = [](Buffer &b) { return b.mem ? b.f() : nullptr; };  // NULL when not chosen or spoiled
    const edgeattn_mha_weights w{W_q.f(), W_k.f(), W_v.f(), W_o.f(), bias(b_q), bias(b_k), bias(b_v), bias(b_o)};
    const bool ok = a.call.run([&] {
        return self ? edgeattn_self_attention(&a.dims, a.q.f(), a.lens.get(), &w, a.ws.ptr, a.ws.claimed, a.out.f(),
                                              a.weights_ptr())
                    : edgeattn_multi_head_attention(&a.dims, a.q.f(), a.k.f(), a.v.f(), a.lens.get(), &w, a.ws.ptr,
                                                    a.ws.claimed, a.out.f(), a.weights_ptr());
    });
    if (!ok) return;
    std::vector<double> out(D.batch * D.queries * h), wts(D.batch * D.num_heads * D.queries * D.keys);
    const std::vector<double> q = doubles(a.q, D.batch * D.queries * D.query_size),
                              k = self ? q : doubles(a.k, D.batch * D.keys * D.key_size),
                              v = self ? q : doubles(a.v, D.batch * D.keys * D.value_size),
                              wq = doubles(W_q, h * D.query_size), wk = doubles(W_k, h * D.key_size),
                              wv = doubles(W_v, h * D.value_size), wo = doubles(W_o, h * h);
    std::vector<double> bq, bk, bv, bo;
    auto ref_bias = [&](Buffer &b, std::vector<double> &dst) -> const double * {
        if (!b.mem || !b.ptr) return nullptr;
        dst = doubles(b, h);
        return dst.data();
    };
    const edgeattn_ref::MhaWeights rw{wq.data(), wk.data(), wv.data(), wo.data(), ref_bias(b_q, bq),
                                      ref_bias(b_k, bk), ref_bias(b_v, bv), ref_bias(b_o, bo)};
    edgeattn_ref::multi_head_attention(D.batch, D.queries, D.keys, D.query_size, D.key_size, D.value_size, h,
                                       D.num_heads, q.data(), k.data(), v.data(), a.lens.reference(), rw, out.data(),
                                       wts.data());
    a.check(out, wts);
}

void fuzz_positional(Input &in) {
    const bool add = in.in.ConsumeBool();
    g_op = add ? "positional_encoding_add" : "positional_encoding_table";
    const std::size_t batch = in.dim(), n = in.dim(), d = in.dim(), max_len = mostly(in) ? n + in.dim() % 3 : in.dim();
    Buffer X(Role::input, true), P(Role::input, true), Y(Role::output, true);
    claim(P, max_len, d);
    if (add) {
        claim(X, batch, n, d);
        claim(Y, batch, n, d);
    }
    Call call;
    call.buffers = add ? std::vector<Buffer *>{&X, &P, &Y} : std::vector<Buffer *>{&P};
    if (!add) P.role = Role::output;
    call.allocate(in, 1.0f / 32);
    if (max_len == 0 || d == 0 || (add && (batch == 0 || n == 0))) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (add && n > max_len) call.allow(EDGEATTN_ERR_SEQUENCE_TOO_LONG);
    if (add && !mostly(in)) Y.ptr = X.ptr;
    call.spoil(in, {});
    call.pointer_rules({{&Y, &X}});
    if (!add) {
        if (!call.run([&] { return edgeattn_positional_encoding_table(max_len, d, P.f()); })) return;
        std::vector<double> want(max_len * d);
        edgeattn_ref::positional_encoding_table(max_len, d, want.data());
        for (std::size_t i = 0; i < want.size(); ++i)
            FUZZ_CHECK(std::fabs(P.f()[i] - want[i]) <= 2.5e-7, "positional table value", 0);
        return;
    }
    if (!call.run([&] { return edgeattn_positional_encoding_add(batch, n, d, X.f(), P.f(), max_len, Y.f()); })) return;
    for (std::size_t i = 0; i < batch * n * d; ++i) {
        const float want = X.at<float>(i) + P.at<float>(i % (n * d));
        FUZZ_CHECK(std::memcmp(&want, Y.f() + i, 4) == 0 || (std::isnan(want) && std::isnan(Y.f()[i])),
                   "positional add value", 0);
    }
}

// A kernel path this CPU runs, picked by the input.
void choose_path(Input &in) {
    std::vector<edgeattn_isa> paths;
    for (int i = EDGEATTN_ISA_SCALAR; i <= EDGEATTN_ISA_NEON; ++i)
        if (edgeattn_isa_supported(static_cast<edgeattn_isa>(i))) paths.push_back(static_cast<edgeattn_isa>(i));
    const edgeattn_isa isa = paths[in.byte() % paths.size()];
    if (edgeattn_set_isa(isa) != EDGEATTN_OK) fail("a supported path was refused");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    Input in(data, size);
    const std::uint8_t head = in.byte();
    in.special = head >= 224;
    choose_path(in);
    switch (head % 7) {
        case 0: fuzz_sequence_mask(in); break;
        case 1: fuzz_masked_softmax(in); break;
        case 2: fuzz_dot_product(in); break;
        case 3: fuzz_additive(in); break;
        case 4: fuzz_multi_head(in, false); break;
        case 5: fuzz_multi_head(in, true); break;
        case 6: fuzz_positional(in); break;
    }
    return 0;
}
