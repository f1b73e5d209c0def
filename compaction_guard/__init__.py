"""compaction-resilience-guard: checks agents' compaction summaries and runs a
3-level compaction chain that always yields a valid summary.

Library entry points:
    validate(content, input=None, input_tokens=None, previous=None) -> Result
    check_records(records, settings) -> CheckReport
    run_chain(text, summarizer=None, settings=None) -> ChainResult   (no state)
    compact(text, home=None, ...) -> ChainResult   (configured provider, breaker, level_usage)
"""
from .records import SummaryRecord
from .findings import Finding, Result, FAILURE_KINDS
from .settings import Settings, DEFAULT, SEED
from .check import validate, check_records, CheckReport
from .chain import run_chain, ChainResult
from .operations import compact

__all__ = [
    "SummaryRecord", "Finding", "Result", "FAILURE_KINDS", "Settings", "DEFAULT", "SEED",
    "validate", "check_records", "CheckReport", "run_chain", "ChainResult", "compact",
]
__version__ = "0.1.0"
