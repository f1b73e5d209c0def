"""Checking summaries: records in, results out.

    validate("summary text", input="source text")      -> Result
    check_records(records, settings)                   -> CheckReport (one Result per record, in order)
"""
from __future__ import annotations

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


def _input_tokens(record: SummaryRecord) -> Optional[int]:
    if record.input_text is not None:
        return estimate_tokens(record.input_text)
    return record.input_tokens


def check_record(record: SummaryRecord, settings: Settings = DEFAULT, stale: Optional[StaleTracker] = None,
                 allow_own_l3: bool = False) -> Result:
    """Validate one record. Pass the same StaleTracker across records of one check."""
    content = record.content if isinstance(record.content, str) else ("" if record.content is None else str(record.content))
    output_tokens = estimate_tokens(content)
    input_tokens = _input_tokens(record)
    entropy = shannon_entropy(content[:_ENTROPY_SAMPLE])
    findings = detect_all(content, settings, output_tokens=output_tokens, input_tokens=input_tokens,
                          entropy=entropy, allow_own_l3=allow_own_l3)
    if stale is None:
        stale = StaleTracker()
    findings += stale.detect(record)
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
        return sum(1 for r in self.results if not r.valid)

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


def check_records(records: Iterable[SummaryRecord], settings: Settings = DEFAULT,
                  report: Optional[CheckReport] = None) -> CheckReport:
    """Validate records in order; staleness is tracked across them."""
    report = report or CheckReport()
    stale = StaleTracker()
    for rec in records:
        report.results.append(check_record(rec, settings, stale))
    return report
