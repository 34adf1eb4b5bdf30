// libFuzzer harness of the C API (docs/contract.md). The input picks an op, a kernel path, dimensions (small, zero, or
// large enough to overflow size_t), valid lengths (any kind, any int32),
// a workspace size around the one asked for, values, and at most one
// spoiled pointer (NULL, misaligned, or aimed into another buffer); a hash
// of it, where the structs passed by pointer (dims, valid lengths, mask,
// weights, a KV cache) lie: mostly apart, sometimes copied into an output
// or the workspace, which the call must read before it writes there. After
// the op, enum arguments holding any int. Then:
//
//   - the status is one the arguments call for, by rules written here from
//     the headers (not from src/): OK exactly when nothing is wrong;
//   - on an error, no byte of any buffer changed;
//   - on success, the inputs are unchanged and the outputs meet the float64
//     reference (tests/reference.hpp), or, where inputs hold +-inf or NaN,
//     the documented edge semantics.
//
// The KV cache op (kv_cache.h) is a sequence: memory size and setup with any
// sizes, then store / attend / truncate / reset calls the input picks, each
// checked as above and against a model of the cache (every batch element's
// projected keys and values so far), which the attend results must meet.
//
// Valid lengths and masks reach the attention calls in their
// edgeattn_attention_options (NULL when the input gives neither); workspace
// sizes come from edgeattn_workspace_size.
//
// An input with bytes left after its op runs a second one that draws the
// newer fields too (Input::extended): window KV caches (rings that wrap,
// hostile window and sinks), EDGEATTN_DTYPE_NONE matrices (the cache
// calls' projection-free rows; refused by every other op), the mask's
// sliding window (a store refuses it), additive attention with a mask, and
// options.rope (RopeGen): refused by every op but the cache calls, which
// rotate with valid ropes (the model rotates its keys and queries in
// double) and refuse hostile ones.
//
// An input with bytes left after that runs a third op, masked sdpa or mha,
// that draws the score options (Input::score, ScoreGen): scale, softcap,
// masking, weights_output and the mask's alignment, right_window and
// ALiBi, each valid or hostile, against the reference's Mask semantics.
//
// Every buffer is its own heap block of exactly its size, so ASan reports
// any read or write past what the dimensions allow.
#include <fuzzer/FuzzedDataProvider.h>

#include <edgeattn/edgeattn.h>

#include "enum_args_from_c.h"
#include "fuzz_check.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <vector>

namespace {

using edgeattn_ref::ValidLens;

// Real buffers stay below this many elements; calls with larger tensors run
// only when an error is certain, against small stand-in buffers.
constexpr std::size_t kMaxElements = 1 << 14;

using fuzz::fail;
using fuzz::g_op;

// ------------------------------------------------------------ inputs

// Where the structs a call takes by pointer go (Call::place), and whether a
// cache store gets NULL or an empty options struct: drawn from a hash of
// the whole input rather than read from it, so the input's bytes make the
// same choices whatever is drawn here, and the corpus's inputs keep testing
// what they were kept for (neither changes a status or a result).
struct Placement {
    std::minstd_rand gen;
    Placement(const std::uint8_t *data, std::size_t size) {
        std::uint32_t h = 2166136261u;  // FNV-1a
        for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
        gen.seed(h % 2147483646u + 1);
    }
    std::uint8_t operator()() { return static_cast<std::uint8_t>(gen() >> 16); }
};

struct Input {
    FuzzedDataProvider in;
    bool special = false;  // values may be +-inf, NaN, +-1e30, FLT_MAX
    // The second op of an input (LLVMFuzzerTestOneInput) also draws the
    // newer fields: window caches, EDGEATTN_DTYPE_NONE matrices, mask
    // windows, ropes. The first reads the bytes as the committed corpus's
    // inputs were made for, so each keeps testing what it was kept for.
    bool extended = false;
    // The third op (masked sdpa or mha) draws the score options too
    // (ScoreGen): scale, softcap, masking, weights_output, the mask's
    // alignment, right_window and ALiBi, valid and hostile.
    bool score = false;
    Placement where;

    Input(const std::uint8_t *data, std::size_t size) : in(data, size), where(data, size) {}
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
    bool custom = false;    // filled by its owner (int32 ranges, bias), not by Call::allocate
    bool opaque = false;    // not floats (packed weights): never a spoiled pointer's target
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

bool overlaps(const void *a, std::size_t a_bytes, const void *b, std::size_t b_bytes) {
    const std::uintptr_t x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    auto end = [](std::uintptr_t p, std::size_t n) { return n > UINTPTR_MAX - p ? UINTPTR_MAX : p + n; };
    return a_bytes && b_bytes && x < end(y, b_bytes) && y < end(x, a_bytes);
}

struct Call {
    std::vector<Buffer *> buffers;
    std::vector<edgeattn_status> allowed;  // what may be returned; empty: only OK
    bool big = false;  // some claimed size too large to allocate: an error must come
    Buffer *lens = nullptr;  // read during validation: must be real unless an early error comes
    // key ranges, read during validation before the other pointers' alignment
    // and the workspace are checked: a stand-in runs only when the op says an
    // error that comes before that read is certain
    Buffer *ranges = nullptr;
    bool ranges_early = false;
    std::vector<Buffer *> extra_targets;  // spoil targets beyond `buffers` (a KV cache's memory)
    std::vector<std::pair<const unsigned char *, std::size_t>> placed;  // struct copies put in writers

    void allow(edgeattn_status s) { allowed.push_back(s); }
    bool allowed_status(edgeattn_status s) const {
        if (allowed.empty()) return s == EDGEATTN_OK;
        for (edgeattn_status a : allowed)
            if (a == s) return true;
        return false;
    }

