"""Anthropic Messages as a scripted model speaks it, the protocol of Claude Code: POST /v1/messages, whole
or streamed (message_start, content_block_start/delta/stop, message_delta, message_stop; a tool call's
input streamed as JSON pieces), POST /v1/messages/count_tokens, errors as the Anthropic API sends them.

    with ScriptedAnthropic(summaries=[...], input_tokens=30000) as server:   # ANTHROPIC_BASE_URL=server.url
"""
from __future__ import annotations

import json
import uuid

from .base import Answer, ScriptedModel, pieces, sse

REPLY = "Noted."
PIECE = 200


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def is_compaction(body: dict) -> bool:
    """Claude Code's compaction request: its summary instructions appended to the last user message
    ("create a detailed summary of the conversation ... <summary>")."""
    msgs = body.get("messages") or []
    last = text_of(msgs[-1].get("content")) if msgs and isinstance(msgs[-1], dict) else ""
    low = last.lower()
    return "summary of the conversation" in low and ("<summary>" in low or "summary:" in low)


def usage(input_tokens: int, output_tokens: int = 40) -> dict:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}


def block(a: Answer) -> dict:
    if a.call:
        return {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": a.call[0], "input": a.call[1]}
    return {"type": "text", "text": a.text}


def message(content: list, model, use: dict, stop: str = "end_turn") -> dict:
    return {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None, "usage": use}


def stream(a: Answer, model, use: dict) -> bytes:
    b = block(a)
    stop = "tool_use" if a.call else "end_turn"
    start = dict(message([], model, dict(use, output_tokens=1)), stop_reason=None)
    events = [{"type": "message_start", "message": start}]
    if a.call:
        events.append({"type": "content_block_start", "index": 0, "content_block": dict(b, input={})})
        events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
                   for p in pieces(json.dumps(a.call[1]), 16)]
    else:
        events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
                   for p in pieces(a.text, PIECE)]
    events += [{"type": "content_block_stop", "index": 0},
               {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": use["output_tokens"]}},
               {"type": "message_stop"}]
    return sse(events, named=True)


def error_body(a: Answer) -> dict:
    return {"type": "error", "error": a.error or {"type": "overloaded_error", "message": "Overloaded"}}


def answer(h, a: Answer, body: dict, use: dict) -> None:
    """Send `a` to the request `body`, streamed when it asks."""
    model = body.get("model") or "claude-sonnet-4-5"
    if a.status != 200:
        return h.send_json(a.status, error_body(a))
    if body.get("stream"):
        return h.send_sse(stream(a, model, use))
    h.send_json(200, message([block(a)], model, use, "tool_use" if a.call else "end_turn"))


class ScriptedAnthropic(ScriptedModel):
    """A compaction request (`is_compaction`) gets the next of `summaries` (the last one repeating); any
    other request the next of `replies` (else `reply`). `input_tokens`: the usage reported for ordinary
    turns (large: Claude Code then compacts on its own). Every POST is kept in `requests` (path, headers
    without the key, JSON body; in memory only also `key`, the credential it carried, and `raw`, its
    bytes) and appended to `record` when given."""

    def __init__(self, summaries=None, reply: str = REPLY, record=None, input_tokens: int = 120, replies=None):
        super().__init__(record)
        self.summaries = list(summaries or ["<analysis>ok</analysis>\n<summary>\n1. Primary Request: none\n</summary>"])
        self.reply = reply
        self.replies = list(replies or [])
        self.input_tokens = input_tokens
        self.listen()

    def on_get(self, h) -> None:
        h.send_json(200, {"data": [], "has_more": False})

    def on_post(self, h) -> None:
        body = h.read_json({})
        key = h.credential("x-api-key", "authorization")
        self.keep({"path": h.path, "headers": h.public_headers(), "body": body}, key,
                  memory={"key": key, "raw": h.raw()})
        if h.route.endswith("/count_tokens"):
            return h.send_json(200, {"input_tokens": self.input_tokens})
        compaction = is_compaction(body)
        if compaction:
            item = self.next_of(self.summaries)
        else:
            item = self.next_of(self.replies) if self.replies else self.reply
        answer(h, Answer.of(item), body, usage(900 if compaction else self.input_tokens))
