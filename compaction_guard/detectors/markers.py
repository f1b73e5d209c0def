"""truncation_marker: text that says a deterministic fallback, not a model, wrote it.

Each marker is a named pattern with where it comes from (REFERENCE.md sections 2 and 8).
A marker quoted inside `inline code` is talk about markers, not a fallback: warning.
A marker the summary it replaced already held was carried forward (OpenClaw copies an
earlier summary, markers and all, into the next one): it is counted where it was written,
not again; a warning says so.
"""
from __future__ import annotations

import re
from typing import Optional

from ..findings import Finding

MARKER_PATTERNS = [
    # This skill family's deterministic truncation (the seed's two markers),
    # and this guard's own L3 note: "[TRUNCATED: 40 of 100 lines dropped ...]".
    ("skill-truncated", r"\[TRUNCATED(?::[^\]\n]*)?\]"),
    ("skill-fallback", r"\[FALLBACK(?::[^\]\n]*)?\]"),
    # The seed guard's own L3 note.
    ("seed-l3", r"\[\.\.\. \d+ lines truncated \.\.\.\]"),
    # lossless-claw deterministic fallback and size caps.
    ("lcm-truncated-from", r"\[Truncated from \d[\d,]* tokens\]"),
    ("lcm-fallback", r"\[LCM fallback summary;[^\]\n]*\]"),
    ("lcm-capped", r"\[Capped(?: from \d[\d,]* tokens)?(?: to ~\d[\d,]*)?\]"),
    ("lcm-legacy", r"\[Truncated for context management\]"),
    # OpenClaw's own (src/agents/compaction.ts, compaction-safeguard.ts): the summary cut to
    # its size budget; a summary of the first chunks only, the others lost; the previous
    # summary's context cut to fit.
    ("openclaw-summary-truncated", r"\[Compaction summary truncated to fit budget\]"),
    ("openclaw-partial", r"\[Partial summary: chunks 1-(?P<done>\d+) of (?P<total>\d+) were summarized\. "
                         r"Chunks [^\]\n]* could not be processed\.\]"),
    ("openclaw-context-truncated", r"\[Earlier compaction context truncated to fit budget\]"),
]
MARKER_RE = re.compile("|".join(f"(?P<{n.replace('-', '_')}>{p})" for n, p in MARKER_PATTERNS))
# How every marker above begins: text without any of these holds none (a pattern that starts
# with a literal, one pass from "[" to "[" in C, where a substring search per beginning reads
# the text nine times)
_QUICK_RE = re.compile(r"\[(?:TRUNCATED|FALLBACK|\.\.\.|Truncated|LCM|Capped|Compaction|Partial|Earlier)")
WHAT = {
    "openclaw-summary-truncated": "OpenClaw cut the summary to its size budget: its end is lost",
    "openclaw-context-truncated": "OpenClaw cut the earlier compaction context to fit its budget",
}


def _in_inline_code(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before = text[line_start:start]
    after = text[end:line_end]
    return before.count("`") % 2 == 1 and "`" in after


def find_markers(text: str) -> list:
    """[(name, matched text, quoted_in_code)] for every marker in `text`."""
    if "[" not in text or _QUICK_RE.search(text) is None:
        return []
    out = []
    for m in MARKER_RE.finditer(text):
        name = next(n for n, _ in MARKER_PATTERNS if m.group(n.replace("-", "_")) is not None)
        out.append((name, m.group(0), _in_inline_code(text, m.start(), m.end())))
    return out


def _what(name: str, text: str) -> str:
    if name == "openclaw-partial":
        m = re.search(r"chunks 1-(\d+) of (\d+)", text)
        if m:
            done, total = int(m.group(1)), int(m.group(2))
            return (f"OpenClaw summarized chunks 1-{done} of {total} and lost the other {total - done}: the "
                    "history they held is gone from this summary")
    return WHAT.get(name, "a fallback, not a model, wrote this summary")


def detect(content: str, settings, allow_own_l3: bool = False, previous: Optional[str] = None) -> list:
    found = find_markers(content)
    if allow_own_l3:      # the chain judging its own L3: its note is its own, not a marker to report
        found = [(n, t, q) for n, t, q in found if not (n == "skill-truncated" and "compaction-resilience-guard" in t)]
    live = [(n, t) for n, t, quoted in found if not quoted]
    inherited = []
    if live and previous:
        before = {t for _, t, q in find_markers(previous) if not q}
        inherited = [(n, t) for n, t in live if t in before]
        live = [(n, t) for n, t in live if t not in before]
    if live:
        name, text = live[0]
        more = f" and {len(live) - 1} more" if len(live) > 1 else ""
        figures = {"markers": [n for n, _ in live]}
        m = re.search(r"chunks 1-(\d+) of (\d+)", text) if name == "openclaw-partial" else None
        if m:
            figures.update(chunks_summarized=int(m.group(1)), chunks=int(m.group(2)))
        return [Finding("truncation_marker",
                        f"deterministic fallback marker {text!r} ({name}){more}: {_what(name, text)} (counted as "
                        "L3); check why the summarizer failed", figures=figures)]
    out = []
    if inherited:
        out.append(Finding("inherited_marker", f"marker {inherited[0][1]!r} ({inherited[0][0]}) carried forward from "
                           "the summary this one replaced: counted there, not again", failure=False,
                           figures={"markers": [n for n, _ in inherited]}))
    if found and not inherited and not live:
        out.append(Finding("quoted_marker", f"marker {found[0][1]!r} quoted in code, not counted", failure=False))
    return out
