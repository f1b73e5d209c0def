"""A scripted Gemini-API model server on 127.0.0.1, as Gemini CLI's provider (stdlib only).

It speaks what Gemini CLI 0.61 really sends (via @google/genai, base URL from GOOGLE_GEMINI_BASE_URL):
  POST /v1beta/models/<model>:streamGenerateContent?alt=sse   main turns, answered as SSE `data:` lines
  POST /v1beta/models/<model>:generateContent                 utility calls (compression, JSON helpers)
  POST /v1beta/models/<model>:countTokens                     {"totalTokens": n}

Compression is two non-streamed :generateContent calls whose systemInstruction is the compression prompt
("... distilling chat history into a structured XML <state_snapshot> ..."):
  1. the history + "Generate a new <state_snapshot> ..." (or "A previous <state_snapshot> exists ...")
  2. the history + the first answer as a model turn + "Critically evaluate the <state_snapshot> ..." (verify)
The first gets the next of `summaries`, the second the next of `verifies` (None: the same text the first
got). Lists are consumed one per call, the last item repeating; the text `<<HTTP_500>>` is answered with an
HTTP 500 (the Gemini API's error shape) instead.

Main turns: when the last user content is a text prompt and `tool_first` is set, the model asks for a
harmless tool call (read_file on `tool_file`), then answers `reply` to the function response: two model
calls in one `-p` run, so Gemini CLI checks for compression before the second one.

`main_delay` seconds pass before a main turn is answered (0 by default): a model's own latency. In a
headless run Gemini CLI starts `/compress` in the background and sends "/compress" to the model at the same
time; the process ends with that turn, and a compression still running then is lost.

Usage reported: `usageMetadata.promptTokenCount` = `prompt_tokens` when set, else an estimate of the
request (JSON length / 4, about what the real API would count). Gemini CLI compresses before a model call
when its last reported promptTokenCount >= model.compressionThreshold * the model's token limit.

Every request is kept in `requests` (path, headers without the key, JSON body) and appended to `record`
(JSONL) when given; `keys[i]` is the credential `requests[i]` came with (x-goog-api-key; kept in memory
only).
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = "Noted."
HTTP_500 = "<<HTTP_500>>"
VERIFY_PREFIX = "Critically evaluate the <state_snapshot>"
SECRET_HEADERS = ("x-goog-api-key", "authorization", "x-api-key")


def _parts_text(content) -> str:
    if not isinstance(content, dict):
        return ""
    return "\n".join(p.get("text", "") for p in content.get("parts") or []
                     if isinstance(p, dict) and isinstance(p.get("text"), str))


def system_text(body: dict) -> str:
    si = body.get("systemInstruction") or (body.get("config") or {}).get("systemInstruction") or {}
    if isinstance(si, str):
        return si
    return _parts_text(si)


def is_compression(body: dict) -> bool:
    """Gemini CLI's own mark: the compression system prompt (both calls carry it)."""
    s = system_text(body)
    return "<state_snapshot>" in s and "distilling chat history" in s


def is_verify(body: dict) -> bool:
    contents = body.get("contents") or []
    return bool(contents) and _parts_text(contents[-1]).startswith(VERIFY_PREFIX)


def _last_is_prompt(body: dict) -> bool:
    contents = body.get("contents") or []
    if not contents:
        return False
    last = contents[-1]
    if last.get("role") != "user":
        return False
    return not any(isinstance(p, dict) and "functionResponse" in p for p in last.get("parts") or [])


def _json_for_schema(schema: dict):
    """A minimal answer for Gemini CLI's generateJson helpers (next-speaker check, router, ...)."""
    props = (schema or {}).get("properties") or {}
    out = {}
    for k, v in props.items():
        t = (v or {}).get("type", "string")
        t = t.lower() if isinstance(t, str) else "string"
        if k == "next_speaker":
            out[k] = "user"
        elif (v or {}).get("enum"):
            out[k] = v["enum"][0]
        elif t == "string":
            out[k] = "ok"
        elif t in ("number", "integer"):
            out[k] = 0
        elif t == "boolean":
            out[k] = False
        elif t == "array":
            out[k] = []
        elif t == "object":
            out[k] = {}
    return out


