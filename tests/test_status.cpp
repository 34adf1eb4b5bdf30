// Bad input gets its own status and leaves every byte untouched: every C
// entry point, every check it makes. Each problem keeps all its buffers
// (inputs, valid lengths, outputs, workspace) in one arena; a bad call must
// leave the whole arena as it was, byte for byte, so "nothing written"
// covers outputs, workspace and the gaps between them. Overlap cases point
// an output into another buffer of the same arena.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"

#include <climits>
#include <cstddef>
#include <limits>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using test_calls::f32;
using test_calls::request;
using test_calls::workspace_bytes;

namespace {

constexpr float pattern = -12345.0f;
constexpr std::size_t gap = 16;  // floats of pattern between buffers

// Buffers carved from one block of floats, with a snapshot to compare with.
struct arena {
    std::vector<float> mem = std::vector<float>(1 << 14, pattern);
    std::vector<float> snapshot;
    std::size_t used = gap;

    // n floats: i * step + offset, or the pattern (outputs, workspace)
    float *take(std::size_t n, float step = 0.0f, float offset = 0.0f) {
        REQUIRE(used + n + gap <= mem.size());
        float *p = mem.data() + used;
        if (step != 0.0f || offset != 0.0f)
            for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 11) * step + offset;
        used += (n + gap + 15) / 16 * 16;  // 64-byte steps
        return p;
    }
    // valid lengths stored in the arena (so outputs can be pointed over them)
    int32_t *lens(std::vector<int32_t> values) {
        float *p = take(values.size());
        std::memcpy(p, values.data(), values.size() * sizeof(int32_t));
        return reinterpret_cast<int32_t *>(p);
    }
    void seal() { snapshot = mem; }
    bool untouched() const { return std::memcmp(mem.data(), snapshot.data(), mem.size() * sizeof(float)) == 0; }
};

template <class T>
T *misaligned(T *p) {
    return reinterpret_cast<T *>(reinterpret_cast<std::uintptr_t>(p) + 1);
}

// The same for a matrix's data.
const void *misaligned(const void *p) { return static_cast<const char *>(p) + 1; }

// A matrix's data as floats (the problems' weights are fp32).
float *floats(const edgeattn_weight_matrix &m) { return static_cast<float *>(const_cast<void *>(m.data)); }

template <class T>
void set_int(T &field, int value) {  // as a C caller may store it
    static_assert(sizeof(T) == sizeof(int), "int-sized enums");
    std::memcpy(&field, &value, sizeof value);
}

// A problem of one op: valid as constructed, spoiled by each bad case.
template <class P>
struct bad_case {
    const char *what;
    void (*spoil)(P &);
    edgeattn_status expected;
};

template <class P, std::size_t N>
void check_bad_cases(const bad_case<P> (&cases)[N]) {
    {
        P p;
        p.a.seal();
        REQUIRE(p.run() == EDGEATTN_OK);
        CHECK(!p.a.untouched());  // the valid call does write (the check below can fail)
    }
    for (const bad_case<P> &c : cases) {
        P p;
        c.spoil(p);
        p.a.seal();
        INFO(std::string(c.what));
        CHECK(p.run() == c.expected);
        CHECK(p.a.untouched());
    }
}

// ------------------------------------------------------------ problems

struct sequence_mask_problem {
    arena a;
    std::size_t rows = 3, cols = 4;
    const float *X = a.take(12, 0.5f, 1.0f);
    const int32_t *lens = a.lens({1, 0, 9});
    float *Y = a.take(12);
    edgeattn_status run() { return edgeattn_sequence_mask(rows, cols, X, lens, -1e6f, Y); }
};

struct softmax_problem {
    arena a;
    edgeattn_softmax_dims dims{2, 3, 4};
    const float *X = a.take(24, 0.5f, 1.0f);
    int32_t *lens = a.lens({1, 0, 9, 4, 2, 3});
    edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens};
    const edgeattn_softmax_dims *dims_ptr = &dims;
    float *Y = a.take(24);
    edgeattn_status run() { return edgeattn_masked_softmax(dims_ptr, X, &vl, Y); }
};

// Shared by the attention ops: (B, Q, K) = (2, 3, 4), q/k/v sizes 5/6/7
// (dot product: 5/5/7), h = 8, 2 heads.
struct attention_buffers {
    arena a;
    edgeattn_attention_dims dims;
    const float *q, *k, *v;
    int32_t *lens = a.lens({2, 4});
    edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_BATCH, lens};
    float *out, *attn, *ws;
    std::size_t ws_bytes = 0;
    edgeattn_attention_mask mask{};  // none unless a case sets one
    edgeattn_rope rope{};            // none unless a case sets one
    const float *rope_table = a.take(16, 0.0625f, 0.5f);

    // The options the call gets: the valid lengths, mask and rope as they stand.
    edgeattn_dtype tensor_type = EDGEATTN_DTYPE_F32;  // fp32 unless a case sets one
    edgeattn_attention_options options() const {
        edgeattn_attention_options o{};
        o.valid_lens = vl;
        o.mask = mask;
        o.rope = rope;
        std::memcpy(reinterpret_cast<char *>(&o) + offsetof(edgeattn_attention_options, scale),
                    reinterpret_cast<const char *>(&score) + offsetof(edgeattn_attention_options, scale),
                    sizeof o - offsetof(edgeattn_attention_options, scale));
        std::memcpy(&o.tensor_type, &tensor_type, sizeof tensor_type);  // any int, not loaded as the enum
        return o;
    }
    edgeattn_attention_options score{};  // its score fields (scale on) join the call's options

    attention_buffers(edgeattn_attention_dims d, std::size_t out_features, std::size_t heads)
        : dims(d), q(a.take(d.batch * d.queries * d.query_size, 0.25f, -1.0f)),
          k(a.take(d.batch * d.keys * d.key_size, 0.125f, -0.5f)),
          v(a.take(d.batch * d.keys * d.value_size, 0.5f, -2.0f)),
          out(a.take(d.batch * d.queries * out_features)), attn(a.take(d.batch * heads * d.queries * d.keys)),
          ws(nullptr) {}
    void make_workspace(std::size_t bytes) {
        REQUIRE(bytes > 0);
        ws_bytes = bytes;
        ws = a.take(bytes / sizeof(float));
    }
};

struct dot_problem : attention_buffers {
    dot_problem() : attention_buffers({2, 3, 4, 5, 5, 7, 0, 0, 0, 0}, 7, 1) {
        make_workspace(workspace_bytes(EDGEATTN_OP_SDPA, dims, 1));
    }
    edgeattn_status run() {
        const edgeattn_attention_options o = options();
        return edgeattn_sdpa(&dims, q, k, v, &o, ws, ws_bytes, out, attn);
    }
};

// Additive attention takes W_q, W_k and W_v = d2l's w_v (1, h), no W_o or biases.
struct additive_problem : attention_buffers {
    edgeattn_weights w{};
    additive_problem() : attention_buffers({2, 3, 4, 5, 6, 7, 8, 0, 0, 0}, 7, 1) {
        w.W_q = f32(a.take(8 * 5, 0.1f, -0.3f));
        w.W_k = f32(a.take(8 * 6, 0.1f, -0.2f));
        w.W_v = f32(a.take(8, 0.2f, -1.0f));
        make_workspace(workspace_bytes(EDGEATTN_OP_ADDITIVE, dims, 1));
    }
    edgeattn_status run() {
        const edgeattn_attention_options o = options();
        return edgeattn_additive(&dims, q, k, v, &w, &o, ws, ws_bytes, out, attn);
    }
};

struct mha_problem : attention_buffers {
    edgeattn_weights w;
    mha_problem() : attention_buffers({2, 3, 4, 5, 6, 7, 8, 2, 0, 0}, 8, 2) {
        w = {f32(a.take(8 * 5, 0.1f, -0.3f)), f32(a.take(8 * 6, 0.1f, -0.2f)), f32(a.take(8 * 7, 0.1f, -0.1f)),
             f32(a.take(8 * 8, 0.1f, -0.4f)), a.take(8, 0.1f, 0.1f), nullptr, nullptr, a.take(8, 0.1f, 0.2f)};
        make_workspace(workspace_bytes(EDGEATTN_OP_MHA, dims, 1));
    }
    edgeattn_status run() {
        const edgeattn_attention_options o = options();
        return edgeattn_mha(&dims, q, k, v, &w, &o, ws, ws_bytes, out, attn);
    }
};

