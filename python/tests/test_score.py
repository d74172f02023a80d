# score agrees with perplexity, with numpy's log-softmax of forward, and with `ordo ppl`.
import json
import math
import subprocess

import numpy as np

from conftest import STORIES

TEXT = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
        "One day, she saw a big, red ball. She wanted to play with it, but it was too high.")


def test_score_terms_equal_log_softmax_of_forward(stories):
    s = stories.score(TEXT)
    ids = stories.tokenize(TEXT)
    assert s.ids == ids and s.method == "logprob"
    logits = np.asarray(stories.forward(ids).logits, dtype=np.float64)
    m = logits.max(axis=1, keepdims=True)
    lsm = logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))
    ref = [lsm[t - 1, ids[t]] for t in range(1, len(ids))]
    assert np.allclose(s.token_logprobs, ref, atol=1e-6)
    assert abs(s.logprob - sum(s.token_logprobs)) < 1e-9


def test_score_agrees_with_perplexity(stories):
    ids = stories.tokenize(TEXT, add_special=False)
    s = stories.score(ids)
    p = stories.perplexity(ids)  # one window over every token
    assert p.tokens == len(ids) - 1 and p.windows == 1
    assert abs(p.nll_sum + s.logprob) < 1e-6 * abs(s.logprob)
    assert abs(p.ppl - math.exp(-s.logprob / (len(ids) - 1))) < 1e-6 * p.ppl
    many = stories.score([TEXT, ids])
    assert len(many) == 2 and many[1].logprob == s.logprob


def test_perplexity_equals_ordo_ppl(stories, cli, tmp_path):
    text = tmp_path / "t.txt"
    text.write_text(TEXT * 3)
    out = tmp_path / "ppl.json"
    subprocess.run([cli, "ppl", "-m", str(STORIES), "--text", str(text), "--ctx", "32,64", "--stride", "16",
                    "--json", str(out)], check=True, capture_output=True)
    rows = json.loads(out.read_text())
    rows = rows["results"] if isinstance(rows, dict) else rows
    for ctx in (32, 64):
        row = next(r for r in rows if r["ctx"] == ctx)
        p = stories.perplexity(TEXT * 3, ctx=ctx, stride=16)
        assert p.tokens == row["tokens"]
        assert abs(p.ppl - row["ppl"]) <= 1e-12 * row["ppl"]
