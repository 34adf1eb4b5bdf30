/* Greedy decoding of a Llama-style model exported by tools/export_torch.py
 * --model llama (the header named by LLAMA_HEADER, its names starting with
 * llama_), one sequence, every buffer static:
 *
 *   prefill   the prompt's T <= W tokens in one step: each layer stores
 *             their keys and values, then attends with Q = T and a causal
 *             mask;
 *   decode    one token a step, past the window: the cache of each layer is
 *             a window cache (sinks + window rows, a ring), so RAM stays
 *             fixed however long the stream;
 *   a layer   x += attention(rmsnorm(x) * input_norm)      (edgeattn KV cache)
 *             x += down(silu(gate(h)) * up(h)),  h = rmsnorm(x) * post_norm
 *   logits    rmsnorm(x_last) * norm through lm_head (edgeattn_dense), argmax.
 *
 * RoPE rotates keys at their absolute positions as they are stored and the
 * queries as they attend (the rope option of the cache calls), from one
 * table of edgeattn_rope_table(). The RMSNorm, SiLU and argmax helpers are
 * the example's own (the library has attention and dense layers, not
 * normalisation). Every buffer's size is checked at run time against the
 * library's query for it. */
#include "llama_decode.h"

#include <edgeattn/edgeattn.h>
#include <math.h>
#include <string.h>

#ifndef LLAMA_HEADER
#define LLAMA_HEADER "tiny_llama_int8.h"
#endif
#include LLAMA_HEADER

#ifndef LLAMA_STEPS
#error "the model header has no expected answer: export it with --prompt and --steps"
#endif

enum {
    D = LLAMA_HIDDEN,
    FFN = LLAMA_FFN,
    VOCAB = LLAMA_VOCAB,
    LAYERS = LLAMA_LAYERS,
    KV_ROWS = LLAMA_NUM_KV_HEADS * LLAMA_HEAD_SIZE, /* rows of W_k, W_v */
    PROMPT = LLAMA_PROMPT_TOKENS,
    STEPS = LLAMA_STEPS,
    /* a window cache holds the sinks and the last W tokens; without a
       window, every position fed */
    CAPACITY = LLAMA_WINDOW ? LLAMA_SINKS + LLAMA_WINDOW : LLAMA_MAX_POSITIONS,
    ROTARY = LLAMA_ROTARY_DIMS
};

/* One layer's cache memory, fp32 keys and values: (H_kv, capacity,
 * head_size) each, then the lengths and the positions, every part on a
 * 64-byte boundary (edgeattn_kv_cache_memory_size(), checked at run time). */
#define ROUND64(n) (((n) + 63u) / 64u * 64u)
#define CACHE_BYTES (2u * ROUND64(4u * KV_ROWS * CAPACITY) + 2u * 64u)
/* The one workspace every call of a step shares (checked against
   edgeattn_workspace_size() over all of them) */
#ifndef LLAMA_WORKSPACE_BYTES
#define LLAMA_WORKSPACE_BYTES 16384u
#endif

static _Alignas(64) unsigned char cache_memory[LAYERS][CACHE_BYTES];
static _Alignas(64) unsigned char workspace[LLAMA_WORKSPACE_BYTES];
static edgeattn_kv_cache caches[LAYERS];
static float rope_table[LLAMA_MAX_POSITIONS * ROTARY]; /* (positions, rotary_dims) */
static float x[PROMPT * D];         /* the residual stream of the step's tokens (n, D) */
static float h[PROMPT * D];         /* a normalised copy (n, D) */
static float q[PROMPT * D];         /* projected, rotated queries (projection-free path) */
static float k[PROMPT * KV_ROWS];   /* projected, rotated keys (projection-free path) */
static float v[PROMPT * KV_ROWS];   /* projected values (projection-free path) */
static float attended[PROMPT * D];  /* attention output, then MLP output (n, D) */
static float gate[PROMPT * FFN], up[PROMPT * FFN];
static float logits[VOCAB];
static int32_t tokens[STEPS];

#define STATIC_RAM_BYTES                                                                          \
    (sizeof cache_memory + sizeof workspace + sizeof caches + sizeof rope_table + sizeof x +     \
     sizeof h + sizeof q + sizeof k + sizeof v + sizeof attended + sizeof gate + sizeof up +     \
     sizeof logits + sizeof tokens)

/* ------------------------------------------------------------ the helpers */

