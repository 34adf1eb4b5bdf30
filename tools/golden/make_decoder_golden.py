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
    j > i + K - Q - window  (a sliding window, when > 0),
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

    def __init__(self, causal=False, key_ranges=None, valid_lens=None, bias=None, window=0):
        self.causal = bool(causal)
        self.key_ranges = key_ranges
        self.valid_lens = valid_lens
        self.bias = bias
        self.window = int(window)

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
        if self.window > 0:
            lo = max(lo, i + K - Q - self.window + 1)
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


def attend_value_heads(Qp, Kp, Vp, num_heads, num_kv_heads, mask):
    """attend_heads with value heads of their own width: Vp (B,K,H_kv*dv) ->
    heads (B,Q,H*dv), weights (B,H,Q,K). Head j's values are columns
    [g*dv, (g+1)*dv) of kv head g = j // (H / H_kv)."""
    B, Q, h = Qp.shape
    K = Kp.shape[1]
    hs, dv = h // num_heads, Vp.shape[2] // num_kv_heads
    group = num_heads // num_kv_heads
    heads = np.zeros((B, Q, num_heads * dv))
    weights = np.zeros((B, num_heads, Q, K))
    for b in range(B):
        for head in range(num_heads):
            qc = slice(head * hs, (head + 1) * hs)
            g = head // group
            kc, vc, oc = slice(g * hs, (g + 1) * hs), slice(g * dv, (g + 1) * dv), slice(head * dv, (head + 1) * dv)
            for i in range(Q):
                lo, hi = mask.interval(b, i, Q, K)
                weights[b, head, i], heads[b, i, oc] = attend_row(
                    Qp[b, i, qc], Kp[b, :, kc], Vp[b, :, vc], lo, hi, mask.bias_row(b, head, i, K))
    return heads, weights


def general_multi_head_attention(queries, keys, values, P, num_heads, num_kv_heads, mask):
    """ONNX Attention's general form: value heads of their own width (W_v
    (H_kv*dv, v), W_o (h, H*dv)); a matrix missing from P is a projection
    left out, its rows as given (without W_o the output is the heads)."""
    def project(x, n):
        return linear(x, P[n], P.get('b' + n[1:])) if n in P else x
    heads, weights = attend_value_heads(project(queries, 'W_q'), project(keys, 'W_k'), project(values, 'W_v'),
                                        num_heads, num_kv_heads, mask)
    return project(heads, 'W_o'), weights


class Rope:
    """Rotary position embedding of the first `dims` features of every head.

    Pair i (i < dims/2) is features (i, i + dims/2) (layout 0, GPT-NeoX's
    rotate_half) or (2i, 2i+1) (layout 1, GPT-J's rotate_every_two); a token
    at position p rotates it by the angle p / scale * theta^(-2i/dims),
    computed here in float64 from the formula (no table):
      x' = x cos a - y sin a,   y' = y cos a + x sin a.
    A negative p rotates by the negative angle. Features from dims on pass.
    The library rotates with a float32 table of cos and sin (each within 2^-24
    relative and 2^-25 absolute of the exact value, the angle in double): the
    rotated rows then differ from these by about 2^-24 relative, far below
    the cases' bar (rel. L2 1e-5)."""

    def __init__(self, dims, layout=0, theta=10000, scale=1, max_positions=0):
        assert dims > 0 and dims % 2 == 0 and layout in (0, 1)
        self.dims, self.layout, self.max_positions = int(dims), int(layout), int(max_positions)
        self.theta = float(theta) if theta else 10000.0
        self.scale = float(scale) if scale else 1.0

    def pairs(self):
        half = self.dims // 2
        return [(i, i + half) if self.layout == 0 else (2 * i, 2 * i + 1) for i in range(half)]

    def angle(self, p, i):
        return p / self.scale * self.theta ** (-2.0 * i / self.dims)

    def rotate(self, x, p, head_size):
        """x (heads * head_size) of one token at position p: every head rotated."""
        assert abs(p) < self.max_positions, 'a position outside the table'
        y = np.array(x, dtype=np.float64)
        for h0 in range(0, x.shape[0], head_size):
            for i, (u, v) in enumerate(self.pairs()):
                a = self.angle(p, i)
                y[h0 + u] = x[h0 + u] * math.cos(a) - x[h0 + v] * math.sin(a)
                y[h0 + v] = x[h0 + v] * math.cos(a) + x[h0 + u] * math.sin(a)
        return y

    def rotate_vectorised(self, x, positions, head_size):
        """x (T, heads * head_size) at positions (T): PyTorch's forms, for the self-check
        (NeoX: x cos + rotate_half(x) sin; GPT-J: complex multiplication of the pairs)."""
        T = x.shape[0]
        xh = x.reshape(T, -1, head_size)
        r, half = self.dims, self.dims // 2
        a = (np.asarray(positions, dtype=np.float64)[:, None] / self.scale) * \
            self.theta ** (-np.arange(0, r, 2, dtype=np.float64) / r)[None, :]
        out = xh.copy()
        if self.layout == 0:
            cos = np.concatenate([np.cos(a), np.cos(a)], axis=1)[:, None, :]
            sin = np.concatenate([np.sin(a), np.sin(a)], axis=1)[:, None, :]
            rot = xh[:, :, :r]
            rotate_half = np.concatenate([-rot[:, :, half:], rot[:, :, :half]], axis=2)
            out[:, :, :r] = rot * cos + rotate_half * sin
        else:
            z = (xh[:, :, 0:r:2] + 1j * xh[:, :, 1:r:2]) * np.exp(1j * a)[:, None, :]
            out[:, :, 0:r:2], out[:, :, 1:r:2] = z.real, z.imag
        return out.reshape(T, -1)


