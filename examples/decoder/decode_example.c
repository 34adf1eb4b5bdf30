/* Greedy decoding over a KV cache, d2l's TransformerDecoder style, for one
 * self-attention block (docs/decoding.md). Two sequences side by side:
 * the prompt is prefilled in one step (store its keys and values, then
 * attend with a causal mask), then each step feeds the token chosen last
 * (store one token, attend over the cache) and picks the next one greedily
 * from logits = (x + attention(x)) W_out^T + b_out (edgeattn_dense). Each
 * step adds the positional encoding from its start position
 * (edgeattn_positional_encoding_add_at). Grouped-query heads: 4 query heads
 * share 2 key/value heads.
 *
 * All memory is static; each buffer's size is checked at run time against
 * the library: the cache against edgeattn_kv_cache_memory_size(), the one
 * workspace every call shares against a single edgeattn_workspace_size()
 * query over all the calls of a decoder step. At the end the attention outputs of
 * every token are checked against a plain float64 recomputation of full
 * causal self-attention over the whole sequence: the example fails (exit 1)
 * if the relative L2 error is above 1e-5. Built and run by the tests. */
#include <edgeattn/edgeattn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
    B = 2,                      /* sequences decoded side by side */
    D = 32,                     /* num_hiddens = query, key and value size */
    HEADS = 4,                  /* query heads of HEAD features */
    KV_HEADS = 2,               /* key/value heads (grouped-query attention) */
    HEAD = D / HEADS,
    HKV = KV_HEADS * HEAD,      /* rows of W_k and W_v */
    VOCAB = 16,
    PROMPT = 5,                 /* prompt tokens, prefilled in one step */
    STEPS = 10,                 /* single-token decode steps */
    CAPACITY = PROMPT + STEPS,  /* positions the cache holds per sequence */
    /* keys and values (B, KV_HEADS, CAPACITY, HEAD) each, then B lengths and
       B positions on 64 bytes each: what edgeattn_kv_cache_memory_size()
       gives (checked) */
    CACHE_FLOATS = 2 * B * KV_HEADS * CAPACITY * HEAD + 2 * 64 / 4,
    WORKSPACE_FLOATS = 4 * 1024 /* 16 KiB of scratch, shared by every call (checked) */
};

/* The model (torch.nn.Linear layout, (out, in)) and the token embedding. */
static float W_q[D * D], W_k[HKV * D], W_v[HKV * D], W_o[D * D];
static float b_q[D], b_k[HKV], b_v[HKV], b_o[D];
static float embedding[VOCAB * D], W_out[VOCAB * D], b_out[VOCAB];
static float P[CAPACITY * D];                /* positional encoding table */

static float cache_memory[CACHE_FLOATS];     /* the KV cache's RAM */
static float workspace[WORKSPACE_FLOATS];
static float x_step[B * PROMPT * D];         /* a step's inputs (B, n, D) */
static float out_step[B * PROMPT * D];       /* its attention outputs (B, n, D) */
static float hidden[B * D], logits[B * VOCAB];
static float X_all[B * CAPACITY * D];        /* every token fed, for the check */
static float out_all[B * CAPACITY * D];      /* every attention output */
static int tokens[B][CAPACITY + 1];

static edgeattn_kv_cache cache;
static edgeattn_weights weights;

static int fail(const char *what, edgeattn_status st) {
    fprintf(stderr, "decode_example: %s: %s\n", what, edgeattn_status_str(st));
    return 1;
}

static edgeattn_weight_matrix f32_matrix(const float *data) {
    edgeattn_weight_matrix m;
    m.type = EDGEATTN_DTYPE_F32;
    m.data = data;
    m.scales = NULL;
    m.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    return m;
}

static void fill(float *a, size_t n, float scale, unsigned *seed) {
    size_t i;
    for (i = 0; i < n; ++i) {
        *seed = *seed * 1664525u + 1013904223u;
        a[i] = scale * ((float)(*seed >> 8) / 16777216.0f - 0.5f);
    }
}

