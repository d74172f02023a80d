# One Model shared by Python threads: results identical to serial calls; the GIL is released.
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PROMPTS = ["Once upon a time", "The little dog", "Lily saw a big red ball", "One day"]


def work(m, i):
    p = PROMPTS[i % len(PROMPTS)]
    g = m.generate(p, max_new_tokens=24, temperature=0.8, top_k=30, seed=i)
    logits = np.asarray(m.forward(m.tokenize(p)).logits).copy()
    s = m.score(p).token_logprobs
    st = "".join(m.stream(p, max_new_tokens=16))
    return g.ids, logits, s, st


def test_four_threads_identical_to_serial(stories):
    serial = [work(stories, i) for i in range(8)]
    with ThreadPoolExecutor(4) as ex:
        threaded = list(ex.map(lambda i: work(stories, i), range(8)))
    for a, b in zip(serial, threaded):
        assert a[0] == b[0]
        assert np.array_equal(a[1], b[1])
        assert a[2] == b[2]
        assert a[3] == b[3]


def test_other_thread_progresses_during_generate(stories):
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        time.sleep(0.01)
        start = len(ticks)
        t0 = time.perf_counter()
        stories.generate_batch(PROMPTS * 4, max_new_tokens=200, max_batch=4)
        elapsed = time.perf_counter() - t0
        during = len(ticks) - start
    finally:
        done.set()
        t.join()
    assert elapsed > 0.05
    # With the GIL held the ticker could not run at all while generating.
    assert during >= 10


def test_import_chooses_passive_openmp_wait_unless_user_did():
    import os
    import subprocess
    import sys

    import ordo

    code = "import os, ordo; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["PYTHONPATH"] = ordo.__path__[0] + "/.."
    run = lambda e: subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                                   check=True).stdout.strip()
    assert run(env) == "PASSIVE"
    assert run({**env, "OMP_WAIT_POLICY": "active"}) == "active"
