#!/usr/bin/python3
"""A Llama-style decoder in plain PyTorch (no transformers package): the
float64 reference of tools/export_torch.py --model llama and of
examples/llama.

The module's state_dict has Hugging Face LlamaForCausalLM's names, so a real
checkpoint loads into it and the exporter reads either:

  model.embed_tokens.weight                      (vocab, d)
  model.layers.N.input_layernorm.weight          (d)      RMSNorm before attention
  model.layers.N.self_attn.{q,k,v,o}_proj.weight (H hd, d), (H_kv hd, d) x2, (d, H hd)
  model.layers.N.post_attention_layernorm.weight (d)      RMSNorm before the MLP
  model.layers.N.mlp.{gate,up,down}_proj.weight  (i, d), (i, d), (d, i): SwiGLU
  model.norm.weight                              (d)
  lm_head.weight                                 (vocab, d); absent when tied

Attention is grouped-query (key/value head j // (H / H_kv) serves query head
j), scaled by 1/sqrt(hd), with rotary position embeddings of theta on the
first rotary_dims features of each head (layout 'neox': rotate_half, feature
i pairs with i + rotary_dims / 2, as Llama in transformers; 'gptj': 2i with
2i + 1). forward() can restrict each token to what a window KV cache holds
(edgeattn_kv_cache_config.window / .sinks): token p sees the sinks 0..S-1
and the tokens p-W+1..p, its keys rotated at their absolute positions --
a rolling-buffer cache's attention, written as a mask over the whole
sequence.

  python3 tools/llama_model.py      # a seeded tiny model decodes a few tokens
"""
import math

import numpy as np
import torch


class LlamaConfig:
    """The sizes and constants of a Llama-style decoder (transformers'
    LlamaConfig names; rotary_dims = head_dim unless partial)."""

    def __init__(self, vocab_size=96, hidden_size=32, intermediate_size=88, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=None, rms_norm_eps=1e-5,
                 rope_theta=10000.0, rotary_dims=None, rope_layout='neox', tie_word_embeddings=True):
        self.vocab_size, self.hidden_size, self.intermediate_size = vocab_size, hidden_size, intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads, self.num_key_value_heads = num_attention_heads, num_key_value_heads
        self.head_dim = head_dim or hidden_size // num_attention_heads
        self.rms_norm_eps, self.rope_theta = rms_norm_eps, rope_theta
        self.rotary_dims = rotary_dims or self.head_dim
        if rope_layout not in ('neox', 'gptj'):
            raise ValueError("rope_layout: 'neox' or 'gptj'")
        self.rope_layout = rope_layout
        self.tie_word_embeddings = tie_word_embeddings


