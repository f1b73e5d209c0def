"""serve as a relay (issue #56): what it does to requests that are not compactions (nothing),
measured byte for byte with a raw HTTP client through a real uvicorn server to an upstream
on 127.0.0.1 whose every byte and pause the test controls; and hostile input."""
import dataclasses
import gzip
import json
import http.client
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")

from compaction_guard import agents  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402

from modelkit.base import Handler, Served  # noqa: E402
from test_serve import Running  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-ant-api03-relay-test-0123456789abcdef"
REQUEST = json.loads((ROOT / "tests" / "data" / "claude-code" / "request-good.json").read_text())


class Upstream(Served):
    """An Anthropic-like upstream: every request kept whole (method, path, headers, body
    bytes); what it answers, and when, set by the test."""

    def __init__(self):
        self.seen = []
        self.release = threading.Event()      # the second half of a stream waits for it
        self.broken = threading.Event()       # set when the client's side of a stream went away
        upstream = self

        class Answers(Handler):
            def _serve(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                    raw = self._dechunk()
                upstream.seen.append({"method": self.command, "path": self.path, "headers": self.headers.items(),
                                      "body": raw, "peer": self.client_address[1]})
                route = self.path.split("?")[0]
                if route.startswith("/hang"):
                    time.sleep(30)
                    return
                if route == "/stream" or (route == "/v1/messages" and b"summary of the conversation" in raw):
                    return self._stream(raw)
                if route == "/gzip":
                    data = gzip.compress(b'{"zipped": true}')
                    return self._send(200, data, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")])
                if route == "/overloaded":
                    return self._send(529, b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
                                      [("Content-Type", "application/json"), ("Retry-After", "7"),
                                       ("request-id", "req_529")])
                body = json.dumps({"echo": self.path, "got": len(raw)}).encode() if self.command != "HEAD" else b""
                self._send(200, body, [("Content-Type", "application/json"), ("request-id", "req_0123"),
                                       ("anthropic-ratelimit-requests-remaining", "99")])

            do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _serve

            def _dechunk(self):
                """A chunked body read to its end (as an upstream reads one), or to where it broke off."""
                out = b""
                while True:
                    line = self.rfile.readline()
                    size = int(line.split(b";")[0].strip() or b"0", 16) if line.strip() else 0
                    if not line or size == 0:
                        self.rfile.readline()
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()

            def _send(self, status, data, headers):
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _stream(self, raw):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("request-id", "req_stream")
                self.end_headers()
                text = "<summary>\n1. Primary Request and Intent: keep OPS-4411 and release/2.7.\n</summary>"
                first = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
                         b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
                         b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
                         b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
                         b'"content_block":{"type":"text","text":""}}\n\n')
                second = ('event: content_block_delta\ndata: ' + json.dumps(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
                    + '\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
                    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn",'
                    '"stop_sequence":null},"usage":{"output_tokens":20}}\n\n'
                    'event: message_stop\ndata: {"type":"message_stop"}\n\n').encode()
                compaction = b"summary of the conversation" in raw
                try:
                    self._chunk(first)
                    if not compaction and not upstream.release.wait(20):
                        return
                    for _ in range(1 if compaction else 50):      # a client gone shows as a broken pipe
                        self._chunk(second)
                        time.sleep(0.02)
                    self._chunk(b"")
                except OSError:
                    upstream.broken.set()

            def _chunk(self, data):
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

        self.listen(Answers)


# the checks in the server's threads: no worker processes to start for each test
QUICK = dataclasses.replace(DEFAULT, serve_check_processes=0)


@pytest.fixture
def relay(tmp_path):
    def start(settings=QUICK, token_env="GUARD_SERVE_TOKEN"):
        up = Upstream().__enter__()
        layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
        srv = Running(layout, None, settings, relay_to=(agents.get("claude-code"), up.url), token_env=token_env)
        srv.__enter__()
        started.append((up, srv))
        return up, srv
    started = []
    yield start
    for up, srv in started:
        srv.__exit__(None, None, None)
        up.__exit__(None, None, None)


def conn(srv, timeout=10):
    return http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)


HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,x-2026",
           "content-type": "application/json", "x-stainless-timeout": "600", "X-Custom-Case": "KeepMe"}


