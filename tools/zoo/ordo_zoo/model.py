# The zoo's PyTorch model, written to mirror ordo's float32 math for every position scheme.
import math

import torch
import torch.nn.functional as F


def t5_bucket(rp, num_buckets, max_distance, bidirectional):
    """HF _relative_position_bucket, float32 like ordo's t5_relative_bucket. rp = key - query."""
    if bidirectional:
        nb = num_buckets // 2
        ret = (rp > 0).to(torch.long) * nb
        n = rp.abs()
    else:
        nb = num_buckets
        ret = torch.zeros_like(rp)
        n = torch.clamp(-rp, min=0)
    max_exact = nb // 2
    small = n < max_exact
    ratio = n.float() / float(max_exact)
    denom = torch.tensor(math.log(max_distance / max_exact), dtype=torch.float32)
    large = max_exact + (torch.log(ratio) / denom * float(nb - max_exact)).to(torch.long)
    large = torch.clamp(large, max=nb - 1)
    return ret + torch.where(small, n, large)


def alibi_slopes(n_heads, max_bias=8.0):
    c = 1
    while c * 2 <= n_heads:
        c *= 2
    s = []
    for h in range(n_heads):
        e = max_bias * (h + 1) / c if h < c else (max_bias / 2.0) * (2 * (h - c) + 1) / c
        s.append(2.0 ** (-e))
    return torch.tensor(s, dtype=torch.float32)


