#!/usr/bin/python3
"""Golden cases for the decoder side of edgeattn, from a float64 reference.

Covers masked multi-head attention (causal, key ranges per batch element or
per query row, an additive score bias broadcast over batch and/or heads,
grouped-query heads), masked scaled dot-product attention, the projection
y = x W^T + b on its own, and incremental decoding over a KV cache.

The reference is plain numpy in float64 on float32-representable inputs and
is written row by row so that it reads as the specification:

  Row (b, i) of a call with Q queries over K keys sees the keys j with
    start <= j < end        (key_ranges, per batch (B,2) or per query (B,Q,2)),
    j < valid_len           (valid_lens, (B) or (B,Q)),
    j <= i + K - Q          (causal),
  one interval [lo, hi). Visible keys score q.k / sqrt(head_size) + bias;
  every other key scores -1e6 whatever its bias (d2l's rule), and the
  softmax runs over all K keys, so a row that sees nothing is uniform 1/K.

Run:  /usr/bin/python3 tools/golden/make_decoder_golden.py tests/golden
Needs only numpy. The file grammar is tests/golden/FORMAT.md. Every case has
its own fixed seed (derived from its name), so adding a case changes no other.
Before writing, the script checks its reference against independent paths
(see self_check()); after writing, it reads every file back and compares.
"""
import math
import os
import sys
import zlib

import numpy as np

MASKED_SCORE = -1e6     # d2l's value for a key a row does not see
CACHE_FULL = -16        # EDGEATTN_ERR_CACHE_FULL
BASE_SEED = 20261122


# ================================================================ reference
def linear(x, W, b=None):
    """torch.nn.Linear: W is (out_features, in_features)."""
    y = x @ W.T
    return y if b is None else y + b


class Mask:
    """Which keys each query row sees, and an additive bias (all optional).

    key_ranges: None, (B, 2) or (B, Q, 2) [start, end) pairs.
    valid_lens: None, (B) or (B, Q).
    bias:       None or (Bb, Hb, Q, bias_keys) with Bb in {1, B}, Hb in {1, H}
                and bias_keys >= K (the first K columns of a row are read).
    """

    def __init__(self, causal=False, key_ranges=None, valid_lens=None, bias=None):
        self.causal = bool(causal)
        self.key_ranges = key_ranges
        self.valid_lens = valid_lens
        self.bias = bias

    def interval(self, b, i, Q, K):
        """[lo, hi) of the keys row (b, i) sees; empty when hi <= lo."""
        lo, hi = 0, K
        if self.key_ranges is not None:
            r = self.key_ranges[b] if self.key_ranges.ndim == 2 else self.key_ranges[b, i]
            lo, hi = max(lo, int(r[0])), min(hi, int(r[1]))
        if self.valid_lens is not None:
            v = self.valid_lens[b] if self.valid_lens.ndim == 1 else self.valid_lens[b, i]
            hi = min(hi, int(v))
        if self.causal:
            hi = min(hi, i + K - Q + 1)
        return lo, hi

    def bias_row(self, b, head, i, K):
        """The K bias values of row (b, head, i), or zeros."""
        if self.bias is None:
            return np.zeros(K)
        Bb, Hb = self.bias.shape[0], self.bias.shape[1]
        assert self.bias.shape[3] >= K
        return self.bias[b if Bb > 1 else 0, head if Hb > 1 else 0, i, :K]


def masked_softmax_row(visible_scores, lo, hi, K):
    """d2l's masked softmax of one row of K scores: keys outside [lo, hi)
    score -1e6; the softmax runs over all K (nothing visible: uniform 1/K)."""
    scores = np.full(K, MASKED_SCORE)
    if hi > lo:
        scores[lo:hi] = visible_scores
    e = np.exp(scores - scores.max())
    return e / e.sum()


def attend_row(q, keys, values, lo, hi, bias_row):
    """One query row: weights over all K keys and the weighted sum of values."""
    K = keys.shape[0]
    visible = slice(lo, hi)
    w = masked_softmax_row(keys[visible] @ q / math.sqrt(q.shape[0]) + bias_row[visible] if hi > lo else None,
                           lo, hi, K)
    return w, w @ values


