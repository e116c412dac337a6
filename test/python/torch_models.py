"""PyTorch modules the torch.export importer tests import
(test_torch_export.py), written the way PyTorch and Hugging Face
transformers write them (modeling_llama.py's eager attention, RMSNorm,
rotary embedding and SwiGLU MLP). Imported only when torch is installed."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class Sdpa(nn.Module):
    """A bare `F.scaled_dot_product_attention` (`mask`: an attn_mask input)."""

    def __init__(self, *, is_causal: bool = False, enable_gqa: bool = False, scale=None) -> None:
        super().__init__()
        self.is_causal, self.enable_gqa, self.scale = is_causal, enable_gqa, scale

    def forward(self, q, k, v, mask=None):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=self.is_causal, scale=self.scale,
            enable_gqa=self.enable_gqa,
        )  # fmt: skip


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    cos = cos.unsqueeze(1)  # [B, 1, L, D]: one rotation per position, every head
    sin = sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep: int):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim
    )
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(nn.Module):
    """transformers' LlamaAttention with eager_attention_forward inlined;
    `mask`: "triu" (an additive `full(-inf).triu(1)` bias), "finfo" (the
    same with `finfo(dtype).min`), "tril" (a bool `tril(ones)` mask applied
    by masked_fill) or "tril_where" (the same mask applied by torch.where)."""

    def __init__(self, hidden=32, heads=4, kv_heads=2, mask="triu") -> None:
        super().__init__()
        self.head_dim = hidden // heads
        self.num_heads, self.num_key_value_heads = heads, kv_heads
        self.num_key_value_groups = heads // kv_heads
        self.mask = mask
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, hidden_states, cos, sin):
        bsz, q_len, _ = hidden_states.size()
        hidden_shape = (bsz, q_len, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
        if self.mask in ("triu", "finfo"):
            fill = float("-inf") if self.mask == "triu" else torch.finfo(attn_weights.dtype).min
            dtype = torch.float32 if self.mask == "triu" else attn_weights.dtype
            causal_mask = torch.full((q_len, q_len), fill, dtype=dtype).triu(1)
            attn_weights = attn_weights + causal_mask
        else:
            keep = torch.tril(torch.ones(q_len, q_len, dtype=torch.bool))
            if self.mask == "tril_where":
                attn_weights = torch.where(keep, attn_weights, float("-inf"))
            else:
                attn_weights = attn_weights.masked_fill(~keep, float("-inf"))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(attn_output)


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size) + 0.1 * torch.randn(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaMLP(nn.Module):
    def __init__(self, hidden, intermediate) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaRotaryEmbedding(nn.Module):
    """cos/sin computed in the forward from the `inv_freq` buffer, as
    transformers does (positions 0..L-1)."""

    def __init__(self, head_dim, base=10000.0) -> None:
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        position_ids = torch.arange(x.shape[1])[None, :].float()
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :]
        freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class LlamaDecoderLayer(nn.Module):
    """RMSNorm, attention (RoPE from the rotary buffer, GQA), residual,
    RMSNorm, SwiGLU MLP, residual."""

    def __init__(self, hidden=32, heads=4, kv_heads=2, intermediate=64) -> None:
        super().__init__()
        self.self_attn = LlamaAttention(hidden, heads, kv_heads)
        self.mlp = LlamaMLP(hidden, intermediate)
        self.input_layernorm = LlamaRMSNorm(hidden)
        self.post_attention_layernorm = LlamaRMSNorm(hidden)
        self.rotary_emb = LlamaRotaryEmbedding(hidden // heads)

    def forward(self, hidden_states):
        cos, sin = self.rotary_emb(hidden_states)
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = residual + self.self_attn(hidden_states, cos, sin)
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        return residual + self.mlp(hidden_states)


class Misc(nn.Module):
    """The non-attention ops a small model uses beside the decoder: an
    embedding, LayerNorm, GELU (tanh), log_softmax, var, split/chunk, a bias."""

    def __init__(self, vocab=16, hidden=8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.proj = nn.Linear(hidden, 2 * hidden)

    def forward(self, ids, x):
        h = self.norm(self.embed(ids) + x)
        a, b = self.proj(h).chunk(2, dim=-1)
        g = F.gelu(a, approximate="tanh") * torch.sigmoid(b)
        spread = g.var(dim=-1, keepdim=True)
        return F.log_softmax(g, dim=-1) + spread, torch.clamp(g.amax(dim=0), min=-0.5)


class Assorted(nn.Module):
    """One of (nearly) every other mapped op, on [2, 3, 4] inputs `x`, `y`
    (y > 0 where it is a divisor or under a root)."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(4, eps=1e-5)
        self.lin = nn.Linear(4, 3)

    def forward(self, x, y):
        a, b = torch.split(x, [1, 2], dim=1)
        parts = torch.unbind(x, dim=0)
        stacked = torch.stack(parts, dim=1).permute(1, 0, 2).flatten(0, 1)  # x as [2*3, 4]
        ramp = torch.arange(1, 9, 2).float() * 0.25  # [4]
        z = (1.0 - x) * y.pow(3) / y.pow(0.5) + y ** -2 + torch.reciprocal(y) + torch.relu(x) * ramp
        z = z + torch.where(x > 0, x, 0.5) + torch.tril(x) - x.transpose(0, 2).permute(2, 1, 0)
        z = z + torch.max(x, y) - torch.min(x, -y) + torch.clamp(x, max=0.3) + x.mean() + x.amin()
        c = torch.cat([b, a], dim=1) + stacked.view(2, 3, 4)
        mask = torch.logical_and(x < y, torch.logical_not(x.eq(0.5)))
        d = z.masked_fill(mask, -1.0) + x.sum(dim=(0, 2), keepdim=True) + x[:, 0:3:2].sum(1, keepdim=True)
        e = torch.softmax(c, dim=1) + self.norm(x) + torch.tanh(x) * torch.exp(-x.abs()) + torch.log(y)
        f = self.lin(x)[:, 1] + torch.zeros_like(x[:, 1, :3]) + torch.ones(3) * x.shape[0]
        g = torch.baddbmm(y, x, torch.ones(2, 4, 4, dtype=x.dtype) * 0.5) + x[0].t().t()
        return d + e, f, g + torch.sqrt(y).unsqueeze(0).squeeze(0)


