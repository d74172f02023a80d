# `ordo serve` end to end: every route against the CLI's own answers, streaming against whole
# answers, and exactness of concurrent requests against each request answered alone.
import json
import threading
import time

from conftest import MODEL, Server, run_cli

PROMPTS = ["Once upon a time", "The cat", "Lily went to the park and", "One day, a big", "Tom had a red ball",
           "She", "The sun was", "A little bird"]


def completion(server, prompt, **kw):
    return server.ok("/v1/completions", {"prompt": prompt, **kw})


def test_health_models_and_metrics(server):
    assert server.request("GET", "/health") == (200, {"status": "ok"})
    status, models = server.request("GET", "/v1/models")
    assert status == 200 and models["object"] == "list"
    assert models["data"][0]["id"] == "stories260K"
    assert models["data"][0]["meta"]["context"] == 4096
    m = server.metrics()
    assert m["ordo_ready"] == 1
    for name in ("ordo_queue_depth", "ordo_requests_running", "ordo_batch_size", "ordo_generated_tokens_total",
                 "ordo_request_duration_seconds_count", 'ordo_time_to_first_token_seconds_bucket{le="+Inf"}'):
        assert name in m, name


def test_greedy_completion_equals_ordo_run(server):
    ref = json.loads(run_cli("run", "-m", MODEL, "-p", "Once upon a time", "-n", 24, "--temp", 0, "--json", "-q"))
    got = completion(server, "Once upon a time", max_tokens=24, temperature=0)
    choice = got["choices"][0]
    assert choice["token_ids"] == ref["ids"]
    assert choice["text"] == ref["text"]
    assert choice["finish_reason"] == ("stop" if len(ref["ids"]) < 24 else "length")
    prompt_ids = [int(x) for x in run_cli("tokenize", "-m", MODEL, "Once upon a time").split(",")]
    assert got["usage"] == {"prompt_tokens": len(prompt_ids), "completion_tokens": len(ref["ids"]),
                            "total_tokens": len(prompt_ids) + len(ref["ids"])}
    by_ids = completion(server, prompt_ids, max_tokens=24, temperature=0)
    assert by_ids["choices"][0]["token_ids"] == ref["ids"]
    assert by_ids["choices"][0]["text"] == ref["text"]
    assert got["object"] == "text_completion" and got["model"] == "stories260K"


def test_seeded_sampling_equals_ordo_run(server):
    ref = json.loads(run_cli("run", "-m", MODEL, "-p", "The cat", "-n", 20, "--temp", 0.9, "--top-k", 30,
                             "--top-p", 0.95, "-s", 77, "--json", "-q"))
    got = completion(server, "The cat", max_tokens=20, temperature=0.9, top_k=30, top_p=0.95, seed=77)
    assert got["choices"][0]["token_ids"] == ref["ids"]
    assert got["choices"][0]["text"] == ref["text"]


def joined(chunks, chat=False):
    text = "".join(c["choices"][0]["delta"].get("content", "") if chat else c["choices"][0]["text"] for c in chunks)
    ids = [i for c in chunks for i in c["choices"][0]["token_ids"]]
    return text, ids


def test_stream_equals_whole_answer(server):
    for kw in ({"temperature": 0}, {"temperature": 1.0, "seed": 5, "top_k": 0, "top_p": 1.0}):
        body = {"prompt": "Lily went to the park and", "max_tokens": 40, **kw}
        whole = server.ok("/v1/completions", body)
        chunks = server.stream("/v1/completions", body)
        text, ids = joined(chunks)
        assert text == whole["choices"][0]["text"]
        assert ids == whole["choices"][0]["token_ids"]
        assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
        assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
        assert chunks[-1]["usage"] == whole["usage"]
        # Token by token, however far the writer fell behind (it once sent all 40 in one event under load).
        assert all(len(c["choices"][0]["token_ids"]) <= 1 for c in chunks)
        assert len(chunks) >= len(ids) == 40


def test_echo_stop_and_logprobs(server):
    base = completion(server, "One day, a big", max_tokens=30, temperature=0)["choices"][0]["text"]
    echo = completion(server, "One day, a big", max_tokens=30, temperature=0, echo=True)["choices"][0]["text"]
    assert echo == "One day, a big" + base
    word = base.split()[3]
    cut = completion(server, "One day, a big", max_tokens=30, temperature=0, stop=[word])["choices"][0]
    assert cut["text"] == base[:base.index(word)]
    assert cut["finish_reason"] == "stop"
    lp = completion(server, "One day, a big", max_tokens=8, temperature=0, logprobs=3)["choices"][0]
    probs = lp["logprobs"]
    assert len(probs["tokens"]) == len(probs["token_logprobs"]) == len(lp["token_ids"]) == 8
    for chosen, top in zip(probs["token_logprobs"], probs["top_logprobs"]):
        values = sorted(top.values(), reverse=True)
        assert len(top) <= 3 and chosen == values[0] and chosen <= 0  # greedy picks the most likely
        assert sum(2.718281828459045 ** v for v in values) <= 1 + 1e-6


def test_tokenize_detokenize_equal_ordo_tokenize(server):
    text = "Once upon a time, there was a little girl."
    ids = [int(x) for x in run_cli("tokenize", "-m", MODEL, text).split(",")]
    assert server.ok("/tokenize", {"content": text})["tokens"] == ids
    no_bos = [int(x) for x in run_cli("tokenize", "-m", MODEL, "--no-special", text).split(",")]
    assert server.ok("/tokenize", {"content": text, "add_special": False})["tokens"] == no_bos
    pieces = server.ok("/tokenize", {"content": "cat", "with_pieces": True})["tokens"]
    assert [p["id"] for p in pieces] == [int(x) for x in run_cli("tokenize", "-m", MODEL, "cat").split(",")]
    assert server.ok("/detokenize", {"tokens": no_bos})["content"] == run_cli(
        "tokenize", "-m", MODEL, "--decode", ",".join(map(str, no_bos))).rstrip("\n")