/* Row `token` of the embeddings as floats: fp32 copied, int8 times its
   row's scale, fp16 widened. */
static edgeattn_status embed(int32_t token, float *out) {
    const edgeattn_weight_matrix *E = &llama_embed;
    size_t i;
    switch (E->type) {
    case EDGEATTN_DTYPE_INT8: {
        const int8_t *row = (const int8_t *)E->data + (size_t)token * D;
        for (i = 0; i < D; ++i) out[i] = E->scales[token] * (float)row[i];
        return EDGEATTN_OK;
    }
    case EDGEATTN_DTYPE_F16:
        return edgeattn_half_to_float(D, (const uint16_t *)E->data + (size_t)token * D, out);
    default:
        memcpy(out, (const float *)E->data + (size_t)token * D, D * sizeof(float));
        return EDGEATTN_OK;
    }
}

/* y = x / sqrt(mean(x^2) + eps) * weight, row by row (Llama's RMSNorm). */
static void rms_norm(size_t rows, const float *in, const float *weight, float *out) {
    size_t r, i;
    for (r = 0; r < rows; ++r) {
        const float *xr = in + r * D;
        float sum = 0.0f, inv;
        for (i = 0; i < D; ++i) sum += xr[i] * xr[i];
        inv = 1.0f / sqrtf(sum / (float)D + LLAMA_RMS_EPS);
        for (i = 0; i < D; ++i) out[r * D + i] = xr[i] * inv * weight[i];
    }
}

/* gate = silu(gate) * up, silu(g) = g / (1 + e^-g) (SwiGLU). */
static void swiglu(size_t n, float *g, const float *u) {
    size_t i;
    for (i = 0; i < n; ++i) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* The first index of the largest logit. */
static int32_t argmax(const float *row, size_t n) {
    size_t i, best = 0;
    for (i = 1; i < n; ++i)
        if (row[i] > row[best]) best = i;
    return (int32_t)best;
}

static void add(float *acc, const float *y, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) acc[i] += y[i];
}

/* ------------------------------------------------------------ a step */

static const char *failed_call; /* the innermost call that failed */

#define CHECK(call)                                 \
    do {                                            \
        const edgeattn_status st_ = (call);         \
        if (st_ != EDGEATTN_OK) {                   \
            if (!failed_call) failed_call = #call;  \
            return st_;                             \
        }                                           \
    } while (0)

static edgeattn_rope rope_at(const int32_t *positions) {
    edgeattn_rope r;
    memset(&r, 0, sizeof r);
    r.table = rope_table;
    r.max_positions = LLAMA_MAX_POSITIONS;
    r.rotary_dims = ROTARY;
    r.layout = LLAMA_ROPE_LAYOUT;
    r.positions = positions;
    return r;
}

/* One layer's attention of n tokens (h, normalised) at positions pos ..
   pos + n - 1, through the cache calls with the rope option. */
static edgeattn_status attention_fused(size_t layer, size_t n) {
    const llama_layer *L = &llama_layers[layer];
    const edgeattn_attention_dims dims = LLAMA_DIMS(1, n, CAPACITY);
    edgeattn_attention_options options;
    memset(&options, 0, sizeof options);
    options.rope = rope_at(NULL); /* store: the cache's positions; attend: the last n stored */
    CHECK(edgeattn_kv_cache_store(&caches[layer], &dims, n, h, h, &L->attention, &options, workspace,
                                  sizeof workspace));
    options.mask.causal = n > 1;
    CHECK(edgeattn_kv_cache_attend(&caches[layer], &dims, h, &L->attention, &options, workspace,
                                   sizeof workspace, attended, NULL));
    return EDGEATTN_OK;
}

/* The same attention with the projections and the rotation done first:
   the cache calls take the rows as given (EDGEATTN_DTYPE_NONE). */
