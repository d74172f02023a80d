"""ordo.compare(): `ordo compare` run in-process; returns exactly what its --json writes."""
import json
import os
import tempfile

from . import _ordo


def compare(models=(), *, positions=(), zoo=None, no_zoo=False, text=None, pairs=None, max_pairs=None,
            multiples=None, ctx_base=None, probe_tokens=None, attn_windows=None, length_tokens=None,
            tasks=None, quick=False, backend=None, threads=None, html=None):
    """Position schemes side by side (word order, permutation, length, attention by distance, synthetic
    tasks) over the zoo and/or model directories, as `ordo compare` runs them. Returns the JSON
    document of `ordo compare --json` as dicts and lists. Each keyword is the flag of the same name."""
    args = ["compare"]
    for m in ([models] if isinstance(models, (str, os.PathLike)) else models):
        args += ["-m", os.fspath(m)]
    for p in ([positions] if isinstance(positions, str) else positions):
        args += ["--position", p]
    flags = {"--zoo": zoo, "--text": text, "--pairs": pairs, "--max-pairs": max_pairs, "--ctx-base": ctx_base,
             "--probe-tokens": probe_tokens, "--attn-windows": attn_windows, "--length-tokens": length_tokens,
             "--backend": backend, "--threads": threads, "--html": html}
    if multiples is not None:
        flags["--multiples"] = ",".join(str(int(x)) for x in multiples)
    if tasks is not None:
        flags["--tasks"] = tasks if isinstance(tasks, str) else ",".join(tasks)
    for flag, value in flags.items():
        if value is not None:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    if no_zoo:
        args.append("--no-zoo")
    if quick:
        args.append("--quick")
    with tempfile.TemporaryDirectory(prefix="ordo-compare-") as d:
        out = os.path.join(d, "compare.json")
        _ordo._run_cli(args + ["--json", out])
        with open(out, encoding="utf-8") as f:
            return json.load(f)
