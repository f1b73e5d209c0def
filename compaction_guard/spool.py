"""The producer's side of a team's telemetry (telemetry.py is the worker's): the events of the
verdicts a state update recorded, written to the agent's spool (`<guard dir>/telemetry/*.json`,
at most `telemetry_max_events` waiting), and the worker started in a process of its own
(`compaction_guard.telemetry`), so that the hook, the check or serve goes on at once. Below the
state, which calls `publish` once it has written the verdicts; standard library and otlp.py only.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

from . import otlp

SPOOL = "telemetry"


def wanted(settings, env=None) -> bool:
    """Whether any team telemetry is configured (the cheap look before any work)."""
    env = os.environ if env is None else env
    return bool(settings.push_url or settings.textfile_dir) or otlp.configured(env)


_CARRIED = ("push_url", "push_job", "textfile_dir", "machine_label", "user_label", "telemetry_max_batch",
            "telemetry_max_events", "telemetry_timeout_seconds", "telemetry_deadline_seconds")


def log_line(guard_dir: Path, line: str) -> None:
    """One line in `<guard dir>/hook.log`, where the operator looks (never raised)."""
    try:
        with open(Path(guard_dir) / "hook.log", "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} telemetry: {line}\n")
    except OSError:
        pass


def _say_once(guard_dir: Path, what: str, line: str) -> None:
    """`line` in the log, unless it was said since `what` last worked (a mark file)."""
    mark = guard_dir / SPOOL / f"down-{what}"
    try:
        fd = os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    except FileExistsError:
        return
    except OSError:
        pass
    log_line(guard_dir, line)


def publish(guard_dir, agent: Optional[str], events: list, settings, env=None) -> None:
    """Hand `events` (verdicts.event dicts) to the telemetry worker of `guard_dir` and return at
    once: written to its spool, the worker started. Nothing when no telemetry is configured.
    Never raises (a verdict is recorded whether or not it can be sent)."""
    if not events or not wanted(settings, env):
        return
    try:
        spool = Path(guard_dir) / SPOOL
        spool.mkdir(parents=True, exist_ok=True, mode=0o700)
        waiting = sum(_count_of(p) for p in spool.glob("*.json"))
        room = settings.telemetry_max_events - waiting
        if room < len(events):
            _say_once(Path(guard_dir), "full", f"{len(events) - max(room, 0)} verdict event(s) dropped: "
                      f"{waiting} already wait to be sent (telemetry_max_events = {settings.telemetry_max_events}); "
                      "is the worker able to run?")
            events = events[:max(room, 0)]
        if events:
            for e in events:
                e["agent"] = e.get("agent") or agent
            doc = {"agent": agent, "settings": {k: getattr(settings, k) for k in _CARRIED}, "events": events}
            name = f"{time.time_ns()}-{os.getpid()}-{len(events)}"
            tmp = spool / f".{name}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, separators=(",", ":"))
            os.replace(tmp, spool / f"{name}.json")
        if not _worker_running(spool):
            _start_worker(Path(guard_dir), env)
    except Exception as exc:            # noqa: BLE001 - telemetry never breaks what recorded the verdict
        log_line(Path(guard_dir), f"could not hand verdicts to the worker ({type(exc).__name__}: {exc})"[:300])


def _count_of(path: Path) -> int:
    try:
        return int(path.stem.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return 1


def _worker_running(spool: Path) -> bool:
    """Whether a worker holds the spool's lock: it sends what was just written (it looks again
    after letting the lock go), so no other is started."""
    import fcntl
    try:
        fd = os.open(spool / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _start_worker(guard_dir: Path, env=None) -> None:
    """The worker, in its own session with no terminal and nothing inherited: the caller (a hook
    an agent waits for) neither waits for it nor shares its pipes."""
    import subprocess
    root = str(Path(__file__).resolve().parents[1])
    boot = ("import sys; sys.path.insert(0, sys.argv[1]); from compaction_guard.telemetry import main; "
            "sys.exit(main(sys.argv[2:]))")
    subprocess.Popen([sys.executable, "-c", boot, root, str(guard_dir)], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                     env=dict(os.environ if env is None else env))