// Self-attention: multi-head attention with X (the q buffer) as queries,
// keys and values, keys = queries and every feature size d.
struct self_problem : attention_buffers {
    edgeattn_weights w;
    self_problem() : attention_buffers({2, 3, 3, 8, 8, 8, 8, 2, 0, 0}, 8, 2) {
        w = {f32(a.take(64, 0.1f, -0.3f)), f32(a.take(64, 0.1f, -0.2f)), f32(a.take(64, 0.1f, -0.1f)),
             f32(a.take(64, 0.1f, -0.4f)), nullptr, nullptr, nullptr, nullptr};
        make_workspace(workspace_bytes(EDGEATTN_OP_MHA, dims, 1));
    }
    edgeattn_status run() {
        const edgeattn_attention_options o = options();
        return edgeattn_mha(&dims, q, q, q, &w, &o, ws, ws_bytes, out, attn);
    }
};

// A KV cache in the arena (batch 2, one key/value head of 4 features,
// capacity 6) holding 2 tokens, then a store of 2 more tokens or an attend
// of 2 queries, with weights as given or packed once.
struct cache_buffers {
    arena a;
    edgeattn_attention_dims dims{2, 2, 6, 8, 8, 8, 8, 2, 1, 0};
    edgeattn_kv_cache cache{};
    const float *x;
    edgeattn_weights w;
    float *packed = nullptr, *ws = nullptr;
    std::size_t packed_bytes = 0, ws_bytes = 0;
    int32_t *lens = a.lens({1, 2});
    int32_t *ranges = a.lens({0, 2, 1, 2});
    const float *bias = a.take(2 * 2 * 6, 0.125f, -0.5f);
    edgeattn_attention_options opt{};  // none unless a case sets one
    const float *rope_table = a.take(16, 0.0625f, 0.5f);
    bool use_packed;

    explicit cache_buffers(bool packed_form) : use_packed(packed_form) {
        const edgeattn_kv_cache_config config{2, 1, 4, 6, EDGEATTN_DTYPE_F32, 4, 2, 0};  // a window cache
        const std::size_t memory_bytes = edgeattn_kv_cache_memory_size(&config);
        REQUIRE(memory_bytes > 0);
        float *memory = a.take(memory_bytes / 4);
        REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory, memory_bytes) == EDGEATTN_OK);
        x = a.take(2 * 2 * 8, 0.25f, -1.0f);
        w = {f32(a.take(8 * 8, 0.1f, -0.3f)), f32(a.take(4 * 8, 0.1f, -0.2f)), f32(a.take(4 * 8, 0.1f, -0.1f)),
             f32(a.take(8 * 8, 0.1f, -0.4f)), a.take(8, 0.1f, 0.1f), a.take(4, 0.1f, 0.2f), nullptr, nullptr};
        if (use_packed) {
            packed_bytes = edgeattn_mha_packed_size(&dims, &w);
            REQUIRE(packed_bytes > 0);
            packed = a.take(packed_bytes / 4);
            REQUIRE(edgeattn_mha_pack(&dims, &w, packed, packed_bytes) == EDGEATTN_OK);
        }
        const edgeattn_workspace_request calls[2] = {request(EDGEATTN_OP_KV_CACHE_STORE, dims, 2),
                                                     request(EDGEATTN_OP_KV_CACHE_ATTEND, dims)};
        REQUIRE(edgeattn_workspace_size(calls, 2, 1, &ws_bytes) == EDGEATTN_OK);
        ws = a.take(ws_bytes / 4);
        REQUIRE(edgeattn_kv_cache_store(&cache, &dims, 2, x, x, &w, nullptr, ws, ws_bytes) == EDGEATTN_OK);
    }
};

template <bool Packed>
struct cache_store_problem : cache_buffers {
    cache_store_problem() : cache_buffers(Packed) {}
    edgeattn_status run() {
        return use_packed ? edgeattn_kv_cache_store_packed(&cache, &dims, 2, x, x, packed, packed_bytes, &opt, ws,
                                                           ws_bytes)
                          : edgeattn_kv_cache_store(&cache, &dims, 2, x, x, &w, &opt, ws, ws_bytes);
    }
};

template <bool Packed>
struct cache_attend_problem : cache_buffers {
    float *out = a.take(2 * 2 * 8), *attn = a.take(2 * 2 * 2 * 6);
    cache_attend_problem() : cache_buffers(Packed) {}
    edgeattn_status run() {
        return use_packed ? edgeattn_kv_cache_attend_packed(&cache, &dims, x, packed, packed_bytes, &opt, ws,
                                                            ws_bytes, out, attn)
                          : edgeattn_kv_cache_attend(&cache, &dims, x, &w, &opt, ws, ws_bytes, out, attn);
    }
};

struct table_problem {
    arena a;
    std::size_t max_len = 6, d = 5;
    float *P = a.take(30);
    edgeattn_status run() { return edgeattn_positional_encoding_table(max_len, d, P); }
};

struct add_problem {
    arena a;
    std::size_t batch = 2, n = 3, d = 4, start = 0, max_len = 5;
    const float *X = a.take(24, 0.5f, 1.0f), *P = a.take(20, 0.25f, -1.0f);
    float *Y = a.take(24);
    edgeattn_status run() { return edgeattn_positional_encoding_add_at(batch, n, d, start, X, P, max_len, Y); }
};

constexpr std::size_t huge = SIZE_MAX / 8;  // x 8 overflows; x 3 fits in elements but not in bytes

}  // namespace

// The options' score fields and the mask's new ones of either kind of
// problem: an attention op's (options() copies them) or a cache call's.
edgeattn_attention_options &score_fields(attention_buffers &p) { return p.score; }
edgeattn_attention_mask &mask_fields(attention_buffers &p) { return p.mask; }
edgeattn_attention_options &score_fields(cache_buffers &p) { return p.opt; }
edgeattn_attention_mask &mask_fields(cache_buffers &p) { return p.opt.mask; }

// Hostile values of the score options: BAD_OPTION where the op takes the
// field (`products`: scale, softcap, weights_output; `alibi`), else
// OPTION_NOT_SUPPORTED; `none`: the op takes none of them (a store).
template <class P>
void check_score_options(bool products, bool alibi, bool none = false) {
    const edgeattn_status taken = none ? EDGEATTN_ERR_OPTION_NOT_SUPPORTED : EDGEATTN_ERR_BAD_OPTION;
    const edgeattn_status product = products ? taken : EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    struct field_case {
        const char *what;
        void (*spoil)(P &);
        edgeattn_status expected;
    };
    const field_case fields[] = {
        {"scale NaN", [](P &p) { score_fields(p).scale = std::numeric_limits<float>::quiet_NaN(); }, product},
        {"scale +inf", [](P &p) { score_fields(p).scale = std::numeric_limits<float>::infinity(); }, product},
        {"scale -inf", [](P &p) { score_fields(p).scale = -std::numeric_limits<float>::infinity(); }, product},
        {"softcap negative", [](P &p) { score_fields(p).softcap = -1.0f; }, product},
        {"softcap NaN", [](P &p) { score_fields(p).softcap = std::numeric_limits<float>::quiet_NaN(); }, product},
        {"softcap inf", [](P &p) { score_fields(p).softcap = std::numeric_limits<float>::infinity(); }, product},
        {"masking 2", [](P &p) { set_int(score_fields(p).masking, 2); }, taken},
        {"masking -1", [](P &p) { set_int(score_fields(p).masking, -1); }, taken},
        {"weights_output 4", [](P &p) { set_int(score_fields(p).weights_output, 4); }, product},
        {"weights_output INT_MIN", [](P &p) { set_int(score_fields(p).weights_output, INT32_MIN); }, product},
        {"alignment 3", [](P &p) { set_int(mask_fields(p).alignment, 3); }, taken},
        {"alignment -1", [](P &p) { set_int(mask_fields(p).alignment, -1); }, taken},
        {"alibi NaN", [](P &p) { mask_fields(p).alibi_max_bias = std::numeric_limits<float>::quiet_NaN(); }, taken},
        {"alibi negative", [](P &p) { mask_fields(p).alibi_max_bias = -8.0f; }, taken},
        {"alibi inf", [](P &p) { mask_fields(p).alibi_max_bias = std::numeric_limits<float>::infinity(); }, taken},
        {"alibi 8", [](P &p) { mask_fields(p).alibi_max_bias = 8.0f; },
         alibi ? EDGEATTN_OK : EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"scale 0.5", [](P &p) { score_fields(p).scale = 0.5f; }, products ? EDGEATTN_OK : product},
        {"softcap 2", [](P &p) { score_fields(p).softcap = 2.0f; }, products ? EDGEATTN_OK : product},
        {"weights_output SCORES", [](P &p) { score_fields(p).weights_output = EDGEATTN_WEIGHTS_SCORES; },
         products ? EDGEATTN_OK : product},
        {"masking EXCLUDE", [](P &p) { score_fields(p).masking = EDGEATTN_MASKING_EXCLUDE; }, none ? taken : EDGEATTN_OK},
        {"right_window 2", [](P &p) { mask_fields(p).right_window = 2; }, none ? taken : EDGEATTN_OK},
        {"alignment TOP_LEFT", [](P &p) { mask_fields(p).alignment = EDGEATTN_ALIGN_TOP_LEFT; },
         none ? taken : EDGEATTN_OK},
    };
    for (const field_case &c : fields) {
        P p;
        c.spoil(p);
        p.a.seal();
        INFO(std::string(c.what));
        CHECK(p.run() == c.expected);
        if (c.expected != EDGEATTN_OK) CHECK(p.a.untouched());
    }
}

