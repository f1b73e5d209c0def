"""What the wire protocols share: a server-sent event, a text cut into pieces for a stream,
the guard's response headers, and an error in the client's own protocol."""
from __future__ import annotations

import json
from typing import Optional


def sse(event: Optional[str], data) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def sse_data(data: bytes):
    """Each event's `data:` of a server-sent event stream as it came, parsed as JSON (an event
    whose data is not JSON is left out)."""
    for event in data.replace(b"\r\n", b"\n").split(b"\n\n"):
        payload = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
        if payload:
            try:
                yield json.loads(payload)
            except ValueError:
                continue


def stream_field(path: str, body: dict) -> bool:
    """The mode of a protocol whose body says it (`"stream": true`)."""
    return body.get("stream") is True


def body_model(path: str, body: dict) -> str:
    """The model of a protocol whose body names it."""
    return body.get("model") if isinstance(body.get("model"), str) else ""


def pieces(text: str, size: int = 400):
    for i in range(0, len(text), size):
        yield text[i:i + size]


def headers_of(out) -> dict:
    """The guard's headers on an answer: which level answered and what failed before it."""
    if out is None:
        return {}
    h = {"x-compaction-guard-level": str(out.level),
         "x-compaction-guard-failures": ",".join(out.failures) or "none"}
    if out.observed:
        h["x-compaction-guard-observed"] = "would escalate: " + ",".join(out.observed)
    return h