def kv_cache_decode(X, chunks, truncate, P, num_heads, num_kv_heads, capacity,
                    key_ranges=None, bias=None, window=0, sinks=0, rope=None, rope_offset=None,
                    mask_window=0, store_rows=None, held_log=None):
    """Decode the T tokens of X (B,T,d) in steps of chunks[s] tokens over a KV cache.

    The cache is simulated as, per batch element, the list of the rows it
    holds in the order attention reads them (a token's projected key/value
    depends on that token and its position only). Step s: truncate every
    list to truncate[s] (if >= 0); without a window, if any list would
    exceed `capacity`, the step is refused (CACHE_FULL): nothing appended, no
    attention, no output. Otherwise append the step's tokens and attend from
    them (causal, with K = the length after the append, plus a sliding window
    of mask_window keys when > 0) over the cache; the key range and bias rows
    of token t are row t of key_ranges (B,T,2) / bias (Bb,Hb,T,capacity) and
    their columns are the held rows in that order.

    A window cache (window W > 0, capacity = sinks + W) holds the first
    `sinks` tokens of the stream and the last W: appending a token to a full
    one drops the oldest token after the sinks. All of a step's tokens are
    stored before its attend.

    rope: keys are rotated at their stream position (tokens stored before
    them since the start, or since a truncate to that length) plus
    rope_offset[b], before they are stored; queries at the same position of
    their own token. store_rows(rows, head_size) gives the rows (n, h_kv) as
    the cache stores them (an int8 / fp16 cache); identity when None.
    P None: projection-free, X holds the projected rows (queries = keys =
    values, H_kv = H) and the output is the concatenated heads.
    held_log: a list that gets, per accepted step and batch element, the
    stream positions of the held rows in order (for the self-check).
    Returns chunk_status (S) and the accepted tokens' outputs (B, T_ok, h).
    """
    B, T, _ = X.shape
    assert sum(chunks) == T and len(truncate) == len(chunks)
    assert window == 0 and sinks == 0 or capacity == sinks + window
    if P is None:
        assert num_kv_heads == num_heads
        Qp = Kp = Vp = X
        h = X.shape[2]
    else:
        Qp = linear(X, P['W_q'], P.get('b_q'))
        Kp = linear(X, P['W_k'], P.get('b_k'))
        Vp = linear(X, P['W_v'], P.get('b_v'))
        h = P['W_o'].shape[0]
    hs = h // num_heads
    dv = Vp.shape[2] // num_kv_heads  # a value head's features (hs unless value_hiddens is set)
    offset = np.zeros(B, dtype=np.int64) if rope_offset is None else np.asarray(rope_offset, dtype=np.int64)
    keys = [[] for _ in range(B)]     # held key rows, in the order attention reads them
    values = [[] for _ in range(B)]
    where = [[] for _ in range(B)]    # their stream positions
    stream = [0] * B                  # tokens stored since the start (or a truncate)
    status, outputs = [], []
    first = 0
    for n, cut in zip(chunks, truncate):
        tokens = list(range(first, first + n))
        first += n
        if cut >= 0:
            for b in range(B):
                assert cut <= len(keys[b]), 'truncate past the current length'
                assert not window or stream[b] <= capacity, 'truncate of a wrapped window cache'
                del keys[b][cut:], values[b][cut:], where[b][cut:]
                stream[b] = cut
        if not window and any(len(keys[b]) + n > capacity for b in range(B)):
            status.append(CACHE_FULL)
            continue
        status.append(0)
        step_out = np.zeros((B, n, h))
        for b in range(B):
            pos = [stream[b] + i for i in range(n)]
            stream[b] += n
            k_new, v_new, q = Kp[b, tokens], Vp[b, tokens], Qp[b, tokens]
            if rope is not None:
                k_new = np.array([rope.rotate(k_new[i], pos[i] + offset[b], hs) for i in range(n)])
                q = np.array([rope.rotate(q[i], pos[i] + offset[b], hs) for i in range(n)])
            if store_rows is not None:
                k_new, v_new = store_rows(k_new, hs), store_rows(v_new, dv)
            for i in range(n):
                keys[b].append(k_new[i])
                values[b].append(v_new[i])
                where[b].append(pos[i])
                if window and len(keys[b]) > capacity:
                    del keys[b][sinks], values[b][sinks], where[b][sinks]
            if held_log is not None:
                held_log.append(list(where[b]))
            # one batch element at a time (its own K = len(keys[b])); the mask
            # of a one-element batch holds this element's rows for the step's tokens
            ranges = None
            if key_ranges is not None:
                ranges = key_ranges[b:b + 1] if key_ranges.ndim == 2 else key_ranges[b:b + 1, tokens]
            step_bias = None
            if bias is not None:
                bb = b if bias.shape[0] > 1 else 0
                step_bias = bias[bb:bb + 1][:, :, tokens, :]
            mask = Mask(causal=True, key_ranges=ranges, bias=step_bias, window=mask_window)
            attend = attend_heads if dv == hs else attend_value_heads
            heads, _ = attend(q[None], np.array(keys[b])[None], np.array(values[b])[None],
                              num_heads, num_kv_heads, mask)
            step_out[b] = heads[0] if P is None else linear(heads[0], P['W_o'], P.get('b_o'))
        outputs.append(step_out)
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


