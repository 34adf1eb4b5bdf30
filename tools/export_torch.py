#!/usr/bin/python3
"""Export a PyTorch multi-head attention to edgeattn: a C header and a case file.

From a torch.nn.MultiheadAttention, d2l's MultiHeadAttention (attributes
W_q, W_k, W_v, W_o and num_heads), or a state_dict of either, it writes

  a C header   the weights as `const` arrays (in flash on a microcontroller),
               in edgeattn's layout, torch.nn.Linear's (out, in): fp32, or
               int8 with per-row scales / fp16 (--weights), the dimensions
               as macros, and an edgeattn_mha_weights (or _typed_weights)
               ready for edgeattn_multi_head_attention() or the fixed-size
               edgeattn::MultiHeadAttention<...>; with --example, an example
               input and PyTorch's float64 answer to check the board with;
  a case file  the same example as an edgeattn-conform case
               (tests/golden/FORMAT.md): edgeattn-conform CASE OUT, then
               edgeattn-check-result CASE OUT holds the port to rel L2 <= 1e-5.

The expected answers are the module's own forward pass in float64 (on the
float32 weights and inputs, as the board sees them): what the port must
reproduce is the PyTorch model, not a re-derivation of it. With int8 or fp16
weights the case's weights are the stored ones and the answer is the module
run on the dequantised weights (README, "Weights in int8 and fp16").

What differs from PyTorch (README, "Coming from PyTorch"): nn.MultiheadAttention
masks with -inf, edgeattn with d2l's -1e6, so a row whose every key is masked
is NaN in PyTorch and uniform in edgeattn: the exporter refuses valid lengths
of 0. add_bias_kv and add_zero_attn have no counterpart and are refused.
Dropout is the identity (the module is exported in eval mode).

Command line (a state_dict saved with torch.save(module.state_dict(), path)):

  /usr/bin/python3 tools/export_torch.py STATE_DICT --num-heads H --name NAME
      --header NAME.h [--case NAME.case] [--example B,Q,K] [--valid-lens 3,2]
      [--weights f32|int8|fp16] [--seed N]

From Python:

  import export_torch
  export_torch.export(module, 'block', header='block.h', case='block.case',
                      example=(queries, keys, values), valid_lens=[3, 2])

Needs torch >= 1.13 and numpy (Debian: python3-torch).
"""
import argparse
import math
import os
import sys

import numpy as np
import torch

# The golden generators beside this file (tools/golden in the repository,
# share/edgeattn/tools/golden installed): the library's int8 and binary16
# rules and the case-file writer, written once there.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden'))
import make_decoder_golden as case_files  # noqa: E402
import make_reduced_precision_golden as stored_types  # noqa: E402

MATRICES = ('W_q', 'W_k', 'W_v', 'W_o')
BIASES = ('b_q', 'b_k', 'b_v', 'b_o')
WEIGHT_TYPES = {'f32': 0, 'fp16': 1, 'int8': 2}  # edgeattn_weight_type


class ExportError(Exception):
    pass


# ================================================================ weights
def _float32(t):
    return t.detach().to(torch.float32).cpu().numpy().astype(np.float64)