def dot_product_attention(queries, keys, values, mask):
    """queries (B,Q,d), keys (B,K,d), values (B,K,v) -> output (B,Q,v), weights (B,Q,K)."""
    B, Q, _ = queries.shape
    K = keys.shape[1]
    out = np.zeros((B, Q, values.shape[2]))
    weights = np.zeros((B, Q, K))
    for b in range(B):
        for i in range(Q):
            lo, hi = mask.interval(b, i, Q, K)
            weights[b, i], out[b, i] = attend_row(queries[b, i], keys[b], values[b], lo, hi,
                                                  mask.bias_row(b, 0, i, K))
    return out, weights


def additive_attention(queries, keys, values, W_q, W_k, w_v, mask):
    """d2l's AdditiveAttention, row by row: score(q, k) = w_v . tanh(W_q q + W_k k)
    for the keys a row sees, -1e6 for the others, softmax over all K."""
    B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
    out, weights = np.zeros((B, Q, values.shape[2])), np.zeros((B, Q, K))
    for b in range(B):
        qp, kp = linear(queries[b], W_q), linear(keys[b], W_k)
        for i in range(Q):
            lo, hi = mask.interval(b, i, Q, K)
            visible = np.array([w_v[0] @ np.tanh(qp[i] + kp[j]) for j in range(lo, hi)])
            weights[b, i] = masked_softmax_row(visible, lo, hi, K)
            out[b, i] = weights[b, i] @ values[b]
    return out, weights


