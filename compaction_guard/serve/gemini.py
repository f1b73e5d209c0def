"""The Gemini API (`POST /v1beta/models/<model>:generateContent`, and
`:streamGenerateContent?alt=sse`), as the guard speaks it in front of Gemini CLI: the mode is
the path's (not a body field), the model too; an answer read whole (`parse_answer`: a
GenerateContentResponse) or from its `data:` chunks (`read_stream`), rendered whole (`body`) or
as chunks (`stream`), an error in its shape, and L2 made on the client's own request.

The stream reader of Gemini CLI's SDK (@google/genai) takes `data: ...` lines and nothing else:
a comment line at the head of its buffer would hold every chunk after it unread. So the
keep-alive is a chunk with no candidates (Gemini CLI reads past it) and the level is told only
in the headers."""
from __future__ import annotations

import json
import uuid

from .protocol import pieces, sse_data

_REFUSED = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                      "LANGUAGE"})


def generation(path: str) -> bool:
    return path.endswith((":generateContent", ":streamGenerateContent"))


def streamed(path: str, body: dict) -> bool:
    return path.endswith(":streamGenerateContent")


def model_of(path: str, body: dict) -> str:
    tail = path.rsplit("/models/", 1)[-1] if "/models/" in path else ""
    return tail.split(":", 1)[0]


def _candidate(data: dict) -> tuple:
    """(text, thought characters, finish) of a response's first candidate."""
    cands = data.get("candidates") if isinstance(data.get("candidates"), list) else []
    cand = cands[0] if cands and isinstance(cands[0], dict) else {}
    content = cand.get("content") if isinstance(cand.get("content"), dict) else {}
    parts = content.get("parts") if isinstance(content.get("parts"), list) else []
    text, thought = [], 0
    for p in parts:
        if isinstance(p, dict) and isinstance(p.get("text"), str):
            if p.get("thought"):
                thought += len(p["text"])
            else:
                text.append(p["text"])
    reason = cand.get("finishReason")
    blocked = isinstance(data.get("promptFeedback"), dict) and data["promptFeedback"].get("blockReason")
    finish = "refusal" if blocked or reason in _REFUSED else ("cut_off" if reason == "MAX_TOKENS" else None)
    return "".join(text), thought, finish, reason


def parse_answer(data) -> tuple:
    """(text, reasoning characters, finish: None | "cut_off" | "refusal") of a GenerateContentResponse."""
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    text, thought, finish, _ = _candidate(data)
    return text, thought, finish


def read_stream(data: bytes) -> tuple:
    """(text, reasoning characters, finish, error) of a `:streamGenerateContent?alt=sse` answer
    as it came: each chunk's first candidate's text joined; `error` an error object in a
    chunk, or why the stream is not whole (no chunk said why it finished), else None."""
    text, thought, finish, error, whole = [], 0, None, None, False
    for d in sse_data(data):
        if not isinstance(d, dict):
            continue
        if isinstance(d.get("error"), dict):
            err = d["error"]
            error = f"{err.get('status') or err.get('code') or 'error'}: {err.get('message') or ''}".strip()
            continue
        t, n, f, reason = _candidate(d)
        text.append(t)
        thought += n
        finish = f or finish
        whole = whole or bool(reason) or bool(isinstance(d.get("promptFeedback"), dict)
                                              and d["promptFeedback"].get("blockReason"))
    if error is None and not whole:
        error = "the stream ended before a chunk gave its finishReason"
    return "".join(text), thought, finish, error


def _usage(out) -> dict:
    return {"promptTokenCount": out.input_tokens, "candidatesTokenCount": out.output_tokens,
            "totalTokenCount": out.input_tokens + out.output_tokens}


def _response(parts: list, model: str, rid: str, finish: bool, usage=None) -> dict:
    cand = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    out = {"candidates": [cand], "modelVersion": model, "responseId": rid}
    if usage is not None:
        out["usageMetadata"] = usage
    return out


def body(out, model: str) -> dict:
    return _response([{"text": out.summary}], model, uuid.uuid4().hex[:24], True, _usage(out))


def _chunk(data: dict) -> bytes:
    return f"data: {json.dumps(data, ensure_ascii=False)}\r\n\r\n".encode()


def stream(out, model: str, include_usage: bool = False):
    """The answer as `alt=sse` chunks: the text in pieces, the last with the finish reason and usage."""
    rid = uuid.uuid4().hex[:24]
    chunks = list(pieces(out.summary)) or [""]
    for i, piece in enumerate(chunks):
        last = i == len(chunks) - 1
        yield _chunk(_response([{"text": piece}], model, rid, last, _usage(out) if last else None))


def keepalive() -> bytes:
    return b"data: {}\r\n\r\n"


def note(text: str) -> bytes:
    return b""          # no comment line: see the module doc


def stream_error(message: str) -> bytes:
    return _chunk(error_body(500, message))


_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           408: "DEADLINE_EXCEEDED", 413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
           502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def error_body(status: int, message: str) -> dict:
    return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}


def usage_asked(body: dict) -> bool:
    return False


def aggressive(body: dict, instruction: str, max_tokens: int, temperature=None, reasoning_off: bool = False) -> dict:
    """L2 on the client's own request: the instruction added as a last text part of its last
    user content (the prompt), `maxOutputTokens` capped where the client set one (thinking
    counts in it on Gemini 2.5), the temperature set; where the first answer was thoughts
    alone, thoughts are not asked for."""
    b = dict(body)
    contents = list(b.get("contents") or []) if isinstance(b.get("contents"), list) else []
    last = next((i for i in range(len(contents) - 1, -1, -1) if isinstance(contents[i], dict)
                 and contents[i].get("role", "user") == "user"), None)
    if last is not None:
        c = dict(contents[last])
        c["parts"] = list(c.get("parts") or []) + [{"text": instruction}]
        contents[last] = c
        b["contents"] = contents
    gc = dict(b["generationConfig"]) if isinstance(b.get("generationConfig"), dict) else {}
    if isinstance(gc.get("maxOutputTokens"), int):
        gc["maxOutputTokens"] = min(gc["maxOutputTokens"], max_tokens)
    if temperature is not None:
        gc["temperature"] = temperature
    if reasoning_off and isinstance(gc.get("thinkingConfig"), dict):
        gc["thinkingConfig"] = dict(gc["thinkingConfig"], includeThoughts=False)
    b["generationConfig"] = gc
    return b