    // Allocates every buffer (stand-ins when big) and fills inputs.
    // Buffers allocated before (weights kept over a sequence of calls, packed
    // weights) stay as they are; a claim past their block counts as big.
    void allocate(Input &in, float unit, float param_unit = 0.0f) {
        for (Buffer *b : buffers) {
            if (b->mem) {
                big = big || b->overflow || b->claimed > b->bytes;
                continue;
            }
            const bool too_big = b->overflow || b->claimed > kMaxElements * sizeof(float);
            big = big || too_big;
            b->allocate(too_big ? 64 : b->claimed);
            for (std::size_t i = 0; i + sizeof(float) <= b->bytes && b != lens && !b->custom; i += sizeof(float)) {
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
            const std::uint8_t t = in.byte();
            Buffer *target = t % (buffers.size() + extra_targets.size()) < buffers.size()
                                 ? buffers[t % (buffers.size() + extra_targets.size())]
                                 : extra_targets[t % (buffers.size() + extra_targets.size()) - buffers.size()];
            if (target == b || target->opaque || b->overflow || b->claimed > target->bytes) return;
            const std::size_t room = (target->bytes - b->claimed) / 4;
            const std::size_t off = in.byte() % (room + 1) * 4;
            b->ptr = target->mem.get() + off;
            b->avail = target->bytes - off;
        }
        (void)same_allowed;
    }

    // Whether a copy of a struct of `size` bytes may go in writer b: within
    // the bytes the call is told of, aligned for the struct, and in a block
    // that is b's own and nothing else points into, so that the copy
    // changes no byte any rule or input reads.
    bool holds_struct(const Buffer &b, std::size_t size, std::size_t align) const {
        if (b.role == Role::input || !b.mem || !b.ptr || b.overflow || b.claimed < size || b.claimed > b.avail ||
            reinterpret_cast<std::uintptr_t>(b.ptr) % align != 0 || b.ptr < b.mem.get() ||
            b.ptr >= b.mem.get() + b.bytes)
            return false;
        for (const std::vector<Buffer *> *list : {&buffers, &extra_targets})
            for (const Buffer *x : *list)
                if (x != &b && x->ptr && x->ptr >= b.mem.get() && x->ptr < b.mem.get() + b.bytes) return false;
        return true;
    }

    // A struct the call takes by pointer: mostly where it is; sometimes a
    // copy inside an output or the workspace, which the call must read
    // before it writes there (edgeattn.h): the call's status and results
    // are then what they would be with the struct apart, which is all the
    // checks below look at.
    template <class T>
    const T *place(Input &in, const T *s) {
        Placement &byte = in.where;
        if (!s || byte() < 216) return s;
        std::vector<Buffer *> targets;
        for (Buffer *b : buffers)
            if (holds_struct(*b, sizeof(T), alignof(T))) targets.push_back(b);
        if (targets.empty()) return s;
        Buffer *t = targets[byte() % targets.size()];
        const std::size_t slots = (t->claimed - sizeof(T)) / alignof(T) + 1;
        const std::size_t slot = (static_cast<std::size_t>(byte()) << 8 | byte()) % slots;
        unsigned char *at = t->ptr + slot * alignof(T);
        for (const auto &p : placed)
            if (overlaps(at, sizeof(T), p.first, p.second)) return s;
        std::memcpy(at, s, sizeof(T));
        placed.push_back({at, sizeof(T)});
        return reinterpret_cast<const T *>(at);
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
                        s == EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE || s == EDGEATTN_ERR_BAD_VALID_LENS_KIND;
            if (!early) return false;
        }
        if (ranges && ranges->ptr && reinterpret_cast<std::uintptr_t>(ranges->ptr) % 4 == 0 && !ranges->readable() &&
            !ranges_early)
            return false;
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
                if (b->role == Role::input && !written_in_place && !b->unchanged()) {
                    std::fprintf(stderr, "  input block %p (%zu bytes), pointer %p, claims %zu\n",
                                 static_cast<void *>(b->mem.get()), b->bytes, static_cast<void *>(b->ptr), b->claimed);
                    for (std::size_t i = 0; i < b->bytes; ++i)
                        if (b->before[i] != b->mem[i]) {
                            std::fprintf(stderr, "  first changed byte %zu\n", i);
                            break;
                        }
                    for (Buffer *o : buffers)
                        if (o->role != Role::input)
                            std::fprintf(stderr, "  writer block %p (%zu bytes), pointer %p, claims %zu\n",
                                         static_cast<void *>(o->mem.get()), o->bytes, static_cast<void *>(o->ptr),
                                         o->claimed);
                    fail("an input changed", st);
                }
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

// |got - want| <= 2e-4 * max(1, max |want|) + extra everywhere (extra: what
// the inputs' own conditioning allows, additive attention's scores below)
void compare(const char *what, const float *got, const std::vector<double> &want, double extra = 0.0) {
    double scale = 1.0;
    for (double w : want) scale = std::fmax(scale, std::fabs(w));
    for (std::size_t i = 0; i < want.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= 2e-4 * scale + extra)) {
            std::fprintf(stderr, "fuzz_c_api: %s[%zu] = %.9g, reference %.9g\n", what, i, got[i], want[i]);
            fail("result differs from the float64 reference");
        }
}

// For each of `rows` inputs x (rows, in_size) and output feature c of a
// projection W (out, in_size) + b: sum_i |W[c,i] x_i| + |b[c]|, the size
// the float32 projection's sum is rounded at.
std::vector<double> feature_sizes(std::size_t rows, std::size_t in_size, std::size_t out, const double *x,
                                  const double *W, const double *bias) {
    std::vector<double> sizes(rows * out);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < out; ++c) {
            double size = bias ? std::fabs(bias[c]) : 0.0;
            for (std::size_t i = 0; i < in_size; ++i) size += std::fabs(W[c * in_size + i] * x[r * in_size + i]);
            sizes[r * out + c] = size;
        }
    return sizes;
}

// How far float32 arithmetic may move a multi-head score q_h . k_h /
// sqrt(d) (d = hidden / heads) of Q projected queries against `len`
// projected keys, from the sizes of their features (feature_sizes): each
// feature off by (in_size + 2) eps its size, the dot product by (d + 2) eps
// sum |q_c k_c|. Query head h reads key head h / (heads / kv_heads).
double projected_score_error(const std::vector<double> &q_size, std::size_t Q, std::size_t q_in, std::size_t k_in,
                             std::size_t hidden, std::size_t heads, std::size_t kv_heads,
                             const std::vector<double> &k_size, std::size_t len) {
    constexpr double eps = 1.0 / 16777216.0;
    const std::size_t d = hidden / heads, kv_width = kv_heads * d, group = heads / kv_heads;
    const double per_size = static_cast<double>(q_in + k_in + d + 6) * eps / std::sqrt(static_cast<double>(d));
    double worst = 0.0;
    for (std::size_t i = 0; i < Q; ++i)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t t = 0; t < len; ++t) {
                double size = 0.0;
                for (std::size_t c = 0; c < d; ++c)
                    size += q_size[i * hidden + h * d + c] * k_size[t * kv_width + (h / group) * d + c];
                worst = std::fmax(worst, per_size * size);
            }
    return worst;
}

// The largest sum_c |W[j,c]| over W's rows: how far W moves a change of
// at most 1 in each input.
double largest_abs_row(const double *W, std::size_t rows, std::size_t cols) {
    double largest = 0.0;
    for (std::size_t j = 0; j < rows; ++j) {
        double row = 0.0;
        for (std::size_t c = 0; c < cols; ++c) row += std::fabs(W[j * cols + c]);
        largest = std::fmax(largest, row);
    }
    return largest;
}

// Attention::check's allowance for a multi-head call (B, Q queries, K
// keys): the largest projected_score_error, and how far a weight's change
// may move an output (the largest projected value's size times the largest
// row of |W_o|).
struct MhaAllowance {
    double score_error = 0.0, value_scale = 0.0;
};
MhaAllowance mha_allowance(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks,
                           std::size_t vs, std::size_t h, std::size_t H, std::size_t Hkv, const double *q,
                           const double *k, const double *v, const edgeattn_ref::MhaWeights &w) {
    MhaAllowance a;
    const std::size_t kv_width = Hkv * (h / H);
    double value_size = 0.0;
    for (std::size_t b = 0; b < B; ++b) {
        const std::vector<double> q_size = feature_sizes(Q, qs, h, q + b * Q * qs, w.W_q, w.b_q),
                                  k_size = feature_sizes(K, ks, kv_width, k + b * K * ks, w.W_k, w.b_k),
                                  v_size = feature_sizes(K, vs, kv_width, v + b * K * vs, w.W_v, w.b_v);
        a.score_error = std::fmax(a.score_error, projected_score_error(q_size, Q, qs, ks, h, H, Hkv, k_size, K));
        for (double x : v_size) value_size = std::fmax(value_size, x);
    }
    a.value_scale = value_size * largest_abs_row(w.W_o, h, h);
    return a;
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

// edgeattn_workspace_size of one attention or KV cache call: its bytes, or
// 0 where the query refuses the call's dims (the call refuses them too).
std::size_t workspace_query(edgeattn_op op, const edgeattn_attention_dims &d, std::size_t threads,
                            std::size_t tokens = 0) {
    edgeattn_workspace_request r{};
    r.op = op;
    r.dims = d;
    r.tokens = tokens;
    std::size_t bytes = 0;
    return edgeattn_workspace_size(&r, 1, threads, &bytes) == EDGEATTN_OK ? bytes : 0;
}

// What a KV cache call tells RopeGen: the sizes its rope is checked
// against, the tokens it rotates, and the memory a hostile rope may be
// aimed into.
struct RopeCall {
    std::size_t head_size = 0;       // the cache's
    std::size_t dims_head_size = 0;  // h / H of the call's dims (0: no heads)
    std::size_t batch = 0;           // the call's dims.batch
    std::size_t count = 0;           // tokens rotated per batch element: a store's T, an attend's Q
    bool writes_cache = false;       // a store: the cache's arrays are outputs
    bool checked = false;            // the cache is the one setup made, of the dims' sizes: positions are read
    std::vector<std::int64_t> default_first;  // per cache batch element, without rope positions
    std::vector<const Buffer *> cache_buffers;  // the cache struct and memory (cache_rules' own)
    std::vector<std::pair<const void *, std::size_t>> cache_arrays;  // keys, values, lengths, positions
};

// options.rope, drawn in this one place (extended inputs only).
//
// Ops other than the KV cache calls: mostly none, else some fields set,
// refused (EDGEATTN_ERR_OPTION_NOT_SUPPORTED).
//
// KV cache calls (choose and rules with a RopeCall): mostly none or a
// valid rope; its table (its own heap block of exactly max_positions x
// rotary_dims floats) made by edgeattn_rope_table from a drawn theta and
// position scale, or raw finite values (the calls only read the table, so
// any values test the formula), either layout, whole or partial rotary,
// positions NULL (the stream's) or a drawn per-batch array, negative ones
// too. Sometimes hostile: fields without a table, rotary_dims odd, 0 or
// past the head size, max_positions 0 or a table whose bytes overflow,
// a layout outside the enum (EDGEATTN_ERR_BAD_ROPE, _SIZE_OVERFLOW),
// positions out of range (_ROPE_POSITION), a table or positions
// misaligned (_MISALIGNED) or inside another argument (the workspace, an
// output, the cache's arrays: _OVERLAP where that is written; an input,
// or the cache an attend only reads, are fine: the positions may be the
// cache's own).
struct RopeGen {
    edgeattn_rope api{};
    Buffer table{Role::input, false}, pos{Role::input, false};  // cache calls
    std::size_t rotary_dims = 0, max_positions = 0;
    int layout = EDGEATTN_ROPE_NEOX;

    bool any() const {
        int l;
        std::memcpy(&l, &api.layout, sizeof l);
        return api.table || api.max_positions || api.rotary_dims || l != 0 || api.positions;
    }
    void choose(Input &in, bool cache_call) {
        static const float table_[8] = {1.0f, 1.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.75f, 0.75f};  // (2, 4)
        static const std::int32_t positions[8] = {0, 1, 2, 3, 0, 1, 2, 3};
        api = edgeattn_rope{};
        if (!in.extended || in.byte() < 200) return;
        const std::uint8_t fields = in.byte();
        if (fields & 1 && !cache_call) api.table = table_;
        if (fields & 2) api.max_positions = fields & 64 ? in.dim() : 2;
        if (fields & 4) api.rotary_dims = fields & 128 ? in.dim() : 2 + 2 * (in.byte() % 2);
        if (fields & 8) {
            const std::uint8_t l = in.byte();
            const int bad = l < 128 ? EDGEATTN_ROPE_GPTJ : l < 192 ? -1 : in.in.ConsumeIntegral<int>();
            std::memcpy(&api.layout, &bad, sizeof bad);  // C may store any int there
        }
        if (fields & 16) api.positions = positions;
        if (!any()) api.rotary_dims = 2;  // at least one field
    }
    void rules(Call &call, bool cache_call) const {
        if (!any()) return;
        call.allow(cache_call && !api.table ? EDGEATTN_ERR_BAD_ROPE : EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    }

    // A KV cache call's rope; its buffers join call.buffers (after the
    // call's own are placed and spoiled).
    void choose(Input &in, Call &call, const RopeCall &rc) {
        api = edgeattn_rope{};
        if (!in.extended) return;
        const std::uint8_t kind = in.byte();
        if (kind < 80) return;
        if (kind < 96) {  // fields without a table
            choose(in, true);
            if (!any()) api.rotary_dims = 2;
            return;
        }
        const std::uint8_t rb = in.byte();
        const std::size_t half = std::min<std::size_t>(rc.head_size, 64) / 2;
        if (half && rb < 224) rotary_dims = 2 * (1 + rb % half);  // whole or partial
        else switch (rb % 4) {
                case 0: rotary_dims = 0; break;
                case 1: rotary_dims = 1 + 2 * (rb / 4 % 4); break;  // odd
                case 2: rotary_dims = rc.head_size + 1 + rb / 4 % 2; break;
                default: rotary_dims = rc.head_size + 2; break;
            }
        const std::uint8_t mb = in.byte();
        max_positions = mb < 40 ? 1 + mb % 8 : mb < 244 ? 8 + mb : mb < 250 ? 0 : SIZE_MAX / 2 + mb % 2;
        if (max_positions < SIZE_MAX / 4 && rotary_dims && max_positions * rotary_dims > kMaxElements)
            max_positions = kMaxElements / rotary_dims;
        const std::uint8_t lb = in.byte();
        layout = lb < 112 ? EDGEATTN_ROPE_NEOX : lb < 224 ? EDGEATTN_ROPE_GPTJ
                 : lb < 232 ? 2 : lb < 240 ? -1 : lb < 248 ? INT_MIN : in.in.ConsumeIntegral<int>();
        claim(table, max_positions, rotary_dims);
        table.allocate(table.overflow ? 64 : table.claimed);
        fill_table(in);
        api.table = reinterpret_cast<const float *>(aim(in, call, rc, table));
        api.max_positions = max_positions;
        api.rotary_dims = rotary_dims;
        std::memcpy(&api.layout, &layout, sizeof layout);  // C may store any int there
        call.buffers.push_back(&table);
        const std::uint8_t pb = in.byte();
        if (pb < 112 || !rc.batch || rc.batch > 64) return;
        claim(pos, rc.batch, 1, 1, 1, sizeof(std::int32_t));
        pos.allocate(pos.claimed);
        for (std::size_t b = 0; b < rc.batch; ++b) {
            const std::uint8_t v = in.byte();
            const std::int64_t m = static_cast<std::int64_t>(std::min<std::size_t>(max_positions, INT32_MAX));
            const std::int64_t edge[4] = {m - 1, 1 - m, m, -m};
            std::int32_t p = static_cast<std::int32_t>(v % 48) - 16;
            if (v >= 200) p = static_cast<std::int32_t>(edge[v % 4]);
            if (v >= 224) p = v % 3 == 0 ? INT32_MIN : v % 3 == 1 ? INT32_MAX : -INT32_MAX;
            if (v >= 248) p = in.in.ConsumeIntegral<std::int32_t>();
            std::memcpy(pos.mem.get() + sizeof p * b, &p, sizeof p);
        }
        api.positions = reinterpret_cast<const std::int32_t *>(aim(in, call, rc, pos));
        call.buffers.push_back(&pos);
    }

    // The table's values: edgeattn_rope_table's (valid sizes) or raw
    // multiples of 1/64 below 2 in size.
    void fill_table(Input &in) {
        const std::uint8_t vb = in.byte();
        const bool sizes_ok = !table.overflow && rotary_dims && rotary_dims % 2 == 0 && max_positions;
        if (sizes_ok && vb < 144) {
            static const double thetas[8] = {0.0, 10000.0, 500000.0, 1e6, 2.0, 100.0, 1.5, 1.0};
            static const double scales[8] = {0.0, 1.0, 0.25, 2.0, 8.0, 40.0, 1.0 / 3, 0.5};
            const edgeattn_rope_table_config config{max_positions, rotary_dims, thetas[vb % 8], scales[vb / 8 % 8]};
            const edgeattn_status st = edgeattn_rope_table(&config, table.f(), max_positions * rotary_dims);
            FUZZ_CHECK(st == EDGEATTN_OK, "rope_table refused a valid config", st);
            return;
        }
        for (std::size_t i = 0; i + 4 <= table.bytes; i += 4) {
            const float v = static_cast<float>(in.in.ConsumeIntegral<std::int8_t>()) / 64.0f;
            std::memcpy(table.mem.get() + i, &v, 4);
        }
    }

    // Where b goes: mostly its own block; sometimes misaligned, or inside
    // another argument's block or one of the cache's arrays (all it claims
    // within). Returns the pointer the call gets.
    static unsigned char *aim(Input &in, Call &call, const RopeCall &rc, Buffer &b) {
        const std::uint8_t how = in.byte();
        if (how < 216 || b.overflow) return b.ptr;
        if (how < 230) {
            if (b.bytes < 4) return b.ptr;
            b.ptr += 1 + how % 3;  // the call must refuse it before it reads there
            b.avail -= 1 + how % 3;
            return b.ptr;
        }
        std::vector<std::pair<unsigned char *, std::size_t>> targets;
        for (Buffer *x : call.buffers)
            if (x != &b && x->mem && !x->opaque && std::find(rc.cache_buffers.begin(), rc.cache_buffers.end(), x) ==
                                                        rc.cache_buffers.end())
                targets.push_back({x->mem.get(), x->bytes});
        for (const auto &a : rc.cache_arrays)
            targets.push_back({static_cast<unsigned char *>(const_cast<void *>(a.first)), a.second});
        if (targets.empty()) return b.ptr;
        const auto &t = targets[in.byte() % targets.size()];
        if (b.claimed > t.second) return b.ptr;
        const std::size_t off = in.byte() % ((t.second - b.claimed) / 4 + 1) * 4;
        b.ptr = t.first + off;
        b.avail = t.second - off;
        return b.ptr;
    }

    // The statuses a KV cache call's rope calls for.
    void rules(Call &call, const RopeCall &rc) const {
        if (!any()) return;
        if (!api.table) {
            call.allow(EDGEATTN_ERR_BAD_ROPE);
            return;
        }
        const std::size_t rd = rotary_dims;
        if (!rd || rd % 2 || rd > rc.head_size || (rc.dims_head_size && rd > rc.dims_head_size) || !max_positions ||
            (layout != EDGEATTN_ROPE_NEOX && layout != EDGEATTN_ROPE_GPTJ))
            call.allow(EDGEATTN_ERR_BAD_ROPE);
        if (table.overflow) {
            call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
            return;
        }
        auto misaligned = [](const void *p) { return reinterpret_cast<std::uintptr_t>(p) % 4 != 0; };
        if (misaligned(api.table)) call.allow(EDGEATTN_ERR_MISALIGNED);
        if (misaligned(api.positions)) {  // not readable: nothing more to check
            call.allow(EDGEATTN_ERR_MISALIGNED);
            return;
        }
        const std::pair<const void *, std::size_t> read[2] = {{api.table, table.claimed},
                                                              {api.positions, api.positions ? pos.claimed : 0}};
        for (const auto &r : read) {
            for (const Buffer *x : call.buffers)
                if (x->role != Role::input && x->ptr && !x->overflow &&
                    std::find(rc.cache_buffers.begin(), rc.cache_buffers.end(), x) == rc.cache_buffers.end() &&
                    overlaps(r.first, r.second, x->ptr, x->claimed))
                    call.allow(EDGEATTN_ERR_OVERLAP);
            if (rc.writes_cache)
                for (const auto &a : rc.cache_arrays)
                    if (overlaps(r.first, r.second, a.first, a.second)) call.allow(EDGEATTN_ERR_OVERLAP);
        }
        if (!rc.checked || !max_positions) return;
        // every position first + t, t < count, within (-max_positions, max_positions)
        const std::int64_t m = static_cast<std::int64_t>(std::min<std::size_t>(max_positions, INT64_MAX / 4));
        for (std::size_t b = 0; b < rc.batch && b < rc.default_first.size(); ++b) {
            std::int64_t first = rc.default_first[b];
            if (api.positions) {
                std::int32_t p;
                std::memcpy(&p, reinterpret_cast<const unsigned char *>(api.positions) + sizeof p * b, sizeof p);
                first = p;
            }
            if (first <= -m || first >= m || rc.count > static_cast<std::uint64_t>(m - first))
                call.allow(EDGEATTN_ERR_ROPE_POSITION);
        }
    }

    bool active() const { return api.table != nullptr; }
    // Batch element b's first position (after a successful call).
    std::int64_t first(std::size_t b, std::int64_t default_first) const {
        return api.positions ? pos.at<std::int32_t>(b) : default_first;
    }
    // The rotation of `count` tokens of `heads` heads of head_size features
    // (token t at rows + t * stride, position first + t), in double from the
    // table's floats as the call was given them: pair i of a head, x and y,
    // becomes x c - y s, y c + x s (s negated at a negative position). The
    // features' sizes (feature_sizes) go along: |c| sx + |s| sy, which with
    // the rotation's own two roundings per feature keeps each feature within
    // (in_size + 4) eps of its size (projected_score_error's in_size + 2).
    void rotate(double *rows, double *sizes, std::size_t count, std::size_t heads, std::size_t head_size,
                std::size_t stride, std::int64_t first_position) const {
        if (!active()) return;
        const std::size_t half = rotary_dims / 2;
        for (std::size_t t = 0; t < count; ++t) {
            const std::int64_t p = first_position + static_cast<std::int64_t>(t);
            const std::size_t row = static_cast<std::size_t>(p < 0 ? -p : p);
            FUZZ_CHECK(row < max_positions, "a call rotated at a position past the table", 0);
            for (std::size_t hd = 0; hd < heads; ++hd)
                for (std::size_t i = 0; i < half; ++i) {
                    const double c = table.at<float>(row * rotary_dims + i),
                                 s = (p < 0 ? -1.0 : 1.0) * table.at<float>(row * rotary_dims + half + i);
                    const std::size_t base = t * stride + hd * head_size,
                                      xi = base + (layout == EDGEATTN_ROPE_NEOX ? i : 2 * i),
                                      yi = base + (layout == EDGEATTN_ROPE_NEOX ? i + half : 2 * i + 1);
                    const double x = rows[xi], y = rows[yi], sx = sizes[xi], sy = sizes[yi];
                    rows[xi] = x * c - y * s;
                    rows[yi] = y * c + x * s;
                    sizes[xi] = std::fabs(c) * sx + std::fabs(s) * sy;
                    sizes[yi] = std::fabs(c) * sy + std::fabs(s) * sx;
                }
        }
    }
};

// The options of an attention call: the valid lengths, the mask and the
// rope chosen; a NULL pointer when the input gives none of them.
struct Options {
    edgeattn_attention_options api{};
    bool pass_null = true;
    void set(const edgeattn_valid_lens *lens, const edgeattn_attention_mask *mask, const RopeGen *rope = nullptr,
             int tensor_type = EDGEATTN_DTYPE_F32) {
        api = edgeattn_attention_options{};
        if (lens) api.valid_lens = *lens;  // any int in kind, as Lens::rules stored it
        if (mask) api.mask = *mask;
        const bool with_rope = rope && rope->any();
        if (with_rope) api.rope = rope->api;
        std::memcpy(&api.tensor_type, &tensor_type, sizeof tensor_type);  // any int, as a C caller may store
        pass_null = !lens && !mask && !with_rope && tensor_type == EDGEATTN_DTYPE_F32;
    }
    const edgeattn_attention_options *get() const { return pass_null ? nullptr : &api; }
};

// The score options of a third-op input (Input::score), valid and hostile,
// with the statuses the headers give them: EDGEATTN_ERR_BAD_OPTION for a
// NaN or infinite scale, a negative, NaN or infinite softcap or ALiBi
// bias, an enum outside its values; OPTION_NOT_SUPPORTED for ALiBi on
// edgeattn_sdpa (no heads).
struct ScoreGen {
    bool any = false;
    float scale = 0.0f, softcap = 0.0f, alibi = 0.0f;
    int masking = 0, weights_output = 0, alignment = 0;
    std::size_t right_window = 0;

    void choose(Input &in) {
        if (!in.score) return;
        any = true;
        const float hostile[] = {NAN, INFINITY, -INFINITY};
        std::uint8_t b = in.byte();
        scale = b < 90 ? 0.0f : b < 240 ? static_cast<float>(1 + b % 16) / 8 * (b & 1 ? -1.0f : 1.0f) : hostile[b % 3];
        b = in.byte();
        softcap = b < 100 ? 0.0f : b < 225 ? 0.25f + static_cast<float>(b % 16) / 2 : b < 235 ? -1.0f : hostile[b % 3];
        b = in.byte();
        masking = b < 110 ? 0 : b < 245 ? 1 : in.in.ConsumeIntegral<int>();
        b = in.byte();
        weights_output = b < 100 ? 0 : b < 245 ? 1 + b % 3 : in.in.ConsumeIntegral<int>();
        b = in.byte();
        alignment = b < 100 ? 0 : b < 245 ? 1 + b % 2 : in.in.ConsumeIntegral<int>();
        b = in.byte();
        right_window = b < 140 ? 0 : b < 245 ? 1 + b % 6 : SIZE_MAX;
        b = in.byte();
        alibi = b < 120 ? 0.0f : b < 230 ? static_cast<float>(1 + b % 8) : b < 238 ? -2.0f : hostile[b % 3];
    }
    static bool finite(float v) { return v - v == 0.0f; }
    // Before the call; alibi_taken: the op has heads.
    void rules(Call &call, bool alibi_taken) const {
        if (!any) return;
        if (!finite(scale) || !finite(softcap) || softcap < 0.0f || masking < 0 || masking > 1 ||
            weights_output < 0 || weights_output > 3 || alignment < 0 || alignment > 2 || !finite(alibi) ||
            alibi < 0.0f)
            call.allow(EDGEATTN_ERR_BAD_OPTION);
        // Either may come first when both apply.
        if (finite(alibi) && alibi > 0.0f && !alibi_taken) call.allow(EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    }
    void apply(Options &o) const {
        if (!any) return;
        o.api.scale = scale;
        o.api.softcap = softcap;
        std::memcpy(&o.api.masking, &masking, sizeof masking);  // C may store any int there
        std::memcpy(&o.api.weights_output, &weights_output, sizeof weights_output);
        std::memcpy(&o.api.mask.alignment, &alignment, sizeof alignment);
        o.api.mask.right_window = right_window;
        o.api.mask.alibi_max_bias = alibi;
        o.pass_null = false;
    }
    void reference(edgeattn_ref::Mask &r) const {
        if (!any) return;
        r.scale = scale;
        r.softcap = softcap;
        r.exclude = masking == 1;
        r.weights_output = static_cast<edgeattn_ref::Mask::WeightsOut>(weights_output);
        r.alignment = static_cast<edgeattn_ref::Mask::Align>(alignment);
        r.right_window = right_window;
        r.alibi_max_bias = alibi;
    }
    // How much more a score may move than with d2l's 1/sqrt(d): the scale's
    // size over 1/sqrt(d), the softcap's tanh (4 ULP of c), ALiBi's slope
    // times distance (a few ULP of it, the distance below Q + K).
    double score_error(double d2l_error, std::size_t d, std::size_t Q, std::size_t K) const {
        constexpr double eps = 1.0 / 16777216.0;
        double e = d2l_error * std::fmax(1.0, std::fabs(scale) * std::sqrt(static_cast<double>(d)));
        if (softcap > 0.0f) e += 8.0 * eps * softcap;
        if (alibi > 0.0f) e += 8.0 * eps * static_cast<double>(Q + K + 1);
        return e;
    }
    // -inf weights (weights_output MASKED with EXCLUDE) must be -inf where
    // the reference has them; they then compare as 0.
    void match_infinities(float *got, std::vector<double> &want) const {
        if (!got) return;
        for (std::size_t i = 0; i < want.size(); ++i)
            if (std::isinf(want[i])) {
                FUZZ_CHECK(static_cast<double>(got[i]) == want[i], "a masked score is not -inf", 0);
                got[i] = 0.0f;
                want[i] = 0.0;
            }
    }
};

// EDGEATTN_DTYPE_NONE given to matrices (extended inputs, now and then):
// an op that does not take it, EDGEATTN_ERR_BAD_WEIGHT_TYPE; one that
// does (taken: edgeattn_mha), the rows as given, refused when they are not
// as wide as the projection's output or a bias sits beside the matrix.
// Returns the bits of the matrices set to NONE.
unsigned maybe_none(Input &in, Call &call, std::initializer_list<edgeattn_weight_matrix *> matrices,
                    bool taken = false) {
    if (!in.extended || in.byte() < 220) return 0;
    const std::uint8_t which = in.byte();
    std::size_t i = 0;
    unsigned none = 0;
    for (edgeattn_weight_matrix *m : matrices) {
        if (which >> i & 1u || which >= 250) {
            m->type = EDGEATTN_DTYPE_NONE;
            none |= 1u << i;
        }
        ++i;
    }
    if (which % (1u << matrices.size()) == 0) {
        (*matrices.begin())->type = EDGEATTN_DTYPE_NONE;
        none |= 1u;
    }
    if (taken) {
        call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
        call.allow(EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
        call.allow(EDGEATTN_OK);
    } else {
        call.allow(EDGEATTN_ERR_BAD_WEIGHT_TYPE);
    }
    return none;
}

// The options' tensor_type (extended inputs, now and then): an int outside
// F32 and F16 (EDGEATTN_ERR_BAD_OPTION), or F16 for an op that refuses
// binary16 tensors (refuses_half: EDGEATTN_ERR_OPTION_NOT_SUPPORTED).
// F16 tensors elsewhere are checked in test_attention_shapes.
int choose_tensor_type(Input &in, Call &call, bool refuses_half) {
    if (!in.extended || in.byte() < 240) return EDGEATTN_DTYPE_F32;
    const int hostile[] = {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_NONE, 4, -1, INT_MIN, INT_MAX};
    const std::uint8_t pick = in.byte();
    if (refuses_half && pick % 2) {
        call.allow(EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
        return EDGEATTN_DTYPE_F16;
    }
    call.allow(EDGEATTN_ERR_BAD_OPTION);
    return hostile[pick % 6];
}

// The options of an op that rotates nothing: its valid lengths and mask,
// and a rope and a tensor_type drawn for it to refuse (extended inputs).
Options options_refusing_rope(Input &in, Call &call, const edgeattn_valid_lens *lens,
                              const edgeattn_attention_mask *mask, bool refuses_half = false) {
    RopeGen rope;
    rope.choose(in, false);
    rope.rules(call, false);
    Options o;
    o.set(lens, mask, &rope, choose_tensor_type(in, call, refuses_half));
    return o;
}

// fp32 weight matrices over the buffers' pointers (NULL data where a
// buffer was never made).
edgeattn_weight_matrix f32_matrix(const float *data) { return {EDGEATTN_DTYPE_F32, data, nullptr}; }

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
    const edgeattn_softmax_dims *dims_arg = call.place(in, &dims);
    const edgeattn_valid_lens *lens_arg = call.place(in, lens.get());
    if (!call.run([&] { return edgeattn_masked_softmax(dims_arg, X.f(), lens_arg, Y.f()); })) return;

    const std::size_t K = dims.keys, rows = dims.batch * dims.queries;
    const std::vector<double> x = doubles(X, rows * K);
    if (!in.special) {
        std::vector<double> want(rows * K);
        edgeattn_ref::masked_softmax(dims.batch, dims.queries, K, x.data(), lens.reference(), want.data());
        if (all_finite(want)) {
            compare("masked_softmax", Y.f(), want);
            return;
        }
    }
    // Edge semantics (special values, or scores read through a pointer spoiled
    // into another buffer, where int32 lengths can be NaN as floats): a NaN
    // among the valid scores makes the row NaN; else every weight is a number
    // in [0, 1] and the row sums to 1.
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
    // the workspace: around the size asked for; 0 from workspace_query on
    // valid dims means the size overflows
    // `size` is workspace_query(op, dims, threads); the call needs at least
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
    // score_error: how far float32 arithmetic may move a score (0: the
    // fixed bound alone); a softmax weight moves by at most about twice
    // that, an output by that times value_scale, how far a weight's change
    // moves it (the largest |value|; through W_o, mha_allowance) (both x2 to
    // spare).
    // summation: what float32 may add up over the K terms of an output's
    // weighted sum (each rounded once to the running sum's ulp).
    void check(const std::vector<double> &want_out, const std::vector<double> &want_weights_ref,
               double score_error = 0.0, double value_scale = 0.0, double summation = 0.0) {
        if (in_special) return;  // float overflow may differ from double: the run itself is the test
        if (!all_finite(want_out)) return;
        compare("output", out.f(), want_out, 4.0 * score_error * value_scale + summation);
        // The softmax's sum of K exponentials rounds each term to the running
        // sum's ulp: K x 2^-24 of the sum at most (x2 to spare); 4095 terms
        // just above half an ulp of 1 move a weight near 1 by 2e-4.
        const double normalisation = 2.0 * static_cast<double>(dims.keys) * 0x1p-24;
        if (want_weights && weights.ptr)  // NULL: not asked for
            compare("attention_weights", weights.f(), want_weights_ref, 4.0 * score_error + normalisation);
    }
    bool in_special = false;
};

// A weighted sum of K values rounds each term to the running sum's ulp:
// K x 2^-24 x the largest |value| at most (2x to spare). Thousands of tiny
// weights beside one near 1 meet that bound (findings/README.md).
double summation_error(std::size_t keys, const std::vector<double> &values) {
    double largest = 0.0;
    for (double x : values) largest = std::fmax(largest, std::fabs(x));
    return 2.0 * static_cast<double>(keys) * 0x1p-24 * largest;
}

// How far float32 may move a dot-product score q.k / sqrt(d) + bias: the
// d products' sum rounds by at most (d + 2) x 2^-24 x sum_c |q_c k_c| / sqrt(d)
// with the scaling, and adding a bias rounds at |score| + |bias| once more
// (x2 to spare). A bias of 1e7 moves a score by a whole unit.
double dot_score_error(std::size_t B, std::size_t Q, std::size_t K, std::size_t d, const std::vector<double> &q,
                       const std::vector<double> &k, const std::vector<double> &bias) {
    constexpr double eps = 1.0 / 16777216.0;
    double largest_bias = 0.0;
    for (double x : bias) largest_bias = std::fmax(largest_bias, std::fabs(x));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    double worst = 0.0;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Q; ++i)
            for (std::size_t j = 0; j < K; ++j) {
                double size = 0.0;
                for (std::size_t c = 0; c < d; ++c) size += std::fabs(q[(b * Q + i) * d + c] * k[(b * K + j) * d + c]);
                size *= scale;
                const double err = static_cast<double>(d + 2) * eps * size + (largest_bias ? eps * (size + largest_bias) : 0.0);
                worst = std::fmax(worst, 2.0 * err);
            }
    return worst;
}

// What adding a mask's bias does to a score in float32: it rounds at
// |score| + |bias| (the score's own part is in the score's bound), and a
// large bias takes most of the score's bits (a bias of -12345, an output
// block's fill read as the bias, moves weights by 2e-4) (x2 to spare).
double bias_rounding(const edgeattn_ref::Mask &mask) {
    double largest = 0.0;
    for (double x : mask.bias)
        if (std::isfinite(x)) largest = std::fmax(largest, std::fabs(x));
    return 2.0 * 0x1p-24 * largest;
}

// A dot-product call's sizes (key_size 0 mostly: "the same as query_size"),
// whether it returns weights, and its valid lengths; plain and masked alike.
void choose_dot_product(Input &in, Attention &a) {
    a.in_special = in.special;
    a.dims = {in.dim(), in.dim(), in.dim(), in.dim(), mostly(in) ? 0 : in.dim(), in.dim(), 0, 0, 0, 0};
    a.want_weights = mostly(in);
    a.lens.choose(in, a.dims.batch, a.dims.queries);
}

void fuzz_dot_product(Input &in) {
    g_op = "dot_product_attention";
    Attention a;
    choose_dot_product(in, a);
    const std::size_t d = a.dims.query_size, ks = a.dims.key_size ? a.dims.key_size : d;
    edgeattn_attention_dims claimed = a.dims;
    claimed.key_size = ks;
    std::swap(a.dims, claimed);
    a.claims(a.dims.value_size, 1);
    std::swap(a.dims, claimed);
    const bool zero = a.dims.batch == 0 || a.dims.queries == 0 || a.dims.keys == 0 || d == 0 || a.dims.value_size == 0;
    if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (ks != d) a.call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
    a.workspace(in, workspace_query(EDGEATTN_OP_SDPA, a.dims, 1 + in.byte() % 4),
                workspace_query(EDGEATTN_OP_SDPA, a.dims, 1), !zero && ks == d);
    a.finish(in, {});
    const Options o = options_refusing_rope(in, a.call, a.lens.get(), nullptr);
    const edgeattn_attention_dims *dims_arg = a.call.place(in, &a.dims);
    const edgeattn_attention_options *options_arg = a.call.place(in, o.get());
    if (!a.call.run([&] {
            return edgeattn_sdpa(dims_arg, a.q.f(), a.k.f(), a.v.f(), options_arg, a.ws.ptr, a.ws.claimed,
                                 a.out.f(), a.weights_ptr());
        }))
        return;
    const edgeattn_attention_dims &D = a.dims;
    std::vector<double> out(D.batch * D.queries * D.value_size), w(D.batch * D.queries * D.keys);
    const std::vector<double> q = doubles(a.q, D.batch * D.queries * d), k = doubles(a.k, D.batch * D.keys * d),
                              v = doubles(a.v, D.batch * D.keys * D.value_size);
    edgeattn_ref::dot_product_attention(D.batch, D.queries, D.keys, d, D.value_size, q.data(), k.data(), v.data(),
                                        a.lens.reference(), out.data(), w.data());
    a.check(out, w, 0.0, 0.0, summation_error(D.keys, v));
}

// Multi-head attention (edgeattn_mha), or self-attention: edgeattn_mha
// with X as queries, keys and values and full dims (keys = queries,
// key_size = value_size = num_hiddens = query_size).
void fuzz_multi_head(Input &in, bool self) {
    g_op = self ? "mha (self-attention)" : "mha";
    Attention a;
    a.in_special = in.special;
    const std::size_t heads = 1 + in.byte() % 4;
    a.dims = {in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), heads * (1 + in.byte() % 3),
              heads, 0, 0};
    if (!mostly(in)) a.dims.num_hiddens = in.dim();
    if (!mostly(in)) a.dims.num_heads = in.dim();
    if (self) {  // the full dims of X (B, n, d); the input's choice of other sizes is read, not used
        (void)mostly(in);
        a.dims.keys = a.dims.queries;
        a.dims.key_size = a.dims.value_size = a.dims.num_hiddens = a.dims.query_size;
    }
    edgeattn_attention_dims D = a.dims;  // as the op reads them
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
    a.workspace(in, workspace_query(EDGEATTN_OP_MHA, D, threads), workspace_query(EDGEATTN_OP_MHA, D, 1),
                !zero && h % D.num_heads == 0);
    a.finish(in, params);
    auto bias = [](Buffer &b) { return b.mem ? b.f() : nullptr; };  // NULL when not chosen or spoiled
    edgeattn_weights w{f32_matrix(W_q.f()), f32_matrix(W_k.f()), f32_matrix(W_v.f()), f32_matrix(W_o.f()),
                       bias(b_q), bias(b_k), bias(b_v), bias(b_o)};
    // Projection-free results are checked against the reference in
    // test_attention_shapes; here their statuses and untouched buffers.
    const unsigned none = maybe_none(in, a.call, {&w.W_q, &w.W_k, &w.W_v, &w.W_o}, true);
    const Options o = options_refusing_rope(in, a.call, a.lens.get(), nullptr);
    const edgeattn_attention_dims *dims_arg = a.call.place(in, &a.dims);
    const edgeattn_attention_options *options_arg = a.call.place(in, o.get());
    const edgeattn_weights *w_arg = a.call.place(in, &w);
    // Self-attention: X (the queries' buffer) is the keys and values too.
    const float *keys = self ? a.q.f() : a.k.f(), *values = self ? a.q.f() : a.v.f();
    const bool ok = a.call.run([&] {
        return edgeattn_mha(dims_arg, a.q.f(), keys, values, w_arg, options_arg, a.ws.ptr, a.ws.claimed, a.out.f(),
                            a.weights_ptr());
    });
    if (!ok || none) return;
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
    const MhaAllowance allow = mha_allowance(D.batch, D.queries, D.keys, D.query_size, D.key_size, D.value_size, h,
                                             D.num_heads, D.num_heads, q.data(), k.data(), v.data(), rw);
    a.check(out, wts, allow.score_error, allow.value_scale);
}

void fuzz_positional(Input &in) {
    const bool add = in.in.ConsumeBool();
    g_op = add ? "positional_encoding_add_at" : "positional_encoding_table";
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
    if (!call.run([&] {
            return edgeattn_positional_encoding_add_at(batch, n, d, 0, X.f(), P.f(), max_len, Y.f());
        }))
        return;
    for (std::size_t i = 0; i < batch * n * d; ++i) {
        const float want = X.at<float>(i) + P.at<float>(i % (n * d));
        FUZZ_CHECK(std::memcmp(&want, Y.f() + i, 4) == 0 || (std::isnan(want) && std::isnan(Y.f()[i])),
                   "positional add value", 0);
    }
}

// --------------------------------------------- masks, packed weights, KV cache

std::size_t kv_heads_of(const edgeattn_attention_dims &d) { return d.num_kv_heads ? d.num_kv_heads : d.num_heads; }

// num_kv_heads: 0 (= H) mostly, a divisor of H, a count that may not divide
// H, or any size
std::size_t choose_kv_heads(Input &in, std::size_t H) {
    const std::uint8_t b = in.byte();
    if (b < 100) return 0;
    if (b < 220) {
        std::vector<std::size_t> divisors;
        for (std::size_t x = 1; x <= 8 && x <= H; ++x)
            if (H % x == 0) divisors.push_back(x);
        return divisors.empty() ? 1 : divisors[b % divisors.size()];
    }
    if (b < 240) return 1 + b % 8;
    return in.dim();
}

void reclaim(Buffer &b, std::size_t a, std::size_t c = 1, std::size_t d = 1, std::size_t e = 1,
             std::size_t elem = sizeof(float)) {
    b.overflow = false;
    b.claimed = 0;
    claim(b, a, c, d, e, elem);
}

// Puts a buffer made before back to its own block.
void unspoil(Buffer &b) {
    if (!b.mem) return;
    b.ptr = b.mem.get();
    b.avail = b.bytes;
}

// A size to give for `need` bytes: mostly it, sometimes less (unaligned too), sometimes more
std::size_t around(Input &in, std::size_t need) {
    const std::uint8_t how = in.byte();
    if (how >= 200) return how % 2 ? need / 2 : (need > 4 ? need - 1 - how % 4 : 0);
    if (how >= 150) return need + 4 * (how % 8);
    return need;
}

// n doubles from element `first` of what the call was given in b
std::vector<double> doubles_at(const Buffer &b, std::size_t first, std::size_t n) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = b.at<float>(first + i);
    return v;
}

// Whether B*H*Q*K (the reference's weights) is small enough to compute here.
bool reference_fits(std::size_t B, std::size_t H, std::size_t Q, std::size_t K) {
    std::size_t n = 1;
    for (std::size_t x : {B, H, Q, K}) {
        if (x != 0 && n > (std::size_t{1} << 22) / x) return false;
        n *= x;
    }
    return true;
}

std::int32_t range_value(Input &in, std::size_t keys) {
    const std::uint8_t b = in.byte();
    if (b < 232) return static_cast<std::int32_t>(b % (keys < 250 ? keys + 3 : 253));  // 0 .. K + 2
    if (b < 244) return -1 - static_cast<std::int32_t>(b - 232);
    return in.in.ConsumeIntegral<std::int32_t>();
}

// An edgeattn_attention_mask: NULL, or causal (any int32), key ranges of
// any kind (any int) and values, a bias of any shape (-inf entries too).
struct MaskGen {
    bool pass_null = true;
    edgeattn_attention_mask api{};
    std::int32_t causal = 0;
    std::size_t window = 0;  // extended inputs: a sliding window, any size
    int kind = EDGEATTN_KEY_RANGES_NONE;
    bool ignored_ranges = false;  // kind NONE with a pointer to bad ranges: must be ignored
    Buffer ranges{Role::input, true}, bias{Role::input, false};
    bool with_bias = false, ninf = false;
    std::size_t bias_batch = 0, bias_heads = 0, bias_keys = 0;  // as given
    std::size_t pairs = 0;

    // B, Q, H (heads the bias may have), K (keys: a bias row's default)
    void choose(Input &in, std::size_t B, std::size_t Q, std::size_t H, std::size_t K) {
        ranges.custom = bias.custom = true;
        const std::uint8_t m = in.byte();
        pass_null = m < 40;
        if (pass_null) return;
        const std::uint8_t c = in.byte();
        causal = c < 128 ? 0 : c < 230 ? 1 : c < 240 ? -1 : c < 250 ? 2 : INT32_MIN;
        if (in.extended) {
            const std::uint8_t w = in.byte();
            window = w < 90 ? 0 : w < 200 ? 1 + w % (K < 16 ? K + 2 : 18) : w < 215 ? SIZE_MAX : w < 225 ? K : in.dim();
        }
        const std::uint8_t k = in.byte();
        kind = k < 90 ? EDGEATTN_KEY_RANGES_NONE : k < 160 ? EDGEATTN_KEY_RANGES_PER_BATCH
               : k < 245 ? EDGEATTN_KEY_RANGES_PER_QUERY : in.in.ConsumeIntegral<int>();
        ignored_ranges = kind == EDGEATTN_KEY_RANGES_NONE && k % 3 == 0;
        if (kind == EDGEATTN_KEY_RANGES_PER_BATCH) {
            claim(ranges, B, 2, 1, 1, 4);
            pairs = B;
        }
        if (kind == EDGEATTN_KEY_RANGES_PER_QUERY) {
            claim(ranges, B, Q, 2, 1, 4);
            pairs = B * Q;
        }
        with_bias = in.byte() < 100;
        if (!with_bias) return;
        auto pick = [&](std::size_t full) -> std::size_t {
            const std::uint8_t b = in.byte();
            return b < 90 ? 1 : b < 180 ? full : b < 215 ? 0 : in.dim();
        };
        bias_batch = pick(B);
        bias_heads = pick(H);
        const std::uint8_t kb = in.byte();
        bias_keys = kb < 110 ? 0 : kb < 200 ? K + kb % 3 : kb < 225 ? (K ? K - 1 : 0) : in.dim();
        claim(bias, bias_batch ? bias_batch : 1, bias_heads ? bias_heads : 1, Q, bias_keys ? bias_keys : K);
        ninf = in.byte() < 60;
    }
    bool has_ranges() const {
        return !pass_null && (kind == EDGEATTN_KEY_RANGES_PER_BATCH || kind == EDGEATTN_KEY_RANGES_PER_QUERY);
    }
    void add_to(Call &call) {
        if (has_ranges()) {
            call.buffers.push_back(&ranges);
            call.ranges = &ranges;
        }
        if (!pass_null && with_bias) call.buffers.push_back(&bias);
    }
    // after allocation, before the call is spoiled
    void fill(Input &in, std::size_t keys) {
        if (has_ranges() && ranges.mem && !ranges.overflow && ranges.claimed <= ranges.bytes)
            for (std::size_t p = 0; p < pairs; ++p) {
                const std::int32_t start = range_value(in, keys);
                std::int32_t end;
                if (in.byte() < 220) {
                    const std::int64_t e = static_cast<std::int64_t>(start) + range_value(in, keys);
                    end = static_cast<std::int32_t>(e > INT32_MAX ? INT32_MAX : e < INT32_MIN ? INT32_MIN : e);
                } else {
                    end = range_value(in, keys);
                }
                std::memcpy(ranges.mem.get() + 8 * p, &start, 4);
                std::memcpy(ranges.mem.get() + 8 * p + 4, &end, 4);
            }
        if (!pass_null && with_bias && bias.mem)
            for (std::size_t i = 0; i + 4 <= bias.bytes; i += 4) {
                float v;
                if (in.special) {
                    v = in.value(1.0f / 16);
                } else {
                    const std::int8_t b = in.in.ConsumeIntegral<std::int8_t>();
                    v = ninf && b == -128 ? -INFINITY : static_cast<float>(b) / 16;
                }
                std::memcpy(bias.mem.get() + i, &v, 4);
            }
    }
    // After the call is spoiled: the struct, and the rules about it. B, H,
    // K as the call checks them (a KV cache call: K = capacity).
    void rules(Call &call, std::size_t B, std::size_t H, std::size_t K) {
        static const std::int32_t bad_pair[2] = {-5, -9};
        api = edgeattn_attention_mask{};
        api.causal = causal;
        api.window = window;
        std::memcpy(&api.ranges_kind, &kind, sizeof kind);  // C may store any int there
        api.key_ranges = has_ranges() ? reinterpret_cast<const std::int32_t *>(ranges.ptr)
                                      : ignored_ranges ? bad_pair : nullptr;
        if (pass_null) return;
        if (kind < 0 || kind > 2) call.allow(EDGEATTN_ERR_BAD_KEY_RANGE);
        if (has_ranges() && ranges.readable())
            for (std::size_t p = 0; p < pairs; ++p) {
                std::int32_t r[2];
                std::memcpy(r, ranges.ptr + 8 * p, 8);
                if (r[0] < 0 || r[1] < r[0]) call.allow(EDGEATTN_ERR_BAD_KEY_RANGE);
            }
        if (!with_bias) return;
        if (!bias.ptr) {  // spoiled to NULL: no bias, and nothing about its shape is read
            for (std::size_t i = 0; i < call.buffers.size(); ++i)
                if (call.buffers[i] == &bias) call.buffers.erase(call.buffers.begin() + i);
            return;
        }
        api.bias = bias.f();
        api.bias_batch = bias_batch;
        api.bias_heads = bias_heads;
        api.bias_keys = bias_keys;
        const std::size_t bb = bias_batch ? bias_batch : 1, bh = bias_heads ? bias_heads : 1,
                          row = bias_keys ? bias_keys : K;
        if ((bb != 1 && bb != B) || (bh != 1 && bh != H) || row < K) call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
    }
    const edgeattn_attention_mask *get() const { return pass_null ? nullptr : &api; }

    // The reference's mask for batch elements [b0, b0 + n) of a call with Q
    // queries whose bias rows default to K floats (after a successful call).
    edgeattn_ref::Mask reference(std::size_t b0, std::size_t n, std::size_t Q, std::size_t K) const {
        edgeattn_ref::Mask r;
        if (pass_null) return r;
        r.causal = causal != 0;
        r.window = window;
        if (has_ranges()) {
            const std::size_t per = kind == EDGEATTN_KEY_RANGES_PER_BATCH ? 1 : Q;
            r.ranges_kind = per == 1 ? edgeattn_ref::Mask::per_batch : edgeattn_ref::Mask::per_query;
            for (std::size_t i = 2 * b0 * per; i < 2 * (b0 + n) * per; ++i) r.ranges.push_back(ranges.at<std::int32_t>(i));
        }
        if (with_bias && bias.ptr) {
            const std::size_t bb = bias_batch ? bias_batch : 1, bh = bias_heads ? bias_heads : 1,
                              row = bias_keys ? bias_keys : K, plane = bh * Q * row;
            if (bb == 1) {
                r.bias = doubles_at(bias, 0, plane);
                r.bias_batch = 1;
            } else {
                r.bias = doubles_at(bias, b0 * plane, n * plane);
                r.bias_batch = n;  // n == 1 reads as broadcast: the same plane
            }
            r.bias_heads = bh;
            r.bias_keys = row;
        }
        return r;
    }
};

// Attention::finish with a mask: `after_spoil` adds rules of its own once
// the pointers are final (a KV cache's arrays).
void finish_masked(Attention &a, Input &in, const std::vector<Buffer *> &params, MaskGen &m, std::size_t heads,
                   const std::function<void()> &after_spoil = {}) {
    for (Buffer *p : params) {
        p->param = true;
        a.call.buffers.push_back(p);
    }
    if (a.weights.overflow) a.call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);  // refused even when not requested
    if (a.lens.buf.required && !a.lens.pass_null) {
        a.call.buffers.push_back(&a.lens.buf);
        a.call.lens = &a.lens.buf;
    }
    m.add_to(a.call);
    a.call.allocate(in, 1.0f / 32, 1.0f / 512);
    a.lens.fill(in, a.dims.keys);
    m.fill(in, a.dims.keys);
    a.call.spoil(in, {});
    if (after_spoil) after_spoil();
    a.lens.rules(a.call);
    m.rules(a.call, a.dims.batch, heads, a.dims.keys);
    a.call.pointer_rules({});
}

// What a successful call read of the multi-head weights, as doubles.
struct RefWeights {
    std::vector<double> W[4], b[4];
    bool has_b[4] = {};
    edgeattn_ref::MhaWeights get() const {
        auto w = [&](int i) { return W[i].empty() ? nullptr : W[i].data(); };
        auto c = [&](int i) { return has_b[i] ? b[i].data() : nullptr; };
        return {w(0), w(1), w(2), w(3), c(0), c(1), c(2), c(3)};
    }
};

// W_q, W_k, W_v, W_o and the biases chosen, claimed for some dims.
struct MhaParams {
    Buffer W[4]{{Role::input, true}, {Role::input, true}, {Role::input, true}, {Role::input, true}};
    Buffer b[4]{{Role::input, false}, {Role::input, false}, {Role::input, false}, {Role::input, false}};
    bool bias_on[4] = {};

