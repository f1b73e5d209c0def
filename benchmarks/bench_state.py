"""What one state update costs as compactions pile up: it must stay flat.

    python3 benchmarks/bench_state.py            # up to 10,000 recorded compactions
    python3 benchmarks/bench_state.py --quick    # up to 2,000

Each `--compact` (and, later, each proxied compaction) reads the state, adds one chain
run, and writes it back atomically under the lock (flock, temp file, fsync, rename).
The state's lists and maps are bounded (settings: max_chain_history, max_failures_kept,
max_daily_days, max_sources_kept), so the cost at 10,000 compactions should be the cost
at 100. Printed side by side, in the same run: the same state read and written as YAML
(what the guard did before it wrote JSON), what the update would cost if chain_history
were not bounded, and the floor (an empty state read and written under the lock).
One chain run in four records an L1 failure (so `failures` fills too).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compaction_guard import breaker  # noqa: E402
from compaction_guard.chain import Attempt, ChainResult  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402
from compaction_guard.state import StateStore, record_chain  # noqa: E402


def chain_result(i: int) -> ChainResult:
    attempts = [Attempt(1, "normal", i % 4 != 0, [] if i % 4 else ["repetition"], 120, 0.8)]
    if i % 4 == 0:
        attempts.append(Attempt(2, "aggressive", True, [], 60, 0.5))
    return ChainResult("summary", 1 if i % 4 else 2, 1000 + i, 100, attempts, provider="openai", model="gpt-4o-mini")


def update(store: StateStore, i: int) -> float:
    t = time.perf_counter()
    with store.update() as state:
        result = chain_result(i)
        record_chain(state, result)
        breaker.record(state, result.level_used, False, store.settings)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    top = 2000 if args.quick else 10000
    marks = [m for m in (0, 100, 1000, 2000, 5000, 10000) if m <= top]
    unbounded = DEFAULT.with_overrides(max_chain_history=10 ** 9)
    print(f"{'compactions recorded':>22}  {'update ms (median of 20)':>25}  {'state KB':>9}  {'as YAML: ms':>12}   "
          f"{'unbounded chain_history: ms':>28}  {'KB':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        bounded = StateStore(Path(tmp) / "a" / "state.yaml", DEFAULT)
        raw = StateStore(Path(tmp) / "b" / "state.yaml", unbounded)
        done = 0
        for mark in marks:
            while done < mark:
                update(bounded, done)
                if mark <= 2000:      # the unbounded reference grows quadratically: stop it at 2,000
                    update(raw, done)
                done += 1
            a = statistics.median(update(bounded, done + k) for k in range(20))
            y = statistics.median(_as_yaml(bounded) for _ in range(5))
            line = f"{mark:>22,}  {a * 1000:>25.2f}  {bounded.path.stat().st_size / 1024:>9.1f}  {y * 1000:>12.2f}   "
            if mark <= 2000:
                b = statistics.median(update(raw, done + k) for k in range(20))
                line += f"{b * 1000:>28.2f}  {raw.path.stat().st_size / 1024:>7.1f}"
            else:
                line += f"{'(not run)':>28}"
            done += 20
            print(line, flush=True)
        floor = StateStore(Path(tmp) / "c" / "state.yaml", DEFAULT)
        f = statistics.median(_empty_update(floor) for _ in range(20))
        print(f"floor (an empty state read and written under the lock): {f * 1000:.2f} ms")
    return 0


def _as_yaml(store: StateStore) -> float:
    """The YAML reference: the same state parsed and dumped as the guard did before
    (the user-file reader with its limits, then CSafeDumper), without the file I/O."""
    import yaml
    from compaction_guard.stores.records_file import safe_yaml
    state = store.read()
    text = yaml.dump(state, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True, sort_keys=False)
    t = time.perf_counter()
    data = safe_yaml(text)
    yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), allow_unicode=True, sort_keys=False)
    return time.perf_counter() - t


def _empty_update(store: StateStore) -> float:
    t = time.perf_counter()
    with store.update():
        pass
    return time.perf_counter() - t


if __name__ == "__main__":
    sys.exit(main())
