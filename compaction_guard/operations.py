"""The guard's operations, one function per command; the CLI is a thin layer over them.

    check(home=..., file=None)        -> CheckReport, recorded in the state
    simulate(text, summarizer=None)   -> ChainResult, counted in level_usage
    compact(text, ...)                -> ChainResult for compactors (same chain as simulate)
    report(home)                      -> dict: level mix, L3 warning, recent failures, breaker
    status(home)                      -> dict: the last check at a glance
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

from . import breaker, providers
from .chain import run_chain
from .faults import FaultySummarizer
from .providers import ProviderChoice
from .check import CheckReport, check_records
from .settings import DEFAULT, Settings
from .state import LEVEL_KEYS, StateStore, record_chain, record_check, state_path
from . import stores


def _store(home: Path, settings: Settings) -> StateStore:
    return StateStore(state_path(home), settings)


def check(home: Optional[Path] = None, file=None, settings: Settings = DEFAULT, input_text: Optional[str] = None,
          input_tokens: Optional[int] = None, save: bool = True) -> CheckReport:
    """Check the stores under `home` (or one `file`) and record the outcome in the state."""
    home = Path(home) if home is not None else stores.openclaw_home()
    report = CheckReport()
    if file is not None:
        loaded = [stores.load_file(file, input_text=input_text, input_tokens=input_tokens)]
    else:
        loaded = stores.discover(home)
        if not loaded:
            report.notes.append(f"no compaction store found under {home} (looked for "
                                f"{stores.dag_state_path(home)}); nothing to check")
    for item in loaded:
        report.sources.append(item.describe())
        if item.note:
            report.notes.append(item.note)
        check_records(item.records, settings, report)
    if save and (loaded or file is None):
        with _store(home, settings).update() as state:
            record_check(state, report, settings)
    return report


def compact(text: str, home: Optional[Path] = None, summarizer=None, settings: Settings = DEFAULT,
            choice: Optional[ProviderChoice] = None, faults: Optional[dict] = None, previous: Optional[str] = None,
            save: bool = True):
    """Run the 3-level chain on `text` and return the ChainResult (always a valid summary).

    The summarizer is `summarizer`, else the provider `choice`, else the configured one
    (flags/env/openclaw.json, see providers.resolve). `faults` ({level: kind}) injects
    failures. When the circuit breaker is open the LLM levels are skipped. The run counts
    in level_usage and updates the breaker."""
    home = Path(home) if home is not None else stores.openclaw_home()
    store = _store(home, settings)
    skip = breaker.open_until(store.read()) is not None
    notes = []
    if summarizer is None:
        choice = choice or providers.resolve({}, home)
        if choice.note:
            notes.append(choice.note)
        summarizer = providers.build(choice, settings)
    if faults:
        summarizer = FaultySummarizer(summarizer, faults, previous or "")
    result = run_chain(text, summarizer=summarizer, settings=settings, previous=previous, skip_llm=skip)
    result.notes = notes
    if save:
        with store.update() as state:
            record_chain(state, result)
            breaker.record(state, result.level_used, skip, settings)
    return result


# --simulate and --compact run the same chain; --compact is what compactors call.
simulate = compact


def report(home: Optional[Path] = None, settings: Settings = DEFAULT, recent: int = 10) -> dict:
    """Failure and escalation history: level mix with shares, the L3 warning, recent failures by kind."""
    home = Path(home) if home is not None else stores.openclaw_home()
    state = _store(home, settings).read()
    usage = state["level_usage"]
    total = sum(usage.values())
    share = {k: (usage[k] / total if total else 0.0) for k in LEVEL_KEYS}
    warning = None
    if total and share["l3_deterministic"] > settings.l3_warning_share:
        warning = (f"L3 deterministic fallback is {share['l3_deterministic']:.0%} of compactions "
                   f"(over {settings.l3_warning_share:.0%}): systemic LLM issue, check the summarizer's model and provider")
    failures = state["failures"]
    return {
        "state_file": str(state_path(home)),
        "last_check_at": state["last_check_at"],
        "level_usage": usage,
        "level_share": {k: round(v, 4) for k, v in share.items()},
        "total_compactions": total,
        "l3_warning": warning,
        "failures_by_kind": dict(Counter(f.get("failure_type") for f in failures).most_common()),
        "failures_total": len(failures),
        "recent_failures": failures[-recent:][::-1],
        "checks": len(state["check_history"]),
        "chain_runs": len(state["chain_history"]),
        "circuit_breaker": _breaker_summary(state, settings),
    }


def _breaker_summary(state: dict, settings: Settings) -> dict:
    c = breaker.circuit(state)
    return {"open_until": breaker.open_until(state), "consecutive_l3": c["consecutive_l3"],
            "threshold": settings.breaker_threshold, "cooldown_seconds": settings.breaker_cooldown_seconds,
            "opened": sum(1 for e in c["events"] if e.get("event") == "opened"),
            "skipped_chains": sum(1 for e in c["events"] if e.get("event") == "skipped"),
            "recent_events": c["events"][-5:][::-1]}


def status(home: Optional[Path] = None, settings: Settings = DEFAULT) -> dict:
    """The last check at a glance."""
    home = Path(home) if home is not None else stores.openclaw_home()
    state = _store(home, settings).read()
    last = state["check_history"][0] if state["check_history"] else None
    usage = state["level_usage"]
    total = sum(usage.values())
    return {
        "state_file": str(state_path(home)),
        "last_check_at": state["last_check_at"],
        "status": last["status"] if last else "NEVER_CHECKED",
        "summaries_checked": last["summaries_checked"] if last else 0,
        "failures_found": last["failures_found"] if last else 0,
        "failures_by_kind": last.get("failures_by_kind", {}) if last else {},
        "level_usage": usage,
        "l3_share": round(usage["l3_deterministic"] / total, 4) if total else 0.0,
        "circuit_open_until": breaker.open_until(state),
    }
