#!/usr/bin/env python3
"""Trains ordo's position-scheme zoo: small models identical in everything (data, batch order, seed,
size, steps) except the position scheme, in three kinds, three seeds each.

  schemes: none | learned | sinusoidal | relative | rope | alibi
  kinds:   lm     causal decoders on the King James Bible
           mlm    bidirectional masked-LM encoders, same data, size and architecture
           tasks  small decoders on synthetic tasks (copy, reverse, role), trained on lengths <= 20

Data: the King James Bible (Debian package bible-kjv-text, public domain), verse references
stripped; a few whole books are held out (heldout.txt). Tokenizer (lm, mlm): sentencepiece BPE
trained with spm_train; tasks: a WordLevel tokenizer.json over a small symbol vocabulary. Model:
pre-norm RMSNorm, SwiGLU, no biases, tied embeddings, written to mirror ordo's float32 math
(engine/src/transformer.cpp, engine/src/position/*.cpp).

Each model is exported as <out>/<kind>/<scheme>-s<seed>/{config.json, model.safetensors (F16),
tokenizer, golden.json, golden.safetensors}; the reference outputs are computed in float32 from the
exported (F16-rounded) weights. Training is deterministic (single thread, seeded, deterministic
algorithms) and resumable: a model whose outputs exist with the same config hash is skipped.

Needs: Debian's python3-torch (1.13), sentencepiece (spm_train, spm_encode), bible-kjv.
Run from the repository root:  python3 tools/zoo/train_zoo.py [--jobs 2] [--preset tiny --out DIR]
"""
import argparse
import concurrent.futures
import hashlib
import json
import math
import multiprocessing
import os
import random
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
KINDS = ["lm", "mlm", "tasks"]
SEEDS = [1, 2, 3]
HELDOUT_BOOKS = ["Ruth", "Est", "Jonah", "Phi", "Jas", "1Jn", "2Jn", "3Jn", "Jude"]
UNK, BOS, EOS, MASK = 0, 1, 2, 3
# Bumped whenever the outputs for an unchanged configuration change (it is part of the config hash,
# so resuming retrains everything after a bump).
FORMAT = 2

COMMON = dict(rms_eps=1e-5, rope_theta=10000.0, num_buckets=32, max_distance=128, alibi_max_bias=8.0,
              weight_decay=0.05, min_lr_frac=0.1)
LANG_FULL = dict(init_std=0.02, d_model=96, n_layers=3, n_heads=4, ffn=256, vocab=1024, ctx=128, batch=16, steps=800,
                 lr=3e-3, warmup=100, golden_tokens=12)
PRESETS = {
    "full": {
        "lm": dict(LANG_FULL),
        "mlm": dict(LANG_FULL, mask_prob=0.15),
        # init std d^-1/2: with GPT-2's 0.02 at d = 64 the attention stays uniform for thousands of steps.
        "tasks": dict(init_std=0.125, d_model=64, n_layers=3, n_heads=4, ffn=64, batch=32, steps=2800, lr=3e-3, warmup=100,
                      tasks=["copy", "reverse", "role"], task_weights=[1, 1, 2], train_max_n=20,
                      test_lengths=[20, 40, 80], suite_items=100, item_bits=10),
    },
    # For test fixtures: the same code paths, minutes of CPU in total, a few hundred KB of files.
    "tiny": {
        "lm": dict(LANG_FULL, d_model=32, n_layers=2, n_heads=2, ffn=64, ctx=64, batch=4, steps=30, warmup=5,
                   golden_tokens=16),
        "mlm": dict(LANG_FULL, d_model=32, n_layers=2, n_heads=2, ffn=64, ctx=64, batch=4, steps=30, warmup=5,
                    golden_tokens=16, mask_prob=0.15),
        "tasks": dict(init_std=0.18, d_model=32, n_layers=2, n_heads=2, ffn=64, batch=16, steps=400, lr=3e-3, warmup=20,
                      tasks=["copy", "reverse", "role"], task_weights=[1, 1, 2], train_max_n=20,
                      test_lengths=[20, 40, 80], suite_items=20, item_bits=10),
    },
}


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def sha256_file(path):
    with open(path, "rb") as f:
        return sha256_bytes(f.read())


def write_atomic(path, data):
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.replace(tmp, path)


def json_text(obj, indent=1):
    return json.dumps(obj, indent=indent) + "\n"


# ---------------------------------------------------------------- language data

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