def weights_of_state_dict(state, num_heads):
    """({'W_q', ..., 'b_o' (those present)} as float64 arrays holding float32
    values, 'torch' or 'd2l'), from a state_dict of nn.MultiheadAttention or
    of d2l's MultiHeadAttention (W_q.weight, ...)."""
    s = {k.split('.', 1)[1] if k.startswith('module.') else k: v for k, v in state.items()}
    for unsupported in ('bias_k', 'bias_v'):
        if unsupported in s:
            raise ExportError('add_bias_kv has no counterpart in edgeattn')
    P = {}
    kind = 'torch' if 'in_proj_weight' in s or 'q_proj_weight' in s else 'd2l'
    if kind == 'torch':  # nn.MultiheadAttention
        if 'in_proj_weight' in s:
            W = s['in_proj_weight']
            E = W.shape[0] // 3
            P['W_q'], P['W_k'], P['W_v'] = (_float32(W[i * E:(i + 1) * E]) for i in range(3))
        else:  # kdim or vdim differ from embed_dim
            P['W_q'], P['W_k'], P['W_v'] = (_float32(s[n + '_proj_weight']) for n in 'qkv')
        if s.get('in_proj_bias') is not None:
            E = P['W_q'].shape[0]
            b = s['in_proj_bias']
            P['b_q'], P['b_k'], P['b_v'] = (_float32(b[i * E:(i + 1) * E]) for i in range(3))
        P['W_o'] = _float32(s['out_proj.weight'])
        if s.get('out_proj.bias') is not None:
            P['b_o'] = _float32(s['out_proj.bias'])
    elif 'W_q.weight' in s:  # d2l's MultiHeadAttention
        for m, b in zip(MATRICES, BIASES):
            P[m] = _float32(s[m + '.weight'])
            if s.get(m + '.bias') is not None:
                P[b] = _float32(s[m + '.bias'])
    else:
        raise ExportError('not a multi-head attention state_dict (no in_proj_weight, '
                          'q_proj_weight or W_q.weight): keys ' + ', '.join(sorted(s)[:8]))
    h = P['W_q'].shape[0]
    if P['W_o'].shape != (h, h) or P['W_k'].shape[0] != h or P['W_v'].shape[0] != h:
        raise ExportError('W_q, W_k, W_v must have num_hiddens rows and W_o be (num_hiddens, num_hiddens)')
    if num_heads < 1 or h % num_heads:
        raise ExportError('num_heads %d does not divide num_hiddens %d' % (num_heads, h))
    present = [b for b in BIASES if b in P]
    if present and len(present) != 4:
        raise ExportError('biases on some projections only (%s): edgeattn case files take all four or none'
                          % ', '.join(present))
    for name, x in P.items():
        if not np.all(np.isfinite(x)):
            raise ExportError(name + ' has a non-finite value')
    return P, kind


def describe(module):
    """(state_dict, num_heads, what it is) of a supported module."""
    if isinstance(module, torch.nn.MultiheadAttention):
        if module.add_zero_attn:
            raise ExportError('add_zero_attn has no counterpart in edgeattn')
        what = ('torch.nn.MultiheadAttention(embed_dim=%d, num_heads=%d, kdim=%d, vdim=%d, bias=%s, '
                'batch_first=%s)' % (module.embed_dim, module.num_heads, module.kdim, module.vdim,
                                     module.in_proj_bias is not None, module.batch_first))
        return module.state_dict(), module.num_heads, what
    if all(hasattr(module, m) for m in MATRICES) and hasattr(module, 'num_heads'):
        return module.state_dict(), module.num_heads, '%s (d2l, num_heads=%d)' % (type(module).__name__,
                                                                                  module.num_heads)
    raise ExportError('expected torch.nn.MultiheadAttention or d2l.MultiHeadAttention, got '
                      + type(module).__name__)


# ================================================================ stored types
def stored(P, weight_type):
    """(what the header and case store per matrix, the exact weights the board computes with)."""
    kept, exact = {}, dict(P)
    for m in MATRICES:
        if weight_type == 'int8':  # the library's rule, edgeattn_quantize_int8
            q, scales = stored_types.quantize_int8(P[m])
            kept[m] = ('int8', q, scales)
            exact[m] = q * scales[:, None]
        elif weight_type == 'fp16':
            if not np.all(np.isfinite(P[m].astype(np.float16))):
                raise ExportError(m + ' does not fit binary16')
            half = stored_types.to_fp16(P[m])
            kept[m] = ('fp16', half, None)
            exact[m] = half
        else:
            kept[m] = ('f32', P[m], None)
    return kept, exact


