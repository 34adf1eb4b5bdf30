#!/usr/bin/env python3
"""Golden cases of ONNX Attention's score semantics (tests/golden/onnx_*.case).

The answers come from the ONNX operator's own formulas (Attention-24 with
opset 25's window attributes), in numpy float64, written here from the
specification and not from the library:

    qk = (Q sqrt(scale)) (K sqrt(scale))^T     scale default 1/sqrt(head_size)
    qk = softcap tanh(qk / softcap)            softcap > 0
    qk = qk + attn_mask (float) + where(allowed, 0, -inf)
    P  = softmax(qk), a row with no allowed key all 0 (the fully masked guard)
    Y  = P V

where key j is allowed to query i (at absolute position p = offset + i,
offset = past length, nonpad_kv_seqlen - S_q, or 0) by is_causal (j <= p),
the windows (p - left <= j <= p + right), nonpad_kv_seqlen (j < n) and a
boolean attn_mask. qk_matmul_output modes 0, 1, 2, 3 are the scaled qk, the
softcapped one, the masked one and P. ALiBi (not an ONNX attribute) follows
ggml's slopes for the one case that adds it.

Each case runs through the library as dot_product_attention (one head per
batch row: ONNX's (B, H, S, d) as (B*H, S, d)) or, with heads that differ
(grouped-query, ALiBi), multi_head_attention with identity projections.
Usage: make_onnx_golden.py write OUTDIR  (writes OUTDIR/onnx_*.case, reads them back)
       make_onnx_golden.py check DIR      (recomputes the committed answers from their inputs)
"""
import math
import os
import sys

try:
    import numpy as np
