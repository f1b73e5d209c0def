"""The guard's own state: what it checked, what failed, which chain levels ran.

`<OpenClaw state directory>/skill-state/compaction-resilience-guard/state.yaml` with the seed's
fields (last_check_at, level_usage, failures, check_history) plus chain_history,
circuit (the breaker), watermarks (how far each store has been read), stored_summaries
and counted_batch (which summaries were counted lives in ledger.py's counted.sqlite).
level_usage counts the guard's chain runs by level; stored_summaries counts the
summaries found in the stores, each once, by who wrote them.
Written as JSON (which is YAML: the seed's readers still parse it). Every update is a
read-modify-write under an exclusive flock on a sibling lock
file, written to a temp file, fsynced and renamed over the old one: concurrent
runs lose no update and a reader never sees half a file. A state file that does
not parse is moved aside (state.yaml.corrupt-<time>) with a warning, never
overwritten. Failure records hold ids and figures, never summary text.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import yaml

from . import own_answers
from .errors import GuardError


LEVEL_KEYS = ("l1_normal", "l2_aggressive", "l3_deterministic")


def state_path(where) -> Path:
    """The state file of a layout (layout.Layout), or of an OpenClaw state directory."""
    guard_dir = getattr(where, "guard_dir", None)
    return (guard_dir if guard_dir is not None else Path(where) / "skill-state" / "compaction-resilience-guard") \
        / "state.yaml"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# Stored summaries by who wrote them: the store's model, or a deterministic fallback
# (a truncation marker, lossless-claw's model='emergency-fallback').
STORED_KEYS = ("by_model", "by_fallback")


def empty_state() -> dict:
    return {"last_check_at": None, "level_usage": {k: 0 for k in LEVEL_KEYS}, "failures": [],
            "check_history": [], "chain_history": [], "circuit": {}, "watermarks": {}, "daily": {},
            "totals": {"summaries_checked": 0, "checks": 0, "chain_runs": 0, "served": 0, "abandoned": 0,
                       "failed_summaries": 0, "failures": {}, "via": {}},
            "stored_summaries": {k: 0 for k in STORED_KEYS}, "counted_batch": 0, "sessions": {}, "own_answers": [],
            # which agent's state this is, and since when it counts (the start of its counters
            # for a team's telemetry: telemetry.py)
            "agent": None, "created_at": None}


def _int(v) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _str_or_none(v) -> bool:
    return v is None or isinstance(v, str)


def _counts(v) -> Optional[dict]:
    """{name: count} with every count a non-negative int, or None."""
    if not isinstance(v, dict) or not all(isinstance(k, str) and _int(n) is not None for k, n in v.items()):
        return None
    return v


def _int_or_none(v) -> bool:
    return v is None or _int(v) is not None


def _failure_entry(e) -> bool:
    """A failure as the guard records it: its kind, source and time strings, its id a string
    (or none), its level and token counts whole numbers (or none)."""
    return isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("failure_type", "source", "detected_at")) \
        and _str_or_none(e.get("summary_id")) \
        and all(_int_or_none(e.get(k)) for k in ("level_used", "input_tokens", "output_tokens"))


def _valid_day(v) -> bool:
    return isinstance(v, dict) and all(
        (_counts(n) is not None) if k == "failures" else (_int(n) is not None) for k, n in v.items())


# What each list or map holds; an element of the wrong shape is set aside.
_ENTRY_CHECKS = {
    "failures": lambda e: _failure_entry(e),
    "check_history": lambda e: isinstance(e, dict) and isinstance(e.get("checked_at"), str),
    "chain_history": lambda e: isinstance(e, dict) and isinstance(e.get("at"), str),
    "own_answers": own_answers.valid,
}


def _normalize(data: dict) -> tuple:
    """(state, problems): every field checked for its type, element by element; what
    is wrong is left out and named in `problems` (the state stays usable)."""
    problems = []
    state = empty_state()
    state.update({k: v for k, v in data.items() if k in state or k.startswith("x_")})
    for k in ("last_check_at", "agent", "created_at"):
        if not _str_or_none(state.get(k)):
            problems.append(k)
            state[k] = None
    for k in ("circuit", "watermarks", "daily", "sessions"):
        if not isinstance(state.get(k), dict):
            problems.append(k)
            state[k] = {}
    bad_days = [d for d, v in state["daily"].items() if not isinstance(d, str) or not _valid_day(v)]
    for d in bad_days:
        del state["daily"][d]
    problems += [f"daily.{d}" for d in bad_days]
    bad_sessions = [k for k, v in state["sessions"].items() if not isinstance(v, dict)
                    or not isinstance(v.get("failures", []), list)]
    for k in bad_sessions:
        del state["sessions"][k]
    problems += [f"sessions.{k}" for k in bad_sessions]
    bad_marks = [m for m, v in state["watermarks"].items()
                 if not isinstance(m, str) or not (v is None or isinstance(v, (dict, int, str)))]
    for m in bad_marks:
        del state["watermarks"][m]
    problems += [f"watermarks.{m}" for m in bad_marks]
    c = state["circuit"]
    if "events" in c and not (isinstance(c["events"], list) and all(isinstance(e, dict) for e in c["events"])):
        problems.append("circuit.events")
        c["events"] = [e for e in c["events"] if isinstance(e, dict)] if isinstance(c["events"], list) else []
    if "consecutive_l3" in c and _int(c["consecutive_l3"]) is None:
        problems.append("circuit.consecutive_l3")
        c["consecutive_l3"] = 0
    if "open_until" in c and not _str_or_none(c["open_until"]):
        problems.append("circuit.open_until")
        c["open_until"] = None
    totals = state.get("totals") if isinstance(state.get("totals"), dict) else {}
    if not isinstance(state.get("totals"), dict):
        problems.append("totals")
    clean = {}
    for k in ("summaries_checked", "checks", "chain_runs", "served", "abandoned", "failed_summaries"):
        clean[k] = _int(totals.get(k, 0))
        if clean[k] is None:
            problems.append(f"totals.{k}")
            clean[k] = 0
    by_source = totals.get("failures", {})
    if not isinstance(by_source, dict):
        problems.append("totals.failures")
        by_source = {}
    clean["failures"] = {src: n for src, n in by_source.items() if isinstance(src, str) and _counts(n) is not None}
    via = _counts(totals.get("via", {}))          # chain runs by who asked: chain, serve, a framework
    if via is None:
        problems.append("totals.via")
    clean["via"] = dict(via or {})
    problems += [f"totals.failures.{src}" for src in by_source if src not in clean["failures"]]
    state["totals"] = clean
    for field, keys in (("level_usage", LEVEL_KEYS), ("stored_summaries", STORED_KEYS)):
        usage = state.get(field)
        if not isinstance(usage, dict):
            problems.append(field)
            usage = {}
        state[field] = {}
        for k in keys:
            n = _int(usage.get(k, 0))
            if n is None:
                problems.append(f"{field}.{k}")
            state[field][k] = n or 0
    if _int(state.get("counted_batch")) is None:
        problems.append("counted_batch")
        state["counted_batch"] = 0
    for k, ok in _ENTRY_CHECKS.items():
        v = state.get(k)
        if not isinstance(v, list):
            problems.append(k)
            state[k] = []
            continue
        kept = [e for e in v if ok(e)]
        if len(kept) != len(v):
            problems.append(f"{k} ({len(v) - len(kept)} entries)")
            state[k] = kept
    return state, problems


def fold_sources(by_source: dict, limit: int) -> dict:
    """Failure counts per source, at most `limit` sources: checked files (`file:<name>`,
    one per file ever checked with --file) fold into one `file` source first, then the
    smallest sources into `other`. Counts are summed, never dropped."""
    if len(by_source) <= limit:
        return by_source

    def add(into: dict, counts: dict) -> None:
        for kind, n in counts.items():
            into[kind] = into.get(kind, 0) + n

    out = {}
    for src, counts in by_source.items():
        add(out.setdefault("file" if src.startswith("file:") else src, {}), counts)
    if len(out) > limit:
        ranked = sorted(out, key=lambda k: -sum(out[k].values()))
        other = out.pop("other", {})
        for src in ranked[limit - 1:]:
            if src != "other":
                add(other, out.pop(src))
        out["other"] = other
    return out


class StateStore:
    """Reads and atomically updates one state file. An update that records verdicts (the
    `_verdicts` its recorders add: verdicts.py) hands them to telemetry.publish once the state
    is written, with the state's `agent` (`agent` names it for a state that does not yet)."""

    def __init__(self, path: Path, settings, warn=None, agent: Optional[str] = None):
        self.path = Path(path)
        self.settings = settings
        self.warn = warn or (lambda msg: print(msg, file=sys.stderr))
        self.agent = agent
        self.after_write = []       # done once an update's state is written (the ledger's phase 3)

    # ------------------------------------------------------------------ reading
    def read(self) -> dict:
        """The current state (an empty one if there is none). Moves a corrupt file aside."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return empty_state()
        except IsADirectoryError:
            raise GuardError(f"{self.path}: is a directory, expected the guard's state file; move it away") from None
        except PermissionError:
            raise GuardError(f"{self.path}: permission denied; run as the user who owns the OpenClaw home") from None
        try:
            data = _parse(raw)
            if not isinstance(data, dict):
                raise ValueError("not a mapping")
            state, problems = _normalize(data)
            if problems:
                self._set_aside(raw, problems)
            return state
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError, UnicodeDecodeError, yaml.YAMLError):
            aside = self.path.with_name(f"{self.path.name}.corrupt-{datetime.now().strftime('%Y%m%dT%H%M%S%f')}")
            try:
                os.replace(self.path, aside)
            except OSError as exc:
                raise GuardError(f"{self.path}: corrupt and cannot be moved aside ({exc.strerror}); move it by hand") from None
            self.warn(f"warning: {self.path} was corrupt; moved it to {aside.name} and started a new state")
            return empty_state()

    def _set_aside(self, raw: bytes, problems: list) -> None:
        """Keep a copy of a state whose fields were wrong (once per content) and say so once;
        the state read on is the rest of it, and the next update writes it back whole."""
        import hashlib
        digest = hashlib.sha256(raw).hexdigest()[:12]
        copy = self.path.with_name(f"{self.path.name}.invalid-{digest}")
        if copy.exists():
            return
        try:
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
        except OSError:
            return                      # a read-only place: read on, say nothing more
        shown = ", ".join(problems[:6]) + (f" and {len(problems) - 6} more" if len(problems) > 6 else "")
        self.warn(f"warning: {self.path} had fields of the wrong type ({shown}); left them out and kept the "
                  f"file as {copy.name}")

    # ------------------------------------------------------------------ writing
    def _lock(self, name: str):
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise GuardError(f"{directory}: cannot create the state directory ({exc.strerror}); "
                             "check OPENCLAW_HOME and its permissions") from None
        lock_path = self.path.with_name(f"{self.path.name}.{name}")
        try:
            return os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise GuardError(f"{lock_path}: cannot open the lock file ({exc.strerror}); "
                             "check the state directory's permissions") from None

    @contextlib.contextmanager
    def exclusive(self, name: str):
        """Hold a named exclusive lock (e.g. one check at a time) for the block."""
        fd = self._lock(name + "-lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def update(self):
        """`with store.update() as state:` modify `state`; it is written atomically on exit."""
        lock_fd = self._lock("lock")
        self.after_write = []
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            state = self.read()
            yield state
            verdicts = state.pop("_verdicts", None)
            if self.agent and not state.get("agent"):
                state["agent"] = self.agent
            state["created_at"] = state.get("created_at") or now_iso()
            self._trim(state)
            self._sweep()
            self._write(state)
        finally:
            os.close(lock_fd)
        done, self.after_write = self.after_write, []
        for step in done:
            step()
        if verdicts:
            from . import telemetry
            telemetry.publish(self.path.parent, state.get("agent") or self.agent, verdicts, self.settings)

    def _sweep(self) -> None:
        """Remove the temporary files of writes that never finished (a writer killed between
        writing its copy and renaming it): every write holds the lock, so under the lock
        any `.state-*.tmp` left is one of those."""
        for tmp in self.path.parent.glob(".state-*.tmp"):
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _trim(self, state: dict) -> None:
        s = self.settings
        for day in sorted(state["daily"])[:-s.max_daily_days]:
            del state["daily"][day]
        state["failures"] = state["failures"][-s.max_failures_kept:]
        state["check_history"] = state["check_history"][:s.max_check_history]
        state["chain_history"] = state["chain_history"][:s.max_chain_history]
        state["own_answers"] = state["own_answers"][-s.max_own_answers_kept:] if s.max_own_answers_kept > 0 else []
        state["totals"]["failures"] = fold_sources(state["totals"]["failures"], s.max_sources_kept)

    def _write(self, state: dict) -> None:
        # JSON, which is YAML (the seed's readers parse it as they did): one state update
        # costs ~2 ms instead of ~45 ms of YAML dumping and loading at the state's bounded
        # size (benchmarks/bench_state.py); ASCII only, so any YAML parser reads it alike
        text = json.dumps(state, ensure_ascii=True, indent=1, default=str) + "\n"
        directory = self.path.parent
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o700)     # the guard's own directory: owner only, even if it pre-existed
        fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise GuardError(f"{self.path}: cannot write the state ({exc.strerror}); free disk space or fix the "
                             "directory's permissions (the previous state is intact)") from None
        with contextlib.suppress(OSError):
            dfd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)


def _parse(raw: bytes):
    """The state as written (JSON), or as a person or an older guard wrote it (YAML,
    read with the same limits as a user's file)."""
    if not raw.strip():
        return {}
    if raw.lstrip().startswith(b"{"):
        try:
            return json.loads(raw)
        except ValueError:
            pass                  # YAML flow style, or damaged: the YAML reader says which
    from .stores.records_file import safe_yaml
    return safe_yaml(raw.decode("utf-8"))


# ---------------------------------------------------------------------- recording
def record_check(state: dict, report, settings, counts: Optional[dict] = None) -> int:
    """Add a check's outcome to `state`. Returns how many failures were recorded.

    `counts` (verdicts.FailureLog.counts) is what the summaries new to the ledger add:
    each stored summary counts once, ever (ledger.py), in stored_summaries by who wrote
    it and, if it failed, in the failure totals. level_usage is not touched: it counts
    the guard's own chain runs by level (record_chain)."""
    now = report.checked_at
    day = _day(state, now)
    day["checked"] = day.get("checked", 0) + report.checked
    state["totals"]["summaries_checked"] += report.checked
    state["totals"]["checks"] += 1
    if counts:
        apply_counts(state, counts)
    state["last_check_at"] = now
    new_failures = len(counts["entries"]) if counts else 0
    state["check_history"].insert(0, {
        "checked_at": now, "summaries_checked": report.checked, "failures_found": report.failures_found,
        "escalations": report.escalations, "status": report.status, "failures_by_kind": dict(report.by_kind),
        "written_by_fallback": report.fallback, "sources": sorted({s.get("name") for s in report.sources}),
        "errors": len(report.errors), "new_failures": new_failures,
        "unscoped_failures": getattr(report, "unscoped", 0),
        "newly_counted": sum(counts["stored"].values()) if counts else 0,
        **({"nothing_found": report.nothing_found} if getattr(report, "nothing_found", None) else {}),
        **({"layout": report.layout} if getattr(report, "layout", None) else {}),
    })
    return new_failures


def apply_counts(state: dict, counts: dict) -> None:
    """Add what newly counted summaries bring: {"day", "stored": {by_model, by_fallback},
    "failures": [[source, kind, n], ...], "entries": [failure records]}. Applied once per
    ledger batch (phase 2 of ledger.py), or again by settle after a crash."""
    day = _day(state, counts["day"])
    for k, n in counts["stored"].items():
        state["stored_summaries"][k] = state["stored_summaries"].get(k, 0) + n
        day[f"stored_{k}"] = day.get(f"stored_{k}", 0) + n
    state["totals"]["failed_summaries"] = state["totals"].get("failed_summaries", 0) + counts.get("failed", 0)
    for source, kind, n in counts["failures"]:
        _count_failure(state, day, source, kind, n)
    state["failures"].extend(counts["entries"])


def _day(state: dict, iso: str) -> dict:
    """Today's counters (UTC date of `iso`)."""
    return state["daily"].setdefault(iso[:10], {})


def _count_failure(state: dict, day: dict, source: str, kind: str, n: int = 1) -> None:
    by_source = state["totals"]["failures"].setdefault(source, {})
    by_source[kind] = by_source.get(kind, 0) + n
    fails = day.setdefault("failures", {})
    fails[kind] = fails.get(kind, 0) + n


def record_chain(state: dict, result, via: str = "chain") -> None:
    """Count one compaction the guard answered in level_usage and keep its figures: `via`
    "chain" (--compact, --simulate), "serve" (a request the proxy answered; `served` counts
    them apart) or a framework's name (compaction_guard.api with `record=`); the runs are
    counted by `via` too, and their failures are that source's."""
    state["level_usage"][result.level_key] += 1
    if result.level_used == 3:      # the guard's own L3: known again when the agent stores it
        own_answers.remember(state, result.summary, now_iso())
    day = _day(state, now_iso())
    day[result.level_key] = day.get(result.level_key, 0) + 1
    state["totals"]["chain_runs"] += 1
    by_via = state["totals"].setdefault("via", {})
    by_via[via] = by_via.get(via, 0) + 1
    if via == "serve":
        state["totals"]["served"] = state["totals"].get("served", 0) + 1
    state["chain_history"].insert(0, {
        "at": now_iso(), "via": via, "level_used": result.level_used, "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens, "provider": result.provider, "model": result.model,
        "breaker_open": result.breaker_open,
        "attempts": [{"level": a.level, "valid": a.valid, "failures": a.failures, "retries": a.retries,
                      "skipped": a.skipped, **({"adjustment": a.request["adjustment"]}
                                               if getattr(a, "request", None) and a.request.get("adjustment") else {})}
                     for a in result.attempts],
    })
    from .verdicts import chain_event
    state.setdefault("_verdicts", []).append(chain_event(result, via))
    for a in result.attempts:
        for kind in a.failures:
            _count_failure(state, day, via, kind)
            state["failures"].append({
                "summary_id": f"{via}@{state['chain_history'][0]['at']}", "failure_type": kind, "level_used": a.level,
                "input_tokens": result.input_tokens, "output_tokens": a.output_tokens,
                "detected_at": state["chain_history"][0]["at"], "source": via,
            })


def keep_verdict(state: dict, key: str, entry: dict) -> None:
    """A session's latest compaction verdict (`key`: the agent's scope of it, "opencode:<id>"),
    replacing the one before; while its compactions keep failing, `failing_since` stays the
    time of the first failure of the run."""
    before = state["sessions"].get(key)
    failing = isinstance(before, dict) and bool(before.get("failures"))
    if entry.get("failures"):
        since = (before.get("failing_since") or before.get("at")) if failing else None
        entry["failing_since"] = since if isinstance(since, str) else entry.get("at")
        if failing:     # a warning its hook owes the model is still owed (a check's verdict knows none)
            for k in ("pending", "warned_at", "transcript"):
                if k in before and k not in entry:
                    entry[k] = before[k]
    state["sessions"][key] = entry


def affected_sessions(state: dict, agent: Optional[str] = None) -> list:
    """The sessions whose latest compaction failed and nothing newer passed, oldest failing
    first: [{session, failures, at, since, dropped, warned, agent}]. A key without the agent's
    prefix is an older guard's (a check's, before verdicts were kept by the agent's scope): the
    next check replaces it, and it is not counted."""
    out = []
    for k, v in state["sessions"].items():
        if ":" not in k or not isinstance(v, dict) or not v.get("failures"):
            continue
        out.append({"session": k, "failures": [str(f) for f in v["failures"]], "at": v.get("at"),
                    "since": v.get("failing_since") or v.get("at"), "dropped": bool(v.get("dropped")),
                    "warned": not v.get("pending", False), **({"agent": agent} if agent else {})})
    return sorted(out, key=lambda a: (str(a["since"]), a["session"]))


def record_abandoned(state: dict) -> None:
    """A request whose client went away before the answer: not a compaction (its upstream
    work was cancelled), counted apart."""
    state["totals"]["abandoned"] = state["totals"].get("abandoned", 0) + 1
    day = _day(state, now_iso())
    day["abandoned"] = day.get("abandoned", 0) + 1
