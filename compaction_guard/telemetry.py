"""A team's view: every verdict sent where the team's telemetry is, without slowing the agent.

Three places, each used when configured:
- OpenTelemetry (the standard OTEL_* variables, otlp.py): one log event per verdict and the
  agent's counters, over OTLP/HTTP;
- a Prometheus Pushgateway (`push_url`): the agent's counters, grouped by job, machine, user
  and agent (exposition.py);
- node_exporter's textfile collector (`textfile_dir`): the same counters in
  `compaction_guard-<user>-<agent>.prom`, written whole or not at all.

The state update that records verdicts (state.StateStore.update) calls `publish`, which writes
the events to the agent's spool (`<guard dir>/telemetry/*.json`, bounded: at most
`telemetry_max_events` waiting) and starts the worker (`python -m compaction_guard.telemetry
<guard dir>`, its own session, no terminal, nothing inherited): the hook, the check or serve
goes on at once. The worker sends what the spool holds in batches of up to
`telemetry_max_batch` events, then the counters (read from the state file: cumulative, so a
lost export loses no count), within `telemetry_deadline_seconds`. One worker at a time per
agent (a lock); it runs until the spool is empty. A collector that is down costs the batch it
was sent (dropped, never retried) and one line in `<guard dir>/hook.log`, once until it answers
again.

Nothing here runs on a hook's ordinary path: it is imported only when there is a verdict.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

from . import otlp
from .spool import SPOOL, _CARRIED, _say_once, log_line, publish, wanted  # noqa: F401 - the producer's side

EVENT_NAME = "compaction_guard.verdict"


def machine(settings) -> str:
    import socket
    return settings.machine_label or socket.gethostname()


def user(settings) -> str:
    if settings.user_label:
        return settings.user_label
    try:
        import getpass
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return str(os.getuid())


# ------------------------------------------------------------------ the worker
def main(argv: list) -> int:
    """`python -m compaction_guard.telemetry GUARD_DIR`: send what the spool holds."""
    if not argv:
        print("usage: python -m compaction_guard.telemetry GUARD_DIR", file=sys.stderr)
        return 2
    try:
        flush(Path(argv[0]))
    except Exception as exc:            # noqa: BLE001 - a worker nobody waits for says it in the log
        log_line(Path(argv[0]), f"the worker stopped ({type(exc).__name__}: {exc})"[:300])
    return 0


def flush(guard_dir: Path, env=None) -> dict:
    """Send the spool's events and the agent's counters, one worker at a time (another one
    running takes what comes). What was sent and dropped."""
    import fcntl
    import signal
    env = os.environ if env is None else env
    spool = guard_dir / SPOOL
    done = {"sent": 0, "dropped": 0}
    try:
        lock = os.open(spool / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return done
    try:
        for _attempt in range(3):
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return done             # one is running: it sends what we spooled
            files = sorted(spool.glob("*.json"))
            while files:
                docs = [d for d in (_read(p) for p in files) if d]
                for p in files:             # taken: whatever happens next, never sent twice
                    p.unlink(missing_ok=True)
                settings = dict(docs[-1]["settings"]) if docs else {}
                if hasattr(signal, "SIGALRM"):
                    signal.alarm(max(1, int(float(settings.get("telemetry_deadline_seconds", 30)))))
                _send_round(guard_dir, docs, settings, env, done)
                files = sorted(spool.glob("*.json"))
            fcntl.flock(lock, fcntl.LOCK_UN)
            if not any(spool.glob("*.json")):   # none came while the lock was let go
                break
    finally:
        os.close(lock)
    return done


def _read(path: Path) -> Optional[dict]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and isinstance(doc.get("events"), list) and isinstance(doc.get("settings"), dict)
    return doc if ok else None


class _Carried:
    """The settings a spool file carries, read as Settings' fields (their defaults otherwise)."""

    def __init__(self, values: dict):
        from .settings import DEFAULT
        for k in _CARRIED:
            setattr(self, k, values.get(k, getattr(DEFAULT, k)))