def spm_encode_lines(spm_model, lines):
    """spm_encode ids of each line (no specials)."""
    for l in lines:
        if "\n" in l:
            raise ValueError("line with a newline: %r" % l)
    out = subprocess.run(["spm_encode", "--model=" + spm_model, "--output_format=id"], input="\n".join(lines) + "\n",
                         check=True, capture_output=True, text=True).stdout.split("\n")
    return [[int(x) for x in l.split()] for l in out[:len(lines)]]


def stream(verse_ids):
    """Training/held-out token stream: every verse starts with <s>, as a scored text does."""
    ids = []
    for v in verse_ids:
        ids.append(BOS)
        ids.extend(v)
    return torch.tensor(ids, dtype=torch.long)


def word_order_pairs(spm_model, held, n_pairs=4):
    """(original, swapped) texts from held-out verses: the first and the last content word (alphabetic,
    4+ letters, not the verse's first word; names if there are two) swapped, so the swapped text's tokens are a permutation of
    the original's (sentencepiece never merges across a space)."""
    cands = [v for v in held if 8 <= len(v.split()) <= 14]
    pairs = []
    for v in cands[::max(1, len(cands) // (4 * n_pairs))]:
        w = v.split()
        content = [k for k in range(1, len(w)) if w[k].isalpha() and len(w[k]) >= 4]
        names = [k for k in content if w[k][0].isupper()]
        if len({w[k] for k in names}) >= 2:  # two names: who did what to whom
            content = names
        if len(content) < 2:
            continue
        i, j = content[0], content[-1]
        if w[i] == w[j]:
            continue
        s = list(w)
        s[i], s[j] = s[j], s[i]
        a, b = spm_encode_lines(spm_model, [v, " ".join(s)])
        if sorted(a) != sorted(b) or a == b:
            continue
        pairs.append((v, " ".join(s)))
        if len(pairs) == n_pairs:
            break
    return pairs


def prepare_language(work, out):
    """Tokenizer, token streams and probe texts for lm and mlm, in `work`; heldout.txt in `out`."""
    verses = bible_verses()
    books = sorted({b for b, _ in verses})
    for b in HELDOUT_BOOKS:
        if b not in books:
            raise SystemExit("held-out book %s not in %s" % (b, books))
    train = [t for b, t in verses if b not in HELDOUT_BOOKS]
    held = [t for b, t in verses if b in HELDOUT_BOOKS]
    with open(os.path.join(work, "train.txt"), "w") as f:
        f.write("\n".join(train) + "\n")
    write_atomic(os.path.join(out, "heldout.txt"), "\n".join(held) + "\n")
    # Normalisation: only tab, LF and CR become spaces (a whole file encoded at once, as `ordo ppl`
    # does, has newlines). NFKC's table would make tokenizer.model 250 KB instead of 16 KB; KJV is
    # plain ASCII, so nothing else needs normalising.
    with open(os.path.join(work, "rules.tsv"), "w") as f:
        f.write("9\t20\nA\t20\nD\t20\n")
    # Relative paths (run in `work`): spm_train records them in the model, which must not depend on
    # the temporary directory's name.
    subprocess.run([
        "spm_train", "--input=train.txt", "--model_prefix=tok", "--vocab_size=1024", "--model_type=bpe",
        "--character_coverage=1.0", "--input_sentence_size=0", "--shuffle_input_sentence=false",
        "--num_threads=1", "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1",
        "--user_defined_symbols=<mask>", "--normalization_rule_tsv=rules.tsv", "--minloglevel=2"],
        check=True, cwd=work)
    spm_model = os.path.join(work, "tok.model")
    mask = spm_encode_lines(spm_model, ["<mask>"])[0]
    if mask[-1] != MASK:
        raise SystemExit("<mask> is not id %d in the sentencepiece model: %s" % (MASK, mask))
    train_ids = stream(spm_encode_lines(spm_model, train))
    held_ids = stream(spm_encode_lines(spm_model, held))
    pairs = word_order_pairs(spm_model, held)
    texts = [t for p in pairs for t in p]
    probe = [{"pair": i // 2, "order": ("original", "swapped")[i % 2], "text": t, "ids": [BOS] + ids}
             for i, (t, ids) in enumerate(zip(texts, spm_encode_lines(spm_model, texts)))]
    data = {"train_ids": train_ids, "held_ids": held_ids, "probe": probe,
            "tokenizer_sha": sha256_file(spm_model),
            "text_sha": sha256_bytes(("\n".join(train) + "\0" + "\n".join(held)).encode())}
    torch.save(data, os.path.join(work, "language.pt"))
    return data


# ---------------------------------------------------------------- task data

# 100 syllables (ba be … zu); an item's symbols are distinct (n <= 80), so each output symbol has
# one place in the input to be found by content: tiny models learn that within the budget, while
# with repeats they stay near chance on exact match.
SYMBOLS = [c + v for c in "bdfghjklmnprstvwxyz" + "c" for v in "aeiou"]
DIGITS = list("0123456789")
NOUNS = ["dog", "man", "cat", "fox", "cow", "bird", "horse", "sheep", "lion", "wolf", "ox", "goat"]
VERBS = ["bites", "sees", "chases", "eats", "loves", "kicks"]
TASK_WORDS = ["copy", "reverse", "role", "add", "=", ",", "?", "+", "who", "whom"]
TASK_VOCAB = (["<unk>", "<s>", "</s>"] + TASK_WORDS + DIGITS + SYMBOLS + NOUNS + VERBS)
TASK_ID = {w: i for i, w in enumerate(TASK_VOCAB)}


def task_item(task, n, rng):
    """(prompt words, target words) of one item of `task` at length n."""
    if task in ("copy", "reverse"):
        s = rng.sample(SYMBOLS, n)
        return [task] + s + ["="], (s if task == "copy" else s[::-1])
    if task == "role":
        # n clauses "X v Y"; the query is one of them with a participant replaced by who/whom
        # ("who bites man" -> the subject, "dog bites whom" -> the object). Only word order tells
        # subject and object apart: the same nouns occur as both.
        def clause():
            s = rng.choice(NOUNS)
            return (s, rng.choice([x for x in NOUNS if x != s]), rng.randrange(len(VERBS)))
        cl = [clause() for _ in range(n)]
        q = rng.randrange(n)
        who = rng.random() < 0.5
        key = (lambda c: (c[1], c[2])) if who else (lambda c: (c[0], c[2]))  # (object, verb) / (subject, verb)
        for j in range(n):
            while j != q and key(cl[j]) == key(cl[q]):
                cl[j] = clause()
        words = ["role"]
        for j, (s, o, v) in enumerate(cl):
            words += ([","] if j else []) + [s, VERBS[v], o]
        s, o, v = cl[q]
        if who:
            return words + ["?", "who", VERBS[v], o], [s]
        return words + ["?", s, VERBS[v], "whom"], [o]
    if task == "add":
        a = [rng.choice(DIGITS[1:] if n > 1 else DIGITS)] + [rng.choice(DIGITS) for _ in range(n - 1)]
        m = rng.randint(1, n)
        b = [rng.choice(DIGITS[1:] if m > 1 else DIGITS)] + [rng.choice(DIGITS) for _ in range(m - 1)]
        return ["add"] + a + ["+"] + b + ["="], list(str(int("".join(a)) + int("".join(b))))
    raise ValueError(task)


def max_task_len(tasks, n):
    """Longest bos + prompt + target + eos of any item at length n."""
    longest = {"copy": 2 * n + 4, "reverse": 2 * n + 4, "role": 4 * n + 7, "add": 3 * n + 6}
    return max(longest[t] for t in tasks)


def task_ids(words):
    return [TASK_ID[w] for w in words]


def make_suite(c):
    rng = random.Random(20230517)  # fixed: every seed and scheme sees the same test items
    items = []
    for task in c["tasks"]:
        for n in c["test_lengths"]:
            for _ in range(c["suite_items"]):
                p, t = task_item(task, n, rng)
                items.append({"task": task, "length": n, "prompt": " ".join(p), "target": " ".join(t)})
    return items


def task_tokenizer_json():
    """HF tokenizer.json: WordLevel over TASK_VOCAB, whitespace split, <s> prepended."""
    special = lambda i: {"id": i, "content": TASK_VOCAB[i], "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": False, "special": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special(i) for i in range(3)],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [BOS], "tokens": ["<s>"]}},
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(TASK_VOCAB)}, "unk_token": "<unk>"},
    }