def test_embeddings_equal_ordo_embed(server, tmp_path):
    out = tmp_path / "e.json"
    run_cli("embed", "-m", MODEL, "A little bird", "-o", out)
    ref = json.loads(out.read_text())
    ref_vec = ref["embedding"] if isinstance(ref, dict) and "embedding" in ref else ref
    got = server.ok("/v1/embeddings", {"input": ["A little bird", "The sun was"]})
    assert [d["index"] for d in got["data"]] == [0, 1]
    vec = got["data"][0]["embedding"]
    flat = ref_vec[0] if isinstance(ref_vec[0], list) else ref_vec
    assert len(vec) == len(flat)
    assert max(abs(a - b) for a, b in zip(vec, flat)) < 1e-5
    assert got["usage"]["prompt_tokens"] > 0


def test_sixteen_concurrent_clients_get_what_each_gets_alone(server):
    bodies = []
    for i in range(16):
        body = {"prompt": PROMPTS[i % 8], "max_tokens": 20 + 4 * (i % 5)}
        body.update({"temperature": 0} if i % 2 == 0 else {"temperature": 0.8, "top_k": 40, "seed": 100 + i})
        bodies.append(body)
    alone = [server.ok("/v1/completions", b)["choices"][0] for b in bodies]
    got = [None] * 16
    barrier = threading.Barrier(16)

    def client(i):
        barrier.wait()
        if i % 4 == 3:  # some stream beside the others
            text, ids = joined(server.stream("/v1/completions", bodies[i]))
            got[i] = {"text": text, "token_ids": ids}
        else:
            got[i] = server.ok("/v1/completions", bodies[i])["choices"][0]

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    before = server.metrics()
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    for i in range(16):
        assert got[i]["token_ids"] == alone[i]["token_ids"], i
        assert got[i]["text"] == alone[i]["text"], i
    after = server.metrics()
    steps = after["ordo_decode_steps_total"] - before["ordo_decode_steps_total"]
    seqs = after["ordo_batched_sequences_total"] - before["ordo_batched_sequences_total"]
    assert seqs > 1.5 * steps  # the requests really were batched together
    step_time = after["ordo_decode_step_seconds_total"] - before["ordo_decode_step_seconds_total"]
    assert 0 < step_time < wall  # time inside the steps: some, and no more than the clients waited


def test_chat_renders_the_template_as_transformers(chat_model):
    goldens = json.loads((MODEL.parents[1] / "tests/data/chat/goldens.json").read_text())["cases"]
    case = next(c for c in goldens if c["add_generation_prompt"] and len(c["messages"]) == 1)
    s = Server("-m", chat_model, "--parallel", 2)
    try:
        body = {"messages": case["messages"], "max_tokens": 16, "temperature": 0}
        got = s.ok("/v1/chat/completions", body)
        assert got["object"] == "chat.completion"
        assert got["usage"]["prompt_tokens"] == len(case["ids"])
        ref = s.ok("/v1/completions", {"prompt": case["ids"], "max_tokens": 16, "temperature": 0})
        assert got["choices"][0]["token_ids"] == ref["choices"][0]["token_ids"]
        assert got["choices"][0]["message"]["role"] == "assistant"
        assert got["choices"][0]["message"]["content"].strip() == ref["choices"][0]["text"].strip()
        chunks = s.stream("/v1/chat/completions", body)
        assert chunks[0]["object"] == "chat.completion.chunk"
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        assert joined(chunks, chat=True)[0] == got["choices"][0]["message"]["content"]
    finally:
        s.stop()


def test_a_directory_without_tokenizer_serves_token_ids(server, tmp_path):
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        (tmp_path / f).write_bytes((MODEL / f).read_bytes())
    s = Server("-m", tmp_path)
    try:
        body = {"prompt": [1, 403, 407, 261, 378], "max_tokens": 12, "temperature": 0}
        got = s.ok("/v1/completions", body)["choices"][0]
        assert got["token_ids"] == server.ok("/v1/completions", body)["choices"][0]["token_ids"]
        assert got["text"] == ""
        status, answer = s.post("/v1/completions", {"prompt": "text", "max_tokens": 3})
        assert status == 400 and "no tokenizer" in answer["error"]["message"]
    finally:
        s.stop()


def test_an_encoder_serves_embeddings_as_ordo_embed(tmp_path):
    encoder = MODEL.parent / "zoo" / "mlm" / "rope-s1"
    out = tmp_path / "e.json"
    run_cli("embed", "-m", encoder, "A little bird", "-o", out)
    ref = json.loads(out.read_text())
    s = Server("-m", encoder)
    try:
        got = s.ok("/v1/embeddings", {"input": "A little bird"})
        assert got["usage"]["prompt_tokens"] == len(ref["ids"])
        vec = got["data"][0]["embedding"]
        assert len(vec) == ref["dim"]
        assert max(abs(a - b) for a, b in zip(vec, ref["embedding"])) < 1e-5
        by_ids = s.ok("/v1/embeddings", {"input": [ref["ids"]]})["data"][0]["embedding"]
        assert max(abs(a - b) for a, b in zip(by_ids, ref["embedding"])) < 1e-5
        status, answer = s.post("/v1/completions", {"prompt": "A little", "max_tokens": 3})
        assert status == 400 and "not a decoder-only model" in answer["error"]["message"]
    finally:
        s.stop()
