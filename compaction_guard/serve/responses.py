"""OpenAI Responses API (`POST .../responses`), as the guard speaks it in front of Codex: an
answer read whole (`parse_answer`: a Response object) or from its event stream (`read_stream`),
rendered whole (`body`) or as its event sequence (`stream`), an error in its shape, and L2 made
on the client's own request (`aggressive`).

What counts as the answer is what Codex keeps (codex-rs, codex-api/src/sse/responses.rs): the
`message` items of `response.output_item.done` events, the last assistant one; a stream is whole
only with `response.completed` ("stream closed before response.completed" otherwise), and
`response.failed` is an error. Codex's SSE reader skips comment lines without resetting its idle
timer (`stream_idle_timeout_ms`), so the keep-alive is an event of a type it ignores."""
from __future__ import annotations

import time
import uuid

from .protocol import body_model as model_of, pieces, sse, sse_data, stream_field as streamed  # noqa: F401


def generation(path: str) -> bool:
    """Whether `path` is where a model answers (`.../responses`; not `/responses/compact`,
    Codex's remote compaction, which the guard cannot check and relays untouched)."""
    return path.rstrip("/").endswith("/responses")


def _message_text(item: dict) -> tuple:
    """(text, refused) of an output `message` item."""
    parts = item.get("content") if isinstance(item.get("content"), list) else []
    text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "output_text"
                   and isinstance(p.get("text"), str))
    return text, any(isinstance(p, dict) and p.get("type") == "refusal" for p in parts)


def _reasoning_chars(item: dict) -> int:
    n = 0
    for key in ("summary", "content"):
        for p in item.get(key) if isinstance(item.get(key), list) else []:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                n += len(p["text"])
    if isinstance(item.get("encrypted_content"), str):
        n += len(item["encrypted_content"]) // 4 or 1
    return n


def _of_items(items: list, status=None, incomplete=None) -> tuple:
    """(text, reasoning characters, finish) of a response's output items: the last assistant
    message's text (what Codex keeps), reasoning counted, the finish mapped."""
    text, refused, reasoning = "", False, 0
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message" and item.get("role", "assistant") == "assistant":
            text, refused = _message_text(item)
        elif item.get("type") == "reasoning":
            reasoning += _reasoning_chars(item)
    finish = None
    if refused:
        finish = "refusal"
    elif status == "incomplete":
        reason = incomplete.get("reason") if isinstance(incomplete, dict) else None
        finish = "refusal" if reason == "content_filter" else "cut_off"
    return text, reasoning, finish


def parse_answer(data) -> tuple:
    """(text, reasoning characters, finish: None | "cut_off" | "refusal") of a Response."""
    if not isinstance(data, dict) or not isinstance(data.get("output"), list):
        raise ValueError("the answer is not a Response object (no output list)")
    return _of_items(data["output"], data.get("status"), data.get("incomplete_details"))


def read_stream(data: bytes) -> tuple:
    """(text, reasoning characters, finish, error) of a Responses event stream as it came: the
    items of `response.output_item.done` read as `parse_answer` reads a Response's output;
    `error` the message of a `response.failed` or `error` event, or why the stream is not whole
    (it ended before `response.completed` or `response.incomplete`), else None."""
    items, error, end = [], None, None
    for d in sse_data(data):
        kind = d.get("type") if isinstance(d, dict) else None
        if kind == "response.output_item.done" and isinstance(d.get("item"), dict):
            items.append(d["item"])
        elif kind in ("response.completed", "response.incomplete"):
            end = d.get("response") if isinstance(d.get("response"), dict) else {}
        elif kind == "response.failed":
            resp = d.get("response") if isinstance(d.get("response"), dict) else {}
            err = resp.get("error") if isinstance(resp.get("error"), dict) else {}
            error = f"response.failed: {err.get('code') or ''} {err.get('message') or ''}".strip()
        elif kind == "error":
            error = f"error: {d.get('code') or ''} {d.get('message') or ''}".strip()
    if error is None and end is None:
        error = "the stream ended before response.completed"
    end = end or {}
    text, reasoning, finish = _of_items(items, end.get("status"), end.get("incomplete_details"))
    return text, reasoning, finish, error


