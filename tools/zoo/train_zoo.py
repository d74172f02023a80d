#!/usr/bin/env python3
"""Trains ordo's position-scheme zoo: one small decoder trained six times, identical in everything
(data, batch order, seed, size, steps) except the position scheme.

  none | learned | sinusoidal | relative | rope | alibi

Data: the King James Bible (Debian package bible-kjv-text, public domain), verse references
stripped; a few whole books are held out (models/zoo/heldout.txt). Tokenizer: sentencepiece BPE
trained with spm_train. Model: pre-norm RMSNorm, SwiGLU, no biases, tied embeddings, written to
mirror ordo's float32 math (engine/src/transformer.cpp, engine/src/position/*.cpp).

Each model is exported as models/zoo/<scheme>/{config.json, model.safetensors (F16),
tokenizer.model, golden.json, golden.safetensors}; the golden logits and hidden states are computed
in float32 from the exported (F16-rounded) weights.

Needs: Debian's python3-torch (1.13), sentencepiece-tools (spm_train, spm_encode), bible-kjv.
Run from the repository root:  /usr/bin/python3 tools/zoo/train_zoo.py [--steps N]
"""
import argparse
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

SCHEMES = ["none", "learned", "sinusoidal", "relative", "rope", "alibi"]
HELDOUT_BOOKS = ["Ruth", "Est", "Jonah", "Phi", "Jas", "1Jn", "2Jn", "3Jn", "Jude"]

CFG = dict(
    d_model=96, n_layers=3, n_heads=4, ffn=256, vocab=1024, ctx=128,
    rms_eps=1e-5, rope_theta=10000.0, num_buckets=32, max_distance=128,
    batch=8, lr=3e-3, min_lr_frac=0.1, warmup=30, weight_decay=0.05, seed=1234,
)
BOS, EOS = 1, 2


# ---------------------------------------------------------------- data

def bible_verses():
    out = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], check=True, capture_output=True, text=True).stdout
    verses = []  # (book, text)
    for line in out.splitlines():
        m = re.match(r"^([1-3]?[A-Za-z]+)(\d+):(\d+) (.*)$", line.strip())
        if not m:
            if line.strip():
                raise SystemExit("unexpected line from bible: %r" % line)
            continue
        verses.append((m.group(1), m.group(4).strip()))
    return verses


def prepare(work, zoo):
    verses = bible_verses()
    books = sorted({b for b, _ in verses})
    for b in HELDOUT_BOOKS:
        if b not in books:
            raise SystemExit("held-out book %s not in %s" % (b, books))
    train = [t for b, t in verses if b not in HELDOUT_BOOKS]
    held = [t for b, t in verses if b in HELDOUT_BOOKS]
    train_txt = os.path.join(work, "train.txt")
    with open(train_txt, "w") as f:
        f.write("\n".join(train) + "\n")
    with open(os.path.join(zoo, "heldout.txt"), "w") as f:
        f.write("\n".join(held) + "\n")
    # Relative paths (run in `work`): spm_train records them in the model, which must not depend on
    # the temporary directory's name.
    subprocess.run([
        "spm_train", "--input=train.txt", "--model_prefix=tok", "--vocab_size=%d" % CFG["vocab"],
        "--model_type=bpe", "--character_coverage=1.0", "--input_sentence_size=0",
        "--shuffle_input_sentence=false", "--num_threads=1", "--unk_id=0", "--bos_id=1", "--eos_id=2",
        "--pad_id=-1", "--minloglevel=2"], check=True, cwd=work)
    return os.path.join(work, "tok.model"), train_txt, os.path.join(zoo, "heldout.txt")


def encode_file(spm_model, path):
    out = subprocess.run(["spm_encode", "--model=" + spm_model, "--output_format=id", "--input=" + path],
                         check=True, capture_output=True, text=True).stdout
    ids = []
    for line in out.splitlines():
        ids.extend(int(x) for x in line.split())
    return torch.tensor(ids, dtype=torch.long)


