# generate, generate_batch and stream agree; log-probs and finish reasons are right.
import subprocess

import numpy as np
import pytest
from conftest import STORIES

PROMPTS = ["Once upon a time", "The little dog", "Lily saw a big red ball", "One day"]


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def test_stream_equals_generate_equals_batch(stories):
    kw = dict(max_new_tokens=30, temperature=0.7, top_k=20, seed=7)
    single = [stories.generate(p, **kw) for p in PROMPTS]
    batch = stories.generate_batch(PROMPTS, max_batch=3, **kw)
    for s, b in zip(single, batch):
        assert s.ids == b.ids and s.text == b.text and s.finish_reason == b.finish_reason
    for p, s in zip(PROMPTS, single):
        pieces = list(stories.stream(p, **kw))
        assert "".join(pieces) == s.text
        assert len(pieces) > 1


def test_batch_of_ids_and_empty_batch(stories):
    ids = [stories.tokenize(p) for p in PROMPTS]
    batch = stories.generate_batch(ids, max_new_tokens=12)
    assert [b.ids for b in batch] == [stories.generate(i, max_new_tokens=12).ids for i in ids]
    assert stories.generate_batch([], max_new_tokens=4) == []


def test_logprobs_are_log_softmax_of_forward(stories):
    prompt = stories.tokenize("Once upon a time")
    g = stories.generate(prompt, max_new_tokens=10, logprobs=3)
    logits = np.asarray(stories.forward(prompt + g.ids).logits)
    ref = log_softmax(logits[len(prompt) - 1:-1])
    assert len(g.logprobs) == len(g.ids) == len(g.top_logprobs) == 10
    for t, tok in enumerate(g.ids):
        assert abs(g.logprobs[t] - ref[t, tok]) < 1e-4
        top = g.top_logprobs[t]
        assert [i for i, _ in top] == list(np.argsort(-ref[t], kind="stable")[:3])
        assert top[0][0] == tok  # greedy: the chosen token is the likeliest
        assert all(abs(lp - ref[t, i]) < 1e-4 for i, lp in top)
    assert stories.generate(prompt, max_new_tokens=3).logprobs is None


def test_finish_reasons_and_stop_strings(stories):
    g = stories.generate("Once upon a time", max_new_tokens=5)
    assert g.finish_reason == "length" and len(g.ids) == 5
    full = stories.generate("Once upon a time", max_new_tokens=40).text
    stop = full.split()[3]
    s = stories.generate("Once upon a time", max_new_tokens=40, stop=stop)
    assert s.finish_reason == "stop" and s.text == full[: full.index(stop)]
    assert "".join(stories.stream("Once upon a time", max_new_tokens=40, stop=[stop])) == s.text
    assert stories.generate("Once upon a time", max_new_tokens=0).ids == []


def test_early_stream_close_stops_decoding(stories):
    gen = stories.stream("Once upon a time", max_new_tokens=400)
    first = next(gen)
    assert first
    gen.close()  # joins the decoding thread: no more tokens are decoded after this returns
    assert list(gen) == []
    # Breaking out of the loop: the generator is dropped and decoding stops.
    pieces = []
    for piece in stories.stream("Once upon a time", max_new_tokens=400):
        pieces.append(piece)
        if len(pieces) == 3:
            break
    assert len(pieces) == 3
    assert stories.generate("Once upon a time", max_new_tokens=4).ids  # still works


def test_stream_of_ids_prompt(stories):
    ids = stories.tokenize("The little dog")
    assert "".join(stories.stream(ids, max_new_tokens=20)) == stories.generate(ids, max_new_tokens=20).text


def test_min_p_matches_the_cli_and_one_keeps_only_the_top_token(stories, cli):
    kw = dict(max_new_tokens=16, temperature=1.2, top_k=0, top_p=1.0, min_p=0.1, seed=5)
    g = stories.generate("Once upon a time", **kw)
    out = subprocess.run([str(cli), "run", "-m", str(STORIES), "-p", "Once upon a time", "-n", "16",
                          "--temp", "1.2", "--top-k", "0", "--top-p", "1", "--min-p", "0.1", "-s", "5", "-q",
                          "--print-ids"], check=True, capture_output=True, text=True).stdout
    assert out.splitlines()[-1] == ",".join(map(str, g.ids))
    greedy = stories.generate("Once upon a time", max_new_tokens=16)
    assert stories.generate("Once upon a time", max_new_tokens=16, temperature=1.5, min_p=1.0, seed=3).ids == greedy.ids
    with pytest.raises(ValueError, match="min_p"):
        stories.generate("x", temperature=1.0, min_p=1.5)
