"""A scripted OpenAI-compatible model server on 127.0.0.1 for the real opencode (stdlib only).

opencode's provider `"npm": "@ai-sdk/openai-compatible"` with `options.baseURL=http://127.0.0.1:P/v1`
sends `POST /v1/chat/completions`, streamed (SSE chunks, then `data: [DONE]`). This server answers:

- a compaction request with the next scripted summary (the last one repeating). opencode 1.18 marks
  its compaction request by its text: no tools, one user message "Here is the conversation so
  far:\n\n<conversation>\n...</conversation>\n\nCreate a new anchored summary ..." (or with a
  `<prior-summary>` block on a later compaction). Routed with `agent.compaction.model`, it also
  arrives on its own port (`role="compaction"`);
- a title request (system prompt "You are a title generator") with a short title;
- every other request (a main turn) with a short reply.

Every response reports token usage; `usage_for(kind)` decides the prompt count (set `main_prompt_tokens`
high, or `next_turn_prompt_tokens` for one turn, before the turn that should trigger an automatic
compaction). Every request is recorded
(port role, path, headers without any key, JSON body, the kind) in `requests` and, when `record` is
given, appended to it as JSON lines.

    python3 scripted_server.py --summaries summaries.json --record requests.jsonl

prints `listening <main port> <compaction port>` and serves until killed.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = "Noted. I will keep that in mind."
TITLE = "Deploy ticket OPS-4411 notes"
SECRET_HEADERS = {"authorization", "api-key", "x-api-key", "proxy-authorization", "cookie"}


def _text(content) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def is_compaction(body: dict) -> bool:
    """opencode's compaction request: no tools, and its last user message holds the conversation
    in <conversation> tags with the "anchored summary" instructions (or a <prior-summary>)."""
    msgs = body.get("messages") or []
    if not msgs or body.get("tools"):
        return False
    last = _text(msgs[-1].get("content")) if isinstance(msgs[-1], dict) else ""
    return "<conversation>" in last and ("anchored summary" in last or "<prior-summary>" in last)


def is_title(body: dict) -> bool:
    msgs = body.get("messages") or []
    system = " ".join(_text(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") == "system")
    return "title generator" in system.lower()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64


class ScriptedServer:
    """Two listeners on 127.0.0.1: `main_port` for the main turns (and titles), `compaction_port`
    for what opencode routes through `agent.compaction.model`. Use as a context manager."""

    def __init__(self, summaries=None, reply: str = REPLY, record=None, main_prompt_tokens: int = 1200,
                 compaction_prompt_tokens: int = 0, when=None):
        self.summaries = list(summaries if summaries is not None else ["## Objective\n- (none)"])
        self.when = list(when or [])         # [(text the compaction request holds, summary)], checked first
        self.reply = reply
        self.record = record
        self.main_prompt_tokens = main_prompt_tokens      # prompt_tokens reported for main turns
        self.compaction_prompt_tokens = compaction_prompt_tokens  # 0: a rough count of the request
        # reported once, for the next main turn only (then main_prompt_tokens again): reporting a count
        # over the limit on every turn makes opencode compact after every turn, forever
        self.next_turn_prompt_tokens = None
        self.requests: list = []
        self._lock = threading.Lock()
        self.servers = {role: _Server(("127.0.0.1", 0), self._handler(role)) for role in ("main", "compaction")}
        self.threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
                        for s in self.servers.values()]

    # -- lifecycle
    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        for s in self.servers.values():
            s.shutdown()
            s.server_close()

    @property
    def main_port(self) -> int:
        return self.servers["main"].server_address[1]

    @property
    def compaction_port(self) -> int:
        return self.servers["compaction"].server_address[1]

    def url(self, role: str = "main") -> str:
        return f"http://127.0.0.1:{self.servers[role].server_address[1]}/v1"

    # -- answers
    def answer(self, role: str, body: dict) -> tuple:
        if role == "compaction" or is_compaction(body):
            sent = json.dumps(body.get("messages") or [], ensure_ascii=False)
            for needle, text in self.when:
                if needle in sent:
                    return text, "compaction"
            with self._lock:
                text = self.summaries.pop(0) if len(self.summaries) > 1 else self.summaries[0]
            return text, "compaction"
        if is_title(body):
            return TITLE, "title"
        return self.reply, "turn"

    def usage_for(self, kind: str, raw_len: int, text: str) -> dict:
        completion = max(1, len(text) // 4)
        if kind == "turn":
            with self._lock:
                once, self.next_turn_prompt_tokens = self.next_turn_prompt_tokens, None
            prompt = once or self.main_prompt_tokens or max(1, raw_len // 4)
        elif kind == "compaction":
            prompt = self.compaction_prompt_tokens or max(1, raw_len // 4)
        else:
            prompt = max(1, raw_len // 4)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def keep(self, role, path, headers, body, kind, usage) -> None:
        item = {"port": role, "path": path, "kind": kind, "time": time.time(),
                "headers": {k.lower(): v for k, v in headers.items() if k.lower() not in SECRET_HEADERS},
                "usage_reported": usage, "body": body}
        with self._lock:
            self.requests.append(item)
            if self.record:
                with open(self.record, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(item, ensure_ascii=False) + "\n")

    def _handler(self, role: str):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._json(400, {"error": {"message": "bad json"}})
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    server.keep(role, self.path, dict(self.headers), body, "unknown", None)
                    return self._json(404, {"error": {"message": "not found"}})
                text, kind = server.answer(role, body)
                usage = server.usage_for(kind, len(raw), text)
                server.keep(role, self.path, dict(self.headers), body, kind, usage)
                created = int(time.time())
                if not body.get("stream"):
                    return self._json(200, {"id": "chatcmpl-scripted", "object": "chat.completion",
                                             "created": created, "model": body.get("model"),
                                             "choices": [{"index": 0, "finish_reason": "stop",
                                                          "message": {"role": "assistant", "content": text}}],
                                             "usage": usage})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": created,
                        "model": body.get("model")}
                chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
                for i in range(0, len(text), 64):
                    chunks.append({**base, "choices": [{"index": 0, "delta": {"content": text[i:i + 64]}}]})
                chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                chunks.append({**base, "choices": [], "usage": usage})   # always: opencode counts from it
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

        return Handler


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--summaries", help="a JSON list of the summaries to answer compaction requests with")
    ap.add_argument("--record", help="append every request (JSON lines) here")
    ap.add_argument("--main-prompt-tokens", type=int, default=1200)
    args = ap.parse_args(argv)
    summaries = json.load(open(args.summaries, encoding="utf-8")) if args.summaries else None
    with ScriptedServer(summaries, record=args.record, main_prompt_tokens=args.main_prompt_tokens) as srv:
        print(f"listening {srv.main_port} {srv.compaction_port}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