def prepare_tasks(out, c):
    suite = make_suite(c)
    text = "".join(json.dumps(it) + "\n" for it in suite)
    os.makedirs(os.path.join(out, "tasks"), exist_ok=True)
    write_atomic(os.path.join(out, "tasks", "suite.jsonl"), text)
    return {"suite": suite, "suite_sha": sha256_bytes(text.encode()),
            "vocab_sha": sha256_bytes(json.dumps(TASK_VOCAB).encode())}


# ---------------------------------------------------------------- model (mirrors ordo)

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


# ---------------------------------------------------------------- safetensors (no extra packages)

def safetensors_bytes(tensors, metadata=None):
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
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def write_safetensors(path, tensors, metadata=None):
    with open(path, "wb") as f:
        f.write(safetensors_bytes(tensors, metadata))


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


# ---------------------------------------------------------------- configuration of one model

def model_config(kind, preset, overrides=None):
    c = dict(COMMON, **PRESETS[preset][kind])
    for k, v in (overrides or {}).get(kind, {}).items():
        if k not in c:
            raise SystemExit("--set %s.%s: no such setting (%s)" % (kind, k, ", ".join(sorted(c))))
        c[k] = v
    if kind == "tasks":
        c["vocab"] = len(TASK_VOCAB)
        # Sized to the longest training sequence: the learned table has no row beyond it.
        c["positions"] = max_task_len(c["tasks"], c["train_max_n"])
    else:
        c["positions"] = c["ctx"]
    return c