# ---------------------------------------------------------------- model (mirrors ordo)

def t5_bucket_causal(rp, num_buckets, max_distance):
    """HF _relative_position_bucket(bidirectional=False), float32 like ordo's t5_relative_bucket."""
    n = torch.clamp(-rp, min=0)
    max_exact = num_buckets // 2
    small = n < max_exact
    ratio = n.float() / float(max_exact)
    denom = torch.tensor(math.log(max_distance / max_exact), dtype=torch.float32)
    large = max_exact + (torch.log(ratio) / denom * float(num_buckets - max_exact)).to(torch.long)
    large = torch.clamp(large, max=num_buckets - 1)
    return torch.where(small, n, large)


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


def rope_cos_sin(T, hd, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None, :]
    return torch.cos(ang.double()).float(), torch.sin(ang.double()).float()


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
    def __init__(self, scheme, c):
        super().__init__()
        self.scheme, self.c = scheme, c
        d, V = c["d_model"], c["vocab"]
        self.H = c["n_heads"]
        self.hd = d // self.H
        # Shared parameters are created (and initialised) first, in the same order for every
        # scheme, so all six models start from the same weights.
        self.embed_tokens = torch.nn.Embedding(V, d)
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c["n_layers"])])
        self.norm = RMSNorm(d, c["rms_eps"])
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)
        # Token embeddings as in the original Transformer: init std d^-1/2, multiplied by sqrt(d) on
        # input (rms ~1, the scale of the sinusoids; with std 0.02 and no multiplier the sinusoids
        # drown the tokens). The tied head uses the unscaled table.
        torch.nn.init.normal_(self.embed_tokens.weight, std=d ** -0.5)
        self.embed_scale = math.sqrt(d)
        for l in self.layers:  # GPT-2 style residual scaling
            torch.nn.init.normal_(l.o_proj.weight, std=0.02 / math.sqrt(2 * c["n_layers"]))
            torch.nn.init.normal_(l.down_proj.weight, std=0.02 / math.sqrt(2 * c["n_layers"]))
        if scheme == "learned":
            self.embed_positions = torch.nn.Parameter(torch.randn(c["ctx"], d) * 0.02)
        if scheme == "relative":
            self.relative_attention_bias = torch.nn.Parameter(torch.zeros(c["num_buckets"], self.H))
        self.register_buffer("slopes", alibi_slopes(self.H), persistent=False)

    def forward(self, ids, hidden=None):
        B, T = ids.shape
        c, H, hd = self.c, self.H, self.hd
        x = self.embed_tokens(ids) * torch.tensor(self.embed_scale, dtype=torch.float32)
        if self.scheme == "learned":
            x = x + self.embed_positions[:T][None]
        elif self.scheme == "sinusoidal":
            x = x + sinusoidal_table(T, c["d_model"])[None]
        pos = torch.arange(T)
        rp = pos[None, :] - pos[:, None]  # key - query, [Tq, Tk]
        bias = torch.zeros(1, 1, T, T)
        if self.scheme == "relative":
            b = t5_bucket_causal(rp, c["num_buckets"], c["max_distance"])
            bias = self.relative_attention_bias[b].permute(2, 0, 1)[None]  # [1, H, T, T]
        elif self.scheme == "alibi":
            bias = (-self.slopes[:, None, None] * (-rp).clamp(min=0).float()[None])[None]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        if self.scheme == "rope":
            cos, sin = rope_cos_sin(T, hd, c["rope_theta"])
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
            s = s.masked_fill(mask, float("-inf"))
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


# ---------------------------------------------------------------- safetensors (no extra packages)

def write_safetensors(path, tensors, metadata=None):
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dt = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}[t.dtype]
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().tobytes()
        else:
            raw = t.numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, m in header.items():
        if name == "__metadata__":
            continue
        a, b = m["data_offsets"]
        dt = {"F32": torch.float32, "F16": torch.float16}[m["dtype"]]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=dt).reshape(m["shape"]).clone()
    return out


