#!/usr/bin/env python3
"""Plots `ordo ppl --json` results: perplexity against context length for none / NTK / YaRN /
Self-Extend / sinks, the bundled model and the zoo side by side (docs/long-context.md).

  python3 tools/longctx/plot_ppl.py OUT.png stories260K=stories.json zoo-rope=zoo-rope.json ...

Each NAME=FILE becomes one panel; NAME=A.json+B.json puts several models in one (labels then name
the model directory).
Needs Debian's python3-matplotlib.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(paths):
    out, trained = {}, None
    for p in paths:
        doc = json.load(open(p))
        trained = doc["trained_length"]
        for r in doc["results"]:
            if r.get("ppl") is None:
                continue
            label = r["scaling"] if len(paths) == 1 else doc["model"].rstrip("/").split("/")[-1] + " " + r["scaling"]
            out.setdefault(label, []).append((r["ctx"], r["ppl"]))
    return out, trained


def main():
    out, panels = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    for ax, (name, files) in zip(axes[0], panels):
        data, trained = series(files.split("+"))
        # Several models in one panel: a colour per model, a line style per setting.
        models = sorted({lb.split(" ")[0] for lb in data}) if "+" in files else []
        styles = {"none": "-", "linear": ":", "self-extend": "--", "sinks": "-."}
        for label, pts in data.items():
            pts.sort()
            kw = {}
            if models:
                model, setting = label.split(" ", 1)
                kw = {"color": "C%d" % models.index(model), "linestyle": styles.get(setting.split(":")[0], "-")}
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=label, **kw)
        ax.axvline(trained, color="grey", linestyle=":", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title("%s (trained %d)" % (name, trained))
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("perplexity")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
