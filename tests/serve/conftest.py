# Fixtures of the `ordo serve` suite: servers started on free loopback ports, HTTP helpers.
import http.client
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "stories260K"


def ordo_binary():
    path = os.environ.get("ORDO_CLI")
    if not path:
        build = Path(os.environ.get("ORDO_BUILD_DIR", ROOT / "build"))
        path = build / "bin" / "ordo"
    path = Path(path)
    if not path.exists():
        pytest.fail(f"no ordo binary at {path} (set ORDO_CLI or ORDO_BUILD_DIR)")
    return str(path)


class Server:
    """One `ordo serve` process on 127.0.0.1 and a free port (--port 0, read from its stderr)."""

    def __init__(self, *args, key=None):
        self.key = key
        cmd = [ordo_binary(), "serve", "--port", "0", "-q", *map(str, args)]
        if key:
            cmd += ["--api-key", key]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"ordo serve did not start: {line}{self.proc.stderr.read()}")
        self.port = int(m.group(1))
        deadline = time.time() + 60
        while time.time() < deadline:
            status, _ = self.request("GET", "/health")
            if status == 200:
                break
            assert status == 503, status  # loading
            time.sleep(0.05)
        else:
            raise RuntimeError("ordo serve never became ready")

    def connection(self, timeout=120):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def headers(self, extra=None):
        h = {"Content-Type": "application/json"}
        if self.key:
            h["Authorization"] = f"Bearer {self.key}"
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, headers=None, raw=None):
        """(status, parsed JSON or text); raw: bytes sent as they are."""
        conn = self.connection()
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        conn.request(method, path, body=data, headers=self.headers(headers))
        resp = conn.getresponse()
        text = resp.read().decode()
        self.last_headers = dict(resp.getheaders())
        conn.close()
        try:
            return resp.status, json.loads(text)
        except json.JSONDecodeError:
            return resp.status, text

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def ok(self, path, body):
        status, answer = self.post(path, body)
        assert status == 200, answer
        return answer

    def stream(self, path, body):
        """The SSE events of a streaming request: parsed JSON chunks, then 'data: [DONE]' checked."""
        conn = self.connection()
        conn.request("POST", path, body=json.dumps({**body, "stream": True}), headers=self.headers())
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        assert resp.getheader("Content-Type").startswith("text/event-stream")
        events = [e for e in resp.read().decode().split("\n\n") if e and not e.startswith(":")]
        conn.close()
        assert events[-1] == "data: [DONE]", events[-3:]
        return [json.loads(e[len("data: "):]) for e in events[:-1]]

    def metrics(self):
        status, text = self.request("GET", "/metrics")
        assert status == 200
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self):
        """SIGTERM: the server ends cleanly, exit 0 (under ASan, no leak or error report either)."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read()
        self.proc.stderr.close()
        assert self.proc.returncode == 0, f"ordo serve exited {self.proc.returncode}: {err[-2000:]}"


@pytest.fixture(scope="module")
def server():
    s = Server("-m", MODEL, "--parallel", 4, "--queue", 32, "-c", 4096)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    """stories260K with tests/data/chat/tokenizer_config.json (a chat template over its tokens)."""
    d = tmp_path_factory.mktemp("chat_model")
    for f in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.model"):
        shutil.copy(MODEL / f, d / f)
    shutil.copy(ROOT / "tests" / "data" / "chat" / "tokenizer_config.json", d / "tokenizer_config.json")
    return d


def run_cli(*args):
    return subprocess.run([ordo_binary(), *map(str, args)], capture_output=True, text=True, check=True).stdout
