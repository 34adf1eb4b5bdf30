#!/usr/bin/python3
"""Export PyTorch attention and linear layers, or a whole Llama-style model, to edgeattn:
a C header and case files.

Four things can be exported, each in fp32, int8 (per-row scales) or fp16:

  a multi-head attention    torch.nn.MultiheadAttention, d2l's MultiHeadAttention
                            (W_q, W_k, W_v, W_o, num_heads), a Llama-style
                            attention (q_proj, k_proj, v_proj, o_proj; grouped-query
                            heads: k_proj and v_proj with num_kv_heads * head_size
                            rows), a GPT-2 attention (c_attn, c_proj), or a
                            state_dict of any of them: ONE `edgeattn_weights`
                            NAME_weights for edgeattn_mha() and the fixed-size
                            edgeattn::MultiHeadAttention<...>, the sizes as macros
                            and NAME_DIMS(batch, queries, keys), the initializer of
                            its edgeattn_attention_dims;
  a dense layer             a torch.nn.Linear or a state_dict's weight / bias pair:
                            `edgeattn_weight_matrix` NAME_W, NAME_b and
                            `edgeattn_dense_dims` NAME_dims for edgeattn_dense();
  a decoder block           the linear layers of one layer of a model's state_dict
                            (Llama-style model.layers.N.self_attn.{q,k,v,o}_proj and
                            mlp.{gate,up,down}_proj, GPT-2's transformer.h.N.attn.c_attn
                            / c_proj and mlp.c_fc / c_proj, or names given): the
                            attention as edgeattn_weights, every other Linear as a
                            dense layer, in one header;
  a whole model             a Llama-style causal LM's state_dict (transformers'
                            LlamaForCausalLM names, --model llama): embeddings,
                            every layer's norms, attention and SwiGLU layers in a
                            NAME_layers[] table, the final norm, the lm_head (or the
                            tied embeddings), the sizes, RMSNorm epsilon and RoPE
                            constants as macros, and the greedy tokens and every
                            step's logits of a float64 reference decode
                            (tools/llama_model.py) for a prompt, attending as a
                            window KV cache of W rows and S sinks holds.

Weights keep torch.nn.Linear's (out, in) layout (Hugging Face's Conv1D, GPT-2,
stores (in, out): it is transposed). With an example the header also holds
the example's input and PyTorch's float64 answer to check a board with, and a
case file holds the same example for edgeattn-conform (tests/golden/FORMAT.md):
`edgeattn-conform CASE OUT; edgeattn-check-result CASE OUT` holds a port to
rel L2 <= 1e-5.

The expected answers are PyTorch's forward pass in float64 on the float32
weights and inputs, as the board sees them (nn.MultiheadAttention and
nn.Linear: the module itself; the other attentions written out in torch ops,
as d2l has it, key/value head j // (H / H_kv) serving query head j). With
int8 or fp16 weights the case's weights are the stored ones and the answer
is the forward pass on the dequantised weights.

What differs from PyTorch: masked keys score -1e6 (d2l), not -inf, so a row
that sees no key is uniform in edgeattn and NaN in PyTorch: the exporter
refuses a valid length of 0 and a causal example with more queries than
keys. add_bias_kv and add_zero_attn have no counterpart and are refused;
rotary position embeddings (Llama) and normalisation layers are not part of
edgeattn_mha / edgeattn_dense (docs/from-pytorch.md): a single attention
or block is exported and checked without RoPE; --model's answer has it,
with the norms, as the KV cache calls' rope option and the caller's code
compute them (examples/llama). Dropout is the identity (the module is
exported in eval mode).

Needs torch >= 1.13 and numpy (Debian: python3-torch). Run with --help for
the options; docs/from-pytorch.md has the whole story.
"""
import argparse
import math
import os
import re
import textwrap
import sys

import numpy as np
import torch

# The golden generators beside this file (tools/golden in the repository,
# share/edgeattn/tools/golden installed): the library's int8 and binary16
# rules and the case-file writer, written once there.
sys.dont_write_bytecode = True  # no __pycache__ beside the tools
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden'))
import make_decoder_golden as case_files  # noqa: E402
import make_reduced_precision_golden as stored_types  # noqa: E402

MATRICES = ('W_q', 'W_k', 'W_v', 'W_o')
BIASES = ('b_q', 'b_k', 'b_v', 'b_o')
WEIGHT_TYPES = {'f32': 0, 'fp16': 1, 'int8': 2}  # edgeattn_dtype
DTYPE_NAMES = {'f32': 'EDGEATTN_DTYPE_F32', 'fp16': 'EDGEATTN_DTYPE_F16', 'int8': 'EDGEATTN_DTYPE_INT8'}

# Decoder-block layouts: where a layer's tensors are, which of them are the
# attention (four separate projections q, k, v, o or a fused qkv and o), and
# the dense layers the style must have, with their (in, out) sizes in terms
# of the model's hidden size d and the feed-forward size i.
STYLES = {
    'llama': dict(layer_prefix='model.layers.{layer}.',
                  detect=r'^(.*?)layers\.(\d+)\.self_attn\.q_proj\.weight$', detect_prefix='{0}layers.{{layer}}.',
                  attention=('self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj', 'self_attn.o_proj'),
                  dense=(('mlp.gate_proj', 'd', 'i'), ('mlp.up_proj', 'd', 'i'), ('mlp.down_proj', 'i', 'd'))),
    'gpt2': dict(layer_prefix='transformer.h.{layer}.',
                 detect=r'^(.*?)h\.(\d+)\.attn\.c_attn\.weight$', detect_prefix='{0}h.{{layer}}.',
                 attention=('attn.c_attn', 'attn.c_proj'),
                 dense=(('mlp.c_fc', 'd', 'i'), ('mlp.c_proj', 'i', 'd'))),
}


class ExportError(Exception):
    pass


# ================================================================ tensors
def _float32(t):
    """A tensor or array as float64 values that are float32 values."""
    return torch.as_tensor(t).detach().to(torch.float32).cpu().numpy().astype(np.float64)


def _strip_wrapper(state):
    """A state_dict without DataParallel's 'module.' in front of every key."""
    if state and all(k.startswith('module.') for k in state):
        return {k[len('module.'):]: v for k, v in state.items()}
    return dict(state)


def _with_dot(prefix):
    return prefix if not prefix or prefix.endswith('.') else prefix + '.'


def _under(state, prefix):
    """The tensors of state whose key starts with prefix, keyed by the rest."""
    prefix = _with_dot(prefix)
    s = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    if not s:
        raise ExportError('no tensor under the prefix %r; keys are like %s' % (prefix, _some_keys(state)))
    return s


def _some_keys(state, n=6):
    keys = sorted(state)
    return ', '.join(keys[:n]) + (', ... (%d keys)' % len(keys) if len(keys) > n else '')


def _shape(t):
    return tuple(torch.as_tensor(t).shape)


def _fmt_shape(shape):
    return '(' + ', '.join(str(s) for s in shape) + ')'


def _check_finite(P, what=''):
    for name, x in P.items():
        if x is not None and not np.all(np.isfinite(x)):
            raise ExportError('%s%s has a non-finite value' % (what, name))


def load_state(path):
    """A state_dict from a torch.save'd file (a state_dict, or a pickled module)."""
    try:
        state = torch.load(path, map_location='cpu')
    except Exception as e:  # torch raises many kinds here
        raise ExportError('%s: not readable by torch.load (%s)' % (path, str(e).split('\n')[0]))
    if isinstance(state, torch.nn.Module):
        state = state.state_dict()
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise ExportError('%s: neither a state_dict nor a module' % path)
    return _strip_wrapper(state)


# ================================================================ attention
def _split_fused(W, b, h, what):
    """A fused qkv projection (h + 2 h_kv, in) into W_q, W_k, W_v (and biases)."""
    rows = W.shape[0]
    if rows < h or (rows - h) % 2:
        raise ExportError('%s has %d rows: a fused q, k, v projection has num_hiddens + 2 * h_kv rows '
                          '(num_hiddens = %d, the size of the output projection)' % (what, rows, h))
    h_kv = (rows - h) // 2
    cuts = (0, h, h + h_kv, rows)
    Ws = [W[cuts[i]:cuts[i + 1]] for i in range(3)]
    bs = [None] * 3 if b is None else [b[cuts[i]:cuts[i + 1]] for i in range(3)]
    return Ws, bs


def _linear_pair(s, key, transposed, what):
    """(weight as (out, in), bias or None) of key.weight / key.bias in s."""
    if key + '.weight' not in s:
        raise ExportError('missing tensor %s%s.weight' % (what, key))
    W = _float32(s[key + '.weight'])
    if W.ndim != 2:
        raise ExportError('%s%s.weight is %s, not a matrix' % (what, key, _fmt_shape(W.shape)))
    if transposed:
        W = np.ascontiguousarray(W.T)
    b = s.get(key + '.bias')
    b = None if b is None else _float32(b)
    if b is not None and b.shape != (W.shape[0],):
        raise ExportError('%s%s.bias is %s, expected (%d) (out_features of %s.weight)'
                          % (what, key, _fmt_shape(b.shape), W.shape[0], key))
    return W, b


def _attention_from_names(s, names, transposed, what=''):
    """P from the projections named q, k, v, o (or a fused qkv and o) in s."""
    P = {}
    if len(names) == 4:
        for m, bname, key in zip(MATRICES, BIASES, names):
            P[m], P[bname] = _linear_pair(s, key, transposed, what)
    elif len(names) == 2:
        W, b = _linear_pair(s, names[0], transposed, what)
        P['W_o'], P['b_o'] = _linear_pair(s, names[1], transposed, what)
        (P['W_q'], P['W_k'], P['W_v']), (P['b_q'], P['b_k'], P['b_v']) = _split_fused(
            W, b, P['W_o'].shape[0], what + names[0] + '.weight')
    else:
        raise ExportError('attention names: four (q, k, v, o projections) or two (fused qkv, o), got %d'
                          % len(names))
    return {k: v for k, v in P.items() if v is not None}


def _gpt2_transposed(s, key):
    """Whether GPT-2's c_attn (and so every Conv1D of the block) is stored (in, out)."""
    shape = _shape(s[key])
    if len(shape) != 2:
        raise ExportError('%s is %s, not a matrix' % (key, _fmt_shape(shape)))
    if shape[1] == 3 * shape[0]:
        return True   # Hugging Face's Conv1D: (in, 3 * in)
    if shape[0] == 3 * shape[1]:
        return False  # nn.Linear (nanoGPT): (3 * in, in)
    raise ExportError('%s is %s: GPT-2 style needs (d, 3d) (Conv1D) or (3d, d) (nn.Linear)'
                      % (key, _fmt_shape(shape)))


