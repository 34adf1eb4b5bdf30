#!/usr/bin/python3
"""Exports seeded PyTorch modules with tools/export_torch.py, for the export.*
tests (tests/CMakeLists.txt): OUT/<name>.h and OUT/<name>.case.

Multi-head attention (edgeattn_weights NAME_weights):
  torch_mha        nn.MultiheadAttention(16, 4), biases, batch_first, valid_lens (B)
  torch_kvdim      nn.MultiheadAttention(24, 3, kdim=10, vdim=12), no biases,
                   sequence first, valid_lens (B, Q)
  d2l_mha          d2l's MultiHeadAttention (written out below as d2l has it),
                   query/key/value sizes 12/8/6, 5 heads of 4
  torch_mha_int8   torch_mha's module with int8 weights
  d2l_mha_fp16     d2l_mha's module with fp16 weights
  state_dict       torch_mha's state_dict through the command line (torch.save)
  llama_gqa        a Llama-style grouped-query attention (4 heads, 2 kv heads,
                   biases on q, k, v only as Qwen2), causal self-attention with
                   valid_lens; the heads read from the module
  llama_gqa_int8   the same module, int8 weights
  llama_gqa_fp16   the same weights in a model's state_dict, through the command
                   line with --prefix and --num-heads only (num_kv_heads from
                   the shapes), fp16, causal
Dense layers (edgeattn_weight_matrix NAME_W, NAME_b, edgeattn_dense_dims NAME_dims):
  dense            nn.Linear(37, 20), an example of (2, 3, 37)
  dense_int8       the same layer, int8
  dense_fp16       its state_dict through the command line (--dense), fp16
Decoder blocks (one header; cases NAME_attn, NAME_<layer>):
  llama_block      layer 1 of a two-layer Llama-style model's state_dict, one kv
                   head (multi-query), no biases, through the command line (--block)
  gpt2_block       layer 0 of a GPT-2 state_dict in Hugging Face's Conv1D layout
                   (in, out), biases, fp16, short dense names

Every answer is checked here against an independent float64 computation
before anything is written as passed: each case file read back and
recomputed with the numpy reference of tools/golden/make_decoder_golden.py
(no torch), the grouped-query answers against the module's own forward pass
(Llama's repeat_kv), the GPT-2 block against GPT-2's own Conv1D arithmetic.
Then checks that the exporter refuses what it cannot export faithfully, with
a message that says why, and that --help documents every option.
Run: /usr/bin/python3 tests/export/make_export_cases.py OUT
"""
import contextlib
import copy
import io
import math
import os
import subprocess
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, '..', '..', 'tools', 'export_torch.py')
sys.path.insert(0, os.path.dirname(TOOL))
sys.path.insert(0, os.path.join(os.path.dirname(TOOL), 'golden'))
import export_torch  # noqa: E402
import make_decoder_golden as ref  # noqa: E402  (float64 numpy reference, no torch)

TOL = 1e-12  # float64 against float64


class D2lMultiHeadAttention(torch.nn.Module):
    """d2l's MultiHeadAttention (chapter 11.5), with nn.Linear for LazyLinear."""

    def __init__(self, query_size, key_size, value_size, num_hiddens, num_heads, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = torch.nn.Linear(query_size, num_hiddens, bias=bias)
        self.W_k = torch.nn.Linear(key_size, num_hiddens, bias=bias)
        self.W_v = torch.nn.Linear(value_size, num_hiddens, bias=bias)
        self.W_o = torch.nn.Linear(num_hiddens, num_hiddens, bias=bias)


def repeat_kv(x, n_rep):
    """transformers' repeat_kv: (B, H_kv, T, hd) -> (B, H_kv * n_rep, T, hd)."""
    B, H_kv, T, hd = x.shape
    return x[:, :, None].expand(B, H_kv, n_rep, T, hd).reshape(B, H_kv * n_rep, T, hd)


class LlamaStyleAttention(torch.nn.Module):
    """Llama's attention (transformers' LlamaAttention, eager path) without
    the rotary embedding, which edgeattn_mha does not have: grouped-query
    heads through repeat_kv, an additive mask of the dtype's minimum."""

    def __init__(self, hidden_size, num_heads, num_key_value_heads, qkv_bias=False):
        super().__init__()
        self.num_heads, self.num_key_value_heads = num_heads, num_key_value_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = torch.nn.Linear(hidden_size, num_heads * self.head_dim, bias=qkv_bias)
        self.k_proj = torch.nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=qkv_bias)
        self.v_proj = torch.nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=qkv_bias)
        self.o_proj = torch.nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)

    def forward(self, x, valid_lens=None, causal=True):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        n_rep = self.num_heads // self.num_key_value_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        hidden = torch.zeros(B, 1, T, T, dtype=torch.bool)
        if causal:
            hidden |= torch.ones(T, T, dtype=torch.bool).triu(1)
        if valid_lens is not None:
            hidden |= torch.arange(T)[None, None, None, :] >= torch.as_tensor(valid_lens)[:, None, None, None]
        scores = scores + torch.zeros_like(scores).masked_fill(hidden, torch.finfo(scores.dtype).min)
        w = torch.softmax(scores, dim=-1)
        out = (w @ v).transpose(1, 2).reshape(B, T, -1)
        return self.o_proj(out), w