# ================================================================ reference run
def module_answer(kind, P, num_heads, queries, keys, values, valid_lens):
    """The PyTorch module's forward pass in float64 on weights P (float64 arrays):
    output (B, Q, h) and attention weights (B, H, Q, K)."""
    t = lambda a: torch.tensor(a, dtype=torch.float64)
    q, k, v = t(queries), t(keys), t(values)
    B, Q, K = q.shape[0], q.shape[1], k.shape[1]
    h = P['W_q'].shape[0]
    if kind == 'torch':
        E, kdim, vdim = h, k.shape[2], v.shape[2]
        m = torch.nn.MultiheadAttention(E, num_heads, bias='b_q' in P, kdim=kdim, vdim=vdim,
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
        if valid_lens is not None:
            vl = np.asarray(valid_lens)
            per_row = vl if vl.ndim == 2 else np.repeat(vl[:, None], Q, axis=1)
            hidden = np.arange(K)[None, None, :] >= per_row[:, :, None]  # True: masked
            mask = torch.tensor(np.repeat(hidden, num_heads, axis=0))  # (B * H, Q, K)
        with torch.no_grad():
            out, w = m(q, k, v, attn_mask=mask, need_weights=True, average_attn_weights=False)
        return out.numpy(), w.numpy()
    # d2l: score masking with -1e6, the same as edgeattn (written out here so
    # that the export needs no d2l package).
    with torch.no_grad():
        def project(x, W, b):
            y = x @ t(W).T
            return y if b is None else y + t(b)
        def split(X):
            X = X.reshape(X.shape[0], X.shape[1], num_heads, -1).permute(0, 2, 1, 3)
            return X.reshape(-1, X.shape[2], X.shape[3])
        Qh, Kh, Vh = (split(project(x, P[W], P.get(b)))
                      for x, W, b in ((q, 'W_q', 'b_q'), (k, 'W_k', 'b_k'), (v, 'W_v', 'b_v')))
        scores = Qh @ Kh.transpose(1, 2) / math.sqrt(Qh.shape[-1])
        if valid_lens is not None:
            vl = torch.tensor(np.asarray(valid_lens), dtype=torch.float64)
            vl = torch.repeat_interleave(vl, num_heads, dim=0)
            vl = vl[:, None].expand(-1, Q) if vl.dim() == 1 else vl
            scores = torch.where(torch.arange(K)[None, None, :] < vl[:, :, None], scores,
                                 torch.tensor(-1e6, dtype=torch.float64))
        w = torch.softmax(scores, dim=-1)
        heads = (w @ Vh).reshape(B, num_heads, Q, -1).permute(0, 2, 1, 3).reshape(B, Q, h)
        out = project(heads, P['W_o'], P.get('b_o'))
        return out.numpy(), w.reshape(B, num_heads, Q, K).numpy()


# ================================================================ writing
def _c_float(x):
    s = '%.9g' % x
    if 'e' not in s and '.' not in s and 'n' not in s:
        s += '.0'
    return s + 'f'


def _c_array(ctype, name, values, fmt, comment):
    flat = np.asarray(values).reshape(-1)
    body = [', '.join(fmt(v) for v in flat[i:i + 8]) for i in range(0, len(flat), 8)]
    return ('/* %s */\nstatic const %s %s[%d] EDGEATTN_EXPORTED = {\n    %s};\n'
            % (comment, ctype, name, len(flat), ',\n    '.join(body)))


def header_text(name, source, P, kept, num_heads, sizes, example):
    guard = name.upper() + '_EDGEATTN_H'
    q_size, k_size, v_size = sizes
    h = P['W_q'].shape[0]
    typed = any(kind != 'f32' for kind, _, _ in kept.values())
    out = ['/* %s: multi-head attention exported by tools/export_torch.py from\n * %s.\n'
           ' * Generated: do not edit. Weights are (out, in), as torch.nn.Linear stores them. */\n'
           % (name, source),
           '#ifndef %s\n#define %s\n\n#include <edgeattn/edgeattn.h>\n#include <stdint.h>\n' % (guard, guard),
           '/* A translation unit may include this and use only part of it. */\n'
           '#ifndef EDGEATTN_EXPORTED\n#if defined(__GNUC__)\n#define EDGEATTN_EXPORTED __attribute__((unused))\n'
           '#else\n#define EDGEATTN_EXPORTED\n#endif\n#endif\n',
           '#define %s_QUERY_SIZE %d\n#define %s_KEY_SIZE %d\n#define %s_VALUE_SIZE %d\n'
           '#define %s_NUM_HIDDENS %d\n#define %s_NUM_HEADS %d\n'
           % (name.upper(), q_size, name.upper(), k_size, name.upper(), v_size, name.upper(), h,
              name.upper(), num_heads)]
    for m in MATRICES:
        kind, values, scales = kept[m]
        shape = '(%d, %d)' % values.shape
        if kind == 'int8':
            out.append(_c_array('int8_t', '%s_%s' % (name, m), values, lambda v: '%d' % v, m + ' ' + shape + ', int8'))
            out.append(_c_array('float', '%s_%s_scales' % (name, m), scales, _c_float,
                                m + ' per-row scales (%d)' % len(scales)))
        elif kind == 'fp16':
            bits = values.astype(np.float16).view(np.uint16)
            out.append(_c_array('uint16_t', '%s_%s' % (name, m), bits, lambda v: '0x%04x' % v,
                                m + ' ' + shape + ', IEEE binary16 bits'))
        else:
            out.append(_c_array('float', '%s_%s' % (name, m), values, _c_float, m + ' ' + shape))
    for b in BIASES:
        if b in P:
            out.append(_c_array('float', '%s_%s' % (name, b), P[b], _c_float, b + ' (%d)' % h))
    bias_refs = ', '.join('%s_%s' % (name, b) if b in P else 'NULL' for b in BIASES)
    if typed:
        mats = []
        for m in MATRICES:
            kind = kept[m][0]
            scales = '%s_%s_scales' % (name, m) if kind == 'int8' else 'NULL'
            enum = {'f32': 'EDGEATTN_WEIGHTS_F32', 'fp16': 'EDGEATTN_WEIGHTS_F16', 'int8': 'EDGEATTN_WEIGHTS_INT8'}[kind]
            mats.append('{%s, %s_%s, %s}' % (enum, name, m, scales))
        out.append('/* For edgeattn_multi_head_attention_typed() and the fixed-size modules. */\n'
                   'static const edgeattn_mha_typed_weights %s_weights EDGEATTN_EXPORTED = {\n    %s,\n    %s};\n'
                   % (name, ',\n    '.join(mats), bias_refs))
    else:
        out.append('/* For edgeattn_multi_head_attention() and the fixed-size modules. */\n'
                   'static const edgeattn_mha_weights %s_weights EDGEATTN_EXPORTED = {\n    %s_W_q, %s_W_k, %s_W_v, %s_W_o,\n    %s};\n'
                   % (name, name, name, name, name, bias_refs))
    if example is not None:
        queries, keys, values, valid_lens, output, weights = example
        B, Q, K = queries.shape[0], queries.shape[1], keys.shape[1]
        out.append('\n/* An example and PyTorch\'s float64 answer to it: check a port with\n'
                   ' * rel L2 of the output <= 1e-5 (tests/golden/FORMAT.md). */\n'
                   '#define %s_EXAMPLE_BATCH %d\n#define %s_EXAMPLE_QUERIES %d\n#define %s_EXAMPLE_KEYS %d\n'
                   % (name.upper(), B, name.upper(), Q, name.upper(), K))
        out.append(_c_array('float', name + '_example_queries', queries, _c_float, 'queries (%d, %d, %d)' % queries.shape))
        out.append(_c_array('float', name + '_example_keys', keys, _c_float, 'keys (%d, %d, %d)' % keys.shape))
        out.append(_c_array('float', name + '_example_values', values, _c_float, 'values (%d, %d, %d)' % values.shape))
        if valid_lens is not None:
            vl = np.asarray(valid_lens)
            kind = 'EDGEATTN_VALID_LENS_PER_BATCH' if vl.ndim == 1 else 'EDGEATTN_VALID_LENS_PER_QUERY'
            out.append('#define %s_EXAMPLE_VALID_LENS_KIND %s\n' % (name.upper(), kind))
            out.append(_c_array('int32_t', name + '_example_valid_lens', vl, lambda v: '%d' % v,
                                'valid_lens ' + str(vl.shape)))
        out.append(_c_array('double', name + '_example_output', output, repr, 'expected output (%d, %d, %d)' % output.shape))
        out.append(_c_array('double', name + '_example_attention_weights', weights, repr,
                            'expected attention weights (%d, %d, %d, %d)' % weights.shape))
    out.append('\n#endif\n')
    return '\n'.join(out)


def case_text(P, kept, num_heads, queries, keys, values, valid_lens, output, weights, weight_type):
    c = case_files.Case('export', 'multi_head_attention')
    c.param('num_hiddens', P['W_q'].shape[0]).param('num_heads', num_heads).param('bias', 'b_q' in P)
    if weight_type != 'f32':
        c.param('weight_type', WEIGHT_TYPES[weight_type])
    c.input('queries', queries).input('keys', keys).input('values', values)
    c.optional_input('valid_lens', valid_lens)
    for m in MATRICES:
        _, stored_values, scales = kept[m]
        c.input(m, stored_values).optional_input(m + '_scales', scales)
    for b in BIASES:
        c.optional_input(b, P.get(b))
    return c.expect('output', output).expect('attention_weights', weights).text()


# ================================================================ export
def export(module_or_state, name, header=None, case=None, example=None, valid_lens=None,
           num_heads=None, weight_type='f32', source=None):
    """Writes NAME's header and/or case file; returns (output, attention_weights)
    of the example (PyTorch, float64) or None.

    module_or_state: nn.MultiheadAttention, d2l's MultiHeadAttention, or a
    state_dict of either (then num_heads is needed). example: (queries, keys,
    values) tensors or arrays, batch first (B, Q, q), (B, K, k), (B, K, v).
    valid_lens: None, (B) or (B, Q) integers, none of them 0."""
    if not name.isidentifier():
        raise ExportError('name %r is not a C identifier' % name)
    if weight_type not in WEIGHT_TYPES:
        raise ExportError('weights: f32, int8 or fp16')
    if isinstance(module_or_state, dict):
        if num_heads is None:
            raise ExportError('a state_dict needs num_heads')
        state, heads, what = module_or_state, num_heads, 'a state_dict'
    else:
        state, heads, what = describe(module_or_state)
    what = source or what
    P, kind = weights_of_state_dict(state, heads)
    kept, exact = stored(P, weight_type)
    sizes = (P['W_q'].shape[1], P['W_k'].shape[1], P['W_v'].shape[1])
    answer = None
    if example is not None:
        queries, keys, values = (np.asarray(torch.as_tensor(x).detach().to(torch.float32).cpu(), dtype=np.float64)
                                 for x in example)
        if queries.ndim != 3 or keys.shape[:2] != values.shape[:2] or queries.shape[0] != keys.shape[0]:
            raise ExportError('example: queries (B, Q, q), keys (B, K, k), values (B, K, v), batch first')
        if (queries.shape[2], keys.shape[2], values.shape[2]) != sizes:
            raise ExportError('example feature sizes %s do not match the weights %s'
                              % ((queries.shape[2], keys.shape[2], values.shape[2]), sizes))
        if valid_lens is not None:
            valid_lens = np.asarray(valid_lens, dtype=np.int32)
            expected_shape = (queries.shape[0],) if valid_lens.ndim == 1 else queries.shape[:2]
            if valid_lens.shape != expected_shape:
                raise ExportError('valid_lens must be (B) or (B, Q)')
            if np.any(valid_lens <= 0):
                raise ExportError('a valid length of 0 or less masks every key of a row: NaN in '
                                  'PyTorch, uniform weights in edgeattn (d2l): not exportable')
        answer = module_answer(kind, exact, heads, queries, keys, values, valid_lens)
        if not (np.all(np.isfinite(answer[0])) and np.all(np.isfinite(answer[1]))):
            raise ExportError("the module's answer has a non-finite value")
    elif case is not None:
        raise ExportError('a case file needs an example')
    if header is not None:
        ex = None if answer is None else (queries, keys, values, valid_lens) + answer
        with open(header, 'w') as f:
            f.write(header_text(name, what, P, kept, heads, sizes, ex))
    if case is not None:
        with open(case, 'w') as f:
            f.write(case_text(P, kept, heads, queries, keys, values, valid_lens, *answer, weight_type))
    return answer


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('state_dict', help='file written by torch.save(module.state_dict(), path)')
    p.add_argument('--num-heads', type=int, required=True)
    p.add_argument('--name', required=True, help='C identifier prefix of the header')
    p.add_argument('--header', help='C header to write')
    p.add_argument('--case', help='case file to write (needs --example)')
    p.add_argument('--example', help='B,Q,K: a random example of this shape (seeded)')
    p.add_argument('--valid-lens', help='comma-separated, one per batch element')
    p.add_argument('--weights', default='f32', choices=sorted(WEIGHT_TYPES))
    p.add_argument('--seed', type=int, default=0)
    a = p.parse_args(argv[1:])
    state = torch.load(a.state_dict, map_location='cpu')
    if not isinstance(state, dict):
        state = state.state_dict()
    example = None
    if a.example:
        B, Q, K = (int(x) for x in a.example.split(','))
        P, _ = weights_of_state_dict(state, a.num_heads)
        g = torch.Generator().manual_seed(a.seed)
        example = (torch.randn(B, Q, P['W_q'].shape[1], generator=g), torch.randn(B, K, P['W_k'].shape[1], generator=g),
                   torch.randn(B, K, P['W_v'].shape[1], generator=g))
    valid_lens = [int(x) for x in a.valid_lens.split(',')] if a.valid_lens else None
    try:
        export(state, a.name, header=a.header, case=a.case, example=example, valid_lens=valid_lens,
               num_heads=a.num_heads, weight_type=a.weights, source=os.path.basename(a.state_dict))
    except ExportError as e:
        print('export_torch.py: ' + str(e), file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
