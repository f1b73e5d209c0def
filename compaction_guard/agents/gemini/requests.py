"""Gemini CLI's compression requests as `serve --agent gemini` reads them on the wire (Gemini
CLI 0.61.0, recorded: tests/recordings/gemini/data/request-*.json).

Gemini CLI compresses on the endpoint of every turn (`GOOGLE_GEMINI_BASE_URL`), in two
non-streamed `POST /v1beta/models/<model>:generateContent` calls whose system instruction is its
compression prompt ("You are a specialized system component responsible for distilling chat
history into a structured XML <state_snapshot>. ... The structure MUST be as follows:
<state_snapshot> <overall_goal> ..."):
1. `contents` = the older part of the history, then a user turn "Generate a new <state_snapshot>
   based on the provided history. ..." (or "A previous <state_snapshot> exists ...");
2. the verify call: the same history, the first answer as a `model` turn, then "Critically
   evaluate the <state_snapshot> you just generated. ... generate a FINAL, improved
   <state_snapshot>. Otherwise, repeat the exact same <state_snapshot> again." Gemini CLI keeps
   this answer (the first only when it is empty, which its own retries never let happen).
Both are compactions here, each checked: the verify call's answer is what is stored, so it is
checked against the same history; the first answer it quotes (the upstream's, or the guard's
own L3 when the first call failed) is its fallback: when the verify answer fails at L1 and L2,
L3 repeats it (as the prompt asks when there is nothing to improve), so the answer the guard
replaced survives the call that re-asks for it.

Read here: the history as turns (`[User]:`, `[Assistant]:`, `[Assistant tool calls]:`, `[Tool
result]:`), Gemini CLI's own parts (the `<session_context>` it opens every session with, its
"Got it. Thanks for the additional context!") left out; the `<state_snapshot>` of a previous
compression (a user part that starts with it) as the summary replaced; the system instruction
and the last user turn as the instructions.
"""
from __future__ import annotations

import json
from typing import Optional

from ..base import RequestShape

# in the system instruction of both compression calls of Gemini CLI 0.61
MARKER = b"distilling chat history into a structured XML <state_snapshot>"
_MARKER_TEXT = MARKER.decode()
VERIFY = "Critically evaluate the <state_snapshot>"
ACK = "Got it. Thanks for the additional context!"


def _parts(content) -> list:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(content) -> str:
    return "".join(p["text"] for p in _parts(content) if isinstance(p.get("text"), str) and not p.get("thought"))


def system_text(body: dict) -> str:
    si = body.get("systemInstruction")
    if si is None and isinstance(body.get("config"), dict):
        si = body["config"].get("systemInstruction")
    if isinstance(si, str):
        return si
    return "\n".join(p["text"] for p in _parts(si) if isinstance(p.get("text"), str))


def _turns(contents: list) -> tuple:
    """(turns, previous summary or None): each part as (speaker, text)."""
    out, previous = [], None
    for c in contents:
        if not isinstance(c, dict):
            continue
        user = c.get("role", "user") == "user"
        for p in _parts(c):
            if isinstance(p.get("text"), str) and not p.get("thought"):
                text = p["text"].strip()
                if not text or text.startswith("<session_context>") or (not user and text == ACK):
                    continue
                if user and text.startswith("<state_snapshot>"):
                    previous = text
                    continue
                out.append(("User" if user else "Assistant", text))
            elif isinstance(p.get("functionCall"), dict):
                call = p["functionCall"]
                out.append(("Assistant tool calls",
                            f"{call.get('name')} {json.dumps(call.get('args'), ensure_ascii=False)[:4000]}"))
            elif isinstance(p.get("functionResponse"), dict):
                resp = p["functionResponse"].get("response")
                text = resp.get("output") if isinstance(resp, dict) and isinstance(resp.get("output"), str) \
                    else json.dumps(resp, ensure_ascii=False)
                if text.strip() and ("Tool result", text.strip()[:8000]) != (out[-1] if out else None):
                    out.append(("Tool result", text.strip()[:8000]))
    return out, previous


def read(body: dict) -> Optional[RequestShape]:
    """The compression request in `body` read (None when it is none)."""
    system = system_text(body)
    if _MARKER_TEXT not in system:
        return None
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents or not isinstance(contents[-1], dict) \
            or contents[-1].get("role", "user") != "user":
        return None
    prompt = _text(contents[-1]).strip()
    if not prompt:
        return None
    fallback, history = None, contents[:-1]
    if VERIFY in prompt and len(contents) >= 2 and isinstance(contents[-2], dict) \
            and contents[-2].get("role") == "model":
        fallback, history = _text(contents[-2]).strip() or None, contents[:-2]
    turns, previous = _turns(history)
    text = "\n\n".join(f"[{who}]: {t}" for who, t in turns)
    return RequestShape(text, previous, f"{system}\n\n{prompt}", None, fallback)
