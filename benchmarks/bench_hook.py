"""What the guard's hook costs an agent on its ordinary path: next to a bare Python start.

    python3 benchmarks/bench_hook.py             # 41 runs of each, interleaved
    python3 benchmarks/bench_hook.py --runs 11   # quicker
    python3 benchmarks/bench_hook.py --check     # exit 1 above the target (4x a bare start)
    python3 benchmarks/bench_hook.py --record    # write benchmarks/results/hook.json (docs/reliability.md's row)

Claude Code runs `compaction-guard hook claude-code` on every prompt and every tool call
(UserPromptSubmit, PostToolUse), Codex `hook codex` on every prompt and session start,
Gemini CLI `hook gemini` before every model call (BeforeModel, whose event carries the whole
request: here a 2 MB one, the guard reads its first 64 KiB, and a session file that grew since
the hook last looked); almost always there is nothing to say. Each row is a whole
process, started the way the agent starts it (this Python, guard.py, the event's JSON on
stdin), in a throwaway configuration directory that holds a state (a check ran before) and
no pending warning. Side by side, in the same run and interleaved so the host's load falls
on every row alike:
- bare start: `python -c pass` with the same interpreter, the floor any Python hook pays;
- the hook's ordinary path, for each event that fires often;
- the command line and its detectors imported (`import compaction_guard.cli`), what every
  event paid before the hook was dispatched ahead of them (launch.py).
The figure held to the target is the median of the ordinary path over the median bare start.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 4.0
RESULTS = ROOT / "benchmarks" / "results" / "hook.json"


def run(cmd: list, stdin: bytes, env: dict) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    took = time.perf_counter() - t
    if done.returncode != 0 or done.stdout.strip():
        raise SystemExit(f"bench_hook: {cmd} answered {done.returncode} {done.stdout[:200]!r} "
                         f"{done.stderr[:200]!r}: the ordinary path must say nothing")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=41)
    ap.add_argument("--check", action="store_true", help=f"exit 1 when the ordinary path is over {TARGET}x")
    ap.add_argument("--record", action="store_true", help=f"write the figures to {RESULTS.relative_to(ROOT)}")
    args = ap.parse_args()
    py = sys.executable
    guard = str(ROOT / "guard.py")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "claude"
        (cfg / "compaction-guard").mkdir(parents=True)
        # a state as a check leaves it: the hook must not read it on the ordinary path
        (cfg / "compaction-guard" / "state.yaml").write_text(json.dumps(
            {"sessions": {f"claude-code:s{i}": {"id": f"postcompact@{i}", "failures": []} for i in range(200)}}))
        codex = Path(tmp) / "codex"
        (codex / "compaction-guard").mkdir(parents=True)
        (codex / "compaction-guard" / "state.yaml").write_text((cfg / "compaction-guard" / "state.yaml").read_text())
        gem = Path(tmp) / "gemini"
        (gem / ".gemini" / "compaction-guard").mkdir(parents=True)
        (gem / ".gemini" / "compaction-guard" / "state.yaml").write_text(
            (cfg / "compaction-guard" / "state.yaml").read_text())
        session = Path(tmp) / "session.jsonl"
        session.write_text("".join(json.dumps({"id": f"m{i}", "type": "user", "content": [{"text": "y" * 400}]}) + "\n"
                                   for i in range(2000)))
        env = dict(os.environ, CLAUDE_CONFIG_DIR=str(cfg), CODEX_HOME=str(codex), HOME=tmp,
                   GEMINI_CLI_HOME=str(gem))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        transcript = str(Path(tmp) / "t.jsonl")
        rows = {
            "bare start (python -c pass)": ([py, "-c", "pass"], b""),
            "hook claude-code, PostToolUse": (
                [py, guard, "hook", "claude-code"],
                json.dumps({"hook_event_name": "PostToolUse", "session_id": "s1", "transcript_path": transcript,
                            "tool_name": "Read", "tool_input": {"file_path": "/tmp/x"},
                            "tool_response": {"content": "x" * 2000}}).encode()),
            "hook claude-code, UserPromptSubmit": (
                [py, guard, "hook", "claude-code"],
                json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1",
                            "transcript_path": transcript, "prompt": "go on"}).encode()),
            "hook codex, UserPromptSubmit": (
                [py, guard, "hook", "codex"],
                json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1", "turn_id": "t1",
                            "transcript_path": transcript, "cwd": tmp, "model": "gpt-5.5",
                            "prompt": "go on"}).encode()),
            "hook gemini, BeforeModel": (
                [py, guard, "hook", "gemini"],
                json.dumps({"session_id": "s1", "transcript_path": str(session), "cwd": tmp,
                            "hook_event_name": "BeforeModel", "timestamp": "2026-12-06T00:00:00.000Z",
                            "llm_request": {"model": "gemini-2.5-flash", "messages": [
                                {"role": "user", "content": "z" * 2_000_000}]}}, separators=(",", ":")).encode(),
                lambda: session.open("a").write(json.dumps({"id": "n", "type": "gemini",
                                                            "content": [{"text": "ok"}]}) + "\n")),
            "the command line imported (what each event cost before)": (
                [py, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); import compaction_guard.cli"], b""),
        }
        rows = {name: (row + (None,))[:3] for name, row in rows.items()}
        for cmd, stdin, _ in rows.values():     # warm the page cache and the bytecode
            run(cmd, stdin, env)
        times = {name: [] for name in rows}
        for _ in range(args.runs):
            for name, (cmd, stdin, before) in rows.items():
                if before is not None:
                    before()            # the agent appended to its session since the last call
                times[name].append(run(cmd, stdin, env))
    bare = statistics.median(times["bare start (python -c pass)"])
    print(f"{sys.version.split()[0]} at {py}; {args.runs} whole-process runs each, interleaved; "
          f"{os.cpu_count()} cores")
    print(f"{'':58} {'median ms':>10} {'p90 ms':>8} {'x bare':>7}")
    worst = 0.0
    figures = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        p90 = sorted(ts)[int(0.9 * (len(ts) - 1))]
        print(f"{name:58} {med * 1000:10.1f} {p90 * 1000:8.1f} {med / bare:7.2f}")
        figures[name] = {"median_ms": round(med * 1000, 1), "p90_ms": round(p90 * 1000, 1),
                         "times_bare": round(med / bare, 2)}
        if name.startswith("hook"):
            worst = max(worst, med / bare)
    print(f"target: the ordinary path at most {TARGET}x a bare start: {'met' if worst <= TARGET else 'MISSED'} "
          f"(x{worst:.2f})")
    if args.record:
        import datetime
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({"command": "python3 benchmarks/bench_hook.py --record",
                                       "measured_on": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
                                       "python": sys.version.split()[0], "runs": args.runs, "target_times_bare": TARGET,
                                       "rows": figures}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 1 if args.check and worst > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
