/**
 * @file
 * edgeattn C API: the types every op shares (status, version, weight
 * storage, the weights descriptor, dimensions, valid lengths, masks, the
 * options of an attention call) and the workspace query.
 *
 * Every routine of the library
 *   - takes its dimensions in a small struct and its tensors as flat,
 *     row-major arrays whose shapes are written in d2l's
 *     (batch, queries, keys) notation;
 *   - writes only to the outputs and the workspace the caller passes;
 *   - never allocates, never throws, and returns an edgeattn_status:
 *     EDGEATTN_OK (0) or a negative code naming what was wrong. On any
 *     error nothing has been written to the outputs or the workspace;
 *   - reads the structs it takes by pointer (dims, options, weights
 *     descriptors, the KV cache struct) before it writes anything, so they
 *     may lie anywhere, inside an output or the workspace too. The arrays
 *     they point to (valid lengths, key ranges, bias, weights, scales) are
 *     inputs like any other: one that overlaps an output or the workspace is
 *     EDGEATTN_ERR_OVERLAP;
 *   - reads an enum, in a struct or as an argument, as the int a C caller
 *     stored there, so passing any int is safe: one outside the enum gets
 *     the status its parameter documents.
 *
 * Weights are laid out as torch.nn.Linear stores them, (out_features,
 * in_features), so a projection is y = x W^T (+ b) and a PyTorch state_dict
 * drops in without transposing. Structs only ever gain fields at their end;
 * a zero-initialised options struct (or a NULL pointer to one) is d2l's
 * behaviour.
 */
#ifndef EDGEATTN_TYPES_H
#define EDGEATTN_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* ----------------------------------------------------------------- version */

#define EDGEATTN_VERSION_MAJOR 1 /**< incompatible API changes */
#define EDGEATTN_VERSION_MINOR 3 /**< additions */
#define EDGEATTN_VERSION_PATCH 1 /**< fixes */
/** major * 10000 + minor * 100 + patch, for comparisons in the preprocessor */
#define EDGEATTN_VERSION \
    (EDGEATTN_VERSION_MAJOR * 10000 + EDGEATTN_VERSION_MINOR * 100 + EDGEATTN_VERSION_PATCH)
#define EDGEATTN_VERSION_STRING "1.3.1" /**< "major.minor.patch" */

