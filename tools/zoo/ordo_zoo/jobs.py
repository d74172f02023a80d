# One model's job, run in a worker process: train, export into a temporary directory, rename.
import json
import os
import shutil

import torch

from .config import model_config, model_name
from .export import golden, hf_config
from .files import json_text, log, write_safetensors
from .tasks import task_tokenizer_json
from .train import heldout_loss, round_to_f16, train_one


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
