#!/usr/bin/python3
"""Golden cases for weights stored in int8 and fp16 (binary16), from float64.

Also decoding over a KV cache stored in int8 / fp16 (param cache_type).

A stored weight means, exactly:
  int8: scale[o] * q[o, i], q an integer in [-127, 127], scale[o] a float32 > 0
  fp16: the binary16 value of the element
and the library computes in fp32 what float64 attention with those values
gives: the cases' answers are the float64 reference (make_decoder_golden.py's
row-by-row numpy, no PyTorch) run on the dequantised weights, held to the same
bar as every other case (FORMAT.md). The quantisation itself is the library's
documented rule, written here on its own: scale = float32(max |w| / 127)
(1 for an all-zero row), q = round-half-even(w / scale).

Each case also records how far the stored model is from the fp32 model it was
made from (the same inputs, the float64 reference with the fp32 weights):
printed as "error vs fp32", and summed up in the table of docs/reduced-precision.md.

Run:  /usr/bin/python3 tools/golden/make_reduced_precision_golden.py tests/golden
Needs only numpy.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_decoder_golden as ref  # noqa: E402  (the float64 reference and the writer)

WEIGHT_TYPE = {'fp16': 1, 'int8': 2}  # edgeattn_weight_type
MATRICES = ('W_q', 'W_k', 'W_v', 'W_o')


def quantize_int8(W):
    """(q as int32, scales as float32-in-float64) by the library's rule."""
    largest = np.abs(W).max(axis=1).astype(np.float32)
    scales = (largest / np.float32(127.0)).astype(np.float32)
    scales[~(scales > 0)] = np.float32(1.0)
    q = np.rint(W / scales.astype(np.float64)[:, None])  # numpy rounds half to even
    q = np.clip(q, -127, 127).astype(np.int32)
    return q, scales.astype(np.float64)


def to_fp16(W):
    h = W.astype(np.float16)  # IEEE round to nearest even
    assert np.all(np.isfinite(h))
    return h.astype(np.float64)


class Stored:
    """The stored form of a weight dict P: what goes in the case, and the dequantised values."""

    def __init__(self, P, kind, names):
        self.kind, self.inputs, self.exact = kind, [], dict(P)
        for n in names:
            if kind == 'int8':
                q, s = quantize_int8(P[n])
                self.inputs += [(n, q), (n + '_scales', s)]
                self.exact[n] = s[:, None] * q
            else:
                h = to_fp16(P[n])
                self.inputs.append((n, h))
                self.exact[n] = h

    def write(self, c, P=None):
        """The stored matrices into case c, then P's fp32 biases b_q .. b_o (those present)."""
        for n, x in self.inputs:
            c.input(n, x)
        for n in ('b_q', 'b_k', 'b_v', 'b_o') if P is not None else ():
            c.optional_input(n, P.get(n))


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).ravel()) / np.linalg.norm(b.ravel()))


def mha_case(name, kind, queries, keys, values, h, H, Hkv, bias, causal, valid_lens=None, key_ranges=None,
             score_bias=None):
    g = ref.rng_for(name)
    P = ref.mha_params(g, h, H, Hkv, queries.shape[2], keys.shape[2], values.shape[2], bias)
    st = Stored(P, kind, MATRICES)
    mask = ref.Mask(causal, key_ranges, valid_lens, score_bias)
    out, w = ref.multi_head_attention(queries, keys, values, st.exact, H, Hkv, mask)
    out32, _ = ref.multi_head_attention(queries, keys, values, P, H, Hkv, mask)
    c = ref.Case(name, 'multi_head_attention').param('num_hiddens', h).param('num_heads', H)
    c.param('num_kv_heads', Hkv).param('bias', bias).param('causal', causal)
    c.param('weight_type', WEIGHT_TYPE[kind])
    c.input('queries', queries).input('keys', keys).input('values', values)
    c.optional_input('valid_lens', valid_lens).optional_input('key_ranges', key_ranges)
    c.optional_input('bias', score_bias)
    st.write(c, P)
    c.expect('output', out).expect('attention_weights', w)
    c.error_vs_fp32 = rel_l2(out, out32)
    return c


