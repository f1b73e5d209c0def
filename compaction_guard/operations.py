"""The guard's operations, one function per command; the CLI is a thin layer over them.

    check(home=..., file=None)        -> CheckReport, recorded in the state
    simulate(text, summarizer=None)   -> ChainResult, counted in level_usage
    report(home)                      -> dict: level mix, L3 warning, recent failures
    status(home)                      -> dict: the last check at a glance
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

from .chain import run_chain
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


def simulate(text: str, home: Optional[Path] = None, summarizer=None, settings: Settings = DEFAULT, save: bool = True):
    """Run the 3-level chain on `text`; the run counts in level_usage."""
    result = run_chain(text, summarizer=summarizer, settings=settings)
    if save:
        home = Path(home) if home is not None else stores.openclaw_home()
        with _store(home, settings).update() as state:
            record_chain(state, result)
    return result


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
    }


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
    }
