"""A fake OpenAI- and Anthropic-compatible server on 127.0.0.1 for the tests.

Real HTTP, not mocks of a client library: it answers POST /v1/chat/completions and
POST /v1/messages from a script of behaviours (one per request, the last one
repeating) and records every request (path, headers, JSON body), so tests assert
what L1 and L2 actually sent.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GOOD = ("The user moved CI to GitHub Actions (.github/workflows/ci.yml, Python 3.10-3.13). "
        "Publish job pending; it must run only on tags v*. Latest request: add the coverage badge.")


# What a summary looks like when UTF-8 bytes were read as latin-1 somewhere on the way.
_GARBAGE = ("Пользователь перенёс CI на GitHub Actions; публикация ждёт тегов v*. 用户要求添加覆盖率徽章。"
            "Der Nutzer möchte eine Übersicht.").encode("utf-8").decode("latin-1")


def _last_user(body) -> str:
    """The conversation the guard sent (echoing it is how a summary ends up larger than its input)."""
    try:
        content = body["messages"][-1]["content"]
    except (KeyError, IndexError, TypeError):
        return ""
    if isinstance(content, list):          # content parts, as OpenAI's SDKs send them (OpenClaw does)
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


class Behaviour(dict):
    """{'kind': ..., plus options}. Kinds: ok, empty, loop, inflation, garbage, reasoning_only,
    think_then_ok, refusal, status (code, retry_after), slow (seconds), cut_off, drop."""


def ok(text=GOOD):
    return Behaviour(kind="ok", text=text)


def B(kind, **kw):
    return Behaviour(kind=kind, **kw)


class _Server(ThreadingHTTPServer):
    # a listen backlog for bursts: the default 5 drops the SYNs of 32 simultaneous
    # connections, which the kernel retries after 1 s
    request_queue_size = 128


class ServerThread:
    """A test server on 127.0.0.1 served from a thread for the `with` block (`self.server`,
    `self.thread` set by the subclass)."""

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class FakeLLM(ServerThread):
    def __init__(self, script=None):
        self.script = list(script or [ok()])
        self.requests = []
        self._lock = threading.Lock()
        handler = self._handler()
        self.server = _Server(("127.0.0.1", 0), handler)
        # a client that gave up (timeout tests) is expected, not an error to print
        self.server.handle_error = lambda request, address: None
        self.server.daemon_threads = True
        self.server.block_on_close = False   # do not wait for a scripted slow answer at exit
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def next_behaviour(self) -> Behaviour:
        with self._lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                # without this each small response waits ~40 ms for Nagle/delayed ACK
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *a):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with fake._lock:
                    fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                          "body": body})
                b = fake.next_behaviour()
                anthropic = self.path.endswith("/v1/messages")
                kind = b["kind"]
                if kind == "status":
                    headers = {"Retry-After": str(b["retry_after"])} if b.get("retry_after") is not None else {}
                    return self._send(b["code"], {"error": {"message": b.get("message", "scripted failure"),
                                                            "type": "server_error"}}, headers)
                if kind == "slow":
                    time.sleep(b["seconds"])
                    return self._reply(anthropic, GOOD, body)
                if kind == "drop":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "5000")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [{"message": {"content": "The user')
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                text = {"ok": b.get("text", GOOD), "empty": "", "loop": " ".join(["The user asked about CI."] * 60),
                        "garbage": _GARBAGE,
                        "inflation": "Full record of the conversation:\n" + _last_user(body) + "\nEnd of record.", "reasoning_only": "", "think_then_ok": "<think>Let me plan the summary first.</think>\n" + GOOD,
                        "refusal": "", "cut_off": GOOD[:60]}.get(kind)
                if text is None:
                    return self._send(500, {"error": {"message": f"unknown scripted behaviour {kind}"}})
                return self._reply(anthropic, text, body, kind)

            def _reply(self, anthropic, text, body, kind="ok"):
                if anthropic:
                    content = []
                    if kind == "reasoning_only":
                        content.append({"type": "thinking", "thinking": "I should summarize... " * 20, "signature": "x"})
                    if text:
                        content.append({"type": "text", "text": text})
                    stop = {"cut_off": "max_tokens", "refusal": "refusal"}.get(kind, "end_turn")
                    return self._send(200, {"id": "msg_1", "type": "message", "role": "assistant", "content": content,
                                            "model": (body or {}).get("model"), "stop_reason": stop,
                                            "usage": {"input_tokens": 10, "output_tokens": 10}})
                msg = {"role": "assistant", "content": text}
                if kind == "reasoning_only":
                    msg["content"] = None
                    msg["reasoning_content"] = "I should summarize the conversation... " * 20
                if kind == "refusal":
                    msg["content"] = None
                    msg["refusal"] = "I can't help with that."
                finish = "length" if kind == "cut_off" else "stop"
                return self._send(200, {"id": "chatcmpl-1", "object": "chat.completion",
                                        "choices": [{"index": 0, "message": msg, "finish_reason": finish}]})

            def _send(self, code, obj, headers=None):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return Handler
