"""The relay's pass-through to its one upstream: HTTP/1.1 written and read on asyncio's own
transports, below any HTTP client library.

A request's head is written as bytes, its body as it comes (with the length the client declared,
or chunked); the answer is parsed by httptools (llhttp, the C parser uvicorn reads requests with)
and handed on as it arrives, the connection's reading paused while more than `_HIGH` bytes of it
wait for the client (a stream is never held whole). Connections are kept alive for the next
request (at most `relay_max_connections` open, the idle ones reused last-in first-out; one the
upstream closed while idle is dropped); TLS by the event loop, with the trust httpx would use;
through the http:// proxy the environment names, as httpx would go (proxy_for: a CONNECT tunnel to
an https upstream, the whole URL asked of the proxy for an http one).
Each wait is bounded: connecting (`relay_connect_timeout_seconds`), a free connection, every
write and every read (`relay_read_timeout_seconds`).

This is what httpcore and h11 did for the relay, without their per-request objects and events
in Python: a relayed 10 KB turn's CPU 0.57-0.62 -> 0.27 ms, a 1 MB turn's 1.03-1.19 -> 0.79 ms
here (benchmarks/bench_relay.py's turns, before and after). Compactions go through httpx (relay.py's
RelayRoute), which decodes the answer the guard reads."""
from __future__ import annotations

import asyncio
import base64
import collections
import dataclasses
import socket
import ssl
import urllib.parse
import urllib.request
from typing import Optional

import httptools

_HIGH = 256 * 1024          # an answer's bytes waiting for the client before the upstream is paused
_ONE_WRITE = 64 * 1024      # a body under this goes out in the same write as the head


class WireError(Exception):
    """The upstream could not be reached, or its answer broke off; `name` says how (no request
    content, no credential in it)."""

    def __init__(self, name: str, timeout: bool = False):
        super().__init__(name)
        self.name = name
        self.timeout = timeout


@dataclasses.dataclass(frozen=True)
class Via:
    """The HTTP proxy the relay reaches its upstream through: where, its credentials' header
    value (or None), how it is shown (without them), and its URL as set (with them: for httpx;
    neither in the repr)."""
    host: str
    port: int
    auth: Optional[bytes] = dataclasses.field(repr=False)
    shown: str
    url: str = dataclasses.field(repr=False)


