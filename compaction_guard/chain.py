"""The three-level compaction chain: normal -> aggressive -> deterministic.

Escalation is a loop over level settings and one predicate (after whisper's
decode_with_fallback): a level's output goes through the same detectors as a stored
summary, and any failure moves on to the next level at once. L3 is deterministic
truncation: it always returns, and it never grows the input.

    result = run_chain(text)                       # the embedded extractive summarizer
    result = run_chain(text, summarizer=my_llm)    # anything with .summarize(text, request)
    result.summary, result.level_used, result.attempts
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

from .check import check_record
from .records import SummaryRecord
from .settings import DEFAULT, Settings
from .summarizers import ExtractiveSummarizer, SummarizerError, SummaryRequest, truncate_l3
from .tokens import estimate_tokens

LEVEL_KEYS = {1: "l1_normal", 2: "l2_aggressive", 3: "l3_deterministic"}
STRATEGIES = {1: "normal", 2: "aggressive", 3: "deterministic"}


def level_requests(input_tokens: int, settings: Settings) -> list:
    """The LLM levels' settings: L2 has a smaller target and a lower temperature."""
    return [
        SummaryRequest(level=1, strategy="normal",
                       target_tokens=max(16, min(settings.l1_max_tokens, int(input_tokens * settings.l1_target_ratio)))),
        SummaryRequest(level=2, strategy="aggressive",
                       target_tokens=max(8, min(settings.l2_max_tokens, int(input_tokens * settings.l2_target_ratio))),
                       temperature=0.1, reduce_reasoning=True),
    ]


@dataclass
class Attempt:
    level: int
    strategy: str
    valid: bool
    failures: list
    output_tokens: int
    seconds: float
    reasons: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"level": self.level, "strategy": self.strategy, "valid": self.valid, "failures": self.failures,
                "output_tokens": self.output_tokens, "seconds": round(self.seconds, 4), "reasons": self.reasons,
                "warnings": self.warnings}


@dataclass
class ChainResult:
    summary: str
    level_used: int
    input_tokens: int
    output_tokens: int
    attempts: list
    summarizer: str = "extractive"

    @property
    def level_key(self) -> str:
        return LEVEL_KEYS[self.level_used]

    def to_dict(self) -> dict:
        return {"level_used": self.level_used, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "result": self.summary, "summarizer": self.summarizer,
                "attempts": [a.to_dict() for a in self.attempts]}


def run_chain(text: str, summarizer=None, settings: Settings = DEFAULT, record_id: str = "simulate") -> ChainResult:
    """Summarize `text`, escalating L1 -> L2 -> L3 until a summary passes every detector."""
    summarizer = summarizer or ExtractiveSummarizer()
    input_tokens = estimate_tokens(text)
    attempts = []
    for request in level_requests(input_tokens, settings):
        t0 = time.perf_counter()
        try:
            out = summarizer.summarize(text, request)
        except SummarizerError as exc:
            attempts.append(Attempt(request.level, request.strategy, False, [exc.kind], 0, time.perf_counter() - t0,
                                    reasons={exc.kind: str(exc)}))
            continue
        verdict = check_record(SummaryRecord(record_id, out or "", "chain", input_text=text), settings)
        attempts.append(Attempt(request.level, request.strategy, verdict.valid, verdict.failures, verdict.output_tokens,
                                time.perf_counter() - t0, verdict.reasons, verdict.warnings))
        if verdict.valid:
            return ChainResult(out, request.level, input_tokens, verdict.output_tokens, attempts,
                               getattr(summarizer, "name", type(summarizer).__name__))
    t0 = time.perf_counter()
    cut = truncate_l3(text, settings)
    verdict = check_record(SummaryRecord(record_id, cut.text, "chain", input_text=text), settings, allow_own_l3=True)
    # L3 is accepted whatever the detectors say: what they still see came with the input.
    notes = [f"{k}: {r} (inherited from the input)" for k, r in verdict.reasons.items()]
    attempts.append(Attempt(3, "deterministic", True, [], verdict.output_tokens, time.perf_counter() - t0,
                            warnings=verdict.warnings + notes))
    return ChainResult(cut.text, 3, input_tokens, verdict.output_tokens, attempts,
                       getattr(summarizer, "name", type(summarizer).__name__))
