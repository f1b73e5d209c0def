"""A scripted Anthropic-compatible model server on 127.0.0.1, as Claude Code's provider.

It speaks what Claude Code sends: POST /v1/messages, streamed (message_start,
content_block_start/delta/stop, message_delta, message_stop) or not, and
POST /v1/messages/count_tokens. A compaction request (Claude Code appends its summary
instructions to the last user message: "create a detailed summary of the conversation")
gets the next of `summaries` (the last one repeating); any other request the next of
`replies` (else `reply`). A script item is a text, `{"tool_use": {"name", "input"}}` (a tool
call), or `{"status": N, "error": {...}}` (an HTTP error, as the Anthropic API sends it). Every
request is kept in `requests` (path, headers without the key, JSON body, and `key`: the
credential it carried, for tests that check where credentials went) and appended to `record`
when given: what the agent really sent, kept as a fixture; every answer's bytes in `sent`.
`input_tokens`: the usage reported for ordinary turns (large: Claude Code then compacts on its
own).
"""
from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_llm import ServerThread, _Server  # noqa: E402

REPLY = "Noted."


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def is_compaction(body: dict) -> bool:
    msgs = body.get("messages") or []
    last = _text(msgs[-1].get("content")) if msgs and isinstance(msgs[-1], dict) else ""
    low = last.lower()
    return "summary of the conversation" in low and ("<summary>" in low or "summary:" in low)


class ScriptedAnthropic(ServerThread):
    def __init__(self, summaries=None, reply: str = REPLY, record=None, input_tokens: int = 120, replies=None):
        self.summaries = list(summaries or ["<analysis>ok</analysis>\n<summary>\n1. Primary Request: none\n</summary>"])
        self.reply = reply
        self.replies = list(replies or [])
        self.sent = []
        self.record = record
        self.input_tokens = input_tokens
        self.requests = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                self._json(200, {"data": [], "has_more": False})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in ("x-api-key",
                                                                                               "authorization")}
                entry = {"path": self.path, "headers": headers, "body": body}
                with server._lock:
                    if server.record is not None:
                        with open(server.record, "a", encoding="utf-8") as fh:
                            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
                    entry["key"] = self.headers.get("x-api-key") or self.headers.get("authorization")
                    entry["raw"] = raw
                    server.requests.append(entry)
                if self.path.split("?")[0].endswith("/count_tokens"):
                    return self._json(200, {"input_tokens": server.input_tokens})
                compaction = is_compaction(body)
                with server._lock:
                    if compaction:
                        text = server.summaries.pop(0) if len(server.summaries) > 1 else server.summaries[0]
                    elif server.replies:
                        text = server.replies.pop(0) if len(server.replies) > 1 else server.replies[0]
                    else:
                        text = server.reply
                if isinstance(text, dict) and "status" in text:
                    return self._json(text["status"], {"type": "error", "error": text.get("error") or {
                        "type": "overloaded_error", "message": "Overloaded"}})
                usage = {"input_tokens": 900 if compaction else server.input_tokens, "output_tokens": 40,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
                model = body.get("model") or "claude-sonnet-4-5"
                if body.get("stream"):
                    return self._stream(text, model, usage)
                if isinstance(text, dict):
                    block, stop = dict(text["tool_use"], type="tool_use", id=f"toolu_{len(server.sent):04d}"), "tool_use"
                else:
                    block, stop = {"type": "text", "text": text}, "end_turn"
                return self._json(200, {"id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
                                        "content": [block], "stop_reason": stop, "stop_sequence": None,
                                        "usage": usage})

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                with server._lock:
                    server.sent.append(data)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, text, model, usage):
                events = [("message_start", {"type": "message_start", "message": {
                    "id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": [],
                    "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})]
                if isinstance(text, dict):          # a tool call, its input streamed as JSON pieces
                    call = text["tool_use"]
                    args = json.dumps(call.get("input") or {})
                    events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                        "type": "tool_use", "id": f"toolu_{len(server.sent):04d}", "name": call["name"], "input": {}}}))
                    for i in range(0, len(args), 16):
                        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                            "type": "input_json_delta", "partial_json": args[i:i + 16]}}))
                    stop = "tool_use"
                else:
                    events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                           "content_block": {"type": "text", "text": ""}}))
                    for i in range(0, len(text), 200):
                        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                               "delta": {"type": "text_delta", "text": text[i:i + 200]}}))
                    stop = "end_turn"
                events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
                           ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop,
                                                                                  "stop_sequence": None},
                                              "usage": {"output_tokens": usage["output_tokens"]}}),
                           ("message_stop", {"type": "message_stop"})]
                data = b"".join(f"event: {e}\ndata: {json.dumps(d)}\n\n".encode() for e, d in events)
                with server._lock:
                    server.sent.append(data)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"