# ---------------------------------------------------------------- train / export

def lr_at(step, steps):
    if step < CFG["warmup"]:
        return CFG["lr"] * (step + 1) / CFG["warmup"]
    t = (step - CFG["warmup"]) / max(1, steps - CFG["warmup"])
    return CFG["lr"] * (CFG["min_lr_frac"] + (1 - CFG["min_lr_frac"]) * 0.5 * (1 + math.cos(math.pi * t)))


def batch_offsets(n_tokens, steps):
    g = torch.Generator().manual_seed(CFG["seed"] + 1)
    return torch.randint(0, n_tokens - CFG["ctx"] - 1, (steps, CFG["batch"]), generator=g)


@torch.no_grad()
def eval_loss(model, ids, max_windows=64):
    T = CFG["ctx"]
    n = min(max_windows, (len(ids) - 1) // T)
    tot = 0.0
    for w in range(0, n, 16):
        xs = torch.stack([ids[i * T: i * T + T + 1] for i in range(w, min(n, w + 16))])
        logits = model(xs[:, :-1])
        tot += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), xs[:, 1:].reshape(-1), reduction="sum").item()
    return tot / (n * T)


def train_one(scheme, steps, train_ids, held_ids, offsets, log):
    torch.manual_seed(CFG["seed"])
    model = ZooModel(scheme, CFG)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": CFG["weight_decay"]},
                             {"params": nodecay, "weight_decay": 0.0}], lr=CFG["lr"], betas=(0.9, 0.95))
    ar = torch.arange(CFG["ctx"] + 1)
    t0 = time.time()
    recent = []
    for step in range(steps):
        for gp in opt.param_groups:
            gp["lr"] = lr_at(step, steps)
        xs = train_ids[offsets[step][:, None] + ar[None, :]]
        logits = model(xs[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), xs[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent = (recent + [loss.item()])[-50:]
        if step % 50 == 0 or step == steps - 1:
            log("%s step %d/%d loss %.4f lr %.2e %.2fs/step" % (scheme, step, steps, loss.item(),
                                                               lr_at(step, steps), (time.time() - t0) / (step + 1)))
    secs = time.time() - t0
    model.eval()
    # Evaluate the F16-rounded weights that are exported.
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    stats = dict(scheme=scheme, steps=steps, train_seconds=round(secs, 1),
                 train_loss_last50=round(sum(recent) / len(recent), 4),
                 train_loss=round(eval_loss(model, train_ids), 4),
                 heldout_loss=round(eval_loss(model, held_ids), 4))
    log(json.dumps(stats))
    return model, stats


def export(model, scheme, out_dir, spm_model, golden_ids, stats):
    os.makedirs(out_dir, exist_ok=True)
    c = CFG
    config = {
        "model_type": "ordo-zoo", "architectures": ["OrdoZooForCausalLM"], "position_scheme": scheme,
        "hidden_size": c["d_model"], "num_hidden_layers": c["n_layers"], "num_attention_heads": c["n_heads"],
        "head_dim": c["d_model"] // c["n_heads"], "intermediate_size": c["ffn"], "hidden_act": "silu",
        "vocab_size": c["vocab"], "rms_norm_eps": c["rms_eps"], "tie_word_embeddings": True,
        "max_position_embeddings": c["ctx"], "bos_token_id": BOS, "eos_token_id": EOS,
        "embed_scale": math.sqrt(c["d_model"]), "torch_dtype": "float16",
    }
    if scheme == "rope":
        config["rope_theta"] = c["rope_theta"]
    if scheme == "relative":
        config["relative_attention_num_buckets"] = c["num_buckets"]
        config["relative_attention_max_distance"] = c["max_distance"]
    if scheme == "learned":
        config["learned_positions"] = c["ctx"]
    if scheme == "alibi":
        config["alibi_max_bias"] = 8.0
    config["training"] = {k: stats[k] for k in ["steps", "train_loss", "heldout_loss"]}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out_dir, "model.safetensors"),
                      {k: v.half() for k, v in model.named_export().items()}, {"format": "pt"})
    shutil.copyfile(spm_model, os.path.join(out_dir, "tokenizer.model"))
    golden(out_dir, scheme, golden_ids)