def config_hash(kind, scheme, seed, c, data_sha):
    key = {"format": FORMAT, "kind": kind, "scheme": scheme, "seed": seed, "config": c, "data": data_sha,
           "torch": torch.__version__}
    return sha256_bytes(json.dumps(key, sort_keys=True).encode())[:16]


def data_sha(kind, lang, tasks):
    if kind == "tasks":
        return tasks["suite_sha"] + tasks["vocab_sha"]
    return lang["tokenizer_sha"] + lang["text_sha"] + sha256_bytes(json.dumps(lang["probe"]).encode())


def model_name(scheme, seed):
    return "%s-s%d" % (scheme, seed)


# ---------------------------------------------------------------- training

def lr_at(c, step):
    if step < c["warmup"]:
        return c["lr"] * (step + 1) / c["warmup"]
    t = (step - c["warmup"]) / max(1, c["steps"] - c["warmup"])
    return c["lr"] * (c["min_lr_frac"] + (1 - c["min_lr_frac"]) * 0.5 * (1 + math.cos(math.pi * t)))


def mlm_mask(x, c, g):
    """BERT's rule: 15% of the non-special positions are chosen; of those 80% become <mask>, 10% a
    random token, 10% stay. Returns (input, target with -100 where no loss)."""
    chosen = (torch.rand(x.shape, generator=g) < c["mask_prob"]) & (x > MASK)
    r = torch.rand(x.shape, generator=g)
    rnd = torch.randint(MASK + 1, c["vocab"], x.shape, generator=g)
    inp = torch.where(chosen & (r < 0.8), torch.full_like(x, MASK), x)
    inp = torch.where(chosen & (r >= 0.8) & (r < 0.9), rnd, inp)
    return inp, torch.where(chosen, x, torch.full_like(x, -100))


def task_batch(c, rng):
    """A training batch of one random task (less padding than mixed tasks) at random lengths
    1..train_max_n: [B, T] ids and targets (-100 on prompt and padding; the loss is on the answer and
    its </s>)."""
    seqs = []
    task = rng.choices(c["tasks"], weights=c["task_weights"])[0]
    for _ in range(c["batch"]):
        p, t = task_item(task, rng.randint(1, c["train_max_n"]), rng)
        seqs.append(([BOS] + task_ids(p), task_ids(t) + [EOS]))
    T = max(len(p) + len(t) for p, t in seqs)
    x = torch.full((len(seqs), T), EOS, dtype=torch.long)
    y = torch.full((len(seqs), T), -100, dtype=torch.long)
    for i, (p, t) in enumerate(seqs):
        s = p + t
        x[i, :len(s)] = torch.tensor(s)
        y[i, len(p) - 1:len(s) - 1] = torch.tensor(t)  # position j predicts token j+1
    return x, y


def make_batches(kind, c, seed, lang):
    """A generator of (input, target) for each step, fixed by the seed (same for every scheme)."""
    if kind == "tasks":
        rng = random.Random(seed * 1000003 + 17)
        for _ in range(c["steps"]):
            yield task_batch(c, rng)
        return
    ids = lang["train_ids"]
    g = torch.Generator().manual_seed(seed * 1000003 + 1)
    gm = torch.Generator().manual_seed(seed * 1000003 + 2)
    T = c["ctx"]
    ar = torch.arange(T + 1)
    for _ in range(c["steps"]):
        off = torch.randint(0, len(ids) - T - 1, (c["batch"],), generator=g)
        xs = ids[off[:, None] + ar[None, :]]
        if kind == "lm":
            yield xs[:, :-1], xs[:, 1:]
        else:
            yield mlm_mask(xs[:, :-1], c, gm)


