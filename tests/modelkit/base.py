"""What every scripted model shares: threaded HTTP listeners on 127.0.0.1, a request handler with the
reading and answering helpers, the log of what the agent sent (without credentials; the credential each
request carried kept apart, in memory only, for tests that check where credentials went; a JSON-lines
record of it when asked), script items and server-sent events. Standard library only: the recording
recipes run it with the system `python3` inside a network namespace.

A script item is what a scripted model answers one request with: a text; `{"tool_use": {"name", "input"}}`
(a tool call); `{"status": N, ...}` (an HTTP error; the other fields go into the protocol's error body,
`"error": {...}` as the Anthropic API nests them); HTTP_500 (the same as `{"status": 500}`); NO_MESSAGE (a
successful answer without any output item). `Answer.of(item)` reads one.
"""
from __future__ import annotations

import json
import socket
import threading
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

HOST = "127.0.0.1"
HTTP_500 = "<<HTTP_500>>"
NO_MESSAGE = "<<NO_MESSAGE>>"
# never logged nor recorded (the credential itself: `keys`, in memory)
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "openai-api-key",
                            "x-goog-api-key", "cookie", "chatgpt-account-id"})


@dataclass
class Answer:
    """One script item, read: `text`, or a tool `call` (name, arguments), or an HTTP error (`status` not
    200, `error`: the fields of the protocol's error body), or `silent` (no output item at all)."""
    text: str = ""
    call: Optional[tuple] = None
    status: int = 200
    error: Optional[dict] = None
    silent: bool = False

    @classmethod
    def of(cls, item) -> "Answer":
        if isinstance(item, cls):
            return item
        if item == HTTP_500:
            return cls(status=500)
        if item == NO_MESSAGE:
            return cls(silent=True)
        if isinstance(item, dict) and "tool_use" in item:
            return cls(call=(item["tool_use"]["name"], item["tool_use"].get("input") or {}))
        if isinstance(item, dict) and "status" in item:
            fields = item.get("error") if isinstance(item.get("error"), dict) else \
                {k: v for k, v in item.items() if k != "status"}
            return cls(status=int(item["status"]), error=fields or None)
        return cls(text="" if item is None else str(item))


def tokens(n_bytes: int) -> int:
    """A rough token count of a request of `n_bytes` (about what a real API counts)."""
    return max(1, n_bytes // 4)


def sse(events: list, named: bool = False, sep: str = "\n\n", done: bool = False) -> bytes:
    """Server-sent events: `data: {json}` each (after `event: {its type}` when `named`), then `data: [DONE]`
    when `done`."""
    out = [(f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}{sep}" for e in events]
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def pieces(text: str, size: int) -> list:
    return [text[i:i + size] for i in range(0, len(text), size)]


class Listener(ThreadingHTTPServer):
    """One port on 127.0.0.1. A listen backlog for bursts (the default 5 drops the SYNs of 32 simultaneous
    connections, which the kernel retries after 1 s); no wait for a scripted slow answer at close; a client
    that gave up (timeout tests) is expected, not an error to print."""
    request_queue_size = 128
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):
        pass


class Handler(BaseHTTPRequestHandler):
    """A request to `model` (its `on_get`, `on_post`, `on_head`), arrived on the listener `role`."""
    protocol_version = "HTTP/1.1"
    model = None
    role = "main"
    _raw = None

    def setup(self):
        super().setup()
        # without this each small response waits ~40 ms for Nagle/delayed ACK
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *a):
        pass

    def do_GET(self):
        self._serve(self.model.on_get)

    def do_POST(self):
        self._serve(self.model.on_post)

    def do_HEAD(self):
        self._serve(self.model.on_head)

    def _serve(self, answer) -> None:
        self._raw = None
        try:
            answer(self)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:  # noqa: BLE001 - a bug of the kit's, kept in `errors` and answered as one
            self.model.errors.append(traceback.format_exc()[-1500:])
            try:
                self.send_json(500, {"error": {"message": f"scripted server: {e!r}"}})
            except OSError:
                pass

    # -- the request
    @property
    def route(self) -> str:
        return self.path.split("?")[0]

    def raw(self) -> bytes:
        if self._raw is None:
            n = int(self.headers.get("content-length") or 0)
            self._raw = self.rfile.read(n) if n else b""
        return self._raw

    def read_json(self, default=None):
        """The request's JSON body, decoded from its Content-Encoding (zstd, gzip) as an API
        decodes it; `default` when it is none (an empty body is `{}`)."""
        raw = self.raw()
        coding = (self.headers.get("content-encoding") or "").strip().lower()
        try:
            if coding == "zstd":
                import zstandard
                raw = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True).read()
            elif coding == "gzip":
                import gzip
                raw = gzip.decompress(raw)
            return json.loads(raw or b"{}")
        except Exception:       # noqa: BLE001 - not JSON, or not what its coding says
            return default

    def public_headers(self) -> dict:
        return {k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS}

    def credential(self, *names) -> Optional[str]:
        return next((self.headers.get(n) for n in names if self.headers.get(n)), None)

    # -- the answer
    def send_bytes(self, code: int, data: bytes, content_type: str, headers: dict = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, code: int, obj, headers: dict = None, content_type: str = "application/json") -> None:
        self.send_bytes(code, json.dumps(obj).encode(), content_type, headers)

    def send_sse(self, data: bytes) -> None:
        self.send_bytes(200, data, "text/event-stream", {"Cache-Control": "no-cache"})