def proxy_for(base: str) -> Optional[Via]:
    """The proxy the environment names for `base`, read as httpx reads it for the guard's other
    requests (HTTPS_PROXY or HTTP_PROXY by the upstream's scheme, else ALL_PROXY, in either case;
    NO_PROXY honoured); None: straight to it. An https upstream is reached through a CONNECT
    tunnel, an http one by asking the proxy for the whole URL. ValueError for a proxy that is not
    http:// (https:// and SOCKS proxies are not spoken here), saying so without its credentials."""
    u = urllib.parse.urlsplit(base)
    proxies = urllib.request.getproxies_environment()
    url = proxies.get(u.scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass_environment(u.hostname or "", proxies):
        return None
    p = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    shown = f"{p.scheme}://{p.hostname}" + (f":{p.port}" if p.port else "")
    if p.scheme != "http" or not p.hostname:
        raise ValueError(f"the proxy set for {u.scheme} ({shown}) is not an http:// proxy, the only kind the relay "
                         "speaks: it goes to its upstream directly (set HTTPS_PROXY to an http:// proxy, or NO_PROXY "
                         "to the upstream's host to say so)")
    auth = None
    if p.username:
        pair = f"{urllib.parse.unquote(p.username)}:{urllib.parse.unquote(p.password or '')}"
        auth = b"Basic " + base64.b64encode(pair.encode("utf-8"))
    return Via(p.hostname, p.port or 80, auth, shown, p.geturl())


def trust() -> ssl.SSLContext:
    """The TLS trust httpx and httpcore use: the system's (SSL_CERT_FILE and SSL_CERT_DIR
    honoured) and certifi's roots; HTTP/1.1 offered by ALPN."""
    context = ssl.create_default_context()
    try:
        import certifi
        context.load_verify_locations(certifi.where())
    except (ImportError, OSError):
        pass
    context.set_alpn_protocols(["http/1.1"])
    return context


class _Conn(asyncio.Protocol):
    """One connection to the upstream: its answer parsed as it arrives."""

    def __init__(self, loop):
        self.loop = loop
        self.transport = None
        self.lost = False
        self.idle = True
        self.writable = None        # a future while the transport's write buffer is over its mark
        self.waiter = None          # a future while the relay waits for more of the answer
        self._begin(False)

    def _begin(self, head_only: bool) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status, self.headers, self.chunks, self.size = 0, [], collections.deque(), 0
        self.head = self.done = self.interim = self.paused = self.keep_alive = False
        self.head_only = head_only
        self.error = None

    # ---- asyncio
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.idle:               # bytes nobody asked for: the connection is not reused
            self.lost = True
            self.transport.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = f"the upstream's answer is no HTTP/1.1 ({type(exc).__name__})"
            self.transport.close()
        self._wake()

    def eof_received(self):
        return None                 # closed: connection_lost follows

    def connection_lost(self, exc) -> None:
        self.lost = True
        if self.head and not self.done and not self.framed():
            self.done = True        # an answer without a length ends where its connection does
        w = self.writable
        if w is not None and not w.done():
            w.set_result(None)
        self._wake()

    def pause_writing(self) -> None:
        if self.writable is None or self.writable.done():
            self.writable = self.loop.create_future()

    def resume_writing(self) -> None:
        w = self.writable
        if w is not None and not w.done():
            w.set_result(None)

    # ---- httptools
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:     # an interim answer (100 Continue): the real one follows
            self.headers, self.interim = [], True
            return
        self.status, self.head = status, True
        self.keep_alive = self.parser.should_keep_alive()       # llhttp forgets it once the answer ends
        if self.head_only:          # the answer to a HEAD: its length describes no body here
            self.done = True

    def on_body(self, body: bytes) -> None:
        if self.head_only:
            return
        self.chunks.append(body)
        self.size += len(body)
        if self.size > _HIGH and not self.paused and not self.lost:
            self.paused = True
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        if self.interim:
            self.interim = False
            return
        self.done = True

    # ---- the relay's side
    def framed(self) -> bool:
        """Whether the answer says where it ends (a length, chunks, or a status without a body)."""
        if self.status in (204, 304):
            return True
        return any(k.lower() in (b"content-length", b"transfer-encoding") for k, _ in self.headers)

    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(True)

    async def more(self, timeout: float) -> None:
        """Until the answer moves on (bytes, its end, or the connection's); WireError after
        `timeout` seconds of nothing."""
        fut = self.waiter = self.loop.create_future()
        timer = self.loop.call_later(timeout, _expire, fut)
        try:
            if await fut is False:
                raise WireError("ReadTimeout", timeout=True)
        finally:
            timer.cancel()
            self.waiter = None

    async def drained(self, timeout: float) -> None:
        w = self.writable
        if w is None or w.done():
            return
        timer = self.loop.call_later(timeout, _expire, w)
        try:
            if await w is False:
                raise WireError("WriteTimeout", timeout=True)
        finally:
            timer.cancel()

    def take(self) -> Optional[bytes]:
        """The answer's bytes that have come, joined (None when none have)."""
        if not self.chunks:
            return None
        out = self.chunks.popleft() if len(self.chunks) == 1 else b"".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        if self.paused and not self.lost:
            self.paused = False
            self.transport.resume_reading()
        return out

    def reusable(self) -> bool:
        return self.done and not self.lost and self.error is None \
            and self.keep_alive and not self.chunks

    def close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()


def _expire(fut) -> None:
    if not fut.done():
        fut.set_result(False)


class Answer:
    """The upstream's answer as it comes: `status`, `headers` (as the upstream wrote them), the
    body in `stream` (async, chunk by chunk), `aclose()` gives the connection back (or closes it
    when the answer was not read to its end). What httpcore's Response gave the relay."""

    def __init__(self, wire: "Wire", conn: _Conn, sent: bool):
        self.wire, self.conn, self.sent = wire, conn, sent
        self.status, self.headers = conn.status, conn.headers
        self.closed = False

    @property
    def stream(self):
        return self._chunks()

    async def _chunks(self):
        conn, timeout = self.conn, self.wire.read_timeout
        while True:
            data = conn.take()
            if data is not None:
                yield data
                continue
            if conn.done:
                return
            if conn.error is not None or conn.lost:
                raise WireError(conn.error or "RemoteProtocolError: the upstream closed its answer before its end")
            await conn.more(timeout)

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.wire.give(self.conn, self.sent and self.conn.reusable())


class Wire:
    """The pool of connections to one upstream (`base`: http(s)://host[:port][/path]) and the
    requests on them: each one's target after the base's own path, with the base's Host."""

    def __init__(self, base: str, settings, via: Optional[Via] = None):
        u = urllib.parse.urlsplit(base)
        self.hostname = u.hostname or ""
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.ssl = trust() if u.scheme == "https" else None
        self.via = via
        host = u.netloc.rsplit("@", 1)[-1].encode("idna")       # as the base names it, without credentials
        self.authority = host if u.port is not None else host + b":%d" % self.port
        # every request's target begins with the base's own path (a gateway's /anthropic, say);
        # through a proxy an http upstream's requests name the whole URL, and carry the proxy's credentials
        self.before = (f"{u.scheme}://".encode() + host if via is not None and self.ssl is None else b"") \
            + u.path.rstrip("/").encode("utf-8")
        self.host_line = b"Host: " + host + b"\r\n"
        if via is not None and via.auth and self.ssl is None:
            self.host_line += b"Proxy-Authorization: " + via.auth + b"\r\n"
        self.connect_timeout = settings.relay_connect_timeout_seconds
        self.read_timeout = settings.relay_read_timeout_seconds
        self.limit = max(1, settings.relay_max_connections)
        self.keep = min(64, self.limit)
        self.open = 0               # connections open (in use or idle)
        self.idle = []
        self.waiting = collections.deque()      # futures of requests waiting for a connection

    async def request(self, method: str, target: bytes, head: bytes, body=b"", pieces=None,
                      chunked: bool = False) -> Answer:
        """`method target` (its path and query) with the upstream's Host and the header lines
        `head` (each ending CRLF, framing included), then
        `body`, or each piece `pieces` (async) yields (chunked: in chunks); the answer once its
        head has come. WireError (its `timeout` set for a timeout) when it cannot be."""
        conn = await self._take()
        try:
            conn._begin(method == "HEAD")
            conn.idle = False
            whole = await self._send(conn, method.encode("latin-1") + b" " + self.before + target + b" HTTP/1.1\r\n"
                                     + self.host_line + head + b"\r\n", body, pieces, chunked)
            while not conn.head:
                if conn.error is not None or conn.lost:
                    raise WireError(conn.error or "RemoteProtocolError: the upstream closed the connection "
                                    "without an answer")
                await conn.more(self.read_timeout)
            return Answer(self, conn, whole)
        except BaseException:
            self.give(conn, False)
            raise

    async def _send(self, conn: _Conn, start: bytes, body: bytes, pieces, chunked: bool) -> bool:
        """The request written; whether all of it was (not when the upstream answered or went
        before its end)."""
        t = conn.transport
        try:
            if pieces is None:
                if len(body) < _ONE_WRITE:
                    t.write(start + body)
                else:
                    t.write(start)
                    t.write(body)
                await conn.drained(self.read_timeout)
                return not conn.lost
            t.write(start)
            try:
                async for piece in pieces:
                    if conn.lost or conn.head:
                        return False        # the upstream answered (or went) before the body's end
                    if chunked:
                        if piece:
                            t.writelines((b"%x\r\n" % len(piece), piece, b"\r\n"))
                    else:
                        t.write(piece)
                    await conn.drained(self.read_timeout)
            finally:
                await pieces.aclose()
            if conn.lost:
                return False
            if chunked:
                t.write(b"0\r\n\r\n")
            return True
        except (OSError, RuntimeError) as exc:      # RuntimeError: a transport already closed
            raise WireError(f"WriteError ({type(exc).__name__})") from None

    # ---- the pool
    async def _take(self) -> _Conn:
        while self.idle:
            conn = self.idle.pop()
            if not conn.lost and not conn.transport.is_closing():
                return conn
            conn.close()
            self.open -= 1
        if self.open >= self.limit:
            loop = asyncio.get_running_loop()
            fut = loop.create_future()
            self.waiting.append(fut)
            timer = loop.call_later(self.read_timeout, _expire, fut)
            try:
                conn = await fut
            except asyncio.CancelledError:      # gone while waiting: what it was handed goes on
                if fut.done() and not fut.cancelled() and fut.result() is not False:
                    got = fut.result()
                    if got is None:
                        self.open -= 1
                        self._next(None)
                    else:
                        self.give(got, True)
                raise
            finally:
                timer.cancel()
                if fut in self.waiting:
                    self.waiting.remove(fut)
            if conn is False:
                raise WireError("PoolTimeout", timeout=True)
            if conn is not None:
                return conn
            # the right to open one, counted by _next
        else:
            self.open += 1
        try:
            return await self._connect()
        except BaseException:
            self.open -= 1
            self._next(None)
            raise

    def give(self, conn: _Conn, keep: bool) -> None:
        """A connection back from a request: to a request waiting for one, or kept idle, or closed."""
        if keep and not conn.lost:
            conn.idle = True
            if self._next(conn):
                return
            if len(self.idle) < self.keep:
                self.idle.append(conn)
                return
        conn.close()
        self.open -= 1
        self._next(None)

    def _next(self, conn: Optional[_Conn]) -> bool:
        """Hand `conn` (or the right to open one: None) to the first request waiting."""
        while self.waiting:
            fut = self.waiting.popleft()
            if not fut.done():
                if conn is None:
                    self.open += 1
                fut.set_result(conn)
                return True
        return False

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        via, tunnel = self.via, self.via is not None and self.ssl is not None
        host, port = (via.host, via.port) if via is not None else (self.hostname, self.port)
        use_ssl = self.ssl if via is None else None
        try:
            _t, conn = await asyncio.wait_for(
                loop.create_connection(lambda: _Conn(loop), host, port, ssl=use_ssl,
                                       server_hostname=self.hostname if use_ssl is not None else None),
                self.connect_timeout)
            sock = conn.transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                # a request's head and body leave at once (without it, Nagle's algorithm holds the
                # body for the head's delayed acknowledgement: milliseconds on every turn)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tunnel:
                await self._tunnel(conn)
                conn.transport = await asyncio.wait_for(
                    loop.start_tls(conn.transport, conn, self.ssl, server_hostname=self.hostname),
                    self.connect_timeout)
        except asyncio.TimeoutError:
            raise WireError("ConnectTimeout", timeout=True) from None
        except ssl.SSLError as exc:
            raise WireError(type(exc).__name__) from None
        except OSError as exc:
            raise WireError(f"ConnectError: {exc.strerror or type(exc).__name__}") from None
        return conn

    async def _tunnel(self, conn: _Conn) -> None:
        """CONNECT through the proxy to the upstream; WireError when the proxy refuses."""
        conn._begin(True)               # its answer has no body to read
        conn.idle = False
        auth = b"Proxy-Authorization: " + self.via.auth + b"\r\n" if self.via.auth else b""
        conn.transport.write(b"CONNECT " + self.authority + b" HTTP/1.1\r\nHost: " + self.authority + b"\r\n"
                             + auth + b"\r\n")
        try:
            while not conn.head:
                if conn.error is not None or conn.lost:
                    raise WireError("ProxyError: the proxy closed the connection")
                await conn.more(self.connect_timeout)
        except BaseException:
            conn.close()
            raise
        if not 200 <= conn.status < 300:
            conn.close()
            raise WireError(f"ProxyError: the proxy answered {conn.status} to CONNECT")
        conn.idle = True

    async def aclose(self) -> None:
        for conn in self.idle:
            conn.close()
        self.idle.clear()