/* d2l's embedding: x = embedding(token) * sqrt(num_hiddens); the step adds
 * the positions. */
static void embed(int token, float *x) {
    size_t c;
    for (c = 0; c < D; ++c) x[c] = embedding[token * D + c] * sqrtf((float)D);
}

/* One decode step of n embedded tokens x (B, n, D) at positions
 * [pos, pos + n): add P[pos : pos + n] in place, store their keys and
 * values, then attend over the cache, causally. */
static edgeattn_status decode_step(size_t n, size_t pos, float *x, float *out) {
    const edgeattn_attention_dims dims = {B, n, CAPACITY, D, D, D, D, HEADS, KV_HEADS, 0};
    edgeattn_attention_options causal;
    size_t b;
    edgeattn_status st;
    memset(&causal, 0, sizeof causal);
    causal.mask.causal = 1;
    st = edgeattn_positional_encoding_add_at(B, n, D, pos, x, P, CAPACITY, x);
    if (st != EDGEATTN_OK) return st;
    st = edgeattn_kv_cache_store(&cache, &dims, n, x, x, &weights, NULL, workspace,
                                 sizeof workspace);
    if (st != EDGEATTN_OK) return st;
    st = edgeattn_kv_cache_attend(&cache, &dims, x, &weights, &causal, workspace,
                                  sizeof workspace, out, NULL);
    if (st != EDGEATTN_OK) return st;
    for (b = 0; b < B; ++b) { /* keep inputs and outputs for the check */
        memcpy(X_all + (b * CAPACITY + pos) * D, x + b * n * D, n * D * sizeof(float));
        memcpy(out_all + (b * CAPACITY + pos) * D, out + b * n * D, n * D * sizeof(float));
    }
    return EDGEATTN_OK;
}

/* Greedy choice from the last of n positions: argmax of (x + out) W_out^T + b_out. */
static edgeattn_status greedy(size_t n, const float *x, const float *out, int *next) {
    const edgeattn_dense_dims ldims = {B, D, VOCAB};
    const edgeattn_weight_matrix W = f32_matrix(W_out);
    size_t b, c;
    edgeattn_status st;
    for (b = 0; b < B; ++b)
        for (c = 0; c < D; ++c)
            hidden[b * D + c] = x[(b * n + n - 1) * D + c] + out[(b * n + n - 1) * D + c];
    st = edgeattn_dense(&ldims, hidden, &W, b_out, workspace, sizeof workspace, logits);
    if (st != EDGEATTN_OK) return st;
    for (b = 0; b < B; ++b) {
        int best = 0, v;
        for (v = 1; v < VOCAB; ++v)
            if (logits[b * VOCAB + v] > logits[b * VOCAB + best]) best = v;
        next[b] = best;
    }
    return EDGEATTN_OK;
}

/* The check: full causal multi-head self-attention over every token fed,
 * in double, plain loops (query head j reads key/value head j / 2).
 * Returns ||out_all - reference|| / ||reference||. */
