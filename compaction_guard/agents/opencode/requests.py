"""opencode's compaction requests as `serve` reads them (opencode 1.18.33, read from a live run:
tests/recordings/opencode/data/request-*.json).

One user message: "Here is the conversation so far:" and the history fenced in
`<conversation>...</conversation>` (turns `[User]:`, `[Assistant]:`, `[Assistant tool call]:`,
`[Tool result]:`); when a summary came before, it follows in `<prior-summary>...</prior-summary>`
("anything you do not carry into the new summary is lost"); then the instructions with the
Markdown structure to answer in inside `<template>...</template>` (## Objective, ## Important
Details, ## Work State, ## Next Move, ## Relevant Files): its headings are the contract.
"""
from __future__ import annotations

import re
from typing import Optional

from ..base import RequestShape

_CONVERSATION_RE = re.compile(r"<conversation>\n?(.*?)\n?</conversation>", re.S)
_PRIOR_RE = re.compile(r"<prior-summary>\n?(.*?)\n?</prior-summary>", re.S)
_TEMPLATE_RE = re.compile(r"<template>.*?</template>", re.S)


def is_opencode(text: str) -> bool:
    """opencode's own marks: the conversation fence with its template or its prior summary."""
    return "<conversation>" in text and ("<template>" in text or "<prior-summary>" in text)


def read(text: str, last_user: str) -> Optional[RequestShape]:
    if not is_opencode(text):
        return None
    fenced = _CONVERSATION_RE.findall(text)
    history = "\n\n".join(f.strip() for f in fenced)
    m = _PRIOR_RE.search(text)
    previous = m.group(1).strip() if m and m.group(1).strip() else None
    instructions = _PRIOR_RE.sub(" ", _CONVERSATION_RE.sub(" ", text))
    return RequestShape(history, previous, instructions, None)
