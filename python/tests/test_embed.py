# embed equals `ordo embed`, and pooling/normalisation options do what they say.
import subprocess

import numpy as np

import ordo
from conftest import ROOT, STORIES

MLM = ROOT / "models" / "zoo" / "mlm" / "rope-s1"


def cli_embed(cli, model, text, tmp_path, *flags):
    out = tmp_path / "e.npy"
    subprocess.run([cli, "embed", "-m", str(model), text, *flags, "-o", str(out)], check=True, capture_output=True)
    return np.load(out)


def test_embed_equals_cli(stories, cli, tmp_path):
    texts = ["The cat sat on the mat.", "Lily saw a big red ball 🎈"]
    for model, m in ((STORIES, stories), (MLM, ordo.Model(str(MLM)))):
        e = np.asarray(m.embed(texts))
        assert e.shape == (2, m.info["d_model"])
        for i, t in enumerate(texts):
            assert np.allclose(e[i], cli_embed(cli, model, t, tmp_path), rtol=0, atol=1e-6)
        n = np.asarray(m.embed(texts, pooling="mean", normalize=True))
        assert np.allclose(np.linalg.norm(n, axis=1), 1, atol=1e-6)
        assert np.allclose(n[0], cli_embed(cli, model, texts[0], tmp_path, "--pooling", "mean", "--normalize"),
                           rtol=0, atol=1e-6)
