"""OpenAI chat completions (`POST /v1/chat/completions`), as the guard speaks it: an answer
read (`parse_answer`), rendered whole (`body`) or as its chunks (`stream`, with the usage chunk
when `stream_options.include_usage` asks for it), and an error in its shape."""
from __future__ import annotations

import time
import uuid

from .protocol import body_model as model_of, pieces, sse, stream_field as streamed  # noqa: F401


def generation(path: str) -> bool:
    return path.rstrip("/").endswith("/chat/completions")


def parse_answer(data) -> tuple:
    """(text, reasoning characters, finish: None | "cut_off" | "refusal") of a chat completion;
    ValueError when it has no `choices[0].message`."""
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    try:
        choice = data["choices"][0]
        msg = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ValueError("answer has no choices[0].message") from None
    if not isinstance(msg, dict):
        raise ValueError("answer has no choices[0].message")
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    finish = "refusal" if msg.get("refusal") else ("cut_off" if choice.get("finish_reason") == "length" else None)
    from .requests import _text_of
    return _text_of(msg.get("content")), len(reasoning) if isinstance(reasoning, str) else 0, finish


def body(out, model: str) -> dict:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": out.summary},
                                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": out.input_tokens, "completion_tokens": out.output_tokens,
                      "total_tokens": out.input_tokens + out.output_tokens}}


def stream(out, model: str, include_usage: bool = False):
    """The answer as OpenAI's chunks; with `stream_options.include_usage` (OpenClaw always asks
    for it) a last chunk with no choices and the usage, as OpenAI sends it."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model}
    yield sse(None, dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                         "finish_reason": None}]))
    for piece in pieces(out.summary):
        yield sse(None, dict(base, choices=[{"index": 0, "delta": {"content": piece}, "finish_reason": None}]))
    yield sse(None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    if include_usage:
        yield sse(None, dict(base, choices=[], usage={"prompt_tokens": out.input_tokens,
                                                      "completion_tokens": out.output_tokens,
                                                      "total_tokens": out.input_tokens + out.output_tokens}))
    yield b"data: [DONE]\n\n"


def keepalive() -> bytes:
    return b": keep-alive\n\n"


def note(text: str) -> bytes:
    return f": {text}\n\n".encode()


def stream_error(message: str) -> bytes:
    return sse(None, error_body(500, message)) + b"data: [DONE]\n\n"


def error_body(status: int, message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                      "code": status}}


def usage_asked(body: dict) -> bool:
    opts = body.get("stream_options")
    return isinstance(opts, dict) and opts.get("include_usage") is True