def mha_params(g, h, num_heads, num_kv_heads, q, k, v, bias, value_hiddens=None):
    """value_hiddens hv: value heads of hv / H features (W_v (H_kv*hv/H, v), W_o (h, hv))."""
    h_kv = num_kv_heads * (h // num_heads)
    hv = value_hiddens or h
    hv_kv = num_kv_heads * (hv // num_heads)
    P = {'W_q': lin_w(g, h, q), 'W_k': lin_w(g, h_kv, k), 'W_v': lin_w(g, hv_kv, v), 'W_o': lin_w(g, h, hv)}
    if bias:
        P['b_q'], P['b_k'] = randn(g, h, scale=0.1), randn(g, h_kv, scale=0.1)
        P['b_v'], P['b_o'] = randn(g, hv_kv, scale=0.1), randn(g, h, scale=0.1)
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


def value_heads_case(name, g, queries, keys, values, h, num_heads, num_kv_heads, value_hiddens, bias, causal,
                     projection_free=False, key_ranges=None):
    """Multi-head attention with value heads of value_hiddens / H features;
    projection_free: no matrices, queries (B,Q,h), keys (B,K,h_kv), values
    (B,K,hv_kv), output the heads (B,Q,hv)."""
    dv = value_hiddens // num_heads
    h_kv, hv_kv = num_kv_heads * (h // num_heads), num_kv_heads * dv
    P = {}
    if not projection_free:
        P = {'W_q': lin_w(g, h, queries.shape[2]), 'W_k': lin_w(g, h_kv, keys.shape[2]),
             'W_v': lin_w(g, hv_kv, values.shape[2]), 'W_o': lin_w(g, h, value_hiddens)}
        if bias:
            P['b_q'], P['b_k'] = randn(g, h, scale=0.1), randn(g, h_kv, scale=0.1)
            P['b_v'], P['b_o'] = randn(g, hv_kv, scale=0.1), randn(g, h, scale=0.1)
    mask = Mask(causal, key_ranges)
    out, w = general_multi_head_attention(queries, keys, values, P, num_heads, num_kv_heads, mask)
    c = Case(name, 'multi_head_attention').param('num_hiddens', h).param('num_heads', num_heads)
    c.param('num_kv_heads', num_kv_heads).param('value_hiddens', value_hiddens)
    if projection_free:
        c.param('projection_free', 1)
    c.param('bias', bias).param('causal', causal)
    c.input('queries', queries).input('keys', keys).input('values', values)
    c.optional_input('key_ranges', key_ranges)
    for n in ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o'):
        c.optional_input(n, P.get(n))
    c.expect('output', out).expect('attention_weights', w)
    c.ref = dict(kind='value_heads', q=queries, k=keys, v=values, P=P, H=num_heads, Hkv=num_kv_heads, mask=mask,
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
                key_ranges=None, score_bias=None, window=0, sinks=0, rope=None, rope_offset=None,
                mask_window=0, projection_free=False, value_hiddens=None):
    T = sum(chunks)
    X = randn(g, B, T, d)
    P = None if projection_free else mha_params(g, h, num_heads, num_kv_heads, d, d, d, bias, value_hiddens)
    held = []
    status, out = kv_cache_decode(X, chunks, truncate, P, num_heads, num_kv_heads, capacity,
                                  key_ranges, score_bias, window, sinks, rope, rope_offset, mask_window,
                                  held_log=held)
    c = Case(name, 'kv_cache_decode').param('num_hiddens', h).param('num_heads', num_heads)
    c.param('num_kv_heads', num_kv_heads).param('bias', bias).param('capacity', capacity)
    decode_params(c, window, sinks, rope, mask_window, projection_free)
    if value_hiddens:
        c.param('value_hiddens', value_hiddens)
    c.input('X', X).input('chunks', i32(chunks)).input('truncate', i32(truncate))
    for n in ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o'):
        c.optional_input(n, None if P is None else P.get(n))
    c.optional_input('key_ranges', key_ranges).optional_input('bias', score_bias)
    c.optional_input('rope_offset', None if rope_offset is None else i32(rope_offset))
    c.expect('chunk_status', status).expect('output', out)
    c.ref = dict(kind='decode', X=X, chunks=chunks, truncate=truncate, P=P, H=num_heads, Hkv=num_kv_heads,
                 capacity=capacity, key_ranges=key_ranges, bias=score_bias, status=status, out=out,
                 window=window, sinks=sinks, rope=rope, rope_offset=rope_offset, mask_window=mask_window,
                 held=held)
    return c


def decode_params(c, window, sinks, rope, mask_window, projection_free):
    """The optional params of kv_cache_decode (FORMAT.md); each written only when not 0."""
    if window:
        c.param('window', window).param('sinks', sinks)
    if rope is not None:
        c.param('rope_dims', rope.dims).param('rope_layout', rope.layout)
        c.param('rope_theta', int(rope.theta)).param('rope_max_positions', rope.max_positions)
        assert rope.theta == int(rope.theta) and rope.scale == int(rope.scale)
        if rope.scale != 1:
            c.param('rope_scale', int(rope.scale))
    if mask_window:
        c.param('mask_window', mask_window)
    if projection_free:
        c.param('projection_free', 1)


def rope_apply_case(name, g, B, T, heads, head_size, rope, positions):
    """op rope_apply: X (B,T,heads,head_size), token t of batch element b at positions[b] + t."""
    X = randn(g, B, T, heads, head_size)
    Y = np.array([[rope.rotate(X[b, t].reshape(-1), positions[b] + t, head_size).reshape(heads, head_size)
                   for t in range(T)] for b in range(B)])
    for b in range(B):
        v = rope.rotate_vectorised(X[b].reshape(T, -1), positions[b] + np.arange(T), head_size)
        assert_close(v.reshape(T, heads, head_size), Y[b], name + ': rope vs its vectorised form')
    c = Case(name, 'rope_apply').param('rope_dims', rope.dims).param('rope_layout', rope.layout)
    c.param('rope_theta', int(rope.theta)).param('rope_max_positions', rope.max_positions)
    if rope.scale != 1:
        c.param('rope_scale', int(rope.scale))
    c.input('X', X).input('positions', i32(positions)).expect('Y', Y)
    c.ref = dict(kind='rope_apply')
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

    name = 'mha_value_heads'  # value heads of 6 features, key heads of 4, grouped-query, biases, causal
    g = rng_for(name)
    cs.append(value_heads_case(name, g, randn(g, 2, 3, 10), randn(g, 2, 5, 12), randn(g, 2, 5, 7), 16, 4, 2, 24,
                               1, 1))

    name = 'mha_projection_free'  # ONNX Attention's 3D form: no projections, GQA, dv 3 != d 4, left padding
    g = rng_for(name)
    cs.append(value_heads_case(name, g, randn(g, 2, 4, 16), randn(g, 2, 6, 8), randn(g, 2, 6, 6), 16, 4, 2, 12,
                               0, 1, projection_free=True, key_ranges=i32([[0, 6], [2, 6]])))

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
    # value heads of 6 features beside key heads of 4 (ONNX Attention's v_head_size), GQA, biases
    cs.append(decode_case('decode_value_heads', rng_for('decode_value_heads'), 2, [3, 1, 2, 1], [-1] * 4,
                          8, 16, 4, 2, 1, 8, value_hiddens=24))
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

    # RoPE fused into the cache calls: NeoX pairs over the whole head, GQA; batch
    # element 1 left-padded by 2 with its positions shifted by -2 (its first
    # real token at 0, the padding at -2, -1: negative angles)
    cs.append(decode_case('decode_rope_neox', rng_for('decode_rope_neox'), 2, [5, 1, 1, 2, 1], [-1] * 5,
                          12, 16, 4, 2, 1, 12, key_ranges=i32([[0, 12], [2, 12]]),
                          rope=Rope(4, 0, 10000, 1, 16), rope_offset=[0, -2]))
    # GPT-J pairs on 4 of 8 features (partial rotary), theta 500000 (Llama 3),
    # positions scaled by 1/2 (linear interpolation); a truncate and re-feed:
    # the re-fed tokens rotate at the truncated positions
    cs.append(decode_case('decode_rope_gptj_partial', rng_for('decode_rope_gptj_partial'), 2, [4, 1, 2, 1, 1],
                          [-1, -1, -1, 5, -1], 10, 16, 2, 1, 0, 10, rope=Rope(4, 1, 500000, 2, 12)))
    # a window cache of 2 sinks + 5 that wraps (13 tokens), keys at their absolute
    # positions, GQA; a step of 3 into the full window (its first query no longer
    # sees the 3 oldest rows) and per-query key ranges counted in held order
    T = 13
    ranges = np.zeros((2, T, 2), dtype=np.int32)
    ranges[:, :, 1] = 7
    ranges[1, 9] = (2, 7)    # batch element 1, token 9: not the sinks
    cs.append(decode_case('decode_window_sinks', rng_for('decode_window_sinks'), 2, [4, 2, 1, 3, 1, 1, 1],
                          [-1] * 7, 12, 16, 4, 2, 1, 7, key_ranges=ranges, window=5, sinks=2,
                          rope=Rope(4, 0, 10000, 1, 16)))
    # the sliding-window mask (each token sees itself and the 2 before it) on a
    # prefill of 6, then steps; no rope
    cs.append(decode_case('decode_sliding_mask', rng_for('decode_sliding_mask'), 2, [6, 1, 2, 1], [-1] * 4,
                          12, 16, 4, 2, 1, 12, mask_window=3))
    # projection-free calls (EDGEATTN_DTYPE_NONE): X holds the projected rows,
    # the output is the heads; RoPE and a window cache without sinks
    cs.append(decode_case('decode_projection_free', rng_for('decode_projection_free'), 2, [3, 1, 2, 1, 1],
                          [-1] * 5, 8, 8, 2, 2, 0, 6, window=6, sinks=0, rope=Rope(4, 0, 10000, 1, 10),
                          projection_free=True))
    # the rotation on its own: NeoX on 6 of 8 features, 3 heads, batch element 1 from -2
    cs.append(rope_apply_case('rope_apply', rng_for('rope_apply'), 2, 4, 3, 8, Rope(6, 0, 10000, 1, 8), [3, -2]))
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
    elif r['kind'] == 'value_heads':
        # each head on its own: dot-product attention of its projected rows,
        # the heads concatenated, then W_o (a projection left out: identity)
        q, k, v, P, H, Hkv, mask = r['q'], r['k'], r['v'], r['P'], r['H'], r['Hkv'], r['mask']
        ident = lambda x, n: linear(x, P[n], P.get('b' + n[1:])) if n in P else x
        Qp, Kp, Vp = ident(q, 'W_q'), ident(k, 'W_k'), ident(v, 'W_v')
        hs, dv, group = Qp.shape[2] // H, Vp.shape[2] // Hkv, H // Hkv
        heads = []
        for j in range(H):
            g = j // group
            o, w = dot_product_attention(Qp[:, :, j * hs:(j + 1) * hs], Kp[:, :, g * hs:(g + 1) * hs],
                                         Vp[:, :, g * dv:(g + 1) * dv], mask)
            assert_close(w, r['w'][:, j], c.name + ': head %d weights vs dot-product attention' % j)
            heads.append(o)
        assert_close(ident(np.concatenate(heads, axis=2), 'W_o'), r['out'], c.name + ': heads vs dot-product attention')
    elif r['kind'] == 'rope_apply':
        pass  # checked against the vectorised rotation when made
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
    elif r['kind'] == 'decode' and (r['window'] or r['rope'] is not None or r['mask_window'] or r['P'] is None):
        check_decode_options(c)
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
        full, _ = general_multi_head_attention(Xo, Xo, Xo, P, H, Hkv, mask)
        skip = fully_masked_rows(mask, X.shape[0], T_ok, T_ok)
        for b in range(X.shape[0]):
            for t in range(T_ok):
                if (b, t) not in skip:
                    assert_close(r['out'][b, t], full[b, t], f'{c.name}: decode vs full causal MHA ({b},{t})')
        if ranges is None and bias is None:
            assert not skip
        c.checked_rows = X.shape[0] * T_ok - len(skip)


def check_decode_options(c):
    """A decode with a window cache, RoPE, a sliding-window mask or no projections,
    recomputed another way: the held rows from the ring layout the library
    documents (token at position p >= capacity in row S + (p - S) % W, read
    sinks first, then the window oldest first), RoPE in its vectorised
    PyTorch forms, the mask as one dense boolean matrix per step."""
    r = c.ref
    X, P, H, Hkv, cap, W, S = r['X'], r['P'], r['H'], r['Hkv'], r['capacity'], r['window'], r['sinks']
    B = X.shape[0]
    assert r['bias'] is None
    if P is None:
        Qp = Kp = Vp = X
    else:
        Qp, Kp, Vp = (linear(X, P[w], P.get(b)) for w, b in (('W_q', 'b_q'), ('W_k', 'b_k'), ('W_v', 'b_v')))
    h = Qp.shape[2]
    hs = h // H
    offset = np.zeros(B, dtype=np.int64) if r['rope_offset'] is None else np.asarray(r['rope_offset'])
    ring = [None] * cap           # stream position held by each row
    token_at = {}                 # stream position -> the token last fed there
    n, first, row, log = 0, 0, 0, iter(r['held'])
    for chunk, cut, st in zip(r['chunks'], r['truncate'], r['status']):
        tokens = list(range(first, first + chunk))
        first += chunk
        if cut >= 0:
            n = cut
        if st != 0:
            continue
        for t in tokens:
            token_at[n] = t
            ring[n if n < cap else S + (n - S) % W] = n
            n += 1
        if n <= cap:
            order = list(range(n))
        else:
            oldest = S + (n - W - S) % W
            order = list(range(S)) + [S + (oldest - S + k) % W for k in range(W)]
        held = [ring[j] for j in order]
        for b in range(B):
            assert held == next(log), c.name + ': held rows vs the ring layout'
        K, Q = len(held), chunk
        toks = [token_at[p] for p in held]
        for b in range(B):
            q, k = Qp[b, tokens], Kp[b, toks]
            if r['rope'] is not None:
                q = r['rope'].rotate_vectorised(q, np.arange(n - Q, n) + offset[b], hs)
                k = r['rope'].rotate_vectorised(k, np.asarray(held) + offset[b], hs)
            i, j = np.arange(Q)[:, None], np.arange(K)[None, :]
            see = j <= i + K - Q
            if r['mask_window']:
                see &= j > i + K - Q - r['mask_window']
            kr = r['key_ranges']
            if kr is not None:
                rg = kr[b][None, :] if kr.ndim == 2 else kr[b, tokens]
                see &= (j >= rg[:, 0:1]) & (j < rg[:, 1:2])
            heads = np.zeros((Q, h))
            for head in range(H):
                g = head // (H // Hkv)
                qc, kc = slice(head * hs, (head + 1) * hs), slice(g * hs, (g + 1) * hs)
                sc = np.where(see, q[:, qc] @ k[:, kc].T / math.sqrt(hs), MASKED_SCORE)
                e = np.exp(sc - sc.max(axis=1, keepdims=True))
                heads[:, qc] = (e / e.sum(axis=1, keepdims=True)) @ Vp[b, toks][:, kc]
            want = heads if P is None else linear(heads, P['W_o'], P.get('b_o'))
            assert_close(r['out'][b, row:row + Q], want, f'{c.name}: step at {n - Q} recomputed')
        row += Q
    assert row == r['out'].shape[1]


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