def sinusoidal_table(T, d):
    """ordo Concat layout: [sin | cos], angle p / 10000^(2i/d), computed in float64, stored float32."""
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    i = torch.arange((d + 1) // 2, dtype=torch.float64)[None, :]
    ang = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), 2.0 * i / d)
    return torch.cat([torch.sin(ang), torch.cos(ang[:, : d // 2])], dim=1).float()


def rope_inv_freq(hd, theta, scaling=None, trained=None):
    """ordo's rope_frequencies (engine/src/position/rope_scaling.cpp) for none, ntk and yarn (default
    beta_fast 32, beta_slow 1, truncate), float32 as there. Returns (inv_freq, attention scaling)."""
    def pos_freqs(base):  # base ** (arange(0, d, 2) / d), float32
        e = torch.arange(0, hd, 2, dtype=torch.int64).float() / float(hd)
        return torch.pow(torch.tensor(base, dtype=torch.float32), e)
    if scaling is None:
        return 1.0 / pos_freqs(theta), 1.0
    kind, s = scaling
    if kind == "ntk":
        b = float(torch.tensor(theta * s ** (hd / (hd - 2)), dtype=torch.float32))
        return 1.0 / pos_freqs(b), 1.0
    if kind == "yarn":
        corr = lambda rot: hd * math.log(trained / (rot * 2.0 * math.pi)) / (2.0 * math.log(theta))
        low, high = math.floor(corr(32.0)), math.ceil(corr(1.0))
        low, high = max(low, 0.0), min(high, float(hd - 1))
        if low == high:
            high += 0.001
        pf = pos_freqs(theta)
        f32 = lambda x: torch.tensor(x, dtype=torch.float32)
        extrap = 1.0 / pf
        interp = 1.0 / (f32(s) * pf)
        ramp = torch.clamp((torch.arange(hd // 2).float() - f32(low)) / f32(high - low), 0.0, 1.0)
        e = 1.0 - ramp
        return interp * (1.0 - e) + extrap * e, (1.0 if s <= 1.0 else 0.1 * math.log(s) + 1.0)
    raise ValueError(kind)


def rope_cos_sin(T, hd, theta, scaling=None, trained=None):
    inv_freq, att = rope_inv_freq(hd, theta, scaling, trained)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None, :]
    att = torch.tensor(att, dtype=torch.float32)
    return torch.cos(ang.double()).float() * att, torch.sin(ang.double()).float() * att


def learned_interpolated(table, s):
    """ordo's learned table under --scaling linear --factor s (engine/src/position/learned.cpp)."""
    trained = table.shape[0]
    n = int(math.floor(s * trained + 1e-9))
    src = table.double()
    rows = []
    for p in range(n):
        at = p / s
        i0 = int(math.floor(at))
        frac = at - i0
        if i0 >= trained - 1:
            i0, frac = trained - 1, 0.0
        r1 = src[i0 + 1] if frac > 0.0 else src[i0]
        rows.append((1.0 - frac) * src[i0] + frac * r1)
    return torch.stack(rows).float()


def rope_apply(x, cos, sin):  # x: [B, H, T, hd]; half-split layout
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f = c["d_model"], c["ffn"]
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        self.input_layernorm = RMSNorm(d, c["rms_eps"])
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = lin(d, d), lin(d, d), lin(d, d), lin(d, d)
        self.post_attention_layernorm = RMSNorm(d, c["rms_eps"])
        self.gate_proj, self.up_proj, self.down_proj = lin(d, f), lin(d, f), lin(f, d)


class ZooModel(torch.nn.Module):
    """c: the model's config (d_model, n_layers, n_heads, ffn, vocab, positions, ...); causal: decoder
    (lm, tasks) or bidirectional encoder (mlm)."""

    def __init__(self, scheme, c, causal=True):
        super().__init__()
        self.scheme, self.c, self.causal = scheme, c, causal
        d, V = c["d_model"], c["vocab"]
        self.H = c["n_heads"]
        self.hd = d // self.H
        # Shared parameters are created (and initialised) first, in the same order for every
        # scheme, so all six models of a seed start from the same weights.
        self.embed_tokens = torch.nn.Embedding(V, d)
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c["n_layers"])])
        self.norm = RMSNorm(d, c["rms_eps"])
        std = c["init_std"]
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=std)
        # Token embeddings as in the original Transformer: init std d^-1/2, multiplied by sqrt(d) on
        # input (rms ~1, the scale of the sinusoids; with std 0.02 and no multiplier the sinusoids
        # drown the tokens). The tied head uses the unscaled table.
        torch.nn.init.normal_(self.embed_tokens.weight, std=d ** -0.5)
        self.embed_scale = math.sqrt(d)
        for l in self.layers:  # GPT-2 style residual scaling
            torch.nn.init.normal_(l.o_proj.weight, std=std / math.sqrt(2 * c["n_layers"]))
            torch.nn.init.normal_(l.down_proj.weight, std=std / math.sqrt(2 * c["n_layers"]))
        if scheme == "learned":
            self.embed_positions = torch.nn.Parameter(torch.randn(c["positions"], d) * std)
        if scheme == "relative":
            self.relative_attention_bias = torch.nn.Parameter(torch.zeros(c["num_buckets"], self.H))
        self.register_buffer("slopes", alibi_slopes(self.H, c["alibi_max_bias"]), persistent=False)

    def forward(self, ids, hidden=None, scaling=None):
        """ids [B, T] -> logits [B, T, V]. scaling: ("ntk"|"yarn"|"linear", factor) as ordo applies it
        (rope: ntk/yarn; learned: linear interpolation of the table)."""
        B, T = ids.shape
        c, H, hd = self.c, self.H, self.hd
        x = self.embed_tokens(ids) * torch.tensor(self.embed_scale, dtype=torch.float32)
        if self.scheme == "learned":
            table = self.embed_positions
            if scaling is not None:
                assert scaling[0] == "linear"
                table = learned_interpolated(table.detach(), scaling[1])
            if T > table.shape[0]:
                raise ValueError("%d positions, learned table has %d" % (T, table.shape[0]))
            x = x + table[:T][None]
        elif self.scheme == "sinusoidal":
            x = x + sinusoidal_table(T, c["d_model"])[None]
        pos = torch.arange(T)
        rp = pos[None, :] - pos[:, None]  # key - query, [Tq, Tk]
        bias = torch.zeros(1, 1, T, T)
        if self.scheme == "relative":
            b = t5_bucket(rp, c["num_buckets"], c["max_distance"], bidirectional=not self.causal)
            bias = self.relative_attention_bias[b].permute(2, 0, 1)[None]  # [1, H, T, T]
        elif self.scheme == "alibi":
            dist = rp.abs() if not self.causal else (-rp).clamp(min=0)
            bias = (-self.slopes[:, None, None] * dist.float()[None])[None]
        if self.scheme == "rope":
            cos, sin = rope_cos_sin(T, hd, c["rope_theta"], scaling, c["positions"])
        elif scaling is not None and self.scheme != "learned":
            raise ValueError("scaling %s for scheme %s" % (scaling, self.scheme))
        scale = 1.0 / math.sqrt(hd)
        if hidden is not None:
            hidden.append(x)
        for i, l in enumerate(self.layers):
            h = l.input_layernorm(x)
            q = l.q_proj(h).view(B, T, H, hd).transpose(1, 2)
            k = l.k_proj(h).view(B, T, H, hd).transpose(1, 2)
            v = l.v_proj(h).view(B, T, H, hd).transpose(1, 2)
            if self.scheme == "rope":
                q, k = rope_apply(q, cos, sin), rope_apply(k, cos, sin)
            s = scale * (q @ k.transpose(-1, -2)) + bias
            if self.causal:
                s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
            a = torch.softmax(s, dim=-1) @ v
            x = x + l.o_proj(a.transpose(1, 2).reshape(B, T, H * hd))
            h = l.post_attention_layernorm(x)
            x = x + l.down_proj(F.silu(l.gate_proj(h)) * l.up_proj(h))
            if hidden is not None and i + 1 < len(self.layers):
                hidden.append(x)
        x = self.norm(x)
        if hidden is not None:
            hidden.append(x)
        return x @ self.embed_tokens.weight.t()

    def named_export(self):
        """Tensor names of the exported checkpoint (Llama-like; tied head not stored)."""
        out = {"model.embed_tokens.weight": self.embed_tokens.weight, "model.norm.weight": self.norm.weight}
        for i, l in enumerate(self.layers):
            p = "model.layers.%d." % i
            out[p + "input_layernorm.weight"] = l.input_layernorm.weight
            out[p + "post_attention_layernorm.weight"] = l.post_attention_layernorm.weight
            for n in ["q_proj", "k_proj", "v_proj", "o_proj"]:
                out[p + "self_attn.%s.weight" % n] = getattr(l, n).weight
            for n in ["gate_proj", "up_proj", "down_proj"]:
                out[p + "mlp.%s.weight" % n] = getattr(l, n).weight
        if self.scheme == "learned":
            out["model.embed_positions.weight"] = self.embed_positions
        if self.scheme == "relative":
            out["model.relative_attention_bias.weight"] = self.relative_attention_bias
        return out
