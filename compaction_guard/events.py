"""The event of one verdict, for a team's telemetry: ids and figures only, never text (a
judged summary's, `event`; a run of the chain's, `chain_event`). Pure: the state, which
collects them as it records verdicts, and verdicts.py, which counts them, both build on it."""
from __future__ import annotations

import time
from typing import Optional


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
