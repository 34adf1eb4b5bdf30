#!/usr/bin/python3
"""The golden cases of d2l's operations, from edgeattn's float64 reference.

tests/golden's cases of masked_softmax, dot_product_attention,
additive_attention, multi_head_attention, positional_encoding and
self_attention without the decoder's or the reduced-precision parameters
(softmax_*, dot_seed, dot_random, dot_unmasked, additive_seed,
additive_random, mha_seed, mha_self_random, mha_cross_bias, posenc_*,
self_attention_pe) are the acceptance reference the project started from,
computed in float64 with PyTorch by its authors. This script is the
project's own generator for those operations: the same row-by-row numpy
reference as make_decoder_golden.py (d2l's semantics, no PyTorch).

  check DIR              recompute every expected tensor of DIR's cases of
                         these operations from their inputs, with this
                         reference, and compare: the committed answers follow
                         from the semantics (largest |difference| / max |ref|
                         <= 1e-12, the positional table to 1e-15 absolute).
  write DIR [--seed N]   new cases of the same operations and shapes with fresh
                         inputs (a port's own test set: run them with
                         edgeattn-conform); the committed files stay as they are.

Run:  /usr/bin/python3 tools/golden/make_golden.py check tests/golden
Needs only numpy; exits 77 when numpy is missing (CTest's skip code).
The file grammar is tests/golden/FORMAT.md.
"""
import math
import os
import sys

try:
    import numpy as np