@torch.no_grad()
def heldout_loss(kind, model, c, ids, max_windows=64):
    """lm: next-token loss over windows of ctx; mlm: masked-token loss (fixed masking)."""
    T = c["ctx"]
    n = min(max_windows, (len(ids) - 1) // T)
    gm = torch.Generator().manual_seed(4321)
    tot, cnt = 0.0, 0
    for w in range(0, n, 16):
        xs = torch.stack([ids[i * T: i * T + T + 1] for i in range(w, min(n, w + 16))])
        if kind == "lm":
            x, y = xs[:, :-1], xs[:, 1:]
        else:
            x, y = mlm_mask(xs[:, :-1], c, gm)
        logits = model(x)
        tot += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum").item()
        cnt += int((y != -100).sum())
    return tot / cnt


def train_one(kind, scheme, seed, c, lang, tag):
    torch.manual_seed(seed)
    model = ZooModel(scheme, c, causal=(kind != "mlm"))
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": c["weight_decay"]},
                             {"params": nodecay, "weight_decay": 0.0}], lr=c["lr"], betas=(0.9, 0.95))
    t0, cpu0 = time.time(), time.process_time()
    recent = []
    every = max(1, c["steps"] // 10)
    for step, (x, y) in enumerate(make_batches(kind, c, seed, lang)):
        for gp in opt.param_groups:
            gp["lr"] = lr_at(c, step)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent = (recent + [loss.item()])[-50:]
        if step % every == 0 or step == c["steps"] - 1:
            log("%s step %d/%d loss %.4f  %.3fs/step wall, %.3fs/step cpu" % (
                tag, step + 1, c["steps"], sum(recent) / len(recent), (time.time() - t0) / (step + 1),
                (time.process_time() - cpu0) / (step + 1)))
    stats = dict(kind=kind, scheme=scheme, seed=seed, steps=c["steps"], train_seconds=round(time.time() - t0, 1),
                 train_cpu_seconds=round(time.process_time() - cpu0, 1),
                 train_loss_last50=round(sum(recent) / len(recent), 4))
    return model, stats


def round_to_f16(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


# ---------------------------------------------------------------- export and references

def hf_config(kind, scheme, seed, c, chash, preset, overrides):
    config = {
        "model_type": "ordo-zoo",
        "architectures": ["OrdoZooForMaskedLM" if kind == "mlm" else "OrdoZooForCausalLM"],
        "position_scheme": scheme,
        "hidden_size": c["d_model"], "num_hidden_layers": c["n_layers"], "num_attention_heads": c["n_heads"],
        "head_dim": c["d_model"] // c["n_heads"], "intermediate_size": c["ffn"], "hidden_act": "silu",
        "vocab_size": c["vocab"], "rms_norm_eps": c["rms_eps"], "tie_word_embeddings": True,
        "max_position_embeddings": c["positions"], "bos_token_id": BOS, "eos_token_id": EOS,
        "embed_scale": math.sqrt(c["d_model"]), "torch_dtype": "float16",
    }
    if kind == "mlm":
        config["bidirectional"] = True
        config["mask_token_id"] = MASK
    if scheme == "rope":
        config["rope_theta"] = c["rope_theta"]
    if scheme == "relative":
        config["relative_attention_num_buckets"] = c["num_buckets"]
        config["relative_attention_max_distance"] = c["max_distance"]
    if scheme == "learned":
        config["learned_positions"] = c["positions"]
    if scheme == "alibi":
        config["alibi_max_bias"] = c["alibi_max_bias"]
    config["zoo"] = {"kind": kind, "scheme": scheme, "seed": seed, "preset": preset, "config_hash": chash}
    if kind == "tasks":
        config["zoo"]["train_length"] = c["train_max_n"]  # ordo compare scales at n / train_length
    if overrides.get(kind):
        config["zoo"]["overrides"] = overrides[kind]
    return config


def load_exported(model_dir):
    config = json.load(open(os.path.join(model_dir, "config.json")))
    z = config["zoo"]
    c = model_config(z["kind"], z["preset"], {z["kind"]: z.get("overrides", {})})
    model = ZooModel(z["scheme"], c, causal=(z["kind"] != "mlm"))
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    with torch.no_grad():
        for k, v in model.named_export().items():
            v.copy_(w[k].float())
    model.eval()
    return model, z["kind"], z["scheme"], c


@torch.no_grad()
def pll(model, ids):
    """Pseudo-log-likelihood (Salazar et al. 2020): each of the text's tokens masked in turn. ids are
    [BOS] + the text's ids; every position after BOS is the text's (an <unk> inside it too), as in ordo."""
    pos = list(range(1, len(ids)))
    x = torch.tensor([ids] * len(pos))
    for r, i in enumerate(pos):
        x[r, i] = MASK
    lp = torch.log_softmax(model(x), dim=-1)
    return sum(float(lp[r, i, ids[i]]) for r, i in enumerate(pos))


@torch.no_grad()
def causal_logprob(model, ids):
    lp = torch.log_softmax(model(torch.tensor([ids]))[0], dim=-1)
    return sum(float(lp[t - 1, ids[t]]) for t in range(1, len(ids)))


@torch.no_grad()
def task_correct(model, items, scaling=None):
    """Per item: does greedy decoding produce exactly target + </s>? Equivalent to every teacher-
    forced argmax on the target and </s> being right (greedy keeps the prefix until the first wrong
    argmax), so one forward per item suffices. Items of equal shape are batched."""
    enc = [([BOS] + task_ids(it["prompt"].split()), task_ids(it["target"].split()) + [EOS]) for it in items]
    ok = [None] * len(items)
    groups = {}
    for i, (p, t) in enumerate(enc):
        groups.setdefault((len(p), len(t)), []).append(i)
    for (lp, lt), idx in sorted(groups.items()):
        for b in range(0, len(idx), 50):
            part = idx[b:b + 50]
            x = torch.tensor([enc[i][0] + enc[i][1][:-1] for i in part])
            pred = model(x, scaling=scaling)[:, lp - 1:, :].argmax(-1)
            tgt = torch.tensor([enc[i][1] for i in part])
            for r, i in enumerate(part):
                ok[i] = bool((pred[r] == tgt[r]).all())
    return ok


def task_references(model, scheme, c, suite):
    """Accuracy per (task, length), plain and with ordo's scalings at the lengths beyond training."""
    L = c["train_max_n"]
    variants = [(None, None)]
    if scheme == "rope":
        variants += [("ntk", None), ("yarn", None)]
    if scheme == "learned":
        variants += [("linear", None)]
    plain, scaled = [], []
    for task in c["tasks"]:
        for n in c["test_lengths"]:
            items = [it for it in suite if it["task"] == task and it["length"] == n]
            longest = max_task_len([task], n)
            for kind, _ in variants:
                factor = n / L
                if kind is not None and n <= L:
                    continue
                sc = (kind, factor) if kind else None
                if scheme == "learned" and longest > (math.floor(factor * c["positions"] + 1e-9) if kind
                                                      else c["positions"]):
                    continue  # ordo refuses positions beyond the (interpolated) table
                ok = task_correct(model, items, sc)
                rec = {"task": task, "length": n, "n_items": len(items), "correct": sum(ok),
                       "accuracy": sum(ok) / len(items), "items": [int(b) for b in ok[:c["item_bits"]]]}
                if kind:
                    scaled.append(dict({"scaling": kind, "factor": factor}, **rec))
                else:
                    plain.append(rec)
    return plain, scaled


def golden(model_dir, lang, tasks):
    """Reference outputs in the fixtures' format, float32, from the exported (F16) weights."""
    model, kind, scheme, c = load_exported(model_dir)
    seed = json.load(open(os.path.join(model_dir, "config.json")))["zoo"]["seed"]
    if kind == "tasks":
        it = task_item("copy", 6, random.Random(7))
        ids = [BOS] + task_ids(it[0] + it[1]) + [EOS]
        name = "copy6"
    else:
        ids = lang["held_ids"][:c["golden_tokens"]].tolist()
        name = "heldout%d" % len(ids)
    hidden = []
    with torch.no_grad():
        logits = model(torch.tensor([ids]), hidden)[0]
    t = {name + ".logits": logits.float()}
    for i, h in enumerate(hidden):
        t["%s.hidden_states.%d" % (name, i)] = h[0].float()
    g = {
        "name": "zoo-%s-%s" % (kind, model_name(scheme, seed)), "model_type": "ordo-zoo",
        "torch_version": torch.__version__, "dtype": "float32",
        "description": "ordo zoo %s model (position scheme %s): logits and hidden states computed by "
                       "tools/zoo/train_zoo.py in float32 from the exported F16 weights." % (kind, scheme),
        "weights": "trained (tools/zoo/train_zoo.py)",
        "cases": [{"name": name, "input_ids": list(map(int, ids)), "tensors": sorted(t)}],
    }
    if kind == "mlm":
        g["pll"] = [dict(p, pll=pll(model, p["ids"])) for p in lang["probe"]]
    elif kind == "lm":
        g["logprob"] = [dict(p, logprob=causal_logprob(model, p["ids"])) for p in lang["probe"]]
    else:
        g["suite"] = "../suite.jsonl"
        g["tasks"], g["scaled"] = task_references(model, scheme, c, tasks["suite"])
    write_safetensors(os.path.join(model_dir, "golden.safetensors"), t, {"format": "pt"})
    with open(os.path.join(model_dir, "golden.json"), "w") as f:
        f.write(json_text(g))
    return g


def model_complete(model_dir, chash):
    need = ["config.json", "model.safetensors", "golden.json", "golden.safetensors"]
    if not all(os.path.exists(os.path.join(model_dir, f)) for f in need):
        return False
    try:
        return json.load(open(os.path.join(model_dir, "config.json")))["zoo"]["config_hash"] == chash
    except (ValueError, KeyError):
        return False


# ---------------------------------------------------------------- one job (runs in a worker process)

_DATA = {}


def worker_init(work):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    _DATA["work"] = work


def worker_data(kind):
    if kind != "tasks" and "lang" not in _DATA:
        _DATA["lang"] = torch.load(os.path.join(_DATA["work"], "language.pt"))
    if kind == "tasks" and "tasks" not in _DATA:
        _DATA["tasks"] = torch.load(os.path.join(_DATA["work"], "tasks.pt"))
    return _DATA.get("lang"), _DATA.get("tasks")


def run_job(job):
    """Trains and exports one model into a temporary directory, then renames it into place."""
    kind, scheme, seed, preset, out, chash, ov = (job[k] for k in ["kind", "scheme", "seed", "preset", "out", "hash",
                                                                   "overrides"])
    lang, tasks = worker_data(kind)
    c = model_config(kind, preset, ov)
    tag = "%s/%s" % (kind, model_name(scheme, seed))
    model, stats = train_one(kind, scheme, seed, c, lang, tag)
    model.eval()
    round_to_f16(model)  # everything below sees the exported weights
    if kind != "tasks":
        stats["heldout_loss"] = round(heldout_loss(kind, model, c, lang["held_ids"]), 4)
        stats["train_eval_loss"] = round(heldout_loss(kind, model, c, lang["train_ids"]), 4)
    final = os.path.join(out, kind, model_name(scheme, seed))
    tmp = os.path.join(out, kind, ".tmp-%s-%d" % (model_name(scheme, seed), os.getpid()))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    config = hf_config(kind, scheme, seed, c, chash, preset, ov)
    config["training"] = {k: stats[k] for k in stats if k in ("steps", "heldout_loss", "train_loss_last50")}
    with open(os.path.join(tmp, "config.json"), "w") as f:
        f.write(json_text(config, indent=2))
    write_safetensors(os.path.join(tmp, "model.safetensors"),
                      {k: v.half() for k, v in model.named_export().items()}, {"format": "pt"})
    if kind == "tasks":
        with open(os.path.join(tmp, "tokenizer.json"), "w") as f:
            f.write(json_text(task_tokenizer_json()))
    else:
        shutil.copyfile(os.path.join(_DATA["work"], "tok.model"), os.path.join(tmp, "tokenizer.model"))
    g = golden(tmp, lang, tasks)
    if kind == "tasks":
        stats["accuracy"] = {"%s@%d" % (r["task"], r["length"]): r["accuracy"] for r in g["tasks"]}
    if os.path.exists(final):
        old = final + ".old%d" % os.getpid()
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old)
    else:
        os.rename(tmp, final)
    stats["config_hash"] = chash
    log("%s done: %s" % (tag, json.dumps({k: v for k, v in stats.items() if k not in ("kind", "scheme", "seed")})))
    return stats


# ---------------------------------------------------------------- main

def bench(kind, scheme, preset, overrides, steps, work):
    worker_init(work)
    lang, _ = worker_data(kind)
    c = dict(model_config(kind, preset, overrides), steps=steps)
    _, stats = train_one(kind, scheme, 1, c, lang, "bench %s/%s" % (kind, scheme))
    print(json.dumps({"kind": kind, "scheme": scheme, "steps": steps,
                      "wall_per_step": stats["train_seconds"] / steps,
                      "cpu_per_step": stats["train_cpu_seconds"] / steps}))


def update_training_json(out, preset, overrides, results):
    path = os.path.join(out, "training.json")
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        doc = {}
    models = {(m["kind"], m["scheme"], m["seed"]): m for m in doc.get("models", []) if "kind" in m}
    for r in results:
        models[(r["kind"], r["scheme"], r["seed"])] = r
    order = lambda k: (KINDS.index(k[0]), SCHEMES.index(k[1]), k[2])
    doc = {"preset": preset, "overrides": overrides, "config": {k: model_config(k, preset, overrides) for k in KINDS},
           "heldout_books": HELDOUT_BOOKS, "task_vocab": TASK_VOCAB,
           "models": [models[k] for k in sorted(models, key=order)]}
    write_atomic(path, json_text(doc))


def parse_list(s, allowed, conv=str):
    vals = [conv(x) for x in s.split(",") if x]
    for v in vals:
        if v not in allowed:
            raise SystemExit("unknown value %s (expected one of %s)" % (v, ",".join(map(str, allowed))))
    return vals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="full", choices=sorted(PRESETS))
    ap.add_argument("--out", default="models/zoo")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--models", default="", help="explicit list kind/scheme-sN,... (instead of kinds x schemes x seeds)")
    ap.add_argument("--set", action="append", default=[],
                    help="override a setting of the preset, kind.key=JSON (repeatable; e.g. tasks.steps=500)")
    ap.add_argument("--jobs", type=int, default=1, help="models trained at once, one process (one thread) each")
    ap.add_argument("--force", action="store_true", help="retrain models even if their outputs are up to date")
    ap.add_argument("--bench", type=int, default=0, help="time this many steps of the first kind and scheme; exit")
    ap.add_argument("--golden-only", action="store_true", help="recompute the reference files of exported models")
    a = ap.parse_args()
    if a.models:
        jobs = []
        for m in a.models.split(","):
            mm = re.match(r"^(\w+)/(\w+)-s(\d+)$", m)
            if not mm or mm.group(1) not in KINDS or mm.group(2) not in SCHEMES:
                raise SystemExit("bad --models entry %r (expected kind/scheme-sN)" % m)
            jobs.append((mm.group(1), mm.group(2), int(mm.group(3))))
    else:
        kinds = parse_list(a.kinds, KINDS)
        jobs = [(k, s, seed) for k in kinds for s in parse_list(a.schemes, SCHEMES)
                for seed in parse_list(a.seeds, range(1, 1000), int)]
    overrides = {}
    for item in a.set:
        mm = re.match(r"^(\w+)\.(\w+)=(.*)$", item)
        if not mm or mm.group(1) not in KINDS:
            raise SystemExit("bad --set entry %r (expected kind.key=value)" % item)
        try:
            v = json.loads(mm.group(3))
        except ValueError:
            v = mm.group(3)
        overrides.setdefault(mm.group(1), {})[mm.group(2)] = v
    for k in overrides:
        model_config(k, a.preset, overrides)  # unknown keys fail here
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    work = tempfile.mkdtemp(prefix="ordo-zoo-")
    if a.bench:
        a.out = work  # a benchmark writes nothing outside its temporary directory
    os.makedirs(a.out, exist_ok=True)
    try:
        t0 = time.time()
        lang = prepare_language(work, a.out) if any(k != "tasks" for k, _, _ in jobs) else None
        tasks = None
        if any(k == "tasks" for k, _, _ in jobs):
            tasks = prepare_tasks(a.out, model_config("tasks", a.preset, overrides))
            torch.save(tasks, os.path.join(work, "tasks.pt"))
        if lang:
            log("language data: train tokens %d, held-out tokens %d, tokenizer %s (%.0fs)" % (
                len(lang["train_ids"]), len(lang["held_ids"]), lang["tokenizer_sha"][:12], time.time() - t0))
        if a.bench:
            k, s, _ = jobs[0]
            bench(k, s, a.preset, overrides, a.bench, work)
            return
        if a.golden_only:
            for k, s, seed in jobs:
                d = os.path.join(a.out, k, model_name(s, seed))
                golden(d, lang, tasks)
                log("golden files of %s rewritten" % d)
            return
        todo = []
        for k, s, seed in jobs:
            chash = config_hash(k, s, seed, model_config(k, a.preset, overrides), data_sha(k, lang, tasks))
            d = os.path.join(a.out, k, model_name(s, seed))
            if not a.force and model_complete(d, chash):
                log("%s/%s is up to date (config %s), skipped" % (k, model_name(s, seed), chash))
                continue
            os.makedirs(os.path.join(a.out, k), exist_ok=True)
            todo.append({"kind": k, "scheme": s, "seed": seed, "preset": a.preset, "out": a.out, "hash": chash,
                         "overrides": overrides})
        log("%d of %d models to train, %d at once" % (len(todo), len(jobs), a.jobs))
        done = 0
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs), mp_context=ctx,
                                                    initializer=worker_init, initargs=(work,)) as ex:
            futs = [ex.submit(run_job, j) for j in todo]
            for f in concurrent.futures.as_completed(futs):
                stats = f.result()
                update_training_json(a.out, a.preset, overrides, [stats])
                done += 1
                log("[%d/%d] %s/%s-s%d exported, %.1f min elapsed" % (
                    done, len(todo), stats["kind"], stats["scheme"], stats["seed"], (time.time() - t0) / 60))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
