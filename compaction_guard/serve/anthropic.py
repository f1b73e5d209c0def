"""Anthropic Messages (`POST /v1/messages`), as the guard speaks it: an answer read whole
(`parse_answer`) or from its event stream (`StreamReader`), rendered whole (`body`) or as its
event sequence (`stream`), and an error in its shape."""
from __future__ import annotations

import uuid

from .protocol import pieces, sse

VERSION = "2023-06-01"


def parse_answer(data) -> tuple:
    """(text, reasoning characters, finish: None | "cut_off" | "refusal") of a message."""
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    blocks = data.get("content") if isinstance(data.get("content"), list) else []
    text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    thinking = sum(len(b.get("thinking", "") or "") for b in blocks if isinstance(b, dict)
                   and b.get("type") in ("thinking", "redacted_thinking"))
    return text, thinking, {"max_tokens": "cut_off", "refusal": "refusal"}.get(data.get("stop_reason"))


def body(out, model: str) -> dict:
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": out.summary}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": out.input_tokens, "output_tokens": out.output_tokens}}


def stream(out, model: str, include_usage: bool = False):
    mid = f"msg_{uuid.uuid4().hex[:24]}"
    yield sse("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": out.input_tokens, "output_tokens": 0}}})
    yield sse("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}})
    for piece in pieces(out.summary):
        yield sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": piece}})
    yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": out.output_tokens}})
    yield sse("message_stop", {"type": "message_stop"})


def keepalive() -> bytes:
    return b'event: ping\ndata: {"type": "ping"}\n\n'


def stream_error(message: str) -> bytes:
    return sse("error", error_body(500, message))


def error_body(status: int, message: str) -> dict:
    kind = {401: "authentication_error", 413: "request_too_large", 400: "invalid_request_error",
            429: "rate_limit_error", 502: "api_error", 529: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def usage_asked(body: dict) -> bool:
    return False
