"""Checking summaries: records in, results out.

    validate("summary text", input="source text")      -> Result
    check_records(records, settings)                   -> CheckReport (one Result per record, in order)
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Optional

from .detectors import StaleTracker, detect_all
from .findings import Result
from .records import SummaryRecord
from .settings import DEFAULT, Settings
from .tokens import estimate_tokens, shannon_entropy

# Entropy of a huge summary is measured on a prefix: the figure is descriptive.
_ENTROPY_SAMPLE = 1 << 20


def _content(record: SummaryRecord) -> str:
    c = record.content
    return c if isinstance(c, str) else ("" if c is None else str(c))


def _detect(job) -> tuple:
    """The per-summary work (no cross-record state): (findings, output_tokens, input_tokens, entropy)."""
    content, input_text, input_tokens, settings, allow_own_l3 = job
    if input_text is not None:
        input_tokens = estimate_tokens(input_text)
    output_tokens = estimate_tokens(content)
    entropy = shannon_entropy(content[:_ENTROPY_SAMPLE])
    findings = detect_all(content, settings, output_tokens=output_tokens, input_tokens=input_tokens,
                          entropy=entropy, allow_own_l3=allow_own_l3)
    return findings, output_tokens, input_tokens, entropy


def check_record(record: SummaryRecord, settings: Settings = DEFAULT, stale: Optional[StaleTracker] = None,
                 allow_own_l3: bool = False) -> Result:
    """Validate one record. Pass the same StaleTracker across records of one check."""
    findings, output_tokens, input_tokens, entropy = _detect(
        (_content(record), record.input_text, record.input_tokens, settings, allow_own_l3))
    findings += (stale or StaleTracker()).detect(record)
    return Result(record.id, record.source, findings, output_tokens, input_tokens, entropy)


def validate(content: str, input: Optional[str] = None, input_tokens: Optional[int] = None,
             previous: Optional[str] = None, settings: Settings = DEFAULT) -> Result:
    """Validate one summary. `input` is the text it summarizes (or give `input_tokens`);
    `previous` is the summary it replaced. Returns a Result (`.valid`, `.failures`, `.reasons`)."""
    rec = SummaryRecord(id="summary", content=content, source="api", input_text=input,
                        input_tokens=input_tokens, previous=previous)
    return check_record(rec, settings)


@dataclass
class CheckReport:
    """The outcome of one check: what was read, and a Result per summary."""

    results: list = field(default_factory=list)
    sources: list = field(default_factory=list)   # [{"name", "path", "summaries"}]
    notes: list = field(default_factory=list)     # things a person should know (nothing found, skipped lines)
    checked_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    @property
    def failures_found(self) -> int:
        return sum(1 for r in self.results if r.findings and not r.valid)

    @property
    def escalations(self) -> int:
        """Summaries that a compactor using the chain would have had to redo (failed)
        or that a fallback wrote (truncation markers: L3 usage)."""
        return self.failures_found

    @property
    def l3_usage(self) -> int:
        return sum(1 for r in self.results if "truncation_marker" in r.failures)

    @property
    def status(self) -> str:
        return "HEALTHY" if self.failures_found == 0 else "DEGRADED"

    def to_dict(self) -> dict:
        return {
            "checked_at": self.checked_at,
            "summaries_checked": len(self.results),
            "failures_found": self.failures_found,
            "escalations": self.escalations,
            "status": self.status,
            "sources": self.sources,
            "notes": self.notes,
            "results": [r.to_dict() for r in self.results],
        }


# Below this much summary text a second process costs more than it saves.
PARALLEL_MIN_CHARS = 500_000


def _workers(records: list) -> int:
    cpus = os.cpu_count() or 1
    if cpus < 2 or len(records) < 64:
        return 1
    total = sum(len(r.content) for r in records if isinstance(r.content, str))
    return min(cpus, 4) if total >= PARALLEL_MIN_CHARS else 1


# Set just before the worker processes fork, so they read the records from the
# memory they inherit instead of receiving them through a pipe.
_SHARED: tuple = ()


def _detect_slice(bounds: tuple) -> list:
    records, settings = _SHARED
    return [_detect((_content(r), r.input_text, r.input_tokens, settings, False)) for r in records[bounds[0]:bounds[1]]]


def _parallel(records: list, settings: Settings, workers: int) -> list:
    global _SHARED
    step = 256
    slices = [(i, min(i + step, len(records))) for i in range(0, len(records), step)]
    _SHARED = (records, settings)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return [o for part in pool.map(_detect_slice, slices) for o in part]
    finally:
        _SHARED = ()


def check_records(records: Iterable[SummaryRecord], settings: Settings = DEFAULT,
                  report: Optional[CheckReport] = None, workers: Optional[int] = None) -> CheckReport:
    """Validate records in order; staleness is tracked across them. Large batches
    spread the per-summary detectors over the machine's cores (`workers`, default
    automatic); staleness is then checked in order in this process."""
    report = report or CheckReport()
    records = records if isinstance(records, list) else list(records)
    workers = _workers(records) if workers is None else workers
    if workers > 1:
        outcomes = _parallel(records, settings, workers)
    else:
        outcomes = map(_detect, ((_content(r), r.input_text, r.input_tokens, settings, False) for r in records))
    stale = StaleTracker()
    for rec, (findings, output_tokens, input_tokens, entropy) in zip(records, outcomes):
        findings += stale.detect(rec)
        report.results.append(Result(rec.id, rec.source, findings, output_tokens, input_tokens, entropy))
    return report
