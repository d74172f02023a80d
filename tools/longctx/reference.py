#!/usr/bin/env python3
"""Independent PyTorch reference for ordo's training-free context extension, written from the papers,
and the golden logits tests/context_extension_golden_test.cpp holds ordo to.

  Self-Extend (Jin et al. 2024, "LLM Maybe LongLM", Algorithm 1): two attention score matrices over
  the whole sequence -- "neighbour" scores with q and k at their exact positions, "grouped" scores
  with q at pos // G + (W - W // G) and k at pos // G -- merged before one softmax: a key at
  distance < W takes the neighbour score, a farther one the grouped score. For ALiBi and T5 the
  bias is computed from the same assigned positions.

  Attention sinks / StreamingLLM (Xiao et al. 2024) with Hugging Face SinkCache's conventions
  (window_length = K + N, num_sink_tokens = K), run token by token with a real rolling cache: when
  the cache is full, the oldest non-sink entry is dropped and every kept non-sink key is rotated
  back by one position (RoPE), so cached keys always sit at their cache index; the new token gets
  position = the cache length after eviction (sinks 0..K-1, window after them). Schemes that add
  positions at the embeddings embed each new token at that position. ALiBi/T5 distances are cache
  positions. Rotations compose exactly here (float64); HF re-rotates in float32 and, for RoPE with an
  attention scaling (YaRN), multiplies kept keys by that scale squared at each shift -- we do not.

Everything is computed in float64 from the checkpoints' weights (float32, or the zoo's float16),
except RoPE angles, computed as float32(pos) * float32(inv_freq) as Hugging Face does.

Models: the Llama-family fixtures with static RoPE (llama, llama-linear, llama-yarn, llama-llama3;
their inv_freq and attention scaling as the fixture recorded them), stories260K (the bundled model)
and the zoo's six seed-1 decoders (models/zoo/lm/<scheme>-s1, via the zoo trainer's
ordo_zoo package). Self-Extend is not
defined for learned/sinusoidal (positions enter at the embeddings), so the zoo's two have sinks only.

Output: tests/data/longctx/golden.json + golden.safetensors (float32): for every case, the logits of
a few positions of a long input, and a greedy continuation (ids and step logits).
Needs Debian's python3-torch and a built `ordo` (to tokenize the stories text). Run from the
repository root, with the zoo trainer's package on the path:
  PYTHONPATH=tools/zoo python3 tools/longctx/reference.py
"""
import json
import math
import os
import subprocess

import torch
from ordo_zoo import files as zoo_files  # the zoo's safetensors reader and writer
from ordo_zoo import model as zoo_model  # the zoo's bias tables and position helpers
from ordo_zoo.settings import BOS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

torch.set_default_dtype(torch.float64)
D = torch.float64


# ---------------------------------------------------------------- checkpoints

def read_safetensors(path):
    return {name: t.to(D) for name, t in zoo_files.read_safetensors(path).items()}


def write_safetensors(path, tensors):
    zoo_files.write_safetensors(path, {name: t.to(torch.float32) for name, t in tensors.items()}, {"format": "pt"})


