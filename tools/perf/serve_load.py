#!/usr/bin/env python3
# Load generator for `ordo serve`: Poisson arrivals, streaming requests, vLLM's serving metrics.
"""Usage: serve_load.py --port N [--clients 16] [--requests 64] [--rate inf] [--prompt-tokens 128]
                     [--max-tokens 128] [--time-limit 600] [--seed 0] [--json FILE]
                     [--disconnect-fraction P --server-pid PID]   (a soak)

Sends --requests streaming /v1/completions requests to an `ordo serve` on this machine (loopback
only), at most --clients at once, arriving as a Poisson process of --rate requests/s (inf: all at
once). Each prompt is --prompt-tokens random token ids and each answer exactly --max-tokens tokens
(ignore_eos), so runs compare. Stops sending at --time-limit seconds. Metrics as vLLM's
benchmark_serving defines them: request and output-token throughput; TTFT (request sent to first
token), TPOT ((E2E - TTFT) / (output tokens - 1)), ITL (gaps between streamed tokens), E2E latency,
each as mean, median and p99 in ms. Standard library only.

A soak: --disconnect-fraction P closes that fraction of the streams after their first token (the
server must free them); --server-pid reads the server's RSS (/proc) after the first 100 answers
and at the end. Answers other than 200 and the designed 503 (queue full) count as errors.
"""
import argparse
import http.client
import json
import random
import statistics
import sys
import threading
import time

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def percentile(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class Busy(Exception):
    """The designed 503: the server's queue is full."""


def one_request(host, port, body, key, disconnect=False):
    """Streams one completion: (ttft, [token arrival times], e2e, output tokens) in seconds from send;
    disconnect: close the connection after the first token (returns None)."""
    conn = http.client.HTTPConnection(host, port, timeout=600)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    t0 = time.perf_counter()
    conn.request("POST", "/v1/completions", body=json.dumps(body), headers=headers)
    resp = conn.getresponse()
    if resp.status == 503:
        resp.read()
        raise Busy()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:200]!r}")
    arrivals, buf = [], b""
    while True:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            if not event.startswith(b"data: ") or event == b"data: [DONE]":
                continue
            data = json.loads(event[len(b"data: "):])
            if "error" in data:
                raise RuntimeError(data["error"]["message"])
            now = time.perf_counter() - t0
            arrivals += [now] * len(data["choices"][0].get("token_ids", []))
            if disconnect and arrivals:
                conn.close()
                return None
    conn.close()
    e2e = time.perf_counter() - t0
    return (arrivals[0] if arrivals else e2e), arrivals, e2e, len(arrivals)


def server_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def run(args):
    if args.host not in LOOPBACK:
        sys.exit(f"--host {args.host}: this load generator only talks to this machine (loopback)")
    rng = random.Random(args.seed)
    conn = http.client.HTTPConnection(args.host, args.port, timeout=30)
    conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {args.api_key}"} if args.api_key else {})
    meta = json.loads(conn.getresponse().read())["data"][0]["meta"]
    vocab = meta["vocab_size"]
    bodies = [{"prompt": [rng.randrange(3, vocab) for _ in range(args.prompt_tokens)], "max_tokens": args.max_tokens,
               "ignore_eos": True, "temperature": 0, "stream": True} for _ in range(args.requests)]
    pick = random.Random(args.seed + 1)
    pick_lock = threading.Lock()

    def rng_lock_random():
        with pick_lock:
            return pick.random()

    gaps = [0.0 if args.rate == float("inf") else rng.expovariate(args.rate) for _ in range(args.requests)]
    slots = threading.Semaphore(args.clients)
    results, errors, lock = [], [], threading.Lock()
    counts = {"busy": 0, "disconnected": 0, "answered": 0}
    rss = {}
    start = time.perf_counter()
    deadline = start + args.time_limit

    def worker(body):
        try:
            r = one_request(args.host, args.port, body, args.api_key, rng_lock_random() < args.disconnect_fraction)
            with lock:
                counts["answered" if r else "disconnected"] += 1
                if r:
                    results.append(r)
                if args.server_pid and sum(counts.values()) == 100:
                    rss["after_100_kb"] = server_rss_kb(args.server_pid)
        except Busy:
            with lock:
                counts["busy"] += 1
        except Exception as e:  # counted and reported, the run goes on
            with lock:
                errors.append(str(e))
        finally:
            slots.release()

    threads, due = [], start
    for body, gap in zip(bodies, gaps):
        due += gap
        time.sleep(max(0.0, due - time.perf_counter()))
        slots.acquire()
        if time.perf_counter() > deadline:
            slots.release()
            break
        t = threading.Thread(target=worker, args=(body,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    duration = time.perf_counter() - start
    stats = summarize(args, results, errors, duration)
    stats.update(counts)
    if args.server_pid:
        rss["end_kb"] = server_rss_kb(args.server_pid)
        stats["server_rss"] = rss
    return stats


def summarize(args, results, errors, duration):
    ttft = [r[0] * 1e3 for r in results]
    e2e = [r[2] * 1e3 for r in results]
    tpot = [(r[2] - r[0]) * 1e3 / (r[3] - 1) for r in results if r[3] > 1]
    itl = [(b - a) * 1e3 for r in results for a, b in zip(r[1], r[1][1:])]
    out_tokens = sum(r[3] for r in results)
    stats = {"clients": args.clients, "requests": len(results), "errors": len(errors), "duration_s": duration,
             "request_throughput": len(results) / duration, "output_token_throughput": out_tokens / duration}
    for name, values in (("ttft_ms", ttft), ("tpot_ms", tpot), ("itl_ms", itl), ("e2e_ms", e2e)):
        stats[name] = {"mean": statistics.fmean(values) if values else float("nan"),
                       "median": percentile(values, 50), "p99": percentile(values, 99)}
    if errors:
        stats["first_error"] = errors[0]
    return stats


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--api-key", default="")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--rate", type=float, default=float("inf"), help="requests/s (Poisson); inf: all at once")
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--time-limit", type=float, default=600, help="seconds after which no request is sent")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the metrics as JSON to this file")
    p.add_argument("--disconnect-fraction", type=float, default=0.0,
                   help="soak: this fraction of streams closes after its first token")
    p.add_argument("--server-pid", type=int, help="soak: the server's pid, for its RSS")
    args = p.parse_args()
    if not (1 <= args.clients <= 1024 and 1 <= args.requests <= 100000 and args.rate > 0):
        sys.exit("--clients must be in [1, 1024], --requests in [1, 100000], --rate > 0")
    stats = run(args)
    row = (f"| {stats['clients']} | {stats['requests']} | {stats['request_throughput']:.2f} | "
           f"{stats['output_token_throughput']:.1f} | "
           + " | ".join(f"{stats[m]['mean']:.1f} / {stats[m]['median']:.1f} / {stats[m]['p99']:.1f}"
                        for m in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")) + " |")
    print("| clients | requests | req/s | output tok/s | TTFT ms (mean / median / p99) | TPOT ms | ITL ms | E2E ms |")
    print("|---|---|---|---|---|---|---|---|")
    print(row)
    print(f"answered {stats['answered']}, disconnected {stats['disconnected']}, busy (503) {stats['busy']}, "
          f"errors {stats['errors']}" + (f", server RSS {stats['server_rss']}" if "server_rss" in stats else ""),
          file=sys.stderr)
    if stats["errors"]:
        print(f"first error: {stats['first_error']}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(stats, f, indent=1)
    return 1 if stats["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
