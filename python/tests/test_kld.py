# `ordo ppl --kld-base` held to an independent numpy computation on logits ordo dumps with
# `ordo forward`: perplexity ratio, mean KL divergence, same-top-token rate of llama.cpp's Q4_0 file
# of the bundled model against the F32 directory, on the tokens the base file stores.
import json
import struct
import subprocess

import numpy as np

from conftest import ROOT, STORIES

TEXT = ROOT / "tests" / "data" / "text" / "stories-sampled.txt"
Q4 = ROOT / "tests" / "data" / "gguf" / "stories260K-q4_0.gguf"
CTX = 64


def run(cli, *args):
    return subprocess.run([cli, *args], check=True, capture_output=True, text=True).stdout


def base_ids(path):
    raw = open(path, "rb").read(8 + 24)
    assert raw[:8] == b"ORDOKLD1"
    ctx, vocab, chunks = struct.unpack("<3Q", raw[8:])
    ids = np.fromfile(path, dtype="<i4", count=ctx * chunks, offset=32)
    return ctx, vocab, ids.reshape(chunks, ctx)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def test_kld_equals_numpy_on_dumped_logits(cli, tmp_path):
    base = tmp_path / "base.kld"
    run(cli, "ppl", "-m", str(STORIES), "--text", str(TEXT), "--ctx-lengths", str(CTX), "--chunks", "4",
        "--kld-base", str(base))
    out = tmp_path / "kld.json"
    run(cli, "ppl", "-m", str(Q4), "--text", str(TEXT), "--kld-base", str(base), "--kld", "--json", str(out))
    got = json.loads(out.read_text())
    ctx, vocab, chunks = base_ids(base)
    assert ctx == CTX and chunks.shape[0] == 4 and chunks[0, 0] == 1  # BOS first, as llama-perplexity
    kl, ratio, same, nll_p, nll_q = [], [], [], [], []
    for c, ids in enumerate(chunks):
        lp, lq = [], []
        for model, acc in ((STORIES, lp), (Q4, lq)):
            f = tmp_path / f"logits{c}.npy"
            run(cli, "forward", "-m", str(model), "--ids", ",".join(map(str, ids)), "-o", str(f))
            acc.append(log_softmax(np.load(f).reshape(ctx, vocab)))
        p, q = lp[0][ctx // 2:ctx - 1], lq[0][ctx // 2:ctx - 1]
        nxt = ids[ctx // 2 + 1:]
        kl.extend((np.exp(p) * (p - q)).sum(axis=-1))
        rows = np.arange(len(nxt))
        ratio.extend(p[rows, nxt] - q[rows, nxt])
        nll_p.extend(-p[rows, nxt])
        nll_q.extend(-q[rows, nxt])
        same.extend(p.argmax(axis=-1) == q.argmax(axis=-1))
    kl, ratio = np.array(kl), np.array(ratio)
    n = len(kl)
    assert got["tokens"] == n == 4 * (ctx - ctx // 2 - 1)
    assert abs(got["kld_mean"] - kl.mean()) <= 1e-6 + 1e-4 * kl.mean()
    assert abs(got["kld_mean_err"] - kl.std() / np.sqrt(n - 1)) <= 1e-6 + 1e-3 * got["kld_mean_err"]
    assert abs(got["ppl_ratio"] - np.exp(ratio.mean())) <= 1e-6
    assert abs(got["ppl_base"] - np.exp(np.mean(nll_p))) <= 1e-4 * got["ppl_base"]
    assert abs(got["ppl"] - np.exp(np.mean(nll_q))) <= 1e-4 * got["ppl"]
    assert got["same_top"] == np.mean(same)
    assert 0 < got["kld_mean"] < 0.1 and 0.5 < got["same_top"] < 1