def rel_err(got, want):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm((got - want).ravel()) / max(np.linalg.norm(want.ravel()), 1e-300))


def assert_close(got, want, what, tol=TOL):
    e = rel_err(got, want)
    assert got.shape == want.shape and e <= tol, '%s: rel L2 %.3g (shapes %s, %s)' % (what, e, got.shape, want.shape)


def dequantised(tensors, params, name):
    """A case's stored weight matrix as the values it means (FORMAT.md)."""
    W = tensors[('input', name)][1].astype(np.float64)
    if params.get('weight_type', 0) == 2:
        return W * tensors[('input', name + '_scales')][1][:, None]
    if params.get('weight_type', 0) == 1:
        assert np.array_equal(W.astype(np.float16).astype(np.float64), W), name + ' is not binary16'
    return W


def check_case_file(path):
    """The expected tensors of a case file recomputed from its own inputs with
    the float64 numpy reference (written row by row, no torch)."""
    op, params, tensors = ref.read_case(path)
    get = lambda name: tensors[('input', name)][1] if ('input', name) in tensors else None
    if op == 'linear':
        y = ref.linear(get('x'), dequantised(tensors, params, 'W'), get('b'))
        assert_close(tensors[('expect', 'y')][1], y, path)
        return
    assert op == 'multi_head_attention', path
    P = {m: dequantised(tensors, params, m) for m in export_torch.MATRICES}
    for b in export_torch.BIASES:
        if get(b) is not None:
            P[b] = get(b)
    H = params['num_heads']
    mask = ref.Mask(causal=params.get('causal', 0), valid_lens=get('valid_lens'))
    out, w = ref.multi_head_attention(get('queries'), get('keys'), get('values'), P, H,
                                      params.get('num_kv_heads', H), mask)
    assert_close(tensors[('expect', 'output')][1], out, path + ': output')
    assert_close(tensors[('expect', 'attention_weights')][1], w, path + ': attention weights')