def test_an_ordinary_request_and_its_answer_cross_unchanged(relay):
    up, srv = relay()
    body = b'{"model": "m",   "messages": [{"role": "user", "content": "hi \\u00e9"}], "max_tokens": 5}'
    c = conn(srv)
    c.request("POST", "/v1/messages?beta=true&x=%2Fa", body=body, headers=HEADERS)
    r = c.getresponse()
    data = r.read()
    seen = up.seen[-1]
    assert seen["method"] == "POST" and seen["path"] == "/v1/messages?beta=true&x=%2Fa"
    assert seen["body"] == body                         # byte for byte, spacing and escapes as sent
    got = {k.lower(): v for k, v in seen["headers"]}
    for k, v in HEADERS.items():
        assert got[k.lower()] == v                      # credentials and every header, to the upstream
    assert r.status == 200 and data == json.dumps({"echo": "/v1/messages?beta=true&x=%2Fa", "got": len(body)}).encode()
    assert r.getheader("request-id") == "req_0123" and r.getheader("anthropic-ratelimit-requests-remaining") == "99"
    assert r.getheader("x-compaction-guard-level") is None       # not a compaction: the guard added nothing
    assert [k.lower() for k, _ in r.getheaders()].count("date") == 1 and r.getheader("server").startswith("BaseHTTP")


def test_turns_go_on_one_kept_alive_upstream_connection(relay):
    """The relay keeps its upstream connection for the next turn (no new TCP connection, nor TLS
    handshake with a real API, for each): small turns, a body in pieces, a stream, an error, a
    HEAD, all on the same one."""
    up, srv = relay()
    c = conn(srv)
    for method, path, body in [("POST", "/v1/messages", b"{}"), ("POST", "/v1/messages", b"x" * 3_000_000),
                               ("GET", "/v1/models", None), ("POST", "/overloaded", b"{}"), ("HEAD", "/", None),
                               ("POST", "/v1/messages?beta=true", b'{"a": 1}')]:
        c.request(method, path, body=body, headers={"x-api-key": KEY})
        r = c.getresponse()
        r.read()
        assert r.status in (200, 529)
    up.release.set()
    c.request("POST", "/stream", body=b'{"stream": true}', headers=HEADERS)
    r = c.getresponse()
    assert r.read().endswith(b'data: {"type":"message_stop"}\n\n')
    turns = [s for s in up.seen if s["path"] != "/healthz"]       # serve's own look when it starts aside
    assert len(turns) == 7 and turns[1]["body"] == b"x" * 3_000_000
    assert len({s["peer"] for s in turns}) == 1, [s["peer"] for s in turns]


@pytest.mark.parametrize("method,path", [("GET", "/v1/models"), ("HEAD", "/"), ("POST", "/v1/messages/count_tokens"),
                                         ("DELETE", "/v1/files/file_1"), ("PUT", "/v1/other?q=1")])
def test_every_path_and_method_is_relayed(relay, method, path):
    up, srv = relay()
    c = conn(srv)
    c.request(method, path, body=b"{}" if method in ("POST", "PUT") else None, headers={"x-api-key": KEY})
    r = c.getresponse()
    r.read()
    assert r.status == 200 and up.seen[-1]["method"] == method and up.seen[-1]["path"] == path


def test_a_stream_goes_out_chunk_by_chunk_never_held_whole(relay):
    up, srv = relay()
    c = conn(srv)
    c.request("POST", "/stream", body=b'{"stream": true}', headers=HEADERS)
    r = c.getresponse()
    assert r.status == 200 and r.getheader("request-id") == "req_stream"
    first = r.read1(65536)
    # the upstream holds the rest until the client has the first part: a relay that buffered would hang here
    assert b"message_start" in first and b"content_block_delta" not in first
    up.release.set()
    rest = r.read()
    assert rest.count(b"event: content_block_delta") == 50 and rest.endswith(b'data: {"type":"message_stop"}\n\n')


def test_a_compressed_answer_is_relayed_compressed(relay):
    up, srv = relay()
    c = conn(srv)
    c.request("GET", "/gzip", headers={"accept-encoding": "gzip"})
    r = c.getresponse()
    assert r.getheader("content-encoding") == "gzip"
    assert gzip.decompress(r.read()) == b'{"zipped": true}'


def test_an_upstream_error_is_relayed_as_it_came(relay):
    up, srv = relay()
    c = conn(srv)
    c.request("POST", "/overloaded", body=b"{}", headers=HEADERS)
    r = c.getresponse()
    assert r.status == 529 and r.getheader("retry-after") == "7" and r.getheader("request-id") == "req_529"
    assert json.loads(r.read())["error"]["type"] == "overloaded_error"