static edgeattn_status attention_projection_free(size_t layer, size_t n, int32_t pos) {
    const llama_layer *L = &llama_layers[layer];
    const edgeattn_attention_dims dims = LLAMA_DIMS(1, n, CAPACITY);
    const edgeattn_dense_dims q_dims = {n, D, D}, kv_dims = {n, D, KV_ROWS};
    const edgeattn_rope_dims q_rope = {1, n, LLAMA_NUM_HEADS, LLAMA_HEAD_SIZE};
    const edgeattn_rope_dims k_rope = {1, n, LLAMA_NUM_KV_HEADS, LLAMA_HEAD_SIZE};
    const edgeattn_rope rope = rope_at(&pos);
    edgeattn_attention_dims store_dims = dims; /* keys and values as given: (1, n, h_kv) */
    edgeattn_weights given;
    edgeattn_attention_options options;
    CHECK(edgeattn_dense(&q_dims, h, &L->attention.W_q, NULL, workspace, sizeof workspace, q));
    CHECK(edgeattn_dense(&kv_dims, h, &L->attention.W_k, NULL, workspace, sizeof workspace, k));
    CHECK(edgeattn_dense(&kv_dims, h, &L->attention.W_v, NULL, workspace, sizeof workspace, v));
    CHECK(edgeattn_rope_apply(&q_rope, &rope, q, q));
    CHECK(edgeattn_rope_apply(&k_rope, &rope, k, k));
    memset(&given, 0, sizeof given);
    given.W_q.type = given.W_k.type = given.W_v.type = EDGEATTN_DTYPE_NONE;
    given.W_o = L->attention.W_o;
    memset(&options, 0, sizeof options);
    store_dims.key_size = store_dims.value_size = KV_ROWS;
    CHECK(edgeattn_kv_cache_store(&caches[layer], &store_dims, n, k, v, &given, NULL, workspace,
                                  sizeof workspace));
    options.mask.causal = n > 1;
    CHECK(edgeattn_kv_cache_attend(&caches[layer], &dims, q, &given, &options, workspace,
                                   sizeof workspace, attended, NULL));
    return EDGEATTN_OK;
}

/* n tokens at positions pos .. pos + n - 1 through every layer; logits of
   the last. */
static edgeattn_status step(llama_path path, const int32_t *in, size_t n, int32_t pos) {
    const edgeattn_dense_dims ffn_up = {n, D, FFN}, ffn_down = {n, FFN, D}, head = {1, D, VOCAB};
    size_t t, layer;
    for (t = 0; t < n; ++t) CHECK(embed(in[t], x + t * D));
    for (layer = 0; layer < LAYERS; ++layer) {
        const llama_layer *L = &llama_layers[layer];
        rms_norm(n, x, L->input_norm, h);
        if (path == LLAMA_PROJECTION_FREE) {
            CHECK(attention_projection_free(layer, n, pos));
        } else {
            CHECK(attention_fused(layer, n));
        }
        add(x, attended, n * D);
        rms_norm(n, x, L->post_norm, h);
        CHECK(edgeattn_dense(&ffn_up, h, &L->gate, NULL, workspace, sizeof workspace, gate));
        CHECK(edgeattn_dense(&ffn_up, h, &L->up, NULL, workspace, sizeof workspace, up));
        swiglu(n * FFN, gate, up);
        CHECK(edgeattn_dense(&ffn_down, gate, &L->down, NULL, workspace, sizeof workspace, attended));
        add(x, attended, n * D);
    }
    rms_norm(1, x + (n - 1) * D, llama_norm, h);
    CHECK(edgeattn_dense(&head, h, &llama_lm_head, NULL, workspace, sizeof workspace, logits));
    return EDGEATTN_OK;
}

/* ------------------------------------------------------------ set-up */

