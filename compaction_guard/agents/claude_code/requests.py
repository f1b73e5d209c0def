"""Claude Code's compaction request as `serve --agent claude-code` reads it on the wire
(Claude Code 2.1.328, recorded: tests/data/claude-code/request-*.json).

Claude Code compacts on the endpoint of every turn: an ordinary `POST /v1/messages?beta=true`
(its tools, system prompt and cache breakpoints as in any turn) whose last user message ends
with its summary prompt, a text block starting "CRITICAL: Respond with TEXT ONLY" and holding
"Your task is to create a detailed summary of " (the whole conversation: "of the conversation
so far"; a partial compact: "of the RECENT portion of the conversation" or "of this
conversation. This summary will be placed at the start of a continuing session"), then the
sections it wants (`1. Primary Request and Intent: ...`) and `<analysis>` + `<summary>`. The
same message may hold the tool results of the turn before.

Read here: the conversation before the prompt as turns (`[User]:`, `[Assistant]:`, `[Assistant
tool calls]:`, `[Tool result]:`), its `<system-reminder>` blocks (Claude Code's, not the user's)
left out; the summary a previous compaction left (the first user message, "This session is
being continued from a previous conversation ...") as the summary replaced; the prompt as the
instructions.
"""
from __future__ import annotations

import json
import re
from typing import Optional

from ..base import RequestShape

# in every compaction prompt of Claude Code 2.1 (read from the binary: three variants)
MARKER = b"Your task is to create a detailed summary of "
_MARKER_TEXT = MARKER.decode()
_CONTINUED = "This session is being continued from a previous conversation"
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)


def _blocks(content) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _result_text(block: dict) -> str:
    c = block.get("content")
    if isinstance(c, list):
        c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict) and isinstance(x.get("text"), str))
    return c if isinstance(c, str) else ""


def _turns(messages: list) -> tuple:
    """(turns, previous summary or None): each message's blocks as (speaker, text)."""
    from .store import unwrap
    out, previous = [], None
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            continue
        user = m["role"] == "user"
        for b in _blocks(m.get("content")):
            kind = b.get("type")
            if kind == "text" and isinstance(b.get("text"), str):
                text = _REMINDER_RE.sub("", b["text"]).strip()
                if user and text.startswith(_CONTINUED):
                    previous = unwrap(b["text"]) or None
                elif text:
                    out.append(("User" if user else "Assistant", text))
            elif kind == "tool_use":
                args = json.dumps(b.get("input"), ensure_ascii=False)[:4000]
                out.append(("Assistant tool calls", f"{b.get('name')} {args}"))
            elif kind == "tool_result":
                text = _REMINDER_RE.sub("", _result_text(b)).strip()
                if text:
                    out.append(("Tool result", text[:8000]))
    return out, previous


def prompt_of(body: dict) -> Optional[str]:
    """The summary prompt when `body` is Claude Code's compaction request (its last message
    a user message whose last text block holds the marker), else None."""
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs or not isinstance(msgs[-1], dict) or msgs[-1].get("role") != "user":
        return None
    texts = [b.get("text") for b in _blocks(msgs[-1].get("content")) if b.get("type") == "text"
             and isinstance(b.get("text"), str)]
    return texts[-1] if texts and _MARKER_TEXT in texts[-1] else None


def read(body: dict) -> Optional[RequestShape]:
    """The compaction request in `body` read (None when it is no compaction)."""
    prompt = prompt_of(body)
    if prompt is None:
        return None
    msgs = body["messages"]
    last = dict(msgs[-1], content=[b for b in _blocks(msgs[-1].get("content"))
                                   if not (b.get("type") == "text" and b.get("text") == prompt)])
    turns, previous = _turns(list(msgs[:-1]) + [last])
    history = "\n\n".join(f"[{who}]: {text}" for who, text in turns)
    return RequestShape(history, previous, prompt, None)
