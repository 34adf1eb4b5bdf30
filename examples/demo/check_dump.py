#!/usr/bin/python3
"""edgeattn-demo --dump holds everything needed to recompute the demo elsewhere.

Runs `DEMO --dump DIR`, reads X, valid_lens and W_q, W_k, W_v, W_o back
(tools/figures/tensor_csv.py) and recomputes d2l's Transformer input block
(X + P, then multi-head self-attention) with the float64 reference of the
golden cases (tools/golden/make_golden.py); the dumped output and attention
weights must agree to rel L2 <= 1e-5 (tests/golden/FORMAT.md's bar). The same
recipe in PyTorch: P from d2l's PositionalEncoding, then d2l's
MultiHeadAttention with these four matrices as its Linear weights.

Run: /usr/bin/python3 examples/demo/check_dump.py build/examples/demo/edgeattn-demo DIR
Exits 77 without numpy (CTest's skip code).
"""
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print('check_dump.py: numpy is missing', file=sys.stderr)
    sys.exit(77)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
sys.path.insert(0, os.path.join(ROOT, 'tools', 'figures'))
sys.path.insert(0, os.path.join(ROOT, 'tools', 'golden'))
import make_golden  # noqa: E402
import tensor_csv  # noqa: E402


def main(demo, directory):
    subprocess.run([demo, '--dump', directory], check=True, stdout=subprocess.DEVNULL)
    read = lambda name: tensor_csv.read(os.path.join(directory, name + '.csv'))[1]
    inputs = {name: read(name) for name in ('X', 'W_q', 'W_k', 'W_v', 'W_o')}
    inputs['valid_lens'] = read('valid_lens').astype(np.int32)
    output, weights = read('output'), read('attention_weights')
    B, n = inputs['X'].shape[:2]
    params = {'num_heads': weights.shape[1], 'max_len': n}
    want = make_golden.expected('self_attention', params, inputs)
    worst = 0.0
    for name, got in (('output', output), ('attention_weights', weights)):
        ref = want[name]
        rel = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        worst = max(worst, rel)
        print('%s: rel L2 %.2e against the float64 reference' % (name, rel))
    return 0 if worst <= 1e-5 else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
