"""Verdicts: what each judged compaction adds to the guard's counters, and the event that
tells a team's telemetry about it.

A verdict is produced where a compaction is judged: a check of the stores (each stored summary
once, ever: ledger.py), an agent's hook as the compaction happens (counted in the same ledger,
so the next check does not count it again), and the chain and `serve` (state.record_chain).
Each becomes
- counts (`FailureLog.counts`, applied to the state by state.apply_counts): stored summaries by
  who wrote them, the failed ones, failures by store and kind, the newest failure records;
- one event (`event`): agent, where it was judged, the kinds, the level, the tokens before and
  after, the store's session and summary ids. Ids and figures only, never text. The state
  update that records the verdict hands its events to telemetry.py once the state is written.
"""
from __future__ import annotations

import time
from collections import Counter, deque
from typing import Optional

# where a verdict was produced
VIA = ("check", "hook", "serve", "chain")


def event(result, via: str, agent: Optional[str] = None, level: Optional[int] = None,
          when_ns: Optional[int] = None) -> dict:
    """The telemetry event of one judged summary (check.Result): ids and figures only."""
    fallback = bool(getattr(result, "fallback", False) or getattr(result, "own_answer", False)) \
        or "truncation_marker" in result.failures
    return {"at_ns": when_ns or time.time_ns(), "agent": agent, "via": via, "source": result.source,
            "summary_id": str(result.id),
            "session": _str(getattr(result, "conversation", None) or getattr(result, "session", None)),
            "valid": not result.failures, "failures": list(result.failures),
            "warnings": sorted({f.kind for f in result.findings if not f.failure}),
            "level": level or (3 if fallback else 1), "fallback": fallback,
            "tokens_before": _int(getattr(result, "tokens_before", result.input_tokens)),
            "tokens_after": _int(getattr(result, "tokens_after", result.output_tokens)),
            "trigger": _str(getattr(result, "trigger", None))}


def chain_event(result, via: str) -> dict:
    """The event of one run of the chain (chain.ChainResult): the level that answered, what the
    levels before it failed with."""
    failures = list(dict.fromkeys(k for a in result.attempts for k in a.failures))
    return {"at_ns": time.time_ns(), "agent": None, "via": via, "source": via, "summary_id": None, "session": None,
            "valid": result.level_used == 1, "failures": failures, "warnings": [], "level": result.level_used,
            "fallback": result.level_used == 3, "tokens_before": _int(result.input_tokens),
            "tokens_after": _int(result.output_tokens), "trigger": None, "breaker_open": bool(result.breaker_open)}


def _int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v):
    return None if v is None else str(v)


class FailureLog:
    """What summaries new to the ledger add: how many each writer (model or fallback)
    wrote, how many failed, failures by source and kind, the newest failure records
    (bounded), and their verdict events (bounded): ids and figures, never summary text."""

    def __init__(self, limit: int, agent: Optional[str] = None, via: str = "check", events: int = 0):
        self.entries = deque(maxlen=limit)
        self.stored = Counter()
        self.failed = 0
        self.failures = Counter()       # (source, kind) -> failures among new summaries
        self.agent, self.via = agent, via
        self.events = deque(maxlen=max(0, events))

    def add(self, result, when: str) -> None:
        if not getattr(result, "new", True):
            return
        # the guard's own L3, stored by the agent (own_answers.py): a fallback's share, not a failure
        fallback = getattr(result, "fallback", False) or getattr(result, "own_answer", False) \
            or "truncation_marker" in result.failures
        self.stored["by_fallback" if fallback else "by_model"] += 1
        self.failed += 1 if result.failures else 0
        for kind in result.failures:
            self.failures[(result.source, kind)] += 1
            self.entries.append({"summary_id": result.id, "failure_type": kind, "level_used": 3 if fallback else 1,
                                 "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
                                 "detected_at": when, "source": result.source})
        if self.events.maxlen:
            self.events.append(event(result, self.via, self.agent))

    def counts(self, when: str) -> dict:
        """The batch the ledger keeps until the state has it (state.apply_counts)."""
        return {"day": when[:10], "stored": dict(self.stored), "failed": self.failed,
                "failures": [[src, kind, n] for (src, kind), n in sorted(self.failures.items())],
                "entries": list(self.entries)}


def count_once(store, state: dict, record, result, settings, agent: str, via: str = "hook") -> Optional[int]:
    """Inside `store.update()` (state `state`): count one stored summary judged outside a check
    (an agent's hook), once ever, in the same ledger a check uses, and give its event to the
    update. Returns the ledger batch to mark done after the state is written, or None when
    nothing was counted: already counted (the check or a hook saw it first), or a check is
    running on this state now (it, or the next one, counts it; the hook does not wait for it).
    `record.key` (Source.count_key) is the summary's identity; `record.meta["aliases"]` other
    identities a check may know it by."""
    import fcntl
    import os
    from .ledger import Ledger, digest, ledger_path
    from .state import apply_counts, now_iso
    keys = [record.key] + list((record.meta or {}).get("aliases") or [])
    if not record.key:
        return None
    lock = store._lock("check-lock")       # the check's own lock: not while a check runs
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None
        ledger = Ledger(ledger_path(store.path))
        try:
            state["counted_batch"] = ledger.settle(state["counted_batch"], lambda c: apply_counts(state, c))
            if any(ledger.has(digest(k)) for k in keys):
                return None
            batch = state["counted_batch"] + 1
            log = FailureLog(settings.max_failures_kept, agent, via, events=1)
            result.new = True
            log.add(result, now_iso())
            counts = log.counts(now_iso())
            ledger.stage([digest(k) for k in keys], counts, batch)
            apply_counts(state, counts)
            state["counted_batch"] = batch
            state.setdefault("_verdicts", []).extend(log.events)
            store.after_write.append(lambda: _done(store, batch))
            return batch
        finally:
            ledger.close()
    finally:
        os.close(lock)


def _done(store, batch: int) -> None:
    """Phase 3 of the ledger, once the state holds the batch."""
    from .ledger import Ledger, ledger_path
    with Ledger(ledger_path(store.path)) as ledger:
        ledger.done(batch)
