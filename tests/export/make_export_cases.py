#!/usr/bin/python3
"""Exports seeded PyTorch attention modules with tools/export_torch.py, for
the export.* tests (tests/CMakeLists.txt): OUT/<name>.h and OUT/<name>.case.

  torch_mha        nn.MultiheadAttention(16, 4), biases, batch_first, valid_lens (B)
  torch_kvdim      nn.MultiheadAttention(24, 3, kdim=10, vdim=12), no biases,
                   sequence first, valid_lens (B, Q)
  d2l_mha          d2l's MultiHeadAttention (written out below as d2l has it),
                   query/key/value sizes 12/8/6, 5 heads of 4
  torch_mha_int8   torch_mha's module with int8 weights
  d2l_mha_fp16     d2l_mha's module with fp16 weights
  state_dict       torch_mha's state_dict through the command line (torch.save)

Then checks that the exporter refuses what it cannot export faithfully.
Run: /usr/bin/python3 tests/export/make_export_cases.py OUT
"""
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, '..', '..', 'tools', 'export_torch.py')
sys.path.insert(0, os.path.dirname(TOOL))
import export_torch  # noqa: E402


class D2lMultiHeadAttention(torch.nn.Module):
    """d2l's MultiHeadAttention (chapter 11.5), with nn.Linear for LazyLinear."""

    def __init__(self, query_size, key_size, value_size, num_hiddens, num_heads, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = torch.nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = torch.nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = torch.nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = torch.nn.Linear(num_hiddens, num_hiddens, bias=bias)


def main(out):
    os.makedirs(out, exist_ok=True)
    path = lambda name, ext: os.path.join(out, name + ext)
    torch.manual_seed(20261123)
    g = torch.Generator().manual_seed(7)

    mha = torch.nn.MultiheadAttention(16, 4, bias=True, batch_first=True).eval()
    q, k = torch.randn(2, 3, 16, generator=g), torch.randn(2, 5, 16, generator=g)
    v = torch.randn(2, 5, 16, generator=g)
    for name, wt in (('torch_mha', 'f32'), ('torch_mha_int8', 'int8')):
        export_torch.export(mha, name, header=path(name, '.h'), case=path(name, '.case'), example=(q, k, v),
                            valid_lens=[5, 3], weight_type=wt)

    kv = torch.nn.MultiheadAttention(24, 3, bias=False, kdim=10, vdim=12).eval()
    q, k, v = torch.randn(2, 4, 24, generator=g), torch.randn(2, 6, 10, generator=g), torch.randn(2, 6, 12, generator=g)
    export_torch.export(kv, 'torch_kvdim', header=path('torch_kvdim', '.h'), case=path('torch_kvdim', '.case'),
                        example=(q, k, v), valid_lens=[[1, 2, 6, 4], [6, 5, 3, 2]])

    d2l = D2lMultiHeadAttention(12, 8, 6, 20, 5).eval()
    q, k, v = torch.randn(2, 4, 12, generator=g), torch.randn(2, 7, 8, generator=g), torch.randn(2, 7, 6, generator=g)
    for name, wt in (('d2l_mha', 'f32'), ('d2l_mha_fp16', 'fp16')):
        export_torch.export(d2l, name, header=path(name, '.h'), case=path(name, '.case'), example=(q, k, v),
                            valid_lens=[3, 7], weight_type=wt)

    # The command line, from a saved state_dict.
    torch.save(mha.state_dict(), path('torch_mha_state', '.pt'))
    run = lambda *args: subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)
    r = run(path('torch_mha_state', '.pt'), '--num-heads', '4', '--name', 'state_dict', '--header',
            path('state_dict', '.h'), '--case', path('state_dict', '.case'), '--example', '2,3,5',
            '--valid-lens', '5,2')
    assert r.returncode == 0, r.stderr

    # Refusals: a fully masked row (NaN in PyTorch, uniform in edgeattn), a
    # module with add_bias_kv, heads that do not divide num_hiddens.
    r = run(path('torch_mha_state', '.pt'), '--num-heads', '4', '--name', 'x', '--case', path('never', '.case'),
            '--example', '2,3,5', '--valid-lens', '5,0')
    assert r.returncode == 2 and 'valid length of 0' in r.stderr and not os.path.exists(path('never', '.case')), r
    r = run(path('torch_mha_state', '.pt'), '--num-heads', '5', '--name', 'x', '--header', path('never', '.h'))
    assert r.returncode == 2 and 'does not divide' in r.stderr and not os.path.exists(path('never', '.h')), r
    try:
        export_torch.export(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True), 'x', header=path('never', '.h'))
        raise AssertionError('add_bias_kv exported')
    except export_torch.ExportError as e:
        assert 'add_bias_kv' in str(e) and not os.path.exists(path('never', '.h'))
    print('exported 6 modules to %s; 3 refusals as expected' % out)


if __name__ == '__main__':
    main(sys.argv[1])