/* The caches, the RoPE table, and the sizes the library asks for. */
static edgeattn_status set_up(llama_result *r) {
    edgeattn_kv_cache_config config;
    edgeattn_rope_table_config table;
    edgeattn_workspace_request calls[10];
    const edgeattn_attention_dims prefill = LLAMA_DIMS(1, PROMPT, CAPACITY);
    size_t i, layer;
    memset(&config, 0, sizeof config);
    config.batch = 1;
    config.num_kv_heads = LLAMA_NUM_KV_HEADS;
    config.head_size = LLAMA_HEAD_SIZE;
    config.capacity = CAPACITY;
    config.storage = EDGEATTN_DTYPE_F32;
    config.window = LLAMA_WINDOW;
    config.sinks = LLAMA_SINKS;
    r->cache_bytes = edgeattn_kv_cache_memory_size(&config);
    if (r->cache_bytes == 0 || r->cache_bytes > CACHE_BYTES) {
        failed_call = "edgeattn_kv_cache_memory_size (above the static cache memory)";
        return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    }
    for (layer = 0; layer < LAYERS; ++layer)
        CHECK(edgeattn_kv_cache_setup(&caches[layer], &config, cache_memory[layer], sizeof cache_memory[layer]));

    memset(&table, 0, sizeof table);
    table.max_positions = LLAMA_MAX_POSITIONS;
    table.rotary_dims = ROTARY;
    table.theta = LLAMA_ROPE_THETA;
    CHECK(edgeattn_rope_table(&table, rope_table, sizeof rope_table / sizeof rope_table[0]));

    /* The largest step is the prefill: every call it makes (the decode
       steps make the same calls on one row). */
    memset(calls, 0, sizeof calls);
    calls[0].op = EDGEATTN_OP_KV_CACHE_STORE;
    calls[0].dims = prefill;
    calls[0].tokens = PROMPT;
    calls[1].op = EDGEATTN_OP_KV_CACHE_ATTEND;
    calls[1].dims = prefill;
    calls[2].op = EDGEATTN_OP_DENSE; /* gate, up */
    calls[2].dense.rows = PROMPT;
    calls[2].dense.in_features = D;
    calls[2].dense.out_features = FFN;
    calls[3].op = EDGEATTN_OP_DENSE; /* down */
    calls[3].dense.rows = PROMPT;
    calls[3].dense.in_features = FFN;
    calls[3].dense.out_features = D;
    calls[4].op = EDGEATTN_OP_DENSE; /* lm_head */
    calls[4].dense.rows = 1;
    calls[4].dense.in_features = D;
    calls[4].dense.out_features = VOCAB;
    calls[5].op = EDGEATTN_OP_DENSE; /* projection-free: q */
    calls[5].dense.rows = PROMPT;
    calls[5].dense.in_features = D;
    calls[5].dense.out_features = D;
    calls[6] = calls[5]; /* projection-free: k, v */
    calls[6].dense.out_features = KV_ROWS;
    for (i = 0; i < 2; ++i) { /* the cache calls of a decode step: one token */
        calls[7 + i] = calls[i];
        calls[7 + i].dims.queries = 1;
    }
    calls[7].tokens = 1;
    calls[9] = calls[0]; /* projection-free store: keys and values of h_kv features */
    calls[9].dims.key_size = calls[9].dims.value_size = KV_ROWS;
    CHECK(edgeattn_workspace_size(calls, sizeof calls / sizeof calls[0], 1, &r->workspace_bytes));
    if (r->workspace_bytes > sizeof workspace) {
        failed_call = "edgeattn_workspace_size (above LLAMA_WORKSPACE_BYTES)";
        return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    }
    return EDGEATTN_OK;
}

/* ------------------------------------------------------------ the run */

const char *llama_path_name(llama_path path) {
    return path == LLAMA_PROJECTION_FREE ? "projection-free" : "fused";
}

int llama_decode(llama_path path, llama_result *r) {
    size_t s, i;
    int32_t pos = 0;
    memset(r, 0, sizeof *r);
    r->tokens = tokens;
    r->steps = STEPS;
    r->first_mismatch = STEPS;
    r->window = LLAMA_WINDOW;
    r->sinks = LLAMA_SINKS;
    r->cache_capacity = CAPACITY;
    r->static_ram_bytes = STATIC_RAM_BYTES;
    r->weight_bytes = LLAMA_WEIGHT_BYTES;
    r->logit_scale = LLAMA_LOGIT_SCALE;
    failed_call = NULL;
    r->status = set_up(r);
    for (s = 0; s < STEPS && r->status == EDGEATTN_OK; ++s) {
        /* step 0: the prompt; step s: token s - 1 */
        const int32_t *in = s == 0 ? llama_prompt : &tokens[s - 1];
        const size_t n = s == 0 ? PROMPT : 1;
        r->status = step(path, in, n, pos);
        if (r->status != EDGEATTN_OK) break;
        pos += (int32_t)n;
        for (i = 0; i < VOCAB; ++i) {
            const double e = fabs((double)logits[i] - (double)llama_expected_logits[s * VOCAB + i]);
            if (e > r->max_abs_error) r->max_abs_error = e;
        }
        tokens[s] = argmax(logits, VOCAB);
        r->generated = s + 1;
        if (tokens[s] != llama_expected_tokens[s]) {
            r->first_mismatch = s; /* what follows would decode another stream */
            break;
        }
    }
    r->positions = (size_t)pos;
    r->failed_call = failed_call;
    return r->status != EDGEATTN_OK || r->first_mismatch != STEPS ||
           !(r->max_abs_error <= LLAMA_LOGIT_TOLERANCE * r->logit_scale);
}
