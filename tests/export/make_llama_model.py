#!/usr/bin/python3
"""Exports the seeded tiny Llama-style model of examples/llama with
tools/export_torch.py --model llama, for the export.llama_* tests
(tests/CMakeLists.txt): OUT/llama_f32.h, OUT/llama_int8.h, OUT/llama_fp16_tied.h.

  llama_f32        tools/llama_model.py's LlamaConfig (vocab 96, d 32, 2 layers,
                   4 query heads and 2 key/value heads of 8, SwiGLU 88, RMSNorm eps
                   1e-5, RoPE theta 10000 NeoX), separate lm_head, seed 7; window 8
                   with 2 sinks, a prompt of 6 tokens and 24 steps (29 positions:
                   the ring wraps twice)
  llama_int8       the same model with int8 weights: examples/llama/tiny_llama_int8.h
                   is this header, committed (--compare checks that it is)
  llama_fp16_tied  the lm_head tied to the embeddings (seed 7, attention and MLP
                   outputs x5), fp16, partial rotary (4 of 8 features), window 6
                   with 1 sink, 20 steps

Checks before anything is called passed:
  - the reference's window attention (a mask over the whole sequence,
    tools/llama_model.py) equals a rolling-buffer decode written here in
    numpy: per layer a ring of sinks + window rows holding keys rotated at
    their absolute positions, one token a step (logits within 1e-9);
  - each header's stored matrices are the model's tensors (fp32 exactly,
    int8 within half a step of its row's scale, fp16 rounded), its expected
    tokens and logits the reference's greedy decoding on those values, and
    each step's two largest logits are far enough apart (>= 1e-3) that
    float32 arithmetic cannot swap them;
  - the exporter's refusals (a prompt longer than the window, a missing
    tensor, attention biases) and --help.
Run: /usr/bin/python3 tests/export/make_llama_model.py OUT
     /usr/bin/python3 tests/export/make_llama_model.py --compare FRESH COMMITTED
(the second: the committed header is the fresh export, numbers equal up to
float64 rounding in the expected logits, as another torch build may give)
"""
import math
import os
import re
import subprocess
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, '..', '..', 'tools')
TOOL = os.path.join(TOOLS, 'export_torch.py')
sys.path.insert(0, TOOLS)
import llama_model as lm  # noqa: E402

PROMPT = [5, 17, 42, 8, 71, 33]
MARGIN = 1e-3


