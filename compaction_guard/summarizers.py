"""Summarizers: what the chain calls at each level.

One small interface, `Summarizer.summarize(text, request) -> str`, so a real LLM
(issue #3) plugs in beside the embedded default:

- ExtractiveSummarizer: needs no model. Picks the input's most informative
  sentences (rare words, identifiers, numbers, the latest request) within a token
  target, in their original order. L2 gets a smaller target and keeps only
  sentences that carry facts.
- truncate_l3: the deterministic last level: the first 30% and last 20% of the
  input's lines and one marker line saying how many were dropped.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Protocol

from .tokens import CJK_CLASS, estimate_tokens, normalize_ws


@dataclass(frozen=True)
class SummaryRequest:
    """What a level asks of a summarizer."""

    level: int                       # 1 or 2
    strategy: str                    # "normal" or "aggressive"
    target_tokens: int               # the summary should stay under this
    max_tokens: int = 0              # the hard cap sent to an LLM (explicit at both levels)
    temperature: Optional[float] = None
    reduce_reasoning: bool = False   # L2: reasoning_effort low / thinking off where the provider has a knob
    deadline: Optional[float] = None  # time.monotonic() by which the whole chain must be done


@dataclass
class SummaryReply:
    """A summarizer's answer with what it noticed on the way (e.g. stripped reasoning)."""

    text: str
    warnings: list = field(default_factory=list)
    retries: int = 0


class Summarizer(Protocol):
    name: str
    model: str

    def summarize(self, text: str, request: SummaryRequest):
        """Return a summary of `text` (str or SummaryReply); raise SummarizerError when
        no summary could be had (HTTP error after retries, timeout, refusal, ...)."""


class SummarizerError(Exception):
    """A summarizer could not produce a summary. `kind` names why, for the attempt's
    failures: "error" (HTTP error after retries), "timeout", "refusal",
    "reasoning_only", "cut_off" (stopped at max_tokens), or a detector's kind."""

    def __init__(self, message: str, kind: str = "error", retries: int = 0, warnings: Optional[list] = None):
        super().__init__(message)
        self.kind = kind
        self.retries = retries
        self.warnings = list(warnings or [])     # what the summarizer noticed before it failed


# --------------------------------------------------------------------------- extractive
_SENT_RE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_WORD_RE = re.compile(rf"[{CJK_CLASS}]{{1,2}}|[^\W_][\w./:#@-]*", re.U)
_IDENT_RE = re.compile(r"\d|[/#@_]|[a-z][A-Z]|\.\w")
_FACT_RE = re.compile(r"\d|[/#@_`]|\b(?:decid|agreed|todo|next|must|never|always|fix|error|deploy|user wants|asked|need)", re.I)
_NOISE_LINE_RE = re.compile(r"^\s*(?:tool|system)\s*:", re.I)
_ROLE_RE = re.compile(r"^\s*(?:user|assistant|human|ai)\s*:\s*", re.I)


class ExtractiveSummarizer:
    """Selects informative sentences within the request's token target."""

    name = "extractive"
    model = "embedded"

    def summarize(self, text: str, request: SummaryRequest) -> str:
        units = []
        seen = set()
        for line in text.splitlines():
            if _NOISE_LINE_RE.match(line):
                continue
            line = _ROLE_RE.sub("", line)
            for s in _SENT_RE.split(line):
                s = normalize_ws(s)
                key = s.lower()
                if len(s) < 3 or key in seen:
                    continue
                seen.add(key)
                units.append(s)
        if not units:
            return ""
        if request.strategy == "aggressive":
            facts = [u for u in units if _FACT_RE.search(u)]
            units = facts or units
        words = [set(w.lower() for w in _WORD_RE.findall(u)) for u in units]
        df = Counter(w for ws in words for w in ws)
        n = len(units)
        scores = []
        for i, (u, ws) in enumerate(zip(units, words)):
            if not ws:
                scores.append(0.0)
                continue
            s = sum(math.log(1 + n / df[w]) * (2.0 if _IDENT_RE.search(w) else 1.0) for w in ws)
            s /= 1 + math.log(1 + len(ws))
            if i >= n - 2:
                s *= 1.5   # the latest request and state
            scores.append(s)
        order = sorted(range(n), key=lambda i: -scores[i])
        budget = max(1, request.target_tokens)
        chosen, used = [], 0
        for i in order:
            t = estimate_tokens(units[i]) + 1
            if used + t > budget:
                continue
            chosen.append(i)
            used += t
        if not chosen:
            best = units[order[0]]
            return _cut_to_tokens(best, budget)
        return "\n".join(units[i] for i in sorted(chosen))


def _cut_to_tokens(text: str, budget: int) -> str:
    out = []
    used = 0
    for w in text.split():
        t = estimate_tokens(w + " ")
        if used + t > budget:
            break
        out.append(w)
        used += t
    return " ".join(out) or text[: budget * 2]


# --------------------------------------------------------------------------- L3
L3_NOTE = "[TRUNCATED: {dropped} of {total} {unit} dropped by compaction-resilience-guard L3]"


@dataclass
class Truncation:
    text: str
    dropped: int
    total: int
    unit: str          # "lines", "characters" or "none"


def truncate_l3(text: str, settings) -> Truncation:
    """The first 30% and last 20% of the input's lines, with one marker line.

    Always returns something no larger than the input: when dropping lines would
    not shrink it (few, long lines) it cuts characters instead, at whitespace; when
    even that would not (a tiny input), it returns the input as it is.
    """
    lines = text.splitlines()
    total = len(lines)
    in_tokens = estimate_tokens(text)
    if total >= 5:
        head = max(1, int(total * settings.l3_head_ratio))
        tail = max(1, int(total * settings.l3_tail_ratio))
        dropped = total - head - tail
        note = L3_NOTE.format(dropped=dropped, total=total, unit="lines")
        out = "\n".join(lines[:head] + [note] + lines[total - tail:])
        if estimate_tokens(out) < in_tokens:
            return Truncation(out, dropped, total, "lines")
    n = len(text)
    h = _snap(text, int(n * settings.l3_head_ratio))
    t = _snap(text, n - int(n * settings.l3_tail_ratio))
    if 0 < h < t < n:
        note = L3_NOTE.format(dropped=t - h, total=n, unit="characters")
        out = text[:h].rstrip() + "\n" + note + "\n" + text[t:].lstrip()
        if estimate_tokens(out) < in_tokens:
            return Truncation(out, t - h, n, "characters")
    return Truncation(text, 0, total, "none")


def _snap(text: str, pos: int) -> int:
    """Move `pos` to the nearest whitespace within 200 characters."""
    lo = max(0, pos - 200)
    i = text.rfind(" ", lo, pos + 1)
    j = text.rfind("\n", lo, pos + 1)
    k = max(i, j)
    return k if k > 0 else pos
