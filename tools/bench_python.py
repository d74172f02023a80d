#!/usr/bin/env python3
# One-sequence decode speed through the Python module against the ordo CLI, on a random-weight
# Llama model of `ordo bench --synthetic 110m`'s shape (dim 768, 12 layers, 12 heads, ffn 2048,
# vocab 32000, tied head) written to disk once by tools/perf/synthetic_dir.py, since the CLI and
# Python both load directories.
#   PYTHONPATH=build/python /usr/bin/python3 tools/bench_python.py [--tokens 128] [--runs 5]
# Both sides run greedy decoding from the same ids with the same threads and report the engine's
# own decode time (GenerateResult::decode_seconds: the CLI's stderr tok/s line, Generation.decode_seconds)
# plus, for Python, the wall time of the whole generate() call.
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_model(d):
    # The directory tools/perf/synthetic_dir.py writes: `ordo bench --synthetic 110m`'s shape.
    if not (d / "model.safetensors").exists():
        subprocess.run([sys.executable, str(ROOT / "tools" / "perf" / "synthetic_dir.py"), str(d), "--shape", "110m"],
                       check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "ordo-synthetic-110m"))
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=16, help="prompt tokens")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.build) / "python"))
    import ordo

    d = Path(args.dir)
    write_model(d)
    ids = [1] + [(7 * i + 100) % 32000 for i in range(args.prompt - 1)]
    cli = [str(Path(args.build) / "bin" / "ordo"), "run", "-m", str(d), "--ids", ",".join(map(str, ids)),
           "-n", str(args.tokens), "--temp", "0", "--threads", str(args.threads)]
    m = ordo.Model(str(d), tokenizer=False, threads=args.threads)
    m.generate(ids, max_new_tokens=8)  # warm-up
    cli_tps, py_tps, py_wall, ratios = [], [], [], []
    for _ in range(args.runs):  # interleaved, so drifting load hits both alike
        err = subprocess.run(cli, capture_output=True, text=True, check=True).stderr
        cli_tps.append(float(re.search(r"generated \d+ tokens, ([0-9.e+]+) tok/s", err).group(1)))
        t0 = time.perf_counter()
        g = m.generate(ids, max_new_tokens=args.tokens)
        wall = time.perf_counter() - t0
        assert len(g.ids) > 1
        py_tps.append((len(g.ids) - 1) / g.decode_seconds)  # the CLI's formula (tools/cli/run.cpp)
        py_wall.append(len(g.ids) / wall)
        ratios.append(py_tps[-1] / cli_tps[-1])
    c, p = statistics.median(cli_tps), statistics.median(py_tps)
    print(f"model {d} (110m shape), prompt {len(ids)} tokens, {args.tokens} new, {args.runs} runs, "
          f"threads {args.threads or os.cpu_count()}")
    print(f"CLI    decode: median {c:.2f} tok/s  (runs: {', '.join(f'{x:.2f}' for x in cli_tps)})")
    print(f"Python decode: median {p:.2f} tok/s  (runs: {', '.join(f'{x:.2f}' for x in py_tps)})")
    print(f"Python generate() wall, prefill included: median {statistics.median(py_wall):.2f} tok/s")
    print(f"Python / CLI decode: ratio of medians {p / c:.4f}; median of paired ratios "
          f"{statistics.median(ratios):.4f} (runs: {', '.join(f'{x:.3f}' for x in ratios)})")


if __name__ == "__main__":
    main()