def _send_round(guard_dir: Path, docs: list, values: dict, env, done: dict) -> None:
    settings = _Carried(values)
    events = [e for d in docs for e in d["events"] if isinstance(e, dict)]
    agent = next((d.get("agent") for d in reversed(docs) if d.get("agent")), None)
    state = _state(guard_dir)
    agent = agent or (state or {}).get("agent") or "unknown"
    deadline = time.monotonic() + float(settings.telemetry_deadline_seconds)
    cfg = otlp.from_env(env, resource_defaults(settings), timeout=float(settings.telemetry_timeout_seconds))
    for problem in cfg.problems:
        _say_once(guard_dir, "config", problem)
    logs = cfg.targets.get("logs")
    if logs and events:
        batch = max(1, int(settings.telemetry_max_batch))
        for i in range(0, len(events), batch):
            part = events[i:i + batch]
            try:
                otlp.post(logs, "ExportLogsServiceRequest",
                          otlp.logs_request(cfg.resource, [log_record(e) for e in part], _version()), deadline)
            except otlp.ExportError as exc:
                lost = len(events) - i
                done["dropped"] += lost
                _say_once(guard_dir, "otlp-logs", f"OTLP logs not sent ({exc}); {lost} verdict event(s) dropped, "
                          "the next verdicts are sent when it answers (said once until then)")
                break
            done["sent"] += len(part)
            _back(guard_dir, "otlp-logs", f"OTLP logs reach {logs.describe()} again")
    if state is None:
        return
    metrics = cfg.targets.get("metrics")
    if metrics:
        try:
            otlp.post(metrics, "ExportMetricsServiceRequest",
                      otlp.metrics_request(cfg.resource, otlp_metrics(state, agent), _version()), deadline)
            _back(guard_dir, "otlp-metrics", f"OTLP metrics reach {metrics.describe()} again")
        except otlp.ExportError as exc:
            _say_once(guard_dir, "otlp-metrics", f"OTLP metrics not sent ({exc}); the next export carries the "
                      "totals (said once until it answers)")
    if settings.push_url:
        try:
            push(settings.push_url, settings.push_job, identity(settings, agent), state,
                 float(settings.telemetry_timeout_seconds), deadline)
            _back(guard_dir, "push", "the Pushgateway answers again")
        except otlp.ExportError as exc:
            _say_once(guard_dir, "push", f"Pushgateway push failed ({exc}); the next push carries the totals "
                      "(said once until it answers)")
    if settings.textfile_dir:
        try:
            write_textfile(Path(settings.textfile_dir), identity(settings, agent), state)
            _back(guard_dir, "textfile", f"{settings.textfile_dir} is written again")
        except OSError as exc:
            _say_once(guard_dir, "textfile", f"{settings.textfile_dir}: the counters could not be written "
                      f"({exc.strerror or exc}); check the directory and its permissions (said once until it works)")


def _state(guard_dir: Path) -> Optional[dict]:
    """The agent's state as its file has it now (read, never moved or written), or None."""
    from .state import _normalize, _parse
    try:
        data = _parse((guard_dir / "state.yaml").read_bytes())
        return _normalize(data)[0] if isinstance(data, dict) else None
    except Exception:                   # noqa: BLE001 - no state, no counters to send
        return None


def _back(guard_dir: Path, what: str, line: str) -> None:
    mark = guard_dir / SPOOL / f"down-{what}"
    if mark.exists():
        mark.unlink(missing_ok=True)
        log_line(guard_dir, line)


def _version() -> str:
    from . import __version__
    return __version__


# ------------------------------------------------------------------ what is sent
def identity(settings, agent: str) -> dict:
    return {"machine": machine(settings), "user": user(settings), "agent": agent}


def resource_defaults(settings) -> dict:
    """The resource attributes OTEL_RESOURCE_ATTRIBUTES may override."""
    return {"service.version": _version(), "host.name": machine(settings), "user.name": user(settings)}


def log_record(e: dict) -> dict:
    """One verdict as an OTLP log record: the guard's attributes and the GenAI conventions'
    (gen_ai.conversation.id, gen_ai.conversation.compacted) and `session.id`, which Claude Code's
    and Gemini CLI's own compaction events carry: a dashboard joins them on the session."""
    failures = [str(k) for k in e.get("failures") or []]
    valid = bool(e.get("valid"))
    via = str(e.get("via") or "check")
    if via in ("serve", "chain"):
        text = f"compaction answered at L{e.get('level')}" + (f" (failed before: {', '.join(failures)})"
                                                              if failures else "")
    else:
        text = "compaction summary valid" if valid else f"compaction summary failed its check: {', '.join(failures)}"
    session = e.get("session")
    return {"time_ns": int(e.get("at_ns") or time.time_ns()), "observed_ns": time.time_ns(),
            "severity": "INFO" if valid else "WARN", "body": text, "event_name": EVENT_NAME,
            "attributes": {
                "event.name": EVENT_NAME,
                "gen_ai.conversation.id": session, "gen_ai.conversation.compacted": True,
                "gen_ai.agent.name": e.get("agent"), "session.id": session,
                "compaction_guard.agent": e.get("agent"), "compaction_guard.via": via,
                "compaction_guard.source": e.get("source"), "compaction_guard.result": "valid" if valid else "failed",
                "compaction_guard.failure_kinds": failures,
                "compaction_guard.warning_kinds": [str(k) for k in e.get("warnings") or []],
                "compaction_guard.level": e.get("level"), "compaction_guard.fallback": bool(e.get("fallback")),
                "compaction_guard.tokens_before": e.get("tokens_before"),
                "compaction_guard.tokens_after": e.get("tokens_after"),
                "compaction_guard.session_id": session, "compaction_guard.summary_id": e.get("summary_id"),
                "compaction_guard.trigger": e.get("trigger"),
                **({"compaction_guard.breaker_open": bool(e["breaker_open"])} if "breaker_open" in e else {}),
            }}