except ImportError:  # CTest's skip code: no numpy here
    print('make_onnx_golden.py: numpy is not installed', file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_decoder_golden import Case, f32, read_case  # noqa: E402  (the case format, nothing of the answers)

SEED = 20261126


def softmax_guarded(x):
    """Softmax over the last axis; a row whose every entry is -inf is all 0."""
    m = np.max(x, axis=-1, keepdims=True)
    dead = ~np.isfinite(m)
    e = np.exp(x - np.where(dead, 0.0, m))
    e = np.where(np.isneginf(x), 0.0, e)
    s = np.sum(e, axis=-1, keepdims=True)
    return np.where(dead, 0.0, e / np.where(s == 0, 1.0, s))


def onnx_attention(Q, K, V, scale=None, softcap=0.0, is_causal=False, offset=None, left=-1, right=-1,
                   nonpad=None, bool_mask=None, float_mask=None, alibi_max_bias=0.0):
    """Q (B,Hq,Sq,d), K (B,Hkv,Sk,d), V (B,Hkv,Sk,dv). offset (B) or None (0).
    Returns Y (B,Hq,Sq,dv) and the four qk_matmul_output modes (B,Hq,Sq,Sk)."""
    B, Hq, Sq, d = Q.shape
    Hkv, Sk = K.shape[1], K.shape[2]
    K = np.repeat(K, Hq // Hkv, axis=1)
    V = np.repeat(V, Hq // Hkv, axis=1)
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    qk = (Q * math.sqrt(scale)) @ np.swapaxes(K * math.sqrt(scale), -1, -2) if scale > 0 else scale * Q @ np.swapaxes(K, -1, -2)
    mode0 = qk.copy()
    if softcap > 0:
        qk = softcap * np.tanh(qk / softcap)
    mode1 = qk.copy()
    off = np.zeros(B, dtype=np.int64) if offset is None else np.asarray(offset, dtype=np.int64)
    i = np.arange(Sq)[None, :, None]
    j = np.arange(Sk)[None, None, :]
    p = off[:, None, None] + i                       # (B, Sq, 1)
    allowed = np.ones((B, Sq, Sk), dtype=bool)
    if is_causal:
        allowed &= j <= p
    if left >= 0:
        allowed &= j >= p - left
    if right >= 0:
        allowed &= j <= p + right
    if nonpad is not None:
        allowed &= j < np.asarray(nonpad)[:, None, None]
    allowed = np.broadcast_to(allowed[:, None], (B, Hq, Sq, Sk))
    if bool_mask is not None:
        allowed = allowed & bool_mask
    if float_mask is not None:
        qk = qk + float_mask
    if alibi_max_bias > 0:
        n = 2 ** int(math.floor(math.log2(Hq)))
        m0, m1 = 2.0 ** (-alibi_max_bias / n), 2.0 ** (-alibi_max_bias / 2.0 / n)
        slopes = np.array([m0 ** (h + 1) if h < n else m1 ** (2 * (h - n) + 1) for h in range(Hq)])
        qk = qk - slopes[None, :, None, None] * np.abs(p[:, None] - j[:, None])
    qk = np.where(allowed, qk, -np.inf)
    mode2 = qk.copy()
    P = softmax_guarded(qk)
    return P @ V, (mode0, mode1, mode2, P)


def rng(name):
    import zlib
    return np.random.default_rng(SEED ^ zlib.crc32(name.encode()))


def randn(g, *shape, scale=1.0):
    return f32(g.standard_normal(shape) * scale)


def sdpa_case(name, Q, K, V, Y, weights, params, score_options=None, valid_lens=None, key_ranges=None,
              bias=None):
    """One head per batch row: (B,H,S,d) as (B*H,S,d)."""
    B, H = Q.shape[:2]
    c = Case(name, 'dot_product_attention')
    for k, v in params:
        c.param(k, v)
    c.input('queries', Q.reshape(B * H, *Q.shape[2:]))
    c.input('keys', K.reshape(B * H, *K.shape[2:]))
    c.input('values', V.reshape(B * H, *V.shape[2:]))
    if valid_lens is not None:
        c.input('valid_lens', np.asarray(valid_lens, dtype=np.int32))
    if key_ranges is not None:
        c.input('key_ranges', np.asarray(key_ranges, dtype=np.int32))
    if bias is not None:
        c.input('bias', bias)
    if score_options is not None:
        c.input('score_options', f32(score_options))
    c.expect('output', Y.reshape(B * H, *Y.shape[2:]))
    if weights is not None:
        c.expect('attention_weights', weights.reshape(B * H, *weights.shape[2:]))
    return c


def mha_case(name, Q, K, V, Y, weights, params, score_options=None):
    """ONNX's 3D form through multi_head_attention with identity
    projections: queries (B,Sq,Hq*d), keys and values (B,Sk,Hkv*d)."""
    B, Hq, Sq, d = Q.shape
    Hkv, Sk = K.shape[1], K.shape[2]
    h, hkv = Hq * d, Hkv * d
    c = Case(name, 'multi_head_attention')
    c.param('num_hiddens', h).param('num_heads', Hq).param('num_kv_heads', Hkv).param('bias', 0)
    for k, v in params:
        c.param(k, v)
    c.input('queries', np.transpose(Q, (0, 2, 1, 3)).reshape(B, Sq, h))
    c.input('keys', np.transpose(K, (0, 2, 1, 3)).reshape(B, Sk, hkv))
    c.input('values', np.transpose(V, (0, 2, 1, 3)).reshape(B, Sk, hkv))
    c.input('W_q', np.eye(h)).input('W_k', np.eye(hkv)).input('W_v', np.eye(hkv)).input('W_o', np.eye(h))
    if score_options is not None:
        c.input('score_options', f32(score_options))
    c.expect('output', np.transpose(Y, (0, 2, 1, 3)).reshape(B, Sq, h))
    if weights is not None:
        c.expect('attention_weights', weights)
    return c


EXCLUDE, TOP_LEFT, VALID_END = ('masking', 1), ('alignment', 1), ('alignment', 2)


def all_cases():
    cases = []
    # attention_scaled: scale 0.1, no mask.
    g = rng('onnx_scaled')
    Q, K, V = randn(g, 2, 3, 4, 8), randn(g, 2, 3, 6, 8), randn(g, 2, 3, 6, 8)
    scale = float(np.float32(0.1))  # the float the case file holds
    Y, m = onnx_attention(Q, K, V, scale=scale)
    cases.append(sdpa_case('onnx_scaled', Q, K, V, Y, m[3], [EXCLUDE], [scale, 0, 0]))
    # attention_softcap: softcap 2.0 (scores big enough that it bites).
    g = rng('onnx_softcap')
    Q, K, V = randn(g, 2, 3, 4, 8, scale=2.0), randn(g, 2, 3, 6, 8, scale=2.0), randn(g, 2, 3, 6, 8)
    Y, m = onnx_attention(Q, K, V, softcap=2.0)
    cases.append(sdpa_case('onnx_softcap', Q, K, V, Y, m[3], [EXCLUDE], [0, 2.0, 0]))
    # attention_causal with S_q != S_k and no cache: offset 0, top-left.
    g = rng('onnx_causal_top_left')
    Q, K, V = randn(g, 2, 3, 4, 8), randn(g, 2, 3, 6, 8), randn(g, 2, 3, 6, 8)
    Y, m = onnx_attention(Q, K, V, is_causal=True)
    cases.append(sdpa_case('onnx_causal_top_left', Q, K, V, Y, m[3], [('causal', 1), TOP_LEFT, EXCLUDE]))
    # Fully masked row of a boolean mask: row 0 allows no key -> zero output
    # and (mode 3) zero weights; row 1 allows keys 0, 1. As key ranges.
    g = rng('onnx_fully_masked_row')
    Q, K, V = randn(g, 1, 1, 2, 4), randn(g, 1, 1, 2, 4), randn(g, 1, 1, 2, 4)
    bmask = np.array([[False, False], [True, True]])[None, None]
    Y, m = onnx_attention(Q, K, V, bool_mask=bmask)
    assert np.all(Y[0, 0, 0] == 0) and np.all(m[3][0, 0, 0] == 0)
    cases.append(sdpa_case('onnx_fully_masked_row', Q, K, V, Y, m[3], [EXCLUDE], key_ranges=[[[0, 0], [0, 2]]]))
    # qk_matmul_output modes 0, 1, 2 (softcap 3, a float attn_mask; every key
    # allowed, so mode 2 is finite) and 3 (causal top-left, masked keys 0).
    g = rng('onnx_qk_matmul_output')
    Q, K, V = randn(g, 2, 2, 4, 8, scale=2.0), randn(g, 2, 2, 6, 8, scale=2.0), randn(g, 2, 2, 6, 8)
    fmask = randn(g, 1, 1, 4, 6, scale=0.5)
    Y, m = onnx_attention(Q, K, V, softcap=3.0, float_mask=fmask)
    for mode in range(3):
        cases.append(sdpa_case('onnx_qk_matmul_output_mode%d' % mode, Q, K, V, Y, m[mode],
                               [EXCLUDE, ('weights_output', mode + 1)], [0, 3.0, 0], bias=fmask[0][None]))
    Y, m = onnx_attention(Q, K, V, softcap=3.0, float_mask=fmask, is_causal=True)
    cases.append(sdpa_case('onnx_qk_matmul_output_mode3', Q, K, V, Y, m[3], [EXCLUDE, ('causal', 1), TOP_LEFT],
                           [0, 3.0, 0], bias=fmask[0][None]))
    # Opset 25's window diagram: S_q 4, S_k 6, left 2, right 1, offset 0.
    g = rng('onnx_window_25')
    Q, K, V = randn(g, 1, 2, 4, 8), randn(g, 1, 2, 6, 8), randn(g, 1, 2, 6, 8)
    Y, m = onnx_attention(Q, K, V, left=2, right=1)
    cases.append(sdpa_case('onnx_window_25', Q, K, V, Y, m[3],
                           [EXCLUDE, TOP_LEFT, ('mask_window', 3), ('right_window', 2)]))
    # nonpad_kv_seqlen without past_key, causal: offset = n - S_q per batch;
    # batch 1's n < S_q leaves its leading rows fully masked (zero).
    g = rng('onnx_nonpad_causal')
    Q, K, V = randn(g, 2, 1, 4, 8), randn(g, 2, 1, 7, 8), randn(g, 2, 1, 7, 8)
    nonpad = [7, 2]
    Y, m = onnx_attention(Q, K, V, is_causal=True, nonpad=nonpad, offset=[n - 4 for n in nonpad])
    assert np.all(Y[1, 0, :2] == 0)
    cases.append(sdpa_case('onnx_nonpad_causal', Q, K, V, Y, m[3], [EXCLUDE, VALID_END, ('causal', 1)],
                           valid_lens=nonpad))
    # past_key: 5 cached keys and 3 new, causal bottom-right (offset 5).
    g = rng('onnx_past_causal')
    Q, K, V = randn(g, 2, 2, 3, 8), randn(g, 2, 2, 8, 8), randn(g, 2, 2, 8, 8)
    Y, m = onnx_attention(Q, K, V, is_causal=True, offset=[5, 5])
    cases.append(sdpa_case('onnx_past_causal', Q, K, V, Y, m[3], [EXCLUDE, ('causal', 1)]))
    # Grouped-query (q_num_heads 4, kv_num_heads 2) with softcap, causal
    # top-left, and ggml's ALiBi (max_bias 8), through multi-head attention.
    g = rng('onnx_gqa_softcap_alibi')
    Q, K, V = randn(g, 2, 4, 5, 4, scale=1.5), randn(g, 2, 2, 7, 4, scale=1.5), randn(g, 2, 2, 7, 4)
    Y, m = onnx_attention(Q, K, V, softcap=4.0, is_causal=True, alibi_max_bias=8.0)
    cases.append(mha_case('onnx_gqa_softcap_alibi', Q, K, V, Y, m[3], [('causal', 1), TOP_LEFT, EXCLUDE],
                          [0, 4.0, 8.0]))
    # ALiBi over 6 heads (BLOOM's second series of slopes), bottom-right.
    g = rng('onnx_alibi_six_heads')
    Q, K, V = randn(g, 1, 6, 3, 4), randn(g, 1, 6, 5, 4), randn(g, 1, 6, 5, 4)
    Y, m = onnx_attention(Q, K, V, is_causal=True, offset=[2], alibi_max_bias=8.0)
    cases.append(mha_case('onnx_alibi_six_heads', Q, K, V, Y, m[3], [('causal', 1), EXCLUDE], [0, 0, 8.0]))
    return cases


def self_check():
    """The formulas against a plain per-element loop of one small case."""
    g = rng('self_check')
    Q, K, V = randn(g, 1, 2, 3, 4), randn(g, 1, 1, 5, 4), randn(g, 1, 1, 5, 4)
    Y, m = onnx_attention(Q, K, V, scale=0.3, softcap=1.5, is_causal=True, offset=[2], left=1, alibi_max_bias=4.0)
    for h in range(2):
        for i in range(3):
            s = []
            for j in range(5):
                p = 2 + i
                x = 1.5 * math.tanh(0.3 * float(Q[0, h, i] @ K[0, 0, j]) / 1.5)
                x -= (2.0 ** (-4.0 / 2)) ** (h + 1) * abs(p - j)
                s.append(x if p - 1 <= j <= p else -math.inf)
            mx = max(s)
            e = [math.exp(x - mx) if x > -math.inf else 0.0 for x in s]
            w = [x / sum(e) for x in e]
            assert np.allclose(m[3][0, h, i], w, rtol=1e-13, atol=1e-15)
            assert np.allclose(Y[0, h, i], np.array(w) @ V[0, 0], rtol=1e-13, atol=1e-15)


def check(directory):
    """Every committed onnx_*.case against the answer recomputed from its own
    inputs and params (the case list gives each its formulas' arguments)."""
    failed = 0
    for c in all_cases():
        path = os.path.join(directory, c.name + '.case')
        op, params, tensors = read_case(path)
        mine = {(role, name): x for role, name, _, x in c.tensors}
        same_inputs = all(np.array_equal(mine[k], v[1]) for k, v in tensors.items() if k[0] == 'input')
        worst = 0.0
        for key, (_, committed) in tensors.items():
            if key[0] == 'expect':
                worst = max(worst, float(np.max(np.abs(mine[key] - committed))) / max(np.max(np.abs(mine[key])), 1e-300))
        ok = op == c.op and same_inputs and params == dict(c.params) and worst <= 1e-12
        failed += not ok
        print('%-4s %-36s largest difference %.2e' % ('ok' if ok else 'FAIL', c.name + '.case', worst))
    return 1 if failed else 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ('write', 'check'):
        sys.exit('usage: make_onnx_golden.py write OUTDIR | check DIR')
    self_check()
    if sys.argv[1] == 'check':
        sys.exit(check(sys.argv[2]))
    out = sys.argv[2]
    for c in all_cases():
        path = os.path.join(out, c.name + '.case')
        with open(path, 'w') as f:
            f.write(c.text())
        op, params, tensors = read_case(path)
        assert op == c.op and len(tensors) == len(c.tensors), path
        print('wrote', path)


if __name__ == '__main__':
    main()
