"""What the proxy costs per compaction, side by side with calling the upstream directly.

    python3 benchmarks/bench_serve.py            # 300 sequential calls, 64 at 32 concurrent
    python3 benchmarks/bench_serve.py --quick    # 100 and 32

The upstream is the tests' fake OpenAI-compatible server on 127.0.0.1 (real HTTP),
answering a good summary at once (overhead) or after 1 s (concurrency). The proxy runs
as users run it (`python3 guard.py serve`, its own process); its peak memory is read
from /proc. Every figure for the proxy is printed beside the same calls made directly
to the upstream in the same run. Each proxied call is checked by every detector
against the request's conversation (~6,000 characters here) and recorded in the state.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from modelkit.behaviours import B, FakeLLM, ok  # noqa: E402

HISTORY = ("user: the deploy of v2.3.1 to staging failed on web-3 with exit 137 (OOM); assistant: raised the memory "
           "limit to 2 GiB in deploy/values.yaml and re-ran it; it passed. ") * 40


def post(url: str, body: dict) -> float:
    data = json.dumps(body).encode()
    t = time.perf_counter()
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        doc = json.loads(r.read())
    assert doc["choices"][0]["message"]["content"]
    return time.perf_counter() - t


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n, burst = (100, 32) if args.quick else (300, 64)
    body = {"model": "m", "messages": [{"role": "system", "content": "Summarize."},
                                       {"role": "user", "content": HISTORY}]}
    with tempfile.TemporaryDirectory() as home, FakeLLM([ok()]) as fast, FakeLLM([B("slow", seconds=1.0)]) as slow:
        rows = []
        for name, up in (("instant upstream", fast), ("1 s upstream", slow)):
            port = free_port()
            env = dict(os.environ, OPENCLAW_HOME=home)
            p = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--port", str(port), "--provider",
                                  "openai", "--base-url", up.url + "/v1", "--model", "m"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                for _ in range(400):
                    try:
                        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                        break
                    except OSError:
                        time.sleep(0.05)
                proxy = f"http://127.0.0.1:{port}/v1/chat/completions"
                direct = up.url + "/v1/chat/completions"
                if up is fast:
                    for url in (direct, proxy):        # warm both
                        post(url, body)
                    d = [post(direct, body) for _ in range(n)]
                    g = [post(proxy, body) for _ in range(n)]
                    over = [b - a for a, b in zip(sorted(d), sorted(g))]
                    rows.append(f"{n} sequential calls, {name}:\n"
                                f"  direct   p50 {statistics.median(d) * 1000:7.2f} ms  p99 {pct(d, 99) * 1000:7.2f} ms\n"
                                f"  proxy    p50 {statistics.median(g) * 1000:7.2f} ms  p99 {pct(g, 99) * 1000:7.2f} ms\n"
                                f"  overhead p50 {statistics.median(over) * 1000:7.2f} ms  p99 {pct(over, 99) * 1000:7.2f} ms"
                                " (checks, the state update, the extra hop)")
                else:
                    for label, url in (("direct", direct), ("proxy", proxy)):
                        t = time.perf_counter()
                        with ThreadPoolExecutor(32) as pool:
                            lat = list(pool.map(lambda _: post(url, body), range(burst)))
                        took = time.perf_counter() - t
                        rows.append(f"{burst} calls, 32 at a time, {name}, {label}: {took:5.2f} s, "
                                    f"{burst / took:5.1f} compactions/s, p50 {statistics.median(lat):5.2f} s, "
                                    f"p99 {pct(lat, 99):5.2f} s")
                peak = [ln for ln in open(f"/proc/{p.pid}/status") if ln.startswith("VmHWM")][0].split()[1]
                rows.append(f"  proxy process peak memory: {int(peak) / 1024:.0f} MB")
            finally:
                p.terminate()
                p.wait(30)
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