def load_exported(out_dir):
    config = json.load(open(os.path.join(out_dir, "config.json")))
    scheme = config["position_scheme"]
    model = ZooModel(scheme, CFG)
    w = read_safetensors(os.path.join(out_dir, "model.safetensors"))
    sd = {}
    for k, v in model.named_export().items():
        sd[id(v)] = w[k].float()
    with torch.no_grad():
        for p in model.parameters():
            if id(p) in sd:
                p.copy_(sd[id(p)])
    return model, scheme


def golden(out_dir, scheme, ids):
    """Reference outputs in the fixtures' format, float32, from the exported (F16) weights."""
    model, _ = load_exported(out_dir)
    model.eval()
    hidden = []
    with torch.no_grad():
        logits = model(torch.tensor([ids]), hidden)[0]
    name = "heldout%d" % len(ids)
    t = {name + ".logits": logits.float()}
    for i, h in enumerate(hidden):
        t["%s.hidden_states.%d" % (name, i)] = h[0].float()
    write_safetensors(os.path.join(out_dir, "golden.safetensors"), t, {"format": "pt"})
    g = {
        "name": "zoo-" + scheme, "model_type": "ordo-zoo", "torch_version": torch.__version__, "dtype": "float32",
        "description": "ordo zoo model (position scheme %s): logits and hidden states computed by "
                       "tools/zoo/train_zoo.py in float32 from the exported F16 weights." % scheme,
        "weights": "trained (tools/zoo/train_zoo.py)",
        "cases": [{"name": name, "input_ids": list(map(int, ids)), "tensors": sorted(t)}],
    }
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(g, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--out", default="models/zoo")
    ap.add_argument("--bench", type=int, default=0, help="time this many steps of one model and exit")
    ap.add_argument("--golden-only", action="store_true", help="recompute golden files of exported models")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(CFG["seed"])
    torch.use_deterministic_algorithms(True)
    os.makedirs(a.out, exist_ok=True)
    log = lambda s: print(time.strftime("%H:%M:%S"), s, flush=True)
    schemes = a.schemes.split(",")
    for s in schemes:
        if s not in SCHEMES:
            raise SystemExit("unknown scheme %s" % s)
    work = tempfile.mkdtemp(prefix="ordo-zoo-")
    spm_model, train_txt, held_txt = prepare(work, a.out)
    train_ids, held_ids = encode_file(spm_model, train_txt), encode_file(spm_model, held_txt)
    log("train tokens %d, held-out tokens %d, held-out bytes %d" % (len(train_ids), len(held_ids),
                                                                   os.path.getsize(held_txt)))
    golden_ids = held_ids[:48].tolist()
    if a.golden_only:
        for s in schemes:
            golden(os.path.join(a.out, s), s, golden_ids)
        return
    steps = a.bench or a.steps
    offsets = batch_offsets(len(train_ids), steps)
    if a.bench:
        train_one(schemes[0], steps, train_ids, held_ids, offsets, log)
        return
    summary = []
    for s in schemes:
        model, stats = train_one(s, steps, train_ids, held_ids, offsets, log)
        export(model, s, os.path.join(a.out, s), spm_model, golden_ids, stats)
        summary.append(stats)
        log("exported %s" % s)
    with open(os.path.join(a.out, "training.json"), "w") as f:
        json.dump({"config": CFG, "heldout_books": HELDOUT_BOOKS, "models": summary}, f, indent=1)
        f.write("\n")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
