"""Anthropic Messages (`POST /v1/messages`), as the guard speaks it: an answer read whole
(`parse_answer`) or from its event stream (`StreamReader`), rendered whole (`body`) or as its
event sequence (`stream`), and an error in its shape."""
from __future__ import annotations

import uuid

from .protocol import body_model as model_of, pieces, sse, sse_data, stream_field as streamed  # noqa: F401

VERSION = "2023-06-01"


def generation(path: str) -> bool:
    """Whether `path` is where a model answers (not `/v1/messages/count_tokens`)."""
    return path.rstrip("/").endswith("/messages")


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


def note(text: str) -> bytes:
    return f": {text}\n\n".encode()


def stream_error(message: str) -> bytes:
    return sse("error", error_body(500, message))


def error_body(status: int, message: str) -> dict:
    kind = {401: "authentication_error", 413: "request_too_large", 400: "invalid_request_error",
            429: "rate_limit_error", 502: "api_error", 529: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def usage_asked(body: dict) -> bool:
    return False


def read_stream(data: bytes) -> tuple:
    """(text, reasoning characters, finish, error) of a Messages event stream as it came: the
    text blocks' deltas joined, thinking counted, the stop reason mapped as `parse_answer`
    does; `error` the message of an `error` event, or why the stream is not whole (it ended
    before `message_stop`), else None."""
    text, thinking, stop, error, whole = [], 0, None, None, False
    for d in sse_data(data):
        kind = d.get("type") if isinstance(d, dict) else None
        if kind == "content_block_delta" and isinstance(d.get("delta"), dict):
            delta = d["delta"]
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                text.append(delta["text"])
            elif delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
                thinking += len(delta["thinking"])
        elif kind == "content_block_start" and isinstance(d.get("content_block"), dict):
            block = d["content_block"]
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                text.append(block["text"])
        elif kind == "message_delta" and isinstance(d.get("delta"), dict):
            stop = d["delta"].get("stop_reason") or stop
        elif kind == "message_stop":
            whole = True
        elif kind == "error":
            err = d.get("error") if isinstance(d.get("error"), dict) else {}
            error = f"{err.get('type', 'error')}: {err.get('message', '')}".strip()
    if error is None and not whole:
        error = "the stream ended before message_stop"
    return "".join(text), thinking, {"max_tokens": "cut_off", "refusal": "refusal"}.get(stop), error


def aggressive(body: dict, instruction: str, max_tokens: int, temperature=None, reasoning_off: bool = False) -> dict:
    """L2 on the client's own request: the instruction added as a last text block of its last
    user message (the prompt-cache prefix before it kept), max_tokens capped (above a thinking
    budget, which it must exceed), thinking turned off only where the first answer was
    reasoning alone (with the context-management edits that need it)."""
    b = dict(body)
    msgs = list(b.get("messages") or [])
    if msgs and isinstance(msgs[-1], dict):
        last = dict(msgs[-1])
        content = last.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        last["content"] = blocks + [{"type": "text", "text": instruction}]
        msgs[-1] = last
        b["messages"] = msgs
    thinking = b.get("thinking") if isinstance(b.get("thinking"), dict) else None
    budget = thinking.get("budget_tokens") if thinking and thinking.get("type") == "enabled" else None
    if reasoning_off and thinking is not None and thinking.get("type") != "disabled":
        b["thinking"] = {"type": "disabled"}
        budget = None
        cm = b.get("context_management")
        if isinstance(cm, dict) and isinstance(cm.get("edits"), list):
            edits = [e for e in cm["edits"] if not (isinstance(e, dict) and str(e.get("type", "")).startswith(
                "clear_thinking"))]
            if edits:
                b["context_management"] = dict(cm, edits=edits)
            else:
                b.pop("context_management", None)
        if temperature is not None:
            b["temperature"] = temperature
    cap = max_tokens + (budget if isinstance(budget, int) else 0)
    if isinstance(b.get("max_tokens"), int):
        b["max_tokens"] = min(b["max_tokens"], cap)
    else:
        b["max_tokens"] = cap
    return b
