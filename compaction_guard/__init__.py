"""compaction-resilience-guard: checks agents' compaction summaries and runs a
3-level compaction chain that always yields a valid summary.

Library entry points:
    validate(content, input=None, input_tokens=None, previous=None) -> Result
    check_records(records, settings) -> CheckReport
    run_chain(text, summarizer=None, settings=None) -> ChainResult   (no state)
    compact(text, home=None, ...) -> ChainResult   (configured provider, breaker, level_usage)
    check_summary(summary, history) -> Verdict        (compaction_guard.api: the stable, typed API;
                                                        api.compact / api.acompact: any summarizer)

Each name is imported when first used: a hook that runs on every tool call imports only its
own agent's package, not the detectors (launch.py).
"""
import importlib

# name -> the module that defines it
_WHERE = {
    "SummaryRecord": "records", "Finding": "findings", "Result": "findings", "FAILURE_KINDS": "findings",
    "Settings": "settings", "DEFAULT": "settings", "SEED": "settings",
    "validate": "check", "check_records": "check", "CheckReport": "check",
    "run_chain": "chain", "ChainResult": "chain", "compact": "operations",
    "check_summary": "api", "Verdict": "api", "Compaction": "api", "Ask": "api",
}
__all__ = list(_WHERE)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
