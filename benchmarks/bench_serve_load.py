"""`serve` under load: 64 compaction requests of real size at once, then the same with a few
of the largest size the guard accepts, side by side with the same requests sent straight to
the upstream (the reference: what the guard adds).

    python3 benchmarks/bench_serve_load.py [--quick]

The guard runs as users run it (`guard.py serve`, its own process, on 127.0.0.1), its upstream
the scripted model server of the tests (tests/modelkit/behaviours.py, real HTTP, a good summary after
0.2 s). Each request is OpenClaw's own compaction request (tests/data/openclaw-live, as
OpenClaw 2026.9.6 sent it) with its conversation replaced by real histories of the openclaw
set, repeated to ~100,000 tokens (about 450 KB); the large ones are filled to just under
serve_max_body_bytes. Printed: each request's latency (p50, p99, max), the guard process's
peak memory (VmHWM), and /healthz's and /livez's latency, asked every 50 ms while the load runs.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from modelkit.behaviours import B, FakeLLM  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request_of_size(target_bytes: int) -> bytes:
    """OpenClaw's recorded compaction request, its conversation real histories up to the size."""
    rec = json.loads(open(ROOT / "tests" / "data" / "openclaw-live" / "requests.jsonl", encoding="utf-8").readline())
    body = rec.get("body", rec)
    rows = [json.loads(x)["text"] for x in open(ROOT / "tests" / "corpus" / "real" / "openclaw_histories.jsonl",
                                                 encoding="utf-8")]
    parts, n, i = [], 0, 0
    while n < target_bytes:
        parts.append(rows[i % len(rows)])
        n += len(parts[-1].encode()) + 2
        i += 1
    conversation = "\n\n".join(parts)
    def refill(text: str) -> str:
        if "<conversation>" not in text:
            return text
        head, _, rest = text.partition("<conversation>")
        _, _, tail = rest.partition("</conversation>")
        return f"{head}<conversation>\n{conversation}\n</conversation>{tail}"
    msgs = []
    for m in body["messages"]:
        m = dict(m)
        if isinstance(m.get("content"), str):
            m["content"] = refill(m["content"])
        elif isinstance(m.get("content"), list):      # content parts, as OpenClaw sends them
            m["content"] = [dict(p, text=refill(p["text"])) if isinstance(p, dict) and isinstance(p.get("text"), str)
                            else p for p in m["content"]]
        msgs.append(m)
    out = dict(body, messages=msgs, stream=False)
    out.pop("stream_options", None)
    return json.dumps(out, ensure_ascii=False).encode()


def post(url: str, data: bytes) -> float:
    t = time.perf_counter()
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        r.read()
        assert r.status == 200, r.status
    return time.perf_counter() - t


def pct(xs: list, p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def load(url: str, bodies: list, probe_base=None) -> tuple:
    """(request latencies, {probe path: latencies}) of all bodies sent at once."""
    probes = {"/healthz": [], "/livez": []}
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            for path in probes:
                t = time.perf_counter()
                try:
                    urllib.request.urlopen(probe_base + path, timeout=30).read()
                except OSError:
                    pass
                probes[path].append(time.perf_counter() - t)
            time.sleep(0.05)
    th = threading.Thread(target=probe, daemon=True) if probe_base else None
    if th:
        th.start()
    with ThreadPoolExecutor(len(bodies)) as pool:
        lat = list(pool.map(lambda b: post(url, b), bodies))
    stop.set()
    if th:
        th.join(10)
    return lat, probes


def peak_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="16 requests, 1 of the largest size")
    args = ap.parse_args()
    from compaction_guard.settings import DEFAULT
    n, big = (16, 1) if args.quick else (64, 4)
    real = request_of_size(450_000)
    largest = request_of_size(int(DEFAULT.serve_max_body_bytes * 0.93))
    assert len(largest) <= DEFAULT.serve_max_body_bytes, len(largest)
    print(f"requests: {n} of {len(real):,} bytes (OpenClaw's compaction request, real histories), then {n - big} of "
          f"those and {big} of {len(largest):,} bytes; upstream: a good summary after 0.2 s")
    with FakeLLM([B("slow", seconds=0.2)]) as fake, tempfile.TemporaryDirectory() as home:
        port = free_port()
        env = dict(os.environ, OPENCLAW_STATE_DIR=home)
        p = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--port", str(port), "--provider",
                              "openai", "--base-url", fake.url + "/v1", "--model", "m"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(400):
                try:
                    urllib.request.urlopen(base + "/livez", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.05)
            direct, _ = load(fake.url + "/v1/chat/completions", [real] * n)
            guard, probes = load(base + "/v1/chat/completions", [real] * n, base)
            mixed, probes2 = load(base + "/v1/chat/completions", [real] * (n - big) + [largest] * big, base)
            mem = peak_mb(p.pid)
            workers = [peak_mb(c) for c in children(p.pid)]
        finally:
            p.terminate()
            p.wait(30)
    row = "  {:<44} p50 {:6.2f} s  p99 {:6.2f} s  max {:6.2f} s"
    print(f"\n{n} at once, each request's latency:")
    print(row.format("straight to the upstream (reference)", pct(direct, .5), pct(direct, .99), max(direct)))
    print(row.format("through the guard", pct(guard, .5), pct(guard, .99), max(guard)))
    print(row.format(f"through the guard, {big} of them the largest", pct(mixed, .5), pct(mixed, .99), max(mixed)))
    for label, pr in (("real size", probes), ("with the largest", probes2)):
        for path, xs in pr.items():
            if xs:
                print(f"  {path} under load ({label}): p50 {pct(xs, .5) * 1000:.0f} ms, p99 {pct(xs, .99) * 1000:.0f} ms, "
                      f"max {max(xs) * 1000:.0f} ms ({len(xs)} asked)")
    print(f"  guard process peak memory (VmHWM): {mem:.0f} MB; its {len(workers)} check processes: "
          + ", ".join(f"{w:.0f} MB" for w in workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