TEST_CASE("every status has its own text, and unknown ones say so") {
    std::set<std::string> texts;
    int codes = 0;
    for (int s = 0; s > -100; --s) {
        const char *t = edgeattn_status_str(static_cast<edgeattn_status>(s));
        REQUIRE(t != nullptr);
        if (std::string(t) == "unknown status") break;
        texts.insert(t);
        ++codes;
    }
    CHECK(codes == 1 - EDGEATTN_ERR_NOT_BUILT);  // 0 .. the lowest code, none missing
    CHECK(texts.size() == static_cast<std::size_t>(codes));
    // The statuses that name a case of a bad call, each in words of its own
    // (not the text of EDGEATTN_ERR_BAD_CACHE or of a shape mismatch).
    struct named {
        edgeattn_status status;
        int code;
        const char *words;
    };
    const named cases[] = {
        {EDGEATTN_ERR_OPTION_NOT_SUPPORTED, -21, "does not take"},
        {EDGEATTN_ERR_CACHE_SHAPE_MISMATCH, -22, "do not match the KV cache"},
        {EDGEATTN_ERR_KEYS_NOT_CAPACITY, -23, "neither 0 nor the cache's capacity"},
        {EDGEATTN_ERR_PAST_CACHE_LENGTH, -24, "past the filled length"},
        {EDGEATTN_ERR_BAD_ROPE, -25, "rotary embedding's table or fields"},
        {EDGEATTN_ERR_ROPE_POSITION, -26, "outside its table"},
        {EDGEATTN_ERR_BAD_WINDOW, -27, "capacity = sinks + window"},
        {EDGEATTN_ERR_BAD_OPTION, -28, "option's value is invalid"},
        {EDGEATTN_ERR_NOT_BUILT, -29, "build of the library left out"},
    };
    for (const named &c : cases) {
        const std::string t = edgeattn_status_str(c.status);
        INFO(t);
        CHECK(static_cast<int>(c.status) == c.code);
        CHECK(t.find(c.words) != std::string::npos);
        CHECK(t != edgeattn_status_str(EDGEATTN_ERR_BAD_CACHE));
        CHECK(t != edgeattn_status_str(EDGEATTN_ERR_SHAPE_MISMATCH));
        CHECK(t != "unknown status");
    }
    CHECK(std::string(edgeattn_status_str(static_cast<edgeattn_status>(-999))) == "unknown status");
    CHECK(std::string(edgeattn_status_str(static_cast<edgeattn_status>(1))) == "unknown status");
    CHECK(std::string(edgeattn_status_str(EDGEATTN_STATUS_FORCE_INT)) == "unknown status");
}