#ifdef __cplusplus
extern "C" {
#endif

/** The version of the library linked in (EDGEATTN_VERSION of its build),
 *  to compare with the EDGEATTN_VERSION of the headers a program was
 *  compiled against.
 *  @return major * 10000 + minor * 100 + patch */
int edgeattn_version(void);

/* ------------------------------------------------------------------ status */

/** Result of every edgeattn call: 0 is success, negative names the problem.
 *  On any error the call has written nothing to its outputs or workspace. */
typedef enum edgeattn_status {
    EDGEATTN_OK = 0,                       /**< success */
    EDGEATTN_ERR_NULL_POINTER = -1,        /**< a required pointer is NULL */
    EDGEATTN_ERR_ZERO_DIMENSION = -2,      /**< a dimension the op reads is 0 */
    EDGEATTN_ERR_SIZE_OVERFLOW = -3,       /**< a tensor's or the workspace's byte size overflows size_t */
    EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE = -4, /**< num_hiddens % num_heads != 0 */
    EDGEATTN_ERR_NEGATIVE_VALID_LEN = -5,  /**< a valid length is below 0 */
    EDGEATTN_ERR_WORKSPACE_TOO_SMALL = -6, /**< a workspace, packed buffer or cache memory is below the size its query gives */
    EDGEATTN_ERR_SEQUENCE_TOO_LONG = -7,   /**< positional encoding: start + n > max_len */
    EDGEATTN_ERR_OVERLAP = -8,             /**< an output overlaps an input, another output or the workspace */
    EDGEATTN_ERR_SHAPE_MISMATCH = -9,      /**< sizes that must agree do not (dot product: key_size != query_size; bias shape) */
    EDGEATTN_ERR_BAD_VALID_LENS_KIND = -10,/**< valid_lens.kind is not one of the enum */
    EDGEATTN_ERR_MISALIGNED = -11,         /**< a float array or the workspace is not 4-byte aligned */
    EDGEATTN_ERR_UNSUPPORTED_ISA = -12,    /**< edgeattn_set_isa(): path not built in or not supported by this CPU */
    EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH = -13, /**< packed weights not made by the op's pack call for these sizes */
    EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE = -14, /**< num_heads % num_kv_heads != 0 (grouped-query attention) */
    EDGEATTN_ERR_BAD_KEY_RANGE = -15,      /**< a mask key range has start < 0 or end < start, or an unknown kind */
    EDGEATTN_ERR_CACHE_FULL = -16,         /**< a KV cache store would pass the cache's capacity */
    EDGEATTN_ERR_BAD_CACHE = -17,          /**< a KV cache struct not set up by edgeattn_kv_cache_setup(), or edited since */
    EDGEATTN_ERR_BAD_SCALE = -18,          /**< an int8 weight scale is 0, negative, NaN or infinite */
    EDGEATTN_ERR_BAD_WEIGHT_TYPE = -19,    /**< a weight matrix's or a cache's edgeattn_dtype is not one of the enum */
    EDGEATTN_ERR_NOT_REPRESENTABLE = -20,  /**< quantise/convert: a weight is NaN or infinite, or beyond binary16's range */
    EDGEATTN_ERR_OPTION_NOT_SUPPORTED = -21, /**< an option or weight the op does not take is set (e.g. valid_lens for a cache call, a bias for additive attention) */
    EDGEATTN_ERR_CACHE_SHAPE_MISMATCH = -22, /**< dims disagree with the KV cache: batch, num_kv_heads (0 = num_heads) or num_hiddens / num_heads (the head size) */
    EDGEATTN_ERR_KEYS_NOT_CAPACITY = -23,  /**< a KV cache call's dims.keys is neither 0 nor the cache's capacity (it is not the filled length) */
    EDGEATTN_ERR_PAST_CACHE_LENGTH = -24,  /**< edgeattn_kv_cache_truncate(): a batch index past the batch or a length past the filled length */
    EDGEATTN_ERR_BAD_ROPE = -25,           /**< a rotary embedding's table or fields are invalid: no table, rotary_dims odd, 0 or above the head size, max_positions 0, a layout outside the enum, theta or position_scale not finite and > 0 */
    EDGEATTN_ERR_ROPE_POSITION = -26,      /**< a token's rotary position is outside its table: |position| >= max_positions */
    EDGEATTN_ERR_BAD_WINDOW = -27,         /**< a window KV cache config with capacity != sinks + window, or sinks without a window */
    EDGEATTN_ERR_BAD_OPTION = -28,         /**< an option's value is invalid: a scale, softcap or ALiBi bias not finite (or negative), an enum of the options outside its values */
    EDGEATTN_ERR_NOT_BUILT = -29,          /**< the call asks for a feature this build of the library left out (edgeattn/config.h: EDGEATTN_WITH_*) */
    EDGEATTN_STATUS_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized under -fshort-enums; never returned */
} edgeattn_status;

/**
 * A short, constant English description of a status ("ok", "null pointer", ...).
 * @param status any value, also one outside the enum
 * @return a static NUL-terminated string, never NULL ("unknown status" for a
 *         value outside the enum)
 */
const char *edgeattn_status_str(edgeattn_status status);

/* ----------------------------------------------------------------- weights */

/** How a weight matrix or a KV cache is stored. */
typedef enum edgeattn_dtype {
    EDGEATTN_DTYPE_F32 = 0,  /**< float */
    EDGEATTN_DTYPE_F16 = 1,  /**< IEEE binary16 bits in uint16_t, 2-byte aligned */
    EDGEATTN_DTYPE_INT8 = 2, /**< int8_t, times a float scale per row (output channel, cached row) */
    /** no matrix: the rows are already projected, and the call reads no
        data or scales for it. Only edgeattn_mha() and the KV cache calls
        take it: W_q (queries given as (B, Q, h)), W_k (keys given as
        (B, K, h_kv)), W_v (values given as (B, K, hv_kv)) and W_o (the
        output is the concatenated heads, (B, Q, hv)), each on its own. A
        bias beside it is ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED. Elsewhere
        (packing, additive attention, a dense layer), and as a cache's
        storage, ::EDGEATTN_ERR_BAD_WEIGHT_TYPE. */
    EDGEATTN_DTYPE_NONE = 3,
    EDGEATTN_DTYPE_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not a type */
} edgeattn_dtype;

/**
 * The arithmetic of a product with int8 weights. Zero, what a zeroed struct
 * holds, is fp32: today's results, bit for bit.
 */
typedef enum edgeattn_arithmetic {
    /** the weights widen to fp32 in registers and the product is fp32 */
    EDGEATTN_ARITHMETIC_FLOAT = 0,
    /** W8A8: each row of the activation (a row of x) is quantised to int8
        by the rule of edgeattn_quantize_int8() (scale max|x| / 127, the
        exact quotient rounded to nearest even; a row of zeros has scale 1,
        so it gives the bias; a row holding a NaN or +-inf gives a row of
        NaN); the products and their sums are int32, exact, so every kernel
        path gives the same bits; the output is
        ((float)sum * row scale) * channel scale (+ bias), in fp32.
        docs/reduced-precision.md has the rule and its error. */
    EDGEATTN_ARITHMETIC_INT8 = 1,
    EDGEATTN_ARITHMETIC_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not a value */
} edgeattn_arithmetic;

/**
 * One weight matrix W (out, in), torch.nn.Linear layout, in any stored type.
 * Element (o, i) is, exactly: float: data[o * in + i]; int8:
 * scales[o] * (float)data[o * in + i]; fp16: the binary16 value of
 * data[o * in + i]. The kernels widen it in registers and compute in fp32.
 */
typedef struct edgeattn_weight_matrix {
    edgeattn_dtype type;  /**< how `data` is stored; 0 (a zeroed struct) is fp32 */
    const void *data;     /**< (out, in): float, uint16_t (binary16) or int8_t */
    const float *scales;  /**< INT8: (out), each finite and > 0 (else ::EDGEATTN_ERR_BAD_SCALE);
                               other types: not read */
    /** 0: fp32 arithmetic. ::EDGEATTN_ARITHMETIC_INT8 (int8 weights only,
        else ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED; in <= 132104, so no int32
        sum can overflow, else ::EDGEATTN_ERR_SIZE_OVERFLOW): taken by
        edgeattn_dense() and edgeattn_mha(), whose workspace request then
        names it; every other call refuses it
        (::EDGEATTN_ERR_OPTION_NOT_SUPPORTED); a build without it
        (EDGEATTN_WITH_INT8_ARITHMETIC 0): ::EDGEATTN_ERR_NOT_BUILT. Outside
        the enum: ::EDGEATTN_ERR_BAD_OPTION */
    edgeattn_arithmetic arithmetic;
} edgeattn_weight_matrix;

/**
 * The weights of an attention op, each matrix in its own stored type (they
 * may differ); biases fp32. h = num_hiddens, h_kv = num_kv_heads * h / num_heads,
 * hv = value_hiddens (0: h), hv_kv = num_kv_heads * hv / num_heads.
 *   multi-head attention and the KV cache: W_q (h, q), W_k (h_kv, k),
 *     W_v (hv_kv, v), W_o (h, hv); biases (h), (h_kv), (hv_kv), (h) or NULL.
 *     A cache store reads W_k, W_v, b_k, b_v only; a cache attend W_q, W_o,
 *     b_q, b_o only: the others may be left zero.
 *   additive attention (no biases, as d2l): W_q (h, q), W_k (h, k) and
 *     W_v = d2l's w_v, the (1, h) scoring row; W_o and the biases are
 *     not taken (set: ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED).
 */
typedef struct edgeattn_weights {
    edgeattn_weight_matrix W_q; /**< query projection */
    edgeattn_weight_matrix W_k; /**< key projection */
    edgeattn_weight_matrix W_v; /**< value projection (additive: w_v, (1, h)) */
    edgeattn_weight_matrix W_o; /**< output projection */
    const float *b_q;           /**< (h) or NULL */
    const float *b_k;           /**< (h_kv) or NULL */
    const float *b_v;           /**< (h_kv) or NULL */
    const float *b_o;           /**< (h) or NULL */
} edgeattn_weights;

/* -------------------------------------------------------------- dimensions */

/**
 * Shapes of an attention call. Which fields an op reads:
 *   edgeattn_sdpa:     batch, queries, keys, query_size (= d), key_size (0 or
 *                      d), value_size;
 *   edgeattn_additive: all but num_heads and num_kv_heads (num_hiddens is the
 *                      MLP's hidden size h);
 *   edgeattn_mha:      all (num_hiddens % num_heads == 0, num_heads %
 *                      num_kv_heads == 0). Self-attention is this op with
 *                      queries = keys = values = X: keys = queries and
 *                      query_size = key_size = value_size;
 *   KV cache calls:    see edgeattn/kv_cache.h.
 */
typedef struct edgeattn_attention_dims {
    size_t batch;       /**< B */
    size_t queries;     /**< Q: query positions */
    size_t keys;        /**< K: key-value pairs */
    size_t query_size;  /**< features of a query (d for dot product) */
    size_t key_size;    /**< features of a key */
    size_t value_size;  /**< features of a value (v) */
    size_t num_hiddens; /**< h */
    size_t num_heads;   /**< H */
    /** Heads of keys and values for grouped-query attention (H_kv, dividing
        H; query head j reads key/value head j / (H / H_kv)). 0, what an
        initializer that leaves it out gives, means H. 1 is multi-query
        attention. */
    size_t num_kv_heads;
    /** hv = H * dv: the concatenated value heads, when a value head has dv
        features other than the key head's h / H (ONNX Attention's
        v_head_size). 0, what an initializer that leaves it out gives,
        means h. It must divide by H (else
        ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE). W_v is (hv_kv, v) with hv_kv =
        H_kv * hv / H, b_v (hv_kv); W_o is (h, hv); the output (B, Q, h),
        or (B, Q, hv) without W_o (EDGEATTN_DTYPE_NONE). Read by
        edgeattn_mha() and the KV cache calls. */
    size_t value_hiddens;
} edgeattn_attention_dims;

/** Shape of a dense layer y (rows, out_features) = x (rows, in_features) W^T + b. */
typedef struct edgeattn_dense_dims {
    size_t rows;         /**< rows of x and y (batch x positions) */
    size_t in_features;  /**< columns of x, of W */
    size_t out_features; /**< columns of y, rows of W */
} edgeattn_dense_dims;

/* -------------------------------------------------------- valid lengths */

/** How many valid lengths a call gets (d2l's valid_lens argument). */
typedef enum edgeattn_valid_lens_kind {
    EDGEATTN_VALID_LENS_NONE = 0,      /**< nothing masked; lens is ignored */
    EDGEATTN_VALID_LENS_PER_BATCH = 1, /**< lens has B entries: one per batch element */
    EDGEATTN_VALID_LENS_PER_QUERY = 2, /**< lens has B*Q entries, (B, Q) row-major */
    /** keeps the enum int-sized under -fshort-enums (arm-none-eabi), so C and
        C++ callers and the library agree on the struct layout; never valid */
    EDGEATTN_VALID_LENS_KIND_FORCE_INT = 0x7FFFFFFF
} edgeattn_valid_lens_kind;

/**
 * valid_lens as d2l passes it. Key positions j >= valid length of a row get
 * the score -1e6 before the softmax, so a row with valid length 0 has uniform
 * weights 1/K; a valid length >= K masks nothing; a negative one is an error.
 */
typedef struct edgeattn_valid_lens {
    edgeattn_valid_lens_kind kind; /**< how many entries lens has */
    const int32_t *lens;           /**< (B) or (B, Q) valid lengths in keys; NULL only with
                                        EDGEATTN_VALID_LENS_NONE */
} edgeattn_valid_lens;

/* ------------------------------------------------------------------ masks */

/** How many key ranges a mask has. */
typedef enum edgeattn_key_ranges_kind {
    EDGEATTN_KEY_RANGES_NONE = 0,      /**< no ranges; key_ranges is ignored */
    EDGEATTN_KEY_RANGES_PER_BATCH = 1, /**< (B, 2): one [start, end) per batch element */
    EDGEATTN_KEY_RANGES_PER_QUERY = 2, /**< (B, Q, 2): one [start, end) per query row */
    /** keeps the enum int-sized under -fshort-enums; never valid */
    EDGEATTN_KEY_RANGES_KIND_FORCE_INT = 0x7FFFFFFF
} edgeattn_key_ranges_kind;

/** Where the query rows of a call sit among its K keys
 *  (edgeattn_attention_mask::alignment): the position p_i of query row i
 *  that causal, window, right_window and ALiBi measure from. */
typedef enum edgeattn_query_alignment {
    /** p_i = i + K - Q: the queries are the last Q key positions (a decode
        step over a cache; ONNX Attention with past_key) */
    EDGEATTN_ALIGN_BOTTOM_RIGHT = 0,
    /** p_i = i: query i at key position i (ONNX Attention without a cache,
        PyTorch's is_causal) */
    EDGEATTN_ALIGN_TOP_LEFT = 1,
    /** p_i = i + L - Q, L = the row's valid length min(valid_len, K): the
        queries are the last Q of the row's valid keys (ONNX Attention's
        nonpad_kv_seqlen without past_key). A negative p_i sees no key
        causally. A KV cache call's valid length is its cached length, so
        there it is BOTTOM_RIGHT. */
    EDGEATTN_ALIGN_VALID_END = 2,
    EDGEATTN_ALIGN_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not an alignment */
} edgeattn_query_alignment;

/**
 * Which keys each query row sees, and an optional additive score bias.
 *
 * Row (b, i) of a call with Q queries over K keys (a KV cache call: K is
 * batch element b's cached length) sees the keys j with
 *   start <= j < end                   (key_ranges, when given),
 *   j < valid_len                      (valid_lens, calls that take them),
 *   j <= i + K - Q                     (causal, when set),
 *   j > i + K - Q - window              (window, when > 0),
 * always one interval [lo, hi) of keys. Causal places the Q queries at the
 * last Q of the K key positions: in self-attention (Q = K) query i sees keys
 * 0..i; in a decode step the new tokens see the cache up to themselves.
 * Every other key of the row gets the score -1e6, d2l's rule, so a row that
 * sees no key at all has uniform weights 1/K, never NaN. Left padding is a
 * start > 0, right padding an end < K, a sliding window of w keys
 * causal with window = w.
 *
 * The bias, when given, is added to the scaled scores of the visible keys
 * (ALiBi, relative position bias; a -inf bias weighs 0 next to finite
 * scores); masked keys keep -1e6 whatever their bias. Its shape is
 * (bias_batch, bias_heads, Q, bias_keys): bias_batch 1 (broadcast over the
 * batch) or B; bias_heads 1 or H; a row of bias_keys >= K floats, of which
 * the first K are read.
 */
typedef struct edgeattn_attention_mask {
    int32_t causal;                       /**< nonzero: query i sees keys j <= i + K - Q */
    edgeattn_key_ranges_kind ranges_kind; /**< how many ranges key_ranges has */
    /** [start, end) pairs of int32, (B, 2) or (B, Q, 2) row-major; 0 <= start
        <= end, an end past K is K; NULL only with EDGEATTN_KEY_RANGES_NONE.
        Otherwise EDGEATTN_ERR_BAD_KEY_RANGE. */
    const int32_t *key_ranges;
    const float *bias;  /**< NULL, or (bias_batch, bias_heads, Q, bias_keys) */
    size_t bias_batch;  /**< 1 or B (0 counts as 1) */
    size_t bias_heads;  /**< 1 or H (0 counts as 1) */
    size_t bias_keys;   /**< floats per bias row, >= K (0 means K; a KV cache call: 0 means capacity) */
    /** 0: no window. w > 0: a sliding window, query i sees only the keys
        j > i + K - Q - w (the last w key positions up to its own, with
        causal), as Mistral's and ONNX's sliding-window attention. Over a
        wrapped window KV cache with sinks it measures by stream position,
        as causal and ALiBi do: a window wider than the ring reaches a sink
        only if the sink's stream position is within w of the query's */
    size_t window;
    /** Where query row i sits among the keys (p_i, which causal, window,
        right_window and ALiBi measure from); 0 (BOTTOM_RIGHT) is p_i = i +
        K - Q, the rule above. Outside the enum: ::EDGEATTN_ERR_BAD_OPTION */
    edgeattn_query_alignment alignment;
    /** 0: none. r > 0: query i sees only the keys j < p_i + r (ONNX 25's
        right_window_size = r - 1, as `window` w is its left_window_size =
        w - 1). Over a wrapped window KV cache with sinks it counts by
        stream position, as causal, window and ALiBi do */
    size_t right_window;
    /** 0: none. A finite m > 0: ALiBi (Press et al.) computed in the kernel,
        no bias tensor: query head h of H gets BLOOM's and ggml's slope m_h
        (n = 2^floor(log2 H), m0 = 2^(-m/n), m1 = 2^(-m/2/n); m_h = m0^(h+1)
        for h < n, else m1^(2(h-n)+1)) and every visible score of key j
        gets -m_h |p_i - pos_j| added (with the bias, after the softcap);
        pos_j is j, or a wrapped window KV cache's stream position of key
        j (its sinks keep 0 .. sinks - 1, the window the stream's last
        positions). Grouped-query heads use the query head's own slope.
        edgeattn_mha and the KV cache attend only (H = dims.num_heads);
        edgeattn_sdpa and edgeattn_additive: ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED.
        Negative, NaN or infinite: ::EDGEATTN_ERR_BAD_OPTION */
    float alibi_max_bias;
} edgeattn_attention_mask;

/* ------------------------------------------------------------ rotary (RoPE) */
/** How a head's rotary features pair up (edgeattn_rope::layout). */
typedef enum edgeattn_rope_layout {
    /** half split (GPT-NeoX, Llama, Qwen, Gemma; PyTorch's rotate_half):
        feature i pairs with i + rotary_dims / 2 */
    EDGEATTN_ROPE_NEOX = 0,
    /** interleaved (GPT-J, Llama's original complex form; rotate_every_two):
        feature 2i pairs with 2i + 1 */
    EDGEATTN_ROPE_GPTJ = 1,
    EDGEATTN_ROPE_LAYOUT_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not a layout */
} edgeattn_rope_layout;

/**
 * Rotary position embedding (RoPE, Su et al.) of the first rotary_dims
 * features of every head; the features after them pass unchanged
 * (partial rotary, as GPT-J, GPT-NeoX and Phi). Pair i (i < rotary_dims /
 * 2) of a token at position p, with (c, s) = table row |p|'s pair i and s
 * negated for p < 0 (a left-padded token's negative position rotates by
 * the negative angle, exactly), becomes
 *   x' = x c - y s,  y' = y c + x s.
 * The table is (max_positions, rotary_dims): row p is the rotary_dims / 2
 * cosines, then the rotary_dims / 2 sines, of p / position_scale * theta^(-2i
 * / rotary_dims), from edgeattn_rope_table() or the C++ constexpr
 * edgeattn::rope_table (flash). A zeroed struct is no rotation.
 */
typedef struct edgeattn_rope {
    const float *table;          /**< (max_positions, rotary_dims), or NULL: no rotation (then every field must be 0) */
    size_t max_positions;        /**< rows of the table: positions -max_positions < p < max_positions rotate */
    size_t rotary_dims;          /**< even, 2 <= rotary_dims <= the head size */
    edgeattn_rope_layout layout; /**< which features pair up */
    /** (B): the position of batch element b's first token in the call (its
        following tokens at +1, +2, ...), or NULL: edgeattn_rope_apply() 0;
        a KV cache store the cache's positions[b] (the tokens stored
        since setup or reset); a KV cache attend positions[b] - Q (the
        queries are the last Q tokens stored) */
    const int32_t *positions;
} edgeattn_rope;

/* ---------------------------------------------------------------- options */

/** What the masked keys of a row weigh (edgeattn_attention_options::masking). */
typedef enum edgeattn_masking {
    /** d2l's rule: a masked key scores -1e6, so a row that sees no key has
        uniform weights 1/K */
    EDGEATTN_MASKING_D2L = 0,
    /** a masked key weighs exactly 0, and a row that sees no key gives a
        zero output row and zero weights (ONNX Attention, PyTorch's
        scaled_dot_product_attention, ggml) */
    EDGEATTN_MASKING_EXCLUDE = 1,
    EDGEATTN_MASKING_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not a rule */
} edgeattn_masking;

/** What the optional attention-weights output of a call holds
 *  (edgeattn_attention_options::weights_output), ONNX Attention's
 *  qk_matmul_output_mode. Every mode fills every key of a row (B, H, Q, K). */
typedef enum edgeattn_weights_output {
    /** the softmax's weights (ONNX mode 3 with ::EDGEATTN_MASKING_EXCLUDE) */
    EDGEATTN_WEIGHTS_SOFTMAX = 0,
    /** the scaled scores scale * Q K^T of every key, masked or not (ONNX mode 0) */
    EDGEATTN_WEIGHTS_SCORES = 1,
    /** the scores after the softcap (ONNX mode 1; without a softcap, SCORES) */
    EDGEATTN_WEIGHTS_SOFTCAPPED = 2,
    /** what the softmax takes: softcapped scores plus the bias and ALiBi on
        the visible keys, masked keys -1e6 (::EDGEATTN_MASKING_D2L) or -inf
        (::EDGEATTN_MASKING_EXCLUDE) (ONNX mode 2) */
    EDGEATTN_WEIGHTS_MASKED = 3,
    EDGEATTN_WEIGHTS_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not a mode */
} edgeattn_weights_output;

/**
 * The options of an attention call. A NULL pointer, or a struct set to
 * zero, is d2l's behaviour: nothing masked. Fields an op does not take
 * must stay zero (else ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED); new fields
 * only ever come at the end, with zero meaning what the call did before.
 */
typedef struct edgeattn_attention_options {
    /** d2l's valid lengths (edgeattn_sdpa, edgeattn_additive, edgeattn_mha);
        kind EDGEATTN_VALID_LENS_NONE: none. Both valid_lens and mask apply. */
    edgeattn_valid_lens valid_lens;
    /** causal, key ranges and an additive bias (every attention call; a
        bias of edgeattn_sdpa or edgeattn_additive has bias_heads 1) */
    edgeattn_attention_mask mask;
    /** rotary position embedding of the queries and keys after their
        projection (KV cache calls: a store rotates the keys it stores, an
        attend its queries); table NULL: none. Other ops:
        ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED */
    edgeattn_rope rope;
    /** The factor of Q K^T: 0 is 1/sqrt(d) (d: the query's or head's
        features). NaN or infinite: ::EDGEATTN_ERR_BAD_OPTION. edgeattn_sdpa,
        edgeattn_mha and the KV cache attend; edgeattn_additive (whose
        scores are not a product): ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED */
    float scale;
    /** 0: none. A finite c > 0: every scaled score s becomes c tanh(s / c)
        before the bias, ALiBi and the masks (Gemma 2, ONNX Attention's
        softcap). Negative, NaN or infinite: ::EDGEATTN_ERR_BAD_OPTION. The
        ops that take `scale` */
    float softcap;
    /** What masked keys weigh (0: d2l's -1e6). Outside the enum:
        ::EDGEATTN_ERR_BAD_OPTION. Every attention call */
    edgeattn_masking masking;
    /** What attention_weights holds, when given (0: the softmax). Outside
        the enum: ::EDGEATTN_ERR_BAD_OPTION. The ops that take `scale`;
        edgeattn_additive takes only ::EDGEATTN_WEIGHTS_SOFTMAX (else
        ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED) */
    edgeattn_weights_output weights_output;
    /** The element type of the call's query, key, value and output tensors
        and of its attention weights output: ::EDGEATTN_DTYPE_F32 (0) or
        ::EDGEATTN_DTYPE_F16, binary16 bits in uint16_t arrays, 2-byte
        aligned. Inputs widen to fp32 exactly, the arithmetic is fp32, and
        outputs round to nearest even (beyond +-65504: +-inf) once, at the
        end. Taken by edgeattn_sdpa(), edgeattn_mha() and _packed, the KV
        cache store (its key and value inputs) and attend (its queries,
        output and weights); edgeattn_additive() refuses F16
        (::EDGEATTN_ERR_OPTION_NOT_SUPPORTED). Other values:
        ::EDGEATTN_ERR_BAD_OPTION. The workspace must be sized with the
        same tensor_type in its request (it holds the fp32 copies). */
    edgeattn_dtype tensor_type;
} edgeattn_attention_options;

/* -------------------------------------------------------------- workspace */

/** The ops that take a workspace, for edgeattn_workspace_size(). */
typedef enum edgeattn_op {
    EDGEATTN_OP_SDPA = 1,             /**< edgeattn_sdpa(): reads dims */
    EDGEATTN_OP_ADDITIVE = 2,         /**< edgeattn_additive(): reads dims */
    EDGEATTN_OP_MHA = 3,              /**< edgeattn_mha() and _packed: reads dims */
    EDGEATTN_OP_KV_CACHE_STORE = 4,   /**< edgeattn_kv_cache_store() and _packed: reads dims, tokens */
    EDGEATTN_OP_KV_CACHE_ATTEND = 5,  /**< edgeattn_kv_cache_attend() and _packed: reads dims */
    EDGEATTN_OP_DENSE = 6,            /**< edgeattn_dense(): reads dense (edgeattn_dense_packed takes no workspace) */
    EDGEATTN_OP_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not an op */
} edgeattn_op;

/** One call whose workspace edgeattn_workspace_size() is asked for. */
typedef struct edgeattn_workspace_request {
    edgeattn_op op;               /**< which call */
    edgeattn_attention_dims dims; /**< the dims the call will get (attention and cache ops) */
    size_t tokens;                /**< EDGEATTN_OP_KV_CACHE_STORE: tokens stored per batch element */
    edgeattn_dense_dims dense;    /**< EDGEATTN_OP_DENSE: the dims the call will get */
    /** the options' tensor_type the call will get: ::EDGEATTN_DTYPE_F16 adds
        the fp32 copies of its fp16 tensors; 0 is fp32. Other values:
        ::EDGEATTN_ERR_BAD_OPTION */
    edgeattn_dtype tensor_type;
    /** EDGEATTN_OP_DENSE and EDGEATTN_OP_MHA: the arithmetic of the call's
        weights (::EDGEATTN_ARITHMETIC_INT8 adds room for the quantised rows
        of x and their int32 sums; for multi-head attention, for any of its
        four matrices in it); EDGEATTN_OP_KV_CACHE_ATTEND: the cache's
        arithmetic (INT8 adds room for the quantised query heads);
        0 is fp32. Other ops take 0 only (else
        ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED); outside the enum:
        ::EDGEATTN_ERR_BAD_OPTION */
    edgeattn_arithmetic arithmetic;
} edgeattn_workspace_request;

/**
 * Workspace bytes for one call, or for a set of calls that run one after
 * another on the same workspace (a whole decoder step: the cache store and
 * attend, the dense layers of the feed-forward block): the largest of
 * their sizes. A pure function of its arguments, the same on every
 * architecture and build. The workspace must be 4-byte aligned (64-byte
 * alignment is faster); its contents on entry do not matter and on return
 * are unspecified. A call given a workspace uses at most as many threads as
 * it has room for, so a workspace sized for 1 thread gives a serial call.
 * @param calls       the calls (count of them); every one must be valid
 * @param count       how many (> 0)
 * @param max_threads threads the calls may use (0 counts as 1; a serial
 *                    build or a microcontroller passes 1)
 * @param bytes       output: the workspace in bytes (written only on success)
 * @return ::EDGEATTN_OK, or the status the first invalid call would return
 *         for its dims (::EDGEATTN_ERR_ZERO_DIMENSION, ::EDGEATTN_ERR_SHAPE_MISMATCH,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW), ::EDGEATTN_ERR_NULL_POINTER,
 *         ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED for an op outside the enum (or
 *         fp16 tensors for EDGEATTN_OP_ADDITIVE or EDGEATTN_OP_DENSE), or
 *         ::EDGEATTN_ERR_BAD_OPTION for a tensor_type other than F32 and F16
 */
edgeattn_status edgeattn_workspace_size(const edgeattn_workspace_request *calls, size_t count,
                                        size_t max_threads, size_t *bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_TYPES_H */
