# `ordo serve` refusing: every error in OpenAI's shape, the API key, a full queue, time limits, and
# a streaming client that disconnects (its sequence freed, the server healthy).
import json
import socket
import threading
import time

import pytest

from conftest import MODEL, Server


def assert_error(answer, status, expected_status, param=None, contains=()):
    assert status == expected_status, answer
    assert set(answer) == {"error"}, answer
    err = answer["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["code"] == expected_status
    assert err["param"] == param, err
    for text in contains:
        assert text in err["message"], err["message"]
    return err


@pytest.mark.parametrize("body,param,contains", [
    ({}, "prompt", ["'prompt' is required"]),
    ({"prompt": 5}, "prompt", ["'prompt' must be"]),
    ({"prompt": "x", "max_tokens": "ten"}, "max_tokens", ["'max_tokens' must be an integer, got string"]),
    ({"prompt": "x", "max_tokens": -1}, "max_tokens", ["[0, "]),
    ({"prompt": "x", "temperature": 3}, "temperature", ["'temperature' must be in [0, 2]"]),
    ({"prompt": "x", "top_p": 0}, "top_p", ["top_p"]),
    ({"prompt": "x", "top_k": 1.5}, "top_k", ["integer"]),
    ({"prompt": "x", "stop": [1]}, "stop", ["'stop'[0] must be a string"]),
    ({"prompt": "x", "n": 2}, "n", ["'n'"]),
    ({"prompt": "x", "logprobs": 21}, "logprobs", ["[0, 20]"]),
    ({"prompt": "x", "stream": "yes"}, "stream", ["boolean"]),
    ({"prompt": [1, 99999]}, "prompt", ["99999", "outside the vocabulary"]),
    ({"prompt": [1, -3]}, "prompt", ["token id"]),
    ({"prompt": ["a", "b"]}, "prompt", ["one prompt per request"]),
    ({"prompt": "x", "echo": True, "logprobs": 1}, "echo", ["not supported"]),
    ({"prompt": "x", "max_tokens": 4095}, "max_tokens", ["4095", "4096 tokens", "prompt ("]),
])
def test_bad_completion_requests_are_400_naming_the_field(server, body, param, contains):
    status, answer = server.post("/v1/completions", body)
    err = assert_error(answer, status, 400, param, contains)
    assert err["type"] == "invalid_request_error"


def test_context_limit_names_both_numbers(server):
    status, answer = server.post("/v1/completions", {"prompt": [1] * 100, "max_tokens": 4000})
    assert_error(answer, status, 400, "max_tokens", ["prompt (100 tokens) + max_tokens (4000) = 4100",
                                                     "context limit of 4096 tokens"])


def test_malformed_deep_and_oversized_bodies(server):
    status, answer = server.post("/v1/completions", None, raw=b'{"prompt": "x",')
    assert_error(answer, status, 400, None, ["malformed JSON", "column"])
    status, answer = server.post("/v1/completions", None, raw=b"[1, 2]")
    assert_error(answer, status, 400, None, ["JSON object"])
    deep = '{"prompt": "x", "a": ' + "[" * 200 + "]" * 200 + "}"
    status, answer = server.post("/v1/completions", None, raw=deep.encode())
    assert_error(answer, status, 400, None, ["levels deep"])
    big = json.dumps({"prompt": "x" * (5 << 20)}).encode()  # past the default --max-body of 4 MiB
    status, answer = server.post("/v1/completions", None, raw=big)
    assert_error(answer, status, 413, None, ["--max-body"])
    status, answer = server.request("GET", "/v1/nothing")
    assert_error(answer, status, 404, None, ["/v1/nothing"])
    assert server.request("GET", "/health")[0] == 200


def test_no_request_names_a_file(server):
    # "model" is a name in answers, never a path to load: the answer is the same for any value.
    a = server.ok("/v1/completions", {"prompt": "The cat", "max_tokens": 5, "temperature": 0})
    b = server.ok("/v1/completions", {"prompt": "The cat", "max_tokens": 5, "temperature": 0,
                                      "model": "/etc/passwd"})
    assert a["choices"][0]["token_ids"] == b["choices"][0]["token_ids"]
    assert b["model"] == "stories260K"


def test_chat_without_a_template_is_400(server):
    status, answer = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    assert_error(answer, status, 400, None, ["chat_template"])
    status, answer = server.post("/v1/chat/completions", {"messages": []})
    assert_error(answer, status, 400, "messages", ["non-empty list"])


def test_unrenderable_chat_template_is_400_naming_the_construct(chat_model):
    cfg = json.loads((chat_model / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "{% for m in messages %}{{ m.content | frobnicate }}{% endfor %}"
    (chat_model / "tokenizer_config.json").write_text(json.dumps(cfg))
    s = Server("-m", chat_model)
    try:
        status, answer = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
        assert_error(answer, status, 400, None, ["frobnicate"])
    finally:
        s.stop()


def test_api_key():
    s = Server("-m", MODEL, key="sesame")
    try:
        body = {"prompt": "The cat", "max_tokens": 3}
        status, answer = s.post("/v1/completions", body, headers={"Authorization": ""})
        assert_error(answer, status, 401, None, ["API key"])
        status, answer = s.post("/v1/completions", body, headers={"Authorization": "Bearer sesam"})
        assert_error(answer, status, 401, None, ["API key"])
        status, answer = s.request("GET", "/metrics", headers={"Authorization": "Bearer nope"})
        assert status == 401
        assert s.request("GET", "/health", headers={"Authorization": ""})[0] == 200
        assert s.post("/v1/completions", body)[0] == 200
    finally:
        s.stop()


def open_stream(server, body):
    """A raw socket reading a streaming request's first event; returns the socket."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    payload = json.dumps({**body, "stream": True})
    sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(payload)}\r\n\r\n{payload}").encode())
    got = b""
    while b"data: {" not in got:
        chunk = sock.recv(4096)
        assert chunk, got
        got += chunk
    return sock


def wait_until(predicate, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_full_queue_is_503_with_retry_after_and_disconnect_frees_the_slot():
    s = Server("-m", MODEL, "--parallel", 1, "--queue", 0, "-c", 8192, "--timeout", 0.1)
    try:
        long = {"prompt": "Once upon a time", "max_tokens": 8000, "ignore_eos": True, "temperature": 0}
        sock = open_stream(s, long)
        assert s.metrics()["ordo_requests_running"] == 1
        status, answer = s.post("/v1/completions", {"prompt": "The cat", "max_tokens": 3})
        assert_error(answer, status, 503, None, ["--parallel", "--queue"])
        assert s.last_headers.get("Retry-After") == "1"
        before = s.metrics()
        sock.close()  # the client goes away mid-stream
        assert wait_until(lambda: s.metrics()["ordo_requests_running"] == 0)
        after = s.metrics()
        assert after['ordo_generations_finished_total{reason="cancelled"}'] == 1
        # Freed within a few steps of the disconnect, long before its 8000 tokens.
        assert after["ordo_generated_tokens_total"] - before["ordo_generated_tokens_total"] < 200
        assert s.request("GET", "/health")[0] == 200
        # A non-streaming request past --timeout: 504, and its slot freed too.
        status, answer = s.post("/v1/completions", long)
        assert_error(answer, status, 504, None, ["--timeout"])
        assert s.metrics()["ordo_requests_running"] == 0
        assert s.ok("/v1/completions", {"prompt": "The cat", "max_tokens": 3})["usage"]["completion_tokens"] <= 3
    finally:
        s.stop()


def test_sigterm_ends_a_long_non_streaming_request_at_once():
    """SIGTERM cancels generations in flight: a non-streaming request that would run ~40 s gets its
    503 and the server exits 0 within seconds, instead of waiting for the whole generation."""
    s = Server("-m", MODEL, "--parallel", 1, "-c", 32768)
    answer = {}

    def client():
        answer["got"] = s.post("/v1/completions", {"prompt": "Once", "max_tokens": 16000, "ignore_eos": True})

    t = threading.Thread(target=client)
    t.start()
    deadline = time.time() + 30
    while s.metrics()["ordo_generated_tokens_total"] < 20:
        assert time.time() < deadline, "the generation never started"
        time.sleep(0.02)
    start = time.time()
    s.stop()
    t.join(timeout=30)
    assert time.time() - start < 10
    status, body = answer["got"]
    assert_error(body, status, 503, contains=["cancelled"])
