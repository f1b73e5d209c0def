"""Throughput and peak memory of `--check --file`, side by side with the seed's literal rules.

    python3 benchmarks/bench_check.py            # 30 MB summaries file, 10 MB summary, linearity
    python3 benchmarks/bench_check.py --quick    # smaller sizes, for a smoke run

Each measurement runs in its own process (peak RSS from wait4). The inputs are built
from the labelled corpus (good and failing summaries, every language) and written to
a temporary folder. Targets: at least 2x the literal rules' throughput on
the 30 MB file, under 150 MB peak on the 10 MB summary, cost linear in input size.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

SEED_RUNNER = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from compaction_guard.seed_rules import validate_summary
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
if path.endswith(".json"):
    recs = json.loads(text)
    fails = sum(1 for r in recs if validate_summary(r["content"], len(r.get("input") or "") // 4))
else:
    fails = int(bool(validate_summary(text)))
print(fails)
"""


def build_inputs(folder: Path, records_mb: float, summary_mb: float) -> dict:
    import random
    from build import build
    rng = random.Random(1)
    samples = build()
    good = [s for s in samples if s.label == "good"]
    bad = [s for s in samples if s.label != "good"]
    # a store as users have it: mostly good summaries, one in ten broken
    mix = [rng.choice(bad) if rng.random() < 0.1 else rng.choice(good) for _ in range(4000)]
    recs = [{"id": s.id, "content": s.content, "input": s.input_text} for s in mix]
    paths = {}
    for label, mb in (("records", records_mb), ("records_half", records_mb / 2), ("records_quarter", records_mb / 4)):
        out, size, i = [], 0, 0
        while size < mb * 1e6:
            r = dict(recs[i % len(recs)])
            r["id"] = f"{r['id']}#{i}"
            out.append(r)
            size += len(r["content"].encode()) + len((r["input"] or "").encode()) + 40
            i += 1
        p = folder / f"{label}.json"
        p.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
        paths[label] = p
    # one long summary: good summaries of every language, back to back, their
    # numbers varied so the text does not repeat itself
    goods = [s.content for s in good]
    parts, size, i = [], 0, 0
    while size < summary_mb * 1e6:
        part = re.sub(r"\d", lambda m: str(rng.randrange(10)), goods[i % len(goods)])
        parts.append(part)
        size += len(part.encode()) + 2
        i += 1
    p = folder / "one_summary.md"
    p.write_text("\n\n".join(parts), encoding="utf-8")
    paths["summary"] = p
    return paths


def measure(script: Path, args: list, env: dict) -> dict:
    """Run `script args` in a fresh interpreter; wall seconds and peak RSS (VmHWM)."""
    wrapper = ("import atexit, runpy, sys\n"
               "def peak():\n"
               "    for line in open('/proc/self/status'):\n"
               "        if line.startswith('VmHWM:'):\n"
               "            sys.stderr.write('PEAK_KB %s\\n' % line.split()[1])\n"
               "atexit.register(peak)\n"
               "sys.argv = sys.argv[1:]\n"
               "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", wrapper, str(script), *map(str, args)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, env=env, text=True)
    seconds = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"benchmark command failed ({p.returncode}): {script} {args}\n{p.stderr}")
    kb = [int(line.split()[1]) for line in p.stderr.splitlines() if line.startswith("PEAK_KB")]
    return {"seconds": seconds, "peak_mb": kb[-1] / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 MB / 1 MB instead of 30 MB / 10 MB")
    args = ap.parse_args()
    rec_mb, sum_mb = (3, 1) if args.quick else (30, 10)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = build_inputs(tmp, rec_mb, sum_mb)
        env = dict(os.environ, OPENCLAW_HOME=str(tmp / "home"))
        seed_script = tmp / "seed_rules_check.py"
        seed_script.write_text(SEED_RUNNER)
        rows = []
        for label in ("records_quarter", "records_half", "records", "summary"):
            p = paths[label]
            mb = p.stat().st_size / 1e6
            g = measure(ROOT / "guard.py", ["--check", "--format", "json", "--file", p], env)
            s = measure(seed_script, [p, ROOT], env)
            rows.append((label, mb, g, s))
        print(f"{'input':<18}{'MB':>7}  {'guard s':>8}{'MB/s':>7}{'peak MB':>9}   {'seed s':>8}{'MB/s':>7}{'peak MB':>9}   speedup")
        for label, mb, g, s in rows:
            print(f"{label:<18}{mb:>7.1f}  {g['seconds']:>8.2f}{mb / g['seconds']:>7.2f}{g['peak_mb']:>9.0f}   "
                  f"{s['seconds']:>8.2f}{mb / s['seconds']:>7.2f}{s['peak_mb']:>9.0f}   x{s['seconds'] / g['seconds']:.2f}")
        q, h, f = rows[0], rows[1], rows[2]
        print(f"\nlinearity (guard seconds per MB): {q[2]['seconds'] / q[1]:.3f} at {q[1]:.0f} MB, "
              f"{h[2]['seconds'] / h[1]:.3f} at {h[1]:.0f} MB, {f[2]['seconds'] / f[1]:.3f} at {f[1]:.0f} MB")
        summ = rows[3]
        print(f"one {summ[1]:.0f} MB summary: guard peak {summ[2]['peak_mb']:.0f} MB "
              f"(target < 150), seed rules peak {summ[3]['peak_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