def attend_heads(Qp, Kp, Vp, num_heads, num_kv_heads, mask):
    """Projected Qp (B,Q,h), Kp, Vp (B,K,h_kv) -> heads concatenated (B,Q,h), weights (B,H,Q,K).

    Head j reads columns [j*hs, (j+1)*hs) of Qp and kv head j // (H / H_kv) of Kp, Vp.
    """
    B, Q, h = Qp.shape
    K = Kp.shape[1]
    hs = h // num_heads
    group = num_heads // num_kv_heads
    heads = np.zeros((B, Q, h))
    weights = np.zeros((B, num_heads, Q, K))
    for b in range(B):
        for head in range(num_heads):
            qc = slice(head * hs, (head + 1) * hs)
            kc = slice((head // group) * hs, (head // group + 1) * hs)
            for i in range(Q):
                lo, hi = mask.interval(b, i, Q, K)
                weights[b, head, i], heads[b, i, qc] = attend_row(
                    Qp[b, i, qc], Kp[b, :, kc], Vp[b, :, kc], lo, hi, mask.bias_row(b, head, i, K))
    return heads, weights


def multi_head_attention(queries, keys, values, P, num_heads, num_kv_heads, mask):
    """P: W_q (h,q), W_k W_v (h_kv,k|v), W_o (h,h), optional b_*. -> (B,Q,h), (B,H,Q,K)."""
    assert P['W_q'].shape[0] % num_heads == 0 and num_heads % num_kv_heads == 0
    Qp = linear(queries, P['W_q'], P.get('b_q'))
    Kp = linear(keys, P['W_k'], P.get('b_k'))
    Vp = linear(values, P['W_v'], P.get('b_v'))
    heads, weights = attend_heads(Qp, Kp, Vp, num_heads, num_kv_heads, mask)
    return linear(heads, P['W_o'], P.get('b_o')), weights


def kv_cache_decode(X, chunks, truncate, P, num_heads, num_kv_heads, capacity,
                    key_ranges=None, bias=None):
    """Decode the T tokens of X (B,T,d) in steps of chunks[s] tokens over a KV cache.

    The cache is simulated as, per batch element, the list of the token
    indices whose keys/values sit at cache positions 0, 1, ... (a token's
    projected key/value depends on that token only). Step s: truncate every
    list to truncate[s] (if >= 0); if any list would exceed `capacity`, the
    step is refused (CACHE_FULL): nothing appended, no attention, no output.
    Otherwise append the step's tokens and attend from them (causal, with
    K = the length after the append) over the cache; the key range and bias
    rows of token t are row t of key_ranges (B,T,2) / bias (Bb,Hb,T,capacity)
    and their columns are cache positions.
    Returns chunk_status (S) and the accepted tokens' outputs (B, T_ok, h).
    """
    B, T, _ = X.shape
    assert sum(chunks) == T and len(truncate) == len(chunks)
    Qp = linear(X, P['W_q'], P.get('b_q'))
    Kp = linear(X, P['W_k'], P.get('b_k'))
    Vp = linear(X, P['W_v'], P.get('b_v'))
    cache = [[] for _ in range(B)]
    status, outputs = [], []
    first = 0
    for n, cut in zip(chunks, truncate):
        tokens = list(range(first, first + n))
        first += n
        if cut >= 0:
            for b in range(B):
                assert cut <= len(cache[b]), 'truncate past the current length'
                del cache[b][cut:]
        if any(len(cache[b]) + n > capacity for b in range(B)):
            status.append(CACHE_FULL)
            continue
        status.append(0)
        step_out = np.zeros((B, n, P['W_o'].shape[0]))
        for b in range(B):
            cache[b].extend(tokens)
            # one batch element at a time (its own K = len(cache[b])); the mask
            # of a one-element batch holds this element's rows for the step's tokens
            ranges = None
            if key_ranges is not None:
                ranges = key_ranges[b:b + 1] if key_ranges.ndim == 2 else key_ranges[b:b + 1, tokens]
            step_bias = None
            if bias is not None:
                bb = b if bias.shape[0] > 1 else 0
                step_bias = bias[bb:bb + 1][:, :, tokens, :]
            mask = Mask(causal=True, key_ranges=ranges, bias=step_bias)
            heads, _ = attend_heads(Qp[b:b + 1, tokens], Kp[b:b + 1, cache[b]], Vp[b:b + 1, cache[b]],
                                    num_heads, num_kv_heads, mask)
            step_out[b] = linear(heads[0], P['W_o'], P.get('b_o'))
        outputs.append(step_out)
    h = P['W_o'].shape[0]
    out = np.concatenate(outputs, axis=1) if outputs else np.zeros((B, 0, h))
    return np.array(status, dtype=np.int32), out


# ============================================ independent paths (self-check)
def d2l_multi_head_attention(queries, keys, values, valid_lens, P, num_heads):
    """d2l's vectorised MultiHeadAttention (no mask but valid_lens, H_kv = H)."""
    def split(X):
        X = X.reshape(X.shape[0], X.shape[1], num_heads, -1).transpose(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])
    Qh = split(linear(queries, P['W_q'], P.get('b_q')))
    Kh = split(linear(keys, P['W_k'], P.get('b_k')))
    Vh = split(linear(values, P['W_v'], P.get('b_v')))
    scores = Qh @ Kh.transpose(0, 2, 1) / math.sqrt(Qh.shape[-1])
    if valid_lens is not None:
        vl = np.repeat(valid_lens, num_heads, axis=0)
        vl = np.repeat(vl[:, None], scores.shape[1], axis=1) if vl.ndim == 1 else vl
        scores = np.where(np.arange(scores.shape[2])[None, None, :] < vl[:, :, None], scores, MASKED_SCORE)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    out = (w @ Vh).reshape(-1, num_heads, w.shape[1], Vh.shape[2]).transpose(0, 2, 1, 3)
    out = out.reshape(out.shape[0], out.shape[1], -1)
    return linear(out, P['W_o'], P.get('b_o')), w.reshape(-1, num_heads, w.shape[1], w.shape[2])


def repeat_kv_heads(P, num_heads, num_kv_heads):
    """GQA weights expanded to one kv head per query head (W_k, W_v rows repeated)."""
    hs = P['W_q'].shape[0] // num_heads
    group = num_heads // num_kv_heads
    idx = [(j // group) * hs + c for j in range(num_heads) for c in range(hs)]
    R = dict(P)
    for n in ('W_k', 'W_v', 'b_k', 'b_v'):
        if n in P:
            R[n] = P[n][idx]
    return R


def assert_close(a, b, what, tol=1e-12):
    assert a.shape == b.shape, (what, a.shape, b.shape)
    err = np.max(np.abs(a - b)) if a.size else 0.0
    assert err <= tol, f'self-check failed: {what}: max abs diff {err:.3g}'


# ================================================================ writing
def fmt_values(kind, flat):
    if kind == 'i32':
        return ['%d' % int(a) for a in flat]
    if kind == 'f32':
        return ['%.9g' % float(a) for a in flat]
    return [repr(float(a)) for a in flat]


class Case:
    def __init__(self, name, op):
        self.name, self.op, self.params, self.tensors = name, op, [], []

    def param(self, key, value):
        self.params.append((key, int(value)))
        return self

    def input(self, name, x):
        x = np.asarray(x)
        kind = 'i32' if np.issubdtype(x.dtype, np.integer) else 'f32'
        if kind == 'f32':
            assert np.array_equal(x.astype(np.float32).astype(np.float64), x), name + ' is not float32'
        self.tensors.append(('input', name, kind, x))
        return self

    def optional_input(self, name, x):
        """input(name, x) unless x is None (an input the case may leave out)."""
        return self if x is None else self.input(name, x)

    def expect(self, name, x):
        x = np.asarray(x)
        kind = 'i32' if np.issubdtype(x.dtype, np.integer) else 'f64'
        assert kind == 'i32' or np.all(np.isfinite(x)), name + ' has a non-finite value'
        self.tensors.append(('expect', name, kind, x))
        return self

    def text(self):
        lines = ['edgeattn-case 1', 'op ' + self.op]
        lines += ['param %s %d' % kv for kv in self.params]
        for role, name, kind, x in self.tensors:
            lines.append(' '.join([role, name, kind, str(x.ndim)] + [str(s) for s in x.shape]))
            vals = fmt_values(kind, x.reshape(-1).tolist())
            lines += [' '.join(vals[i:i + 8]) for i in range(0, len(vals), 8)]
        lines.append('end')
        return '\n'.join(lines) + '\n'

    def count(self):
        return sum(x.size for _, _, _, x in self.tensors)


def read_case(path):
    """Minimal reader for the read-back check: (op, {param: int}, {(role, name): (kind, array)})."""
    tok = open(path).read().split()
    assert tok[:2] == ['edgeattn-case', '1'] and tok[2] == 'op' and tok[-1] == 'end', path
    op, pos, params, tensors = tok[3], 4, {}, {}
    while tok[pos] == 'param':
        params[tok[pos + 1]] = int(tok[pos + 2])
        pos += 3
    while tok[pos] != 'end':
        role, name, kind, rank = tok[pos], tok[pos + 1], tok[pos + 2], int(tok[pos + 3])
        shape = tuple(int(s) for s in tok[pos + 4:pos + 4 + rank])
        pos += 4 + rank
        n = int(np.prod(shape))
        raw = tok[pos:pos + n]
        pos += n
        if kind == 'i32':
            vals = np.array([int(s) for s in raw], dtype=np.int32)
        elif kind == 'f32':
            vals = np.array([np.float32(float(s)) for s in raw], dtype=np.float64)
        else:
            vals = np.array([float(s) for s in raw])
        tensors[(role, name)] = (kind, vals.reshape(shape))
    return op, params, tensors


# ================================================================ inputs
def f32(x):
    """Round to float32 and hold in float64: exact in both."""
    return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def rng_for(name):
    return np.random.default_rng(BASE_SEED ^ zlib.crc32(name.encode()))


def randn(g, *shape, scale=1.0):
    return f32(g.standard_normal(shape) * scale)


def lin_w(g, out_f, in_f):
    """torch.nn.Linear's default init range, U(-1/sqrt(in), 1/sqrt(in))."""
    return f32(g.uniform(-1, 1, (out_f, in_f)) / math.sqrt(in_f))


def i32(x):
    return np.asarray(x, dtype=np.int32)


def mha_params(g, h, num_heads, num_kv_heads, q, k, v, bias):
    h_kv = num_kv_heads * (h // num_heads)
    P = {'W_q': lin_w(g, h, q), 'W_k': lin_w(g, h_kv, k), 'W_v': lin_w(g, h_kv, v), 'W_o': lin_w(g, h, h)}
    if bias:
        P['b_q'], P['b_k'] = randn(g, h, scale=0.1), randn(g, h_kv, scale=0.1)
        P['b_v'], P['b_o'] = randn(g, h_kv, scale=0.1), randn(g, h, scale=0.1)
    return P


def alibi(num_heads, rows, cols, row_pos):
    """ALiBi bias (1, H, rows, cols): -slope_h * |row_pos[r] - col|, slope_h = 2^(-8(h+1)/H)."""
    slopes = 2.0 ** (-8.0 * np.arange(1, num_heads + 1) / num_heads)
    dist = np.abs(np.asarray(row_pos)[:, None] - np.arange(cols)[None, :])
    return f32(-slopes[None, :, None, None] * dist[None, None, :, :])


def window_ranges(B, rows, row_pos, w):
    """Per-row sliding window [p - w + 1, p + 1) for a row at key position p (start clamped at 0)."""
    r = np.zeros((B, rows, 2), dtype=np.int32)
    for i, p in enumerate(row_pos):
        r[:, i] = (max(0, p - w + 1), p + 1)
    return r


# ================================================================ cases
def mha_case(name, g, queries, keys, values, h, num_heads, num_kv_heads, bias, causal,
             valid_lens=None, key_ranges=None, score_bias=None, write_kv_heads=True):
    P = mha_params(g, h, num_heads, num_kv_heads, queries.shape[2], keys.shape[2], values.shape[2], bias)
    mask = Mask(causal, key_ranges, valid_lens, score_bias)
    out, w = multi_head_attention(queries, keys, values, P, num_heads, num_kv_heads, mask)
    c = Case(name, 'multi_head_attention').param('num_hiddens', h).param('num_heads', num_heads)
    if write_kv_heads:
        c.param('num_kv_heads', num_kv_heads)
    c.param('bias', bias).param('causal', causal)
    c.input('queries', queries).input('keys', keys).input('values', values)
    c.optional_input('valid_lens', valid_lens).optional_input('key_ranges', key_ranges)
    c.optional_input('bias', score_bias)
    for n in ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o'):
        c.optional_input(n, P.get(n))
    c.expect('output', out).expect('attention_weights', w)
    c.ref = dict(kind='mha', q=queries, k=keys, v=values, P=P, H=num_heads, Hkv=num_kv_heads, mask=mask,
                 out=out, w=w)
    return c


def dot_case(name, queries, keys, values, causal, valid_lens=None, key_ranges=None, score_bias=None):
    mask = Mask(causal, key_ranges, valid_lens, score_bias)
    out, w = dot_product_attention(queries, keys, values, mask)
    c = Case(name, 'dot_product_attention').param('causal', causal)
    c.input('queries', queries).input('keys', keys).input('values', values)
    c.optional_input('valid_lens', valid_lens).optional_input('key_ranges', key_ranges)
    c.optional_input('bias', score_bias)
    c.expect('output', out).expect('attention_weights', w)
    c.ref = dict(kind='dot', q=queries, k=keys, v=values, mask=mask, out=out, w=w)
    return c


def linear_case(name, g, rows, in_f, out_f, with_bias):
    x, W = randn(g, rows, in_f), lin_w(g, out_f, in_f)
    b = randn(g, out_f, scale=0.5) if with_bias else None
    c = Case(name, 'linear').input('x', x).input('W', W)
    if with_bias:
        c.input('b', b)
    y = np.array([[sum(x[r, i] * W[o, i] for i in range(in_f)) + (b[o] if with_bias else 0.0)
                   for o in range(out_f)] for r in range(rows)])  # written out: independent of linear()
    assert_close(y, linear(x, W, b), name + ': linear', tol=1e-12)
    c.ref = dict(kind='linear')
    return c.expect('y', y)


def decode_case(name, g, B, chunks, truncate, d, h, num_heads, num_kv_heads, bias, capacity,
                key_ranges=None, score_bias=None):
    T = sum(chunks)
    X = randn(g, B, T, d)
    P = mha_params(g, h, num_heads, num_kv_heads, d, d, d, bias)
    status, out = kv_cache_decode(X, chunks, truncate, P, num_heads, num_kv_heads, capacity,
                                  key_ranges, score_bias)
    c = Case(name, 'kv_cache_decode').param('num_hiddens', h).param('num_heads', num_heads)
    c.param('num_kv_heads', num_kv_heads).param('bias', bias).param('capacity', capacity)
    c.input('X', X).input('chunks', i32(chunks)).input('truncate', i32(truncate))
    for n in ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o'):
        c.optional_input(n, P.get(n))
    c.optional_input('key_ranges', key_ranges).optional_input('bias', score_bias)
    c.expect('chunk_status', status).expect('output', out)
    c.ref = dict(kind='decode', X=X, chunks=chunks, truncate=truncate, P=P, H=num_heads, Hkv=num_kv_heads,
                 capacity=capacity, key_ranges=key_ranges, bias=score_bias, status=status, out=out)
    return c


def all_cases():
    cs = []

    name = 'mha_causal'  # self-attention, d2l's decoder at training time
    g = rng_for(name)
    X = randn(g, 2, 7, 12)
    cs.append(mha_case(name, g, X, X, X, 16, 4, 4, 1, 1, write_kv_heads=False))

    name = 'mha_gqa_kv1'  # multi-query attention, cross sizes, valid_lens per batch element
    g = rng_for(name)
    cs.append(mha_case(name, g, randn(g, 2, 3, 10), randn(g, 2, 6, 14), randn(g, 2, 6, 6), 16, 4, 1, 1, 0,
                       valid_lens=i32([6, 3])))

    name = 'mha_gqa_half'  # causal self-attention, batch element 1 left-padded by 3
    g = rng_for(name)
    X = randn(g, 2, 8, 8)
    cs.append(mha_case(name, g, X, X, X, 16, 4, 2, 0, 1, key_ranges=i32([[0, 8], [3, 8]])))

    name = 'mha_window_bias'  # per-query sliding window of 3, ALiBi bias, one empty row, one end past K
    g = rng_for(name)
    Q = 9
    X = randn(g, 2, Q, 12)
    ranges = window_ranges(2, Q, range(Q), 3)
    ranges[1, 4] = (5, 5)    # sees no key: uniform 1/K whatever its bias
    ranges[0, 8] = (6, 13)   # end past K counts as K
    cs.append(mha_case(name, g, X, X, X, 16, 4, 4, 1, 0, key_ranges=ranges, score_bias=alibi(4, Q, Q, range(Q))))

    name = 'mha_bias_batch'  # bias per batch element, right padding, per-query valid_lens (one 0)
    g = rng_for(name)
    cs.append(mha_case(name, g, randn(g, 2, 4, 8), randn(g, 2, 7, 10), randn(g, 2, 7, 6), 12, 3, 3, 1, 0,
                       valid_lens=i32([[7, 3, 6, 2], [0, 7, 4, 5]]), key_ranges=i32([[0, 5], [0, 7]]),
                       score_bias=randn(g, 2, 1, 4, 7)))

    name = 'dot_causal_ranges'  # Q < K causal, per-query ranges, valid_lens, bias per batch element
    g = rng_for(name)
    ranges = i32([[[0, 8], [1, 3], [2, 9], [0, 2], [4, 8]],
                  [[3, 3], [0, 5], [1, 4], [2, 7], [0, 11]]])
    cs.append(dot_case(name, randn(g, 2, 5, 16), randn(g, 2, 8, 16), randn(g, 2, 8, 6), 1,
                       valid_lens=i32([8, 6]), key_ranges=ranges, score_bias=randn(g, 2, 1, 5, 8)))

    cs.append(linear_case('linear_bias', rng_for('linear_bias'), 5, 7, 9, True))
    cs.append(linear_case('linear_nobias', rng_for('linear_nobias'), 33, 40, 36, False))

    # chunks: prefill then single tokens (and a last chunk of 3, a draft verified at once)
    cs.append(decode_case('decode_steps', rng_for('decode_steps'), 2, [5, 1, 1, 1, 1, 3], [-1] * 6,
                          12, 16, 4, 4, 1, 16))
    cs.append(decode_case('decode_gqa', rng_for('decode_gqa'), 2, [4, 1, 2, 1, 1, 1], [-1] * 6,
                          10, 16, 4, 1, 1, 12))
    cs.append(decode_case('decode_gqa_half', rng_for('decode_gqa_half'), 2, [3, 1, 1, 3, 1], [-1] * 5,
                          16, 24, 6, 3, 0, 10))
    # batch element 1 left-padded by 3: its first 3 tokens see nothing (uniform over K)
    cs.append(decode_case('decode_left_pad', rng_for('decode_left_pad'), 2, [6, 1, 1, 2], [-1] * 4,
                          12, 16, 4, 2, 1, 12, key_ranges=i32([[0, 12], [3, 12]])))
    T, cap = 10, 12
    ranges = window_ranges(2, T, range(T), 3)
    ranges[1, 5] = (0, 0)  # token 5 of batch element 1 sees nothing: uniform over its step's K
    cs.append(decode_case('decode_window_bias', rng_for('decode_window_bias'), 2, [4, 1, 1, 3, 1], [-1] * 5,
                          12, 16, 4, 2, 1, cap, key_ranges=ranges, score_bias=alibi(4, T, cap, range(T))))
    # lengths 5, 6, 8 (exactly full), then 2 more: refused, nothing appended
    cs.append(decode_case('decode_cache_full', rng_for('decode_cache_full'), 2, [5, 1, 2, 2], [-1] * 4,
                          12, 16, 4, 2, 1, 8))
    # draft rejection: back two positions and re-feed 2 tokens over them; again back two;
    # a truncate to the current length (no-op) last
    cs.append(decode_case('decode_truncate', rng_for('decode_truncate'), 2, [5, 1, 1, 2, 1, 1, 1],
                          [-1, -1, -1, 5, -1, 6, 7], 12, 16, 4, 4, 1, 12))
    return cs


# ================================================================ self-check
def fully_masked_rows(mask, B, Q, K):
    rows = set()
    for b in range(B):
        for i in range(Q):
            lo, hi = mask.interval(b, i, Q, K)
            if hi <= lo:
                rows.add((b, i))
    return rows


def self_check(c):
    r = c.ref
    if r['kind'] == 'mha':
        q, k, v, P, H, Hkv, mask = r['q'], r['k'], r['v'], r['P'], r['H'], r['Hkv'], r['mask']
        # GQA equals ordinary MHA with each kv head's weights repeated for its query heads
        if Hkv != H:
            out, w = multi_head_attention(q, k, v, repeat_kv_heads(P, H, Hkv), H, H, mask)
            assert_close(out, r['out'], c.name + ': GQA vs repeated kv heads')
            assert_close(w, r['w'], c.name + ': GQA weights vs repeated kv heads')
        # without the new mask parts, the row reference equals d2l's vectorised MHA
        Pf = repeat_kv_heads(P, H, Hkv)
        plain = Mask(valid_lens=mask.valid_lens)
        a, aw = multi_head_attention(q, k, v, Pf, H, H, plain)
        b, bw = d2l_multi_head_attention(q, k, v, mask.valid_lens, Pf, H)
        assert_close(a, b, c.name + ': row reference vs d2l MHA')
        assert_close(aw, bw, c.name + ': row reference vs d2l MHA weights')
    elif r['kind'] == 'dot':
        # the causal/range/valid part as one boolean mask, the bias added densely
        q, k, v, mask = r['q'], r['k'], r['v'], r['mask']
        B, Q, K = q.shape[0], q.shape[1], k.shape[1]
        i, j = np.arange(Q)[:, None], np.arange(K)[None, :]
        assert mask.key_ranges.ndim == 3 and mask.valid_lens.ndim == 1 and mask.bias.shape[1] == 1
        see = np.ones((B, Q, K), dtype=bool)
        if mask.causal:
            see &= j <= i + K - Q
        rg = mask.key_ranges
        see &= (j >= rg[:, :, 0:1]) & (j < rg[:, :, 1:2])
        see &= j < mask.valid_lens[:, None, None]
        s = np.where(see, q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[2]) + mask.bias[:, 0], MASKED_SCORE)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
        assert_close(w, r['w'], c.name + ': dense mask')
        assert_close(w @ v, r['out'], c.name + ': dense mask output')
    elif r['kind'] == 'decode':
        X, chunks, P, H, Hkv = r['X'], r['chunks'], r['P'], r['H'], r['Hkv']
        status = list(r['status'])
        if CACHE_FULL in status:  # the checks below assume the refused steps come last
            assert all(s == CACHE_FULL for s in status[status.index(CACHE_FULL):])
        if any(t >= 0 for t in r['truncate']):
            check_truncated_decode(c)
            return
        # no truncation: cache position = token index, so decoding equals causal MHA
        # over the accepted tokens at once (rows that see no key aside: uniform over
        # the step's K there, not over all T)
        T_ok = r['out'].shape[1]
        Xo = X[:, :T_ok]
        bias = None if r['bias'] is None else r['bias'][:, :, :T_ok, :T_ok]
        ranges = r['key_ranges']
        if ranges is not None and ranges.ndim == 3:
            ranges = ranges[:, :T_ok]
        mask = Mask(True, ranges, None, bias)
        full, _ = multi_head_attention(Xo, Xo, Xo, P, H, Hkv, mask)
        skip = fully_masked_rows(mask, X.shape[0], T_ok, T_ok)
        for b in range(X.shape[0]):
            for t in range(T_ok):
                if (b, t) not in skip:
                    assert_close(r['out'][b, t], full[b, t], f'{c.name}: decode vs full causal MHA ({b},{t})')
        if ranges is None and bias is None:
            assert not skip
        c.checked_rows = X.shape[0] * T_ok - len(skip)


def check_truncated_decode(c):
    """Each step's outputs equal the last rows of causal MHA over the tokens the cache holds then."""
    r = c.ref
    X, P, H, Hkv = r['X'], r['P'], r['H'], r['Hkv']
    assert r['key_ranges'] is None and r['bias'] is None
    held, first, row = [], 0, 0
    for n, cut, st in zip(r['chunks'], r['truncate'], r['status']):
        if cut >= 0:
            held = held[:cut]
        tokens = list(range(first, first + n))
        first += n
        if st != 0:
            continue
        held = held + tokens
        Xs = X[:, held]
        full, _ = multi_head_attention(Xs, Xs, Xs, P, H, Hkv, Mask(causal=True))
        assert_close(r['out'][:, row:row + n], full[:, -n:], f'{c.name}: step over tokens {held}')
        row += n
    assert row == r['out'].shape[1]


def check_against_existing(outdir):
    """The row reference reproduces the committed d2l cases' answers (valid_lens only)."""
    checked = []
    for fname in ('mha_cross_bias.case', 'mha_self_random.case', 'dot_random.case'):
        path = os.path.join(outdir, fname)
        if not os.path.exists(path):
            continue
        op, params, T = read_case(path)
        get = lambda n: T[('input', n)][1] if ('input', n) in T else None
        vl = get('valid_lens')
        mask = Mask(valid_lens=vl)
        if op == 'multi_head_attention':
            P = {n: get(n) for n in ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o') if get(n) is not None}
            out, w = multi_head_attention(get('queries'), get('keys'), get('values'), P,
                                          params['num_heads'], params['num_heads'], mask)
        else:
            out, w = dot_product_attention(get('queries'), get('keys'), get('values'), mask)
        assert_close(out, T[('expect', 'output')][1], fname + ': output vs committed', tol=1e-9)
        assert_close(w, T[('expect', 'attention_weights')][1], fname + ': weights vs committed', tol=1e-9)
        checked.append(fname)
    return checked


def write_case(outdir, c):
    """Writes c to OUTDIR/<name>.case and reads it back: every value as written, bit for bit."""
    path = os.path.join(outdir, c.name + '.case')
    with open(path, 'w') as f:
        f.write(c.text())
    op, params, T = read_case(path)
    assert op == c.op and params == dict(c.params)
    assert len(T) == len(c.tensors)
    for role, name, kind, x in c.tensors:
        k2, y = T[(role, name)]
        assert k2 == kind and y.shape == x.shape and np.array_equal(y, x), (c.name, name)


# ================================================================ main
def main():
    if len(sys.argv) != 2:
        sys.exit('usage: make_decoder_golden.py OUTDIR')
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for fname in check_against_existing(outdir):
        print('reference reproduces', fname)
    for c in all_cases():
        self_check(c)
        write_case(outdir, c)
        print('wrote %-20s %5d values' % (c.name, c.count()))


if __name__ == '__main__':
    main()