    void choose_biases(Input &in) {
        for (bool &on : bias_on) on = in.in.ConsumeBool();
    }
    void claims(const edgeattn_attention_dims &d) {
        const std::size_t H = d.num_heads, h = d.num_hiddens, Hkv = kv_heads_of(d), dh = H ? h / H : 0;
        reclaim(W[0], h, d.query_size);
        reclaim(W[1], Hkv, dh, d.key_size);
        reclaim(W[2], Hkv, dh, d.value_size);
        reclaim(W[3], h, h);
        reclaim(b[0], h);
        reclaim(b[1], Hkv, dh);
        reclaim(b[2], Hkv, dh);
        reclaim(b[3], h);
        for (int i = 0; i < 4; ++i) W[i].param = b[i].param = true;
    }
    // the projections in `which` (bit i: W[i]) but those in `none`
    // (EDGEATTN_DTYPE_NONE: no matrix is read), and the chosen biases of all
    // in `which`
    std::vector<Buffer *> of(unsigned which, unsigned none = 0) {
        std::vector<Buffer *> v;
        for (int i = 0; i < 4; ++i)
            if (which >> i & 1u && !(none >> i & 1u)) v.push_back(&W[i]);
        for (int i = 0; i < 4; ++i)
            if (which >> i & 1u && bias_on[i]) v.push_back(&b[i]);
        return v;
    }
    void unspoil_all() {
        for (int i = 0; i < 4; ++i) {
            unspoil(W[i]);
            unspoil(b[i]);
        }
    }
    edgeattn_weights api() const {
        auto w = [](const Buffer &x) -> const float * { return x.mem ? reinterpret_cast<const float *>(x.ptr) : nullptr; };
        auto c = [&](int i) -> const float * { return bias_on[i] ? w(b[i]) : nullptr; };
        return {f32_matrix(w(W[0])), f32_matrix(w(W[1])), f32_matrix(w(W[2])), f32_matrix(w(W[3])),
                c(0),                c(1),                c(2),                c(3)};
    }
    RefWeights seen(unsigned which) const {
        RefWeights r;
        for (int i = 0; i < 4; ++i) {
            if (!(which >> i & 1u)) continue;
            r.W[i] = doubles(W[i], W[i].claimed / 4);
            if (bias_on[i] && b[i].mem && b[i].ptr) {
                r.b[i] = doubles(b[i], b[i].claimed / 4);
                r.has_b[i] = true;
            }
        }
        return r;
    }
};

bool same_features(const edgeattn_attention_dims &a, const edgeattn_attention_dims &b) {
    return a.query_size == b.query_size && a.key_size == b.key_size && a.value_size == b.value_size &&
           a.num_hiddens == b.num_hiddens && a.num_heads == b.num_heads && kv_heads_of(a) == kv_heads_of(b);
}

// edgeattn_mha_pack as a checked call into `pk` (a new block of the packed
// size; `pk_bytes` of it given). Returns whether it succeeded; `got` is then
// what it read.
bool pack_mha(Input &in, const edgeattn_attention_dims &pd, MhaParams &p, Buffer &pk, std::size_t &pk_bytes,
              RefWeights &got) {
    const char *op = g_op;
    g_op = "mha_pack";
    const std::size_t H = pd.num_heads, Hkv = kv_heads_of(pd);
    const bool zero = !pd.query_size || !pd.key_size || !pd.value_size || !pd.num_hiddens || !H;
    const bool heads = H && (pd.num_hiddens % H != 0 || (pd.value_hiddens && pd.value_hiddens % H != 0));
    const bool kv = H && H % Hkv != 0;  // whatever else is 0
    const edgeattn_weights fp32{};  // the size reads the matrices' types alone
    const std::size_t size = edgeattn_mha_packed_size(&pd, &fp32);
    FUZZ_CHECK(size == edgeattn_mha_packed_size(&pd, &fp32), "mha_packed_size is not a pure function", 0);
    FUZZ_CHECK((size == 0) >= (zero || heads || kv), "mha_packed_size of invalid dims is not 0", 0);
    p.claims(pd);
    p.unspoil_all();
    pk.role = Role::output;
    pk.required = true;
    pk.opaque = true;
    reclaim(pk, size, 1, 1, 1, 1);
    Call call;
    call.buffers = p.of(15);
    call.buffers.push_back(&pk);
    if (zero) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (heads) call.allow(EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
    if (kv) call.allow(EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
    if (!zero && !heads && !kv && size == 0) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
    const std::uint8_t how = in.byte();
    pk_bytes = how < 220 ? size : how % 2 ? size / 2 : (size > 4 ? size - 1 - how % 4 : 0);
    if (size && pk_bytes < size) call.allow(EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    call.allocate(in, 1.0f / 32, 1.0f / 512);
    call.spoil(in, {});
    const bool null_struct = in.byte() >= 250;
    if (null_struct) call.allow(EDGEATTN_ERR_NULL_POINTER);
    call.pointer_rules({});
    edgeattn_weights w = p.api();
    maybe_none(in, call, {&w.W_q, &w.W_k, &w.W_v, &w.W_o});  // packed weights never hold NONE
    const edgeattn_attention_dims *dims_arg = call.place(in, &pd);
    const edgeattn_weights *w_arg = null_struct ? nullptr : call.place(in, &w);
    const bool ok = call.run([&] { return edgeattn_mha_pack(dims_arg, w_arg, pk.ptr, pk_bytes); });
    if (ok) got = p.seen(15);
    g_op = op;
    return ok;
}

// A call's use of weights packed by pack_mha() for `pd`, `pk_bytes` of them
// given then: its claims and rules for the call's dims `d` (before it is
// spoiled). Returns the packed_bytes to pass.
std::size_t packed_rules(Input &in, Call &call, Buffer &pk, bool pack_ok, const edgeattn_attention_dims &pd,
                         std::size_t pk_bytes, const edgeattn_attention_dims &d, bool dims_ok) {
    const edgeattn_weights fp32{};
    const std::size_t need = edgeattn_mha_packed_size(&d, &fp32);
    unspoil(pk);
    pk.role = Role::input;
    pk.required = true;
    pk.param = true;
    reclaim(pk, need, 1, 1, 1, 1);
    const std::uint8_t how = in.byte();
    const std::size_t give = how < 235 ? pk_bytes : how % 2 ? pk_bytes / 2 : (pk_bytes > 4 ? pk_bytes - 4 : 0);
    // The call may read the `give` bytes it is told of (the header first): a
    // pointer spoiled into another block needs that much room there, not
    // only what these sizes need (0 for bad sizes: any block was taken, and
    // the header read ran past a small one).
    if (give > pk.claimed) pk.claimed = give;
    if (!pack_ok || !same_features(pd, d) || give < need) call.allow(EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    if (dims_ok && need == 0) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
    call.buffers.push_back(&pk);
    return give;
}

// After the call is spoiled: packed weights not where they were packed
// cannot match.
void packed_moved(Call &call, const Buffer &pk) {
    if (pk.ptr && pk.ptr != pk.mem.get()) call.allow(EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
}

// edgeattn_mha (or edgeattn_mha_pack + edgeattn_mha_packed): grouped-query
// heads, valid_lens and a mask in the options.
void fuzz_multi_head_masked(Input &in) {
    const bool packed = in.in.ConsumeBool();
    g_op = packed ? "mha_packed (masked)" : "mha (masked)";
    Attention a;
    a.in_special = in.special;
    const std::size_t heads = 1 + in.byte() % 4;
    a.dims = {in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), heads * (1 + in.byte() % 3), heads, 0, 0};
    if (!mostly(in)) a.dims.num_hiddens = in.dim();
    if (!mostly(in)) a.dims.num_heads = in.dim();
    a.dims.num_kv_heads = choose_kv_heads(in, a.dims.num_heads);
    // value heads of their own width, drawn to be refused: hv = h + 1 divides
    // by no H > 1 (valid widths are checked in test_attention_shapes)
    if (in.extended && in.byte() >= 245 && a.dims.num_heads > 1) a.dims.value_hiddens = a.dims.num_hiddens + 1;
    const edgeattn_attention_dims D = a.dims;
    const std::size_t h = D.num_hiddens, H = D.num_heads, Hkv = kv_heads_of(D);
    a.want_weights = mostly(in);
    a.lens.choose(in, D.batch, D.queries);
    MaskGen m;
    m.choose(in, D.batch, D.queries, H, D.keys);
    ScoreGen sg;
    sg.choose(in);
    a.claims(h, H);
    MhaParams p;
    p.choose_biases(in);
    const bool zero = !D.batch || !D.queries || !D.keys || !D.query_size || !D.key_size || !D.value_size || !h || !H;
    const bool heads_bad = H && (h % H != 0 || (D.value_hiddens && D.value_hiddens % H != 0));
    const bool kv_bad = H && H % Hkv != 0;
    if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (heads_bad) a.call.allow(EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
    if (kv_bad) a.call.allow(EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
    const bool dims_ok = !zero && !heads_bad && !kv_bad;
    const std::size_t threads = 1 + in.byte() % 4;
    a.workspace(in, workspace_query(EDGEATTN_OP_MHA, D, threads), workspace_query(EDGEATTN_OP_MHA, D, 1), dims_ok);

    Buffer pk(Role::input, true);
    std::size_t pk_bytes = 0, give = 0;
    RefWeights ref;
    std::vector<Buffer *> params;
    if (packed) {
        edgeattn_attention_dims pd = D;  // mostly packed for these dims
        const std::uint8_t how = in.byte();
        if (how >= 215) {
            switch (how % 4) {
                case 0: pd.num_kv_heads = choose_kv_heads(in, H); break;
                case 1: pd.query_size = in.dim(); break;
                case 2: pd.key_size = in.dim(); break;
                default: pd.num_hiddens = in.dim(); break;
            }
        }
        const bool pack_ok = pack_mha(in, pd, p, pk, pk_bytes, ref);
        give = packed_rules(in, a.call, pk, pack_ok, pd, pk_bytes, D, dims_ok);
        params = {};
    } else {
        p.claims(D);
        params = p.of(15);
    }
    finish_masked(a, in, params, m, H);
    if (packed) packed_moved(a.call, pk);
    a.call.ranges_early = zero || heads_bad || kv_bad;
    for (Buffer *b : {&a.q, &a.k, &a.v, &a.out, &a.weights}) a.call.ranges_early |= b->overflow;
    for (Buffer *b : {&a.q, &a.k, &a.v, &a.out, &a.ws}) a.call.ranges_early |= !b->ptr;

    edgeattn_weights w = p.api();
    const unsigned none = packed ? 0u : maybe_none(in, a.call, {&w.W_q, &w.W_k, &w.W_v, &w.W_o}, true);
    Options o = options_refusing_rope(in, a.call, a.lens.get(), m.get());
    sg.apply(o);
    sg.rules(a.call, true);
    const edgeattn_attention_dims *dims_arg = a.call.place(in, &D);
    const edgeattn_attention_options *options_arg = a.call.place(in, o.get());
    const edgeattn_weights *w_arg = packed ? &w : a.call.place(in, &w);
    const bool ok = a.call.run([&] {
        return packed ? edgeattn_mha_packed(dims_arg, a.q.f(), a.k.f(), a.v.f(), pk.ptr, give, options_arg, a.ws.ptr,
                                            a.ws.claimed, a.out.f(), a.weights_ptr())
                      : edgeattn_mha(dims_arg, a.q.f(), a.k.f(), a.v.f(), w_arg, options_arg, a.ws.ptr,
                                     a.ws.claimed, a.out.f(), a.weights_ptr());
    });
    if (!ok || none || in.special || !reference_fits(D.batch, H, D.queries, D.keys)) return;
    if (!packed) ref = p.seen(15);
    std::vector<double> out(D.batch * D.queries * h), wts(D.batch * H * D.queries * D.keys);
    const std::vector<double> q = doubles(a.q, D.batch * D.queries * D.query_size),
                              k = doubles(a.k, D.batch * D.keys * D.key_size),
                              v = doubles(a.v, D.batch * D.keys * D.value_size);
    edgeattn_ref::Mask mask = m.reference(0, D.batch, D.queries, D.keys);
    sg.reference(mask);
    edgeattn_ref::multi_head_attention_masked(D.batch, D.queries, D.keys, D.query_size, D.key_size, D.value_size, h,
                                              H, Hkv, q.data(), k.data(), v.data(), a.lens.reference(), mask,
                                              ref.get(), out.data(), wts.data());
    const MhaAllowance allow = mha_allowance(D.batch, D.queries, D.keys, D.query_size, D.key_size, D.value_size, h,
                                             H, Hkv, q.data(), k.data(), v.data(), ref.get());
    sg.match_infinities(a.weights_ptr(), wts);
    a.check(out, wts, sg.score_error(allow.score_error, h / H, D.queries, D.keys) + bias_rounding(mask),
            allow.value_scale);
}

// edgeattn_sdpa with valid_lens and a mask in the options.
void fuzz_dot_product_masked(Input &in) {
    g_op = "sdpa (masked)";
    Attention a;
    choose_dot_product(in, a);
    MaskGen m;
    m.choose(in, a.dims.batch, a.dims.queries, 1, a.dims.keys);
    ScoreGen sg;
    sg.choose(in);
    const std::size_t d = a.dims.query_size, ks = a.dims.key_size ? a.dims.key_size : d;
    edgeattn_attention_dims claimed = a.dims;
    claimed.key_size = ks;
    std::swap(a.dims, claimed);
    a.claims(a.dims.value_size, 1);
    std::swap(a.dims, claimed);
    const edgeattn_attention_dims &D = a.dims;
    const bool zero = !D.batch || !D.queries || !D.keys || !d || !D.value_size;
    if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    if (ks != d) a.call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
    a.workspace(in, workspace_query(EDGEATTN_OP_SDPA, D, 1 + in.byte() % 4), workspace_query(EDGEATTN_OP_SDPA, D, 1),
                !zero && ks == d);
    finish_masked(a, in, {}, m, 1);
    a.call.ranges_early = zero || ks != d;
    for (Buffer *b : {&a.q, &a.k, &a.v, &a.out, &a.weights}) a.call.ranges_early |= b->overflow;
    for (Buffer *b : {&a.q, &a.k, &a.v, &a.out, &a.ws}) a.call.ranges_early |= !b->ptr;
    Options o = options_refusing_rope(in, a.call, a.lens.get(), m.get());
    sg.apply(o);
    sg.rules(a.call, false);
    const edgeattn_attention_dims *dims_arg = a.call.place(in, &D);
    const edgeattn_attention_options *options_arg = a.call.place(in, o.get());
    if (!a.call.run([&] {
            return edgeattn_sdpa(dims_arg, a.q.f(), a.k.f(), a.v.f(), options_arg, a.ws.ptr, a.ws.claimed,
                                 a.out.f(), a.weights_ptr());
        }))
        return;
    if (in.special || !reference_fits(D.batch, 1, D.queries, D.keys)) return;
    std::vector<double> out(D.batch * D.queries * D.value_size), w(D.batch * D.queries * D.keys);
    const std::vector<double> q = doubles(a.q, D.batch * D.queries * d), k = doubles(a.k, D.batch * D.keys * d),
                              v = doubles(a.v, D.batch * D.keys * D.value_size);
    edgeattn_ref::Mask mask = m.reference(0, D.batch, D.queries, D.keys);
    sg.reference(mask);
    edgeattn_ref::dot_product_attention_masked(D.batch, D.queries, D.keys, d, D.value_size, q.data(), k.data(),
                                               v.data(), a.lens.reference(), mask, out.data(), w.data());
    double largest_value = 0.0;
    for (double x : v) largest_value = std::fmax(largest_value, std::fabs(x));
    sg.match_infinities(a.weights_ptr(), w);
    a.check(out, w, sg.score_error(dot_score_error(D.batch, D.queries, D.keys, d, q, k, mask.bias), d, D.queries, D.keys),
            largest_value, summation_error(D.keys, v));
}

// edgeattn_additive; extended inputs add a mask (H = 1), a rope and NONE
// matrices.
void fuzz_additive(Input &in) {
    g_op = "additive_attention";
    Attention a;
    a.in_special = in.special;
    a.dims = {in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), in.dim(), 0, 0, 0};
    a.want_weights = mostly(in);
    a.lens.choose(in, a.dims.batch, a.dims.queries);
    MaskGen m;
    if (in.extended) m.choose(in, a.dims.batch, a.dims.queries, 1, a.dims.keys);
    a.claims(a.dims.value_size, 1);
    const edgeattn_attention_dims &D = a.dims;
    Buffer W_q(Role::input, true), W_k(Role::input, true), w_v(Role::input, true);
    claim(W_q, D.num_hiddens, D.query_size);
    claim(W_k, D.num_hiddens, D.key_size);
    claim(w_v, D.num_hiddens);
    const bool zero = !D.batch || !D.queries || !D.keys || !D.query_size || !D.key_size || !D.value_size ||
                      !D.num_hiddens;
    if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
    a.workspace(in, workspace_query(EDGEATTN_OP_ADDITIVE, D, 1 + in.byte() % 4),
                workspace_query(EDGEATTN_OP_ADDITIVE, D, 1), !zero);
    if (in.extended) {
        finish_masked(a, in, {&W_q, &W_k, &w_v}, m, 1);
        a.call.ranges_early = zero;
        for (Buffer *b : {&a.q, &a.k, &a.v, &a.out, &a.weights}) a.call.ranges_early |= b->overflow;
        for (Buffer *b : {&a.q, &a.k, &a.v, &a.out, &a.ws}) a.call.ranges_early |= !b->ptr;
    } else {
        a.finish(in, {&W_q, &W_k, &w_v});
    }
    edgeattn_weights w{};  // d2l's w_v is W_v, an fp32 (1, h) matrix
    w.W_q = f32_matrix(W_q.f());
    w.W_k = f32_matrix(W_k.f());
    w.W_v = f32_matrix(w_v.f());
    maybe_none(in, a.call, {&w.W_q, &w.W_k, &w.W_v});
    const Options o = options_refusing_rope(in, a.call, a.lens.get(), m.get(), true);
    const edgeattn_attention_dims *dims_arg = a.call.place(in, &D);
    const edgeattn_attention_options *options_arg = a.call.place(in, o.get());
    const edgeattn_weights *w_arg = a.call.place(in, &w);
    if (!a.call.run([&] {
            return edgeattn_additive(dims_arg, a.q.f(), a.k.f(), a.v.f(), w_arg, options_arg, a.ws.ptr,
                                     a.ws.claimed, a.out.f(), a.weights_ptr());
        }))
        return;
    std::vector<double> out(D.batch * D.queries * D.value_size), wts(D.batch * D.queries * D.keys);
    const std::vector<double> q = doubles(a.q, D.batch * D.queries * D.query_size),
                              k = doubles(a.k, D.batch * D.keys * D.key_size),
                              v = doubles(a.v, D.batch * D.keys * D.value_size),
                              wq = doubles(W_q, D.num_hiddens * D.query_size),
                              wk = doubles(W_k, D.num_hiddens * D.key_size), wv = doubles(w_v, D.num_hiddens);
    if (!reference_fits(D.batch, 1, D.queries, D.keys)) return;
    const edgeattn_ref::Mask mask = m.reference(0, D.batch, D.queries, D.keys);
    edgeattn_ref::additive_attention_masked(D.batch, D.queries, D.keys, D.query_size, D.key_size, D.value_size,
                                            D.num_hiddens, q.data(), k.data(), v.data(), a.lens.reference(), mask,
                                            wq.data(), wk.data(), wv.data(), out.data(), wts.data());
    double largest_bias = 0.0;
    for (double x : mask.bias) largest_bias = std::fmax(largest_bias, std::fabs(x));
    // An additive score sum_h w_v[h] tanh(f_h) with f_h = (W_q q)_h + (W_k k)_h
    // in float32: each f_h off by up to (Q + K + 2) eps sum |terms| (tanh'
    // <= 1), each tanh by a few eps, the sum over h by H eps sum |w_v tanh|.
    // With w_v and the features large (the fuzzer's values reach +-32), that
    // moves the weights past the fixed bound
    // (tests/fuzz/corpus/c_api/additive-ill-conditioned-scores).
    constexpr double eps = 1.0 / 16777216.0;
    double score_error = 0.0, largest_value = 0.0;
    for (double x : v) largest_value = std::fmax(largest_value, std::fabs(x));
    for (std::size_t b = 0; b < D.batch; ++b)
        for (std::size_t i = 0; i < D.queries; ++i)
            for (std::size_t j = 0; j < D.keys; ++j) {
                const double *qi = &q[(b * D.queries + i) * D.query_size], *kj = &k[(b * D.keys + j) * D.key_size];
                double error = 0.0, terms = 0.0;
                for (std::size_t h = 0; h < D.num_hiddens; ++h) {
                    double f = 0.0, size = 0.0;
                    for (std::size_t c = 0; c < D.query_size; ++c) {
                        f += wq[h * D.query_size + c] * qi[c];
                        size += std::fabs(wq[h * D.query_size + c] * qi[c]);
                    }
                    for (std::size_t c = 0; c < D.key_size; ++c) {
                        f += wk[h * D.key_size + c] * kj[c];
                        size += std::fabs(wk[h * D.key_size + c] * kj[c]);
                    }
                    const double term = std::fabs(wv[h] * std::tanh(f));
                    error += std::fabs(wv[h]) * (static_cast<double>(D.query_size + D.key_size + 2) * eps * size + 4.0 * eps);
                    terms += term;
                }
                // adding a bias rounds once more at |score| + |bias|
                score_error = std::fmax(score_error, error + static_cast<double>(D.num_hiddens) * eps * terms +
                                                         (largest_bias ? 2.0 * eps * (terms + largest_bias) : 0.0));
            }
    a.check(out, wts, score_error, largest_value);
}

// rows x cols with ones on the diagonal: what a NONE matrix does to rows
// of its projection's width (rows == cols).
std::vector<double> identity(std::size_t rows, std::size_t cols) {
    std::vector<double> m(rows * cols, 0.0);
    for (std::size_t i = 0; i < rows && i < cols; ++i) m[i * cols + i] = 1.0;
    return m;
}

// The KV cache: memory size and setup with any sizes, then a sequence of
// store / attend / truncate / reset calls the input drives, each checked,
// with a model of what the cache holds: every batch element's projected
// keys and values (in double, from what each store was given).
//
// Extended inputs add window caches (config.window W and sinks S drawn,
// hostile pairs too: EDGEATTN_ERR_BAD_WINDOW), stores past the capacity
// (the ring wraps; the model keeps the rows held in stream order, the sinks
// then the window oldest first, and each row's stream position p, held in
// memory row S + (p - S) % W once p >= S), NONE projections (W_k, W_v of a
// store, W_q, W_o of an attend, each on its own, with right and wrong
// widths and biases beside them), options a store refuses, mask windows
// and ropes.
struct KvFuzz {
    Input &in;
    edgeattn_attention_dims d{};  // the model's sizes
    std::size_t H = 0, h = 0, hs = 0, Hkv = 0;
    std::size_t cB = 0, cH = 0, cS = 0, cap = 0;  // what the cache is made for
    std::size_t W = 0, S = 0;                     // window and sinks (0, 0: no window)
    bool bad_window = false;
    Buffer st{Role::input, false};    // the edgeattn_kv_cache struct
    Buffer mem{Role::output, false};  // the cache's memory
    bool cache_ok = false;
    edgeattn_kv_cache saved{}, bad_copy{};
    MhaParams p;
    bool use_packed = false, pack_ok = false;
    Buffer pk{Role::input, true};
    std::size_t pk_bytes = 0;
    edgeattn_attention_dims pd{};
    RefWeights packed_ref;
    std::vector<std::vector<double>> K, V;  // per batch element: (length, cH * cS)
    // Per cached key feature, sum |W_k[c,i] x_i| + |b_k[c]|: the size its
    // float32 projection was rounded at (projected_score_error).
    std::vector<std::vector<double>> K_size;
    std::vector<std::size_t> n;             // lengths: rows held
    std::vector<std::size_t> tokens;        // positions: tokens stored since setup or reset
    std::vector<std::vector<std::size_t>> P;  // per batch element: each held row's stream position
    // Whether a held key was rotated (its features then carry the
    // rotation's two roundings: projected_score_error's in_size + 2), and
    // what the cached keys' comparison allows for those roundings.
    bool keys_rotated = false;
    double key_extra = 0.0;

    explicit KvFuzz(Input &i) : in(i) {}
    edgeattn_kv_cache *cache() { return reinterpret_cast<edgeattn_kv_cache *>(st.mem.get()); }
    std::size_t hkv() const { return cH * cS; }

    void run() {
        H = 1 + in.byte() % 4;
        hs = 1 + in.byte() % 4;
        d.batch = 1 + in.byte() % 3;
        d.query_size = 1 + in.byte() % 6;
        d.key_size = 1 + in.byte() % 6;
        d.value_size = 1 + in.byte() % 6;
        d.num_heads = H;
        d.num_hiddens = H * hs;
        d.num_kv_heads = choose_kv_heads(in, H);
        if (!mostly(in)) d.num_hiddens = in.dim();
        h = d.num_hiddens;
        hs = h / H;
        Hkv = kv_heads_of(d);
        cB = d.batch, cH = Hkv, cS = hs, cap = 1 + in.byte() % 8;
        const std::uint8_t how = in.byte();
        if (how >= 190) switch (how % 7) {
                case 0: cB = in.dim(); break;
                case 1: cH = in.dim(); break;
                case 2: cS = in.dim(); break;
                case 3: cap = in.dim(); break;
                case 4: cap = in.byte() % 2 ? std::size_t{INT32_MAX} : std::size_t{INT32_MAX} + 1; break;
                case 5: cap = 0; break;
                default: cap = 64 + in.byte(); break;  // long: more than one block of keys
            }
        if (in.extended) choose_window();
        if (!init()) cache_ok = false;
        weights();
        const std::size_t ops = 1 + in.byte() % 24;
        for (std::size_t op = 0; op < ops && in.in.remaining_bytes() > 0; ++op) {
            switch (in.byte() % 8) {
                case 0: case 1: case 2: store(); break;
                case 3: case 4: case 5: attend(); break;
                case 6: truncate(); break;
                default: reset(); break;
            }
            if (cache_ok) {
                FUZZ_CHECK(std::memcmp(st.mem.get(), &saved, sizeof saved) == 0, "a call changed the cache struct", 0);
                for (std::size_t b = 0; b < cB; ++b) {
                    FUZZ_CHECK(cache()->lengths[b] == static_cast<std::int32_t>(n[b]),
                               "cache length differs from the stores and truncates", cache()->lengths[b]);
                    FUZZ_CHECK(cache()->positions[b] == static_cast<std::int32_t>(tokens[b]),
                               "cache position differs from the tokens stored", cache()->positions[b]);
                }
            }
        }
    }

    // W and S: mostly none or a valid pair for the capacity drawn; sometimes
    // a pair that breaks the rule (capacity != S + W, also where S + W wraps
    // round to the capacity in size_t; sinks without a window).
    void choose_window() {
        const std::uint8_t wb = in.byte();
        if (wb < 64) {
            W = S = 0;
        } else if (wb < 216) {
            S = cap ? wb % std::min<std::size_t>(cap, 3) : 0;
            W = cap - S;
        } else {
            switch (wb % 5) {
                case 0: S = wb % 3; W = cap + 1; break;
                case 1: S = 1 + wb % 3; W = 0; break;
                case 2: S = cap + 1 + wb % 3; W = cap - S; break;  // S + W == cap in size_t
                case 3: S = wb % 2; W = SIZE_MAX; break;
                default: S = in.dim(); W = in.dim(); break;
            }
        }
        bad_window = W ? (S > SIZE_MAX - W || S + W != cap) : S != 0;
    }

    // the memory row of a token at stream position p
    std::size_t row_of(std::size_t p) const { return W && p >= S ? S + (p - S) % W : p; }

    bool init() {
        g_op = "kv_cache_memory_size";
        const edgeattn_kv_cache_config config{cB, cH, cS, cap, EDGEATTN_DTYPE_F32, W, S, 0};
        const std::size_t sz = edgeattn_kv_cache_memory_size(&config);
        FUZZ_CHECK(sz == edgeattn_kv_cache_memory_size(&config), "kv_cache_memory_size is not a pure function", 0);
        const bool zero = !cB || !cH || !cS || !cap;
        if (zero || cap > INT32_MAX)
            FUZZ_CHECK(sz == 0, "kv_cache_memory_size of zero sizes or capacity > INT32_MAX", 0);
        if (bad_window) FUZZ_CHECK(sz == 0, "kv_cache_memory_size of a window and sinks that break their rule", 0);
#ifdef __SIZEOF_INT128__
        if (!zero && cap <= INT32_MAX) {
            unsigned __int128 need = 2;
            bool over = false;
            for (std::size_t x : {cB, cH, cS, cap, sizeof(float)}) {
                need *= x;
                if (need > SIZE_MAX) over = true;
                if (over) break;
            }
            if (!over) need += 2 * cB * sizeof(std::int32_t);  // lengths and positions
            if (over || need > SIZE_MAX) FUZZ_CHECK(sz == 0, "kv_cache_memory_size does not report overflow", 0);
            else if (!bad_window && need + 4 * 64 <= SIZE_MAX)
                FUZZ_CHECK(sz >= need, "kv_cache_memory_size smaller than the cache", 0);
        }
#endif
        g_op = "kv_cache_setup";
        st.role = Role::output;
        st.required = true;
        st.claimed = sizeof(edgeattn_kv_cache);
        mem.role = Role::output;
        mem.required = true;
        mem.claimed = around(in, sz ? sz : 64 * (in.byte() % 3));
        const std::size_t memory_bytes = mem.claimed;
        Call call;
        call.buffers = {&st, &mem};
        call.allocate(in, 1.0f);
        if (zero) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
        else if (sz == 0 && !bad_window) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
        if (bad_window) call.allow(EDGEATTN_ERR_BAD_WINDOW);
        if (!zero && sz && memory_bytes < sz) call.allow(EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
        edgeattn_kv_cache *cache_arg = cache();
        void *memory = mem.ptr;
        const std::uint8_t spoil = in.byte();
        if (spoil >= 200) switch (spoil % 4) {
                case 0: cache_arg = nullptr; call.allow(EDGEATTN_ERR_NULL_POINTER); break;
                case 1: memory = nullptr; call.allow(EDGEATTN_ERR_NULL_POINTER); break;
                case 2:
                    if (mem.bytes >= 4) {
                        memory = mem.ptr + 1 + spoil % 3;
                        call.allow(EDGEATTN_ERR_MISALIGNED);
                    }
                    break;
                default: {  // the struct inside the memory it would lay out
                    const std::size_t off = 8 * (in.byte() % 8);
                    if (sz && off < sz && mem.bytes >= off + sizeof(edgeattn_kv_cache)) {
                        cache_arg = reinterpret_cast<edgeattn_kv_cache *>(mem.ptr + off);
                        call.allow(EDGEATTN_ERR_OVERLAP);
                    }
                }
            }
        const edgeattn_kv_cache_config *config_arg = call.place(in, &config);
        cache_ok = call.run([&] { return edgeattn_kv_cache_setup(cache_arg, config_arg, memory, memory_bytes); });
        st.role = Role::input;
        st.required = false;
        st.claimed = 0;
        mem.required = false;
        mem.claimed = 0;
        if (!cache_ok) return false;
        const edgeattn_kv_cache &c = *cache();
        FUZZ_CHECK(c.storage == 0 && c.stored_keys == c.keys && c.stored_values == c.values && !c.key_scales &&
                       !c.value_scales && c.batch == cB && c.num_kv_heads == cH && c.head_size == cS && c.capacity == cap &&
                       c.window == W && c.sinks == S,
                   "kv_cache_setup fields", 0);
        const std::size_t floats = cB * cH * cap * cS * sizeof(float);
        const unsigned char *base = mem.mem.get();
        std::size_t offs[4];
        const void *ptrs[4] = {c.keys, c.values, c.lengths, c.positions};
        const std::size_t sizes[4] = {floats, floats, cB * sizeof(std::int32_t), cB * sizeof(std::int32_t)};
        for (int i = 0; i < 4; ++i) {
            const unsigned char *q = static_cast<const unsigned char *>(ptrs[i]);
            FUZZ_CHECK(q >= base && static_cast<std::size_t>(q - base) <= sz && sizes[i] <= sz - (q - base),
                       "a kv cache array lies outside kv_cache_memory_size() bytes", 0);
            offs[i] = static_cast<std::size_t>(q - base);
            FUZZ_CHECK(offs[i] % 64 == 0, "a kv cache array is not on a 64-byte boundary", 0);
        }
        for (int i = 0; i < 4; ++i)
            for (int j = i + 1; j < 4; ++j)
                FUZZ_CHECK(!overlaps(ptrs[i], sizes[i], ptrs[j], sizes[j]), "kv cache arrays overlap", 0);
        for (std::size_t i = 0; i < mem.bytes; ++i) {
            const bool zeroed = (i >= offs[2] && i < offs[2] + sizes[2]) || (i >= offs[3] && i < offs[3] + sizes[3]);
            FUZZ_CHECK(zeroed ? base[i] == 0 : base[i] == mem.before[i],
                       "kv_cache_setup wrote other than zero lengths and positions", 0);
        }
        std::memcpy(&saved, cache(), sizeof saved);
        K.assign(cB, {});
        K_size.assign(cB, {});
        V.assign(cB, {});
        n.assign(cB, 0);
        tokens.assign(cB, 0);
        P.assign(cB, {});
        return true;
    }

    // The weights, kept for the whole sequence: W_k, W_v room for the
    // cache's heads too (a call made for them reads that many rows).
    void weights() {
        p.choose_biases(in);
        edgeattn_attention_dims room = d;
        room.num_kv_heads = std::max(Hkv, cH);
        p.claims(room);
        for (int i = 0; i < 4; ++i)
            for (Buffer *b : {&p.W[i], &p.b[i]}) {
                const bool too_big = b->overflow || b->claimed > kMaxElements * sizeof(float);
                b->allocate(too_big ? 64 : b->claimed);
                for (std::size_t j = 0; j + 4 <= b->bytes; j += 4) {
                    const float v = in.value(1.0f / 512);
                    std::memcpy(b->mem.get() + j, &v, 4);
                }
            }
        use_packed = in.byte() < 110;
        if (!use_packed) return;
        pd = d;
        const std::uint8_t how = in.byte();
        if (how >= 220) pd.num_kv_heads = how % 2 ? cH : choose_kv_heads(in, H);
        pack_ok = pack_mha(in, pd, p, pk, pk_bytes, packed_ref);
    }

    // The cache a call gets; `valid`: the one setup made (when it did).
    edgeattn_kv_cache *cache_arg(Call &call, bool &valid) {
        const std::uint8_t b = in.byte();
        valid = false;
        if (b >= 245) {
            call.allow(EDGEATTN_ERR_NULL_POINTER);
            return nullptr;
        }
        if (b >= 235) {  // a copy without the magic setup put there
            std::memcpy(&bad_copy, st.mem.get(), sizeof bad_copy);
            bad_copy.magic ^= 0x10000u;
            call.allow(EDGEATTN_ERR_BAD_CACHE);
            return &bad_copy;
        }
        if (!cache_ok) call.allow(EDGEATTN_ERR_BAD_CACHE);
        valid = cache_ok;
        return cache();
    }

    // Sometimes a field the call checks against the cache or does not read.
    edgeattn_attention_dims mutate(bool attention) {
        edgeattn_attention_dims e = d;
        const std::uint8_t b = in.byte();
        if (b >= 215) switch (b % 4) {
                case 0: e.batch = in.dim(); break;
                case 1: e.num_kv_heads = choose_kv_heads(in, H); break;
                case 2: (attention ? e.key_size : e.query_size) = in.dim(); break;  // not read unpacked
                default: (attention ? e.value_size : e.query_size) = 0; break;
            }
        return e;
    }

    // CACHE_SHAPE_MISMATCH when the valid cache is not made for e's sizes
    bool matches(const edgeattn_attention_dims &e) const {
        return cB == e.batch && cH == kv_heads_of(e) && e.num_heads && cS == e.num_hiddens / e.num_heads;
    }

    // After spoiling: the cache's memory goes into the call (not spoiled
    // itself), and what overlaps its arrays is an error: anything when the
    // call writes the cache, outputs and workspace when it reads it.
    // (The memory counts as written either way: between its arrays, which
    // hold nothing, an output may lie; attend() checks the arrays.)
    void cache_rules(Call &call, bool valid, bool writes) {
        mem.role = Role::output;
        call.buffers.push_back(&st);
        call.buffers.push_back(&mem);
        if (!valid) return;
        const edgeattn_kv_cache &c = saved;
        const std::size_t floats = cB * cH * cap * cS * sizeof(float);
        for (Buffer *x : call.buffers) {
            if (x == &st || x == &mem || !x->ptr || x->overflow || !x->claimed) continue;
            if (!writes && x->role == Role::input) continue;
            if (overlaps(x->ptr, x->claimed, c.keys, floats) || overlaps(x->ptr, x->claimed, c.values, floats) ||
                overlaps(x->ptr, x->claimed, c.lengths, cB * sizeof(std::int32_t)) ||
                overlaps(x->ptr, x->claimed, c.positions, cB * sizeof(std::int32_t)))
                call.allow(EDGEATTN_ERR_OVERLAP);
        }
    }

    // The rope of a cache call: RopeGen's draw and rules, the positions
    // without a rope array first[b] (a store's stream positions, an
    // attend's less Q).
    RopeCall rope_call(const edgeattn_attention_dims &e, bool valid, std::size_t count, bool writes) const {
        RopeCall rc;
        rc.head_size = cS;
        rc.dims_head_size = e.num_heads ? e.num_hiddens / e.num_heads : 0;
        rc.batch = e.batch;
        rc.count = count;
        rc.writes_cache = writes;
        rc.checked = valid && matches(e);
        rc.cache_buffers = {&st, &mem};
        if (!valid) return rc;
        const std::int64_t back = writes ? 0 : static_cast<std::int64_t>(std::min<std::size_t>(count, INT64_MAX / 4));
        for (std::size_t b = 0; b < cB; ++b) rc.default_first.push_back(static_cast<std::int64_t>(tokens[b]) - back);
        const std::size_t floats = cB * cH * cap * cS * sizeof(float);
        rc.cache_arrays = {{saved.keys, floats},
                           {saved.values, floats},
                           {saved.lengths, cB * sizeof(std::int32_t)},
                           {saved.positions, cB * sizeof(std::int32_t)}};
        return rc;
    }

    void store() {
        const bool packed = use_packed && in.in.ConsumeBool();
        g_op = packed ? "kv_cache_store_packed" : "kv_cache_store";
        edgeattn_attention_dims e = mutate(false);
        const std::uint8_t tb = in.byte();
        std::size_t T = tb < 200 ? 1 + tb % 3 : tb < 215 ? 0 : tb < 235 ? cap + tb % 2 : in.dim();
        if (in.extended && W && cap < 256 && tb >= 120 && tb < 200) T = W + 1 + tb % (cap + 2);  // wraps in one call
        // NONE as W_k (bit 1), W_v (bit 2) or both: mostly rows of the
        // projection's width h_kv, sometimes of the width drawn
        unsigned none = 0;
        bool none_data = false;  // a NONE matrix's data: NULL or its buffer, never read
        if (in.extended && !packed) {
            const std::uint8_t nb = in.byte();
            if (nb < 150) {
                none = (nb % 3 + 1u) << 1;
                none_data = nb & 8;
                const std::size_t hkve = e.num_heads ? kv_heads_of(e) * (e.num_hiddens / e.num_heads) : 0;
                if (!(nb & 64)) {
                    if (none & 2) e.key_size = hkve;
                    if (none & 4) e.value_size = hkve;
                }
            }
        }
        Call call;
        bool valid;
        edgeattn_kv_cache *c = cache_arg(call, valid);
        Buffer keys(Role::input, true), values(Role::input, true), ws(Role::workspace, true);
        claim(keys, e.batch, T, e.key_size);
        claim(values, e.batch, T, e.value_size);
        const std::size_t He = e.num_heads, he = e.num_hiddens, Hkve = kv_heads_of(e);
        const bool zero = !e.batch || !e.key_size || !e.value_size || !he || !He || !T || (packed && !e.query_size);
        const bool heads = He && he % He != 0, kv = He && He % Hkve != 0, dims_ok = !zero && !heads && !kv;
        if (zero) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
        if (heads) call.allow(EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
        if (kv) call.allow(EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
        if (valid && !matches(e)) call.allow(EDGEATTN_ERR_CACHE_SHAPE_MISMATCH);
        if (valid && matches(e))
            for (std::size_t b = 0; b < cB; ++b)
                if (W ? T > static_cast<std::size_t>(INT32_MAX) - tokens[b] : T > cap - n[b])
                    call.allow(EDGEATTN_ERR_CACHE_FULL);
        const std::size_t hkve = He ? Hkve * (he / He) : 0;
        if ((none & 2 && e.key_size != hkve) || (none & 4 && e.value_size != hkve))
            call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
        const std::size_t size = workspace_query(EDGEATTN_OP_KV_CACHE_STORE, e, 1 + in.byte() % 4, T),
                          one = workspace_query(EDGEATTN_OP_KV_CACHE_STORE, e, 1, T);
        if (dims_ok && one == 0) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
        ws.claimed = around(in, size);
        if (dims_ok && one && ws.claimed < one) call.allow(EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
        call.buffers = {&keys, &values, &ws};
        std::size_t give = 0;
        if (packed) {
            give = packed_rules(in, call, pk, pack_ok, pd, pk_bytes, e, dims_ok);
        } else {
            p.claims(e);
            p.unspoil_all();
            for (Buffer *b : p.of(2 | 4, none)) call.buffers.push_back(b);
        }
        call.allocate(in, 1.0f / 32, 1.0f / 512);
        call.extra_targets = {&mem};
        call.spoil(in, {});
        if (packed) packed_moved(call, pk);
        cache_rules(call, valid, true);
        call.pointer_rules({});
        edgeattn_weights w = p.api();
        for (int i : {1, 2})
            if (none >> i & 1u) {
                (i == 1 ? w.W_k : w.W_v) = {EDGEATTN_DTYPE_NONE, none_data ? nullptr : p.W[i].mem.get(), nullptr};
                if ((i == 1 ? w.b_k : w.b_v) != nullptr) call.allow(EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
            }
        const std::uint8_t wb = in.byte();
        if (wb & 1) w.W_q.data = nullptr;  // not read
        if (wb & 2) w.W_o.data = nullptr;
        const bool null_struct = !packed && wb >= 252;  // the packed forms take no struct
        if (null_struct) call.allow(EDGEATTN_ERR_NULL_POINTER);
        // A store takes a rope and no other option: NULL, or (from the
        // input's hash) a zeroed struct; extended inputs: a rope (RopeGen),
        // or a mask (its window too) or valid lengths.
        edgeattn_attention_options options{};
        RopeGen rope;
        const RopeCall rc = rope_call(e, valid, T, true);
        rope.choose(in, call, rc);
        rope.rules(call, rc);
        options.rope = rope.api;
        bool refused_option = false;
        if (in.extended) {
            static const std::int32_t lens[8] = {1, 1, 1, 1, 1, 1, 1, 1};
            const std::uint8_t ob = in.byte();
            refused_option = ob >= 200;
            if (refused_option) switch (ob % 4) {
                    case 0: options.mask.window = ob & 16 ? SIZE_MAX : 1 + ob % 4; break;
                    case 1: options.mask.causal = 1; break;
                    case 2:
                        options.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_BATCH;
                        options.mask.key_ranges = lens;
                        break;
                    default: options.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens}; break;
                }
            if (refused_option) call.allow(EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
            const int tensor_type = choose_tensor_type(in, call, false);
            std::memcpy(&options.tensor_type, &tensor_type, sizeof tensor_type);
            refused_option = refused_option || tensor_type != EDGEATTN_DTYPE_F32;
        }
        edgeattn_kv_cache *c_arg =
            const_cast<edgeattn_kv_cache *>(call.place(in, static_cast<const edgeattn_kv_cache *>(c)));
        const edgeattn_attention_dims *dims_arg = call.place(in, &e);
        const edgeattn_weights *w_arg = null_struct || packed ? nullptr : call.place(in, &w);
        const edgeattn_attention_options *options_arg =
            rope.any() || refused_option || in.where() >= 128 ? call.place(in, &options) : nullptr;
        const bool ok = call.run([&] {
            return packed ? edgeattn_kv_cache_store_packed(c_arg, dims_arg, T, keys.f(), values.f(), pk.ptr, give,
                                                            options_arg, ws.ptr, ws.claimed)
                          : edgeattn_kv_cache_store(c_arg, dims_arg, T, keys.f(), values.f(), w_arg, options_arg,
                                                    ws.ptr, ws.claimed);
        });
        if (!ok) return;
        FUZZ_CHECK(valid && matches(e), "store succeeded on a cache not made for its sizes", 0);
        RefWeights r = packed ? packed_ref : p.seen((2 | 4) & ~none);
        const std::size_t kvh = hkv();
        if (none & 2) r.W[1] = identity(kvh, e.key_size);
        if (none & 4) r.W[2] = identity(kvh, e.value_size);
        for (std::size_t b = 0; b < cB; ++b) {
            const std::vector<double> x = doubles_at(keys, b * T * e.key_size, T * e.key_size),
                                      y = doubles_at(values, b * T * e.value_size, T * e.value_size);
            std::vector<double> pk_(T * kvh), pv(T * kvh);
            edgeattn_ref::linear(T, e.key_size, kvh, x.data(), r.W[1].data(), r.has_b[1] ? r.b[1].data() : nullptr,
                                 pk_.data());
            edgeattn_ref::linear(T, e.value_size, kvh, y.data(), r.W[2].data(), r.has_b[2] ? r.b[2].data() : nullptr,
                                 pv.data());
            std::vector<double> sizes =
                feature_sizes(T, e.key_size, kvh, x.data(), r.W[1].data(), r.has_b[1] ? r.b[1].data() : nullptr);
            if (rope.active()) {  // each key at its stream position (or the rope's)
                rope.rotate(pk_.data(), sizes.data(), T, cH, cS, kvh,
                            rope.first(b, static_cast<std::int64_t>(tokens[b])));
                keys_rotated = true;
                for (double z : sizes)
                    key_extra = std::fmax(key_extra, static_cast<double>(e.key_size + 4) * 0x1p-24 * z);
            }
            K[b].insert(K[b].end(), pk_.begin(), pk_.end());
            V[b].insert(V[b].end(), pv.begin(), pv.end());
            K_size[b].insert(K_size[b].end(), sizes.begin(), sizes.end());
            for (std::size_t t = 0; t < T; ++t) P[b].push_back(tokens[b] + t);
            n[b] += T;
            tokens[b] += T;
            if (W && n[b] > cap) {  // the oldest windowed rows are overwritten
                const std::size_t drop = n[b] - cap;
                for (std::vector<double> *m : {&K[b], &K_size[b], &V[b]})
                    m->erase(m->begin() + S * kvh, m->begin() + (S + drop) * kvh);
                P[b].erase(P[b].begin() + S, P[b].begin() + S + drop);
                n[b] = cap;
            }
        }
        if (in.special) return;
        // the layout kv_cache.h gives: (B, H_kv, capacity, head_size), the
        // token at stream position p in row row_of(p)
        std::vector<float> got;
        std::vector<double> want;
        for (std::size_t b = 0; b < cB; ++b)
            for (std::size_t g = 0; g < cH; ++g)
                for (std::size_t t = 0; t < n[b]; ++t)
                    for (std::size_t j = 0; j < cS; ++j) {
                        const std::size_t at = ((b * cH + g) * cap + row_of(P[b][t])) * cS + j;
                        got.push_back(saved.keys[at]);
                        want.push_back(K[b][t * kvh + g * cS + j]);
                        got.push_back(saved.values[at]);
                        want.push_back(V[b][t * kvh + g * cS + j]);
                    }
        // Rotated keys: each feature (key_size + 4) eps of its size off at
        // most (RopeGen::rotate), past compare's relative bound.
        if (all_finite(want)) compare("cached keys and values", got.data(), want, key_extra);
    }

    void attend() {
        const bool packed = use_packed && in.in.ConsumeBool();
        g_op = packed ? "kv_cache_attend_packed" : "kv_cache_attend";
        edgeattn_attention_dims e = mutate(true);
        const std::uint8_t kb = in.byte(), qb = in.byte();
        e.keys = kb < 150 ? 0 : kb < 235 ? cap : in.dim();
        e.queries = qb < 215 ? 1 + qb % 4 : qb < 225 ? 0 : in.dim();
        // NONE as W_q (bit 0), W_o (bit 3) or both: mostly queries of the
        // width h, sometimes of the width drawn
        unsigned none = 0;
        bool none_data = false;
        if (in.extended && !packed) {
            const std::uint8_t nb = in.byte();
            if (nb < 150) {
                const unsigned which[3] = {1, 8, 9};
                none = which[nb % 3];
                none_data = nb & 8;
                if (none & 1 && !(nb & 64)) e.query_size = e.num_hiddens;
            }
        }
        const std::size_t Q = e.queries, He = e.num_heads, he = e.num_hiddens, Hkve = kv_heads_of(e);
        Attention a;
        a.in_special = in.special;
        a.dims = e;
        a.want_weights = mostly(in);
        bool valid;
        edgeattn_kv_cache *c = cache_arg(a.call, valid);
        const bool zero = !e.batch || !Q || !e.query_size || !he || !He || (packed && (!e.key_size || !e.value_size));
        const bool heads = He && he % He != 0, kv = He && He % Hkve != 0, dims_ok = !zero && !heads && !kv;
        if (zero) a.call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
        if (heads) a.call.allow(EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
        if (kv) a.call.allow(EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
        if (valid && !matches(e)) a.call.allow(EDGEATTN_ERR_CACHE_SHAPE_MISMATCH);
        if (valid && e.keys && e.keys != cap) a.call.allow(EDGEATTN_ERR_KEYS_NOT_CAPACITY);
        if (none & 1 && e.query_size != he) a.call.allow(EDGEATTN_ERR_SHAPE_MISMATCH);
        edgeattn_attention_dims sized = e;  // keys = the capacity
        sized.keys = cap;
        a.dims.keys = cap;
        a.claims(he, He, false);
        MaskGen m;
        m.choose(in, e.batch, Q, He, cap);
        const std::size_t threads = 1 + in.byte() % 4;
        a.workspace(in, workspace_query(EDGEATTN_OP_KV_CACHE_ATTEND, sized, threads),
                    workspace_query(EDGEATTN_OP_KV_CACHE_ATTEND, sized, 1), dims_ok);
        std::size_t give = 0;
        std::vector<Buffer *> params;
        if (packed) {
            give = packed_rules(in, a.call, pk, pack_ok, pd, pk_bytes, e, dims_ok);
        } else {
            p.claims(e);
            p.unspoil_all();
            params = p.of(1 | 8, none);
        }
        a.call.extra_targets = {&mem};
        finish_masked(a, in, params, m, He, [&] { cache_rules(a.call, valid, false); });
        if (packed) packed_moved(a.call, pk);
        a.call.ranges_early = !valid || !matches(e) || (e.keys && e.keys != cap) || !dims_ok || !c;
        edgeattn_weights w = p.api();
        for (int i : {0, 3})
            if (none >> i & 1u) {
                (i == 0 ? w.W_q : w.W_o) = {EDGEATTN_DTYPE_NONE, none_data ? nullptr : p.W[i].mem.get(), nullptr};
                if ((i == 0 ? w.b_q : w.b_o) != nullptr) a.call.allow(EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
            }
        const std::uint8_t wb = in.byte();
        if (wb & 1) w.W_k.data = nullptr;  // not read
        if (wb & 2) w.W_v.data = nullptr;
        const bool null_struct = !packed && wb >= 252;  // the packed forms take no struct
        if (null_struct) a.call.allow(EDGEATTN_ERR_NULL_POINTER);
        RopeGen rope;
        const RopeCall rc = rope_call(e, valid, Q, false);
        rope.choose(in, a.call, rc);
        rope.rules(a.call, rc);
        Options o;  // the mask and rope: the cache's lengths are its valid lengths
        o.set(nullptr, m.get(), &rope, choose_tensor_type(in, a.call, false));
        const edgeattn_kv_cache *c_arg = a.call.place(in, static_cast<const edgeattn_kv_cache *>(c));
        const edgeattn_attention_dims *dims_arg = a.call.place(in, &e);
        const edgeattn_attention_options *options_arg = a.call.place(in, o.get());
        const edgeattn_weights *w_arg = null_struct || packed ? nullptr : a.call.place(in, &w);
        const bool ok = a.call.run([&] {
            return packed ? edgeattn_kv_cache_attend_packed(c_arg, dims_arg, a.q.f(), pk.ptr, give, options_arg,
                                                             a.ws.ptr, a.ws.claimed, a.out.f(), a.weights_ptr())
                          : edgeattn_kv_cache_attend(c_arg, dims_arg, a.q.f(), w_arg, options_arg, a.ws.ptr,
                                                     a.ws.claimed, a.out.f(), a.weights_ptr());
        });
        if (!ok) return;
        FUZZ_CHECK(valid && matches(e), "cache attend succeeded on a cache not made for its sizes", 0);
        {
            const std::size_t floats = cB * cH * cap * cS * sizeof(float);
            const void *arrays[4] = {saved.keys, saved.values, saved.lengths, saved.positions};
            const std::size_t sizes[4] = {floats, floats, cB * sizeof(std::int32_t), cB * sizeof(std::int32_t)};
            for (int i = 0; i < 4; ++i) {
                const std::size_t off = static_cast<const unsigned char *>(arrays[i]) - mem.mem.get();
                FUZZ_CHECK(std::memcmp(mem.before.data() + off, mem.mem.get() + off, sizes[i]) == 0,
                           "cache attend changed the cache", 0);
            }
        }
        if (in.special) return;
        // per batch element: attention over its n[b] cached positions, the
        // cached keys and values already projected (identity W_k, W_v)
        RefWeights r = packed ? packed_ref : p.seen((1 | 8) & ~none);
        const std::size_t kvh = hkv(), qs = e.query_size;
        if (none & 1) r.W[0] = identity(he, qs);  // the queries as given (qs == h)
        if (none & 8) r.W[3] = identity(he, he);  // the output the heads
        const std::vector<double> eye = identity(kvh, kvh), eye_q = identity(he, he);
        edgeattn_ref::MhaWeights rw = r.get();
        rw.W_k = rw.W_v = eye.data();
        rw.b_k = rw.b_v = nullptr;
        for (std::size_t b = 0; b < cB; ++b) {
            const std::size_t len = n[b];
            edgeattn_ref::Mask mask = m.reference(b, 1, Q, cap);
            if (W) {  // causal by stream position: the sinks, then the last tokens
                mask.key_positions.assign(P[b].begin(), P[b].end());
                mask.first_query_position = static_cast<std::int64_t>(tokens[b]) - static_cast<std::int64_t>(Q);
            }
            std::vector<double> out(Q * he, 0.0), wts(He * Q * cap, 0.0);
            if (len == 0) {  // zero heads: the output is 0 W_o^T + b_o (0 times an infinite weight is NaN)
                for (std::size_t i = 0; i < Q; ++i)
                    for (std::size_t j = 0; j < he; ++j) {
                        double v = r.has_b[3] ? r.b[3][j] : 0.0;
                        for (std::size_t c = 0; c < he; ++c) v += 0.0 * rw.W_o[j * he + c];
                        out[i * he + j] = v;
                    }
            } else {
                // the queries projected (and rotated) here, into the
                // reference with an identity W_q
                std::vector<double> o(Q * he), w1(He * Q * len), qp(Q * he);
                const std::vector<double> q = doubles_at(a.q, b * Q * qs, Q * qs);
                edgeattn_ref::linear(Q, qs, he, q.data(), r.W[0].data(), r.has_b[0] ? r.b[0].data() : nullptr,
                                     qp.data());
                std::vector<double> unused(Q * he, 0.0);
                rope.rotate(qp.data(), unused.data(), Q, He, he / He, he,
                            rope.first(b, static_cast<std::int64_t>(tokens[b]) - static_cast<std::int64_t>(Q)));
                edgeattn_ref::MhaWeights rq = rw;
                rq.W_q = eye_q.data();
                rq.b_q = nullptr;
                edgeattn_ref::multi_head_attention_masked(1, Q, len, he, kvh, kvh, he, He, cH, qp.data(), K[b].data(),
                                                          V[b].data(), ValidLens{}, mask, rq,
                                                          o.data(), w1.data());
                out = o;
                for (std::size_t x = 0; x < He * Q; ++x)
                    for (std::size_t j = 0; j < len; ++j) wts[x * cap + j] = w1[x * len + j];
            }
            if (!all_finite(out)) continue;
            // Large projections make the scores, and so the weights, move
            // past the fixed bound: allow what float32 may do to them
            // (Attention::check's rule).
            double score_error = 0.0, largest_value = 0.0;
            if (len > 0) {
                const std::vector<double> q = doubles_at(a.q, b * Q * qs, Q * qs);
                std::vector<double> q_size =
                    feature_sizes(Q, qs, he, q.data(), r.W[0].data(), r.has_b[0] ? r.b[0].data() : nullptr);
                // a rotation's two roundings per feature: in_size + 2
                std::vector<double> unused(Q * he, 0.0);
                rope.rotate(unused.data(), q_size.data(), Q, He, he / He, he,
                            rope.first(b, static_cast<std::int64_t>(tokens[b]) - static_cast<std::int64_t>(Q)));
                score_error = projected_score_error(q_size, Q, qs + (rope.active() ? 2 : 0),
                                                    e.key_size + (keys_rotated ? 2 : 0), he, He, cH, K_size[b], len) +
                              bias_rounding(mask);
                for (double v : V[b]) largest_value = std::fmax(largest_value, std::fabs(v));
            }
            compare("cache attention output", a.out.f() + b * Q * he, out,
                    4.0 * score_error * largest_value * largest_abs_row(rw.W_o, he, he));
            if (a.want_weights && a.weights.ptr)
                compare("cache attention weights", a.weights.f() + b * He * Q * cap, wts, 4.0 * score_error);
        }
    }

    void truncate() {
        g_op = "kv_cache_truncate";
        Call call;
        bool valid;
        edgeattn_kv_cache *c = cache_arg(call, valid);
        const std::uint8_t bb = in.byte(), lb = in.byte();
        const std::size_t b = bb < 220 ? bb % 4 : in.dim();
        const std::size_t now = valid && b < cB ? n[b] : 0;
        const std::size_t length = lb < 200 ? lb % (now + 1) : lb < 230 ? now + 1 + lb % 3 : in.dim();
        if (valid && (b >= cB || length > now)) call.allow(EDGEATTN_ERR_PAST_CACHE_LENGTH);
        const bool wrapped = valid && b < cB && W && tokens[b] > cap;  // its rows are no longer a prefix
        if (wrapped) call.allow(EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
        cache_rules(call, false, true);
        if (!call.run([&] { return edgeattn_kv_cache_truncate(c, b, length); })) return;
        FUZZ_CHECK(valid && b < cB && length <= now && !wrapped, "truncate succeeded where it should not", 0);
        n[b] = length;
        tokens[b] = length;
        P[b].resize(length);
        K[b].resize(length * hkv());
        K_size[b].resize(length * hkv());
        V[b].resize(length * hkv());
    }

    void reset() {
        g_op = "kv_cache_reset";
        Call call;
        bool valid;
        edgeattn_kv_cache *c = cache_arg(call, valid);
        cache_rules(call, false, true);
        if (!call.run([&] { return edgeattn_kv_cache_reset(c); })) return;
        FUZZ_CHECK(valid, "reset succeeded on a bad cache", 0);
        keys_rotated = false;
        key_extra = 0.0;
        for (std::size_t b = 0; b < cB; ++b) {
            n[b] = 0;
            tokens[b] = 0;
            P[b].clear();
            K[b].clear();
            K_size[b].clear();
            V[b].clear();
        }
    }
};

void fuzz_kv_cache(Input &in) {
    KvFuzz k(in);
    k.run();
}

// The workspace query of edgeattn_dense for dims: its status, and the
// bytes in `bytes` (0 when refused).
edgeattn_status dense_workspace_query(const edgeattn_dense_dims &dims, std::size_t threads, std::size_t &bytes) {
    edgeattn_workspace_request r{};
    r.op = EDGEATTN_OP_DENSE;
    r.dense = dims;
    bytes = 0;
    return edgeattn_workspace_size(&r, 1, threads, &bytes);
}

// edgeattn_dense, or edgeattn_dense_pack then edgeattn_dense_packed (fp32 W).
void fuzz_dense(Input &in) {
    const bool packed = in.in.ConsumeBool();
    edgeattn_dense_dims dims{in.dim(), in.dim(), in.dim()};
    const bool with_bias = in.in.ConsumeBool();
    Buffer x(Role::input, true), W(Role::input, true), b(Role::input, false), y(Role::output, true),
        ws(Role::workspace, true), pk(Role::output, true);
    W.param = b.param = true;
    claim(x, dims.rows, dims.in_features);
    claim(y, dims.rows, dims.out_features);
    const bool zero = !dims.rows || !dims.in_features || !dims.out_features;
    std::vector<double> Wd, bd;
    bool has_b = false;
    if (!packed) {
        g_op = "dense";
        claim(W, dims.out_features, dims.in_features);
        claim(b, dims.out_features);
        Call call;
        call.buffers = {&x, &W, &y, &ws};
        if (with_bias) call.buffers.push_back(&b);
        std::size_t size = 0, one = 0;
        const edgeattn_status size_st = dense_workspace_query(dims, 1 + in.byte() % 4, size),
                              one_st = dense_workspace_query(dims, 1, one);
        if (zero) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
        FUZZ_CHECK(!zero || (size_st == EDGEATTN_ERR_ZERO_DIMENSION && one_st == EDGEATTN_ERR_ZERO_DIMENSION),
                   "the dense workspace query of a zero size is not EDGEATTN_ERR_ZERO_DIMENSION", size_st);
        FUZZ_CHECK(zero || one_st == EDGEATTN_OK || one_st == EDGEATTN_ERR_SIZE_OVERFLOW,
                   "the dense workspace query refused valid sizes", one_st);
        if (!zero && one == 0) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
        ws.claimed = around(in, size);
        if (!zero && one && ws.claimed < one) call.allow(EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
        call.allocate(in, 1.0f / 32, 1.0f / 512);
        call.spoil(in, {});
        call.pointer_rules({});
        edgeattn_weight_matrix Wm = f32_matrix(W.f());
        maybe_none(in, call, {&Wm});
        const edgeattn_dense_dims *dims_arg = call.place(in, &dims);
        const edgeattn_weight_matrix *W_arg = call.place(in, &Wm);
        if (!call.run([&] {
                return edgeattn_dense(dims_arg, x.f(), W_arg, with_bias ? b.f() : nullptr, ws.ptr, ws.claimed, y.f());
            }))
            return;
        Wd = doubles(W, dims.out_features * dims.in_features);
        if (with_bias && b.ptr) {
            bd = doubles(b, dims.out_features);
            has_b = true;
        }
    } else {
        g_op = "dense_pack";
        edgeattn_dense_dims pd = dims;  // rows is not read
        const std::uint8_t how = in.byte();
        if (how >= 150) pd.rows = how % 2 ? 0 : in.dim();
        if (how >= 235) (how % 3 ? pd.in_features : pd.out_features) = in.dim();
        claim(W, pd.out_features, pd.in_features);
        claim(b, pd.out_features);
        const bool pzero = !pd.in_features || !pd.out_features;
        const edgeattn_weight_matrix fp32 = f32_matrix(nullptr);  // the size reads its type alone
        const std::size_t size = edgeattn_dense_packed_size(&pd, &fp32);
        FUZZ_CHECK(size == edgeattn_dense_packed_size(&pd, &fp32), "dense_packed_size is not pure", 0);
        FUZZ_CHECK(!pzero || size == 0, "dense_packed_size of a zero size is not 0", 0);
        pk.opaque = true;
        pk.claimed = size;
        const std::uint8_t given = in.byte();
        const std::size_t pk_bytes = given < 220 ? size : given % 2 ? size / 2 : (size > 4 ? size - 1 - given % 4 : 0);
        Call call;
        call.buffers = {&W, &pk};
        if (with_bias) call.buffers.push_back(&b);
        if (pzero) call.allow(EDGEATTN_ERR_ZERO_DIMENSION);
        if (!pzero && size == 0) call.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
        if (size && pk_bytes < size) call.allow(EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
        call.allocate(in, 1.0f / 32, 1.0f / 512);
        call.spoil(in, {});
        call.pointer_rules({});
        edgeattn_weight_matrix Wm = f32_matrix(W.f());
        maybe_none(in, call, {&Wm});
        const edgeattn_dense_dims *pd_arg = call.place(in, &pd);
        const edgeattn_weight_matrix *W_arg = call.place(in, &Wm);
        const bool pack_ok = call.run(
            [&] { return edgeattn_dense_pack(pd_arg, W_arg, with_bias ? b.f() : nullptr, pk.ptr, pk_bytes); });
        if (pack_ok) {
            Wd = doubles(W, pd.out_features * pd.in_features);
            if (with_bias && b.ptr) {
                bd = doubles(b, pd.out_features);
                has_b = true;
            }
        }

        g_op = "dense_packed";
        const std::size_t need = edgeattn_dense_packed_size(&dims, &fp32);
        unspoil(pk);
        pk.role = Role::input;
        reclaim(pk, need, 1, 1, 1, 1);
        const std::uint8_t g2 = in.byte();
        const std::size_t give = g2 < 235 ? pk_bytes : pk_bytes / 2;
        // The call may read the `give` bytes it is told of (the header
        // first, before it finds these sizes bad): a pointer spoiled into
        // another block needs that much room there (packed_rules' rule).
        if (give > pk.claimed) pk.claimed = give;
        Call use;
        use.buffers = {&x, &y, &pk};
        if (zero) use.allow(EDGEATTN_ERR_ZERO_DIMENSION);
        if (!zero && need == 0) use.allow(EDGEATTN_ERR_SIZE_OVERFLOW);
        if (!pack_ok || pd.in_features != dims.in_features || pd.out_features != dims.out_features || give < need)
            use.allow(EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
        use.allocate(in, 1.0f / 32);
        use.spoil(in, {});
        packed_moved(use, pk);
        use.pointer_rules({});
        const edgeattn_dense_dims *dims_arg = use.place(in, &dims);
        if (!use.run([&] { return edgeattn_dense_packed(dims_arg, x.f(), pk.ptr, give, y.f()); })) return;
        FUZZ_CHECK(pack_ok, "dense_packed succeeded on weights never packed", 0);
    }
    if (in.special) return;
    std::vector<double> want(dims.rows * dims.out_features);
    const std::vector<double> xd = doubles(x, dims.rows * dims.in_features);
    edgeattn_ref::linear(dims.rows, dims.in_features, dims.out_features, xd.data(), Wd.data(),
                         has_b ? bd.data() : nullptr, want.data());
    if (all_finite(want)) compare("dense", y.f(), want);
}

// Enum arguments holding any int, as a C caller passes them (through
// enum_args_from_c.c: C++ cannot make such a value): refused or answered as
// the headers say, nothing written, the kernel path unchanged.
void fuzz_enum_arguments(Input &in) {
    g_op = "enum arguments";
    const int listed[] = {-1, -2, INT_MIN, INT_MAX, 3, 6, 1000, -21, 1};
    const std::uint8_t how = in.byte();
    const int v = how < 128 ? listed[how % (sizeof listed / sizeof listed[0])] : in.in.ConsumeIntegral<int>();
    const edgeattn_isa before = edgeattn_current_isa();
    const bool isa_enum = v >= EDGEATTN_ISA_AUTO && v <= EDGEATTN_ISA_HELIUM;
    const edgeattn_status st = c_set_isa(v);
    if (!isa_enum) {
        FUZZ_CHECK(st == EDGEATTN_ERR_UNSUPPORTED_ISA, "set_isa took a value outside the enum", st);
        FUZZ_CHECK(c_isa_supported(v) == 0, "isa_supported of a value outside the enum", 0);
        FUZZ_CHECK(std::strcmp(c_isa_name(v), "unknown") == 0, "isa_name of a value outside the enum", 0);
    }
    FUZZ_CHECK(st == EDGEATTN_OK || edgeattn_current_isa() == before, "a refused set_isa changed the path", st);
    if (edgeattn_set_isa(before) != EDGEATTN_OK) fail("the path in use could not be set again");
    const char *text = c_status_str(v);
    FUZZ_CHECK(text != nullptr, "status_str gave NULL", v);
    if (v > 0 || v < EDGEATTN_ERR_BAD_OPTION)
        FUZZ_CHECK(std::strcmp(text, "unknown status") == 0, "status_str of a value outside the enum", v);
    else
        FUZZ_CHECK(std::strcmp(text, "unknown status") != 0, "status_str of a status of the enum", v);
    const bool weight_type = v >= EDGEATTN_DTYPE_F32 && v <= EDGEATTN_DTYPE_INT8;
    const edgeattn_dense_dims dims{1 + in.byte() % 4u, 1 + in.byte() % 40u, 1 + in.byte() % 40u};
    const std::size_t size = c_dense_packed_size(&dims, v);
    FUZZ_CHECK((size != 0) == weight_type,
               "dense packed size of a weight type outside the enum, or 0 for one in it", 0);
    FUZZ_CHECK(c_kv_cache_memory_size(1 + in.byte() % 3u, 1, 4, 4, v) == 0 || weight_type,
               "kv_cache_memory_size of a storage type outside the enum", 0);
    std::vector<float> memory(1024, -12345.0f);
    edgeattn_kv_cache cache;
    std::memset(&cache, 0x5a, sizeof cache);
    const std::vector<float> memory_before = memory;
    unsigned char cache_before[sizeof cache];
    std::memcpy(cache_before, &cache, sizeof cache);
    const edgeattn_status init = c_kv_cache_setup(&cache, 2, 1, 4, 4, v, memory.data(), memory.size() * 4);
    if (!weight_type) {
        FUZZ_CHECK(init == EDGEATTN_ERR_BAD_WEIGHT_TYPE, "kv_cache_setup took a storage type outside the enum", init);
        FUZZ_CHECK(memory == memory_before && std::memcmp(cache_before, &cache, sizeof cache) == 0,
                   "a refused kv_cache_setup wrote", init);
    } else {
        FUZZ_CHECK(init == EDGEATTN_OK, "kv_cache_setup refused a storage type of the enum", init);
    }
    // The workspace query of an op outside the enum: refused, `bytes` untouched.
    if (v < EDGEATTN_OP_SDPA || v > EDGEATTN_OP_DENSE) {
        const edgeattn_attention_dims d{2, 3, 4, 5, 5, 6, 8, 2, 0, 0};
        std::size_t bytes = 12345;
        const edgeattn_status ws = c_workspace_size(v, &d, 1, 1, &bytes);
        FUZZ_CHECK(ws == EDGEATTN_ERR_OPTION_NOT_SUPPORTED && bytes == 12345,
                   "workspace_size of an op outside the enum", ws);
    }
}

// A kernel path this CPU runs, picked by the input.
void choose_path(Input &in) {
    std::vector<edgeattn_isa> paths;
    for (int i = EDGEATTN_ISA_SCALAR; i <= EDGEATTN_ISA_HELIUM; ++i)
        if (edgeattn_isa_supported(static_cast<edgeattn_isa>(i))) paths.push_back(static_cast<edgeattn_isa>(i));
    const edgeattn_isa isa = paths[in.byte() % paths.size()];
    if (edgeattn_set_isa(isa) != EDGEATTN_OK) fail("a supported path was refused");
}

void run_op(Input &in, int op) {
    switch (op) {
        case 0: fuzz_sequence_mask(in); break;
        case 1: fuzz_masked_softmax(in); break;
        case 2: fuzz_dot_product(in); break;
        case 3: fuzz_additive(in); break;
        case 4: fuzz_multi_head(in, false); break;
        case 5: fuzz_multi_head(in, true); break;
        case 6: fuzz_positional(in); break;
        case 7: fuzz_multi_head_masked(in); break;
        case 8: fuzz_dot_product_masked(in); break;
        case 9: fuzz_kv_cache(in); break;
        case 10: fuzz_dense(in); break;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    fuzz::g_harness = "fuzz_c_api";
    Input in(data, size);
    const std::uint8_t head = in.byte();
    in.special = head >= 224;
    choose_path(in);
    run_op(in, head % 11);
    // After the op, so that its choices read the input as before.
    if (in.byte() >= 192) fuzz_enum_arguments(in);
    // A second op, drawing the newer fields too (Input::extended): the ops
    // that take them, the KV cache most often (window caches).
    if (in.byte() < 128) return 0;
    in.extended = true;
    const std::uint8_t next = in.byte();
    in.special = next >= 240;
    choose_path(in);
    static const int newer[] = {9, 9, 9, 9, 7, 7, 8, 8, 3, 4, 2, 10};
    run_op(in, newer[next % (sizeof newer / sizeof newer[0])]);
    // A third op, drawing the score options too (Input::score): masked
    // sdpa or mha.
    if (in.byte() < 128) return 0;
    in.score = true;
    const std::uint8_t third = in.byte();
    in.special = third >= 240;
    choose_path(in);
    run_op(in, third % 2 ? 7 : 8);
    return 0;
}
