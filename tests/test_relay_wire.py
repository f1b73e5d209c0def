"""The relay's own HTTP/1.1 to its upstream (serve/wire.py), against an upstream that writes its
answers byte by byte as the test scripts them: the forms HTTP/1.1 allows that a well-behaved API
seldom sends (an answer that ends with its connection, an interim 100, a HEAD with a length),
the broken ones (no HTTP at all, an answer cut short, a connection closed without an answer), and
the pool's limit."""
from __future__ import annotations

import dataclasses
import http.client
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compaction_guard import agents  # noqa: E402

from test_relay import HEADERS, KEY, QUICK, conn  # noqa: E402
from test_serve import Running  # noqa: E402


class Listening:
    """A server on a raw socket of 127.0.0.1: each connection served by `_serve(socket, peer
    port)` in a thread of its own, until close()."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.3)
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                c, addr = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(c, addr[1]), daemon=True).start()

    def _serve(self, c, peer):
        raise NotImplementedError

    def close(self):
        self.stop.set()
        self.listener.close()


class Scripted(Listening):
    """An upstream on a raw socket: each request read whole (Content-Length), then `answer(path,
    body)` gives the bytes to write (a list: written with a pause between) and whether to close."""

    def __init__(self, answer):
        self.answer = answer
        self.seen = []
        self.peers = []
        super().__init__()

    def _serve(self, c, peer):
        data = b""
        try:
            while not self.stop.is_set():
                while b"\r\n\r\n" not in data:
                    got = c.recv(65536)
                    if not got:
                        return
                    data += got
                head, _, data = data.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                path = lines[0].split(b" ")[1].decode()
                size = next((int(ln.split(b":")[1]) for ln in lines if ln.lower().startswith(b"content-length:")), 0)
                while len(data) < size:
                    data += c.recv(65536)
                body, data = data[:size], data[size:]
                self.seen.append((lines[0].split(b" ")[0].decode(), path, body))
                self.peers.append(peer)
                parts, close = self.answer(path, body)
                for i, part in enumerate(parts):
                    if i:
                        time.sleep(0.05)
                    c.sendall(part)
                if close:
                    return
        except OSError:
            return
        finally:
            c.close()


def _answers(path, body):
    if path.startswith("/healthz"):            # serve's look at its upstream when it starts
        return [b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"], False
    if path == "/until-close":                 # no length, no chunks: the body ends with the connection
        return [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n", b"first part, ",
                b"second part"], True
    if path == "/continue":                    # an interim 100, then the answer
        return [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nanswer!"], False
    if path == "/garbage":
        return [b"\x00\x01 this is no HTTP at all\r\n\r\n"], True
    if path == "/cut":                         # says 100 bytes, sends 10, goes
        return [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789"], True
    if path == "/silent":                      # closes without a word
        return [], True
    if path == "/slow":
        time.sleep(0.3)
    return [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (len(body) + 9)
            + b'{"got": ' + body + b"}"], False


@pytest.fixture
def scripted(tmp_path):
    made = []

    def start(settings=QUICK):
        up = Scripted(_answers)
        layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
        srv = Running(layout, None, settings, relay_to=(agents.get("claude-code"), f"http://127.0.0.1:{up.port}"))
        srv.__enter__()
        made.append((up, srv))
        return up, srv
    yield start
    for up, srv in made:
        srv.__exit__(None, None, None)
        up.close()


def _ask(srv, method, path, body=None):
    c = conn(srv)
    c.request(method, path, body=body, headers={"x-api-key": KEY, "content-type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data


def test_an_answer_that_ends_with_its_connection_arrives_whole(scripted):
    up, srv = scripted()
    r, data = _ask(srv, "POST", "/until-close", b"{}")
    assert (r.status, data) == (200, b"first part, second part")
    # and the next turn goes on a new connection, whole too
    r, data = _ask(srv, "POST", "/v1/messages", b"1")
    assert (r.status, data) == (200, b'{"got": 1}')


def test_an_interim_100_is_passed_over_for_the_answer(scripted):
    up, srv = scripted()
    r, data = _ask(srv, "POST", "/continue", b"{}")
    assert (r.status, data) == (200, b"answer!")


@pytest.mark.parametrize("path", ["/garbage", "/silent"])
def test_no_answer_or_no_http_is_one_clear_502_without_the_key(scripted, path):
    up, srv = scripted()
    r, data = _ask(srv, "POST", path, b"{}")
    assert r.status == 502 and b"could not reach" in data and KEY.encode() not in data, data
    r, data = _ask(srv, "POST", "/v1/messages", b"2")          # the relay goes on
    assert (r.status, data) == (200, b'{"got": 2}')


def test_an_answer_cut_short_reaches_the_client_cut_short(scripted, capfd):
    up, srv = scripted()
    c = conn(srv)
    c.request("POST", "/cut", body=b"{}", headers=HEADERS)
    r = c.getresponse()
    assert r.status == 200
    with pytest.raises(http.client.IncompleteRead):
        r.read()
    deadline, err = time.monotonic() + 5, ""
    while "broke off" not in err and time.monotonic() < deadline:
        err += capfd.readouterr().err
        time.sleep(0.05)
    assert "the upstream's answer broke off" in err and KEY not in err
    r, data = _ask(srv, "POST", "/v1/messages", b"3")
    assert (r.status, data) == (200, b'{"got": 3}')


def test_a_head_answer_with_a_length_has_no_body_and_its_connection_is_kept(scripted):
    up, srv = scripted()
    c = conn(srv)
    c.request("HEAD", "/v1/messages", headers={"x-api-key": KEY})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("content-length") == "9" and r.read() == b""
    c.request("POST", "/v1/messages", body=b"4", headers={"x-api-key": KEY})
    r = c.getresponse()
    assert r.read() == b'{"got": 4}'
    assert len(set(up.peers[-2:])) == 1


def test_turns_beyond_the_connection_limit_wait_for_one_and_all_arrive(scripted):
    """relay_max_connections 2 and 6 turns at once: each waits for a connection, none is lost,
    and no more than 2 connections are opened."""
    up, srv = scripted(dataclasses.replace(QUICK, relay_max_connections=2))
    out = {}

    def one(i):
        out[i] = _ask(srv, "POST", "/slow", b"%d" % i)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert {i: (r.status, d) for i, (r, d) in out.items()} == {i: (200, b'{"got": %d}' % i) for i in range(6)}
    assert len(set(up.peers[-6:])) <= 2


class HttpProxy(Listening):
    """A forwarding HTTP proxy on a raw socket, as companies run them: CONNECT opens a tunnel
    (then bytes both ways); any other request names the whole URL, which it forwards in origin
    form on a connection of its own. Each request line it was asked and each
    Proxy-Authorization it was given are kept; `refuse`: every CONNECT answered 403."""

    def __init__(self, refuse=False):
        self.asked, self.auth, self.refuse = [], [], refuse
        super().__init__()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _serve(self, c, peer):
        data = b""
        while b"\r\n\r\n" not in data:
            got = c.recv(65536)
            if not got:
                c.close()
                return
            data += got
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        method, target, version = lines[0].split(b" ")
        self.asked.append(lines[0].decode())
        self.auth.append(next((ln.split(b":", 1)[1].strip().decode() for ln in lines[1:]
                               if ln.lower().startswith(b"proxy-authorization:")), None))
        if method == b"CONNECT":
            if self.refuse:
                c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                c.close()
                return
            host, port = target.decode().rsplit(":", 1)
            up = socket.create_connection((host, int(port)))
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            from urllib.parse import urlsplit
            u = urlsplit(target.decode())
            up = socket.create_connection((u.hostname, u.port))
            origin = (u.path or "/") + ("?" + u.query if u.query else "")
            kept = [ln for ln in lines[1:] if not ln.lower().startswith(b"proxy-authorization:")]
            up.sendall(b"\r\n".join([method + b" " + origin.encode() + b" " + version] + kept) + b"\r\n\r\n" + rest)
            rest = b""
        if rest:
            up.sendall(rest)
        threading.Thread(target=self._pipe, args=(up, c), daemon=True).start()
        self._pipe(c, up)


def test_an_http_upstream_is_reached_through_the_proxy_the_environment_names(tmp_path, monkeypatch, capfd):
    """HTTP_PROXY with credentials: the turn goes to the proxy naming the whole URL, with the
    proxy's credentials (never the client's own Proxy-Authorization), and arrives whole; the proxy's
    password is in no line serve writes."""
    proxy = HttpProxy()
    monkeypatch.setenv("HTTP_PROXY", f"http://corp%40user:s3cret-proxy-pw@127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    up = Scripted(_answers)
    layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
    srv = Running(layout, None, QUICK, relay_to=(agents.get("claude-code"), f"http://127.0.0.1:{up.port}")).__enter__()
    try:
        c = conn(srv)
        c.request("POST", "/v1/messages?beta=true", body=b"7",
                  headers={"x-api-key": KEY, "proxy-authorization": "Basic client-own"})
        r = c.getresponse()
        assert (r.status, r.read()) == (200, b'{"got": 7}')
        assert f"POST http://127.0.0.1:{up.port}/v1/messages?beta=true HTTP/1.1" in proxy.asked
        import base64
        assert base64.b64encode(b"corp@user:s3cret-proxy-pw").decode() in proxy.auth[-1]
        assert up.seen[-1] == ("POST", "/v1/messages?beta=true", b"7")
    finally:
        srv.__exit__(None, None, None)
        up.close()
        proxy.close()
    err = capfd.readouterr().err
    assert f"through the proxy http://127.0.0.1:{proxy.port}" in err and "s3cret-proxy-pw" not in err


@pytest.mark.skipif(__import__("shutil").which("openssl") is None, reason="openssl makes the test's certificates")
@pytest.mark.parametrize("refused", [False, True])
def test_an_https_upstream_is_reached_through_a_connect_tunnel(tmp_path, monkeypatch, refused):
    """HTTPS_PROXY: a CONNECT tunnel to the upstream, TLS inside it to the upstream's own name
    (the user's CA), turns and a stream on it; a proxy that refuses the tunnel is one clear 502."""
    import json

    from test_relay import REQUEST, tls_upstream
    proxy = HttpProxy(refuse=refused)
    monkeypatch.setenv("https_proxy", f"127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", "example.invalid")
    up, port = tls_upstream(tmp_path, monkeypatch)
    layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
    srv = Running(layout, None, QUICK, relay_to=(agents.get("claude-code"), f"https://localhost:{port}")).__enter__()
    try:
        body = json.dumps(dict(REQUEST["body"], messages=[{"role": "user", "content": "hi"}])).encode()
        c = conn(srv)
        c.request("POST", "/v1/messages", body=body, headers=HEADERS)
        r = c.getresponse()
        data = r.read()
        assert proxy.asked[0] == f"CONNECT localhost:{port} HTTP/1.1"
        if refused:
            assert r.status == 502 and b"ProxyError" in data and KEY.encode() not in data, data
            return
        assert r.status == 200 and json.loads(data)["got"] == len(body)
        up.release.set()
        c.request("POST", "/stream", body=b'{"stream": true}', headers=HEADERS)
        r = c.getresponse()
        assert r.status == 200 and r.read().count(b"event: content_block_delta") == 50
        turns = [t for t in up.seen if t["path"] != "/healthz"]        # serve's own look when it starts aside
        assert len(turns) == 2 and len({t["peer"] for t in turns}) == 1      # both on one tunnel, kept alive
        # a compaction: L1 (httpx) through the same proxy, its answer checked and relayed
        asked = len(proxy.asked)
        c.request("POST", "/v1/messages", body=json.dumps(REQUEST["body"]).encode(), headers=HEADERS)
        r = c.getresponse()
        assert r.status == 200 and b"OPS-4411" in r.read() and r.getheader("x-compaction-guard-level") == "1"
        assert len(proxy.asked) > asked and set(proxy.asked) == {f"CONNECT localhost:{port} HTTP/1.1"}
    finally:
        srv.__exit__(None, None, None)
        up.__exit__(None, None, None)
        proxy.close()


def test_no_proxy_sends_the_upstream_straight_and_a_socks_proxy_is_said_and_passed_by(tmp_path, monkeypatch, capfd):
    proxy = HttpProxy()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    up = Scripted(_answers)
    layout = agents.get("claude-code").resolve(home=str(tmp_path / "claude"))
    srv = Running(layout, None, QUICK, relay_to=(agents.get("claude-code"), f"http://127.0.0.1:{up.port}")).__enter__()
    try:
        assert _ask(srv, "POST", "/v1/messages", b"8")[1] == b'{"got": 8}' and proxy.asked == []
    finally:
        srv.__exit__(None, None, None)
        up.close()
        proxy.close()
    # a proxy of another kind (set for other programs): said once at start, the upstream reached directly
    monkeypatch.setenv("ALL_PROXY", "socks5://user:s3cret-socks-pw@127.0.0.1:1080")
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.delenv("NO_PROXY")
    capfd.readouterr()
    up = Scripted(_answers)
    srv = Running(layout, None, QUICK, relay_to=(agents.get("claude-code"), f"http://127.0.0.1:{up.port}")).__enter__()
    try:
        assert _ask(srv, "POST", "/v1/messages", b"9")[1] == b'{"got": 9}'
    finally:
        srv.__exit__(None, None, None)
        up.close()
    err = capfd.readouterr().err
    assert "socks5://127.0.0.1:1080) is not an http:// proxy" in err and "s3cret" not in err, err
