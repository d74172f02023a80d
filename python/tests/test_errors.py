# Every error path raises the right exception with a message naming the culprit, and the model
# keeps working afterwards.
import pytest

import ordo
from conftest import FIXTURES, STORIES


def still_works(m):
    assert m.generate("Once upon a time", max_new_tokens=3).ids == [432, 383, 286]


@pytest.mark.parametrize("kwargs, name", [
    (dict(dtype="f64"), "dtype"),
    (dict(kv_dtype="int4"), "kv_dtype"),
    (dict(position="spiral"), "position"),
    (dict(scaling="warp"), "scaling"),
    (dict(factor=4.0), "factor"),
    (dict(scaling="linear", factor=-2.0), "factor"),
    (dict(threads=-1), "threads"),
    (dict(backend="cuda"), "backend"),
    (dict(self_extend=(0, 4)), "self_extend"),
    (dict(sinks=4), "sinks"),
])
def test_bad_model_options_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ordo.Model(str(STORIES), **kwargs)


def test_missing_directory_is_ordo_error(tmp_path):
    with pytest.raises(ordo.Error, match="nope: not a model directory") as e:
        ordo.Model(str(tmp_path / "nope"))
    assert isinstance(e.value, RuntimeError)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    with pytest.raises(ordo.Error, match="config.json"):
        ordo.Model(str(bad))


@pytest.mark.parametrize("call, name", [
    (lambda m: m.generate("x", max_new_tokens=-1), "max_new_tokens"),
    (lambda m: m.generate("x", temperature=-0.5), "temperature"),
    (lambda m: m.generate("x", top_p=0.0), "top_p"),
    (lambda m: m.generate("x", top_k=-3), "top_k"),
    (lambda m: m.generate("x", repeat_penalty=0.0), "repeat_penalty"),
    (lambda m: m.generate("x", seed=-1), "seed"),
    (lambda m: m.generate("x", stop=[""]), "stop"),
    (lambda m: m.generate("x", stop=3), "stop"),
    (lambda m: m.generate("x", logprobs=-1), "logprobs"),
    (lambda m: m.generate([1, 99999]), r"prompt\[1\]"),
    (lambda m: m.generate([1, -5]), r"prompt\[1\]"),
    (lambda m: m.generate([]), "prompt"),
    (lambda m: m.generate(3.5), "prompt"),
    (lambda m: m.generate([1, 2], stop="x"), "stop"),
    (lambda m: m.generate_batch(["a", [1, 2]]), "prompts"),
    (lambda m: m.generate_batch("abc"), "prompts"),
    (lambda m: m.generate_batch(["a"], max_batch=0), "max_batch"),
    (lambda m: m.forward([1, 512]), r"ids\[1\]"),
    (lambda m: m.forward([]), "ids"),
    (lambda m: m.forward([1, 2], decoder_ids=[1]), "decoder_ids"),
    (lambda m: m.detokenize([1, 100000]), "ids"),
    (lambda m: m.score([1]), "inputs"),
    (lambda m: m.perplexity([1, 2, 3], ctx=10), "ctx"),
    (lambda m: m.perplexity([1, 2, 3, 4], ctx=4, stride=-1), "stride"),
    (lambda m: m.embed([]), "texts"),
    (lambda m: m.embed("x", pooling="max"), "pooling"),
    (lambda m: list(m.stream("x", top_p=2.0)), "top_p"),
    (lambda m: ordo.probes.word_order(m, []), "pairs"),
    (lambda m: ordo.probes.length(m, [1, 2, 3], method="warp"), "method"),
    (lambda m: ordo.probes.length(m, [1, 2, 3], base=-5), "base"),
    (lambda m: ordo.probes.length(m, [1, 2, 3], trained=0), "trained"),
    (lambda m: ordo.probes.attention_by_distance(m, [[1, 2]], max_distance=-1), "max_distance"),
    (lambda m: ordo.probes.permutation(m, []), "ids"),
])
def test_bad_arguments_raise_value_error(stories, call, name):
    with pytest.raises(ValueError, match=name):
        call(stories)
    still_works(stories)


def test_engine_errors_raise_ordo_error(stories):
    with pytest.raises(ordo.Error, match="context"):
        stories.forward([1] * 100000)
    still_works(stories)
    bert = ordo.Model(str(FIXTURES / "bert"), tokenizer=False)
    with pytest.raises(ordo.Error, match="cannot generate"):
        bert.generate([1, 2, 3], max_new_tokens=2)
    with pytest.raises(ValueError, match="tokenizer"):
        bert.generate("text needs a tokenizer")
    with pytest.raises(ordo.Error):
        ordo.Tokenizer("/nonexistent/dir")
    still_works(stories)


def test_busy_model_refuses_retuning_probe(stories):
    gen = stories.stream("Once upon a time", max_new_tokens=200)
    next(gen)
    with pytest.raises(ordo.Error, match="alone"):
        ordo.probes.permutation(stories, [1, 403, 407, 261])
    gen.close()
    assert ordo.probes.permutation(stories, [1, 403, 407, 261])["max_abs_error"] > 0
    still_works(stories)


def _poisoned_stories(tmp_path, name, index, value):
    """A copy of the bundled model with element `index` of F32 tensor `name` set to `value`."""
    import json
    import shutil
    import struct
    out = tmp_path / "poisoned"
    shutil.copytree(STORIES, out)
    raw = bytearray((out / "model.safetensors").read_bytes())
    (n,) = struct.unpack("<Q", raw[:8])
    entry = json.loads(raw[8:8 + n])[name]
    at = 8 + n + entry["data_offsets"][0] + 4 * index
    raw[at:at + 4] = struct.pack("<f", value)
    (out / "model.safetensors").write_bytes(bytes(raw))
    return str(out)


def test_nonfinite_weight_named_at_load_and_allowed_with_warning(tmp_path):
    name = "model.layers.1.mlp.down_proj.weight"
    path = _poisoned_stories(tmp_path, name, 11, float("nan"))
    with pytest.raises(ordo.Error, match=rf"tensor '{name}' holds NaN at \[0, 11\]"):
        ordo.Model(path)
    with pytest.warns(RuntimeWarning, match=name):
        m = ordo.Model(path, allow_nonfinite=True)
    with pytest.raises(ordo.Error, match="logits at position 2 are NaN"):
        m.generate([1, 403, 407], max_new_tokens=3, temperature=0)
