"""A scripted Responses-API model server on 127.0.0.1, as Codex CLI's custom provider.

Codex 0.171 with `wire_api = "responses"` sends `POST <base_url>/responses` (here /v1/responses), streamed
(`"stream": true`, SSE). A compaction request is the one Codex itself marks: header
`x-codex-turn-metadata` holding `"request_kind":"compaction"` (JSON). Such a request gets the next summary
of `summaries` (the last one repeating); any other request gets a short reply. Every response reports
`usage.input_tokens` = `input_tokens` (0: a rough count of the request, bytes/4) so Codex can be pushed
over its compaction threshold. Every request is recorded (path, headers without any key, JSON body) in
`requests`, and appended to `record` (JSON lines) when given; `keys[i]` is the credential `requests[i]`
came with (Authorization; kept in memory only), so a test can see where credentials went.

    python3 scripted_server.py --port 0 --summaries summaries.json --record requests.jsonl --input-tokens 90000

prints `listening <port>` and serves until killed. Stdlib only.
"""
from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = "Noted. I will keep that in mind."
# special summaries: answer the compaction request with no output item at all / an HTTP 500
NO_MESSAGE = "<<NO_MESSAGE>>"
HTTP_500 = "<<HTTP_500>>"
SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "openai-api-key", "cookie", "chatgpt-account-id")


def request_kind(headers: dict) -> str:
    """Codex's own mark: x-codex-turn-metadata {"request_kind": "compaction" | ...}."""
    raw = headers.get("x-codex-turn-metadata") or ""
    try:
        meta = json.loads(raw)
    except ValueError:
        return "compaction" if '"request_kind":"compaction"' in raw.replace(" ", "") else ""
    return str(meta.get("request_kind") or "") if isinstance(meta, dict) else ""


def is_compaction(item: dict) -> bool:
    """For a recorded request ({path, headers, body})."""
    return request_kind(item.get("headers") or {}) == "compaction"


class _Server(ThreadingHTTPServer):
    request_queue_size = 64
    daemon_threads = True
    block_on_close = False


