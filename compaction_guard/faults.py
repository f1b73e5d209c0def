"""Injected failures (`--fault L1=empty,L2=garbled`): watch escalation without a broken model.

A faulted level does not call the summarizer; it returns what that failure looks
like in the wild, made from the input, so the same detectors catch it.
"""
from __future__ import annotations

from .errors import GuardError
from .summarizers import SummarizerError, SummaryRequest

OUTPUT_FAULTS = ("empty", "inflation", "garbled", "repetition", "truncation_marker", "stale")
ERROR_FAULTS = ("error", "timeout", "refusal", "reasoning_only", "cut_off")
FAULTS = OUTPUT_FAULTS + ERROR_FAULTS


def parse(spec: str) -> dict:
    """'L1=empty,L2=garbled' -> {1: 'empty', 2: 'garbled'}."""
    out = {}
    for part in filter(None, (p.strip() for p in (spec or "").split(","))):
        level, _, kind = part.partition("=")
        level = level.strip().upper()
        kind = kind.strip().lower()
        if level not in ("L1", "L2") or kind not in FAULTS:
            raise GuardError(f"--fault {part!r}: write LEVEL=KIND with LEVEL L1 or L2 and KIND one of {', '.join(FAULTS)}")
        out[int(level[1])] = kind
    return out


def faulty_output(kind: str, text: str, previous: str) -> str:
    head = " ".join(text.split())[:400] or "the conversation"
    if kind == "empty":
        return ""
    if kind == "inflation":
        return "Conversation so far, in full:\n" + text + "\n" + text
    if kind == "garbled":   # the head, UTF-8 read as cp1252, then bytes read as latin-1
        moj = head.encode("utf-8").decode("cp1252", errors="replace")
        return moj + " " + bytes(range(128, 256)).decode("latin-1")
    if kind == "repetition":
        sentence = (head.split(". ")[0] or head)[:120].rstrip(".") + "."
        return " ".join([sentence] * 40)
    if kind == "truncation_marker":
        return "[TRUNCATED]\n" + head
    if kind == "stale":
        return previous
    raise ValueError(kind)


class FaultySummarizer:
    """Wraps a summarizer; levels named in `faults` fail the way they were told to."""

    def __init__(self, inner, faults: dict, previous: str = ""):
        self.inner = inner
        self.faults = faults
        self.previous = previous
        self.name = getattr(inner, "name", "summarizer")
        self.model = getattr(inner, "model", "")

    def penalty_params(self, settings) -> dict:
        return getattr(self.inner, "penalty_params", lambda s: {})(settings)

    def describe(self) -> str:
        inner = self.inner.describe() if hasattr(self.inner, "describe") else self.name
        return f"{inner} with injected faults {', '.join(f'L{k}={v}' for k, v in sorted(self.faults.items()))}"

    def summarize(self, text: str, request: SummaryRequest):
        kind = self.faults.get(request.level)
        if kind is None:
            return self.inner.summarize(text, request)
        if kind in ERROR_FAULTS:
            messages = {"error": "injected fault: HTTP 500 after retries", "timeout": "injected fault: no answer in time",
                        "refusal": "injected fault: the model refused", "reasoning_only": "injected fault: reasoning only",
                        "cut_off": f"injected fault: reply cut off at max_tokens={request.max_tokens}"}
            raise SummarizerError(messages[kind], kind)
        return faulty_output(kind, text, self.previous)
