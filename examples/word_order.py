#!/usr/bin/env python3
# Reruns the zoo's word-order comparison from Python and plots it: for every position scheme, how
# often its causal LMs (and masked-LM encoders) score a held-out sentence above the same sentence
# with two words swapped, over the zoo's seeds.
#   python3 examples/word_order.py [--zoo models/zoo] [--max-pairs 40] [-o word_order.png]
import argparse
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

import ordo  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--zoo", default=str(ROOT / "models" / "zoo"))
    ap.add_argument("--max-pairs", type=int, default=40)
    ap.add_argument("--kinds", default="lm,mlm", help="zoo kinds to run: lm, mlm or both")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per scheme (s1..sN)")
    ap.add_argument("-o", "--output", default="word_order.png")
    args = ap.parse_args()

    zoo = Path(args.zoo)
    pairs = ordo.probes.default_pairs((zoo / "heldout.txt").read_text(encoding="utf-8"), max_pairs=args.max_pairs)
    schemes = [s["name"] for s in ordo.schemes()]
    kinds = args.kinds.split(",")
    results = {}  # (kind, scheme) -> [accuracy per seed]
    for kind in kinds:
        for scheme in schemes:
            for seed in range(1, args.seeds + 1):
                d = zoo / kind / f"{scheme}-s{seed}"
                if not (d / "config.json").exists():
                    continue
                r = ordo.probes.word_order(ordo.Model(str(d), threads=1), pairs)
                results.setdefault((kind, scheme), []).append(r["accuracy"])
                print(f"{kind}/{scheme}-s{seed}: {r['method']} accuracy {r['accuracy']:.3f} "
                      f"mean margin {r['mean_margin']:+.3f} ({r['wins']} wins, {r['ties']} ties of {len(pairs)})")
    if not results:
        sys.exit(f"no zoo models under {zoo}")

    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(kinds)
    names = [s for s in schemes if any((k, s) in results for k in kinds)]
    for j, kind in enumerate(kinds):
        xs, means, errs = [], [], []
        for i, s in enumerate(names):
            acc = results.get((kind, s))
            if acc:
                xs.append(i + (j - (len(kinds) - 1) / 2) * width)
                means.append(statistics.mean(acc))
                errs.append(statistics.pstdev(acc) if len(acc) > 1 else 0.0)
        ax.bar(xs, means, width, yerr=errs, capsize=3, label={"lm": "causal LM (log-prob)", "mlm": "masked LM (PLL)"}.get(kind, kind))
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0, 1)
    ax.set_ylabel("word-order accuracy")
    ax.set_title(f"original vs word-swapped sentences ({len(pairs)} pairs, mean ± sd over seeds)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