def otlp_metrics(state: dict, agent: str, now_ns: Optional[int] = None) -> list:
    """The agent's counters (cumulative, from its state) as OTLP metrics."""
    from .exposition import by_store_kind, doc_of_state, epoch
    now_ns = now_ns or time.time_ns()
    start = int(epoch(state.get("created_at")) * 1e9) or now_ns
    start = min(start, now_ns)
    doc = doc_of_state(state)
    stored, totals = doc["stored_summaries"], doc["totals"]
    a = {"compaction_guard.agent": agent}

    def counter(name, description, unit, points):
        return {"name": name, "description": description, "unit": unit, "kind": "counter", "start_ns": start,
                "time_ns": now_ns, "points": points}
    return [
        counter("compaction_guard.summaries", "Stored summaries, each counted once, by who wrote them.", "{summary}",
                [({**a, "compaction_guard.written_by": k[3:]}, int(stored.get(k, 0)))
                 for k in ("by_model", "by_fallback")]),
        counter("compaction_guard.summaries.failed", "Stored summaries that failed their check (any kind).",
                "{summary}", [(a, int(totals.get("failed_summaries", 0)))]),
        counter("compaction_guard.failures", "Failing summaries by failure kind and store.", "{summary}",
                [({**a, "compaction_guard.source": src, "compaction_guard.kind": kind}, int(n))
                 for src, kinds in sorted(by_store_kind(totals["failures"]).items()) for kind, n in sorted(kinds.items())]),
        counter("compaction_guard.compactions", "Runs of the guard's chain, by the level that answered.",
                "{compaction}", [({**a, "compaction_guard.level": k}, int(n)) for k, n in doc["level_usage"].items()]),
        {"name": "compaction_guard.circuit.open", "description": "1 while the circuit breaker skips the LLM levels.",
         "unit": "1", "kind": "gauge", "start_ns": start, "time_ns": now_ns,
         "points": [(a, 1 if doc["circuit_breaker"]["open_until"] else 0)]},
    ]


def _group_path(job: str, labels: dict) -> str:
    """The Pushgateway's grouping key as a URL path (a value with a `/`, or empty, base64url)."""
    import base64
    from urllib.parse import quote
    parts = []
    for k, v in [("job", job), *labels.items()]:
        v = str(v)
        if "/" in v or not v:
            parts.append(f"{k}@base64/{base64.urlsafe_b64encode(v.encode()).decode() or '='}")
        else:
            parts.append(f"{k}/{quote(v, safe='')}")
    return "/metrics/" + "/".join(parts)


def push(url: str, job: str, labels: dict, state: dict, timeout: float, deadline: Optional[float] = None) -> None:
    """PUT the agent's counters to the Pushgateway at `url`, in the group (job, machine, user,
    agent): the group's previous values replaced. Raises otlp.ExportError."""
    from .exposition import of_state
    from .redact import safe_url
    text = of_state(state, {})
    target = url.rstrip("/") + _group_path(job, labels)
    otlp.request("PUT", target, text.encode("utf-8"), {"Content-Type": "text/plain; version=0.0.4"}, timeout,
                 deadline, shown=f"{safe_url(url)} (job {job})")


def textfile_name(labels: dict) -> str:
    import re
    safe = lambda v: re.sub(r"[^A-Za-z0-9_.-]", "_", str(v))[:80] or "_"  # noqa: E731
    return f"compaction_guard-{safe(labels['user'])}-{safe(labels['agent'])}.prom"


def write_textfile(directory: Path, labels: dict, state: dict) -> Path:
    """The agent's counters, with `labels`, in `directory` for node_exporter's textfile
    collector: written to a hidden temporary file there and renamed, so the collector never
    reads half a file. Raises OSError."""
    from .exposition import of_state
    import tempfile
    target = directory / textfile_name(labels)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(of_state(state, labels))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def push_now(pairs: list, settings_of, url: Optional[str] = None, directory: Optional[str] = None) -> list:
    """`--check --push URL` / `--textfile DIR`: each agent's counters of `pairs` ((agent, layout)
    whose state exists) pushed and written now. The problems, one line each."""
    from .state import state_path
    problems = []
    for agent, layout in pairs:
        path = state_path(layout)
        state = _state(path.parent) if path.exists() else None
        if state is None:
            continue
        settings = settings_of(layout)
        labels = identity(settings, state.get("agent") or agent.name)
        if url:
            try:
                push(url, settings.push_job, labels, state, settings.telemetry_timeout_seconds)
            except otlp.ExportError as exc:
                problems.append(f"--push: {agent.title}'s counters not pushed ({exc}); is the Pushgateway up?")
        if directory:
            try:
                write_textfile(Path(directory), labels, state)
            except OSError as exc:
                problems.append(f"--textfile {directory}: cannot write {agent.title}'s counters there "
                                f"({exc.strerror or exc}); give an existing directory you can write")
    return problems


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