class ScriptedGemini:
    def __init__(self, summaries=None, verifies=None, reply: str = REPLY, record=None, prompt_tokens=None,
                 tool_first: bool = True, tool_file: str = "notes.txt", tool_name: str = "read_file",
                 tool_arg: str = "file_path"):
        self.summaries = list(summaries if summaries is not None else ["<state_snapshot></state_snapshot>"])
        self.verifies = list(verifies if verifies is not None else [None])
        self.reply = reply
        self.record = record
        self.prompt_tokens = prompt_tokens
        self.tool_first = tool_first
        self.tool_file = tool_file
        self.tool_name = tool_name
        self.tool_arg = tool_arg
        self.main_delay = 0.0
        self.requests = []
        self.keys = []
        self.compressions = []      # (kind, text answered)
        self._last_summary = ""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self._record({})
                self._json(200, {"models": []})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_raw": raw[:2000].decode("utf-8", "replace")}
                self._record(body)
                path = self.path.split("?")[0]
                model = path.rsplit("/", 1)[-1].split(":")[0]
                usage = server._usage(body)
                if path.endswith(":countTokens"):
                    return self._json(200, {"totalTokens": usage["promptTokenCount"]})
                if path.endswith(":streamGenerateContent"):
                    time.sleep(server.main_delay)
                    return self._stream(server._main_parts(body), model, usage)
                if path.endswith(":generateContent"):
                    if is_compression(body):
                        text = server._compression_text(body)
                        if text == HTTP_500:
                            return self._json(500, {"error": {"code": 500, "message": "scripted failure",
                                                              "status": "INTERNAL"}})
                        parts = [{"text": text}]
                    else:
                        gc = body.get("generationConfig") or {}
                        schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
                        if schema:
                            parts = [{"text": json.dumps(_json_for_schema(schema))}]
                        else:
                            parts = [{"text": server.reply}]
                    return self._json(200, server._response(parts, model, usage))
                self._json(404, {"error": {"code": 404, "message": f"scripted server: no route {self.path}",
                                           "status": "NOT_FOUND"}})

            def _record(self, body):
                headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS}
                entry = {"method": self.command, "path": self.path, "headers": headers, "body": body}
                with server._lock:
                    if server.record is not None:
                        with open(server.record, "a", encoding="utf-8") as fh:
                            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
                    server.requests.append(entry)
                    server.keys.append(self.headers.get("x-goog-api-key"))

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, parts, model, usage):
                chunks = []
                if len(parts) == 1 and "text" in parts[0] and len(parts[0]["text"]) > 200:
                    t = parts[0]["text"]
                    pieces = [[{"text": t[i:i + 200]}] for i in range(0, len(t), 200)]
                else:
                    pieces = [parts]
                for i, p in enumerate(pieces):
                    last = i == len(pieces) - 1
                    chunks.append(server._response(p, model, usage if last else None, final=last))
                data = b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.request_queue_size = 128
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.server.handle_error = lambda request, address: None
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    # ---- behaviour
    def _usage(self, body) -> dict:
        if self.prompt_tokens is not None:
            n = int(self.prompt_tokens)
        else:
            n = max(1, len(json.dumps({k: body.get(k) for k in ("contents", "systemInstruction", "tools")},
                                      ensure_ascii=False)) // 4)
        return {"promptTokenCount": n, "candidatesTokenCount": 12, "totalTokenCount": n + 12}

    def _pop(self, seq):
        with self._lock:
            return seq.pop(0) if len(seq) > 1 else seq[0]

    def _compression_text(self, body) -> str:
        if is_verify(body):
            v = self._pop(self.verifies)
            text = self._last_summary if v is None else v
            kind = "verify"
        else:
            text = self._pop(self.summaries)
            self._last_summary = text
            kind = "summary"
        with self._lock:
            self.compressions.append((kind, text))
        return text

    def _main_parts(self, body):
        if self.tool_first and _last_is_prompt(body):
            return [{"functionCall": {"name": self.tool_name, "args": {self.tool_arg: self.tool_file}}}]
        return [{"text": self.reply}]

    @staticmethod
    def _response(parts, model, usage, final=True) -> dict:
        cand = {"content": {"role": "model", "parts": parts}, "index": 0}
        if final:
            cand["finishReason"] = "STOP"
        out = {"candidates": [cand], "modelVersion": model or "gemini-2.5-flash", "responseId": "scripted"}
        if usage:
            out["usageMetadata"] = usage
        return out

    # ---- lifecycle
    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"
