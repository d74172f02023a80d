# Python equals the ordo CLI and Hugging Face: greedy and seeded ids, forward logits bit for bit.
import subprocess

import numpy as np

import ordo
from conftest import FIXTURES, STORIES, golden


def run_cli(cli, *args):
    return subprocess.run([cli, *args], check=True, capture_output=True, text=True).stdout


def cli_ids(out):
    return [int(x) for x in out.strip().splitlines()[-1].split(",")]


def test_greedy_ids_equal_hf_and_cli(stories, cli):
    d, _ = golden("stories260K")
    case = next(c for c in d["cases"] if c["name"] == "once_upon")
    ref = case["greedy"]["output_ids"]  # HF generate(do_sample=False)
    n = case["greedy"]["max_new_tokens"]
    prompt = case["input_ids"]
    py = stories.generate(prompt, max_new_tokens=n)
    assert py.ids == ref
    assert py.ids == cli_ids(run_cli(cli, "run", "-m", str(STORIES), "--ids", ",".join(map(str, prompt)),
                                     "-n", str(n), "--temp", "0", "-q"))
    # The same from text: the CLI prints the prompt, the text, then the ids.
    text = stories.generate("Once upon a time", max_new_tokens=n)
    assert text.ids == py.ids
    assert "Once upon a time" + text.text == case["greedy_text"][: len("Once upon a time" + text.text)]
    out = run_cli(cli, "run", "-m", str(STORIES), "-p", "Once upon a time", "-n", str(n), "--temp", "0",
                  "--print-ids", "-q")
    assert text.ids == cli_ids(out)


def test_seeded_sampling_equals_cli(stories, cli):
    kw = dict(max_new_tokens=40, temperature=0.8, top_k=40, top_p=0.95, repeat_penalty=1.1, seed=1234)
    py = stories.generate("The little dog", **kw)
    out = run_cli(cli, "run", "-m", str(STORIES), "-p", "The little dog", "-n", "40", "--temp", "0.8",
                  "--top-k", "40", "--top-p", "0.95", "--repeat-penalty", "1.1", "--seed", "1234", "--print-ids", "-q")
    assert py.ids == cli_ids(out)
    assert out.startswith("The little dog" + py.text)


def test_forward_logits_bit_identical_to_cli_dump(stories, cli, tmp_path):
    ids = stories.tokenize("One day, a cat sat on the mat. It was happy.")
    out = stories.forward(ids)
    dump = tmp_path / "logits.npy"
    run_cli(cli, "forward", "-m", str(STORIES), "--ids", ",".join(map(str, ids)), "-o", str(dump))
    ref = np.load(dump)
    got = np.asarray(out.logits)
    assert got.dtype == np.float32 and got.shape == (len(ids), stories.info["vocab"])
    assert np.array_equal(got, ref)


def test_fixture_logits_equal_cli_and_hf(cli, tmp_path):
    for name in ("gpt2", "llama"):
        d, g = golden(name)
        m = ordo.Model(str(FIXTURES / name), tokenizer=False)
        for case in d["cases"][:1]:
            ids = case["input_ids"]
            out = m.forward(ids, hidden_states=True)
            got = np.asarray(out.logits)
            dump = tmp_path / f"{name}.npy"
            run_cli(cli, "forward", "-m", str(FIXTURES / name), "--ids", ",".join(map(str, ids)), "-o", str(dump))
            assert np.array_equal(got, np.load(dump))
            ref = g[case["name"] + ".logits"]
            assert np.max(np.abs(got - ref)) <= 1e-4 * max(1.0, np.max(np.abs(ref)))
            assert len(out.hidden_states) == len([k for k in g if k.startswith(case["name"] + ".hidden_states.")])
            # greedy decoding as HF's generate
            gr = case.get("greedy")
            if gr:
                assert m.generate(ids, max_new_tokens=gr["max_new_tokens"]).ids == gr["output_ids"]


def test_encoder_decoder_forward_and_generate_match_hf(cli, tmp_path):
    d, g = golden("t5")
    case = d["cases"][0]
    m = ordo.Model(str(FIXTURES / "t5"), tokenizer=False)
    out = m.forward(case["input_ids"], decoder_ids=case["decoder_input_ids"], hidden_states=True)
    got = np.asarray(out.logits)
    ref = g[case["name"] + ".logits"]
    assert np.max(np.abs(got - ref)) <= 1e-4 * max(1.0, np.max(np.abs(ref)))
    enc = [k for k in g if k.startswith(case["name"] + ".encoder_hidden_states.")]
    assert len(out.encoder_hidden_states) == len(enc)
    dump = tmp_path / "t5.npy"
    run_cli(cli, "forward", "-m", str(FIXTURES / "t5"), "--ids", ",".join(map(str, case["input_ids"])),
            "--decoder-ids", ",".join(map(str, case["decoder_input_ids"])), "-o", str(dump))
    assert np.array_equal(got, np.load(dump))
    gr = case["greedy"]
    ids = m.generate(case["input_ids"], max_new_tokens=gr["max_new_tokens"]).ids
    assert ids == gr["output_ids"]


def test_stories_logits_match_hf_golden(stories):
    d, g = golden("stories260K")
    case = next(c for c in d["cases"] if c["name"] == "once_upon")
    got = np.asarray(stories.forward(case["input_ids"]).logits)
    ref = g["once_upon.logits"]
    assert got.shape == ref.shape
    assert np.max(np.abs(got - ref)) <= 1e-4 * max(1.0, np.max(np.abs(ref)))


def test_logits_leave_without_a_copy(stories):
    out = stories.forward([1, 403, 407, 261, 378])
    a = np.asarray(out.logits)
    b = np.asarray(out.logits)
    assert a.ctypes.data == out.logits.data_ptr == b.ctypes.data
    assert not a.flags.writeable and a.flags.c_contiguous
    held = out.logits
    del out
    assert np.asarray(held).shape == (5, 512)  # the array keeps its tensor alive
