"""truncation_marker: text that says a deterministic fallback, not a model, wrote it.

Each marker is a named pattern with where it comes from (REFERENCE.md section 2).
A marker quoted inside `inline code` is talk about markers, not a fallback: warning.
"""
from __future__ import annotations

import re

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
]
MARKER_RE = re.compile("|".join(f"(?P<{n.replace('-', '_')}>{p})" for n, p in MARKER_PATTERNS))
_QUICK = ("[TRUNCATED", "[FALLBACK", "[...", "[Truncated", "[LCM", "[Capped")


def _in_inline_code(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before = text[line_start:start]
    after = text[end:line_end]
    return before.count("`") % 2 == 1 and "`" in after


def find_markers(text: str) -> list:
    """[(name, matched text, quoted_in_code)] for every marker in `text`."""
    if "[" not in text or not any(q in text for q in _QUICK):
        return []
    return [(m.lastgroup.replace("_", "-"), m.group(0), _in_inline_code(text, m.start(), m.end()))
            for m in MARKER_RE.finditer(text)]


def detect(content: str, settings, allow_own_l3: bool = False) -> list:
    found = find_markers(content)
    if allow_own_l3:      # the chain judging its own L3: its note is its own, not a marker to report
        found = [(n, t, q) for n, t, q in found if not (n == "skill-truncated" and "compaction-resilience-guard" in t)]
    live = [(n, t) for n, t, quoted in found if not quoted]
    if live:
        name, text = live[0]
        more = f" and {len(live) - 1} more" if len(live) > 1 else ""
        return [Finding("truncation_marker",
                        f"deterministic fallback marker {text!r} ({name}){more}: a fallback, not a model, wrote this "
                        "summary (counted as L3); check why the summarizer failed",
                        figures={"markers": [n for n, _ in live]})]
    if found:
        return [Finding("quoted_marker", f"marker {found[0][1]!r} quoted in code, not counted", failure=False)]
    return []