class ScriptedResponses:
    def __init__(self, summaries=None, reply: str = REPLY, record=None, input_tokens: int = 0, port: int = 0,
                 compaction_input_tokens: int | None = None, tool_trigger: str = "RUN_TOOL",
                 tool_call: tuple = ("exec_command", {"cmd": "cat notes.txt"})):
        self.summaries = list(summaries if summaries is not None else ["Summary: nothing yet."])
        self.reply = reply
        self.record = record
        self.input_tokens = input_tokens
        # usage reported for the compaction call itself (None: the same rule as any request; 0: bytes/4)
        self.compaction_input_tokens = compaction_input_tokens
        # a turn whose last input item is a user message holding `tool_trigger` gets a function call
        # (`tool_call` = (name, arguments)) instead of text; the follow-up request (with the tool output) gets
        # the normal reply
        self.tool_trigger = tool_trigger
        self.tool_call = tool_call
        self.turns = 0
        self.compaction_delay = 0.0     # seconds before a compaction request is answered (a slow model)
        self.requests = []
        self.keys = []
        self._lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *a):
                pass

            def _headers(self) -> dict:
                return {k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS}

            def do_GET(self):
                srv._keep("GET", self.path, self._headers(), None, "get")
                if self.path.split("?")[0].rstrip("/").endswith("/models"):
                    return self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}],
                                            "models": []})
                return self._json(404, {"error": {"message": "not found"}})

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                headers = self._headers()
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    srv._keep("POST", self.path, headers, {"_raw": raw[:2000].decode("utf-8", "replace")}, "bad")
                    return self._json(400, {"error": {"message": "bad json"}})
                kind = "compaction" if request_kind(headers) == "compaction" else "turn"
                srv._keep("POST", self.path, headers, body, kind, self.headers.get("authorization"))
                if not self.path.split("?")[0].rstrip("/").endswith("/responses"):
                    return self._json(404, {"error": {"message": f"not scripted: {self.path}"}})
                call = srv._wants_tool(body) if kind == "turn" else None
                if kind == "compaction":
                    time.sleep(srv.compaction_delay)
                    text = srv._next_summary()
                else:
                    srv.turns += 1
                    # numbered, so a reply that resurfaces later (e.g. as a summary) can be traced to its turn
                    text = "" if call else f"{srv.reply} (reply {srv.turns})"
                if text == HTTP_500:
                    return self._json(500, {"error": {"message": "scripted failure", "type": "server_error"}})
                if kind == "compaction" and srv.compaction_input_tokens is not None:
                    inp = srv.compaction_input_tokens or max(1, len(raw) // 4)
                else:
                    inp = srv.input_tokens or max(1, len(raw) // 4)
                out = 0 if text == NO_MESSAGE else max(1, len(text) // 4)
                usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                         "total_tokens": inp + out}
                self._stream(body, text, usage, call)

            def _stream(self, body, text, usage, call=None):
                rid = "resp_" + uuid.uuid4().hex[:24]
                mid = "msg_" + uuid.uuid4().hex[:24]
                model = body.get("model")
                resp = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
                        "status": "in_progress", "output": []}
                events = [{"type": "response.created", "response": resp}]
                if text == NO_MESSAGE:
                    item = None
                elif call:
                    item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24],
                            "call_id": "call_" + uuid.uuid4().hex[:24], "name": call[0],
                            "arguments": json.dumps(call[1]), "status": "completed"}
                    events.append({"type": "response.output_item.added", "output_index": 0,
                                   "item": {**item, "status": "in_progress", "arguments": ""}})
                else:
                    item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}
                    events.append({"type": "response.output_item.added", "output_index": 0,
                                   "item": {**item, "status": "in_progress", "content": []}})
                    for i in range(0, len(text), 200):
                        events.append({"type": "response.output_text.delta", "item_id": mid, "output_index": 0,
                                       "content_index": 0, "delta": text[i:i + 200]})
                if item is not None:
                    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
                events.append({"type": "response.completed",
                               "response": {**resp, "status": "completed", "output": [item] if item else [],
                                            "usage": usage}})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for ev in events:
                        self.wfile.write(f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n".encode())
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

        self.server = _Server(("127.0.0.1", port), Handler)
        self.server.handle_error = lambda request, address: None
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def compactions(self) -> list:
        return [r for r in self.requests if r["kind"] == "compaction"]

    def _wants_tool(self, body: dict):
        """The last user message holds tool_trigger and no tool output follows it."""
        items = [i for i in (body.get("input") or []) if isinstance(i, dict)]
        users = [n for n, i in enumerate(items) if i.get("type") == "message" and i.get("role") == "user"]
        if not self.tool_trigger or not users:
            return None
        n = users[-1]
        if self.tool_trigger not in json.dumps(items[n].get("content")):
            return None
        if any(i.get("type", "").endswith("_call_output") for i in items[n + 1:]):
            return None
        return self.tool_call

    def _next_summary(self) -> str:
        with self._lock:
            return self.summaries.pop(0) if len(self.summaries) > 1 else self.summaries[0]

    def _keep(self, method, path, headers, body, kind, key=None) -> None:
        item = {"method": method, "path": path, "kind": kind, "headers": headers, "body": body}
        with self._lock:
            if self.record:
                with open(self.record, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(item, ensure_ascii=False) + "\n")
            self.requests.append(item)
            self.keys.append(key)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--summaries", help="a JSON list of the summaries to answer compaction requests with")
    ap.add_argument("--record", help="append every request (JSON lines) here")
    ap.add_argument("--input-tokens", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    summaries = json.load(open(args.summaries, encoding="utf-8")) if args.summaries else None
    srv = ScriptedResponses(summaries, record=args.record, input_tokens=args.input_tokens, port=args.port)
    srv.thread.start()
    print(f"listening {srv.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