class HfMaskedSdpa(nn.Module):
    """What transformers 5.x's LlamaModel records around SDPA under
    torch.export: the rotary cos/sin under `torch.no_grad()` (a
    wrap_with_set_grad_enabled region), and the bool causal mask of
    masking_utils: packed-sequence ids from `diff` / `cumsum` of the
    positions, read by advanced indexing (`aten.index`), and-ed with
    `kv_idx <= q_idx`."""

    def __init__(self, head_dim=16, base=10000.0) -> None:
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, q, k, v):
        length = q.shape[2]
        position_ids = torch.arange(length).unsqueeze(0)
        with torch.no_grad():
            freqs = position_ids[:, :, None].float() * self.inv_freq
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        # find_packed_sequence_indices: one id per run of consecutive positions.
        first = position_ids[:, :1] - 1
        packed = (torch.diff(position_ids, prepend=first, dim=-1) != 1).cumsum(-1)
        batch_idx = torch.arange(1)[:, None, None, None]
        q_idx = torch.arange(length)[None, None, :, None]
        kv_idx = torch.arange(length)[None, None, None, :]
        same_sequence = packed[batch_idx, q_idx] == packed[batch_idx, kv_idx]
        causal = position_ids.expand(1, -1)
        mask = torch.ones_like(kv_idx, dtype=torch.bool) & same_sequence & (causal[batch_idx, kv_idx] <= causal[batch_idx, q_idx])
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.expand(1, -1, length, length), enable_gqa=True)


class HfEagerAttention(nn.Module):
    """transformers' `eager_attention_forward` (modeling_llama.py, with
    Gemma-2's softcap): repeat_kv, `q @ k^T * scaling`, optionally
    `tanh(w / softcap) * softcap`, the 4-D additive `attention_mask` sliced to
    the key length and added, `softmax(dtype=float32).to(query.dtype)`,
    dropout (p = 0 / eval), `@ v`."""

    def __init__(self, n_rep=2, scaling=0.25, softcap=None, dropout=0.0) -> None:
        super().__init__()
        self.n_rep, self.scaling, self.softcap, self.dropout = n_rep, scaling, softcap, dropout

    def forward(self, query, key, value, attention_mask):
        key_states = repeat_kv(key, self.n_rep)
        value_states = repeat_kv(value, self.n_rep)
        attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * self.scaling
        if self.softcap is not None:
            attn_weights = attn_weights / self.softcap
            attn_weights = torch.tanh(attn_weights)
            attn_weights = attn_weights * self.softcap
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout, training=self.training)
        attn_output = torch.matmul(attn_weights, value_states)
        return attn_output.transpose(1, 2).contiguous()


class AlibiSdpa(nn.Module):
    """ALiBi (BLOOM/MPT): a per-head linear bias `slope_h * (j - i)` built in
    the forward from a slopes buffer, passed to SDPA as a float attn_mask
    together with the causal -inf above the diagonal."""

    def __init__(self, heads=4) -> None:
        super().__init__()
        slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)])
        self.register_buffer("slopes", slopes, persistent=False)

    def forward(self, q, k, v):
        lq, lk = q.shape[-2], k.shape[-2]
        distance = torch.arange(lk)[None, :] - torch.arange(lq)[:, None]
        bias = self.slopes[:, None, None] * distance.float()  # [H, Lq, Lk]
        causal = torch.full((lq, lk), float("-inf")).triu(1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=(bias + causal)[None])


class SlidingWindowSdpa(nn.Module):
    """A sliding-window causal mask (Mistral/Gemma local layers): key j is
    visible from query i when `i - window < j <= i`, a bool attn_mask."""

    def __init__(self, window=3, enable_gqa=False) -> None:
        super().__init__()
        self.window, self.enable_gqa = window, enable_gqa

    def forward(self, q, k, v):
        lq, lk = q.shape[-2], k.shape[-2]
        i = torch.arange(lq)[:, None]
        j = torch.arange(lk)[None, :]
        keep = (j <= i) & (j > i - self.window)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, enable_gqa=self.enable_gqa)


class AnyHiddenRowsZeroed(nn.Module):
    """A look-alike of torch's guard that zeroes every row with *some* key
    hidden (`(w == -inf).any(-1, keepdim=True)`), not only the rows whose
    keys are all hidden: not part of attention."""

    def forward(self, q, k, v, mask):
        w = torch.matmul(q, k.transpose(-1, -2)) * 0.25 + mask
        p = torch.softmax(w, dim=-1)
        p = torch.where((w == float("-inf")).any(-1, keepdim=True), 0.0, p)
        return torch.matmul(p, v)
