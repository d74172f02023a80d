"""ordo from Python: load a Hugging Face model directory, tokenize, run forward passes, generate,
score text and probe how a model uses position.

    import ordo, numpy as np
    m = ordo.Model("models/stories260K")
    print(m.generate("Once upon a time", max_new_tokens=32).text)
    logits = np.asarray(m.forward(m.tokenize("Once upon a time")).logits)  # [T, vocab], no copy

Every call that computes releases the GIL; one Model may be shared by threads.
"""
import os

# As the ordo CLI does (tools/cli/main.cpp): libgomp's default wait policy spins idle threads at every
# barrier, which on a machine whose cores are busy with other work stalls each parallel region
# (decode ~30% slower here under load). libgomp reads the policy once, when it is loaded, i.e. on the
# import below, unless something imported earlier (torch, ...) loaded it already. Set
# OMP_WAIT_POLICY or GOMP_SPINCOUNT yourself to choose otherwise.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
# OpenBLAS starts worker threads at load, each taking a 128 MiB buffer; ordo never uses them (it runs
# OpenBLAS single-threaded inside its own threads), and under `ulimit -v` a worker that cannot get its
# buffer retries forever, so the interpreter never exits. With one thread it starts none. (Like the
# wait policy, only if nothing imported earlier loaded OpenBLAS.) Set for the import only, so that a
# numpy imported later with its own OpenBLAS keeps its threads.
_blas_env = "OPENBLAS_NUM_THREADS" not in os.environ
if _blas_env:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
try:
    from . import _ordo  # noqa: E402
finally:
    if _blas_env:
        del os.environ["OPENBLAS_NUM_THREADS"]
from ._ordo import Array, Error, Generation, Perplexity, Score, Tokenizer, schemes, __version__  # noqa: E402
from . import probes  # noqa: E402
from .compare import compare  # noqa: E402

__all__ = ["Model", "Tokenizer", "Array", "Generation", "Score", "Perplexity", "Error", "schemes", "probes",
           "compare", "__version__"]


class Model(_ordo._Model):
    """A model directory (config.json, model.safetensors, tokenizer files) loaded for inference.

    Model(path, *, dtype=None, kv_dtype=None, position=None, scaling=None, factor=None,
          original_max=None, threads=None, backend=None, max_context=None, self_extend=None,
          sinks=None, window=None, tokenizer=True, allow_nonfinite=False)

    The options are `ordo run`'s (--dtype, --kv-dtype, --position, --scaling, --factor,
    --original-max, --threads, --backend, --max-context, --self-extend G,W as a (G, W) tuple,
    --sinks K with --window N); None keeps the model's own setting. A weight holding NaN or Inf
    is an ordo.Error naming the tensor; allow_nonfinite=True (--allow-nonfinite) loads it with a
    RuntimeWarning per such tensor instead (generation then stops at the first non-finite logits).
    """

    def stream(self, prompt, **kwargs):
        """Yields text pieces as they are decoded (complete UTF-8; joined, they equal
        generate(prompt, ...).text). Leaving the loop early, or close() on the generator, stops the
        decoding after the token in progress. Same keyword arguments as generate()."""
        return _pieces(self._stream(prompt, **kwargs))

    def score(self, inputs):
        """Log-probabilities of given text: a str or a list of ids gives one ordo.Score, a list of
        them a list. Decoders: .token_logprobs[t-1] = log p(ids[t] | ids[<t]) with the tokenizer's
        specials added to text, .logprob their sum. Masked-LM encoders: .logprob is the
        pseudo-log-likelihood."""
        return self._score(inputs)

    def __repr__(self):
        i = self.info
        return f"<ordo.Model {i['family']} {i['graph']} scheme={i['scheme']} dir={i['dir']!r}>"


def _pieces(streamer):
    try:
        while True:
            piece = streamer.next()
            if piece is None:
                return
            yield piece
    finally:
        streamer.close()