class Decoder:
    """A pre-norm RMSNorm/SwiGLU decoder (Llama, the zoo) with its position scheme."""

    def __init__(self, name, model_dir, golden_dir=None):
        self.name = name
        cfg = json.load(open(os.path.join(model_dir, "config.json")))
        w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.d = cfg["hidden_size"]
        self.H = cfg["num_attention_heads"]
        self.KV = cfg.get("num_key_value_heads") or self.H
        self.hd = cfg.get("head_dim") or self.d // self.H
        self.eps = cfg["rms_norm_eps"]
        self.L = cfg["num_hidden_layers"]
        self.trained = cfg["max_position_embeddings"]
        self.scheme = cfg.get("position_scheme", "rope")
        self.embed = w["model.embed_tokens.weight"]
        self.embed_scale = cfg.get("embed_scale", 1.0)
        self.head = w.get("lm_head.weight", self.embed)
        self.norm = w["model.norm.weight"]
        self.layers = []
        for i in range(self.L):
            p = "model.layers.%d." % i
            self.layers.append({k: w[p + n] for k, n in [
                ("n1", "input_layernorm.weight"), ("n2", "post_attention_layernorm.weight"),
                ("q", "self_attn.q_proj.weight"), ("k", "self_attn.k_proj.weight"),
                ("v", "self_attn.v_proj.weight"), ("o", "self_attn.o_proj.weight"),
                ("gate", "mlp.gate_proj.weight"), ("up", "mlp.up_proj.weight"), ("down", "mlp.down_proj.weight")]})
        self.rope_scale = 1.0
        if self.scheme == "rope":
            if golden_dir:  # the fixture's inv_freq (scaling included) and attention scaling
                g = read_safetensors(os.path.join(golden_dir, "golden.safetensors"))
                self.inv_freq = g["rope.inv_freq"].to(torch.float32)
                self.rope_scale = float(g["rope.attention_scaling"])
            else:
                theta = cfg.get("rope_theta", 10000.0)
                self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.hd, 2, dtype=torch.int64).float() / self.hd))
        if self.scheme == "learned":
            self.pos_table = w["model.embed_positions.weight"]
        if self.scheme == "relative":
            self.rel_bias = w["model.relative_attention_bias.weight"]  # [buckets, H]
            self.buckets, self.max_distance = cfg.get("relative_attention_num_buckets", 32), cfg.get(
                "relative_attention_max_distance", 128)
        if self.scheme == "alibi":
            self.slopes = zoo_model.alibi_slopes(self.H).to(D)

    # -- position pieces, at arbitrary (assigned) positions

    def rotate(self, x, pos):
        """RoPE (half-split) of x [H, T, hd] at integer positions pos [T]."""
        ang = (pos.to(torch.float32)[:, None] * self.inv_freq[None, :]).to(D)  # float32 product, as HF
        cos, sin = torch.cos(ang) * self.rope_scale, torch.sin(ang) * self.rope_scale
        h = self.hd // 2
        a, b = x[..., :h], x[..., h:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)

    def rotate_by(self, x, delta):
        """Rotates already rotated keys by `delta` positions (unit magnitude: re-rotation only)."""
        ang = (delta * self.inv_freq).to(D)
        cos, sin = torch.cos(ang), torch.sin(ang)
        h = self.hd // 2
        a, b = x[..., :h], x[..., h:]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)

    def bias(self, qpos, kpos):
        """Score bias [H, Tq, Tk] for query positions qpos [Tq, 1..] and key positions kpos."""
        rp = (kpos - qpos).to(torch.long)  # key - query
        if self.scheme == "alibi":
            return -self.slopes[:, None, None] * (-rp).clamp(min=0).to(D)[None]
        if self.scheme == "relative":
            b = zoo_model.t5_bucket(rp, self.buckets, self.max_distance, False)
            return self.rel_bias[b].permute(2, 0, 1)
        return torch.zeros(1, *rp.shape)

    def embed_at(self, ids, pos):
        x = self.embed[ids] * self.embed_scale
        if self.scheme == "learned":
            x = x + self.pos_table[pos]
        elif self.scheme == "sinusoidal":
            x = x + zoo_model.sinusoidal_table(int(pos.max()) + 1, self.d).to(D)[pos]
        return x

    # -- the shared block

    def rms(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    def qkv(self, ly, x):
        T = x.shape[0]
        h = self.rms(x, ly["n1"])
        q = (h @ ly["q"].t()).view(T, self.H, self.hd).transpose(0, 1)
        k = (h @ ly["k"].t()).view(T, self.KV, self.hd).transpose(0, 1)
        v = (h @ ly["v"].t()).view(T, self.KV, self.hd).transpose(0, 1)
        rep = self.H // self.KV
        return q, k.repeat_interleave(rep, 0), v.repeat_interleave(rep, 0)

    def finish(self, ly, x, a):
        T = x.shape[0]
        x = x + a.transpose(0, 1).reshape(T, self.H * self.hd) @ ly["o"].t()
        h = self.rms(x, ly["n2"])
        return x + (torch.nn.functional.silu(h @ ly["gate"].t()) * (h @ ly["up"].t())) @ ly["down"].t()

    def logits(self, x):
        return self.rms(x, self.norm) @ self.head.t()

    # -- Self-Extend over a whole sequence (Algorithm 1)

    def self_extend(self, ids, G, W):
        T = len(ids)
        pos = torch.arange(T)
        qg = pos // G + (W - W // G)  # grouped query positions
        kg = pos // G                 # grouped key positions
        i, j = pos[:, None], pos[None, :]
        neighbour = (i - j) < W
        causal = j <= i
        x = self.embed_at(torch.tensor(ids), pos)
        for ly in self.layers:
            q, k, v = self.qkv(ly, x)
            if self.scheme == "rope":
                n_s = self.rotate(q, pos) @ self.rotate(k, pos).transpose(-1, -2)
                g_s = self.rotate(q, qg) @ self.rotate(k, kg).transpose(-1, -2)
            else:
                n_s = g_s = q @ k.transpose(-1, -2)
            n_s = n_s / math.sqrt(self.hd) + self.bias(pos[:, None], pos[None, :])
            g_s = g_s / math.sqrt(self.hd) + self.bias(qg[:, None], kg[None, :])
            s = torch.where(neighbour[None], n_s, g_s).masked_fill(~causal[None], float("-inf"))
            x = self.finish(ly, x, torch.softmax(s, -1) @ v)
        return self.logits(x)

    # -- attention sinks, token by token with a SinkCache-style rolling cache

    def sinks_run(self, ids, K, N):
        cap = K + N
        caches = [{"k": torch.zeros(self.H, 0, self.hd), "v": torch.zeros(self.H, 0, self.hd)} for _ in self.layers]
        out = []
        for tok in ids:
            n = caches[0]["k"].shape[1]
            evict = n == cap
            p = torch.tensor([cap - 1 if evict else n])  # the new token's position: the cache length after eviction
            x = self.embed_at(torch.tensor([tok]), p)
            for ly, c in zip(self.layers, caches):
                q, k, v = self.qkv(ly, x)
                if evict:  # drop the oldest window entry; kept window keys move back one position
                    kept = c["k"][:, K + 1:]
                    if self.scheme == "rope":
                        kept = self.rotate_by(kept, -1.0)
                    c["k"] = torch.cat([c["k"][:, :K], kept], 1)
                    c["v"] = torch.cat([c["v"][:, :K], c["v"][:, K + 1:]], 1)
                if self.scheme == "rope":
                    q, k = self.rotate(q, p), self.rotate(k, p)
                c["k"] = torch.cat([c["k"], k], 1)
                c["v"] = torch.cat([c["v"], v], 1)
                kpos = torch.arange(c["k"].shape[1])  # cached keys sit at their cache index
                s = q @ c["k"].transpose(-1, -2) / math.sqrt(self.hd) + self.bias(p[:, None], kpos[None, :])
                x = self.finish(ly, x, torch.softmax(s, -1) @ c["v"])
            out.append(self.logits(x)[0])
        return torch.stack(out)


# ---------------------------------------------------------------- cases

def greedy(model, method, prompt, steps, params):
    """Greedy continuation: ids and the logits row of every step."""
    ids, rows = list(prompt), []
    for _ in range(steps):
        if method == "self-extend":
            lg = model.self_extend(ids, *params)[-1]
        else:
            lg = model.sinks_run(ids, *params)[-1]
        rows.append(lg)
        ids.append(int(torch.argmax(lg)))
    return ids[len(prompt):], torch.stack(rows)


def min_margin(rows):
    top2 = torch.topk(rows, 2, dim=-1).values
    return float((top2[:, 0] - top2[:, 1]).min())


def make_case(model, method, params, ids, rows, prompt_len, steps, out, tensors):
    name = "%s.%s" % (model.name, method)
    print("  %s %s T=%d" % (name, params, len(ids)), flush=True)
    full = model.self_extend(ids, *params) if method == "self-extend" else model.sinks_run(ids, *params)
    tensors[name + ".logits"] = full[rows]
    gen, glog = greedy(model, method, ids[:prompt_len], steps, params)
    tensors[name + ".greedy.logits"] = glog
    out.append({
        "name": name, "model": model.name, "method": method,
        "params": {"group": params[0], "neighbor": params[1]} if method == "self-extend"
        else {"sinks": params[0], "window": params[1]},
        "input_ids": ids, "rows": rows,
        "greedy": {"prompt_len": prompt_len, "max_new_tokens": steps, "output_ids": gen,
                   "min_top2_logit_margin": min_margin(glog)},
        "tensors": [name + ".logits", name + ".greedy.logits"],
    })


def ordo_ids(text, model_args=()):
    """text as token ids through `ordo tokenize` (the tokenizer is not under test here; $ORDO names
    the binary, default build/bin/ordo)."""
    exe = os.environ.get("ORDO", os.path.join(ROOT, "build", "bin", "ordo"))
    out = subprocess.run([exe, "tokenize", *model_args, "--no-special", text], capture_output=True, text=True,
                         check=True).stdout
    return [int(t) for t in out.strip().split(",")]


def stories_ids():
    """tests/data/text/stories-sampled.txt as stories260K token ids."""
    return ordo_ids(open(os.path.join(ROOT, "tests", "data", "text", "stories-sampled.txt")).read())


def spread_rows(T, n):
    return sorted(set([int(round(i * (T - 1) / (n - 1))) for i in range(n)]))


def main():
    out_dir = os.path.join(ROOT, "tests", "data", "longctx")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(19)
    cases, tensors = [], {}
    fixtures = os.path.join(ROOT, "tests", "data", "fixtures")
    # Llama-family fixtures (random weights, vocab 256): 160 tokens, 2.5-5x their trained length.
    for f in ["llama", "llama-linear", "llama-yarn", "llama-llama3"]:
        m = Decoder(f, os.path.join(fixtures, f), os.path.join(fixtures, f))
        ids = torch.randint(3, 256, (160,), generator=gen).tolist()
        rows = spread_rows(len(ids), 12)
        make_case(m, "self-extend", (4, 16), ids, rows, 120, 16, cases, tensors)
        make_case(m, "sinks", (4, 28), ids, rows, 120, 16, cases, tensors)
    # stories260K (trained 512): a TinyStories text to 2x its length.
    m = Decoder("stories260K", os.path.join(ROOT, "models", "stories260K"), os.path.join(fixtures, "stories260K"))
    ids = stories_ids()[:1024]
    rows = spread_rows(len(ids), 12)
    make_case(m, "self-extend", (4, 128), ids, rows, 1000, 24, cases, tensors)
    make_case(m, "sinks", (4, 124), ids, rows[:8], 600, 24, cases, tensors)
    # The zoo (trained 128): <s> and the held-out KJV text, 320 tokens.
    heldout = open(os.path.join(ROOT, "models", "zoo", "heldout.txt")).read()[:4000]
    for scheme in ["none", "learned", "sinusoidal", "relative", "rope", "alibi"]:
        d = os.path.join(ROOT, "models", "zoo", "lm", scheme + "-s1")
        m = Decoder("zoo-" + scheme, d)
        ids = ([BOS] + ordo_ids(heldout, ("-m", d)))[:320]
        assert len(ids) == 320
        rows = spread_rows(len(ids), 8)
        if scheme not in ("learned", "sinusoidal"):
            make_case(m, "self-extend", (4, 32), ids, rows, 300, 12, cases, tensors)
        make_case(m, "sinks", (4, 60), ids, rows, 200, 12, cases, tensors)
    write_safetensors(os.path.join(out_dir, "golden.safetensors"), tensors)
    doc = {"description": "Self-Extend and attention-sink reference logits from tools/longctx/reference.py "
                          "(float64 PyTorch written from the papers; SinkCache conventions), stored float32.",
           "torch_version": torch.__version__, "cases": cases}
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %d cases, %d tensors" % (len(cases), len(tensors)))


if __name__ == "__main__":
    main()
