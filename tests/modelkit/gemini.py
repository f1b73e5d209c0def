"""The Gemini API as a scripted model speaks it, the protocol of Gemini CLI (0.61, via @google/genai, base
URL from GOOGLE_GEMINI_BASE_URL):

  POST /v1beta/models/<model>:streamGenerateContent?alt=sse   main turns, answered as SSE `data:` lines
  POST /v1beta/models/<model>:generateContent                 utility calls (compression, JSON helpers)
  POST /v1beta/models/<model>:countTokens                     {"totalTokens": n}

Gemini CLI's compression is two non-streamed :generateContent calls whose systemInstruction is the
compression prompt ("... distilling chat history into a structured XML <state_snapshot> ..."): the history
and "Generate a new <state_snapshot> ..." (or "A previous <state_snapshot> exists ..."), then the history,
the first answer as a model turn and "Critically evaluate the <state_snapshot> ..." (verify).

    with ScriptedGemini(summaries=[...], verifies=[None]) as server:    # GOOGLE_GEMINI_BASE_URL=server.url
"""
from __future__ import annotations

import json
import time

from .base import Answer, ScriptedModel, pieces, sse, tokens

REPLY = "Noted."
PIECE = 200
VERIFY_PREFIX = "Critically evaluate the <state_snapshot>"


def parts_text(content) -> str:
    if not isinstance(content, dict):
        return ""
    return "\n".join(p.get("text", "") for p in content.get("parts") or []
                     if isinstance(p, dict) and isinstance(p.get("text"), str))


def system_text(body: dict) -> str:
    si = body.get("systemInstruction") or (body.get("config") or {}).get("systemInstruction") or {}
    return si if isinstance(si, str) else parts_text(si)


def is_compression(body: dict) -> bool:
    """Gemini CLI's own mark: the compression system prompt (both calls carry it)."""
    s = system_text(body)
    return "<state_snapshot>" in s and "distilling chat history" in s


def is_verify(body: dict) -> bool:
    contents = body.get("contents") or []
    return bool(contents) and parts_text(contents[-1]).startswith(VERIFY_PREFIX)


def last_is_prompt(body: dict) -> bool:
    """The last content is the user's own text (not a function response)."""
    contents = body.get("contents") or []
    if not contents or contents[-1].get("role") != "user":
        return False
    return not any(isinstance(p, dict) and "functionResponse" in p for p in contents[-1].get("parts") or [])


def json_for_schema(schema: dict) -> dict:
    """A minimal answer for Gemini CLI's JSON helpers (next-speaker check, router, ...)."""
    out = {}
    for k, v in ((schema or {}).get("properties") or {}).items():
        t = (v or {}).get("type", "string")
        t = t.lower() if isinstance(t, str) else "string"
        if k == "next_speaker":
            out[k] = "user"
        elif (v or {}).get("enum"):
            out[k] = v["enum"][0]
        elif t in ("string", "number", "integer", "boolean", "array", "object"):
            out[k] = {"string": "ok", "number": 0, "integer": 0, "boolean": False, "array": [], "object": {}}[t]
    return out


def model_of(route: str) -> str:
    return route.rsplit("/", 1)[-1].split(":")[0]


def usage(prompt_tokens: int) -> dict:
    return {"promptTokenCount": prompt_tokens, "candidatesTokenCount": 12, "totalTokenCount": prompt_tokens + 12}


def parts(a: Answer) -> list:
    return [{"functionCall": {"name": a.call[0], "args": a.call[1]}}] if a.call else [{"text": a.text}]


def response(parts_: list, model, use: dict = None, final: bool = True) -> dict:
    cand = {"content": {"role": "model", "parts": parts_}, "index": 0}
    if final:
        cand["finishReason"] = "STOP"
    out = {"candidates": [cand], "modelVersion": model or "gemini-2.5-flash", "responseId": "scripted"}
    if use:
        out["usageMetadata"] = use
    return out


def stream(a: Answer, model, use: dict) -> bytes:
    """The answer as `data:` lines (CRLF-separated, as the real API sends them): a long text in pieces, the
    usage and finishReason on the last."""
    chunks = [[{"text": p}] for p in pieces(a.text, PIECE)] if not a.call and len(a.text) > PIECE else [parts(a)]
    return sse([response(p, model, use if i == len(chunks) - 1 else None, final=i == len(chunks) - 1)
                for i, p in enumerate(chunks)], sep="\r\n\r\n")