def test_no_request_chooses_the_host_its_credentials_go_to(relay):
    up, srv = relay()
    for target, host in (("/v1/messages", "evil.example"), ("http://evil.example/v1/messages", "evil.example"),
                         ("//evil.example/v1/messages", "127.0.0.1")):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.sendall(f"POST {target} HTTP/1.1\r\nHost: {host}\r\nx-api-key: {KEY}\r\nContent-Length: 2\r\n"
                  "Connection: close\r\n\r\n{}".encode())
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        s.close()
        status = int(answer.split(b" ", 2)[1])
        if status == 200:               # relayed: to the configured upstream, whatever the request named
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["echo"].startswith("/")
        else:
            assert status == 400, answer[:200]
        assert KEY.encode() not in answer
    # (serve asks the upstream's /healthz once at start: is it another guard?)
    assert all(s["path"].startswith("/v1/messages") for s in up.seen if s["path"] != "/healthz")


def test_an_unreachable_upstream_is_one_clear_error_without_the_key(tmp_path):
    layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"         # nothing listens there once closed
    with Running(layout, None, QUICK, relay_to=(agents.get("claude-code"), dead)) as srv:
        c = conn(srv)
        c.request("POST", "/v1/messages", body=b"{}", headers=HEADERS)
        r = c.getresponse()
        data = r.read()
    assert r.status == 502 and json.loads(data)["error"]["type"] == "api_error"
    assert KEY.encode() not in data and KEY[:12].encode() not in data


def test_a_client_gone_mid_stream_ends_the_upstream_stream(relay):
    up, srv = relay()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\n{\"stream\": true}")
    got = b""
    while b"message_start" not in got:
        got += s.recv(65536)
    s.close()
    up.release.set()
    assert up.broken.wait(10)       # the relay closed its side: the upstream's next writes failed


def test_an_upstream_that_hangs_is_a_timeout_not_a_hang(relay):
    up, srv = relay(dataclasses.replace(QUICK, relay_read_timeout_seconds=1.0))
    c = conn(srv, timeout=20)
    t0 = time.monotonic()
    c.request("POST", "/hang", body=b"{}", headers=HEADERS)
    r = c.getresponse()
    r.read()
    assert r.status == 504 and time.monotonic() - t0 < 10


def test_a_body_that_is_no_json_but_holds_the_marker_is_relayed_untouched(relay):
    up, srv = relay()
    body = b"not json, but: Your task is to create a detailed summary of the conversation so far"
    c = conn(srv)
    c.request("POST", "/v1/messages", body=body, headers=HEADERS)
    r = c.getresponse()
    r.read()
    assert r.status == 200 and up.seen[-1]["body"] == body


def test_the_prompt_quoted_in_an_earlier_message_is_no_compaction(relay):
    up, srv = relay()
    msgs = REQUEST["body"]["messages"]
    body = dict(REQUEST["body"], stream=False, messages=msgs[:-1] + [
        {"role": "assistant", "content": "quoting: " + msgs[-1]["content"]}, {"role": "user", "content": "thanks"}])
    c = conn(srv)
    c.request("POST", "/v1/messages?beta=true", body=json.dumps(body).encode(), headers=HEADERS)
    r = c.getresponse()
    r.read()
    assert r.getheader("x-compaction-guard-level") is None and up.seen[-1]["body"] == json.dumps(body).encode()


@pytest.mark.parametrize("stream", [False, True])
def test_a_compaction_that_passes_is_the_upstreams_answer_with_the_level(relay, stream):
    up, srv = relay()
    body = json.dumps(dict(REQUEST["body"], stream=stream)).encode()
    c = conn(srv, timeout=60)
    c.request("POST", "/v1/messages?beta=true", body=body, headers=HEADERS)
    r = c.getresponse()
    data = r.read()
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "1"
    assert up.seen[-1]["body"] == body                  # L1 is the request as it came
    assert b"OPS-4411" in data


def test_a_compaction_the_upstream_hangs_on_is_answered_at_l3_in_time(relay):
    up, srv = relay(dataclasses.replace(QUICK, relay_compaction_deadline_seconds=2.0))
    body = dict(REQUEST["body"], stream=False)
    c = conn(srv, timeout=60)
    t0 = time.monotonic()
    # a compaction sent to a Messages path where the upstream never answers
    c.request("POST", "/hang/v1/messages", body=json.dumps(body).encode(), headers=HEADERS)
    r = c.getresponse()
    doc = json.loads(r.read())
    assert r.status == 200 and r.getheader("x-compaction-guard-level") == "3" and time.monotonic() - t0 < 15
    text = doc["content"][0]["text"]
    assert text.startswith("<summary>") and "1. Primary Request and Intent:" in text and "OPS-4411" in text


