# The trainer's command line: which models to train, resuming, parallel jobs, training.json.
import argparse
import concurrent.futures
import json
import multiprocessing
import os
import re
import shutil
import tempfile
import time

import torch

from . import __doc__ as TRAINER_DOC
from .config import config_hash, data_sha, model_config, model_name
from .export import golden, model_complete
from .files import json_text, log, write_atomic
from .jobs import run_job, worker_data, worker_init
from .language import prepare_language
from .settings import HELDOUT_BOOKS, KINDS, PRESETS, SCHEMES, SEEDS
from .tasks import TASK_VOCAB, prepare_tasks
from .train import train_one


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


def parse_jobs(a):
    """(kind, scheme, seed) of every model named by --models, or by --kinds x --schemes x --seeds."""
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
    return jobs


def parse_overrides(items):
    """--set kind.key=JSON entries as {kind: {key: value}} (a value that is not JSON stays a string)."""
    overrides = {}
    for item in items:
        mm = re.match(r"^(\w+)\.(\w+)=(.*)$", item)
        if not mm or mm.group(1) not in KINDS:
            raise SystemExit("bad --set entry %r (expected kind.key=value)" % item)
        try:
            v = json.loads(mm.group(3))
        except ValueError:
            v = mm.group(3)
        overrides.setdefault(mm.group(1), {})[mm.group(2)] = v
    return overrides


def main():
    ap = argparse.ArgumentParser(description=TRAINER_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="full", choices=sorted(PRESETS))
    ap.add_argument("--out", default="models/zoo")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    ap.add_argument("--models", default="",
                    help="explicit list kind/scheme-sN,... (instead of kinds x schemes x seeds)")
    ap.add_argument("--set", action="append", default=[],
                    help="override a setting of the preset, kind.key=JSON (repeatable; e.g. tasks.steps=500)")
    ap.add_argument("--jobs", type=int, default=1, help="models trained at once, one process (one thread) each")
    ap.add_argument("--force", action="store_true", help="retrain models even if their outputs are up to date")
    ap.add_argument("--bench", type=int, default=0, help="time this many steps of the first kind and scheme; exit")
    ap.add_argument("--golden-only", action="store_true", help="recompute the reference files of exported models")
    a = ap.parse_args()
    jobs = parse_jobs(a)
    overrides = parse_overrides(a.set)
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
