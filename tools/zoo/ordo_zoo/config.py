# The configuration of one model: its preset and overrides, its hash, its directory name.
import json

import torch

from .files import sha256_bytes
from .settings import COMMON, FORMAT, PRESETS
from .tasks import TASK_VOCAB, max_task_len


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
