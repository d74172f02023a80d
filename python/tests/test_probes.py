# ordo.probes and ordo.compare from Python: the numbers `ordo compare --json` writes.
import json
import subprocess
import sys

import numpy as np

import ordo
from conftest import ROOT

ZOO = ROOT / "models" / "zoo"


def test_schemes_lists_registry():
    names = {s["name"]: s for s in ordo.schemes()}
    assert {"none", "learned", "sinusoidal", "relative", "rope", "alibi"} <= set(names)
    assert {"linear", "ntk", "yarn", "dynamic"} <= set(names["rope"]["scalings"])
    assert "none" in names["alibi"]["scalings"]


def test_word_order_compare_and_probes_agree_with_cli(cli, tmp_path):
    lm = ZOO / "lm" / "rope-s1"
    text = ZOO / "heldout.txt"
    tasks = "word-order,permutation,length,attention"
    out = tmp_path / "cli.json"
    subprocess.run([cli, "compare", "--no-zoo", "-m", str(lm), "--text", str(text), "--quick", "--tasks", tasks,
                    "--json", str(out)], check=True, capture_output=True)
    ref = json.loads(out.read_text())
    got = ordo.compare([lm], no_zoo=True, text=text, quick=True, tasks=tasks.split(","))
    assert got == ref

    # The probe functions on the same model and pairs give compare's word-order numbers.
    m = ordo.Model(str(lm), threads=1)
    pairs = ordo.probes.default_pairs(text.read_text(), max_pairs=ref["settings"]["max_pairs"])
    wo = ordo.probes.word_order(m, pairs)
    row = ref["word_order"]["results"][0]
    assert row["pairs"] == len(pairs) and wo["accuracy"] == row["accuracy"]
    for p, q in zip(wo["pairs"], row["scores"]):  # compare rounds to 6 significant digits
        assert abs(p["margin"] - q["margin"]) <= 1e-5 * max(1, abs(q["margin"]))
        assert abs(p["score_original"] - q["original"]) <= 1e-5 * abs(q["original"])
    assert wo["method"] == "logprob" and len(wo["pairs"]) == len(pairs)
    assert all(abs(p["margin"] - (p["score_original"] - p["score_swapped"])) < 1e-9 or p["tie"] for p in wo["pairs"])


def test_probe_functions_on_stories(stories):
    ids = stories.tokenize("Once upon a time, there was a little girl named Lily. She loved to play outside.")
    perm = ordo.probes.permutation(stories, ids[:16])
    assert perm["rel_error"] > 1e-3  # RoPE breaks permutation equivariance
    pts = ordo.probes.length(stories, ids * 8, method="none", multiples=[1], base=16)
    assert pts[0]["ctx"] == 16 and pts[0]["ppl"] > 1
    att = ordo.probes.attention_by_distance(stories, [ids[:32]])
    # Buckets beyond the window see no pair (NaN); the rest share each row's whole mass.
    assert abs(np.nansum(att["mass"]) - 1) < 1e-6 and att["rows"] > 0 and np.isnan(att["mass"][-1])
    # The model is restored after the probes that retune it.
    assert stories.generate("Once upon a time", max_new_tokens=3).ids == [432, 383, 286]
    mlm = ordo.Model(str(ZOO / "mlm" / "rope-s1"), threads=1)
    s = mlm.score("The cat sat on the mat.")
    assert s.method == "pll" and s.logprob < 0
    # One term per non-special token: every position but [CLS]/BOS and [SEP]/EOS the tokenizer adds.
    plain = mlm.tokenize("The cat sat on the mat.", add_special=False)
    assert len(s.token_logprobs) == len(s.positions) == len(plain)
    assert [s.ids[p] for p in s.positions] == plain
    assert abs(sum(s.token_logprobs) - s.logprob) < 1e-9 * abs(s.logprob)
    # The PLL is what word_order scores a masked LM by: its pair scores are these sums.
    wo = ordo.probes.word_order(mlm, [("The cat sat on the mat.", "The mat sat on the cat.")])
    assert wo["method"] == "pll" and wo["pairs"][0]["score_original"] == s.logprob


def test_word_order_example_writes_figure(tmp_path):
    fig = tmp_path / "wo.png"
    subprocess.run([sys.executable, str(ROOT / "examples" / "word_order.py"), "--max-pairs", "6", "--seeds", "1",
                    "-o", str(fig)], check=True, capture_output=True,
                   env={"PYTHONPATH": ordo.__path__[0] + "/..", "PATH": "/usr/bin:/bin"})
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