except ImportError:
    print('make_golden.py: numpy is missing (apt-get install python3-numpy)', file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_decoder_golden as ref  # noqa: E402  (the float64 reference, the writer and reader)

OPS = ('masked_softmax', 'dot_product_attention', 'additive_attention', 'multi_head_attention',
       'positional_encoding', 'self_attention')
# Parameters and inputs of the cases the other generators make (and check).
OTHER_PARAMS = {'num_kv_heads', 'causal', 'weight_type', 'cache_type', 'mask_window', 'right_window', 'alignment',
                'masking', 'weights_output'}
OTHER_INPUTS = {'key_ranges', 'bias', 'score_options'}
WEIGHTS = ('W_q', 'W_k', 'W_v', 'W_o', 'b_q', 'b_k', 'b_v', 'b_o')


# ================================================================ reference
def masked_softmax(X, valid_lens):
    """d2l's masked_softmax: X (B, Q, K), valid_lens None, (B) or (B, Q)."""
    B, Q, K = X.shape
    mask = ref.Mask(valid_lens=valid_lens)
    Y = np.zeros(X.shape)
    for b in range(B):
        for i in range(Q):
            lo, hi = mask.interval(b, i, Q, K)
            Y[b, i] = ref.masked_softmax_row(X[b, i, lo:hi], lo, hi, K)
    return Y


def positional_table(max_len, d):
    """P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(i / 10000^(2j/d));
    for odd d the last column is a sine."""
    P = np.zeros((max_len, d))
    for i in range(max_len):
        for c in range(d):
            angle = i / 10000.0 ** ((c - c % 2) / d)
            P[i, c] = math.sin(angle) if c % 2 == 0 else math.cos(angle)
    return P


def expected(op, params, inputs):
    """The expected tensors {name: array} of one case from its inputs."""
    vl = inputs.get('valid_lens')
    mask = ref.Mask(valid_lens=vl)
    if op == 'masked_softmax':
        return {'Y': masked_softmax(inputs['X'], vl)}
    if op == 'dot_product_attention':
        out, w = ref.dot_product_attention(inputs['queries'], inputs['keys'], inputs['values'], mask)
        return {'output': out, 'attention_weights': w}
    if op == 'additive_attention':
        out, w = ref.additive_attention(inputs['queries'], inputs['keys'], inputs['values'], inputs['W_q'],
                                        inputs['W_k'], inputs['w_v'], mask)
        return {'output': out, 'attention_weights': w}
    P = {n: inputs[n] for n in WEIGHTS if n in inputs}
    if op == 'multi_head_attention':
        H = params['num_heads']
        out, w = ref.multi_head_attention(inputs['queries'], inputs['keys'], inputs['values'], P, H, H, mask)
        return {'output': out, 'attention_weights': w}
    X = inputs['X']
    table = positional_table(params['max_len'], X.shape[2])
    Xp = X + table[None, :X.shape[1]]
    if op == 'positional_encoding':
        return {'output': Xp, 'P': table}
    H = params['num_heads']  # self_attention: MHA(X + P, X + P, X + P)
    out, w = ref.multi_head_attention(Xp, Xp, Xp, P, H, H, mask)
    return {'output': out, 'attention_weights': w}


# ================================================================ check
def ours(op, params, tensors):
    """Whether a case is one of this generator's operations (not a decoder or
    reduced-precision case, which their own generators check)."""
    names = {name for _, name in tensors}
    return op in OPS and not OTHER_PARAMS & set(params) and not OTHER_INPUTS & names


def check(directory):
    checked, failed = 0, 0
    for file in sorted(os.listdir(directory)):
        if not file.endswith('.case'):
            continue
        op, params, tensors = ref.read_case(os.path.join(directory, file))
        if not ours(op, params, tensors):
            continue
        inputs = {name: x for (role, name), (_, x) in tensors.items() if role == 'input'}
        answers = expected(op, params, inputs)
        worst = 0.0
        for (role, name), (_, committed) in tensors.items():
            if role != 'expect':
                continue
            mine = answers[name]
            assert mine.shape == committed.shape, (file, name, mine.shape, committed.shape)
            diff = np.max(np.abs(mine - committed))
            worst = max(worst, diff if name == 'P' else diff / max(np.max(np.abs(mine)), 1e-300))
        bar = 1e-12
        ok = worst <= bar
        failed += not ok
        checked += 1
        print('%-4s %-26s %-22s largest difference %.2e' % ('ok' if ok else 'FAIL', file, op, worst))
    print('%d cases recomputed, %d differ' % (checked, failed))
    if checked == 0:
        print('make_golden.py: no case of these operations in ' + directory, file=sys.stderr)
        return 1
    return 1 if failed else 0


# ================================================================ write
def lens(g, shape, hi, lo=0):
    return ref.i32(g.integers(lo, hi + 1, shape))


def case_of(name, op, params, inputs):
    c = ref.Case(name, op)
    for key, value in params:
        c.param(key, value)
    for key, x in inputs:
        c.optional_input(key, x)
    answers = expected(op, dict(params), {k: x for k, x in inputs if x is not None})
    for key, x in answers.items():
        c.expect(key, x)
    return c


def mha_inputs(g, q, k, v, vl, h, bias):
    P = [('W_q', ref.lin_w(g, h, q.shape[2])), ('W_k', ref.lin_w(g, h, k.shape[2])),
         ('W_v', ref.lin_w(g, h, v.shape[2])), ('W_o', ref.lin_w(g, h, h))]
    if bias:
        P += [(n, ref.randn(g, h, scale=0.1)) for n in ('b_q', 'b_k', 'b_v', 'b_o')]
    return [('queries', q), ('keys', k), ('values', v), ('valid_lens', vl)] + P


def fresh_cases(seed):
    ref.BASE_SEED = seed  # every case draws from its own generator (rng_for(name))
    cases = []

    def add(name, op, params, make_inputs):
        cases.append(case_of(name, op, params, make_inputs(ref.rng_for(name))))

    add('softmax_seed_1d', 'masked_softmax', [],
        lambda g: [('X', ref.f32(g.random((2, 2, 4)))), ('valid_lens', ref.i32([2, 3]))])
    add('softmax_seed_2d', 'masked_softmax', [],
        lambda g: [('X', ref.f32(g.random((2, 2, 4)))), ('valid_lens', ref.i32([[1, 3], [2, 4]]))])
    add('softmax_unmasked', 'masked_softmax', [], lambda g: [('X', ref.randn(g, 2, 3, 5))])
    add('softmax_all_masked', 'masked_softmax', [],
        lambda g: [('X', ref.randn(g, 2, 3, 6)), ('valid_lens', ref.i32([0, 6]))])
    add('softmax_large_values', 'masked_softmax', [],
        lambda g: [('X', ref.randn(g, 3, 7, 37, scale=60.0)), ('valid_lens', lens(g, (3, 7), 37))])
    add('softmax_wide', 'masked_softmax', [],
        lambda g: [('X', ref.randn(g, 2, 4, 1029, scale=4.0)), ('valid_lens', lens(g, (2,), 1029, 1))])
    # d2l's own example inputs: keys all ones, values 0..39, valid_lens [2, 6]
    seed_keys = ref.f32(np.ones((2, 10, 2)))
    seed_values = ref.f32(np.tile(np.arange(40.0).reshape(1, 10, 4), (2, 1, 1)))
    seed_lens = ref.i32([2, 6])
    add('additive_seed', 'additive_attention', [('num_hiddens', 8)],
        lambda g: [('queries', ref.randn(g, 2, 1, 20)), ('keys', seed_keys), ('values', seed_values),
                   ('valid_lens', seed_lens), ('W_q', ref.lin_w(g, 8, 20)), ('W_k', ref.lin_w(g, 8, 2)),
                   ('w_v', ref.lin_w(g, 1, 8))])
    add('additive_random', 'additive_attention', [('num_hiddens', 10)],
        lambda g: [('queries', ref.randn(g, 3, 5, 7)), ('keys', ref.randn(g, 3, 6, 4)),
                   ('values', ref.randn(g, 3, 6, 9)), ('valid_lens', lens(g, (3, 5), 6)),
                   ('W_q', ref.lin_w(g, 10, 7)), ('W_k', ref.lin_w(g, 10, 4)), ('w_v', ref.lin_w(g, 1, 10))])
    add('dot_seed', 'dot_product_attention', [],
        lambda g: [('queries', ref.randn(g, 2, 1, 2)), ('keys', seed_keys), ('values', seed_values),
                   ('valid_lens', seed_lens)])
    add('dot_random', 'dot_product_attention', [],
        lambda g: [('queries', ref.randn(g, 2, 5, 16)), ('keys', ref.randn(g, 2, 7, 16)),
                   ('values', ref.randn(g, 2, 7, 3)), ('valid_lens', lens(g, (2, 5), 7))])
    add('dot_unmasked', 'dot_product_attention', [],
        lambda g: [('queries', ref.randn(g, 3, 33, 64)), ('keys', ref.randn(g, 3, 65, 64)),
                   ('values', ref.randn(g, 3, 65, 24))])
    ones = ref.f32(np.ones((2, 4, 100)))
    mha = [('num_hiddens', 100), ('num_heads', 5), ('bias', 0)]
    add('mha_seed', 'multi_head_attention', mha,
        lambda g: mha_inputs(g, ones, ones, ones, ref.i32([3, 2]), 100, False))

    def self_random(g):
        X = ref.randn(g, 2, 9, 100)
        return mha_inputs(g, X, X, X, None, 100, False)
    add('mha_self_random', 'multi_head_attention', mha, self_random)
    add('mha_cross_bias', 'multi_head_attention', [('num_hiddens', 16), ('num_heads', 4), ('bias', 1)],
        lambda g: mha_inputs(g, ref.randn(g, 2, 3, 12), ref.randn(g, 2, 6, 20), ref.randn(g, 2, 6, 24),
                             lens(g, (2, 3), 6), 16, True))
    add('posenc_seed', 'positional_encoding', [('max_len', 1000)], lambda g: [('X', ref.f32(np.zeros((1, 60, 32))))])
    add('posenc_odd_dim', 'positional_encoding', [('max_len', 50)], lambda g: [('X', ref.randn(g, 2, 17, 7))])

    def self_attention(g):
        X = ref.randn(g, 2, 10, 32)
        P = mha_inputs(g, X, X, X, ref.i32([10, 7]), 32, False)[4:]
        return [('X', X), ('valid_lens', ref.i32([10, 7]))] + P
    add('self_attention_pe', 'self_attention',
        [('num_hiddens', 32), ('num_heads', 4), ('bias', 0), ('max_len', 1000)], self_attention)
    return cases


def write(directory, seed):
    os.makedirs(directory, exist_ok=True)
    for c in fresh_cases(seed):
        ref.write_case(directory, c)
    return check(directory)  # read back: every file holds what the reference says


def main(argv):
    if len(argv) >= 3 and argv[1] == 'check':
        return check(argv[2])
    if len(argv) in (3, 5) and argv[1] == 'write' and (len(argv) == 3 or argv[3] == '--seed'):
        return write(argv[2], int(argv[4]) if len(argv) == 5 else ref.BASE_SEED + 1)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
