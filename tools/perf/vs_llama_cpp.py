#!/usr/bin/env python3
# ordo against llama.cpp on the same GGUF files, same machine and threads, in interleaved rounds.
"""Usage: vs_llama_cpp.py LLAMA_CPP_SRC [--build-dir DIR] [--shape 110m] [--types f32,q8_0,q4_0,q4_k_m]
                        [--rounds 2] [--threads 2] [--work DIR] [--out TABLE.md] [--ordo build/bin/ordo]
                        [--llama-rev REV]

Builds llama.cpp's llama-bench, llama-batched-bench and llama-quantize from the source tree LLAMA_CPP_SRC (into
--build-dir, default LLAMA_CPP_SRC/build-vs-ordo; LLAMA_CMAKE_ARGS adds configure flags), writes a
random-weight Llama model of --shape (tools/perf/synthetic_dir.py: 110m, 1b or DIM,LAYERS,HEADS,
KV_HEADS,FFN,VOCAB; the bundled SentencePiece tokenizer) as one GGUF file per type with
`ordo quantize --format gguf`, then measures, per round and per file, llama.cpp and ordo one after
the other (which goes first alternates between rounds):

  prefill  512 tokens            llama-bench -p 512             ordo bench --prompts 512
  decode   one sequence          llama-bench -n 128             ordo bench --ctx-lengths 128
  decode   16 sequences (total)  llama-batched-bench -npl 16    ordo bench --parallel 16
           (-npp 128 -ntg 128)

A K-quant type (--types q4_k_m, q5_k_m, q6_k...) is made from the f32 file by llama.cpp's own
llama-quantize, as a user's file would be. ordo runs the file's type where `ordo bench --dtypes`
offers it (q8_0, q4_0); a Q4_K_M file as stored (`--dtypes q4_k`: its Q4_K layers on ordo's Q4_K
kernels, the Q6_K ones decoded to Q8_0 at load), another K-quant file as q8_0; else the nearest it
has (int8 for a quantized file, weights dequantised at load then stored as int8) and says so in the
table (--llama-rev names llama.cpp's commit where LLAMA_CPP_SRC is not a git checkout, e.g. an
exported tree). The median of the rounds is reported with ordo/llama.cpp ratios, as one markdown table
headed by CPU, date, both commits, threads and load averages (--out, and stdout).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sh(cmd, **kw):
    print("+ " + " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw).stdout


LLAMA_TOOLS = ("llama-bench", "llama-batched-bench", "llama-quantize")


def is_k_quant(t):
    return "_k" in t


def build_llama(src, build, threads):
    bins = [build / "bin" / n for n in LLAMA_TOOLS]
    if all(b.exists() for b in bins):
        return bins
    extra = os.environ.get("LLAMA_CMAKE_ARGS", "").split()
    sh(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_SERVER=OFF", *extra])
    sh(["cmake", "--build", build, "-j", str(threads), "--target", *LLAMA_TOOLS])
    return bins


def make_models(ordo, quantize, work, shape, types):
    tag = shape.replace(",", "x")  # llama-bench reads commas in -m as a list of files
    hf = work / f"hf-{tag}"
    if not (hf / "model.safetensors").exists():
        sh([sys.executable, ROOT / "tools" / "perf" / "synthetic_dir.py", hf, "--shape", shape])
        shutil.copy(ROOT / "models" / "stories260K" / "tokenizer.model", hf / "tokenizer.model")
    files = {}
    for t in types:
        f = work / f"model-{tag}-{t}.gguf"
        if not f.exists() and is_k_quant(t):
            f32 = work / f"model-{tag}-f32.gguf"
            if not f32.exists():
                sh([ordo, "quantize", "-m", hf, "--format", "gguf", "--dtype", "f32", "-o", f32])
            sh([quantize, f32, f, t.upper(), 1])
        elif not f.exists():
            sh([ordo, "quantize", "-m", hf, "--format", "gguf", "--dtype", t, "-o", f])
        files[t] = f
    return files


def ordo_dtype(ordo, t):
    helptext = sh([ordo, "bench", "--help"])
    offered = helptext[helptext.find("--dtypes"):].split("\n")[1]
    if t in offered:
        return t
    if t.startswith("q4_k") and "q4_k" in offered:
        return "q4_k"
    if is_k_quant(t) and "q8_0" in offered:
        return "q8_0"
    return "f32" if t in ("f32", "f16") else "int8"


def run_llama(bench, batched, f, threads):
    out = json.loads(sh([bench, "-m", f, "-t", threads, "-p", 512, "-n", 128, "-r", 1, "-o", "json"]))
    r = {}
    for row in out:
        if row["n_prompt"] == 512 and row["n_gen"] == 0:
            r["prefill"] = row["avg_ts"]
        if row["n_gen"] == 128 and row["n_prompt"] == 0:
            r["decode"] = row["avg_ts"]
    lines = sh([batched, "-m", f, "-t", threads, "-c", 16 * 256 + 256, "-b", 2048, "-ub", 512, "-npp", 128,
                "-ntg", 128, "-npl", 16, "--output-format", "jsonl"])
    for line in lines.splitlines():
        if line.startswith("{") and '"speed_tg"' in line:
            r["decode16"] = json.loads(line)["speed_tg"]
    return r


def run_ordo(ordo, f, dtype, threads, work):
    j = work / "ordo-bench.json"
    sh([ordo, "bench", "-m", f, "--dtypes", dtype, "--backend", "onednn", "--prompts", 512, "--ctx-lengths", 128,
        "--parallel", "1,16", "--steps", 32, "--reps", 1, "--warmup", 1, "-t", threads, "--json", j])
    r = {}
    for row in json.loads(j.read_text())["results"]:
        if row["phase"] == "prefill" and row["batch"] == 1:
            r["prefill"] = row["tokens_per_s"]
        if row["phase"] == "decode" and row["batch"] == 1:
            r["decode"] = row["tokens_per_s"]
            r["roofline"] = row.get("roofline_fraction")
        if row["phase"] == "decode" and row["batch"] == 16:
            r["decode16"] = row["tokens_per_s"]
    return r


def cpu_name():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def git_rev(path):
    try:
        return sh(["git", "-C", path, "rev-parse", "--short", "HEAD"]).strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def table(results, dtypes, meta):
    phases = [("prefill", "prefill 512 tokens, tok/s"), ("decode", "decode, 1 sequence, tok/s"),
              ("decode16", "decode, 16 sequences, total tok/s")]
    out = [f"{meta['date']}, {meta['cpu']}, {meta['threads']} threads; ordo {meta['ordo']}, llama.cpp "
           f"{meta['llama']}; model: random weights of shape {meta['shape']} ({meta['rounds']} interleaved rounds, "
           f"median); load average {meta['load_before']} before, {meta['load_after']} after.", "",
           "| file | ordo dtype | measure | llama.cpp | ordo | ordo / llama.cpp |", "| --- | --- | --- | ---: | ---: | ---: |"]
    for t, rounds in results.items():
        for key, label in phases:
            ll = statistics.median(r["llama"][key] for r in rounds)
            oo = statistics.median(r["ordo"][key] for r in rounds)
            out.append(f"| {t} | {dtypes[t]} | {label} | {ll:.1f} | {oo:.1f} | {oo / ll:.2f}x |")
        roof = [r["ordo"].get("roofline") for r in rounds if r["ordo"].get("roofline") is not None]
        if roof:
            out.append(f"| {t} | {dtypes[t]} | ordo decode, fraction of its roofline | | "
                       f"{statistics.median(roof):.0%} | |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("llama_src", type=Path)
    ap.add_argument("--build-dir", type=Path)
    ap.add_argument("--ordo", type=Path, default=ROOT / "build" / "bin" / "ordo")
    ap.add_argument("--shape", default="110m")
    ap.add_argument("--types", default="f32,q8_0,q4_0")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("/tmp") / "ordo-vs-llama")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--llama-rev", help="llama.cpp's commit, for a source tree that is not a git checkout")
    a = ap.parse_args()
    src = a.llama_src.resolve()
    build = (a.build_dir or src / "build-vs-ordo").resolve()
    a.work.mkdir(parents=True, exist_ok=True)
    bench, batched, quantize = build_llama(src, build, a.threads)
    types = [t for t in a.types.split(",") if t]
    files = make_models(a.ordo, quantize, a.work, a.shape, types)
    dtypes = {t: ordo_dtype(a.ordo, t) for t in types}
    load_before = "%.2f" % os.getloadavg()[0]
    results = {t: [] for t in types}
    for r in range(a.rounds):
        for t in types:
            res = {}
            order = ["llama", "ordo"] if r % 2 == 0 else ["ordo", "llama"]
            for who in order:
                if who == "llama":
                    res["llama"] = run_llama(bench, batched, files[t], a.threads)
                else:
                    res["ordo"] = run_ordo(a.ordo, files[t], dtypes[t], a.threads, a.work)
            results[t].append(res)
            print(f"round {r + 1} {t}: {json.dumps(res)}", file=sys.stderr, flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu_name(), "threads": a.threads,
            "ordo": git_rev(ROOT), "llama": a.llama_rev or git_rev(src), "shape": a.shape, "rounds": a.rounds,
            "load_before": load_before, "load_after": "%.2f" % os.getloadavg()[0]}
    text = table(results, dtypes, meta)
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