static double relative_error_against_float64(void) {
    static double q[CAPACITY * D], k[CAPACITY * HKV], v[CAPACITY * HKV], heads[CAPACITY * D];
    double num = 0.0, den = 0.0;
    size_t b, i, j, t, c, r;
    for (b = 0; b < B; ++b) {
        const float *x = X_all + b * CAPACITY * D;
        for (t = 0; t < CAPACITY; ++t) {
            for (r = 0; r < D; ++r) {
                q[t * D + r] = b_q[r];
                for (c = 0; c < D; ++c) q[t * D + r] += (double)x[t * D + c] * W_q[r * D + c];
            }
            for (r = 0; r < HKV; ++r) {
                k[t * HKV + r] = b_k[r];
                v[t * HKV + r] = b_v[r];
                for (c = 0; c < D; ++c) {
                    k[t * HKV + r] += (double)x[t * D + c] * W_k[r * D + c];
                    v[t * HKV + r] += (double)x[t * D + c] * W_v[r * D + c];
                }
            }
        }
        for (j = 0; j < HEADS; ++j) {
            const size_t g = j / (HEADS / KV_HEADS);
            for (i = 0; i < CAPACITY; ++i) { /* query i sees keys 0..i */
                double s[CAPACITY], max = -INFINITY, sum = 0.0;
                for (t = 0; t <= i; ++t) {
                    s[t] = 0.0;
                    for (c = 0; c < HEAD; ++c) s[t] += q[i * D + j * HEAD + c] * k[t * HKV + g * HEAD + c];
                    s[t] /= sqrt((double)HEAD);
                    if (s[t] > max) max = s[t];
                }
                for (t = 0; t <= i; ++t) {
                    s[t] = exp(s[t] - max);
                    sum += s[t];
                }
                for (c = 0; c < HEAD; ++c) {
                    double acc = 0.0;
                    for (t = 0; t <= i; ++t) acc += s[t] / sum * v[t * HKV + g * HEAD + c];
                    heads[i * D + j * HEAD + c] = acc;
                }
            }
        }
        for (i = 0; i < CAPACITY; ++i)
            for (r = 0; r < D; ++r) {
                double y = b_o[r], d;
                for (c = 0; c < D; ++c) y += heads[i * D + c] * W_o[r * D + c];
                d = out_all[(b * CAPACITY + i) * D + r] - y;
                num += d * d;
                den += y * y;
            }
    }
    return sqrt(num / den);
}