TEST_CASE("sequence_mask: each bad argument, its status, nothing written") {
    using P = sequence_mask_problem;
    const bad_case<P> cases[] = {
        {"null X", [](P &p) { p.X = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null valid_len", [](P &p) { p.lens = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null Y", [](P &p) { p.Y = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero rows", [](P &p) { p.rows = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero cols", [](P &p) { p.cols = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"rows * cols overflows", [](P &p) { p.rows = huge; p.cols = 8; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"bytes overflow", [](P &p) { p.rows = huge; p.cols = 3; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"misaligned X", [](P &p) { p.X = misaligned(p.X); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned Y", [](P &p) { p.Y = misaligned(p.Y); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned valid_len", [](P &p) { p.lens = misaligned(p.lens); }, EDGEATTN_ERR_MISALIGNED},
        {"Y shifted over X", [](P &p) { p.Y = const_cast<float *>(p.X) + 1; }, EDGEATTN_ERR_OVERLAP},
        {"Y over valid_len", [](P &p) { p.Y = reinterpret_cast<float *>(const_cast<int32_t *>(p.lens)) - 2; },
         EDGEATTN_ERR_OVERLAP},
        {"negative valid length", [](P &p) { const_cast<int32_t *>(p.lens)[2] = -1; }, EDGEATTN_ERR_NEGATIVE_VALID_LEN},
    };
    check_bad_cases(cases);
}

TEST_CASE("masked_softmax: each bad argument, its status, nothing written") {
    using P = softmax_problem;
    const bad_case<P> cases[] = {
        {"null dims", [](P &p) { p.dims_ptr = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null X", [](P &p) { p.X = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null Y", [](P &p) { p.Y = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null lens", [](P &p) { p.vl.lens = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero batch", [](P &p) { p.dims.batch = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero queries", [](P &p) { p.dims.queries = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero keys", [](P &p) { p.dims.keys = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"size overflows", [](P &p) { p.dims = {huge, 4, 2}; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"bytes overflow", [](P &p) { p.dims = {1, huge, 3}; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"misaligned X", [](P &p) { p.X = misaligned(p.X); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned Y", [](P &p) { p.Y = misaligned(p.Y); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned lens", [](P &p) { p.vl.lens = misaligned(p.lens); }, EDGEATTN_ERR_MISALIGNED},
        {"bad kind", [](P &p) { p.vl.kind = static_cast<edgeattn_valid_lens_kind>(3); }, EDGEATTN_ERR_BAD_VALID_LENS_KIND},
        {"negative kind (as a C caller may store it)",
         [](P &p) {
             const int minus_one = -1;  // outside the enum's range in C++: stored as C would
             std::memcpy(&p.vl.kind, &minus_one, sizeof minus_one);
         },
         EDGEATTN_ERR_BAD_VALID_LENS_KIND},
        {"negative valid length", [](P &p) { p.lens[5] = -7; }, EDGEATTN_ERR_NEGATIVE_VALID_LEN},
        {"Y shifted over X", [](P &p) { p.Y = const_cast<float *>(p.X) + 3; }, EDGEATTN_ERR_OVERLAP},
        {"X shifted over Y", [](P &p) { p.X = p.Y + 1; }, EDGEATTN_ERR_OVERLAP},
        {"Y over the lens", [](P &p) { p.Y = reinterpret_cast<float *>(p.lens) - 20; }, EDGEATTN_ERR_OVERLAP},
    };
    check_bad_cases(cases);
}

TEST_CASE("sdpa: each bad argument, its status, nothing written") {
    using P = dot_problem;
    const bad_case<P> cases[] = {
        {"null queries", [](P &p) { p.q = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null keys", [](P &p) { p.k = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null values", [](P &p) { p.v = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null workspace", [](P &p) { p.ws = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null output", [](P &p) { p.out = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null lens", [](P &p) { p.vl.lens = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero batch", [](P &p) { p.dims.batch = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero queries", [](P &p) { p.dims.queries = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero keys", [](P &p) { p.dims.keys = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero query_size", [](P &p) { p.dims.query_size = 0; p.dims.key_size = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero value_size", [](P &p) { p.dims.value_size = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"key_size != query_size", [](P &p) { p.dims.key_size = 6; }, EDGEATTN_ERR_SHAPE_MISMATCH},
        {"keys x d overflows", [](P &p) { p.dims.keys = huge; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"values overflow", [](P &p) { p.dims.value_size = huge; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"weights overflow", [](P &p) { p.dims.batch = 1; p.dims.queries = huge / 2; p.dims.keys = 16; },
         EDGEATTN_ERR_SIZE_OVERFLOW},
        {"workspace one float short", [](P &p) { p.ws_bytes -= 4; }, EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"workspace of 0 bytes", [](P &p) { p.ws_bytes = 0; }, EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"misaligned queries", [](P &p) { p.q = misaligned(p.q); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned keys", [](P &p) { p.k = misaligned(p.k); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned values", [](P &p) { p.v = misaligned(p.v); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned output", [](P &p) { p.out = misaligned(p.out); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned weights", [](P &p) { p.attn = misaligned(p.attn); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned workspace", [](P &p) { p.ws = misaligned(p.ws); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned lens", [](P &p) { p.vl.lens = misaligned(p.lens); }, EDGEATTN_ERR_MISALIGNED},
        {"bad kind", [](P &p) { p.vl.kind = static_cast<edgeattn_valid_lens_kind>(99); }, EDGEATTN_ERR_BAD_VALID_LENS_KIND},
        {"negative valid length", [](P &p) { p.lens[0] = INT32_MIN; }, EDGEATTN_ERR_NEGATIVE_VALID_LEN},
        {"output over queries", [](P &p) { p.out = const_cast<float *>(p.q) + 29; }, EDGEATTN_ERR_OVERLAP},
        {"output over keys", [](P &p) { p.out = const_cast<float *>(p.k) - 41; }, EDGEATTN_ERR_OVERLAP},
        {"weights over values", [](P &p) { p.attn = const_cast<float *>(p.v) + 5; }, EDGEATTN_ERR_OVERLAP},
        {"weights over the lens", [](P &p) { p.attn = reinterpret_cast<float *>(p.lens) - 1; }, EDGEATTN_ERR_OVERLAP},
        {"weights over output", [](P &p) { p.attn = p.out + 41; }, EDGEATTN_ERR_OVERLAP},
        {"output in the workspace", [](P &p) { p.out = p.ws + p.ws_bytes / 4 - 1; }, EDGEATTN_ERR_OVERLAP},
        {"workspace over queries", [](P &p) { p.ws = const_cast<float *>(p.q); }, EDGEATTN_ERR_OVERLAP},
        {"workspace size past the address space", [](P &p) { p.ws_bytes = SIZE_MAX - 3; p.ws = const_cast<float *>(p.v) + 8; },
         EDGEATTN_ERR_OVERLAP},
        // Its end saturates at the top of the address space: wrapped, it
        // would end below its start and miss the queries it starts on.
        {"workspace from the queries on, past the address space",
         [](P &p) { p.ws_bytes = SIZE_MAX - 3; p.ws = const_cast<float *>(p.q); }, EDGEATTN_ERR_OVERLAP},
    };
    check_bad_cases(cases);
}

TEST_CASE("additive: each bad argument, its status, nothing written") {
    using P = additive_problem;
    const bad_case<P> cases[] = {
        {"null W_q", [](P &p) { p.w.W_q.data = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null W_k", [](P &p) { p.w.W_k.data = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null w_v", [](P &p) { p.w.W_v.data = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null queries", [](P &p) { p.q = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null workspace", [](P &p) { p.ws = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero num_hiddens", [](P &p) { p.dims.num_hiddens = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero key_size", [](P &p) { p.dims.key_size = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"W_q overflows", [](P &p) { p.dims.num_hiddens = huge; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"queries overflow", [](P &p) { p.dims.query_size = huge; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"workspace overflows", [](P &p) { p.dims.num_hiddens = SIZE_MAX / 16; p.dims.query_size = 1;
                                           p.dims.key_size = 1; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"workspace short", [](P &p) { p.ws_bytes -= 1; }, EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"misaligned w_v", [](P &p) { p.w.W_v.data = misaligned(p.w.W_v.data); }, EDGEATTN_ERR_MISALIGNED},
        {"negative valid length", [](P &p) { p.lens[1] = -1; }, EDGEATTN_ERR_NEGATIVE_VALID_LEN},
        {"output over W_k", [](P &p) { p.out = floats(p.w.W_k) + 47; }, EDGEATTN_ERR_OVERLAP},
        {"weights over w_v", [](P &p) { p.attn = floats(p.w.W_v) - 23; }, EDGEATTN_ERR_OVERLAP},
        {"workspace over W_q", [](P &p) { p.ws = floats(p.w.W_q) + 4; }, EDGEATTN_ERR_OVERLAP},
        // what additive attention does not take
        {"W_o set", [](P &p) { p.w.W_o = f32(p.a.take(8 * 8, 0.1f, 0.5f)); }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"int8 W_o set", [](P &p) { p.w.W_o = {EDGEATTN_DTYPE_INT8, p.a.take(16, 0.1f, 0.5f), p.a.take(8, 0.0f, 1.0f)}; },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"b_q set", [](P &p) { p.w.b_q = p.a.take(8, 0.1f, 0.5f); }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"b_k set", [](P &p) { p.w.b_k = p.a.take(8, 0.1f, 0.5f); }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"b_v set", [](P &p) { p.w.b_v = p.a.take(1, 0.1f, 0.5f); }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"b_o set", [](P &p) { p.w.b_o = p.a.take(7, 0.1f, 0.5f); }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"every bias set", [](P &p) { p.w.b_q = p.w.b_k = p.w.b_v = p.w.b_o = p.a.take(8, 0.1f, 0.5f); },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
    };
    check_bad_cases(cases);
}

TEST_CASE("mha: each bad argument, its status, nothing written") {
    using P = mha_problem;
    const bad_case<P> cases[] = {
        {"null W_o", [](P &p) { p.w.W_o.data = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null W_v", [](P &p) { p.w.W_v.data = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null keys", [](P &p) { p.k = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero heads", [](P &p) { p.dims.num_heads = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero value_size", [](P &p) { p.dims.value_size = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"heads do not divide", [](P &p) { p.dims.num_heads = 3; }, EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE},
        {"keys overflow", [](P &p) { p.dims.keys = SIZE_MAX / 2; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"W_o overflows", [](P &p) { p.dims.num_hiddens = (std::size_t{1} << (4 * sizeof(std::size_t))) ; p.dims.num_heads = 1;
                                     p.dims.batch = p.dims.queries = p.dims.keys = p.dims.query_size = p.dims.key_size =
                                         p.dims.value_size = 1; },
         EDGEATTN_ERR_SIZE_OVERFLOW},
        {"workspace short", [](P &p) { p.ws_bytes -= 4; }, EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"misaligned W_v", [](P &p) { p.w.W_v.data = misaligned(p.w.W_v.data); }, EDGEATTN_ERR_MISALIGNED},
        {"misaligned bias", [](P &p) { p.w.b_o = misaligned(p.w.b_o); }, EDGEATTN_ERR_MISALIGNED},
        {"bad kind", [](P &p) { p.vl.kind = static_cast<edgeattn_valid_lens_kind>(7); }, EDGEATTN_ERR_BAD_VALID_LENS_KIND},
        {"negative valid length", [](P &p) { p.lens[1] = -1; }, EDGEATTN_ERR_NEGATIVE_VALID_LEN},
        {"output over queries", [](P &p) { p.q = p.out + 2; }, EDGEATTN_ERR_OVERLAP},
        {"output over a bias", [](P &p) { p.out = const_cast<float *>(p.w.b_q) - 3; }, EDGEATTN_ERR_OVERLAP},
        {"weights over W_o", [](P &p) { p.attn = floats(p.w.W_o) + 63; }, EDGEATTN_ERR_OVERLAP},
        {"weights over output", [](P &p) { p.attn = p.out + 1; }, EDGEATTN_ERR_OVERLAP},
        {"output in the workspace", [](P &p) { p.out = p.ws; }, EDGEATTN_ERR_OVERLAP},
    };
    check_bad_cases(cases);
}

TEST_CASE("multi-head self-attention (X as queries, keys and values): each bad argument, its status, nothing written") {
    using P = self_problem;
    const bad_case<P> cases[] = {
        {"null X", [](P &p) { p.q = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null W_q", [](P &p) { p.w.W_q.data = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero n", [](P &p) { p.dims.queries = 0; p.dims.keys = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero d", [](P &p) { p.dims.query_size = p.dims.key_size = p.dims.value_size = p.dims.num_hiddens = 0; },
         EDGEATTN_ERR_ZERO_DIMENSION},
        {"heads do not divide", [](P &p) { p.dims.num_heads = 3; }, EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE},
        {"X overflows", [](P &p) { p.dims.queries = p.dims.keys = huge; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"workspace short", [](P &p) { p.ws_bytes /= 2; }, EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"output over X", [](P &p) { p.out = const_cast<float *>(p.q) + 40; }, EDGEATTN_ERR_OVERLAP},
        {"weights over W_k", [](P &p) { p.attn = floats(p.w.W_k); }, EDGEATTN_ERR_OVERLAP},
        {"X in the workspace", [](P &p) { p.q = p.ws + 7; }, EDGEATTN_ERR_OVERLAP},
    };
    check_bad_cases(cases);
}

// Options and fields a KV cache call does not take: refused, never ignored.
template <class P>
void check_cache_store_options() {
    const bad_case<P> cases[] = {
        {"valid lengths per batch element", [](P &p) { p.opt.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, p.lens}; },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"valid lengths per query", [](P &p) { p.opt.valid_lens = {EDGEATTN_VALID_LENS_PER_QUERY, p.lens}; },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"causal mask", [](P &p) { p.opt.mask.causal = 1; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"causal mask of another nonzero value", [](P &p) { p.opt.mask.causal = -7; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"key ranges",
         [](P &p) {
             p.opt.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_BATCH;
             p.opt.mask.key_ranges = p.ranges;
         },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"ranges kind outside the enum", [](P &p) { set_int(p.opt.mask.ranges_kind, -1); },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"bias", [](P &p) { p.opt.mask.bias = p.bias; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
    };
    check_bad_cases(cases);
}

template <class P>
void check_cache_attend_options() {
    const bad_case<P> cases[] = {
        {"valid lengths per batch element", [](P &p) { p.opt.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, p.lens}; },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"valid lengths per query", [](P &p) { p.opt.valid_lens = {EDGEATTN_VALID_LENS_PER_QUERY, p.lens}; },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"valid lengths beside a causal mask",
         [](P &p) {
             p.opt.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, p.lens};
             p.opt.mask.causal = 1;
         },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"valid lengths of a kind outside the enum", [](P &p) { set_int(p.opt.valid_lens.kind, INT_MIN); },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
    };
    check_bad_cases(cases);
}

TEST_CASE("KV cache store and attend: an option they do not take is refused, nothing written") {
    SUBCASE("store: valid lengths or a mask") { check_cache_store_options<cache_store_problem<false>>(); }
    SUBCASE("store_packed: valid lengths or a mask") { check_cache_store_options<cache_store_problem<true>>(); }
    SUBCASE("attend: valid lengths") { check_cache_attend_options<cache_attend_problem<false>>(); }
    SUBCASE("attend_packed: valid lengths") { check_cache_attend_options<cache_attend_problem<true>>(); }
}

// A rotary embedding of the cache calls (head size 4, a table of 4
// positions; a store rotates positions 2 and 3, an attend 0 and 1) with a
// field that cannot be right, a position past its table, or a table in the
// workspace.
template <class P>
void check_cache_rope() {
    const bad_case<P> cases[] = {
        {"rope rotary_dims odd", [](P &p) { p.opt.rope = {p.rope_table, 4, 3, EDGEATTN_ROPE_NEOX, nullptr}; },
         EDGEATTN_ERR_BAD_ROPE},
        {"rope rotary_dims above the head size",
         [](P &p) { p.opt.rope = {p.rope_table, 2, 8, EDGEATTN_ROPE_NEOX, nullptr}; }, EDGEATTN_ERR_BAD_ROPE},
        {"rope rotary_dims 0", [](P &p) { p.opt.rope = {p.rope_table, 4, 0, EDGEATTN_ROPE_NEOX, nullptr}; },
         EDGEATTN_ERR_BAD_ROPE},
        {"rope max_positions 0", [](P &p) { p.opt.rope = {p.rope_table, 0, 4, EDGEATTN_ROPE_NEOX, nullptr}; },
         EDGEATTN_ERR_BAD_ROPE},
        {"rope layout outside the enum",
         [](P &p) {
             p.opt.rope = {p.rope_table, 4, 4, EDGEATTN_ROPE_NEOX, nullptr};
             set_int(p.opt.rope.layout, 2);
         },
         EDGEATTN_ERR_BAD_ROPE},
        {"rope fields without a table", [](P &p) { p.opt.rope.rotary_dims = 4; }, EDGEATTN_ERR_BAD_ROPE},
        {"rope positions without a table", [](P &p) { p.opt.rope.positions = p.lens; }, EDGEATTN_ERR_BAD_ROPE},
        {"rope layout outside the enum without a table", [](P &p) { set_int(p.opt.rope.layout, -1); },
         EDGEATTN_ERR_BAD_ROPE},
        {"rope position past the table", [](P &p) { p.opt.rope = {p.rope_table, 3, 4, EDGEATTN_ROPE_NEOX, p.lens}; },
         EDGEATTN_ERR_ROPE_POSITION},
        {"rope negative position past the table",
         [](P &p) {
             p.lens[0] = -4;
             p.opt.rope = {p.rope_table, 4, 4, EDGEATTN_ROPE_GPTJ, p.lens};
         },
         EDGEATTN_ERR_ROPE_POSITION},
        {"rope position INT32_MIN",
         [](P &p) {
             p.lens[1] = INT32_MIN;
             p.opt.rope = {p.rope_table, 4, 4, EDGEATTN_ROPE_NEOX, p.lens};
         },
         EDGEATTN_ERR_ROPE_POSITION},
        {"rope table in the workspace", [](P &p) { p.opt.rope = {p.ws, 4, 4, EDGEATTN_ROPE_NEOX, nullptr}; },
         EDGEATTN_ERR_OVERLAP},
    };
    check_bad_cases(cases);
}

template <class P>
void check_attention_rope() {
    const bad_case<P> cases[] = {
        {"rope with a table", [](P &p) { p.rope = {p.rope_table, 4, 2, EDGEATTN_ROPE_NEOX, nullptr}; },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"rope max_positions alone", [](P &p) { p.rope.max_positions = 1; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"rope layout alone", [](P &p) { p.rope.layout = EDGEATTN_ROPE_GPTJ; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"rope positions alone", [](P &p) { p.rope.positions = p.lens; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
    };
    check_bad_cases(cases);
}

TEST_CASE("a rotary embedding: refused where it is not applied, checked where it is, nothing written") {
    SUBCASE("sdpa") { check_attention_rope<dot_problem>(); }
    SUBCASE("additive") { check_attention_rope<additive_problem>(); }
    SUBCASE("mha") { check_attention_rope<mha_problem>(); }
    SUBCASE("store") { check_cache_rope<cache_store_problem<false>>(); }
    SUBCASE("store_packed") { check_cache_rope<cache_store_problem<true>>(); }
    SUBCASE("attend") { check_cache_rope<cache_attend_problem<false>>(); }
    SUBCASE("attend_packed") { check_cache_rope<cache_attend_problem<true>>(); }
}

TEST_CASE("score options: each hostile value its status, nothing written; each op takes what it documents") {
    SUBCASE("sdpa") { check_score_options<dot_problem>(true, false); }
    SUBCASE("additive") { check_score_options<additive_problem>(false, false); }
    SUBCASE("mha") { check_score_options<mha_problem>(true, true); }
    SUBCASE("self-attention") { check_score_options<self_problem>(true, true); }
    SUBCASE("store") { check_score_options<cache_store_problem<false>>(false, false, true); }
    SUBCASE("store_packed") { check_score_options<cache_store_problem<true>>(false, false, true); }
    SUBCASE("attend") { check_score_options<cache_attend_problem<false>>(true, true); }
    SUBCASE("attend_packed") { check_score_options<cache_attend_problem<true>>(true, true); }
}

// EDGEATTN_DTYPE_NONE projections: a bias beside one, rows of the wrong
// width, a type past NONE; the mask window on a store.
TEST_CASE("KV cache calls: projection-free weights and the new fields, each refusal its own status, nothing written") {
    using S = cache_store_problem<false>;
    const bad_case<S> store_cases[] = {
        {"W_k NONE beside b_k", [](S &p) { p.w.W_k.type = EDGEATTN_DTYPE_NONE; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"W_k NONE, keys wider than h_kv",
         [](S &p) {
             p.w.W_k.type = EDGEATTN_DTYPE_NONE;
             p.w.b_k = nullptr;
         },
         EDGEATTN_ERR_SHAPE_MISMATCH},
        {"W_v NONE, values wider than h_kv", [](S &p) { p.w.W_v.type = EDGEATTN_DTYPE_NONE; },
         EDGEATTN_ERR_SHAPE_MISMATCH},
        {"W_v NONE beside b_v",
         [](S &p) {
             p.w.W_v.type = EDGEATTN_DTYPE_NONE;
             p.w.b_v = p.w.b_k;
         },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"W_k of a type past NONE", [](S &p) { set_int(p.w.W_k.type, 4); }, EDGEATTN_ERR_BAD_WEIGHT_TYPE},
        {"a mask window", [](S &p) { p.opt.mask.window = 2; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"a mask window of SIZE_MAX", [](S &p) { p.opt.mask.window = SIZE_MAX; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"positions moved", [](S &p) { ++p.cache.positions; }, EDGEATTN_ERR_BAD_CACHE},
        {"window changed", [](S &p) { p.cache.window = 5; }, EDGEATTN_ERR_BAD_CACHE},
        {"sinks changed", [](S &p) { p.cache.sinks = 1; }, EDGEATTN_ERR_BAD_CACHE},
        {"window and sinks both changed, capacity kept", [](S &p) {
             p.cache.window = 5;
             p.cache.sinks = 1;
         },
         EDGEATTN_ERR_BAD_CACHE},
    };
    check_bad_cases(store_cases);
    using A = cache_attend_problem<false>;
    const bad_case<A> attend_cases[] = {
        {"W_q NONE beside b_q", [](A &p) { p.w.W_q.type = EDGEATTN_DTYPE_NONE; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"W_q NONE, queries narrower than h",
         [](A &p) {
             p.w.W_q.type = EDGEATTN_DTYPE_NONE;
             p.w.b_q = nullptr;
             p.dims.query_size = 4;
         },
         EDGEATTN_ERR_SHAPE_MISMATCH},
        {"W_o NONE beside b_o",
         [](A &p) {
             p.w.W_o.type = EDGEATTN_DTYPE_NONE;
             p.w.b_o = p.w.b_q;
         },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"W_o of a type past NONE", [](A &p) { set_int(p.w.W_o.type, 4); }, EDGEATTN_ERR_BAD_WEIGHT_TYPE},
        {"a mask window over a bad range",
         [](A &p) {
             p.opt.mask.window = 3;
             p.opt.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_BATCH;
             p.ranges[0] = 3;
             p.ranges[1] = 1;
             p.opt.mask.key_ranges = p.ranges;
         },
         EDGEATTN_ERR_BAD_KEY_RANGE},
        {"positions moved", [](A &p) { ++p.cache.positions; }, EDGEATTN_ERR_BAD_CACHE},
    };
    check_bad_cases(attend_cases);
}

TEST_CASE("positional_encoding_table and _add_at: each bad argument, its status, nothing written") {
    using T = table_problem;
    const bad_case<T> table_cases[] = {
        {"null P", [](T &p) { p.P = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero max_len", [](T &p) { p.max_len = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero d", [](T &p) { p.d = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"table overflows", [](T &p) { p.max_len = huge; p.d = 3; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"misaligned P", [](T &p) { p.P = misaligned(p.P); }, EDGEATTN_ERR_MISALIGNED},
    };
    check_bad_cases(table_cases);

    using A = add_problem;
    const bad_case<A> add_cases[] = {
        {"null X", [](A &p) { p.X = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null P", [](A &p) { p.P = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"null Y", [](A &p) { p.Y = nullptr; }, EDGEATTN_ERR_NULL_POINTER},
        {"zero batch", [](A &p) { p.batch = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero n", [](A &p) { p.n = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero d", [](A &p) { p.d = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"zero max_len", [](A &p) { p.max_len = 0; }, EDGEATTN_ERR_ZERO_DIMENSION},
        {"X overflows", [](A &p) { p.batch = huge; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"P overflows", [](A &p) { p.max_len = huge; p.d = 3; p.batch = 1; p.n = 1; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"n > max_len", [](A &p) { p.max_len = 2; }, EDGEATTN_ERR_SEQUENCE_TOO_LONG},
        {"start + n > max_len", [](A &p) { p.start = 3; }, EDGEATTN_ERR_SEQUENCE_TOO_LONG},
        {"start past the address space", [](A &p) { p.start = SIZE_MAX - 1; }, EDGEATTN_ERR_SEQUENCE_TOO_LONG},
        {"misaligned Y", [](A &p) { p.Y = misaligned(p.Y); }, EDGEATTN_ERR_MISALIGNED},
        {"Y shifted over X", [](A &p) { p.Y = const_cast<float *>(p.X) + 4; }, EDGEATTN_ERR_OVERLAP},
        {"Y over P", [](A &p) { p.Y = const_cast<float *>(p.P) - 10; }, EDGEATTN_ERR_OVERLAP},
    };
    check_bad_cases(add_cases);
}

TEST_CASE("the workspace query: the status the op would give, bytes written only on success") {
    const edgeattn_attention_dims ok{2, 3, 4, 5, 5, 7, 8, 2, 0, 0};
    constexpr std::size_t untouched = 0xC0FFEE;
    // One request; `bytes` keeps `untouched` unless the status is OK.
    auto query = [](edgeattn_op op, const edgeattn_attention_dims &dims, std::size_t threads, std::size_t &bytes,
                    std::size_t tokens = 0) {
        const edgeattn_workspace_request r = request(op, dims, tokens);
        bytes = untouched;
        return edgeattn_workspace_size(&r, 1, threads, &bytes);
    };
    const edgeattn_op attention_ops[] = {EDGEATTN_OP_SDPA, EDGEATTN_OP_ADDITIVE, EDGEATTN_OP_MHA};
    std::size_t bytes = 0;
    for (edgeattn_op op : attention_ops) {
        INFO("op " << static_cast<int>(op));
        CHECK(query(op, ok, 1, bytes) == EDGEATTN_OK);
        CHECK(bytes > 0);
        CHECK(bytes != untouched);
        for (std::size_t threads : {std::size_t{SIZE_MAX}, SIZE_MAX / 2}) {
            CHECK(query(op, ok, threads, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
            CHECK(bytes == untouched);
        }
        edgeattn_attention_dims zero = ok;
        zero.keys = 0;
        CHECK(query(op, zero, 1, bytes) == EDGEATTN_ERR_ZERO_DIMENSION);
        CHECK(bytes == untouched);
    }
    {
        const edgeattn_workspace_request r = request(EDGEATTN_OP_MHA, ok);
        bytes = untouched;
        CHECK(edgeattn_workspace_size(nullptr, 1, 1, &bytes) == EDGEATTN_ERR_NULL_POINTER);
        CHECK(edgeattn_workspace_size(&r, 1, 1, nullptr) == EDGEATTN_ERR_NULL_POINTER);
        CHECK(edgeattn_workspace_size(&r, 0, 1, &bytes) == EDGEATTN_ERR_ZERO_DIMENSION);
        CHECK(bytes == untouched);
        // 0 threads counts as 1
        std::size_t one = 0;
        CHECK(edgeattn_workspace_size(&r, 1, 0, &bytes) == EDGEATTN_OK);
        CHECK(edgeattn_workspace_size(&r, 1, 1, &one) == EDGEATTN_OK);
        CHECK(bytes == one);
    }
    edgeattn_attention_dims big = ok;
    big.num_hiddens = SIZE_MAX / 2;
    big.num_heads = 1;
    CHECK(query(EDGEATTN_OP_ADDITIVE, big, 1, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    CHECK(query(EDGEATTN_OP_MHA, big, 1, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    CHECK(bytes == untouched);
    // dot product: key_size, when given, is query_size
    edgeattn_attention_dims keys_differ = ok;
    keys_differ.key_size = 6;
    CHECK(query(EDGEATTN_OP_SDPA, keys_differ, 1, bytes) == EDGEATTN_ERR_SHAPE_MISMATCH);
    // self-attention's dims: X (1, 3, 8) as queries, keys and values
    edgeattn_attention_dims self{1, 3, 3, 8, 8, 8, 8, 3, 0, 0};
    CHECK(query(EDGEATTN_OP_MHA, self, 1, bytes) == EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);  // 3 heads of 8
    CHECK(bytes == untouched);
    self.num_heads = 2;
    CHECK(query(EDGEATTN_OP_MHA, self, 1, bytes) == EDGEATTN_OK);
    CHECK(bytes > 0);
    self.num_kv_heads = 3;
    CHECK(query(EDGEATTN_OP_MHA, self, 1, bytes) == EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
    // cache calls: a store of no tokens, an attend over more than INT32_MAX positions
    const edgeattn_attention_dims cache_dims{2, 1, 6, 8, 8, 8, 8, 2, 1, 0};
    CHECK(query(EDGEATTN_OP_KV_CACHE_STORE, cache_dims, 1, bytes, 0) == EDGEATTN_ERR_ZERO_DIMENSION);
    CHECK(query(EDGEATTN_OP_KV_CACHE_STORE, cache_dims, 1, bytes, 3) == EDGEATTN_OK);
    edgeattn_attention_dims long_cache = cache_dims;
    long_cache.keys = static_cast<std::size_t>(INT32_MAX) + 1;
    CHECK(query(EDGEATTN_OP_KV_CACHE_ATTEND, long_cache, 1, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    CHECK(bytes == untouched);
}

TEST_CASE("the workspace query: an op outside the enum is refused") {
    const edgeattn_attention_dims ok{2, 3, 4, 5, 5, 7, 8, 2, 0, 0};
    for (int bad : {0, 7, -1, 1000, INT_MIN, INT_MAX}) {
        INFO("op " << bad);
        edgeattn_workspace_request r{};
        set_int(r.op, bad);  // as a C caller may store it
        r.dims = ok;
        r.tokens = 1;
        r.dense = {3, 5, 8};
        std::size_t bytes = 0xC0FFEE;
        CHECK(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
        CHECK(bytes == 0xC0FFEE);
        // after a valid request too: the set is refused whole
        const edgeattn_workspace_request two[2] = {request(EDGEATTN_OP_SDPA, ok), r};
        CHECK(edgeattn_workspace_size(two, 2, 1, &bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
        CHECK(bytes == 0xC0FFEE);
    }
}

TEST_CASE("in place is allowed where documented: softmax, sequence mask, positional add_at") {
    std::vector<float> x{1, 2, 3, 4, 4, 3, 2, 1, pattern};
    const std::vector<int32_t> lens{3, 0};
    const edgeattn_softmax_dims dims{1, 2, 4};
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    REQUIRE(edgeattn_masked_softmax(&dims, x.data(), &vl, x.data()) == EDGEATTN_OK);
    CHECK(x[3] == 0.0f);     // masked
    CHECK(x[4] == 0.25f);    // valid length 0: uniform
    CHECK(x[8] == pattern);  // nothing past the tensor
    std::vector<float> m{1, 2, 3, 4, 5, 6};
    REQUIRE(edgeattn_sequence_mask(2, 3, m.data(), lens.data(), -1.0f, m.data()) == EDGEATTN_OK);
    CHECK(m == std::vector<float>{1, 2, 3, -1, -1, -1});
    std::vector<float> P(6), X{1, 1, 1, 1, 1, 1};
    REQUIRE(edgeattn_positional_encoding_table(3, 2, P.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_positional_encoding_add_at(1, 3, 2, 0, X.data(), P.data(), 3, X.data()) == EDGEATTN_OK);
    CHECK(X[0] == 1.0f);  // 1 + sin(0)
    CHECK(X[1] == 2.0f);  // 1 + cos(0)
}

TEST_CASE("dot product: key_size 0 means query_size") {
    edgeattn_attention_dims dims{1, 2, 3, 4, 0, 2, 0, 0, 0, 0};
    std::vector<float> q(8, 1.0f), k(12, 1.0f), v(6, 1.0f), ws(1 << 16), out(4, pattern);
    CHECK(edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), nullptr, ws.data(), ws.size() * sizeof(float), out.data(),
                        nullptr) == EDGEATTN_OK);
    CHECK(out[0] == doctest::Approx(1.0f));
}

TEST_CASE("forcing a kernel path: unsupported paths are refused, auto restores the best") {
    const edgeattn_isa before = edgeattn_current_isa();
    CHECK(edgeattn_set_isa(EDGEATTN_ISA_SCALAR) == EDGEATTN_OK);
    CHECK(edgeattn_current_isa() == EDGEATTN_ISA_SCALAR);
    for (int i = EDGEATTN_ISA_SSE2; i <= EDGEATTN_ISA_HELIUM; ++i) {
        const edgeattn_isa isa = static_cast<edgeattn_isa>(i);
        if (!edgeattn_isa_supported(isa)) {
            CHECK(edgeattn_set_isa(isa) == EDGEATTN_ERR_UNSUPPORTED_ISA);
            CHECK(edgeattn_current_isa() == EDGEATTN_ISA_SCALAR);
        }
    }
    CHECK(edgeattn_set_isa(static_cast<edgeattn_isa>(42)) == EDGEATTN_ERR_UNSUPPORTED_ISA);
    CHECK(edgeattn_isa_supported(static_cast<edgeattn_isa>(42)) == 0);
    CHECK(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
    CHECK(edgeattn_current_isa() != EDGEATTN_ISA_AUTO);
    CHECK(edgeattn_set_isa(before) == EDGEATTN_OK);
}

TEST_CASE("value heads of their own width, projection-free mha, fp16 tensors: each refusal its own status, nothing written") {
    using P = mha_problem;
    const bad_case<P> mha_cases[] = {
        {"value_hiddens not a multiple of the heads", [](P &p) { p.dims.value_hiddens = 7; },
         EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE},
        {"value_hiddens overflows W_v", [](P &p) { p.dims.value_hiddens = huge - 1; }, EDGEATTN_ERR_SIZE_OVERFLOW},
        {"value_hiddens other than the weights were made for: workspace short", [](P &p) { p.dims.value_hiddens = 64; },
         EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"tensor_type 7", [](P &p) { set_int(p.tensor_type, 7); }, EDGEATTN_ERR_BAD_OPTION},
        {"tensor_type -1", [](P &p) { set_int(p.tensor_type, -1); }, EDGEATTN_ERR_BAD_OPTION},
        {"tensor_type INT8", [](P &p) { p.tensor_type = EDGEATTN_DTYPE_INT8; }, EDGEATTN_ERR_BAD_OPTION},
        {"tensor_type NONE", [](P &p) { p.tensor_type = EDGEATTN_DTYPE_NONE; }, EDGEATTN_ERR_BAD_OPTION},
        {"fp16 tensors, a workspace sized for fp32", [](P &p) { p.tensor_type = EDGEATTN_DTYPE_F16; },
         EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"fp16 tensors, output on an odd byte",
         [](P &p) {
             p.tensor_type = EDGEATTN_DTYPE_F16;
             p.out = misaligned(p.out);
         },
         EDGEATTN_ERR_MISALIGNED},
        {"W_q NONE beside b_q", [](P &p) { p.w.W_q.type = EDGEATTN_DTYPE_NONE; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"W_q NONE, queries narrower than h",
         [](P &p) {
             p.w.W_q.type = EDGEATTN_DTYPE_NONE;
             p.w.b_q = nullptr;
         },
         EDGEATTN_ERR_SHAPE_MISMATCH},
        {"W_k NONE, keys narrower than h_kv", [](P &p) { p.w.W_k.type = EDGEATTN_DTYPE_NONE; },
         EDGEATTN_ERR_SHAPE_MISMATCH},
        {"W_v NONE, values narrower than hv_kv", [](P &p) { p.w.W_v.type = EDGEATTN_DTYPE_NONE; },
         EDGEATTN_ERR_SHAPE_MISMATCH},
        {"W_o NONE beside b_o", [](P &p) { p.w.W_o.type = EDGEATTN_DTYPE_NONE; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"W_v of a type past NONE", [](P &p) { set_int(p.w.W_v.type, 4); }, EDGEATTN_ERR_BAD_WEIGHT_TYPE},
    };
    check_bad_cases(mha_cases);

    using D = dot_problem;
    const bad_case<D> sdpa_cases[] = {
        {"tensor_type 2", [](D &p) { p.tensor_type = EDGEATTN_DTYPE_INT8; }, EDGEATTN_ERR_BAD_OPTION},
        {"tensor_type INT_MIN", [](D &p) { set_int(p.tensor_type, INT_MIN); }, EDGEATTN_ERR_BAD_OPTION},
        {"fp16 tensors, a workspace sized for fp32", [](D &p) { p.tensor_type = EDGEATTN_DTYPE_F16; },
         EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
        {"fp16 tensors, keys on an odd byte",
         [](D &p) {
             p.tensor_type = EDGEATTN_DTYPE_F16;
             p.k = misaligned(p.k);
         },
         EDGEATTN_ERR_MISALIGNED},
    };
    check_bad_cases(sdpa_cases);

    using A = additive_problem;
    const bad_case<A> additive_cases[] = {
        {"fp16 tensors", [](A &p) { p.tensor_type = EDGEATTN_DTYPE_F16; }, EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"tensor_type 99", [](A &p) { set_int(p.tensor_type, 99); }, EDGEATTN_ERR_BAD_OPTION},
    };
    check_bad_cases(additive_cases);
}

namespace {

// mha with fp16 tensors and a workspace sized for them: q (2,3,5),
// k (2,4,6), v (2,4,7) binary16 in the float buffers' first halves.
struct mha_half_problem : mha_problem {
    mha_half_problem() {
        tensor_type = EDGEATTN_DTYPE_F16;
        edgeattn_workspace_request r = request(EDGEATTN_OP_MHA, dims);
        r.tensor_type = EDGEATTN_DTYPE_F16;
        std::size_t bytes = 0;
        REQUIRE(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_OK);
        make_workspace(bytes);
    }
};

}  // namespace

TEST_CASE("fp16 tensors: overlaps counted in binary16 bytes, nothing written") {
    using P = mha_half_problem;
    const bad_case<P> cases[] = {
        // the queries' 30 binary16 values end 60 bytes (15 floats) in
        {"output on the queries' last binary16 value", [](P &p) { p.out = const_cast<float *>(p.q) + 14; },
         EDGEATTN_ERR_OVERLAP},
        {"weights on the values' last binary16 value",
         [](P &p) { p.attn = reinterpret_cast<float *>(const_cast<std::uint16_t *>(
                        reinterpret_cast<const std::uint16_t *>(p.v) + 55)); },
         EDGEATTN_ERR_OVERLAP},
        {"output's last binary16 value on the weights",
         [](P &p) { p.attn = reinterpret_cast<float *>(reinterpret_cast<std::uint16_t *>(p.out) + 47); },
         EDGEATTN_ERR_OVERLAP},
        {"workspace one float short", [](P &p) { p.ws_bytes -= 4; }, EDGEATTN_ERR_WORKSPACE_TOO_SMALL},
    };
    check_bad_cases(cases);
    // Just past a binary16 tensor's last byte is free (in floats it would not be).
    {
        P p;
        p.out = const_cast<float *>(p.q) + 15;
        CHECK(p.run() == EDGEATTN_OK);
    }
    {
        P p;
        p.attn = reinterpret_cast<float *>(reinterpret_cast<std::uint16_t *>(p.out) + 48);
        CHECK(p.run() == EDGEATTN_OK);
    }
}

TEST_CASE("packing and packed weights: NONE refused, a value width other than packed refused, nothing written") {
    mha_problem p;
    p.w.W_q.type = EDGEATTN_DTYPE_NONE;
    p.w.b_q = nullptr;
    CHECK(edgeattn_mha_packed_size(&p.dims, &p.w) == 0);
    std::vector<float> packed(4096, pattern);
    const std::vector<float> before = packed;
    CHECK(edgeattn_mha_pack(&p.dims, &p.w, packed.data(), packed.size() * 4) == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
    CHECK(packed == before);

    // Packed for value heads of 8 features (hv 16), called with hv 8 and 32.
    mha_problem q;
    q.dims.value_hiddens = 16;
    q.w.W_v = f32(q.a.take(16 * 7, 0.1f, -0.1f));
    q.w.W_o = f32(q.a.take(8 * 16, 0.1f, -0.4f));
    const std::size_t bytes = edgeattn_mha_packed_size(&q.dims, &q.w);
    REQUIRE(bytes > 0);
    REQUIRE(bytes <= packed.size() * 4);
    REQUIRE(edgeattn_mha_pack(&q.dims, &q.w, packed.data(), bytes) == EDGEATTN_OK);
    for (std::size_t hv : {std::size_t{0}, std::size_t{8}, std::size_t{32}}) {
        INFO("value_hiddens " << hv);
        edgeattn_attention_dims d = q.dims;
        d.value_hiddens = hv;
        std::size_t ws_bytes = 0;
        const edgeattn_workspace_request r = request(EDGEATTN_OP_MHA, d);
        REQUIRE(edgeattn_workspace_size(&r, 1, 1, &ws_bytes) == EDGEATTN_OK);
        std::vector<float> ws(ws_bytes / 4 + 16, pattern), out(2 * 3 * 8, pattern);
        CHECK(edgeattn_mha_packed(&d, q.q, q.k, q.v, packed.data(), packed.size() * 4, nullptr, ws.data(), ws_bytes,
                                  out.data(), nullptr) == EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
        for (float x : out) CHECK(x == pattern);
        for (float x : ws) CHECK(x == pattern);
    }
    q.dims.value_hiddens = 16;
    std::size_t ws_bytes = 0;
    const edgeattn_workspace_request r = request(EDGEATTN_OP_MHA, q.dims);
    REQUIRE(edgeattn_workspace_size(&r, 1, 1, &ws_bytes) == EDGEATTN_OK);
    std::vector<float> ws(ws_bytes / 4), out(2 * 3 * 8);
    CHECK(edgeattn_mha_packed(&q.dims, q.q, q.k, q.v, packed.data(), bytes, nullptr, ws.data(), ws_bytes, out.data(),
                              nullptr) == EDGEATTN_OK);
}

TEST_CASE("KV cache calls: value heads of their own width and fp16 tensors, each refusal its own status, nothing written") {
    using S = cache_store_problem<false>;
    const bad_case<S> store_cases[] = {
        {"value_hiddens other than the cache's", [](S &p) { p.dims.value_hiddens = 16; },
         EDGEATTN_ERR_CACHE_SHAPE_MISMATCH},
        {"value_hiddens not a multiple of the heads", [](S &p) { p.dims.value_hiddens = 9; },
         EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE},
        {"value_head_size edited", [](S &p) { p.cache.value_head_size = 2; }, EDGEATTN_ERR_BAD_CACHE},
        {"value_head_size 0", [](S &p) { p.cache.value_head_size = 0; }, EDGEATTN_ERR_BAD_CACHE},
        {"tensor_type 5", [](S &p) { set_int(p.opt.tensor_type, 5); }, EDGEATTN_ERR_BAD_OPTION},
        {"fp16 keys on an odd byte",
         [](S &p) {
             p.opt.tensor_type = EDGEATTN_DTYPE_F16;
             p.x = misaligned(p.x);
         },
         EDGEATTN_ERR_MISALIGNED},
    };
    check_bad_cases(store_cases);
    using SP = cache_store_problem<true>;
    const bad_case<SP> packed_store_cases[] = {
        {"tensor_type -3", [](SP &p) { set_int(p.opt.tensor_type, -3); }, EDGEATTN_ERR_BAD_OPTION},
        {"value_hiddens other than the cache's", [](SP &p) { p.dims.value_hiddens = 4; },
         EDGEATTN_ERR_CACHE_SHAPE_MISMATCH},
    };
    check_bad_cases(packed_store_cases);
    using A = cache_attend_problem<false>;
    const bad_case<A> attend_cases[] = {
        {"value_hiddens other than the cache's", [](A &p) { p.dims.value_hiddens = 16; },
         EDGEATTN_ERR_CACHE_SHAPE_MISMATCH},
        {"tensor_type 4", [](A &p) { set_int(p.opt.tensor_type, 4); }, EDGEATTN_ERR_BAD_OPTION},
        {"fp16 tensors with an attention weights output", [](A &p) { p.opt.tensor_type = EDGEATTN_DTYPE_F16; },
         EDGEATTN_ERR_OPTION_NOT_SUPPORTED},
        {"fp16 output on an odd byte",
         [](A &p) {
             p.opt.tensor_type = EDGEATTN_DTYPE_F16;
             p.attn = nullptr;
             p.out = misaligned(p.out);
         },
         EDGEATTN_ERR_MISALIGNED},
        {"value_head_size edited", [](A &p) { p.cache.value_head_size = 8; }, EDGEATTN_ERR_BAD_CACHE},
    };
    check_bad_cases(attend_cases);
    using AP = cache_attend_problem<true>;
    const bad_case<AP> packed_attend_cases[] = {
        {"tensor_type 3", [](AP &p) { set_int(p.opt.tensor_type, 3); }, EDGEATTN_ERR_BAD_OPTION},
    };
    check_bad_cases(packed_attend_cases);

    // A config whose values overflow: no size, no setup.
    edgeattn_kv_cache_config config{2, 1, 4, 6, EDGEATTN_DTYPE_F32, 0, 0, huge};
    CHECK(edgeattn_kv_cache_memory_size(&config) == 0);
    std::vector<float> memory(1024, pattern);
    edgeattn_kv_cache cache{};
    CHECK(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_ERR_SIZE_OVERFLOW);
    for (float x : memory) CHECK(x == pattern);
}

TEST_CASE("the workspace query: tensor_type and value_hiddens") {
    const edgeattn_attention_dims ok{2, 3, 4, 5, 5, 7, 8, 2, 0, 0};
    auto query = [](edgeattn_op op, const edgeattn_attention_dims &dims, int tensor_type, std::size_t &bytes,
                    std::size_t tokens = 0) {
        edgeattn_workspace_request r = request(op, dims, tokens);
        set_int(r.tensor_type, tensor_type);
        bytes = 0xC0FFEE;
        return edgeattn_workspace_size(&r, 1, 1, &bytes);
    };
    std::size_t bytes = 0, fp32 = 0;
    const edgeattn_op ops[] = {EDGEATTN_OP_SDPA, EDGEATTN_OP_MHA, EDGEATTN_OP_KV_CACHE_STORE,
                               EDGEATTN_OP_KV_CACHE_ATTEND};
    for (edgeattn_op op : ops) {
        INFO("op " << static_cast<int>(op));
        for (int bad : {-1, 2, 3, 4, INT_MAX}) {
            CHECK(query(op, ok, bad, bytes, 2) == EDGEATTN_ERR_BAD_OPTION);
            CHECK(bytes == 0xC0FFEE);
        }
        // fp16 tensors: their fp32 copies on top
        REQUIRE(query(op, ok, EDGEATTN_DTYPE_F32, fp32, 2) == EDGEATTN_OK);
        REQUIRE(query(op, ok, EDGEATTN_DTYPE_F16, bytes, 2) == EDGEATTN_OK);
        CHECK(bytes > fp32);
    }
    CHECK(query(EDGEATTN_OP_ADDITIVE, ok, EDGEATTN_DTYPE_F16, bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    CHECK(bytes == 0xC0FFEE);
    edgeattn_workspace_request dense{};
    dense.op = EDGEATTN_OP_DENSE;
    dense.dense = {3, 5, 8};
    dense.tensor_type = EDGEATTN_DTYPE_F16;
    CHECK(edgeattn_workspace_size(&dense, 1, 1, &bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    const edgeattn_attention_dims mha{2, 3, 4, 5, 6, 7, 8, 2, 0, 0};
    for (edgeattn_op op : {EDGEATTN_OP_MHA, EDGEATTN_OP_KV_CACHE_STORE, EDGEATTN_OP_KV_CACHE_ATTEND}) {
        INFO("op " << static_cast<int>(op));
        edgeattn_attention_dims d = mha;
        d.value_hiddens = 7;
        CHECK(query(op, d, 0, bytes, 2) == EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
        CHECK(bytes == 0xC0FFEE);
        // wider value heads need more
        REQUIRE(query(op, mha, 0, fp32, 2) == EDGEATTN_OK);
        d.value_hiddens = 64;
        REQUIRE(query(op, d, 0, bytes, 2) == EDGEATTN_OK);
        CHECK(bytes > fp32);
        d.value_hiddens = huge - 1;
        CHECK(query(op, d, 0, bytes, 2) == EDGEATTN_ERR_SIZE_OVERFLOW);
    }
}