def error_body(a: Answer) -> dict:
    return {"error": dict({"code": a.status, "message": "scripted failure", "status": "INTERNAL"}, **(a.error or {}))}


def send_json(h, code: int, obj) -> None:
    h.send_json(code, obj, content_type="application/json; charset=UTF-8")


def answer(h, a: Answer, use: dict) -> None:
    """Send `a`: streamed on :streamGenerateContent, whole on :generateContent."""
    model = model_of(h.route)
    if a.status != 200:
        return send_json(h, a.status, error_body(a))
    if h.route.endswith(":streamGenerateContent"):
        return h.send_sse(stream(a, model, use))
    send_json(h, 200, response(parts(a), model, use))


class ScriptedGemini(ScriptedModel):
    """Compression: the first call gets the next of `summaries`, the verify call the next of `verifies`
    (None: the same text the first got); one per call, the last repeating; HTTP_500 an HTTP 500 in the
    Gemini API's error shape. Each answered compression in `compressions`: (summary | verify, text).

    Main turns: when the last user content is a text prompt and `tool_first` is set, the model asks for a
    harmless tool call (`tool_name` on `tool_file`), then answers `reply` to the function response: two
    model calls in one `-p` run, so Gemini CLI checks for compression before the second one. `main_delay`
    seconds pass before a main turn is answered (a model's own latency: in a headless run Gemini CLI starts
    `/compress` in the background and sends "/compress" to the model at the same time; the process ends
    with that turn, and a compression still running then is lost).

    Usage: `usageMetadata.promptTokenCount` = `prompt_tokens` when set, else an estimate of the request
    (JSON length / 4, about what the real API would count); Gemini CLI compresses before a model call when
    its last reported promptTokenCount >= model.compressionThreshold * the model's token limit.

    Every request is kept in `requests` (method, path, headers without the key, JSON body) and appended to
    `record` when given; `keys[i]`: the credential (x-goog-api-key) `requests[i]` came with."""

    def __init__(self, summaries=None, verifies=None, reply: str = REPLY, record=None, prompt_tokens=None,
                 tool_first: bool = True, tool_file: str = "notes.txt", tool_name: str = "read_file",
                 tool_arg: str = "file_path"):
        super().__init__(record)
        self.summaries = list(summaries if summaries is not None else ["<state_snapshot></state_snapshot>"])
        self.verifies = list(verifies if verifies is not None else [None])
        self.reply = reply
        self.prompt_tokens = prompt_tokens
        self.tool_first = tool_first
        self.tool_call = (tool_name, {tool_arg: tool_file})
        self.main_delay = 0.0
        self.compressions = []
        self._last_summary = ""
        self.listen()

    def _keep(self, h, body) -> None:
        self.keep({"method": h.command, "path": h.path, "headers": h.public_headers(), "body": body},
                  h.credential("x-goog-api-key"))

    def usage_for(self, body: dict) -> dict:
        if self.prompt_tokens is not None:
            return usage(int(self.prompt_tokens))
        return usage(tokens(len(json.dumps({k: body.get(k) for k in ("contents", "systemInstruction", "tools")},
                                           ensure_ascii=False))))

    def compression(self, body: dict):
        if is_verify(body):
            v = self.next_of(self.verifies)
            kind, text = "verify", self._last_summary if v is None else v
        else:
            kind, text = "summary", self.next_of(self.summaries)
            self._last_summary = text
        with self._lock:
            self.compressions.append((kind, text))
        return text

    def on_get(self, h) -> None:
        self._keep(h, {})
        send_json(h, 200, {"models": []})

    def on_post(self, h) -> None:
        body = h.read_json()
        if body is None:
            body = {"_raw": h.raw()[:2000].decode("utf-8", "replace")}
        self._keep(h, body)
        use = self.usage_for(body)
        if h.route.endswith(":countTokens"):
            return send_json(h, 200, {"totalTokens": use["promptTokenCount"]})
        if h.route.endswith(":streamGenerateContent"):
            time.sleep(self.main_delay)
            a = Answer(call=self.tool_call) if self.tool_first and last_is_prompt(body) else Answer(text=self.reply)
            return answer(h, a, use)
        if not h.route.endswith(":generateContent"):
            return send_json(h, 404, {"error": {"code": 404, "message": f"scripted server: no route {h.path}",
                                                "status": "NOT_FOUND"}})
        if is_compression(body):
            return answer(h, Answer.of(self.compression(body)), use)
        gc = body.get("generationConfig") or {}
        schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
        answer(h, Answer(text=json.dumps(json_for_schema(schema)) if schema else self.reply), use)