def _usage(out) -> dict:
    return {"input_tokens": out.input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": out.input_tokens + out.output_tokens}


def _message(out, mid: str, status: str = "completed") -> dict:
    return {"type": "message", "id": mid, "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": out.summary, "annotations": []}]}


def body(out, model: str) -> dict:
    return {"id": f"resp_{uuid.uuid4().hex[:24]}", "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": model, "output": [_message(out, f"msg_{uuid.uuid4().hex[:24]}")],
            "usage": _usage(out)}


def stream(out, model: str, include_usage: bool = False):
    """The answer as the Responses API streams one message: created, the item added, its text
    in deltas, the item done, completed with the usage."""
    rid, mid = f"resp_{uuid.uuid4().hex[:24]}", f"msg_{uuid.uuid4().hex[:24]}"
    resp = {"id": rid, "object": "response", "created_at": int(time.time()), "status": "in_progress",
            "model": model, "output": []}
    seq = iter(range(1 << 30))

    def event(kind: str, **fields) -> bytes:
        return sse(kind, {"type": kind, "sequence_number": next(seq), **fields})
    yield event("response.created", response=resp)
    yield event("response.in_progress", response=resp)
    yield event("response.output_item.added", output_index=0, item=dict(_message(out, mid, "in_progress"), content=[]))
    part = {"type": "output_text", "text": "", "annotations": []}
    yield event("response.content_part.added", item_id=mid, output_index=0, content_index=0, part=part)
    for piece in pieces(out.summary):
        yield event("response.output_text.delta", item_id=mid, output_index=0, content_index=0, delta=piece)
    yield event("response.output_text.done", item_id=mid, output_index=0, content_index=0, text=out.summary)
    yield event("response.content_part.done", item_id=mid, output_index=0, content_index=0,
                part=dict(part, text=out.summary))
    item = _message(out, mid)
    yield event("response.output_item.done", output_index=0, item=item)
    yield event("response.completed", response=dict(resp, status="completed", output=[item], usage=_usage(out)))


def keepalive() -> bytes:
    # an event (not a comment line): Codex's idle timer restarts on events only; it ignores the type
    return b'event: keepalive\ndata: {"type":"keepalive"}\n\n'


def note(text: str) -> bytes:
    return f": {text}\n\n".encode()


def stream_error(message: str) -> bytes:
    return sse("response.failed", {"type": "response.failed", "response": {
        "id": f"resp_{uuid.uuid4().hex[:24]}", "object": "response", "status": "failed", "output": [],
        "error": {"code": "server_error", "message": message}}})


def error_body(status: int, message: str) -> dict:
    kind = {401: "invalid_api_key", 413: "request_too_large", 429: "rate_limit_exceeded"}.get(status)
    return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                      "param": None, "code": kind or ("server_error" if status >= 500 else "invalid_request")}}


def usage_asked(body: dict) -> bool:
    return False


def aggressive(body: dict, instruction: str, max_tokens: int, temperature=None, reasoning_off: bool = False) -> dict:
    """L2 on the client's own request: the instruction added as a last `input_text` of its last
    user message (the prompt; the cached prefix before it kept); `max_output_tokens` capped
    where the client set one (it counts reasoning too: none is imposed where it set none); the
    reasoning effort lowered where the first answer was reasoning alone. No temperature:
    reasoning models refuse one."""
    b = dict(body)
    items = list(b.get("input") or []) if isinstance(b.get("input"), list) else []
    last = next((i for i in range(len(items) - 1, -1, -1) if isinstance(items[i], dict)
                 and items[i].get("type", "message") == "message" and items[i].get("role") == "user"), None)
    if last is not None:
        msg = dict(items[last])
        content = msg.get("content")
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else list(content or [])
        msg["content"] = parts + [{"type": "input_text", "text": instruction}]
        items[last] = msg
        b["input"] = items
    elif isinstance(b.get("input"), str):
        b["input"] = f"{b['input']}\n\n{instruction}"
    if isinstance(b.get("max_output_tokens"), int):
        b["max_output_tokens"] = min(b["max_output_tokens"], max_tokens)
    if reasoning_off and isinstance(b.get("reasoning"), dict):
        b["reasoning"] = dict(b["reasoning"], effort="low")
    return b