def attention_of_state_dict(state, prefix=''):
    """({'W_q', ..., 'b_o' (those present)} as float64 arrays holding float32
    values, kind), kind 'torch' (nn.MultiheadAttention), 'd2l', 'llama' or
    'gpt2', from the keys of state under prefix."""
    s = _under(_strip_wrapper(state), prefix) if prefix else _strip_wrapper(state)
    for unsupported in ('bias_k', 'bias_v'):
        if unsupported in s:
            raise ExportError('add_bias_kv has no counterpart in edgeattn')
    if 'in_proj_weight' in s or 'q_proj_weight' in s:  # nn.MultiheadAttention
        P = {}
        if 'in_proj_weight' in s:
            W = _float32(s['in_proj_weight'])
            E = W.shape[0] // 3
            P['W_q'], P['W_k'], P['W_v'] = (W[i * E:(i + 1) * E] for i in range(3))
        else:  # kdim or vdim differ from embed_dim
            P['W_q'], P['W_k'], P['W_v'] = (_float32(s[n + '_proj_weight']) for n in 'qkv')
        if s.get('in_proj_bias') is not None:
            E = P['W_q'].shape[0]
            b = _float32(s['in_proj_bias'])
            P['b_q'], P['b_k'], P['b_v'] = (b[i * E:(i + 1) * E] for i in range(3))
        if 'out_proj.weight' not in s:
            raise ExportError('missing tensor %sout_proj.weight (nn.MultiheadAttention)' % _with_dot(prefix))
        P['W_o'] = _float32(s['out_proj.weight'])
        if s.get('out_proj.bias') is not None:
            P['b_o'] = _float32(s['out_proj.bias'])
        return P, 'torch'
    if 'W_q.weight' in s:
        return _attention_from_names(s, ('W_q', 'W_k', 'W_v', 'W_o'), False), 'd2l'
    if 'q_proj.weight' in s:
        return _attention_from_names(s, ('q_proj', 'k_proj', 'v_proj', 'o_proj'), False), 'llama'
    if 'c_attn.weight' in s:
        return _attention_from_names(s, ('c_attn', 'c_proj'), _gpt2_transposed(s, 'c_attn.weight')), 'gpt2'
    hint = ''
    for marker in ('q_proj.weight', 'W_q.weight', 'in_proj_weight', 'c_attn.weight'):
        found = sorted(k for k in s if k.endswith('.' + marker))
        if found:
            hint = ' (give the prefix of one, e.g. --prefix %s)' % found[0][:-len(marker)]
            break
    raise ExportError('not a multi-head attention state_dict (no in_proj_weight, q_proj_weight, W_q.weight, '
                      'q_proj.weight or c_attn.weight%s): keys %s' % (hint, _some_keys(s)))