def run_main(*args):
    """export_torch.main in this process: (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = export_torch.main(['export_torch.py'] + [str(a) for a in args])
    return rc, err.getvalue()


REFUSALS = []


def refused(what, expect, *args):
    REFUSALS.append(what)
    rc, err = run_main(*args)
    assert rc == 2 and expect in err and err.count('\n') == 1, '%s: rc %d, stderr %r' % (what, rc, err)


def main(out):
    os.makedirs(out, exist_ok=True)
    path = lambda name, ext: os.path.join(out, name + ext)
    torch.manual_seed(20261123)
    g = torch.Generator().manual_seed(7)
    cases = []

    # ---------------------------------------------------- multi-head attention
    mha = torch.nn.MultiheadAttention(16, 4, bias=True, batch_first=True).eval()
    q, k = torch.randn(2, 3, 16, generator=g), torch.randn(2, 5, 16, generator=g)
    v = torch.randn(2, 5, 16, generator=g)
    for name, wt in (('torch_mha', 'f32'), ('torch_mha_int8', 'int8')):
        export_torch.export(mha, name, header=path(name, '.h'), case=path(name, '.case'), example=(q, k, v),
                            valid_lens=[5, 3], weight_type=wt)
        cases.append(name)

    kv = torch.nn.MultiheadAttention(24, 3, bias=False, kdim=10, vdim=12).eval()
    q, k, v = torch.randn(2, 4, 24, generator=g), torch.randn(2, 6, 10, generator=g), torch.randn(2, 6, 12, generator=g)
    export_torch.export(kv, 'torch_kvdim', header=path('torch_kvdim', '.h'), case=path('torch_kvdim', '.case'),
                        example=(q, k, v), valid_lens=[[1, 2, 6, 4], [6, 5, 3, 2]])
    cases.append('torch_kvdim')

    d2l = D2lMultiHeadAttention(12, 8, 6, 20, 5).eval()
    q, k, v = torch.randn(2, 4, 12, generator=g), torch.randn(2, 7, 8, generator=g), torch.randn(2, 7, 6, generator=g)
    for name, wt in (('d2l_mha', 'f32'), ('d2l_mha_fp16', 'fp16')):
        export_torch.export(d2l, name, header=path(name, '.h'), case=path(name, '.case'), example=(q, k, v),
                            valid_lens=[3, 7], weight_type=wt)
        cases.append(name)

    # The command line, from a saved state_dict.
    torch.save(mha.state_dict(), path('torch_mha_state', '.pt'))
    tool = lambda *args: subprocess.run([sys.executable, TOOL] + [str(a) for a in args], capture_output=True,
                                        text=True)
    r = tool(path('torch_mha_state', '.pt'), '--num-heads', '4', '--name', 'state_dict', '--header',
             path('state_dict', '.h'), '--case', path('state_dict', '.case'), '--example', '2,3,5',
             '--valid-lens', '5,2')
    assert r.returncode == 0, r.stderr
    cases.append('state_dict')

    # ---------------------------------------------------- grouped-query attention
    gqa = LlamaStyleAttention(16, 4, 2, qkv_bias=True).eval()
    X = torch.randn(2, 5, 16, generator=g)
    lens = [5, 4]
    with torch.no_grad():
        want_out, want_w = (t.numpy() for t in copy.deepcopy(gqa).double()(X.double(), lens, causal=True))
    for name, wt in (('llama_gqa', 'f32'), ('llama_gqa_int8', 'int8')):
        got = export_torch.export(gqa, name, header=path(name, '.h'), case=path(name, '.case'),
                                  example=(X, X, X), valid_lens=lens, causal=True, weight_type=wt)
        if wt == 'f32':  # the module's own forward pass, float64
            assert_close(got[0], want_out, name + ': against LlamaStyleAttention')
            assert_close(got[1], want_w, name + ': weights against LlamaStyleAttention')
        cases.append(name)
    header = open(path('llama_gqa', '.h')).read()
    assert '#define LLAMA_GQA_NUM_KV_HEADS 2' in header
    assert 'llama_gqa_b_q, llama_gqa_b_k, llama_gqa_b_v, NULL' in header  # no o_proj bias: NULL

    # The same weights in a model's state_dict: --prefix, --num-heads only.
    model = {'model.embed_tokens.weight': torch.randn(11, 16, generator=g),
             'model.layers.0.input_layernorm.weight': torch.ones(16)}
    model.update({'model.layers.0.self_attn.' + k: v for k, v in gqa.state_dict().items()})
    torch.save(model, path('llama_model', '.pt'))
    r = tool(path('llama_model', '.pt'), '--prefix', 'model.layers.0.self_attn', '--num-heads', '4', '--weights',
             'fp16', '--name', 'llama_gqa_fp16', '--header', path('llama_gqa_fp16', '.h'), '--case',
             path('llama_gqa_fp16', '.case'), '--example', '2,3,6', '--causal', '--seed', '3')
    assert r.returncode == 0, r.stderr
    assert '#define LLAMA_GQA_FP16_NUM_KV_HEADS 2' in open(path('llama_gqa_fp16', '.h')).read()
    _, _, tensors = ref.read_case(path('llama_gqa_fp16', '.case'))
    for m, proj in zip(export_torch.MATRICES, ('q_proj', 'k_proj', 'v_proj', 'o_proj')):
        W = getattr(gqa, proj).weight.detach().numpy().astype(np.float16).astype(np.float64)
        assert np.array_equal(tensors[('input', m)][1], W), 'llama_gqa_fp16: ' + m
    assert not tensors[('input', 'b_o')][1].any(), 'llama_gqa_fp16: no o_proj bias is zeros in the case'
    cases.append('llama_gqa_fp16')

    # ---------------------------------------------------- dense layers
    linear = torch.nn.Linear(37, 20).eval()
    x = torch.randn(2, 3, 37, generator=g)
    for name, wt in (('dense', 'f32'), ('dense_int8', 'int8')):
        y = export_torch.export_dense(linear, name, header=path(name, '.h'), case=path(name, '.case'), example=x,
                                      weight_type=wt)
        if wt == 'f32':  # the module itself, float64
            with torch.no_grad():
                assert_close(y, copy.deepcopy(linear).double()(x.double()).reshape(6, 20).numpy(), name)
        cases.append(name)
    torch.save(linear.state_dict(), path('linear_state', '.pt'))
    r = tool(path('linear_state', '.pt'), '--dense', '--weights', 'fp16', '--name', 'dense_fp16', '--header',
             path('dense_fp16', '.h'), '--case', path('dense_fp16', '.case'), '--example', '4')
    assert r.returncode == 0, r.stderr
    cases.append('dense_fp16')
    # The stored matrices against the layer's own weight: binary16 rounding;
    # int8 within half a step of its row's scale.
    W = linear.weight.detach().numpy().astype(np.float64)
    _, _, tensors = ref.read_case(path('dense_fp16', '.case'))
    assert np.array_equal(tensors[('input', 'W')][1], W.astype(np.float16).astype(np.float64)), 'dense_fp16: W'
    _, _, tensors = ref.read_case(path('dense_int8', '.case'))
    q8, scales = tensors[('input', 'W')][1], tensors[('input', 'W_scales')][1]
    assert np.all(np.abs(q8 * scales[:, None] - W) <= scales[:, None] * (0.5 + 1e-6)) and np.abs(q8).max() == 127

    # ---------------------------------------------------- decoder blocks
    # Llama-style, two layers, multi-query (one kv head), no biases: layer 1.
    def llama_layer(i, d=16, H=4, H_kv=1, inter=24):
        att = LlamaStyleAttention(d, H, H_kv).eval()
        layer = {'self_attn.' + k: v for k, v in att.state_dict().items()}
        layer.update({'mlp.gate_proj.weight': torch.randn(inter, d, generator=g) / 4,
                      'mlp.up_proj.weight': torch.randn(inter, d, generator=g) / 4,
                      'mlp.down_proj.weight': torch.randn(d, inter, generator=g) / 5,
                      'input_layernorm.weight': torch.ones(d), 'post_attention_layernorm.weight': torch.ones(d)})
        return {'model.layers.%d.%s' % (i, k): v for k, v in layer.items()}, att
    model = {'model.embed_tokens.weight': torch.randn(11, 16, generator=g), 'model.norm.weight': torch.ones(16),
             'lm_head.weight': torch.randn(11, 16, generator=g)}
    for i in range(2):
        layer, att = llama_layer(i)
        model.update(layer)
    torch.save(model, path('llama_block_model', '.pt'))
    r = tool(path('llama_block_model', '.pt'), '--block', '--layer', '1', '--num-heads', '4', '--name', 'llama_block',
             '--header', path('llama_block', '.h'), '--case', out, '--example', '2,4', '--causal')
    assert r.returncode == 0, r.stderr
    block_cases = ['llama_block_attn'] + ['llama_block_mlp_%s_proj' % n for n in ('gate', 'up', 'down')]
    cases += block_cases
    header = open(path('llama_block', '.h')).read()
    assert 'Not exported' in header and 'input_layernorm.weight (16)' in header
    assert 'LLAMA_BLOCK_ATTN_NUM_KV_HEADS 1' in header
    # The attention against the module loaded with layer 1's tensors.
    _, _, tensors = ref.read_case(path('llama_block_attn', '.case'))
    att.load_state_dict({k[len('model.layers.1.self_attn.'):]: v for k, v in model.items()
                         if k.startswith('model.layers.1.self_attn.')})
    with torch.no_grad():
        want = copy.deepcopy(att).double()(torch.tensor(tensors[('input', 'queries')][1]), causal=True)
    assert_close(tensors[('expect', 'output')][1], want[0].numpy(), 'llama_block: against LlamaStyleAttention')
    # Each dense layer holds layer 1's tensor, not layer 0's.
    for n in ('gate', 'up', 'down'):
        _, _, tensors = ref.read_case(path('llama_block_mlp_%s_proj' % n, '.case'))
        assert np.array_equal(tensors[('input', 'W')][1],
                              model['model.layers.1.mlp.%s_proj.weight' % n].numpy().astype(np.float64)), n

    # GPT-2 in Hugging Face's layout: Conv1D weights (in, out), y = x W + b.
    d, H, T = 16, 4, 4
    c_attn_w, c_attn_b = torch.randn(d, 3 * d, generator=g) / 4, torch.randn(3 * d, generator=g) / 10
    c_proj_w, c_proj_b = torch.randn(d, d, generator=g) / 4, torch.randn(d, generator=g) / 10
    c_fc_w, c_fc_b = torch.randn(d, 4 * d, generator=g) / 4, torch.randn(4 * d, generator=g) / 10
    mlp_proj_w, mlp_proj_b = torch.randn(4 * d, d, generator=g) / 8, torch.randn(d, generator=g) / 10
    gpt2 = {'transformer.wte.weight': torch.randn(11, d, generator=g),
            'transformer.h.0.ln_1.weight': torch.ones(d), 'transformer.h.0.ln_1.bias': torch.zeros(d),
            'transformer.h.0.attn.bias': torch.ones(T, T).tril()[None, None],  # a buffer: not a layer
            'transformer.h.0.attn.c_attn.weight': c_attn_w, 'transformer.h.0.attn.c_attn.bias': c_attn_b,
            'transformer.h.0.attn.c_proj.weight': c_proj_w, 'transformer.h.0.attn.c_proj.bias': c_proj_b,
            'transformer.h.0.mlp.c_fc.weight': c_fc_w, 'transformer.h.0.mlp.c_fc.bias': c_fc_b,
            'transformer.h.0.mlp.c_proj.weight': mlp_proj_w, 'transformer.h.0.mlp.c_proj.bias': mlp_proj_b}
    answers = export_torch.export_block(gpt2, 'gpt2_block', header=path('gpt2_block', '.h'), case_dir=out,
                                        num_heads=H, weight_type='fp16', example=(2, T), causal=True,
                                        dense_names='last', seed=5)
    gpt2_cases = ['gpt2_block_attn', 'gpt2_block_c_fc', 'gpt2_block_c_proj']
    assert sorted(answers) == sorted(gpt2_cases), sorted(answers)
    cases += gpt2_cases
    half = lambda t: torch.tensor(t.numpy().astype(np.float16).astype(np.float64))  # the stored fp16 values
    b64 = lambda t: t.double()
    # GPT-2's attention as GPT-2 computes it: qkv = x W + b split in three, heads, causal.
    _, _, tensors = ref.read_case(path('gpt2_block_attn', '.case'))
    X = torch.tensor(tensors[('input', 'queries')][1])
    qkv = X @ half(c_attn_w) + b64(c_attn_b)
    qh, kh, vh = (t.reshape(2, T, H, d // H).transpose(1, 2) for t in qkv.split(d, dim=2))
    s = (qh @ kh.transpose(2, 3) / math.sqrt(d // H)).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1),
                                                                  float('-inf'))
    a = (torch.softmax(s, -1) @ vh).transpose(1, 2).reshape(2, T, d) @ half(c_proj_w) + b64(c_proj_b)
    assert_close(answers['gpt2_block_attn'][0], a.numpy(), 'gpt2_block: against GPT-2\'s attention')
    for name, Wc, bc in (('gpt2_block_c_fc', c_fc_w, c_fc_b), ('gpt2_block_c_proj', mlp_proj_w, mlp_proj_b)):
        _, _, tensors = ref.read_case(path(name, '.case'))
        xc = torch.tensor(tensors[('input', 'x')][1])
        assert_close(answers[name], (xc @ half(Wc) + b64(bc)).numpy(), name + ': against Conv1D')
    assert 'attn.bias (1, 1, 4, 4)' in open(path('gpt2_block', '.h')).read()

    # ---------------------------------------------------- every case, recomputed
    for name in cases:
        check_case_file(path(name, '.case'))

    # ---------------------------------------------------- refusals
    # A fully masked row (NaN in PyTorch, uniform in edgeattn), heads that do
    # not divide num_hiddens, add_bias_kv (the real command line: exit 2,
    # nothing written).
    r = tool(path('torch_mha_state', '.pt'), '--num-heads', '4', '--name', 'x', '--case', path('never', '.case'),
             '--example', '2,3,5', '--valid-lens', '5,0')
    assert r.returncode == 2 and 'valid length of 0' in r.stderr and not os.path.exists(path('never', '.case')), r
    REFUSALS.append('valid length 0')
    refused('heads', 'does not divide', path('torch_mha_state', '.pt'), '--num-heads', '5', '--name', 'x',
            '--header', path('never', '.h'))
    try:
        export_torch.export(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True), 'x', header=path('never', '.h'))
        raise AssertionError('add_bias_kv exported')
    except export_torch.ExportError as e:
        assert 'add_bias_kv' in str(e)
        REFUSALS.append('add_bias_kv')
    # Grouped-query shapes: H % H_kv != 0; num_kv_heads against the shapes;
    # W_k rows not whole heads; no head count at all.
    odd = {'q_proj.weight': torch.randn(24, 8), 'k_proj.weight': torch.randn(16, 8),
           'v_proj.weight': torch.randn(16, 8), 'o_proj.weight': torch.randn(24, 24)}
    torch.save(odd, path('odd_gqa', '.pt'))
    refused('H % H_kv', 'num_heads % num_kv_heads == 0', path('odd_gqa', '.pt'), '--num-heads', '6', '--name', 'x',
            '--header', path('never', '.h'))
    refused('num_kv_heads', 'num_kv_heads 1 with heads of 4 would give W_k and W_v 4 rows; they have 8',
            path('llama_model', '.pt'), '--prefix', 'model.layers.0.self_attn.', '--num-heads', '4',
            '--num-kv-heads', '1', '--name', 'x', '--header', path('never', '.h'))
    refused('head size', 'not a multiple of the head size 12', path('odd_gqa', '.pt'), '--head-size', '12',
            '--name', 'x', '--header', path('never', '.h'))
    refused('no heads', '--num-heads', path('odd_gqa', '.pt'), '--name', 'x', '--header', path('never', '.h'))
    refused('prefix needed', 'give the prefix of one, e.g. --prefix model.layers.0.self_attn.',
            path('llama_model', '.pt'), '--num-heads', '4', '--name', 'x', '--header', path('never', '.h'))
    # Blocks: a missing tensor, a misshaped one, a layer that is not there.
    broken = dict(model)
    del broken['model.layers.1.mlp.up_proj.weight']
    torch.save(broken, path('broken', '.pt'))
    refused('missing', 'missing tensor model.layers.1.mlp.up_proj.weight (llama style', path('broken', '.pt'),
            '--block', '--layer', '1', '--num-heads', '4', '--name', 'x', '--header', path('never', '.h'))
    broken = dict(model)
    broken['model.layers.1.mlp.down_proj.weight'] = broken['model.layers.1.mlp.down_proj.weight'].T.contiguous()
    torch.save(broken, path('broken', '.pt'))
    refused('misshaped', 'model.layers.1.mlp.down_proj.weight is (24, 16) as (out, in), expected (16, 24)',
            path('broken', '.pt'), '--block', '--layer', '1', '--num-heads', '4', '--name', 'x', '--header',
            path('never', '.h'))
    broken = dict(model)
    del broken['model.layers.1.self_attn.k_proj.weight']
    torch.save(broken, path('broken', '.pt'))
    refused('missing k_proj', 'missing tensor model.layers.1.self_attn.k_proj.weight', path('broken', '.pt'),
            '--block', '--layer', '1', '--num-heads', '4', '--name', 'x', '--header', path('never', '.h'))
    refused('layer', 'layers present: 0, 1', path('llama_block_model', '.pt'), '--block', '--layer', '5',
            '--num-heads', '4', '--name', 'x', '--header', path('never', '.h'))
    # Dense: a prefix with no Linear under it; a file with several.
    refused('dense prefix', 'missing tensor fc2.weight', path('linear_state', '.pt'), '--dense', '--prefix', 'fc2',
            '--name', 'x', '--header', path('never', '.h'))
    refused('which dense', 'which Linear?', path('llama_block_model', '.pt'), '--dense', '--name', 'x',
            '--header', path('never', '.h'))
    assert not os.path.exists(path('never', '.h')), 'a refused export wrote a header'

    # ---------------------------------------------------- --help
    r = tool('--help')
    assert r.returncode == 0 and 'examples:' in r.stdout, r
    for action in export_torch.parser()._actions:
        assert action.help, 'option %s has no help' % action.option_strings
        for opt in action.option_strings:
            assert opt in r.stdout, opt + ' missing from --help'
    print('exported %d cases (%d headers) to %s, each recomputed in float64; %d refusals as expected'
          % (len(cases), len(cases) - len(block_cases) - len(gpt2_cases) + 2, out, len(REFUSALS)))


if __name__ == '__main__':
    main(sys.argv[1])