class Served:
    """Listeners on 127.0.0.1 (`servers`, by role) served from threads: for the `with` block, or
    start() ... close()."""

    def listen(self, handler=None, role: str = "main", port: int = 0) -> Listener:
        """A listener for `role`; `handler`: a request handler class (default: Handler, answered by self)."""
        if not hasattr(self, "servers"):
            self.servers, self.threads = {}, []
        cls = handler or type("Handler", (Handler,), {"model": self, "role": role})
        server = self.servers[role] = Listener((HOST, port), cls)
        self.threads.append(threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                                             daemon=True))
        return server

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def close(self) -> None:
        for s in self.servers.values():
            s.shutdown()
            s.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    @property
    def server(self) -> Listener:
        return next(iter(self.servers.values()))

    def port_of(self, role: str = "main") -> int:
        return self.servers[role].server_address[1]

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"


class ScriptedModel(Served):
    """A scripted model: what the agent sent in `requests` (as `entry` of the protocol makes each one,
    never with a credential) and appended to `record` (JSON lines) when given; `keys[i]`: the credential
    `requests[i]` came with (memory only); `errors`: the kit's own exceptions (a bug here, not the
    agent's). GET .../models lists `models`."""
    models = ("scripted",)

    def __init__(self, record=None):
        self.record = record
        self.requests: list = []
        self.keys: list = []
        self.errors: list = []
        self._lock = threading.Lock()

    def keep(self, entry: dict, key: Optional[str] = None, memory: Optional[dict] = None) -> dict:
        """Keep `entry` (and record it); `memory`: fields added to the kept entry only, never recorded."""
        with self._lock:
            if self.record:
                with open(self.record, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
            entry.update(memory or {})
            self.requests.append(entry)
            self.keys.append(key)
        return entry

    def next_of(self, items: list):
        """The next script item of `items`, the last one repeating."""
        with self._lock:
            return items.pop(0) if len(items) > 1 else items[0]

    def on_head(self, h: Handler) -> None:
        h.send_bytes(200, b"", "application/json")

    def on_get(self, h: Handler) -> None:
        if h.route.rstrip("/").endswith("/models"):
            return h.send_json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models],
                                     "models": []})
        h.send_json(404, {"error": {"message": "not found"}})

    def on_post(self, h: Handler) -> None:
        h.send_json(404, {"error": {"message": "not found"}})