def check_attention(P, num_heads=None, num_kv_heads=None, head_size=None):
    """(num_heads, num_kv_heads) after checking P's shapes against them; the
    ones not given are inferred from the shapes when only one value fits."""
    h = P['W_q'].shape[0]
    h_kv = P['W_k'].shape[0]
    if P['W_o'].shape != (h, h):
        raise ExportError('W_o is %s: edgeattn\'s output projection is (num_hiddens, num_hiddens) = (%d, %d), '
                          'num_hiddens being the rows of W_q' % (_fmt_shape(P['W_o'].shape), h, h))
    if P['W_v'].shape[0] != h_kv:
        raise ExportError('W_k has %d rows, W_v %d: keys and values need the same heads' % (h_kv, P['W_v'].shape[0]))
    if h_kv > h:
        raise ExportError('W_k, W_v have %d rows, more than W_q (%d): num_kv_heads cannot exceed num_heads'
                          % (h_kv, h))
    for given, what in ((num_heads, 'num_heads'), (num_kv_heads, 'num_kv_heads'), (head_size, 'head_size')):
        if given is not None and given < 1:
            raise ExportError('%s must be at least 1, got %d' % (what, given))
    if head_size is None and num_heads is not None:
        if h % num_heads:
            raise ExportError('num_heads %d does not divide num_hiddens %d (the rows of W_q)' % (num_heads, h))
        head_size = h // num_heads
    if head_size is None and num_kv_heads is not None:
        if h_kv % num_kv_heads:
            raise ExportError('num_kv_heads %d does not divide the %d rows of W_k and W_v' % (num_kv_heads, h_kv))
        head_size = h_kv // num_kv_heads
    if head_size is None:
        if h_kv == h:
            raise ExportError('the number of heads is not in a state_dict: give num_heads (--num-heads)')
        raise ExportError('grouped-query weights (W_q %d rows, W_k and W_v %d): give num_heads or num_kv_heads '
                          '(--num-heads, --num-kv-heads)' % (h, h_kv))
    if h % head_size:
        raise ExportError('head size %d does not divide num_hiddens %d (the rows of W_q)' % (head_size, h))
    if h_kv % head_size:
        raise ExportError('W_k and W_v have %d rows, not a multiple of the head size %d (num_hiddens %d / '
                          'num_heads %d): they must have num_kv_heads * head_size rows'
                          % (h_kv, head_size, h, h // head_size))
    H, H_kv = h // head_size, h_kv // head_size
    if num_heads is not None and num_heads != H:
        raise ExportError('num_heads %d does not divide num_hiddens %d into heads of %d'
                          % (num_heads, h, head_size))
    if num_kv_heads is not None and num_kv_heads != H_kv:
        raise ExportError('num_kv_heads %d with heads of %d would give W_k and W_v %d rows; they have %d'
                          % (num_kv_heads, head_size, num_kv_heads * head_size, h_kv))
    if H % H_kv:
        raise ExportError('num_heads %d is not a multiple of num_kv_heads %d: grouped-query attention needs '
                          'num_heads %% num_kv_heads == 0' % (H, H_kv))
    expected = {'b_q': h, 'b_k': h_kv, 'b_v': h_kv, 'b_o': h}
    for b, n in expected.items():
        if b in P and P[b].shape != (n,):
            raise ExportError('%s is %s, expected (%d)' % (b, _fmt_shape(P[b].shape), n))
    _check_finite(P)
    return H, H_kv


def _module_heads(module):
    """(num_heads, num_kv_heads, head_size) a module states, None where it does not."""
    config = getattr(module, 'config', None)

    def first(*names):
        for obj in (module, config):
            for n in names:
                v = getattr(obj, n, None) if obj is not None else None
                if isinstance(v, int) and not isinstance(v, bool):
                    return v
        return None
    return (first('num_heads', 'num_attention_heads', 'n_head'),
            first('num_kv_heads', 'num_key_value_heads', 'n_kv_heads'), first('head_dim', 'head_size'))


def describe(module):
    """(state_dict, (num_heads, num_kv_heads, head_size), what it is) of a supported attention module."""
    if isinstance(module, torch.nn.MultiheadAttention):
        if module.add_zero_attn:
            raise ExportError('add_zero_attn has no counterpart in edgeattn')
        what = ('torch.nn.MultiheadAttention(embed_dim=%d, num_heads=%d, kdim=%d, vdim=%d, bias=%s, '
                'batch_first=%s)' % (module.embed_dim, module.num_heads, module.kdim, module.vdim,
                                     module.in_proj_bias is not None, module.batch_first))
        return module.state_dict(), (module.num_heads, None, None), what
    heads = _module_heads(module)
    if all(hasattr(module, m) for m in MATRICES) and hasattr(module, 'num_heads'):
        return module.state_dict(), heads, '%s (d2l, num_heads=%d)' % (type(module).__name__, module.num_heads)
    if all(hasattr(module, n) for n in ('q_proj', 'k_proj', 'v_proj', 'o_proj')) or \
            all(hasattr(module, n) for n in ('c_attn', 'c_proj')):
        return module.state_dict(), heads, '%s (num_heads=%s, num_kv_heads=%s)' % (
            type(module).__name__, heads[0], heads[1])
    raise ExportError('expected torch.nn.MultiheadAttention, d2l.MultiHeadAttention or an attention with '
                      'q_proj, k_proj, v_proj, o_proj (or c_attn, c_proj), got ' + type(module).__name__)


# ================================================================ stored types
def stored(P, weight_type, names=MATRICES):
    """(what the header and case store per matrix, the exact weights the board computes with)."""
    kept, exact = {}, dict(P)
    for m in names:
        if weight_type == 'int8':  # the library's rule, edgeattn_quantize_int8
            q, scales = stored_types.quantize_int8(P[m])
            kept[m] = ('int8', q, scales)
            exact[m] = q * scales[:, None]
        elif weight_type == 'fp16':
            with np.errstate(over='ignore'):
                fits = np.all(np.isfinite(P[m].astype(np.float16)))
            if not fits:
                raise ExportError(m + ' does not fit binary16 (a value beyond +-65504)')
            half = stored_types.to_fp16(P[m])
            kept[m] = ('fp16', half, None)
            exact[m] = half
        else:
            kept[m] = ('f32', P[m], None)
    return kept, exact


# ================================================================ reference runs
def _visible(B, Q, K, valid_lens, causal):
    """(B, Q, K) bool: the keys each row sees (valid lengths, causal bottom-right)."""
    j = np.arange(K)[None, None, :]
    visible = np.ones((B, Q, K), dtype=bool)
    if valid_lens is not None:
        vl = np.asarray(valid_lens)
        per_row = vl if vl.ndim == 2 else np.repeat(vl[:, None], Q, axis=1)
        visible &= j < per_row[:, :, None]
    if causal:
        visible &= j <= np.arange(Q)[None, :, None] + K - Q
    return visible


def module_answer(kind, P, num_heads, queries, keys, values, valid_lens, num_kv_heads=None, causal=False):
    """The attention's forward pass in float64 on weights P (float64 arrays):
    output (B, Q, h) and attention weights (B, H, Q, K)."""
    t = lambda a: torch.tensor(a, dtype=torch.float64)
    q, k, v = t(queries), t(keys), t(values)
    B, Q, K = q.shape[0], q.shape[1], k.shape[1]
    h = P['W_q'].shape[0]
    H_kv = num_kv_heads or num_heads
    visible = _visible(B, Q, K, valid_lens, causal)
    if kind == 'torch':  # the module itself
        m = torch.nn.MultiheadAttention(h, num_heads, bias='b_q' in P, kdim=k.shape[2], vdim=v.shape[2],
                                        batch_first=True, dtype=torch.float64)
        sd = m.state_dict()
        if 'in_proj_weight' in sd:
            sd['in_proj_weight'] = t(np.concatenate([P['W_q'], P['W_k'], P['W_v']]))
        else:
            for n in 'qkv':
                sd[n + '_proj_weight'] = t(P['W_' + n])
        if 'b_q' in P:
            sd['in_proj_bias'] = t(np.concatenate([P['b_q'], P['b_k'], P['b_v']]))
            sd['out_proj.bias'] = t(P['b_o'])
        sd['out_proj.weight'] = t(P['W_o'])
        m.load_state_dict(sd)
        m.eval()
        mask = None
        if valid_lens is not None or causal:
            mask = torch.tensor(np.repeat(~visible, num_heads, axis=0))  # (B * H, Q, K), True: masked
        with torch.no_grad():
            out, w = m(q, k, v, attn_mask=mask, need_weights=True, average_attn_weights=False)
        return out.numpy(), w.numpy()
    # d2l's MultiHeadAttention with masked scores -1e6 (as edgeattn), key and
    # value head j // (H / H_kv) serving query head j (Llama's repeat_kv);
    # written out here so that the export needs no d2l or transformers package.
    with torch.no_grad():
        def project(x, W, b):
            return torch.nn.functional.linear(x, t(W), None if b is None else t(b))

        def heads_of(X, n):  # (B, L, n * hs) -> (B, n, L, hs)
            return X.reshape(X.shape[0], X.shape[1], n, -1).permute(0, 2, 1, 3)
        Qh = heads_of(project(q, P['W_q'], P.get('b_q')), num_heads)
        Kh = heads_of(project(k, P['W_k'], P.get('b_k')), H_kv).repeat_interleave(num_heads // H_kv, dim=1)
        Vh = heads_of(project(v, P['W_v'], P.get('b_v')), H_kv).repeat_interleave(num_heads // H_kv, dim=1)
        scores = Qh @ Kh.transpose(2, 3) / math.sqrt(Qh.shape[-1])
        scores = torch.where(torch.tensor(visible)[:, None], scores, torch.tensor(-1e6, dtype=torch.float64))
        w = torch.softmax(scores, dim=-1)
        out = project((w @ Vh).permute(0, 2, 1, 3).reshape(B, Q, h), P['W_o'], P.get('b_o'))
        return out.numpy(), w.numpy()


def dense_answer(W, b, x):
    """torch.nn.Linear's forward pass in float64 (the module itself)."""
    m = torch.nn.Linear(W.shape[1], W.shape[0], bias=b is not None, dtype=torch.float64)
    with torch.no_grad():
        m.weight.copy_(torch.tensor(W))
        if b is not None:
            m.bias.copy_(torch.tensor(b))
        return m(torch.tensor(x, dtype=torch.float64)).numpy()


# ================================================================ writing
def _c_float(x):
    s = '%.9g' % x
    if 'e' not in s and '.' not in s and 'n' not in s:
        s += '.0'
    return s + 'f'


def _c_array(ctype, name, values, fmt, comment, per_line=8, sep=', '):
    flat = np.asarray(values).reshape(-1)
    body = [sep.join(fmt(v) for v in flat[i:i + per_line]) for i in range(0, len(flat), per_line)]
    return ('/* %s */\nstatic const %s %s[%d] EDGEATTN_EXPORTED = {\n    %s};\n'
            % (comment, ctype, name, len(flat), ',\n    '.join(body)))


def _c_matrix(array_name, kind, values, scales, what, compact=False):
    """The C arrays of one stored matrix (compact: int8 as 24 a line, no spaces)."""
    shape = _fmt_shape(values.shape)
    if kind == 'int8':
        return [_c_array('int8_t', array_name, values, lambda v: '%d' % v, what + ' ' + shape + ', int8',
                         *((24, ',') if compact else ())),
                _c_array('float', array_name + '_scales', scales, _c_float,
                         what + ' per-row scales (%d): element (o, i) is scales[o] * data[o][i]' % len(scales))]
    if kind == 'fp16':
        bits = values.astype(np.float16).view(np.uint16)
        return [_c_array('uint16_t', array_name, bits, lambda v: '0x%04x' % v,
                         what + ' ' + shape + ', IEEE binary16 bits')]
    return [_c_array('float', array_name, values, _c_float, what + ' ' + shape)]


def _c_matrix_init(array_name, kind):
    return '{%s, %s, %s, EDGEATTN_ARITHMETIC_FLOAT}' % (DTYPE_NAMES[kind], array_name, array_name + '_scales' if kind == 'int8' else 'NULL')


def _comment(text, width=100):
    """A C comment of text, wrapped."""
    lines = textwrap.wrap(text.replace('*/', '* /'), width - 3, break_on_hyphens=False, break_long_words=False)
    return '/* ' + '\n * '.join(lines) + ' */\n'


def _preamble(name, title):
    guard = name.upper() + '_EDGEATTN_H'
    return ['/* %s: %s.\n * Generated by tools/export_torch.py: do not edit. Weights are (out, in), as\n'
            ' * torch.nn.Linear stores them (docs/from-pytorch.md). */\n' % (name, title),
            '#ifndef %s\n#define %s\n\n#include <edgeattn/edgeattn.h>\n#include <stdint.h>\n' % (guard, guard),
            '/* A translation unit may include this and use only part of it. */\n'
            '#ifndef EDGEATTN_EXPORTED\n#if defined(__GNUC__)\n#define EDGEATTN_EXPORTED __attribute__((unused))\n'
            '#else\n#define EDGEATTN_EXPORTED\n#endif\n#endif\n']


def attention_section(name, source, P, kept, num_heads, num_kv_heads, sizes, example, weight_type):
    """The header lines of one attention: sizes, arrays, NAME_weights, the example."""
    N = name.upper()
    q_size, k_size, v_size = sizes
    h = P['W_q'].shape[0]
    h_kv = P['W_k'].shape[0]
    out = [_comment('---- %s: multi-head attention from %s' % (name, source)),
           '#define %s_QUERY_SIZE %d\n#define %s_KEY_SIZE %d\n#define %s_VALUE_SIZE %d\n'
           '#define %s_NUM_HIDDENS %d\n#define %s_NUM_HEADS %d\n#define %s_NUM_KV_HEADS %d\n'
           '#define %s_WEIGHT_TYPE %s\n'
           % (N, q_size, N, k_size, N, v_size, N, h, N, num_heads, N, num_kv_heads, N, DTYPE_NAMES[weight_type]),
           '/* The edgeattn_attention_dims of a call with this attention on `batch` sequences\n'
           ' * of `queries` queries and `keys` keys:\n'
           ' *   const edgeattn_attention_dims dims = %s_DIMS(batch, queries, keys); */\n'
           '#define %s_DIMS(batch, queries, keys) \\\n'
           '    {(size_t)(batch), (size_t)(queries), (size_t)(keys), %d, %d, %d, %d, %d, %d, 0}\n'
           % (N, N, q_size, k_size, v_size, h, num_heads, num_kv_heads)]
    for m in MATRICES:
        kind, values, scales = kept[m]
        out += _c_matrix('%s_%s' % (name, m), kind, values, scales, m)
    for b in BIASES:
        if b in P:
            out.append(_c_array('float', '%s_%s' % (name, b), P[b], _c_float, b + ' (%d)' % P[b].shape[0]))
    bias_refs = ', '.join('%s_%s' % (name, b) if b in P else 'NULL' for b in BIASES)
    users = ('edgeattn_mha(), edgeattn_mha_pack(), the KV cache calls and the fixed-size\n'
             ' * edgeattn::MultiHeadAttention<...>' if num_kv_heads == num_heads else
             'edgeattn_mha(), edgeattn_mha_pack() and the KV cache calls with\n'
             ' * %s_DIMS (grouped-query heads: not the fixed-size MultiHeadAttention<...>)' % N)
    out.append('/* For %s: W_q (%d, %d), W_k (%d, %d), W_v (%d, %d), W_o (%d, %d). */\n'
               'static const edgeattn_weights %s_weights EDGEATTN_EXPORTED = {\n    %s,\n    %s};\n'
               % (users, h, q_size, h_kv, k_size, h_kv, v_size, h, h, name,
                  ',\n    '.join(_c_matrix_init('%s_%s' % (name, m), kept[m][0]) for m in MATRICES), bias_refs))
    if example is not None:
        queries, keys, values, valid_lens, causal, output, weights = example
        B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
        out.append('\n/* An example and PyTorch\'s float64 answer to it: check a port with\n'
                   ' * rel L2 of the output <= 1e-5 (tests/golden/FORMAT.md). */\n'
                   '#define %s_EXAMPLE_BATCH %d\n#define %s_EXAMPLE_QUERIES %d\n#define %s_EXAMPLE_KEYS %d\n'
                   '#define %s_EXAMPLE_CAUSAL %d\n' % (N, B, N, Q, N, K, N, int(bool(causal))))
        out.append('static const edgeattn_attention_dims %s_example_dims EDGEATTN_EXPORTED = %s_DIMS(%d, %d, %d);\n'
                   % (name, N, B, Q, K))
        out.append(_c_array('float', name + '_example_queries', queries, _c_float, 'queries (%d, %d, %d)' % queries.shape))
        out.append(_c_array('float', name + '_example_keys', keys, _c_float, 'keys (%d, %d, %d)' % keys.shape))
        out.append(_c_array('float', name + '_example_values', values, _c_float, 'values (%d, %d, %d)' % values.shape))
        lens = 'NULL'
        if valid_lens is not None:
            vl = np.asarray(valid_lens)
            kind = 'EDGEATTN_VALID_LENS_PER_BATCH' if vl.ndim == 1 else 'EDGEATTN_VALID_LENS_PER_QUERY'
            out.append(_c_array('int32_t', name + '_example_valid_lens', vl, lambda v: '%d' % v,
                                'valid_lens ' + _fmt_shape(vl.shape)))
            lens = name + '_example_valid_lens'
        else:
            kind = 'EDGEATTN_VALID_LENS_NONE'
        out.append('#define %s_EXAMPLE_VALID_LENS_KIND %s\n' % (N, kind))
        out.append('/* The example\'s options: its valid lengths and causal mask. */\n'
                   'static const edgeattn_attention_options %s_example_options EDGEATTN_EXPORTED = {\n'
                   '    {%s, %s},\n'
                   '    {%d, EDGEATTN_KEY_RANGES_NONE, NULL, NULL, 0, 0, 0, 0, EDGEATTN_ALIGN_BOTTOM_RIGHT, 0, 0.0f},\n'
                   '    {NULL, 0, 0, EDGEATTN_ROPE_NEOX, NULL}, 0.0f, 0.0f, EDGEATTN_MASKING_D2L,\n'
                   '    EDGEATTN_WEIGHTS_SOFTMAX, EDGEATTN_DTYPE_F32};\n'
                   % (name, kind, lens, int(bool(causal))))
        out.append(_c_array('double', name + '_example_output', output, repr, 'expected output (%d, %d, %d)' % output.shape))
        out.append(_c_array('double', name + '_example_attention_weights', weights, repr,
                            'expected attention weights (%d, %d, %d, %d)' % weights.shape))
    return out


def dense_section(name, source, W, b, kind, values, scales, example, weight_type):
    """The header lines of one dense layer: NAME_W, NAME_b, NAME_dims, the example."""
    N = name.upper()
    out_f, in_f = W.shape
    out = [_comment('---- %s: dense layer (torch.nn.Linear) from %s' % (name, source)),
           '#define %s_IN_FEATURES %d\n#define %s_OUT_FEATURES %d\n#define %s_HAS_BIAS %d\n'
           '#define %s_WEIGHT_TYPE %s\n' % (N, in_f, N, out_f, N, int(b is not None), N, DTYPE_NAMES[weight_type]),
           '/* The edgeattn_dense_dims of a call on `rows` rows (batch x positions):\n'
           ' *   const edgeattn_dense_dims dims = %s_DIMS(rows); */\n'
           '#define %s_DIMS(rows) {(size_t)(rows), %d, %d}\n' % (N, N, in_f, out_f)]
    out += _c_matrix(name + '_W_data', kind, values, scales, 'W')
    out.append('/* W (%d, %d) for edgeattn_dense(), edgeattn_dense_pack(). */\n'
               'static const edgeattn_weight_matrix %s_W EDGEATTN_EXPORTED = %s;\n'
               % (out_f, in_f, name, _c_matrix_init(name + '_W_data', kind)))
    if b is not None:
        out.append(_c_array('float', name + '_b', b, _c_float, 'b (%d)' % out_f))
    else:
        out.append('/* No bias: edgeattn_dense() takes NULL. */\n'
                   'static const float *const %s_b EDGEATTN_EXPORTED = NULL;\n' % name)
    out.append('/* One row per call (a decode step); for n rows use %s_DIMS(n). */\n'
               'static const edgeattn_dense_dims %s_dims EDGEATTN_EXPORTED = %s_DIMS(1);\n' % (N, name, N))
    if example is not None:
        x, y = example
        out.append('\n/* An example and PyTorch\'s float64 answer to it: check a port with\n'
                   ' * rel L2 of y <= 1e-5 (tests/golden/FORMAT.md). */\n'
                   '#define %s_EXAMPLE_ROWS %d\n'
                   'static const edgeattn_dense_dims %s_example_dims EDGEATTN_EXPORTED = %s_DIMS(%d);\n'
                   % (N, x.shape[0], name, N, x.shape[0]))
        out.append(_c_array('float', name + '_example_x', x, _c_float, 'x (%d, %d)' % x.shape))
        out.append(_c_array('double', name + '_example_y', y, repr, 'expected y (%d, %d)' % y.shape))
    return out


def attention_case_text(P, kept, num_heads, num_kv_heads, queries, keys, values, valid_lens, causal,
                        output, weights, weight_type):
    c = case_files.Case('export', 'multi_head_attention')
    c.param('num_hiddens', P['W_q'].shape[0]).param('num_heads', num_heads)
    if num_kv_heads != num_heads:
        c.param('num_kv_heads', num_kv_heads)
    has_bias = any(b in P for b in BIASES)
    c.param('bias', has_bias)
    if causal:
        c.param('causal', 1)
    if weight_type != 'f32':
        c.param('weight_type', WEIGHT_TYPES[weight_type])
    c.input('queries', queries).input('keys', keys).input('values', values)
    c.optional_input('valid_lens', valid_lens)
    for m in MATRICES:
        _, stored_values, scales = kept[m]
        c.input(m, stored_values).optional_input(m + '_scales', scales)
    if has_bias:  # a case takes all four biases: a missing one adds zeros, as NULL does
        rows = {'b_q': P['W_q'].shape[0], 'b_k': P['W_k'].shape[0], 'b_v': P['W_v'].shape[0],
                'b_o': P['W_o'].shape[0]}
        for b in BIASES:
            c.input(b, P[b] if b in P else np.zeros(rows[b]))
    return c.expect('output', output).expect('attention_weights', weights).text()


def dense_case_text(b, kind, values, scales, x, y):
    c = case_files.Case('export', 'linear')
    if kind != 'f32':
        c.param('weight_type', WEIGHT_TYPES[kind])
    c.input('x', x).input('W', values).optional_input('W_scales', scales).optional_input('b', b)
    return c.expect('y', y).text()


def _write(path, text):
    with open(path, 'w') as f:
        f.write(text)


# ================================================================ preparing
def _check_name(name):
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise ExportError('name %r is not a C identifier' % (name,))


def _check_weight_type(weight_type):
    if weight_type not in WEIGHT_TYPES:
        raise ExportError('weights: f32, int8 or fp16, not %r' % (weight_type,))


def _as_f64(x):
    return np.asarray(torch.as_tensor(x).detach().to(torch.float32).cpu(), dtype=np.float64)


class _Attention:
    """One attention ready to write: weights, heads, stored form, example and answer."""

    def __init__(self, name, P, kind, num_heads, num_kv_heads, head_size, weight_type, source):
        self.name, self.P, self.kind, self.source, self.weight_type = name, P, kind, source, weight_type
        self.H, self.H_kv = check_attention(P, num_heads, num_kv_heads, head_size)
        self.kept, self.exact = stored(P, weight_type)
        self.sizes = (P['W_q'].shape[1], P['W_k'].shape[1], P['W_v'].shape[1])
        self.example = self.answer = None

    def run(self, example, valid_lens, causal):
        queries, keys, values = (_as_f64(x) for x in example)
        if queries.ndim != 3 or keys.ndim != 3 or values.ndim != 3 or keys.shape[:2] != values.shape[:2] \
                or queries.shape[0] != keys.shape[0]:
            raise ExportError('example: queries (B, Q, q), keys (B, K, k), values (B, K, v), batch first')
        if (queries.shape[2], keys.shape[2], values.shape[2]) != self.sizes:
            raise ExportError('example feature sizes %s do not match the weights %s'
                              % ((queries.shape[2], keys.shape[2], values.shape[2]), self.sizes))
        if valid_lens is not None:
            valid_lens = np.asarray(valid_lens, dtype=np.int32)
            expected_shape = (queries.shape[0],) if valid_lens.ndim == 1 else queries.shape[:2]
            if valid_lens.shape != expected_shape:
                raise ExportError('valid_lens must be (B) or (B, Q)')
            if np.any(valid_lens <= 0):
                raise ExportError('a valid length of 0 or less masks every key of a row: NaN in '
                                  'PyTorch, uniform weights in edgeattn (d2l): not exportable')
        if causal and queries.shape[1] > keys.shape[1]:
            raise ExportError('causal with more queries (%d) than keys (%d): the first rows see no key '
                              '(NaN in PyTorch, uniform in edgeattn)' % (queries.shape[1], keys.shape[1]))
        self.answer = module_answer(self.kind, self.exact, self.H, queries, keys, values, valid_lens,
                                    self.H_kv, causal)
        if not (np.all(np.isfinite(self.answer[0])) and np.all(np.isfinite(self.answer[1]))):
            raise ExportError("the module's answer has a non-finite value")
        self.example = (queries, keys, values, valid_lens, bool(causal))
        return self.answer

    def header(self):
        ex = None if self.answer is None else self.example + self.answer
        return attention_section(self.name, self.source, self.P, self.kept, self.H, self.H_kv, self.sizes, ex,
                                 self.weight_type)

    def case(self):
        queries, keys, values, valid_lens, causal = self.example
        return attention_case_text(self.P, self.kept, self.H, self.H_kv, queries, keys, values, valid_lens,
                                   causal, *self.answer, self.weight_type)


class _Dense:
    """One dense layer ready to write."""

    def __init__(self, name, W, b, weight_type, source):
        self.name, self.W, self.b, self.source, self.weight_type = name, W, b, source, weight_type
        _check_finite({'W': W, 'b': b}, name + ': ')
        kept, exact = stored({'W': W}, weight_type, ('W',))
        self.kind, self.values, self.scales = kept['W']
        self.exact = exact['W']
        self.x = self.y = None

    def run(self, x):
        x = _as_f64(x)
        if x.ndim < 1 or x.shape[-1] != self.W.shape[1]:
            raise ExportError('%s: example x (rows, %d), got %s' % (self.name, self.W.shape[1], _fmt_shape(x.shape)))
        self.x = x.reshape(-1, self.W.shape[1])
        self.y = dense_answer(self.exact, self.b, self.x)
        if not np.all(np.isfinite(self.y)):
            raise ExportError("%s: the layer's answer has a non-finite value" % self.name)
        return self.y

    def header(self):
        ex = None if self.y is None else (self.x, self.y)
        return dense_section(self.name, self.source, self.W, self.b, self.kind, self.values, self.scales, ex,
                             self.weight_type)

    def case(self):
        return dense_case_text(self.b, self.kind, self.values, self.scales, self.x, self.y)


# ================================================================ export
def export(module_or_state, name, header=None, case=None, example=None, valid_lens=None,
           num_heads=None, weight_type='f32', source=None, num_kv_heads=None, head_size=None,
           prefix='', causal=False):
    """Writes NAME's header and/or case file for one multi-head attention;
    returns (output, attention_weights) of the example (PyTorch, float64) or None.

    module_or_state: nn.MultiheadAttention, d2l's MultiHeadAttention, an
    attention with q_proj, k_proj, v_proj, o_proj (Llama-style, grouped-query
    heads allowed) or c_attn, c_proj (GPT-2), or a state_dict of any of them;
    prefix selects the attention's keys in a larger state_dict. num_heads,
    num_kv_heads, head_size: what a module does not say (a state_dict says
    none: give one; the others follow from the shapes). example: (queries,
    keys, values) tensors or arrays, batch first (B, Q, q), (B, K, k), (B, K, v).
    valid_lens: None, (B) or (B, Q) integers, none of them 0. causal: query i
    sees keys j <= i + K - Q (edgeattn's causal mask)."""
    _check_name(name)
    _check_weight_type(weight_type)
    if isinstance(module_or_state, dict):
        state, stated, what = module_or_state, (None, None, None), 'a state_dict'
    else:
        state, stated, what = describe(module_or_state)
    if prefix:
        what += ' (%s)' % _with_dot(prefix)
    given = (num_heads, num_kv_heads, head_size)
    heads = [g if g is not None else s for g, s in zip(given, stated)]
    P, kind = attention_of_state_dict(state, prefix)
    att = _Attention(name, P, kind, *heads, weight_type, source or what)
    if example is not None:
        att.run(example, valid_lens, causal)
    elif case is not None:
        raise ExportError('a case file needs an example')
    if header is not None:
        _write(header, '\n'.join(_preamble(name, 'multi-head attention') + att.header() + ['\n#endif\n']))
    if case is not None:
        _write(case, att.case())
    return att.answer


def dense_of_state_dict(state, prefix='', transposed=False):
    """(W (out, in), b or None, the key of W) of one Linear: prefix.weight and
    prefix.bias; without a prefix, the state_dict's only 2-D weight."""
    s = _strip_wrapper(state)
    if prefix:
        key = _with_dot(prefix)[:-1]
    elif 'weight' in s:
        key = ''
    else:
        candidates = sorted(k for k, v in s.items() if k.endswith('.weight') and len(_shape(v)) == 2)
        if len(candidates) != 1:
            raise ExportError('which Linear? %s: give its prefix (--prefix), e.g. %s'
                              % ('%d 2-D weights' % len(candidates) if candidates else 'no 2-D weight',
                                 candidates[0][:-len('.weight')] if candidates else 'fc'))
        key = candidates[0][:-len('.weight')]
    full = lambda n: key + '.' + n if key else n
    if full('weight') not in s:
        near = sorted(k for k in s if k.startswith(key))[:6] if key else []
        raise ExportError('missing tensor %s%s' % (full('weight'), ' (keys under it: %s)' % ', '.join(near)
                                                                       if near else '; keys are like ' + _some_keys(s)))
    W = _float32(s[full('weight')])
    if W.ndim != 2:
        raise ExportError('%s is %s: a Linear\'s weight is (out_features, in_features)'
                          % (full('weight'), _fmt_shape(W.shape)))
    if transposed:
        W = np.ascontiguousarray(W.T)
    b = s.get(full('bias'))
    b = None if b is None else _float32(b)
    if b is not None and b.shape != (W.shape[0],):
        raise ExportError('%s is %s, expected (%d) (out_features)' % (full('bias'), _fmt_shape(b.shape), W.shape[0]))
    return W, b, full('weight')


def export_dense(linear_or_state, name, header=None, case=None, example=None, weight_type='f32',
                 prefix='', transposed=False, source=None):
    """Writes NAME's header and/or case file for one dense layer; returns y
    of the example (PyTorch, float64) or None.

    linear_or_state: a torch.nn.Linear, or a state_dict holding prefix.weight
    (out, in) and optionally prefix.bias (out) (no prefix: its only 2-D
    weight). transposed: the weight is stored (in, out) (Hugging Face's
    Conv1D). example: x (rows, in) (or (..., in), flattened to rows)."""
    _check_name(name)
    _check_weight_type(weight_type)
    if isinstance(linear_or_state, torch.nn.Linear):
        m = linear_or_state
        what = 'torch.nn.Linear(in_features=%d, out_features=%d, bias=%s)' % (m.in_features, m.out_features,
                                                                               m.bias is not None)
        state = m.state_dict()
    elif isinstance(linear_or_state, dict):
        state, what = linear_or_state, 'a state_dict'
    else:
        raise ExportError('expected torch.nn.Linear or a state_dict, got ' + type(linear_or_state).__name__)
    W, b, key = dense_of_state_dict(state, prefix, transposed)
    if key != 'weight':
        what += ' (%s)' % key
    layer = _Dense(name, W, b, weight_type, source or what)
    if example is not None:
        layer.run(example)
    elif case is not None:
        raise ExportError('a case file needs an example')
    if header is not None:
        _write(header, '\n'.join(_preamble(name, 'dense layer') + layer.header() + ['\n#endif\n']))
    if case is not None:
        _write(case, layer.case())
    return layer.y


def _detect_style(state):
    """(style, layer prefix template) from the keys of a model's state_dict."""
    for style, spec in STYLES.items():
        for k in sorted(state):
            m = re.match(spec['detect'], k)
            if m:
                return style, spec['detect_prefix'].format(m.group(1))
    raise ExportError('no known decoder layout (Llama: ...layers.N.self_attn.q_proj.weight; GPT-2: '
                      '...h.N.attn.c_attn.weight): give --style custom with --layer-prefix and --attention; '
                      'keys are like ' + _some_keys(state))


def _layers_present(state, template):
    pattern = '^' + re.escape(template).replace(re.escape('{layer}'), r'(\d+)')
    return sorted({int(m.group(1)) for m in (re.match(pattern, k) for k in state) if m})


def export_block(module_or_state, name, header=None, case_dir=None, layer=0, style='auto', layer_prefix=None,
                 attention=None, num_heads=None, num_kv_heads=None, head_size=None, weight_type='f32',
                 example=None, valid_lens=None, causal=False, attention_name='attn', dense_names='path',
                 transposed=None, seed=0, source=None):
    """Writes one header with the linear layers of decoder layer `layer`:
    NAME_<attention_name>_weights (edgeattn_weights) and, for every other 2-D
    weight under the layer, NAME_<layer name>_W / _b / _dims (edgeattn_dense);
    with case_dir, one case file per op there. Returns {C name: answer}.

    module_or_state: a model's state_dict or the model (num_heads and
    num_kv_heads from its config when it has one). style: 'auto' (from the
    keys), 'llama', 'gpt2' or 'custom' (then layer_prefix and attention are
    needed). layer_prefix: where the layer's tensors are, '{layer}' standing
    for its index (llama: 'model.layers.{layer}.'). attention: the names,
    under the layer, of the q, k, v, o projections (four) or of a fused qkv
    and o (two). dense_names: 'path' (NAME_mlp_gate_proj) or 'last'
    (NAME_gate_proj). transposed: the weights are stored (in, out) (Hugging
    Face's Conv1D; None: found from GPT-2's c_attn, else False). example:
    (B, T) or X (B, T, d): self-attention over X, and B * T random rows (seeded)
    through each dense layer."""
    _check_name(name)
    _check_name(attention_name)
    _check_weight_type(weight_type)
    if dense_names not in ('path', 'last'):
        raise ExportError("dense_names: 'path' or 'last'")
    stated = (None, None, None)
    if isinstance(module_or_state, dict):
        state, what = _strip_wrapper(module_or_state), 'a state_dict'
    elif isinstance(module_or_state, torch.nn.Module):
        state, what = module_or_state.state_dict(), type(module_or_state).__name__
        stated = _module_heads(module_or_state)
    else:
        raise ExportError('expected a state_dict or a torch.nn.Module, got ' + type(module_or_state).__name__)
    heads = [g if g is not None else s for g, s in zip((num_heads, num_kv_heads, head_size), stated)]
    if style == 'auto':
        style, found_prefix = _detect_style(state)
        layer_prefix = layer_prefix or found_prefix
    elif style in STYLES:
        layer_prefix = layer_prefix or STYLES[style]['layer_prefix']
    elif style == 'custom':
        if not layer_prefix or not attention:
            raise ExportError("style 'custom' needs layer_prefix (--layer-prefix) and attention (--attention)")
    else:
        raise ExportError("style: auto, %s or custom, not %r" % (', '.join(STYLES), style))
    spec = STYLES.get(style, {})
    attention = tuple(attention) if attention else spec['attention']
    template = _with_dot(layer_prefix)
    prefix = template.replace('{layer}', str(layer))
    s = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    if not s:
        present = _layers_present(state, template)
        raise ExportError('no tensor under %s (layer %d, %s style)%s' % (
            prefix, layer, style, '; layers present: %s' % ', '.join(map(str, present)) if present
            else '; keys are like ' + _some_keys(state)))
    where = '%s, layer %d (%s): ' % (what if source is None else source, layer, prefix)
    if transposed is None:
        transposed = style == 'gpt2' and _gpt2_transposed(s, attention[0] + '.weight')
    try:
        P = _attention_from_names(s, attention, transposed, prefix)
    except ExportError as e:
        raise ExportError('%s (%s style attention: %s)' % (e, style, ', '.join(attention)))
    try:
        attn = _Attention(name + '_' + attention_name, P, 'llama', *heads, weight_type,
                          where + 'attention ' + ', '.join(attention))
    except ExportError as e:
        raise ExportError('%sattention %s: %s' % (prefix, ', '.join(attention), e))
    d = attn.sizes[0]
    # Every other 2-D weight under the layer is a Linear: a dense layer.
    used = {a + '.weight' for a in attention}
    keys = [k for k in sorted(s) if k.endswith('.weight') and k not in used and len(_shape(s[k])) == 2]
    first = [k + '.weight' for k, _, _ in spec.get('dense', ())]
    keys = [k for k in first if k in keys] + [k for k in keys if k not in first]  # the style's order, then the rest
    # The style's own layers first, in its order: the first binds the
    # feed-forward size the others must agree with.
    sizes = {'d': d}
    for key, in_sym, out_sym in spec.get('dense', ()):
        if key + '.weight' not in s:
            raise ExportError('missing tensor %s%s.weight (%s style: every layer has %s)'
                              % (prefix, key, style, ', '.join(k for k, _, _ in spec['dense'])))
        W, _ = _linear_pair(s, key, transposed, prefix)
        want = tuple(sizes.setdefault(sym, got) for sym, got in ((out_sym, W.shape[0]), (in_sym, W.shape[1])))
        if want != W.shape:
            sym_of = lambda x: 'hidden size d = %d' % d if x == 'd' else 'feed-forward size %d' % sizes['i']
            raise ExportError('%s%s.weight is %s as (out, in), expected (%d, %d) (out: %s, in: %s)%s'
                              % (prefix, key, _fmt_shape(W.shape), want[0], want[1], sym_of(out_sym),
                                 sym_of(in_sym), '; stored (in, out) and transposed' if transposed else ''))
    layers, names = [], {}
    for key in keys:
        rel = key[:-len('.weight')]
        W, b = _linear_pair(s, rel, transposed, prefix)
        short = rel.split('.')[-1] if dense_names == 'last' else rel.replace('.', '_')
        c_name = name + '_' + re.sub(r'\W', '_', short)
        if c_name in names or c_name == attn.name:
            raise ExportError('two layers named %s (%s, %s): use dense_names path (--dense-names path)'
                              % (c_name, names.get(c_name, 'the attention'), rel))
        names[c_name] = rel
        layers.append(_Dense(c_name, W, b, weight_type, where + rel))
    exported = used | set(keys)
    exported |= {k[:-len('.weight')] + '.bias' for k in exported}
    skipped = ['%s %s' % (k, _fmt_shape(_shape(v))) for k, v in sorted(s.items()) if k not in exported]
    answers = {}
    if example is not None:
        if isinstance(example, (tuple, list)) and len(example) == 2 and all(isinstance(n, int) for n in example):
            g = torch.Generator().manual_seed(seed)
            X = torch.randn(example[0], example[1], d, generator=g)
        else:
            X = torch.as_tensor(example)
            g = torch.Generator().manual_seed(seed)
        if X.dim() != 3 or X.shape[2] != d or attn.sizes != (d, d, d):
            raise ExportError('example: X (B, T, %d) for self-attention, or (B, T); the attention takes %s'
                              % (d, attn.sizes))
        answers[attn.name] = attn.run((X, X, X), valid_lens, causal)
        rows = X.shape[0] * X.shape[1]
        for layer_ in layers:
            answers[layer_.name] = layer_.run(torch.randn(rows, layer_.W.shape[1], generator=g))
    elif case_dir is not None:
        raise ExportError('case files need an example')
    if header is not None:
        title = 'the linear layers of decoder layer %d (%s style), %d dense' % (layer, style, len(layers))
        text = _preamble(name, title)
        if skipped:
            text.append(_comment('Not exported (no edgeattn op; e.g. normalisation): %s.' % ', '.join(skipped)))
        text += attn.header()
        for layer_ in layers:
            text += layer_.header()
        _write(header, '\n'.join(text + ['\n#endif\n']))
    if case_dir is not None:
        os.makedirs(case_dir, exist_ok=True)
        _write(os.path.join(case_dir, attn.name + '.case'), attn.case())
        for layer_ in layers:
            _write(os.path.join(case_dir, layer_.name + '.case'), layer_.case())
    return answers


# ================================================================ a whole model
ROPE_LAYOUTS = {'neox': 'EDGEATTN_ROPE_NEOX', 'gptj': 'EDGEATTN_ROPE_GPTJ'}
LLAMA_NORMS = ('input_layernorm', 'post_attention_layernorm')
LLAMA_MLP = ('gate_proj', 'up_proj', 'down_proj')


def _llama_model():
    """tools/llama_model.py, beside this file: the float64 reference model."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import llama_model
    return llama_model


def _vector(s, key, n, what):
    if key not in s:
        raise ExportError('missing tensor %s%s' % (what, key))
    v = _float32(s[key])
    if v.shape != (n,):
        raise ExportError('%s%s is %s, expected (%d)' % (what, key, _fmt_shape(v.shape), n))
    return v


def llama_of_state_dict(state, num_heads=None, num_kv_heads=None, head_size=None):
    """(tensors {state_dict key: float64 array of float32 values}, sizes) of a
    Llama-style causal LM (transformers' LlamaForCausalLM names; Mistral and
    Qwen2 without their attention biases alike). lm_head.weight absent, or
    equal to the embeddings: tied (sizes['tied'])."""
    s = _strip_wrapper(state)
    if 'model.embed_tokens.weight' not in s:
        raise ExportError('missing tensor model.embed_tokens.weight (a Llama-style model\'s state_dict: '
                          'model.embed_tokens, model.layers.N..., model.norm, lm_head); keys are like '
                          + _some_keys(s))
    E = _float32(s['model.embed_tokens.weight'])
    if E.ndim != 2:
        raise ExportError('model.embed_tokens.weight is %s, not (vocab, d)' % _fmt_shape(E.shape))
    V, d = E.shape
    layers = _layers_present(s, 'model.layers.{layer}.')
    if not layers or layers != list(range(len(layers))):
        raise ExportError('layers model.layers.0 .. N-1 expected, found %s' % (layers or 'none'))
    T = {'model.embed_tokens.weight': E, 'model.norm.weight': _vector(s, 'model.norm.weight', d, '')}
    sizes = None
    for n in layers:
        prefix = 'model.layers.%d.' % n
        ls = {k[len(prefix):]: v for k, v in s.items() if k.startswith(prefix)}
        P = _attention_from_names(ls, STYLES['llama']['attention'], False, prefix)
        if any(b in P for b in BIASES):
            raise ExportError('%sself_attn has biases: the reference model (tools/llama_model.py) has none'
                              % prefix)
        if P['W_q'].shape[1] != d or P['W_k'].shape[1] != d or P['W_v'].shape[1] != d:
            raise ExportError('%sself_attn: the projections take the hidden size %d' % (prefix, d))
        if P['W_q'].shape[0] != d:
            raise ExportError('%sself_attn.q_proj has %d rows, not the hidden size %d: edgeattn\'s output '
                              'projection is (num_hiddens, num_hiddens)' % (prefix, P['W_q'].shape[0], d))
        try:
            H, H_kv = check_attention(P, num_heads, num_kv_heads, head_size)
        except ExportError as e:
            raise ExportError('%sself_attn: %s' % (prefix, e))
        for m, key in zip(MATRICES, STYLES['llama']['attention']):
            T[prefix + key + '.weight'] = P[m]
        for norm in LLAMA_NORMS:
            T[prefix + norm + '.weight'] = _vector(ls, norm + '.weight', d, prefix)
        mlp = {}
        for key in LLAMA_MLP:
            W, b = _linear_pair(ls, 'mlp.' + key, False, prefix)
            if b is not None:
                raise ExportError('%smlp.%s has a bias: Llama\'s MLP has none' % (prefix, key))
            mlp[key] = W
        i = mlp['gate_proj'].shape[0]
        for key, want in (('gate_proj', (i, d)), ('up_proj', (i, d)), ('down_proj', (d, i))):
            if mlp[key].shape != want:
                raise ExportError('%smlp.%s.weight is %s as (out, in), expected %s (hidden size %d, '
                                  'feed-forward size %d)' % (prefix, key, _fmt_shape(mlp[key].shape),
                                                             _fmt_shape(want), d, i))
            T[prefix + 'mlp.' + key + '.weight'] = mlp[key]
        these = dict(H=H, H_kv=H_kv, i=i)
        if sizes is not None and these != sizes:
            raise ExportError('%s: heads or feed-forward size %s differ from layer 0\'s %s' % (prefix, these, sizes))
        sizes = these
    tied = 'lm_head.weight' not in s
    if not tied:
        L = _float32(s['lm_head.weight'])
        if L.shape != (V, d):
            raise ExportError('lm_head.weight is %s, expected (%d, %d) (vocab, d)' % (_fmt_shape(L.shape), V, d))
        tied = np.array_equal(L, E)
        if not tied:
            T['lm_head.weight'] = L
    exported = set(T) | {'lm_head.weight'}
    rest = sorted(k for k in s if k not in exported and not k.endswith('rotary_emb.inv_freq'))
    if rest:
        raise ExportError('tensors the Llama-style model does not have: %s' % ', '.join(rest[:6]))
    _check_finite(T)
    sizes.update(V=V, d=d, layers=len(layers), hd=d // sizes['H'], tied=tied)
    return T, sizes


def _model_matrices(sizes):
    """The state_dict keys of every matrix of the model (not the norms)."""
    keys = ['model.embed_tokens.weight']
    for n in range(sizes['layers']):
        keys += ['model.layers.%d.self_attn.%s.weight' % (n, k) for k in ('q_proj', 'k_proj', 'v_proj', 'o_proj')]
        keys += ['model.layers.%d.mlp.%s.weight' % (n, k) for k in LLAMA_MLP]
    return keys + ([] if sizes['tied'] else ['lm_head.weight'])


def model_answer(tensors, sizes, rms_eps, rope_theta, rotary_dims, rope_layout, prompt, steps, window, sinks):
    """Greedy decoding by the float64 reference model (tools/llama_model.py)
    on these weights: (tokens (steps), logits (steps, vocab))."""
    lm = _llama_model()
    config = lm.LlamaConfig(vocab_size=sizes['V'], hidden_size=sizes['d'], intermediate_size=sizes['i'],
                            num_hidden_layers=sizes['layers'], num_attention_heads=sizes['H'],
                            num_key_value_heads=sizes['H_kv'], rms_norm_eps=rms_eps, rope_theta=rope_theta,
                            rotary_dims=rotary_dims, rope_layout=rope_layout, tie_word_embeddings=sizes['tied'])
    model = lm.from_state_dict({k: torch.tensor(v) for k, v in tensors.items()}, config)
    return lm.greedy(model, prompt, steps, window, sinks)


def export_model(module_or_state, name, header, weight_type='f32', num_heads=None, num_kv_heads=None,
                 head_size=None, rms_eps=1e-6, rope_theta=10000.0, rotary_dims=None, rope_layout='neox',
                 prompt=None, steps=0, window=0, sinks=0, source=None):
    """Writes one header with a whole Llama-style causal LM: the sizes and
    RoPE constants as macros, the embeddings, every layer's norms, attention
    (edgeattn_weights) and SwiGLU dense layers in a NAME_layers[] table, the
    final norm and the lm_head; with prompt and steps > 0, the prompt, the
    greedy tokens and every step's logits of the float64 reference
    (tools/llama_model.py) on the stored weights, each token attending as a
    window KV cache of `window` rows and `sinks` sinks holds (window 0:
    everything). Returns {'tokens', 'logits', 'margin' (the smallest gap
    between a step's two largest logits)} or None without an example.

    module_or_state: a state_dict with transformers' LlamaForCausalLM names,
    or a module holding one (tools/llama_model.LlamaForCausalLM: its config
    gives the heads, eps and RoPE). Every matrix, the embeddings too (a
    lookup reads its row; tied, the lm_head is the same matrix), is stored as
    weight_type; norm weights fp32."""
    _check_name(name)
    _check_weight_type(weight_type)
    if isinstance(module_or_state, torch.nn.Module):
        state, what = module_or_state.state_dict(), type(module_or_state).__name__
        stated = _module_heads(module_or_state)
        config = getattr(module_or_state, 'config', None)
        num_heads, num_kv_heads, head_size = (g if g is not None else v for g, v in
                                              zip((num_heads, num_kv_heads, head_size), stated))
        if config is not None:
            rms_eps = getattr(config, 'rms_norm_eps', rms_eps)
            rope_theta = getattr(config, 'rope_theta', rope_theta)
            rotary_dims = rotary_dims or getattr(config, 'rotary_dims', None)
            rope_layout = getattr(config, 'rope_layout', rope_layout)
    elif isinstance(module_or_state, dict):
        state, what = module_or_state, 'a state_dict'
    else:
        raise ExportError('expected a state_dict or a torch.nn.Module, got ' + type(module_or_state).__name__)
    if rope_layout not in ROPE_LAYOUTS:
        raise ExportError('rope layout: neox or gptj, not %r' % (rope_layout,))
    if not (rms_eps > 0 and math.isfinite(rms_eps)) or not (rope_theta > 0 and math.isfinite(rope_theta)):
        raise ExportError('rms_eps and rope_theta must be finite and > 0')
    T, sizes = llama_of_state_dict(state, num_heads, num_kv_heads, head_size)
    hd = sizes['hd']
    rotary_dims = rotary_dims or hd
    if rotary_dims % 2 or not 2 <= rotary_dims <= hd:
        raise ExportError('rotary dims %d: even, 2 .. the head size %d' % (rotary_dims, hd))
    keys = _model_matrices(sizes)
    kept, exact = stored({k: T[k] for k in keys}, weight_type, keys)
    exact.update({k: v for k, v in T.items() if k not in exact})
    answer = None
    if steps:
        prompt = [int(t) for t in (prompt or [])]
        if not prompt or min(prompt) < 0 or max(prompt) >= sizes['V']:
            raise ExportError('the prompt: one or more token ids in 0 .. %d' % (sizes['V'] - 1))
        if window < 0 or sinks < 0 or (sinks and not window):
            raise ExportError('window >= 0, sinks >= 0, and sinks only with a window')
        if window and len(prompt) > window:
            raise ExportError('a prompt of %d tokens is longer than the window %d: a window cache prefills '
                              'at most W tokens in one step' % (len(prompt), window))
        tokens, logits = model_answer(exact, sizes, rms_eps, rope_theta, rotary_dims, rope_layout, prompt,
                                      steps, window, sinks)
        if not np.all(np.isfinite(logits)):
            raise ExportError("the model's logits have a non-finite value")
        top2 = np.sort(logits, axis=1)[:, -2:]
        answer = dict(tokens=tokens, logits=logits, margin=float((top2[:, 1] - top2[:, 0]).min()))
    elif prompt:
        raise ExportError('a prompt needs steps (--steps)')
    text = _preamble(name, 'a Llama-style causal LM, %d layers' % sizes['layers'])
    text += model_section(name, source or what, T, sizes, kept, weight_type, rms_eps, rope_theta, rotary_dims,
                          rope_layout, prompt, answer, window, sinks)
    _write(header, '\n'.join(text + ['\n#endif\n']))
    return answer


def model_section(name, source, T, sizes, kept, weight_type, rms_eps, rope_theta, rotary_dims, rope_layout,
                  prompt, answer, window, sinks):
    N = name.upper()
    d, V, i, L, H, H_kv, hd = (sizes[k] for k in ('d', 'V', 'i', 'layers', 'H', 'H_kv', 'hd'))
    weight_bytes = 0
    out = [_comment('---- %s: a Llama-style causal LM from %s: %d layers, hidden size %d, %d query heads and %d '
                    'key/value heads of %d, SwiGLU feed-forward size %d, vocabulary %d%s; %s weights'
                    % (name, source, L, d, H, H_kv, hd, i, V, ', lm_head tied to the embeddings' if sizes['tied']
                       else '', weight_type)),
           '#define %s_VOCAB %d\n#define %s_HIDDEN %d\n#define %s_FFN %d\n#define %s_LAYERS %d\n'
           '#define %s_NUM_HEADS %d\n#define %s_NUM_KV_HEADS %d\n#define %s_HEAD_SIZE %d\n'
           '#define %s_WEIGHT_TYPE %s\n#define %s_TIED %d\n'
           % (N, V, N, d, N, i, N, L, N, H, N, H_kv, N, hd, N, DTYPE_NAMES[weight_type], N, int(sizes['tied'])),
           '/* RMSNorm: x / sqrt(mean(x^2) + eps) * weight */\n#define %s_RMS_EPS %sf\n' % (N, repr(float(rms_eps))),
           '/* RoPE (edgeattn_rope_table_config, edgeattn_rope): theta^(-2i / rotary_dims),\n'
           ' * the first rotary_dims features of each head, pairs as the layout says */\n'
           '#define %s_ROPE_THETA %s\n#define %s_ROTARY_DIMS %d\n#define %s_ROPE_LAYOUT %s\n'
           % (N, repr(float(rope_theta)), N, rotary_dims, N, ROPE_LAYOUTS[rope_layout]),
           '/* The edgeattn_attention_dims of the attention of every layer (self-attention on\n'
           ' * the hidden states; a KV cache call: keys = the cache\'s capacity):\n'
           ' *   const edgeattn_attention_dims dims = %s_DIMS(batch, queries, keys); */\n'
           '#define %s_DIMS(batch, queries, keys) \\\n'
           '    {(size_t)(batch), (size_t)(queries), (size_t)(keys), %d, %d, %d, %d, %d, %d, 0}\n'
           % (N, N, d, d, d, d, H, H_kv)]

    def matrix(key, c_name, what):
        nonlocal weight_bytes
        kind, values, scales = kept[key]
        weight_bytes += values.size * {'f32': 4, 'fp16': 2, 'int8': 1}[kind]
        weight_bytes += 0 if scales is None else 4 * scales.size
        out.extend(_c_matrix(c_name, kind, values, scales, what + ' (' + key + ')', compact=True))
        return _c_matrix_init(c_name, kind)

    def vector(key, c_name, what):
        nonlocal weight_bytes
        weight_bytes += 4 * T[key].size
        out.append(_c_array('float', c_name, T[key], _c_float, what + ' (' + key + ')'))
        return c_name

    embed = matrix('model.embed_tokens.weight', name + '_embed_data', 'token embeddings, one row per token')
    rows = []
    for n in range(L):
        p = 'model.layers.%d.' % n
        c = '%s_layer%d_' % (name, n)
        in_norm = vector(p + 'input_layernorm.weight', c + 'input_norm', 'RMSNorm weight before the attention')
        attn = [matrix(p + 'self_attn.%s.weight' % k, c + m, m)
                for k, m in zip(('q_proj', 'k_proj', 'v_proj', 'o_proj'), MATRICES)]
        post_norm = vector(p + 'post_attention_layernorm.weight', c + 'post_norm', 'RMSNorm weight before the MLP')
        mlp = [matrix(p + 'mlp.%s.weight' % k, c + k, k) for k in LLAMA_MLP]
        rows.append('    {%s,\n     {%s,\n      NULL, NULL, NULL, NULL},\n     %s,\n     %s}'
                    % (in_norm, ',\n      '.join(attn), post_norm, ',\n     '.join(mlp)))
    vector('model.norm.weight', name + '_norm', 'final RMSNorm weight')
    lm_head = embed if sizes['tied'] else matrix('lm_head.weight', name + '_lm_head_data', 'lm_head')
    out.append('/* One decoder layer: x += attention(rmsnorm(x) * input_norm); x += down(silu(gate(h)) * up(h))\n'
               ' * with h = rmsnorm(x) * post_norm. */\n'
               'typedef struct %s_layer {\n'
               '    const float *input_norm;          /* (%d) */\n'
               '    edgeattn_weights attention;       /* W_q (%d, %d), W_k, W_v (%d, %d), W_o (%d, %d); no biases */\n'
               '    const float *post_norm;           /* (%d) */\n'
               '    edgeattn_weight_matrix gate, up;  /* (%d, %d) */\n'
               '    edgeattn_weight_matrix down;      /* (%d, %d) */\n'
               '} %s_layer;\n' % (name, d, d, d, H_kv * hd, d, d, d, d, i, d, d, i, name))
    out.append('static const %s_layer %s_layers[%d] EDGEATTN_EXPORTED = {\n%s};\n'
               % (name, name, L, ',\n'.join(rows)))
    out.append('/* The embeddings (%d, %d): token t\'s vector is row t (int8: times scales[t]). */\n'
               'static const edgeattn_weight_matrix %s_embed EDGEATTN_EXPORTED = %s;\n' % (V, d, name, embed))
    out.append('/* logits = rmsnorm(x) * norm, times lm_head (%d, %d)^T (edgeattn_dense)%s. */\n'
               'static const edgeattn_weight_matrix %s_lm_head EDGEATTN_EXPORTED = %s;\n'
               % (V, d, ': the embeddings, tied' if sizes['tied'] else '', name, lm_head))
    out.append('/* Bytes of the arrays above (flash): every matrix, scale and norm weight. */\n'
               '#define %s_WEIGHT_BYTES %d\n' % (N, weight_bytes))
    if answer is not None:
        S = len(prompt)
        steps = len(answer['tokens'])
        scale = float(np.abs(answer['logits']).max())
        out.append(_comment(
            'Greedy decoding by the float64 reference (tools/llama_model.py) on the weights above as stored '
            '(int8, fp16: dequantised): the prompt, then %d tokens. Logits row 0 is the prompt\'s last '
            'position\'s, row k that of token k - 1 fed back at position PROMPT_TOKENS + k - 1. %s'
            'The smallest gap between a row\'s two largest logits is %.3g; the largest |logit| %.4g.'
            % (steps, 'Each token attends as a window KV cache holds: the first SINKS tokens and the last WINDOW '
                      '(edgeattn_kv_cache_config.window, .sinks). ' if window else 'Each token attends to every '
                      'token before it (WINDOW 0: a cache of MAX_POSITIONS rows). ',
               answer['margin'], scale)))
        out.append('#define %s_WINDOW %d\n#define %s_SINKS %d\n#define %s_PROMPT_TOKENS %d\n#define %s_STEPS %d\n'
                   '/* positions 0 .. MAX_POSITIONS - 1 are fed (the last token is not) */\n'
                   '#define %s_MAX_POSITIONS %d\n#define %s_LOGIT_SCALE %s\n'
                   % (N, window, N, sinks, N, S, N, steps, N, S + steps - 1, N, repr(scale)))
        out.append(_c_array('int32_t', name + '_prompt', np.array(prompt), lambda v: '%d' % v,
                            'the prompt (%d)' % S, per_line=16))
        out.append(_c_array('int32_t', name + '_expected_tokens', answer['tokens'], lambda v: '%d' % v,
                            'the greedy tokens (%d)' % steps, per_line=16))
        out.append(_c_array('float', name + '_expected_logits', answer['logits'].astype(np.float32), _c_float,
                            'the logits of each step (%d, %d), float64 rounded to float' % (steps, V)))
    return out


# ================================================================ command line
EXAMPLES = """examples:
  # nn.MultiheadAttention / d2l's MultiHeadAttention saved with torch.save(m.state_dict(), 'mha.pt'):
  export_torch.py mha.pt --num-heads 4 --name block --header block.h \\
      --case block.case --example 2,3,5 --valid-lens 5,3

  # a grouped-query Llama attention from a model's state_dict, int8 weights
  # (num_kv_heads follows from k_proj's rows):
  export_torch.py llama.pt --prefix model.layers.0.self_attn --num-heads 32 \\
      --weights int8 --name attn0 --header attn0.h

  # one nn.Linear (torch.save(linear.state_dict(), 'fc.pt')), fp16:
  export_torch.py fc.pt --dense --weights fp16 --name fc --header fc.h --case fc.case --example 8

  # every linear layer of decoder layer 3 (Llama or GPT-2 names, found from the keys):
  export_torch.py model.pt --block --layer 3 --num-heads 32 --num-kv-heads 8 \\
      --name layer3 --header layer3.h --case cases/ --example 1,16 --causal

  # a whole Llama-style model, int8, with the float64 reference's greedy decode
  # of 24 tokens through a window cache of 2 sinks + 8 rows (examples/llama):
  export_torch.py model.pt --model llama --num-heads 4 --rms-eps 1e-5 --weights int8 \\
      --name llama --header llama.h --prompt 5,17,42,8,71,33 --steps 24 --window 8 --sinks 2

Exit status: 0 written; 2 refused (one line on stderr saying why, nothing
written); 1 a file could not be written. More: docs/from-pytorch.md."""


def _ints(text, what):
    try:
        return [int(x) for x in text.split(',')]
    except ValueError:
        raise ExportError('%s: comma-separated integers, not %r' % (what, text))


def parser():
    p = argparse.ArgumentParser(
        prog='export_torch.py', formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES,
        description='Export a PyTorch multi-head attention (nn.MultiheadAttention, d2l, Llama-style '
                    'grouped-query, GPT-2), one nn.Linear, the linear layers of a decoder block, or a whole '
                    'Llama-style model from a saved state_dict to a C header of const weights for edgeattn '
                    '(edgeattn_weights, edgeattn_weight_matrix + edgeattn_dense_dims), and optionally case '
                    'files for edgeattn-conform.')
    p.add_argument('state_dict', metavar='STATE_DICT',
                   help="file written by torch.save(): a module's state_dict (or a whole module)")
    what = p.add_argument_group('what to export (default: one multi-head attention)')
    mode = what.add_mutually_exclusive_group()
    mode.add_argument('--dense', action='store_true',
                      help='one nn.Linear: PREFIX.weight (out, in) and PREFIX.bias (out, if present); without '
                           '--prefix the file\'s only 2-D weight (e.g. a saved nn.Linear state_dict)')
    mode.add_argument('--block', action='store_true',
                      help='the linear layers of one decoder layer: the attention projections as '
                           'edgeattn_weights NAME_ATTN_weights, every other 2-D weight under the layer as a '
                           'dense layer NAME_<layer>_W (see --layer, --style)')
    mode.add_argument('--model', choices=('llama',),
                      help='a whole causal LM, llama: a Llama-style state_dict with transformers\' '
                           'LlamaForCausalLM names (model.embed_tokens, model.layers.N.{input_layernorm, '
                           'self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj}, '
                           'model.norm, lm_head or tied): sizes and RoPE as macros, every layer in '
                           'NAME_layers[], and with --steps the float64 reference\'s greedy tokens and logits '
                           '(see the whole-model options)')
    what.add_argument('--prefix', default='', metavar='PREFIX',
                      help='the keys of the attention or the dense layer start with PREFIX (e.g. '
                           'model.layers.0.self_attn or model.layers.0.mlp.down_proj); a trailing dot is '
                           'added. Default: the whole file')
    what.add_argument('--transposed', action='store_true',
                   help='--dense, --block: the weights are stored (in, out), as Hugging Face\'s Conv1D '
                        '(GPT-2); they are transposed to (out, in). --style gpt2 finds this itself')
    out = p.add_argument_group('output')
    out.add_argument('--name', required=True,
                     help='C identifier every name in the header starts with (NAME_weights, NAME_W, ...); '
                          'macros use it in upper case')
    out.add_argument('--header', metavar='FILE', help='C header to write')
    out.add_argument('--case', metavar='FILE',
                     help='case file to write for edgeattn-conform (needs --example); with --block a directory '
                          'that gets one case file per op, NAME_ATTN.case and NAME_<layer>.case')
    out.add_argument('--weights', default='f32', choices=('f32', 'int8', 'fp16'),
                     help='how every weight matrix is stored: f32; int8, symmetric with one float scale per '
                          'row (output channel), the library\'s rule; fp16, IEEE binary16 bits in uint16_t. '
                          'Biases stay f32. Default: f32')
    heads = p.add_argument_group('attention heads (the attention and --block; a state_dict does not hold '
                                 'them: give one, the others follow from the shapes)')
    heads.add_argument('--num-heads', type=int, metavar='H',
                       help='query heads H (W_q has num_hiddens = H * head_size rows)')
    heads.add_argument('--num-kv-heads', type=int, metavar='H_KV',
                       help='key/value heads of grouped-query attention (W_k, W_v have H_KV * head_size rows; '
                            'H %% H_KV == 0; 1 is multi-query). Default: from the rows of W_k')
    heads.add_argument('--head-size', type=int, metavar='D',
                       help='features per head (head_dim): gives H and H_KV from the shapes')
    ex = p.add_argument_group('example (a seeded random input and PyTorch\'s float64 answer, in the header '
                              'and the case file)')
    ex.add_argument('--example', metavar='SHAPE',
                    help='attention: B,Q,K (queries (B,Q,q), keys (B,K,k), values (B,K,v)); --dense: ROWS; '
                         '--block: B,T (self-attention over X (B,T,d), and B*T rows through each dense layer)')
    ex.add_argument('--valid-lens', metavar='LENS',
                    help='valid lengths of the attention example, comma-separated, one per batch element, '
                         'each >= 1 (d2l\'s valid_lens)')
    ex.add_argument('--causal', action='store_true',
                    help='the attention example is causal: query i sees keys j <= i + K - Q')
    ex.add_argument('--seed', type=int, default=0, help='seed of the example (default 0)')
    blk = p.add_argument_group('decoder block (--block)')
    blk.add_argument('--layer', type=int, default=0, metavar='N', help='which layer (default 0)')
    blk.add_argument('--style', default='auto', choices=('auto', 'llama', 'gpt2', 'custom'),
                     help='the names of the layer\'s tensors: llama (model.layers.N.self_attn.{q,k,v,o}_proj, '
                          'mlp.{gate,up,down}_proj; Mistral, Qwen2 alike), gpt2 (transformer.h.N.attn.c_attn, '
                          'attn.c_proj, mlp.c_fc, mlp.c_proj; Conv1D (in, out) or nn.Linear, found from the '
                          'shapes), custom (--layer-prefix and --attention), auto (llama or gpt2 from the '
                          'keys; the default)')
    blk.add_argument('--layer-prefix', metavar='TEMPLATE',
                     help='where a layer\'s tensors are, {layer} standing for N (default per style: '
                          'model.layers.{layer}. or transformer.h.{layer}.)')
    blk.add_argument('--attention', metavar='NAMES',
                     help='the attention\'s Linear layers under the layer prefix: q,k,v,o (four, e.g. '
                          'attn.wq,attn.wk,attn.wv,attn.wo) or a fused qkv and o (two, e.g. '
                          'self_attn.qkv_proj,self_attn.o_proj; its rows q, then k, then v)')
    blk.add_argument('--attention-name', default='attn', metavar='ATTN',
                     help='the attention\'s names in the header are NAME_ATTN_... (default attn)')
    blk.add_argument('--dense-names', default='path', choices=('path', 'last'),
                     help='a dense layer\'s names: path, its key under the layer with _ for . '
                          '(NAME_mlp_gate_proj_W; the default), or last, its last part (NAME_gate_proj_W)')
    mdl = p.add_argument_group('whole model (--model llama; --num-heads or --head-size as for the attention)')
    mdl.add_argument('--rms-eps', type=float, default=1e-6, metavar='EPS',
                     help='RMSNorm\'s epsilon (rms_norm_eps; default 1e-6, transformers\' LlamaConfig; Llama 2 '
                          'uses 1e-5)')
    mdl.add_argument('--rope-theta', type=float, default=10000.0, metavar='THETA',
                     help='RoPE base theta (rope_theta; default 10000; Llama 3 500000)')
    mdl.add_argument('--rotary-dims', type=int, metavar='R',
                     help='rotated features per head (even; default the head size: partial rotary below it)')
    mdl.add_argument('--rope-layout', default='neox', choices=sorted(ROPE_LAYOUTS),
                     help='which features pair up: neox (rotate_half, transformers\' Llama; the default) or gptj '
                          '(interleaved)')
    mdl.add_argument('--prompt', metavar='TOKENS',
                     help='token ids of the prompt, comma-separated (needs --steps)')
    mdl.add_argument('--steps', type=int, default=0, metavar='N',
                     help='greedy tokens the reference decodes after the prompt, written with every step\'s '
                          'logits as the expected answer (default 0: none)')
    mdl.add_argument('--window', type=int, default=0, metavar='W',
                     help='the reference attends as a window KV cache of W rows holds (each token sees the '
                          'sinks and the last W tokens, keys rotated at their absolute positions); 0: every '
                          'token (default). The prompt must fit in W')
    mdl.add_argument('--sinks', type=int, default=0, metavar='S',
                     help='with --window: the first S tokens stay visible for ever (attention sinks; default 0)')
    return p


def main(argv):
    a = parser().parse_args(argv[1:])
    try:
        if a.header is None and a.case is None:
            raise ExportError('nothing to write: give --header and/or --case')
        if a.case is not None and not a.example:
            raise ExportError('a case file needs an example (--example)')
        state = load_state(a.state_dict)
        source = os.path.basename(a.state_dict) + (' (%s)' % _with_dot(a.prefix) if a.prefix else '')
        valid_lens = _ints(a.valid_lens, '--valid-lens') if a.valid_lens else None
        g = torch.Generator().manual_seed(a.seed)
        if a.model:
            if a.header is None or a.case is not None or a.example or a.valid_lens or a.causal:
                raise ExportError('--model writes a header (--header) and takes --prompt and --steps, not '
                                  '--case, --example, --valid-lens or --causal')
            if a.steps < 0 or a.window < 0 or a.sinks < 0:
                raise ExportError('--steps, --window and --sinks are >= 0')
            prompt = _ints(a.prompt, '--prompt') if a.prompt else None
            answer = export_model(state, a.name, a.header, weight_type=a.weights, num_heads=a.num_heads,
                                  num_kv_heads=a.num_kv_heads, head_size=a.head_size, rms_eps=a.rms_eps,
                                  rope_theta=a.rope_theta, rotary_dims=a.rotary_dims, rope_layout=a.rope_layout,
                                  prompt=prompt, steps=a.steps, window=a.window, sinks=a.sinks, source=source)
            if answer is not None:
                print('%s: greedy tokens %s; smallest top-2 logit gap %.3g'
                      % (a.header, ','.join(map(str, answer['tokens'])), answer['margin']))
        elif a.dense:
            if a.valid_lens or a.causal:
                raise ExportError('--valid-lens and --causal belong to an attention example')
            example = None
            if a.example:
                rows = _ints(a.example, '--example')
                if len(rows) != 1 or rows[0] < 1:
                    raise ExportError('--dense --example: ROWS, one integer >= 1')
                W, _, _ = dense_of_state_dict(state, a.prefix, a.transposed)
                example = torch.randn(rows[0], W.shape[1], generator=g)
            export_dense(state, a.name, header=a.header, case=a.case, example=example, weight_type=a.weights,
                         prefix=a.prefix, transposed=a.transposed, source=source)
        elif a.block:
            example = None
            if a.example:
                shape = _ints(a.example, '--example')
                if len(shape) != 2 or min(shape) < 1:
                    raise ExportError('--block --example: B,T')
                example = tuple(shape)
            export_block(state, a.name, header=a.header, case_dir=a.case, layer=a.layer, style=a.style,
                         layer_prefix=a.layer_prefix,
                         attention=a.attention.split(',') if a.attention else None,
                         num_heads=a.num_heads, num_kv_heads=a.num_kv_heads, head_size=a.head_size,
                         weight_type=a.weights, example=example, valid_lens=valid_lens, causal=a.causal,
                         attention_name=a.attention_name, dense_names=a.dense_names,
                         transposed=True if a.transposed else None, seed=a.seed,
                         source=os.path.basename(a.state_dict))
        else:
            if a.num_heads is None and a.num_kv_heads is None and a.head_size is None:
                raise ExportError('the attention needs --num-heads (or --num-kv-heads or --head-size)')
            if a.transposed:
                raise ExportError('--transposed belongs to --dense and --block')
            example = None
            if a.example:
                shape = _ints(a.example, '--example')
                if len(shape) != 3 or min(shape) < 1:
                    raise ExportError('--example: B,Q,K')
                B, Q, K = shape
                P, _ = attention_of_state_dict(state, a.prefix)
                example = (torch.randn(B, Q, P['W_q'].shape[1], generator=g),
                           torch.randn(B, K, P['W_k'].shape[1], generator=g),
                           torch.randn(B, K, P['W_v'].shape[1], generator=g))
            export(state, a.name, header=a.header, case=a.case, example=example, valid_lens=valid_lens,
                   num_heads=a.num_heads, num_kv_heads=a.num_kv_heads, head_size=a.head_size,
                   weight_type=a.weights, source=source, prefix=a.prefix, causal=a.causal)
    except ExportError as e:
        print('export_torch.py: ' + str(e), file=sys.stderr)
        return 2
    except OSError as e:
        print('export_torch.py: cannot write: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