def tool(*args):
    r = subprocess.run([sys.executable, TOOL] + [str(a) for a in args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def c_arrays(path):
    """{name: numpy array} of every `static const T name[n] ... = {...};` in a header."""
    text = open(path).read()
    out = {}
    for m in re.finditer(r'static const (\w+) (\w+)\[(\d+)\][^=]*= \{([^}]*)\};', text):
        ctype, name, n, body = m.groups()
        vals = [v.strip() for v in body.replace('\n', ' ').split(',') if v.strip()]
        if ctype in ('int8_t', 'int32_t', 'uint16_t'):
            arr = np.array([int(v, 0) for v in vals])
        else:  # float: '%.9g' round-trips binary32
            arr = np.array([float(v.rstrip('f')) for v in vals], dtype=np.float32).astype(np.float64)
        assert arr.size == int(n), name
        out[name] = arr
    return out, text


def ring_decode(model, prompt, steps, window, sinks):
    """Greedy decoding with a real rolling buffer, in numpy float64: each
    layer keeps sinks + window rows of keys (rotated at their absolute
    positions as they are stored) and values; token p overwrites row
    sinks + (p - sinks) % window once the sinks are full. Logits (steps, vocab)."""
    c = model.config
    sd = {k: v.detach().numpy().astype(np.float64) for k, v in model.state_dict().items()}
    cap = sinks + window
    H, H_kv, hd, r = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.rotary_dims
    inv = c.rope_theta ** (-np.arange(0, r, 2) / r)

    def rot(x, p):  # x (heads, hd) at position p
        a = p * inv
        cos, sin = np.cos(a), np.sin(a)
        y = x.copy()
        if c.rope_layout == 'neox':
            x1, x2 = x[:, :r // 2], x[:, r // 2:r]
            y[:, :r // 2], y[:, r // 2:r] = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        else:
            x1, x2 = x[:, 0:r:2], x[:, 1:r:2]
            y[:, 0:r:2], y[:, 1:r:2] = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        return y

    def norm(x, w):
        return x / np.sqrt(np.mean(x * x) + c.rms_norm_eps) * w
    K = np.zeros((c.num_hidden_layers, cap, H_kv, hd))
    Vc = np.zeros_like(K)
    held = [[] for _ in range(c.num_hidden_layers)]  # row indices in stream order
    seq, rows = list(prompt), []
    lm_head = sd.get('lm_head.weight', sd['model.embed_tokens.weight'])
    for p in range(len(prompt) + steps - 1):
        x = sd['model.embed_tokens.weight'][seq[p]]
        for n in range(c.num_hidden_layers):
            pre = 'model.layers.%d.' % n
            h = norm(x, sd[pre + 'input_layernorm.weight'])
            q = rot((sd[pre + 'self_attn.q_proj.weight'] @ h).reshape(H, hd), p)
            k = rot((sd[pre + 'self_attn.k_proj.weight'] @ h).reshape(H_kv, hd), p)
            v = (sd[pre + 'self_attn.v_proj.weight'] @ h).reshape(H_kv, hd)
            row = p if p < cap else sinks + (p - sinks) % window
            if p >= cap:
                held[n].remove(row)
            held[n].append(row)
            K[n, row], Vc[n, row] = k, v
            out = np.zeros((H, hd))
            for j in range(H):
                g = j // (H // H_kv)
                s = np.array([K[n, i, g] @ q[j] for i in held[n]]) / math.sqrt(hd)
                w = np.exp(s - s.max())
                out[j] = (w / w.sum()) @ Vc[n, held[n], g]
            x = x + sd[pre + 'self_attn.o_proj.weight'] @ out.reshape(-1)
            h = norm(x, sd[pre + 'post_attention_layernorm.weight'])
            gate, up = sd[pre + 'mlp.gate_proj.weight'] @ h, sd[pre + 'mlp.up_proj.weight'] @ h
            x = x + sd[pre + 'mlp.down_proj.weight'] @ (gate / (1 + np.exp(-gate)) * up)
        if p >= len(prompt) - 1:
            logits = lm_head @ norm(x, sd['model.norm.weight'])
            rows.append(logits)
            if len(seq) == p + 1:
                seq.append(int(np.argmax(logits)))
    return np.array(seq[len(prompt):]), np.stack(rows)


def stored_weights(model, arrays, weight_type):
    """The model's state_dict as the header stores it: checks every matrix,
    returns the dequantised values."""
    names = {'model.embed_tokens.weight': 'llama_embed_data', 'lm_head.weight': 'llama_lm_head_data',
             'model.norm.weight': 'llama_norm'}
    for n in range(model.config.num_hidden_layers):
        pre = 'model.layers.%d.' % n
        names.update({pre + 'self_attn.%s_proj.weight' % p: 'llama_layer%d_W_%s' % (n, p) for p in 'qkvo'})
        names.update({pre + 'mlp.%s.weight' % p: 'llama_layer%d_%s' % (n, p) for p in ('gate_proj', 'up_proj',
                                                                                         'down_proj')})
        names[pre + 'input_layernorm.weight'] = 'llama_layer%d_input_norm' % n
        names[pre + 'post_attention_layernorm.weight'] = 'llama_layer%d_post_norm' % n
    exact = {}
    for key, t in model.state_dict().items():
        W = t.detach().numpy().astype(np.float64)
        got = arrays[names[key]].reshape(W.shape)
        if W.ndim == 1 or weight_type == 'f32':
            assert np.array_equal(got, W), key
            exact[key] = W
        elif weight_type == 'int8':
            scales = arrays[names[key] + '_scales']
            assert np.abs(got).max() <= 127, key
            assert np.all(np.abs(got * scales[:, None] - W) <= scales[:, None] * 0.5001), key
            exact[key] = got * scales[:, None]
        else:
            half = got.astype(np.uint16).view(np.float16).astype(np.float64)
            assert np.array_equal(half, W.astype(np.float16).astype(np.float64)), key
            exact[key] = half
    return exact


def export_and_check(out, name, model, weight_type, steps, window, sinks, extra=()):
    pt = os.path.join(out, name + '.pt')
    torch.save(model.state_dict(), pt)
    header = os.path.join(out, name + '.h')
    rc, stdout, err = tool(pt, '--model', 'llama', '--num-heads', model.config.num_attention_heads, '--rms-eps',
                           model.config.rms_norm_eps, '--weights', weight_type, '--name', 'llama', '--header',
                           header, '--prompt', ','.join(map(str, PROMPT)), '--steps', steps, '--window', window,
                           '--sinks', sinks, *extra)
    assert rc == 0, err
    arrays, text = c_arrays(header)
    exact = stored_weights(model, arrays, weight_type)
    reference = lm.LlamaForCausalLM(model.config).double().eval()
    reference.load_state_dict({k: torch.tensor(v) for k, v in exact.items()})
    tokens, logits = lm.greedy(reference, PROMPT, steps, window, sinks)
    assert np.array_equal(arrays['llama_expected_tokens'], tokens), name + ': tokens'
    assert np.array_equal(arrays['llama_prompt'], PROMPT)
    assert np.array_equal(arrays['llama_expected_logits'], logits.reshape(-1).astype(np.float32)), name
    top2 = np.sort(logits, axis=1)[:, -2:]
    margin = (top2[:, 1] - top2[:, 0]).min()
    assert margin >= MARGIN, '%s: two logits %.3g apart: float32 could swap them' % (name, margin)
    for macro, value in (('WINDOW', window), ('SINKS', sinks), ('STEPS', steps), ('PROMPT_TOKENS', len(PROMPT)),
                         ('MAX_POSITIONS', len(PROMPT) + steps - 1), ('TIED', int(model.config.tie_word_embeddings)),
                         ('ROTARY_DIMS', model.config.rotary_dims)):
        assert '#define LLAMA_%s %d\n' % (macro, value) in text, macro
    # The rolling buffer, independently: the same tokens and logits.
    ring_tokens, ring_logits = ring_decode(reference, PROMPT, steps, window, sinks)
    assert np.array_equal(ring_tokens, tokens), name + ': ring buffer tokens'
    assert np.abs(ring_logits - logits).max() <= 1e-9, name + ': ring buffer logits'
    # The window matters: without it the stream is another one.
    unwindowed, _ = lm.greedy(reference, PROMPT, steps)
    assert not np.array_equal(unwindowed, tokens), name + ': the window changes nothing'
    print('%s: %s weights, window %d + %d sinks, %d positions; tokens %s; smallest top-2 gap %.3g'
          % (name, weight_type, window, sinks, len(PROMPT) + steps - 1, ' '.join(map(str, tokens)), margin))
    return header


def same_header(fresh, committed):
    """The committed header is the fresh one: the same text, numbers equal up
    to float64 rounding in the expected logits (another torch build)."""
    a, b = open(fresh).read().splitlines(), open(committed).read().splitlines()
    assert len(a) == len(b), '%s: %d lines, the fresh export %d: regenerate it' % (committed, len(b), len(a))
    num = re.compile(r'-?\d+(?:\.\d*)?(?:e[-+]?\d+)?')
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        assert num.sub('#', x) == num.sub('#', y), '%s:%d differs from the fresh export' % (committed, i + 1)
        for u, v in zip(num.findall(x), num.findall(y)):
            assert abs(float(u) - float(v)) <= 1e-6 * max(1.0, abs(float(u))), \
                '%s:%d: %s, the fresh export %s' % (committed, i + 1, v, u)


def main(argv):
    if len(argv) == 4 and argv[1] == '--compare':
        same_header(argv[2], argv[3])
        print('%s is %s up to float64 rounding' % (argv[3], argv[2]))
        return
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    base = lm.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=88, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0,
                          tie_word_embeddings=False)
    model = lm.seeded(base, 7)
    export_and_check(out, 'llama_f32', model, 'f32', 24, 8, 2)
    export_and_check(out, 'llama_int8', model, 'int8', 24, 8, 2)
    tied = lm.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=88, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5, rope_theta=10000.0,
                          rotary_dims=4, tie_word_embeddings=True)
    tied_model = lm.seeded(tied, 7)
    with torch.no_grad():  # a tied model copies its last token unless the blocks outweigh the embedding
        for key, p in tied_model.named_parameters():
            if key.endswith(('o_proj.weight', 'down_proj.weight')):
                p.mul_(5.0)
    header = export_and_check(out, 'llama_fp16_tied', tied_model, 'fp16', 20, 6, 1, ('--rotary-dims', 4))
    assert 'llama_lm_head EDGEATTN_EXPORTED = {EDGEATTN_DTYPE_F16, llama_embed_data, NULL, EDGEATTN_ARITHMETIC_FLOAT}' in open(header).read()

    # Refusals: exit 2, one line saying why, nothing written.
    never = os.path.join(out, 'never.h')
    pt = os.path.join(out, 'llama_f32.pt')
    for what, expect, args in (
            ('prompt past the window', 'longer than the window 4', ('--window', '4')),
            ('no heads', 'give num_heads or num_kv_heads (--num-heads', ()),
            ('sinks without window', 'sinks only with a window', ('--sinks', '2'))):
        base_args = [pt, '--model', 'llama', '--name', 'llama', '--header', never, '--prompt',
                     ','.join(map(str, PROMPT)), '--steps', '3']
        if what != 'no heads':
            base_args += ['--num-heads', '4']
        rc, _, err = tool(*(base_args + list(args)))
        assert rc == 2 and expect in err and err.count('\n') == 1, '%s: rc %d, %r' % (what, rc, err)
    state = torch.load(pt)
    broken = dict(state)
    del broken['model.layers.1.mlp.up_proj.weight']
    torch.save(broken, os.path.join(out, 'broken.pt'))
    rc, _, err = tool(os.path.join(out, 'broken.pt'), '--model', 'llama', '--num-heads', '4', '--name', 'x',
                      '--header', never)
    assert rc == 2 and 'missing tensor model.layers.1.mlp.up_proj.weight' in err, err
    broken = dict(state)
    broken['model.layers.0.self_attn.q_proj.bias'] = torch.zeros(32)
    torch.save(broken, os.path.join(out, 'broken.pt'))
    rc, _, err = tool(os.path.join(out, 'broken.pt'), '--model', 'llama', '--num-heads', '4', '--name', 'x',
                      '--header', never)
    assert rc == 2 and 'has biases' in err, err
    assert not os.path.exists(never), 'a refused export wrote a header'
    rc, stdout, _ = tool('--help')
    for opt in ('--model', '--rms-eps', '--rope-theta', '--rotary-dims', '--rope-layout', '--prompt', '--steps',
                '--window', '--sinks'):
        assert opt in stdout, opt + ' missing from --help'


if __name__ == '__main__':
    main(sys.argv)
