"""The guard's own L3 answers, known again when an agent stores them.

When `serve` (or `--compact`) answers a compaction at L3, the summary carries the guard's L3
note ("[TRUNCATED: ... compaction-resilience-guard L3 ...]"). An agent that stores it would then
fail the next check as `truncation_marker`, right after the guard fixed its compaction. The note
alone proves nothing (any model can write it), so the state keeps, for each L3 answer, a key of
its text (a SHA-256 of the text with its whitespace runs made one space, its headings' levels and
`<summary>` tags taken away), its length in those characters and where the note's name stands in it: no text. A
stored summary that holds the note is the guard's own when the span of it that starts that far
before the note, that long, has that key: whatever the agent wrapped round it (a preface, a file
list appended, its own line breaks, its headings nested a level deeper, the `<summary>` block
unwrapped).

Standard library only: the hooks use it.
"""
from __future__ import annotations

import hashlib
import re
from typing import Optional

NAME = "compaction-resilience-guard L3"          # in both L3 notes (summarizers.L3_NOTE, structured.NOTE)
_WS = re.compile(r"\s+")
_HEADING = re.compile(r"(?m)^[ \t]*#{1,6}(?=[ \t])")
_WRAPPER = re.compile(r"</?summary>", re.I)


def _plain(text: str) -> str:
    """The text with its whitespace runs one space, each Markdown heading's level and any `<summary>`
    tag taken away: what agents do to an answer they keep (OpenClaw nests a split turn's headings one
    level deeper; Claude Code keeps the inside of the `<summary>` block)."""
    return _WS.sub(" ", _HEADING.sub("#", _WRAPPER.sub(" ", text))).strip()


def _key(plain: str) -> str:
    return hashlib.sha256(plain.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def entry(summary: Optional[str], at: str) -> Optional[dict]:
    """What the state keeps of one L3 answer ({key, chars, note_at, at}), or None when it holds
    no L3 note (then nothing a check reads would take it for the guard's)."""
    plain = _plain(summary or "")
    where = plain.find(NAME)
    if where < 0:
        return None
    return {"key": _key(plain), "chars": len(plain), "note_at": where, "at": at}


def remember(state: dict, summary: Optional[str], at: str) -> None:
    """Add one L3 answer to `state["own_answers"]` (the state bounds the list when it is written:
    max_own_answers_kept)."""
    e = entry(summary, at)
    if e is None:
        return
    kept = [x for x in state.setdefault("own_answers", []) if x.get("key") != e["key"]]
    state["own_answers"] = kept + [e]


def valid(e) -> bool:
    return isinstance(e, dict) and isinstance(e.get("key"), str) and all(
        isinstance(e.get(k), int) and not isinstance(e.get(k), bool) and e[k] >= 0 for k in ("chars", "note_at"))


class Matcher:
    """Tells whether a stored summary is one of the guard's own L3 answers (`state`'s)."""

    def __init__(self, state: Optional[dict]):
        answers = (state or {}).get("own_answers") or []
        self.spans = {}          # (note_at, chars) -> {key}: one hash per span a note could start
        for e in answers:
            if valid(e):
                self.spans.setdefault((e["note_at"], e["chars"]), set()).add(e["key"])

    def __bool__(self) -> bool:
        return bool(self.spans)

    def __call__(self, content) -> bool:
        if not self.spans or not isinstance(content, str) or NAME not in content:
            return False
        plain = _plain(content)
        at = plain.find(NAME)
        while at >= 0:
            for (note_at, chars), keys in self.spans.items():
                start = at - note_at
                if start >= 0 and start + chars <= len(plain) and _key(plain[start:start + chars]) in keys:
                    return True
            at = plain.find(NAME, at + 1)
        return False
