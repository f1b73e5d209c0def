"""Scale: checking a lossless-claw lcm.db of 30,000 and 300,000 summaries.

    python3 benchmarks/bench_lcm.py              # 30k and 300k summaries (~0.2 GB and ~2 GB)
    python3 benchmarks/bench_lcm.py --sizes 3000 # a quick run

Builds each database once in benchmarks/data/ (ignored by git) in lossless-claw's
schema: leaf summaries over their messages, condensed summaries over leaves, one in
twenty broken, texts from the labelled corpus with their figures varied. Then runs
`guard.py --check --file lcm.db --format json` and samples the resident memory of
the whole process tree (the guard and its workers) every 50 ms. Prints summaries/s,
MB/s, the peak and seconds per 1,000 summaries (linear cost: that figure stays flat).
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

DATA = ROOT / "benchmarks" / "data"


def build(path: Path, n_summaries: int, seed: int = 5) -> None:
    from build import build as corpus
    from openclaw_fixtures import LCM_SCHEMA, lcm_tokens
    rng = random.Random(seed)
    samples = corpus()
    good = [s for s in samples if s.label == "good"]
    bad = [s for s in samples if s.label not in ("good", "stale")]
    tmp = path.with_suffix(".building")
    if tmp.exists():
        tmp.unlink()
    con = sqlite3.connect(tmp)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.executescript(LCM_SCHEMA)
    digits = re.compile(r"\d")
    per_conv = 24
    msg_id = sid_n = 0
    leaves = int(n_summaries * 0.9)
    conv_count = max(1, leaves // per_conv)
    condensed_left = n_summaries - leaves
    for conv in range(1, conv_count + 1):
        con.execute("INSERT INTO conversations (conversation_id, session_id) VALUES (?, ?)", (conv, f"s{conv}"))
        msgs, sums, links, leaf_ids = [], [], [], []
        seq = 0
        for _ in range(per_conv):
            src = rng.choice(good)
            ids = []
            for _ in range(5):
                seq += 1
                msg_id += 1
                text = digits.sub(lambda m: str(rng.randrange(10)),
                                  " ".join(rng.choice(good).content for _ in range(3)))[:1800]
                msgs.append((msg_id, conv, seq, "user" if seq % 2 else "assistant", text, lcm_tokens(text)))
                ids.append(msg_id)
            s = rng.choice(bad) if rng.random() < 0.05 else src
            content = digits.sub(lambda m: str(rng.randrange(10)), s.content)
            sid_n += 1
            sid = f"sum_{sid_n:016x}"
            sums.append((sid, conv, "leaf", 0, content, lcm_tokens(content), "gpt-4o-mini"))
            links += [(sid, m, i) for i, m in enumerate(ids)]
            leaf_ids.append(sid)
        con.executemany("INSERT INTO messages (message_id, conversation_id, seq, role, content, token_count) "
                        "VALUES (?, ?, ?, ?, ?, ?)", msgs)
        con.executemany("INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, model) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)", sums)
        con.executemany("INSERT INTO summary_messages VALUES (?, ?, ?)", links)
        # condensed nodes over groups of leaves, spread over the conversations
        while condensed_left > 0 and len(leaf_ids) >= 8 and rng.random() < (n_summaries - leaves) / conv_count / 2:
            group = leaf_ids[:8]
            leaf_ids = leaf_ids[8:]
            sid_n += 1
            sid = f"sum_{sid_n:016x}"
            content = " ".join(digits.sub(lambda m: str(rng.randrange(10)), rng.choice(good).content) for _ in range(2))
            con.execute("INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, model) "
                        "VALUES (?, ?, 'condensed', 1, ?, ?, 'gpt-4o-mini')", (sid, conv, content, lcm_tokens(content)))
            con.executemany("INSERT INTO summary_parents VALUES (?, ?, ?)", [(sid, p, i) for i, p in enumerate(group)])
            condensed_left -= 1
        if conv % 500 == 0:
            con.commit()
    con.commit()
    con.execute("PRAGMA journal_mode=WAL")   # as lossless-claw runs it
    con.close()
    tmp.rename(path)


class TreeSampler(threading.Thread):
    """Peak resident memory of a process and its children, sampled from /proc."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kb = 0
        self.stop = False

    def _children(self):
        out = {self.pid}
        try:
            for name in os.listdir("/proc"):
                if name.isdigit():
                    try:
                        with open(f"/proc/{name}/stat") as fh:
                            ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                        if ppid == self.pid:
                            out.add(int(name))
                    except (OSError, ValueError, IndexError):
                        pass
        except OSError:
            pass
        return out

    def run(self):
        while not self.stop:
            total = 0
            for pid in self._children():
                try:
                    with open(f"/proc/{pid}/status") as fh:
                        for line in fh:
                            if line.startswith("VmRSS:"):
                                total += int(line.split()[1])
                except OSError:
                    pass
            self.peak_kb = max(self.peak_kb, total)
            time.sleep(0.05)


def run_check(db: Path, home: Path) -> dict:
    env = dict(os.environ, OPENCLAW_HOME=str(home))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "--check", "--file", str(db), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out_bytes = 0
    for chunk in iter(lambda: proc.stdout.read(1 << 16), b""):
        out_bytes += len(chunk)
    proc.wait()
    seconds = time.perf_counter() - t0
    sampler.stop = True
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check failed ({proc.returncode}): {proc.stderr.read().decode()[:500]}")
    return {"seconds": seconds, "peak_mb": sampler.peak_kb / 1024, "json_mb": out_bytes / 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[30_000, 300_000])
    args = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.sizes:
        db = DATA / f"lcm-{n}.db"
        if not db.exists():
            t0 = time.perf_counter()
            build(db, n)
            print(f"built {db.name}: {db.stat().st_size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s", flush=True)
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        count = con.execute("SELECT count(*) FROM summaries").fetchone()[0]
        con.close()
        home = DATA / f"home-{n}"
        home.mkdir(exist_ok=True)
        r = run_check(db, home)
        rows.append((n, count, db.stat().st_size / 1e6, r))
    print(f"{'summaries':>10}{'db MB':>9}{'seconds':>9}{'summ/s':>9}{'MB/s':>7}{'peak MB':>9}{'s/1k summ':>11}")
    for n, count, mb, r in rows:
        print(f"{count:>10,}{mb:>9.0f}{r['seconds']:>9.1f}{count / r['seconds']:>9,.0f}{mb / r['seconds']:>7.1f}"
              f"{r['peak_mb']:>9.0f}{r['seconds'] / count * 1000:>11.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
