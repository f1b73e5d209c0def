"""Summarizers: what the chain calls at each level.

One small interface, `Summarizer.summarize(text, request) -> str`, so a real LLM
plugs in beside the embedded default:

- ExtractiveSummarizer: needs no model. Picks the input's most informative
  sentences (rare words, identifiers, numbers, the latest request) within a token
  target, in their original order. L2 gets a smaller target and keeps only
  sentences that carry facts.
- truncate_l3: the deterministic last level: the input's head and tail, split
  3:2 in tokens, within L2's target, and one marker line saying what was dropped.
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
    penalties: bool = False          # L2 after a loop: repetition penalties where the API has them
    deadline: Optional[float] = None  # time.monotonic() by which the whole chain must be done
    contract: Optional[object] = None  # what the request demands of the answer (contract.Contract), when structured


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
            # fsum: exact, so the score does not depend on the set's (hash-seeded) order
            s = math.fsum(math.log(1 + n / df[w]) * (2.0 if _IDENT_RE.search(w) else 1.0) for w in ws)
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


def l2_target(input_tokens: int, settings) -> int:
    """L2's target in tokens (the chain's aggressive level), which L3 fits too."""
    return max(32, min(settings.l2_max_tokens, int(input_tokens * settings.l2_target_ratio)))


def _prefix_within(text: str, budget: float) -> int:
    """The longest prefix of `text` within `budget` estimated tokens (binary search:
    the estimate only grows with the prefix; an ASCII character is at least 1/4 token,
    so only the first 4 x budget + 8 characters can fit)."""
    lo, hi = 0, min(len(text), int(budget * 4) + 8)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _suffix_within(text: str, budget: float, floor: int) -> int:
    """The start of the longest suffix of `text` (not before `floor`) within `budget`."""
    lo, hi = max(floor, len(text) - int(budget * 4) - 8), len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if estimate_tokens(text[mid:]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _back_to_break(text: str, end: int, start: int) -> int:
    """Move a head's end back to a line break or a space in its last quarter, if any:
    a huge line is cut inside, at a character."""
    room = start + (end - start) * 3 // 4
    for sep in ("\n", " "):
        k = text.rfind(sep, room, end)
        if k > start:
            return k
    return end


def _on_to_break(text: str, start: int, end: int) -> int:
    """Move a tail's start on past a line break or a space in its first quarter, if any."""
    room = start + (end - start) // 4
    for sep in ("\n", " "):
        k = text.find(sep, start, room)
        if k >= 0:
            return k + 1
    return start


def truncate_l3(text: str, settings, budget: Optional[int] = None) -> Truncation:
    """The input's head and tail, split l3_head_ratio : l3_tail_ratio in tokens, within
    `budget` tokens (L2's target by default), with one marker line saying how many
    tokens were dropped. An input within the budget comes back whole; anything else
    comes back within the budget, so never larger than the input. The kept text is the
    input's own: its language and identifiers, by construction. A single huge line is
    cut inside it, at a character."""
    in_tokens = estimate_tokens(text)
    note_tokens = estimate_tokens(L3_NOTE.format(dropped=in_tokens, total=in_tokens, unit="tokens"))
    budget = max(budget or l2_target(in_tokens, settings), note_tokens + 32)
    if in_tokens <= budget:
        return Truncation(text, 0, in_tokens, "none")
    room = budget - note_tokens - 2          # the note and its two line breaks
    share = settings.l3_head_ratio / (settings.l3_head_ratio + settings.l3_tail_ratio)
    h = _back_to_break(text, _prefix_within(text, room * share), 0)
    head = text[:h].rstrip()
    t = _on_to_break(text, _suffix_within(text, room * (1 - share), h), len(text))
    tail = text[t:].lstrip()
    for _ in range(8):                       # the parts' estimates round up: trim until the whole fits
        kept = estimate_tokens(head) + estimate_tokens(tail)
        out = f"{head}\n{L3_NOTE.format(dropped=in_tokens - kept, total=in_tokens, unit='tokens')}\n{tail}".strip("\n")
        if estimate_tokens(out) <= budget:
            return Truncation(out, in_tokens - kept, in_tokens, "tokens")
        tail = tail[max(1, len(tail) // 16):] if tail else tail
        head = head[:-max(1, len(head) // 16)] if not tail and head else head
    note = L3_NOTE.format(dropped=in_tokens, total=in_tokens, unit="tokens")
    return Truncation(note, in_tokens, in_tokens, "tokens")
