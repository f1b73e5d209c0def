"""The guard's counters in the Prometheus text exposition format: one place for the metric
names, their help and labels, whoever exposes them (`--report --format prometheus`, the
Pushgateway push and node_exporter's textfile, and `serve`'s `/metrics` when it moves here).

Built from a report document (`operations.report`) or straight from a state file's dict
(`doc_of_state`, which needs nothing of the detectors: the telemetry worker a hook starts uses
it). Each sample carries the labels its caller gives (an `agent`, and for a team's view the
`machine` and `user`).
"""
from __future__ import annotations

from datetime import datetime, timezone

LEVELS = ("l1_normal", "l2_aggressive", "l3_deterministic")


def _label(value) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def by_store_kind(failures: dict) -> dict:
    """Failure counts per source with every `file:<name>` folded into `file`: one label value
    per store kind, so a metric's label set stays bounded whatever was checked."""
    out = {}
    for src, kinds in failures.items():
        into = out.setdefault("file" if str(src).startswith("file:") else src, {})
        for kind, n in kinds.items():
            into[kind] = into.get(kind, 0) + n
    return out


def epoch(iso) -> float:
    if not iso:
        return 0
    try:
        when = datetime.fromisoformat(str(iso))
    except ValueError:
        return 0
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _open_until(until, now: datetime):
    """`until` (an ISO time) while it is still ahead, else None."""
    try:
        when = datetime.fromisoformat(str(until)) if until else None
    except ValueError:
        return None
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return until if when is not None and now < when else None


def doc_of_state(state: dict, now=None) -> dict:
    """What the exposition reads of a state (state.py's shape), as operations.report gives it."""
    now = now or datetime.now(timezone.utc)
    circuit = state.get("circuit") if isinstance(state.get("circuit"), dict) else {}
    return {"level_usage": state["level_usage"], "stored_summaries": state["stored_summaries"],
            "totals": state["totals"], "last_check_at": state.get("last_check_at"),
            "last_check": state["check_history"][0] if state.get("check_history") else None,
            "circuit_breaker": {"open_until": _open_until(circuit.get("open_until"), now)},
            "sessions_affected": _affected(state)}


def _affected(state: dict) -> int:
    """How many sessions' latest compaction failed (state.affected_sessions, counted)."""
    from .state import affected_sessions
    return len(affected_sessions(state)) if isinstance(state.get("sessions"), dict) else 0


def samples(doc: dict, labels: dict, families: dict) -> None:
    """Add the samples of one agent's report document `doc`, each with `labels`, to
    `families` ({name: [type, help, [(labels, value)]]}, each family written once)."""
    def metric(name, kind, help_, points):
        families.setdefault(name, [kind, help_, []])[2].extend(({**labels, **lab}, v) for lab, v in points)

    totals = doc["totals"]
    usage = doc["level_usage"]
    stored = doc["stored_summaries"]
    metric("compaction_guard_compactions_total", "counter", "Runs of the guard's chain (and compactions it served), "
           "by the level that produced the summary.", [({"level": k}, usage.get(k, 0)) for k in LEVELS])
    metric("compaction_guard_stored_summaries_total", "counter", "Summaries found in the stores, each counted once, "
           "by who wrote them.", [({"written_by": k[3:]}, stored.get(k, 0)) for k in ("by_model", "by_fallback")])
    metric("compaction_guard_failed_summaries_total", "counter", "Stored summaries that failed their check (any "
           "kind), each counted once: over compaction_guard_stored_summaries_total, the failure rate.",
           [({}, totals.get("failed_summaries", 0))])
    metric("compaction_guard_failures_total", "counter", "Failing summaries, by failure kind and store.",
           [({"source": src, "kind": kind}, n) for src, kinds in sorted(by_store_kind(totals["failures"]).items())
            for kind, n in sorted(kinds.items())])
    metric("compaction_guard_summaries_checked_total", "counter", "Summaries checked, all checks.",
           [({}, totals["summaries_checked"])])
    metric("compaction_guard_checks_total", "counter", "Checks run.", [({}, totals["checks"])])
    metric("compaction_guard_chain_runs_total", "counter", "Runs of the 3-level chain.", [({}, totals["chain_runs"])])
    last = doc.get("last_check") or {}
    metric("compaction_guard_last_check_timestamp_seconds", "gauge", "When the last check ran (Unix time).",
           [({}, epoch(doc.get("last_check_at")))])
    metric("compaction_guard_last_check_summaries", "gauge", "Summaries the last check looked at.",
           [({}, last.get("summaries_checked", 0))])
    metric("compaction_guard_last_check_failures", "gauge", "Failing summaries found by the last check.",
           [({}, last.get("failures_found", 0))])
    status = last.get("status") or "NEVER_CHECKED"
    affected = doc.get("sessions_affected", 0)
    metric("compaction_guard_healthy", "gauge", "1 when the last check saw a store and no session's latest compaction "
           "failed (0 also when it found no store, could not read one, or never ran).",
           [({}, 1 if status == "HEALTHY" and not affected else 0)])
    metric("compaction_guard_sessions_affected", "gauge", "Sessions whose latest compaction failed and nothing newer "
           "passed (the status is DEGRADED while it is above 0).", [({}, affected)])
    metric("compaction_guard_last_check_status", "gauge", "1 for the last check's status (HEALTHY, DEGRADED, "
           "NO_STORE, ERROR, NEVER_CHECKED).", [({"status": status}, 1)])
    runs = sum(usage.get(k, 0) for k in LEVELS)
    metric("compaction_guard_l3_share", "gauge", "Share of the guard's chain runs that ended at L3.",
           [({}, round(usage.get("l3_deterministic", 0) / runs, 4) if runs else 0.0)])
    written = stored.get("by_model", 0) + stored.get("by_fallback", 0)
    metric("compaction_guard_fallback_share", "gauge", "Share of the stored summaries a deterministic fallback wrote.",
           [({}, round(stored.get("by_fallback", 0) / written, 4) if written else 0.0)])
    until = (doc.get("circuit_breaker") or {}).get("open_until")
    metric("compaction_guard_circuit_open", "gauge", "1 while the circuit breaker skips the LLM levels.",
           [({}, 1 if until else 0)])
    metric("compaction_guard_circuit_open_until_timestamp_seconds", "gauge", "Until when the circuit breaker skips "
           "the LLM levels (Unix time; 0 when closed): above time() it is open, also in a pushed or written copy "
           "that is no longer refreshed.", [({}, epoch(until))])


def text(families: dict) -> str:
    """The families as the Prometheus text format (version 0.0.4)."""
    out = []
    for name, (kind, help_, points) in families.items():
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in points:
            lab = "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "}" if labels else ""
            out.append(f"{name}{lab} {value}")
    return "\n".join(out) + "\n"


def of_state(state: dict, labels: dict) -> str:
    """One agent's state as exposition text, every sample with `labels`."""
    families = {}
    samples(doc_of_state(state), labels, families)
    return text(families)
