"""Codex's compaction request as `serve --agent codex` reads it on the wire (Codex 0.171.0,
recorded: tests/recordings/codex/data/request-*.json).

With a custom model provider (`[model_providers.X] base_url = ...`, `wire_api = "responses"`)
Codex compacts locally, on the endpoint of every turn: a streamed `POST .../responses` with no
tools whose `input` is the history (its developer messages, the environment context, the user's
and the assistant's messages, tool calls and their output) and, last, a user message holding the
summarization prompt ("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff
summary ..."). Codex marks it itself: `client_metadata["x-codex-turn-metadata"]` (the same JSON
as the header of that name) says `"request_kind":"compaction"` and `"compaction":{...,
"implementation":"responses"}`; a turn says `"request_kind":"turn"`. That mark, not the
prompt's wording, is what is looked for: it is the same whatever prompt Codex sends.

The built-in `openai` provider compacts remotely instead (`POST /responses/compact`, or an input
item `{"type": "compaction_trigger"}` answered by an opaque encrypted `compaction` item): nothing
there can be checked, and it is relayed untouched (None here; serve/responses.py `generation`
leaves `/responses/compact` alone).

Read here: the history as turns (`[User]:`, `[Assistant]:`, `[Assistant tool calls]:`, `[Tool
result]:`), Codex's own items (developer messages: its system prompt, skills, permissions, hook
context; the `<environment_context>` message) left out; the summary of a previous compaction
(the user message that starts with Codex's fixed handoff prefix) as the summary replaced; the
prompt as the instructions.
"""
from __future__ import annotations

import json
from typing import Optional

from ..base import RequestShape

# in the body of every compaction request Codex 0.171 sends (client_metadata's JSON, escaped
# once more as a JSON string): found by a byte search, then read properly
MARKER = b'request_kind\\":\\"compaction\\"'
_LOCAL = "responses"            # compaction.implementation of a local compaction (the only one seen)


def metadata(body: dict) -> dict:
    """The turn metadata Codex put in the body (client_metadata["x-codex-turn-metadata"])."""
    cm = body.get("client_metadata")
    raw = cm.get("x-codex-turn-metadata") if isinstance(cm, dict) else None
    try:
        meta = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _turns(items: list) -> tuple:
    """(turns, previous summary or None): each item as (speaker, text)."""
    from .store import PREFIX, _text, summary_of
    out, previous = [], None
    for it in items:
        if not isinstance(it, dict):
            continue
        kind = it.get("type", "message")
        if kind == "message":
            role = it.get("role")
            text = _text(it.get("content")).strip()
            if role not in ("user", "assistant") or not text or text.startswith("<environment_context>"):
                continue
            if role == "user" and text.startswith(PREFIX):
                previous = summary_of(text).strip() or None
                continue
            out.append(("User" if role == "user" else "Assistant", text))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            args = it.get("arguments") or it.get("input") or it.get("action") or ""
            args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            out.append(("Assistant tool calls", f"{it.get('name') or kind} {args[:4000]}"))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            res = it.get("output")
            if isinstance(res, dict):
                res = res.get("content") if isinstance(res.get("content"), str) else json.dumps(res, ensure_ascii=False)
            elif isinstance(res, list):
                res = _text(res)
            if isinstance(res, str) and res.strip():
                out.append(("Tool result", res.strip()[:8000]))
    return out, previous


def read(body: dict) -> Optional[RequestShape]:
    """The compaction request in `body` read (None when it is no local compaction)."""
    meta = metadata(body)
    if meta.get("request_kind") != "compaction":
        return None
    comp = meta.get("compaction")
    if isinstance(comp, dict) and comp.get("implementation", _LOCAL) != _LOCAL:
        return None                 # a remote compaction: relayed untouched
    items = body.get("input")
    if not isinstance(items, list) or not items or any(isinstance(i, dict) and i.get("type") == "compaction_trigger"
                                                       for i in items):
        return None
    last = items[-1]
    if not isinstance(last, dict) or last.get("role") != "user" or last.get("type", "message") != "message":
        return None
    from .store import _text
    prompt = _text(last.get("content")).strip()
    if not prompt:
        return None
    turns, previous = _turns(items[:-1])
    history = "\n\n".join(f"[{who}]: {text}" for who, text in turns)
    return RequestShape(history, previous, prompt)