def linear_case(name, kind, rows, in_f, out_f, with_bias):
    g = ref.rng_for(name)
    x, W = ref.randn(g, rows, in_f), ref.lin_w(g, out_f, in_f)
    b = ref.randn(g, out_f, scale=0.5) if with_bias else None
    st = Stored({'W': W}, kind, ('W',))
    c = ref.Case(name, 'linear').param('weight_type', WEIGHT_TYPE[kind]).input('x', x)
    st.write(c)
    c.optional_input('b', b)
    Wd = st.exact['W']
    # written out, as in make_decoder_golden: independent of linear()
    y = np.array([[sum(x[r, i] * Wd[o, i] for i in range(in_f)) + (b[o] if with_bias else 0.0)
                   for o in range(out_f)] for r in range(rows)])
    ref.assert_close(y, ref.linear(x, Wd, b), name + ': linear', tol=1e-12)
    c.error_vs_fp32 = rel_l2(y, ref.linear(x, W, b))
    return c.expect('y', y)


def decode_case(name, kind, B, chunks, truncate, d, h, H, Hkv, bias, capacity):
    g = ref.rng_for(name)
    T = sum(chunks)
    X = ref.randn(g, B, T, d)
    P = ref.mha_params(g, h, H, Hkv, d, d, d, bias)
    st = Stored(P, kind, MATRICES)
    status, out = ref.kv_cache_decode(X, chunks, truncate, st.exact, H, Hkv, capacity, None, None)
    # decoding equals causal MHA over all tokens at once (no truncation here)
    full, _ = ref.multi_head_attention(X, X, X, st.exact, H, Hkv, ref.Mask(causal=True))
    ref.assert_close(out, full, name + ': decode vs causal MHA')
    full32, _ = ref.multi_head_attention(X, X, X, P, H, Hkv, ref.Mask(causal=True))
    c = ref.Case(name, 'kv_cache_decode').param('num_hiddens', h).param('num_heads', H)
    c.param('num_kv_heads', Hkv).param('bias', bias).param('capacity', capacity)
    c.param('weight_type', WEIGHT_TYPE[kind])
    c.input('X', X).input('chunks', ref.i32(chunks)).input('truncate', ref.i32(truncate))
    st.write(c, P)
    c.expect('chunk_status', status).expect('output', out)
    c.error_vs_fp32 = rel_l2(out, full32)
    return c


