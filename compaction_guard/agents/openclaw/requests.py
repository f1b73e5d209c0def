"""OpenClaw's compaction requests as `serve` reads them, and those of lossless-claw, its
context-engine plugin.

pi (OpenClaw's agent core) fences the history: `<conversation>...</conversation>`, then
optionally `<previous-summary>...</previous-summary>`, then its English instructions. The
safeguard mode puts the summary it replaces in a `<previous-compaction-summary>` turn
inside the conversation, after a line asking to re-distill it, and when its audit rejected
the last answer it retries once saying "Previous summary failed quality checks (...)".

lossless-claw (1.0, src/summarize.ts) asks for a leaf summary of `<conversation_segment>...`
(its normal or aggressive policy), or a condensed one of the summaries in
`<conversation_to_condense>...`, with the summary before it in `<previous_context>` ("(none)"
when there is none); every prompt asks the answer to end with exactly "Expand for details
about: <comma-separated list ...>" (the contract's `footer`).
"""
from __future__ import annotations

import re
from typing import Optional

from ...contract import instructions_of
from ..base import RequestShape

_CONVERSATION_RE = re.compile(r"<conversation>\s*(.*?)\s*</conversation>", re.S)
# the summary being replaced; a reply that gives it back unchanged is `stale`
_PREVIOUS_RE = re.compile(r"<(previous-summary|previous-compaction-summary)>\s*(.*?)\s*</\1>", re.S)
_REDISTILL_RE = re.compile(r"^Previous compaction summary to re-distill[^\n]*\n+")
_REJECTED_RE = re.compile(r"Previous summary failed quality checks \(([^)\n]*)\)")
_EMPTY_USER_RE = re.compile(r"^\[User[^\]\n]*\]: *\n*(?=\n\[|\Z)", re.M)


def previous_summary(text: str) -> Optional[str]:
    m = _PREVIOUS_RE.search(text)
    if not m:
        return None
    body = _REDISTILL_RE.sub("", m.group(2)).strip()
    return body or None


_LCM_HISTORY_RE = re.compile(r"<(conversation_segment|conversation_to_condense)>\n?(.*?)\n?</\1>", re.S)
_LCM_PREVIOUS_RE = re.compile(r"<previous_context>\n?(.*?)\n?</previous_context>", re.S)


def read_lcm(text: str) -> Optional[RequestShape]:
    """A lossless-claw summary request's shape, or None."""
    m = _LCM_HISTORY_RE.search(text)
    if m is None:
        return None
    p = _LCM_PREVIOUS_RE.search(text)
    prev = p.group(1).strip() if p else None
    if prev in ("", "(none)"):
        prev = None
    instructions = _LCM_PREVIOUS_RE.sub(" ", _LCM_HISTORY_RE.sub(" ", text))
    return RequestShape(m.group(2).strip(), prev, instructions, None)


def read(text: str, last_user: str) -> Optional[RequestShape]:
    """The request's shape when it is fenced as pi fences it, or carries a previous summary in
    either of OpenClaw's tags, or is lossless-claw's; else None (another agent's, or a plain
    request)."""
    fenced = _CONVERSATION_RE.findall(text)
    prev = previous_summary(text)
    if not fenced and prev is None:
        return read_lcm(text)
    if fenced:
        history = _PREVIOUS_RE.sub("", "\n\n".join(fenced))
        history = _EMPTY_USER_RE.sub("", history).strip()
        instructions = instructions_of(text)
    else:
        history = _PREVIOUS_RE.sub("", text).strip()
        instructions = last_user
    m = _REJECTED_RE.search(instructions)
    return RequestShape(history, prev, instructions, m.group(1) if m else None)
