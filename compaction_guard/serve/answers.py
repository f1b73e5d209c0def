"""Answers in the client's own protocol and mode: the protocols by name (one module each), an
error in the client's protocol, and `LateHeadersStream`, a streamed answer whose headers leave
with its first bytes (keep-alives while the compaction runs; then the upstream's own answer
that passed, relayed as it came, or the guard's in the protocol's events). Used by the
compaction endpoints (app.py) and the relay (relay.py) alike."""
from __future__ import annotations

import asyncio
from typing import Optional

from . import anthropic, gemini, openai_chat, responses
from .core import _cancel_task
from .protocol import headers_of

PROTOCOLS = {"openai": openai_chat, "anthropic": anthropic, "responses": responses, "gemini": gemini}
# an upstream's headers not relayed with an answer the guard held: the connection's own, and
# the body's length and encoding (it was decoded, and may be cut into other pieces)
_RELAYED_NOT = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"upgrade", b"te", b"trailer",
                          b"content-length", b"content-encoding"})


def error_body(proto: str, status: int, message: str) -> dict:
    """An error in the client's protocol."""
    return PROTOCOLS[proto].error_body(status, message)


class LateHeadersStream:
    """An SSE answer whose headers leave with its first bytes: the level is in them when
    the compaction is done before the first keep-alive; otherwise keep-alive lines go out
    while it runs, and the level follows in a comment line before the events."""

    def __init__(self, task, proto: str, model: str, keepalive: float, include_usage: bool = False, logger=None):
        self.task, self.proto, self.model, self.keepalive = task, proto, model, keepalive
        self.include_usage = include_usage
        self.logger = logger

    async def __call__(self, scope, receive, send):
        started = False

        async def emit(data: bytes, headers: Optional[dict] = None):
            nonlocal started
            if not started:
                h = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache",
                     **(headers or {})}
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(k.encode(), v.encode()) for k, v in h.items()]})
                started = True
            await send({"type": "http.response.body", "body": data, "more_body": True})

        async def gone():
            while (await receive())["type"] != "http.disconnect":
                pass
        watch = asyncio.ensure_future(gone())
        try:
            while True:
                done, _ = await asyncio.wait({self.task, watch}, timeout=self.keepalive,
                                             return_when=asyncio.FIRST_COMPLETED)
                if self.task in done:
                    break
                if watch in done:                    # the client went away: cancel its compaction
                    await _cancel_task(self.task)
                    return
                await emit(PROTOCOLS[self.proto].keepalive())
        except OSError:
            await _cancel_task(self.task)
            return
        finally:
            watch.cancel()
        try:
            out = self.task.result()
        except Exception as exc:          # noqa: BLE001 - never expected: the stream still ends well-formed
            if self.logger is not None:
                self.logger(f"internal error: {type(exc).__name__}")
            message = f"the guard failed on this request ({type(exc).__name__}); see its log"
            await emit(PROTOCOLS[self.proto].stream_error(message))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        head = headers_of(out)
        if out.raw is not None and out.raw[0] != 200 and not started:
            # --observe in front of an agent: the upstream's error, as it came
            status, rheaders, data = out.raw
            hs = [(k, v) for k, v in rheaders if k.lower() not in _RELAYED_NOT]
            await send({"type": "http.response.start", "status": status,
                        "headers": hs + [(k.encode(), v.encode()) for k, v in head.items()]
                        + [(b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data, "more_body": False})
            return
        if started:
            line = PROTOCOLS[self.proto].note(f"compaction-guard level={out.level} "
                                              f"failures={head['x-compaction-guard-failures']}")
            if line:
                await emit(line)
        if out.raw is not None and out.raw[0] == 200:
            # the relay: the upstream's own answer, passed (or observed), relayed as it came
            head = {**{k.decode("latin-1").lower(): v.decode("latin-1") for k, v in out.raw[1]
                       if k.lower() not in _RELAYED_NOT}, **head}
            events = iter([out.raw[2]])
        else:
            events = PROTOCOLS[self.proto].stream(out, self.model, self.include_usage)
        for chunk in events:
            await emit(chunk, head)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