int main(void) {
    unsigned seed = 2024u;
    size_t b, s, t;
    int next[B];
    edgeattn_status st;
    double err;

    fill(W_q, D * D, 0.35f, &seed);
    fill(W_k, HKV * D, 0.35f, &seed);
    fill(W_v, HKV * D, 0.35f, &seed);
    fill(W_o, D * D, 0.35f, &seed);
    fill(b_q, D, 0.1f, &seed);
    fill(b_k, HKV, 0.1f, &seed);
    fill(b_v, HKV, 0.1f, &seed);
    fill(b_o, D, 0.1f, &seed);
    fill(embedding, VOCAB * D, 0.35f, &seed);
    fill(W_out, VOCAB * D, 0.35f, &seed);
    fill(b_out, VOCAB, 0.1f, &seed);
    weights.W_q = f32_matrix(W_q);
    weights.W_k = f32_matrix(W_k);
    weights.W_v = f32_matrix(W_v);
    weights.W_o = f32_matrix(W_o);
    weights.b_q = b_q;
    weights.b_k = b_k;
    weights.b_v = b_v;
    weights.b_o = b_o;
    st = edgeattn_positional_encoding_table(CAPACITY, D, P);
    if (st != EDGEATTN_OK) return fail("positional_encoding_table", st);

    /* Every static buffer must be large enough for what the library asks.
     * One workspace serves every call of a decoder step, the prefill's
     * (PROMPT tokens) and a single token's: the cache store and attend and
     * the dense layer of the logits. One query over all of them gives the
     * largest size. */
    {
        const edgeattn_attention_dims prefill = {B, PROMPT, CAPACITY, D, D, D, D, HEADS, KV_HEADS, 0};
        const edgeattn_attention_dims one = {B, 1, CAPACITY, D, D, D, D, HEADS, KV_HEADS, 0};
        const edgeattn_dense_dims ldims = {B, D, VOCAB};
        const edgeattn_kv_cache_config config = {B, KV_HEADS, HEAD, CAPACITY, EDGEATTN_DTYPE_F32, 0, 0, 0,
                                                 EDGEATTN_ARITHMETIC_FLOAT};
        edgeattn_workspace_request step[5];
        size_t need = 0;
        const size_t cache_bytes = edgeattn_kv_cache_memory_size(&config);
        memset(step, 0, sizeof step);
        step[0].op = EDGEATTN_OP_KV_CACHE_STORE;
        step[0].dims = prefill;
        step[0].tokens = PROMPT;
        step[1].op = EDGEATTN_OP_KV_CACHE_ATTEND;
        step[1].dims = prefill;
        step[2].op = EDGEATTN_OP_KV_CACHE_STORE;
        step[2].dims = one;
        step[2].tokens = 1;
        step[3].op = EDGEATTN_OP_KV_CACHE_ATTEND;
        step[3].dims = one;
        step[4].op = EDGEATTN_OP_DENSE;
        step[4].dense = ldims;
        st = edgeattn_workspace_size(step, sizeof step / sizeof step[0], 1, &need);
        if (st != EDGEATTN_OK) return fail("workspace_size", st);
        if (need > sizeof workspace) {
            fprintf(stderr, "decode_example: a decoder step needs a workspace of %zu bytes, have %zu\n",
                    need, sizeof workspace);
            return 1;
        }
        if (cache_bytes == 0 || cache_bytes > sizeof cache_memory) {
            fprintf(stderr, "decode_example: the cache needs %zu bytes, have %zu\n", cache_bytes,
                    sizeof cache_memory);
            return 1;
        }
        printf("KV cache %zu bytes (of %zu), workspace %zu bytes (of %zu)\n", cache_bytes,
               sizeof cache_memory, need, sizeof workspace);
        st = edgeattn_kv_cache_setup(&cache, &config, cache_memory, sizeof cache_memory);
        if (st != EDGEATTN_OK) return fail("kv_cache_setup", st);
    }

    /* Prefill: the whole prompt in one step, causal mask. */
    for (b = 0; b < B; ++b)
        for (t = 0; t < PROMPT; ++t) {
            tokens[b][t] = (int)((3 * b + 5 * t + 1) % VOCAB);
            embed(tokens[b][t], x_step + (b * PROMPT + t) * D);
        }
    st = decode_step(PROMPT, 0, x_step, out_step);
    if (st != EDGEATTN_OK) return fail("prefill", st);
    st = greedy(PROMPT, x_step, out_step, next);
    if (st != EDGEATTN_OK) return fail("dense", st);

    /* Decode: one token per step, the one chosen last. */
    for (s = 0; s < STEPS; ++s) {
        const size_t pos = PROMPT + s;
        for (b = 0; b < B; ++b) {
            tokens[b][pos] = next[b];
            embed(next[b], x_step + b * D);
        }
        st = decode_step(1, pos, x_step, out_step);
        if (st != EDGEATTN_OK) return fail("decode step", st);
        st = greedy(1, x_step, out_step, next);
        if (st != EDGEATTN_OK) return fail("dense", st);
    }
    for (b = 0; b < B; ++b) tokens[b][CAPACITY] = next[b];

    /* The cache is full now: one more token is refused, nothing written. */
    {
        const edgeattn_attention_dims one = {B, 1, CAPACITY, D, D, D, D, HEADS, KV_HEADS, 0};
        st = edgeattn_kv_cache_store(&cache, &one, 1, x_step, x_step, &weights, NULL, workspace,
                                     sizeof workspace);
        if (st != EDGEATTN_ERR_CACHE_FULL) return fail("store to a full cache", st);
    }

    for (b = 0; b < B; ++b) {
        printf("sequence %zu: prompt", b);
        for (t = 0; t <= CAPACITY; ++t) printf(t == PROMPT ? " | %d" : " %d", tokens[b][t]);
        printf("  (cache length %d)\n", (int)cache.lengths[b]);
    }

    err = relative_error_against_float64();
    printf("relative L2 error of %d attention outputs against float64: %.3g\n", B * CAPACITY, err);
    if (!(err <= 1e-5)) {
        fprintf(stderr, "decode_example: relative error %.3g above 1e-5\n", err);
        return 1;
    }
    return 0;
}