class RMSNorm(torch.nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight (Llama's RMSNorm)."""

    def __init__(self, d, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_angles(positions, rotary_dims, theta):
    """(T, rotary_dims / 2): position p times theta^(-2i / rotary_dims)."""
    inv_freq = theta ** (-torch.arange(0, rotary_dims, 2, dtype=torch.float64) / rotary_dims)
    return positions.to(torch.float64)[:, None] * inv_freq[None, :]


def apply_rope(x, angles, rotary_dims, layout):
    """x (B, heads, T, hd) with its first rotary_dims features rotated by angles (T, rotary_dims / 2)."""
    rot, rest = x[..., :rotary_dims], x[..., rotary_dims:]
    c, s = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    if layout == 'neox':  # rotate_half
        x1, x2 = rot[..., :rotary_dims // 2], rot[..., rotary_dims // 2:]
        rot = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
    else:  # interleaved pairs (2i, 2i + 1)
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
        rot = torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).flatten(-2)
    return torch.cat([rot, rest], dim=-1)


def visible_keys(T, window=0, sinks=0):
    """(T, T) bool: token i sees key j <= i, and with a window only the sinks
    j < sinks and the last `window` tokens j > i - window."""
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    seen = j <= i
    if window:
        seen &= (j > i - window) | (j < sinks)
    return seen


class Attention(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        H, H_kv, hd, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.hidden_size
        self.q_proj = torch.nn.Linear(d, H * hd, bias=False)
        self.k_proj = torch.nn.Linear(d, H_kv * hd, bias=False)
        self.v_proj = torch.nn.Linear(d, H_kv * hd, bias=False)
        self.o_proj = torch.nn.Linear(H * hd, d, bias=False)

    def forward(self, x, angles, seen):
        c = self.c
        B, T, _ = x.shape
        heads = lambda y, n: y.view(B, T, n, c.head_dim).transpose(1, 2)
        q = apply_rope(heads(self.q_proj(x), c.num_attention_heads), angles, c.rotary_dims, c.rope_layout)
        k = apply_rope(heads(self.k_proj(x), c.num_key_value_heads), angles, c.rotary_dims, c.rope_layout)
        v = heads(self.v_proj(x), c.num_key_value_heads)
        group = c.num_attention_heads // c.num_key_value_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(2, 3) / math.sqrt(c.head_dim)
        scores = scores.masked_fill(~seen, float('-inf'))
        out = torch.softmax(scores, dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, T, -1))


class MLP(torch.nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, c):
        super().__init__()
        self.gate_proj = torch.nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = torch.nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = torch.nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c)

    def forward(self, x, angles, seen):
        x = x + self.self_attn(self.input_layernorm(x), angles, seen)
        return x + self.mlp(self.post_attention_layernorm(x))


class Backbone(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = torch.nn.ModuleList(DecoderLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)


class LlamaForCausalLM(torch.nn.Module):
    """Logits (B, T, vocab) of tokens (B, T); state_dict names as transformers'."""

    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Backbone(c)
        self.lm_head = None if c.tie_word_embeddings else torch.nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def forward(self, tokens, window=0, sinks=0):
        c = self.config
        T = tokens.shape[1]
        x = self.model.embed_tokens(tokens)
        angles = rope_angles(torch.arange(T), c.rotary_dims, c.rope_theta)
        seen = visible_keys(T, window, sinks)
        for layer in self.model.layers:
            x = layer(x, angles, seen)
        x = self.model.norm(x)
        W = self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return x @ W.t()


def seeded(config, seed=0):
    """A model with seeded weights (numpy's RandomState: the same numbers on
    every platform and torch version), scaled so that the activations and
    logits are O(1) to O(10): embeddings N(0, 1), each Linear N(0, 1 / in),
    norm weights 1 + N(0, 0.1^2)."""
    rng = np.random.RandomState(seed)
    m = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith('layernorm.weight') or name == 'model.norm.weight':
                values = 1 + 0.1 * rng.standard_normal(p.shape)
            elif p.dim() == 2 and 'embed_tokens' not in name:
                values = rng.standard_normal(p.shape) / math.sqrt(p.shape[1])
            else:
                values = rng.standard_normal(p.shape)
            p.copy_(torch.tensor(values.astype(np.float32)))
    return m.eval()


def from_state_dict(state, config):
    """A float64 model holding state's tensors (lm_head.weight absent or equal
    to the embeddings: tied)."""
    m = LlamaForCausalLM(config).double()  # before loading: int8 and fp16 values stay exact
    state = {k: v for k, v in state.items() if not (k == 'lm_head.weight' and config.tie_word_embeddings)}
    m.load_state_dict({k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in state.items()})
    return m.eval()


def greedy(model, prompt, steps, window=0, sinks=0):
    """Greedy decoding: (tokens (steps), logits (steps, vocab)). Logits row 0
    is the prompt's last position's; row k that of generated token k - 1 fed
    back at position len(prompt) + k - 1. The whole sequence runs each step,
    under the window mask."""
    seq, tokens, rows = list(prompt), [], []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([seq]), window, sinks)[0, -1]
            rows.append(logits.numpy())
            tokens.append(int(torch.argmax(logits)))
            seq.append(tokens[-1])
    return np.array(tokens), np.stack(rows)


if __name__ == '__main__':
    m = seeded(LlamaConfig(), 0).double()
    toks, logits = greedy(m, [1, 2, 3, 4, 5, 6], 24, window=8, sinks=2)
    print('tokens', toks.tolist())
    top2 = np.sort(logits, axis=1)[:, -2:]
    print('smallest top-1 / top-2 gap %.3g, logits in [%.3g, %.3g]'
          % ((top2[:, 1] - top2[:, 0]).min(), logits.min(), logits.max()))