@pytest.mark.parametrize("declared,stream", [(True, False), (False, False), (True, True)])
def test_a_compaction_in_pieces_the_upstream_hangs_on_is_answered_at_l3_in_time(relay, declared, stream):
    """A compaction body that arrives in pieces goes upstream as it comes; that the upstream then
    never answers is the compaction deadline's to end (L3), not the relay's read timeout; streamed
    (as Claude Code asks), the L3 summary comes as the stream's text."""
    up, srv = relay(dataclasses.replace(QUICK, relay_compaction_deadline_seconds=2.0,
                                        relay_read_timeout_seconds=120.0))
    body = json.dumps(dict(REQUEST["body"], stream=stream)).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
    framing = f"Content-Length: {len(body)}" if declared else "Transfer-Encoding: chunked"
    s.sendall(b"POST /hang/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"x-api-key: {KEY}\r\n{framing}\r\nConnection: close\r\n\r\n".encode())
    t0 = time.monotonic()
    for piece in (body[:len(body) // 2], body[len(body) // 2:]):
        s.sendall(piece if declared else b"%x\r\n" % len(piece) + piece + b"\r\n")
        time.sleep(0.3)
    if not declared:
        s.sendall(b"0\r\n\r\n")
    answer = b""
    while chunk := s.recv(65536):
        answer += chunk
    s.close()
    head, data = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200") and time.monotonic() - t0 < 15, head
    if stream:      # the level comes in the stream (its headers went before the answer was known)
        assert b"text/event-stream" in head and b"message_stop" in data
        text = "".join(json.loads(line[6:])["delta"].get("text", "") for line in data.decode().splitlines()
                       if line.startswith("data: ") and '"content_block_delta"' in line)
    else:
        assert b"x-compaction-guard-level: 3" in head.lower(), head
        text = data.decode()
    assert "OPS-4411" in text and "Primary Request and Intent" in text
    assert any(x["path"].startswith("/hang/v1/messages") for x in up.seen)     # L1 went as it came


def test_a_compaction_an_upstream_never_reads_is_answered_at_l3_in_time(tmp_path):
    """An upstream that takes the connection and never reads the request: the relay's writes of
    the body stall, but the client's body is read at the client's pace, so the compaction is
    known, handed to the core and answered at L3 within its deadline (not relay_read_timeout_seconds)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)      # (inherited: a small window)
    taken = []
    threading.Thread(target=lambda: taken.append(listener.accept()), daemon=True).start()
    layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
    settings = dataclasses.replace(QUICK, relay_compaction_deadline_seconds=2.0, relay_read_timeout_seconds=120.0)
    srv = Running(layout, None, settings, relay_to=(agents.get("claude-code"),
                                                    f"http://127.0.0.1:{listener.getsockname()[1]}")).__enter__()
    msgs = REQUEST["body"]["messages"]
    # 6 MB of history before the compaction prompt: more than the socket buffers between the relay
    # and an upstream that reads nothing hold (4 MB at most here, tcp_wmem)
    log = "".join(f"step {i}: the deploy of OPS-4411 retried on release/2.7, replica lag {i % 97} s\n"
                  for i in range(90_000))
    body = json.dumps(dict(REQUEST["body"], stream=False, messages=[{"role": "user", "content": log}] + msgs)).encode()
    assert len(body) > 6_000_000
    try:
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=90)
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"x-api-key: {KEY}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        t0 = time.monotonic()
        s.sendall(body)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        s.close()
    finally:
        srv.__exit__(None, None, None)
        listener.close()
        for taken_conn, _ in taken:
            taken_conn.close()
    head, data = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200") and b"x-compaction-guard-level: 3" in head.lower(), head
    assert time.monotonic() - t0 < 60 and b"Primary Request and Intent" in data


def test_a_body_that_never_finishes_is_a_timeout_and_no_whole_request_goes_upstream(relay):
    up, srv = relay(dataclasses.replace(QUICK, serve_body_timeout_seconds=1.0))
    seen = len(up.seen)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"partial\":")
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += s.recv(65536)
    s.close()
    assert answer.startswith(b"HTTP/1.1 408")
    # a body in pieces goes upstream as it comes: the upstream saw its start, cut off, never a whole request
    assert all(len(x["body"]) < 100 for x in up.seen[seen:])


@pytest.mark.parametrize("stream", [False, True])
def test_a_compaction_body_in_pieces_is_asked_upstream_once_as_it_comes(relay, stream):
    """A body that arrives in pieces goes upstream as it comes; when it is the agent's compaction,
    that request is its L1: its answer is held and checked, and not asked for a second time."""
    up, srv = relay()
    body = json.dumps(dict(REQUEST["body"], stream=stream)).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
    s.sendall(b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              + f"x-api-key: {KEY}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
    half = len(body) // 2
    s.sendall(body[:half])
    time.sleep(0.3)
    s.sendall(body[half:])
    answer = b""
    while chunk := s.recv(65536):
        answer += chunk
    s.close()
    head, data = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200") and b"x-compaction-guard-level: 1" in head.lower(), head
    asked = [x for x in up.seen if x["path"].startswith("/v1/messages")]
    assert len(asked) == 1 and asked[0]["body"] == body       # asked once, the body byte for byte
    assert b"OPS-4411" in data


@pytest.mark.parametrize("declared", [True, False])
def test_a_body_over_the_limit_is_refused_in_one_line_and_never_whole_upstream(relay, declared):
    """Over relay_max_body_bytes, declared or found as it comes (chunked): a 413 in the agent's
    protocol naming the setting, the key in no answer; declared too large, nothing goes upstream."""
    limit = 64 * 1024
    up, srv = relay(dataclasses.replace(QUICK, relay_max_body_bytes=limit))
    seen = len(up.seen)
    body = b'{"messages":[{"role":"user","content":"' + b"x" * (limit * 2) + b'"}]}'
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    head = f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {KEY}\r\ncontent-type: application/json\r\n"
    if declared:
        s.sendall(head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode())
    else:
        s.sendall(head.encode() + b"Transfer-Encoding: chunked\r\n\r\n")
        try:
            for i in range(0, len(body), 16384):
                piece = body[i:i + 16384]
                s.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            s.sendall(b"0\r\n\r\n")
        except OSError:         # the relay may close before the rest is sent
            pass
    answer = b""
    s.settimeout(10)
    try:
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            got = s.recv(65536)
            if not got:
                break
            answer += got
    except OSError:
        pass
    s.close()
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    error = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert error["type"] == "error" and "relay_max_body_bytes" in error["error"]["message"]
    assert KEY.encode() not in answer
    if declared:
        assert up.seen[seen:] == []
    else:       # it went upstream as it came, and broke off there: never whole
        assert all(len(x["body"]) < len(body) for x in up.seen[seen:])


def test_a_chunked_body_goes_upstream_whole_and_its_answer_comes_back(relay):
    """A client that sends its body chunked (no Content-Length), in many pieces: the upstream
    reads the same bytes, chunked as they came, and the client gets the upstream's answer."""
    up, srv = relay()
    body = json.dumps({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "the deploy of v2.3.1 to staging failed on web-3. " * 6000}]}).encode()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {KEY}\r\ncontent-type: application/json\r\n"
              "Transfer-Encoding: chunked\r\n\r\n".encode())
    for i in range(0, len(body), 8192):
        piece = body[i:i + 8192]
        s.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
    s.sendall(b"0\r\n\r\n")
    s.settimeout(10)
    answer = b""
    while not answer.rstrip().endswith(b"}"):
        got = s.recv(65536)
        if not got:
            break
        answer += got
    s.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["got"] == len(body)
    assert up.seen[-1]["body"] == body
    assert any(k.lower() == "transfer-encoding" and v.lower() == "chunked" for k, v in up.seen[-1]["headers"])


