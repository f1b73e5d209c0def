"""Scripted OpenAI-compatible servers on 127.0.0.1 for recording lossless-claw (adapted from
/work/main/tests/scripted_openai.py). Two instances run per case: `main` (the agent's model:
answers turns) and `summ` (lossless-claw's summaryModel). Both answer lossless-claw's
summarization prompts with the case's responder, because lossless-claw's forced path falls back
to the agent's own model when the summary provider fails.

Every summarization request is recorded whole (path, JSON body, what was answered, HTTP status,
phase); turn requests are recorded without their body (OpenClaw's ~50 KB agent prompt). No
request headers are kept (so no auth)."""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LCM_SYSTEM = "context-compaction summarization engine"


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def classify(body: dict) -> str:
    """turn | leaf-normal | leaf-aggressive | condensed-d1 | condensed-d2 | condensed-d3+ | summary-other"""
    msgs = body.get("messages") or []
    system = " ".join(text_of(m.get("content")) for m in msgs if m.get("role") in ("system", "developer"))
    user = text_of(msgs[-1].get("content")) if msgs else ""
    if LCM_SYSTEM not in system and "You summarize a SEGMENT" not in user and "<conversation_to_condense>" not in user:
        return "turn"
    if user.startswith("You summarize a SEGMENT"):
        return "leaf-aggressive" if "Aggressive summary policy:" in user else "leaf-normal"
    if user.startswith("You are compacting leaf-level"):
        return "condensed-d1"
    if user.startswith("You are condensing multiple session-level"):
        return "condensed-d2"
    if user.startswith("You are creating a high-level memory node"):
        return "condensed-d3+"
    return "summary-other"


def user_prompt(body: dict) -> str:
    msgs = body.get("messages") or []
    return text_of(msgs[-1].get("content")) if msgs else ""


def inner(prompt: str) -> str:
    """The text lossless-claw asked to summarize (segment or summaries to condense)."""
    m = re.search(r"<conversation_segment>\n(.*)\n</conversation_segment>", prompt, re.S) or \
        re.search(r"<conversation_to_condense>\n(.*)\n</conversation_to_condense>", prompt, re.S)
    return m.group(1) if m else prompt


class Scripted:
    def __init__(self, name: str, responder, log: list, lock: threading.Lock, turn_reply):
        self.name, self.responder, self.log, self.lock, self.turn_reply = name, responder, log, lock, turn_reply
        self.phase = "setup"
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"},
                                                                {"id": "summarizer", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._json(400, {"error": {"message": "bad json"}})
                kind = classify(body)
                if kind == "turn":
                    status, text = 200, srv.turn_reply(body)
                else:
                    status, text = srv.responder(kind, user_prompt(body))
                item = {"server": srv.name, "phase": srv.phase, "t": round(time.time(), 3), "path": self.path,
                        "kind": kind, "model": body.get("model"), "status": status}
                if kind == "turn":
                    item["messages"] = len(body.get("messages") or [])
                else:
                    item["body"] = body
                    item["answer"] = text
                with srv.lock:
                    srv.log.append(item)
                if status != 200:
                    return self._json(status, {"error": {"message": "scripted upstream failure", "type": "server_error",
                                                         "code": "internal_error"}})
                prompt = max(1, len(raw) // 4)
                usage = {"prompt_tokens": prompt, "completion_tokens": max(1, len(text) // 4),
                         "total_tokens": prompt + max(1, len(text) // 4)}
                if not body.get("stream"):
                    return self._json(200, {"id": "chatcmpl-scripted", "object": "chat.completion",
                                            "created": int(time.time()), "model": body.get("model"),
                                            "choices": [{"index": 0, "finish_reason": "stop",
                                                         "message": {"role": "assistant", "content": text}}],
                                            "usage": usage})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": body.get("model")}
                chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
                for i in range(0, len(text), 64):
                    chunks.append({**base, "choices": [{"index": 0, "delta": {"content": text[i:i + 64]}}]})
                chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    chunks.append({**base, "choices": [], "usage": usage})
                try:
                    for c in chunks:
                        self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except OSError:
                    pass
                self.close_connection = True

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
