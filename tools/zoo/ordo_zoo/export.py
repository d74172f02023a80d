# Export and references: config.json, reference outputs from the exported F16 weights.
import json
import math
import os
import random

import torch

from .config import model_config, model_name
from .files import json_text, read_safetensors, write_safetensors
from .model import ZooModel
from .settings import BOS, EOS, MASK
from .tasks import max_task_len, task_ids, task_item


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