def test_the_marker_search_finds_what_in_finds_wherever_it_lies():
    from compaction_guard.serve.relay import _WINDOW, anchor, holds, searched
    for name in ("claude-code", "codex", "gemini"):
        m = agents.get(name).relay().marker
        at = anchor(m)
        rare = m[at:at + 1]
        # plain text; text full of the marker's rarest byte (the search falls back to searched()
        # part way through); the marker and near misses of it everywhere
        for base in (b"x" * (4 * _WINDOW + 123), rare * (4 * _WINDOW + 123),
                     (m[:-1] + b"." + rare * 7) * (1 + 4 * _WINDOW // (len(m) + 7))):
            assert not holds(base, m) and not searched(base, m), name
            # across every window edge, just before, on and just after it, at both ends, and not whole
            for edge in (1000, _WINDOW, 2 * _WINDOW, 3 * _WINDOW):
                for pos in range(edge - len(m), edge + 2):
                    data = base[:pos] + m + base[pos + len(m):]
                    assert holds(data, m) and holds(data, m, at) and searched(data, m) and m in data, (name, pos)
            assert holds(m + base, m) and holds(base + m, m) and not holds(base + m[:-1], m)
            assert searched(base + m, m, len(base)) and not searched(m + base, m, 1)
        assert holds(b"short " + m, m) and not holds(b"short", m) and not holds(m[1:], m)


def _certificates(where: Path) -> tuple:
    """A CA of the test's own and a certificate it signed for localhost and 127.0.0.1 (openssl)."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=where, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=compaction-guard test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost")
    (where / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "srv.pem",
        "-days", "2", "-extfile", "ext.cnf")
    return where / "ca.pem", where / "srv.pem", where / "srv.key"


def tls_upstream(where: Path, monkeypatch, trusted: bool = True) -> tuple:
    """(the Upstream above on TLS, started, with a certificate for localhost that a CA of the
    test's own signed; its port), that CA trusted through SSL_CERT_FILE or not."""
    import ssl
    ca, cert, key = _certificates(where)
    if trusted:
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    else:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    up = Upstream()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    server = up.servers["main"]
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    up.__enter__()
    return up, server.server_address[1]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test's certificates")
@pytest.mark.parametrize("trusted", [True, False])
def test_an_https_upstream_is_reached_with_the_trust_the_user_set(tmp_path, monkeypatch, trusted):
    """Every real upstream is https: a turn crosses over TLS to an upstream whose certificate the
    user's own CA signed (SSL_CERT_FILE, as behind a company's inspecting proxy), streamed and
    whole; without that trust, one clear 502 and nothing of the key."""
    up, port = tls_upstream(tmp_path, monkeypatch, trusted)
    layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
    srv = Running(layout, None, QUICK, relay_to=(agents.get("claude-code"), f"https://localhost:{port}")).__enter__()
    try:
        body = json.dumps(dict(REQUEST["body"], messages=[{"role": "user", "content": "hi"}])).encode()
        c = conn(srv)
        c.request("POST", "/v1/messages", body=body, headers=HEADERS)
        r = c.getresponse()
        data = r.read()
        if not trusted:
            assert r.status == 502 and KEY.encode() not in data, data[:300]
            return
        assert r.status == 200 and json.loads(data)["got"] == len(body)
        assert up.seen[-1]["body"] == body and dict(up.seen[-1]["headers"])["x-api-key"] == KEY
        up.release.set()
        c.request("POST", "/stream", body=b'{"stream": true}', headers=HEADERS)
        r = c.getresponse()
        streamed = r.read()
        assert r.status == 200 and streamed.count(b"event: content_block_delta") == 50
    finally:
        srv.__exit__(None, None, None)
        up.__exit__(None, None, None)


def test_a_pooled_connection_the_upstream_closed_while_idle_is_not_used_again(tmp_path):
    """Real APIs close keep-alive connections that sit idle: the relay's next turn goes on a new
    connection, not on the dead one (a 502 for the user)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    served, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, _ = listener.accept()
            except OSError:
                continue
            data = b""
            while b"\r\n\r\n" not in data:
                got = c.recv(65536)
                if not got:
                    break
                data += got
            head, _, rest = data.partition(b"\r\n\r\n")
            sizes = [int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")]
            if not sizes:                   # serve's look at its upstream when it starts: not found
                c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                c.close()
                continue
            while len(rest) < sizes[0]:
                rest += c.recv(65536)
            served.append(rest)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
            time.sleep(0.2)             # idle, then closed by the server, as keep-alive timeouts do
            c.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
    srv = Running(layout, None, QUICK, relay_to=(agents.get("claude-code"), f"http://127.0.0.1:{port}")).__enter__()
    try:
        for i in range(2):
            c = conn(srv)
            c.request("POST", "/v1/messages", body=b'{"turn": %d}' % i, headers=HEADERS)
            r = c.getresponse()
            assert (r.status, r.read()) == (200, b"{}"), i
            c.close()
            time.sleep(0.6)
        assert served == [b'{"turn": 0}', b'{"turn": 1}']
    finally:
        srv.__exit__(None, None, None)
        stop.set()
        listener.close()