def cache_rows_stored(Kp, kind, head_size):
    """Kp (B,T,h_kv) as an int8 / fp16 KV cache stores it, dequantised.

    int8, by the library's rule for a cached row (one token, one kv head):
    scale = float32(max |x| / 127) (1 for all zeros), q = round-half-even of
    the float32 quotient x / scale. The inputs of these cases make every
    projected key and value exact in float32 (see cache_case), so these float32
    operations see the same numbers the library does on every path."""
    if kind == 'fp16':
        h = Kp.astype(np.float16).astype(np.float64)
        assert np.array_equal(h, Kp), 'the cache case must project to binary16 values'
        return h
    B, T, hkv = Kp.shape
    out = np.zeros_like(Kp)
    for b in range(B):
        for t in range(T):
            for g in range(hkv // head_size):
                x = Kp[b, t, g * head_size:(g + 1) * head_size].astype(np.float32)
                assert np.array_equal(x.astype(np.float64), Kp[b, t, g * head_size:(g + 1) * head_size])
                scale = np.float32(np.abs(x).max()) / np.float32(127.0)
                if not scale > 0:
                    scale = np.float32(1.0)
                q = np.clip(np.rint(x / scale), -127, 127)
                out[b, t, g * head_size:(g + 1) * head_size] = np.float64(scale) * q
    return out


def cache_case(name, kind, B, chunks, d, h, H, Hkv, capacity):
    """Decoding over a KV cache stored as int8 / fp16, fp32 weights.

    X holds -1, 0, 1 and W_k, W_v, b_k, b_v multiples of 1/16 in [-1, 1], so
    every projected key and value is a multiple of 1/16 below 2^11 / 16 in
    magnitude: exact in float32 and in binary16 whatever the summation order.
    The quantisation of a cached row is then the same on every path, and the
    answer is float64 attention over the stored (dequantised) rows."""
    g = ref.rng_for(name)
    T = sum(chunks)
    X = g.integers(-1, 2, (B, T, d)).astype(np.float64)
    P = ref.mha_params(g, h, H, Hkv, d, d, d, 1)
    hkv = Hkv * (h // H)
    for n in ('W_k', 'W_v'):
        P[n] = g.integers(-16, 17, (hkv, d)) / 16.0
    for n in ('b_k', 'b_v'):
        P[n] = g.integers(-16, 17, hkv) / 16.0
    Kp, Vp = ref.linear(X, P['W_k'], P['b_k']), ref.linear(X, P['W_v'], P['b_v'])
    Ks, Vs = cache_rows_stored(Kp, kind, h // H), cache_rows_stored(Vp, kind, h // H)
    Qp = ref.linear(X, P['W_q'], P['b_q'])
    heads, _ = ref.attend_heads(Qp, Ks, Vs, H, Hkv, ref.Mask(causal=True))
    out = ref.linear(heads, P['W_o'], P['b_o'])
    # no truncation: decoding is causal attention over all tokens at once
    # (checked for the fp32 cache by make_decoder_golden's self-check)
    status, dec32 = ref.kv_cache_decode(X, chunks, [-1] * len(chunks), P, H, Hkv, capacity)
    assert list(status) == [0] * len(chunks)
    c = ref.Case(name, 'kv_cache_decode').param('num_hiddens', h).param('num_heads', H)
    c.param('num_kv_heads', Hkv).param('bias', 1).param('capacity', capacity)
    c.param('cache_type', WEIGHT_TYPE[kind])
    c.input('X', X).input('chunks', ref.i32(chunks)).input('truncate', ref.i32([-1] * len(chunks)))
    for n in ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o'):
        c.input(n, P[n])
    c.expect('chunk_status', status).expect('output', out)
    c.error_vs_fp32 = rel_l2(out, dec32)
    return c


class NearTie(Exception):
    """A value too near a rounding boundary of the int8 rule (see int8_rows_clear_of_ties)."""


def int8_rows_clear_of_ties(rows, head_size, margin=5e-4):
    """rows (n, h_kv) as an int8 cache stores them, dequantised: one scale per
    (token, kv head), scale = float32(max |x| / 127), q = round-half-even(x / scale).

    The rows of a RoPE case are rotated in float32 with a float32 table by the
    library, so they differ from these float64 rows by about 2^-22 relative,
    and the projections' summation order moves them by as much: a quotient
    x / scale within `margin` of a half-integer (a largest |x| off by an ulp
    moves the scale by an ulp, which moves no quotient by more than 2e-5)
    could round the other way there.
    Such a row raises NearTie and the case takes other inputs; the margin is
    over 30 times the error (127 * 2^-22 = 3e-5)."""
    out = np.zeros_like(rows)
    for t in range(rows.shape[0]):
        for g in range(rows.shape[1] // head_size):
            x = rows[t, g * head_size:(g + 1) * head_size]
            scale = np.float64(np.float32(np.abs(x).max() / 127.0))
            assert scale > 0
            u = x / scale
            frac = np.abs(u - np.floor(u) - 0.5)
            if np.any(frac < margin):
                raise NearTie()
            out[t, g * head_size:(g + 1) * head_size] = scale * np.clip(np.rint(u), -127, 127)
    return out


def cache_window_case(name, B, chunks, d, h, H, Hkv, window, sinks, rope):
    """Decoding over a window cache stored as int8 with RoPE: the keys rotated
    at their absolute positions, then quantised row by row (the library's
    order); fp32 weights. Inputs drawn again (a fixed sequence of seeds)
    until no stored value lies near a rounding tie (int8_rows_clear_of_ties)."""
    T = sum(chunks)
    for attempt in range(100):
        g = ref.rng_for(name if attempt == 0 else '%s#%d' % (name, attempt))
        X = ref.randn(g, B, T, d)
        P = ref.mha_params(g, h, H, Hkv, d, d, d, 1)
        try:
            status, out = ref.kv_cache_decode(X, chunks, [-1] * len(chunks), P, H, Hkv, sinks + window,
                                              window=window, sinks=sinks, rope=rope,
                                              store_rows=int8_rows_clear_of_ties)
            break
        except NearTie:
            continue
    else:
        raise AssertionError(name + ': no inputs clear of the int8 ties')
    _, out32 = ref.kv_cache_decode(X, chunks, [-1] * len(chunks), P, H, Hkv, sinks + window,
                                   window=window, sinks=sinks, rope=rope)
    assert list(status) == [0] * len(chunks)
    c = ref.Case(name, 'kv_cache_decode').param('num_hiddens', h).param('num_heads', H)
    c.param('num_kv_heads', Hkv).param('bias', 1).param('capacity', sinks + window)
    c.param('cache_type', WEIGHT_TYPE['int8'])
    ref.decode_params(c, window, sinks, rope, 0, False)
    c.input('X', X).input('chunks', ref.i32(chunks)).input('truncate', ref.i32([-1] * len(chunks)))
    for n in ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o'):
        c.input(n, P[n])
    c.expect('chunk_status', status).expect('output', out)
    c.error_vs_fp32 = rel_l2(out, out32)
    c.attempt = attempt
    return c


def additive_case(name, kind):
    """d2l's additive attention example's shapes: queries (2,1,20), keys (2,10,2), values (2,10,4), h = 8."""
    g = ref.rng_for(name)
    q, k, v = ref.randn(g, 2, 1, 20), ref.randn(g, 2, 10, 2), ref.randn(g, 2, 10, 4)
    vl = ref.i32([2, 6])
    P = {'W_q': ref.lin_w(g, 8, 20), 'W_k': ref.lin_w(g, 8, 2)}
    w_v = ref.lin_w(g, 1, 8)
    st = Stored(P, kind, ('W_q', 'W_k'))
    mask = ref.Mask(valid_lens=vl)
    out, w = ref.additive_attention(q, k, v, st.exact['W_q'], st.exact['W_k'], w_v, mask)
    out32, _ = ref.additive_attention(q, k, v, P['W_q'], P['W_k'], w_v, mask)
    c = ref.Case(name, 'additive_attention').param('num_hiddens', 8).param('weight_type', WEIGHT_TYPE[kind])
    c.input('queries', q).input('keys', k).input('values', v).input('valid_lens', vl)
    st.write(c)
    c.input('w_v', w_v)
    c.expect('output', out).expect('attention_weights', w)
    c.error_vs_fp32 = rel_l2(out, out32)
    return c


def all_cases():
    cs = []
    for kind in ('int8', 'fp16'):
        # d2l's shapes (2 x 4 queries, 6 keys, valid_lens [3, 2]) at d = 20, 5 heads
        g = ref.rng_for('d2l_' + kind)
        q, k = ref.randn(g, 2, 4, 20), ref.randn(g, 2, 6, 20)
        cs.append(mha_case('mha_' + kind, kind, q, k, k, 20, 5, 5, 0, 0, valid_lens=ref.i32([3, 2])))
        # causal self-attention, grouped-query heads (2 of 4), biases, left padding
        X = ref.randn(ref.rng_for('gqa_' + kind), 2, 8, 16)
        cs.append(mha_case('mha_' + kind + '_gqa_causal', kind, X, X, X, 24, 4, 2, 1, 1,
                           key_ranges=ref.i32([[0, 8], [2, 8]])))
        cs.append(linear_case('linear_' + kind, kind, 5, 37, 70, True))
        cs.append(linear_case('linear_' + kind + '_rows', kind, 33, 40, 36, False))
        cs.append(decode_case('decode_' + kind, kind, 2, [4, 1, 1, 2, 1], [-1] * 5, 12, 16, 4, 2, 1, 10))
        # the cache itself in int8 / fp16: a prefill of 6 (rows packed), then single tokens
        cs.append(cache_case('decode_cache_' + kind, kind, 2, [6, 1, 1, 2, 1], 10, 32, 4, 2, 12))
        cs.append(additive_case('additive_' + kind, kind))
    # a window cache of 2 sinks + 4 in int8 that wraps, RoPE (NeoX) at absolute positions
    cs.append(cache_window_case('decode_window_int8', 2, [3, 1, 2, 1, 2, 1], 10, 16, 4, 2, 4, 2,
                                ref.Rope(4, 0, 10000, 1, 12)))
    return cs


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: make_reduced_precision_golden.py OUTDIR')
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    # the int8 rule on its own: ties to even, all-zero rows, the largest weight at +-127
    q, s = quantize_int8(np.array([[127.0, 0.5, 1.5, 2.5, -2.5], [0.0] * 5]))
    assert q.tolist() == [[127, 0, 2, 2, -2], [0] * 5] and s.tolist() == [1.0, 1.0]
    for c in all_cases():
        ref.write_case(outdir, c)
        print('wrote %-26s %5d values   error vs fp32 model (rel L2): %.2e' % (c.name, c.count(), c.error_vs_fp32))


if __name__ == '__main__':
    main()
