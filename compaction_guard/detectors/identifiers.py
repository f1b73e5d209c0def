"""invented_identifiers and lost_identifiers (warnings): the exact strings an agent acts on.

OpenClaw's safeguard prompt asks the model to keep exact identifiers; nothing checks it.
An identifier here is a string whose every character matters and that a reader cannot
rebuild from the gist: a URL, an e-mail address, a path (two or more segments), a
ticket or record id (`SUP-77410`, `sum_3f9a…`, `PR #1893`), a hash (hex with letters and
digits), a version (`v2.3.1`), a figure with a unit (`38.2 GB`, `140 ms`, `12%`).

- invented_identifiers: identifiers in the summary found nowhere in the input (case and
  spacing aside; a path is found when the input holds it or a longer path ending in it).
  A small model that does not read the history writes `@gemma_cressida` and ticket
  numbers of its own. The reason lists a few.
- lost_identifiers: the share of the input's key identifiers (used twice or more, or in
  its last quarter) the summary kept, each weighted by how often and how late it occurs
  (the latest state matters most); a warning under `identifiers_min_retention`, naming a
  few that were dropped.
Both only where the input text is known. Warnings for now: on text nobody here wrote,
the thresholds for a failure are still to be measured (issue #12).
"""
from __future__ import annotations

import re
from typing import Optional

from ..findings import Finding

_ID_RE = re.compile(
    r"https?://[^\s<>()\"'`\]]+"                                   # URL
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"                                # e-mail
    r"|(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*[^\W\d_][\w.-]*"          # path: two segments or more, a letter in the last
    r"|\b[A-Z][A-Z0-9]{1,9}-\d{1,7}\b"                             # ticket: SUP-77410
    r"|\b[a-z]{2,}_[0-9a-f]{6,}\b"                                 # record id: sum_3f9a1c
    r"|#\d{2,}\b"                                                   # PR #1893, issue #42
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"        # hash
    r"|\bv?\d+\.\d+\.\d+(?:[-.][\w.]+)?\b|\bv\d+\.\d+\b"           # version
    r"|\b\d+(?:[.,]\d+)?\s?(?:ms|s|min|h|KB|MB|GB|TB|KiB|MiB|GiB|%)(?!\w)"   # figure with a unit
)
_EDGE = ".,;:!?)]}\"'`"


def identifiers(text: str) -> list:
    """The identifiers of `text`, in order, each once (stripped of trailing punctuation)."""
    seen, out = set(), []
    for m in _ID_RE.finditer(text):
        ident = m.group().rstrip(_EDGE)
        if len(ident) >= 3 and ident not in seen:
            seen.add(ident)
            out.append(ident)
    return out


def _norm(s: str) -> str:
    return "".join(s.lower().split())


def _found(ident: str, haystack: str) -> bool:
    """In the input, case and spacing aside; a path also as the end of a longer path."""
    return _norm(ident) in haystack


def _weights(input_text: str, ids: set) -> dict:
    """The input's key identifiers and their weights: those used twice or more, or in the
    last quarter of the history (the latest state); each occurrence weighs 1 to 2 by
    how late it comes. An identifier mentioned once, early, is incidental."""
    n = max(1, len(input_text))
    w, uses, late = {}, {}, set()
    for m in _ID_RE.finditer(input_text):
        ident = m.group().rstrip(_EDGE)
        if ident in ids:
            w[ident] = w.get(ident, 0.0) + 1.0 + m.start() / n
            uses[ident] = uses.get(ident, 0) + 1
            if m.start() >= 0.75 * n:
                late.add(ident)
    return {k: v for k, v in w.items() if uses[k] >= 2 or k in late}


def detect(content: str, settings, input_text: Optional[str]) -> list:
    if not input_text or len(content) < 8:
        return []
    out = []
    hay = _norm(input_text)
    mine = identifiers(content)
    invented = [i for i in mine if not _found(i, hay)]
    if len(invented) >= settings.identifiers_min_invented:
        shown = ", ".join(repr(i) for i in invented[:5]) + (f" and {len(invented) - 5} more" if len(invented) > 5 else "")
        out.append(Finding("invented_identifiers", f"{len(invented)} of the summary's {len(mine)} identifiers occur "
                           f"nowhere in the history: {shown}", failure=False,
                           figures={"invented": invented[:20], "identifiers": len(mine)}))
    theirs = identifiers(input_text)
    weights = _weights(input_text, set(theirs)) if len(theirs) >= settings.identifiers_min_input else {}
    if len(weights) >= settings.identifiers_min_input:
        summary = _norm(content)
        total = sum(weights.values()) or 1.0
        kept = sum(v for k, v in weights.items() if _norm(k) in summary)
        retention = kept / total
        if retention < settings.identifiers_min_retention:
            dropped = sorted((k for k in weights if _norm(k) not in summary), key=lambda k: -weights[k])
            out.append(Finding("lost_identifiers", f"the summary keeps {retention:.0%} of the history's identifiers "
                               f"(weighted by use and recency); dropped: {', '.join(repr(d) for d in dropped[:5])}",
                               failure=False, figures={"retention": round(retention, 3), "input_identifiers": len(theirs),
                                                       "dropped": dropped[:20]}))
    return out
