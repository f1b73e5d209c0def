"""The relay: `serve --agent NAME` in front of an agent that compacts on the endpoint of every
turn (Claude Code: `ANTHROPIC_BASE_URL`; Codex: its model provider's `base_url`; Gemini CLI:
`GOOGLE_GEMINI_BASE_URL`).

Every request goes to the upstream the operator set (never one a request names) as it came:
method, path, query, headers (the user's credentials among them; hop-by-hop headers and the
guard's own token aside) and body; the answer comes back as it comes, status, headers and
body, a stream chunk by chunk as the upstream sends it, never held whole. The only work on an
ordinary request is one byte search of its body for the agent's compaction marker
(agents/<name>: `RelaySpec.marker`); a body holding it, POSTed to a path where the agent's
protocol answers (serve/<protocol>.py `generation`: not Codex's `/responses/compact`), is
parsed, and when the agent's reader says it is a compaction, it goes to the validating core
(core.py) instead: L1 is the request as
it came, sent with the client's own credentials, its answer held and checked against the
conversation in the request; L2 is the same request made aggressive (`RelayRoute.aggressive`);
L3 is built by extraction in the structure the prompt asks for. An answer that passed at L1 or
L2 is relayed as the upstream sent it; L3 is written in the protocol and mode the client asked
for (streamed or not: a body field for most protocols, the path for Gemini's). An upstream error or timeout on a compaction is answered at L3; on any other request it
is relayed as it came (502/504 in the agent's protocol when no answer came at all).

Nothing of a request is logged; the credentials are scrubbed from every message a failure
makes (`RelayRoute.scrub`)."""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib
import json
from typing import Optional

import httpx

from ..contract import of_request
from ..redact import Redactor, safe_url
from .answers import LateHeadersStream
from .core import Reply, _cancel_task, brevity
from .protocol import headers_of
from .requests import Request
from .upstream import HOP_HEADER, UpstreamFailure
from .wire import WireError

TOKEN_HEADER = b"x-compaction-guard-token"
OWN_PATHS = frozenset({"/healthz", "/livez", "/metrics"})
# a connection's own headers (RFC 9110 7.6.1), and what the client's HTTP stack sets for the next hop
_HOP = frozenset({b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"proxy-connection",
                  b"te", b"trailer", b"trailers", b"transfer-encoding", b"upgrade", b"host", b"content-length",
                  TOKEN_HEADER, HOP_HEADER.encode()})
_HOP_OUT = frozenset({b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-connection", b"te", b"trailer",
                      b"trailers", b"transfer-encoding", b"upgrade"})
# headers that may carry a credential: their values are scrubbed from every message
_SECRET_HINTS = (b"key", b"token", b"auth", b"cookie", b"secret", b"signature")


class Relay:
    """The pass-through to the agent's upstream (one pooled httpx client) and its compactions
    handed to the core (`proxy`)."""

    def __init__(self, agent, base_url: str, proxy, settings, token: Optional[str] = None, logger=None):
        import httpx
        self.agent = agent
        self.spec = agent.relay()
        self.anchor = anchor(self.spec.marker)      # where the marker's rarest byte lies (holds())
        self.protocol = importlib.import_module(f"{__package__}.{self.spec.protocol}")
        self.base = base_url.rstrip("/")
        self.proxy = proxy
        self.settings = settings
        self.token = token
        self.logger = logger
        self.unread = set()             # the content codings already said to be unreadable
        import socket
        # every turn: HTTP/1.1 on asyncio's transports (wire.py), the bytes relayed as they come
        from .wire import Wire, proxy_for
        try:
            self.via = proxy_for(self.base)     # HTTPS_PROXY and the like, as httpx reads them
        except ValueError as exc:
            self.via = None
            self.log(str(exc))
        self.wire = Wire(self.base, settings, self.via)
        # a compaction's levels: httpx, which decodes the answer the guard reads; TCP_NODELAY: a
        # request's head and body leave at once
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        keep = min(64, settings.relay_max_connections)
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.relay_read_timeout_seconds, connect=settings.relay_connect_timeout_seconds),
            transport=httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=settings.relay_max_connections,
                                                                   max_keepalive_connections=keep),
                                               socket_options=nodelay,
                                               proxy=self.via.url if self.via is not None else None),
            follow_redirects=False)

    def describe(self) -> str:
        return f"{self.agent.title}'s upstream {safe_url(self.base)} (relayed)"

    async def close(self) -> None:
        await self.client.aclose()
        await self.wire.aclose()

    def log(self, line: str) -> None:
        if self.logger is not None:
            self.logger(f"compaction-guard serve: {line}")

    # ------------------------------------------------------------------ every request
    def allowed(self, headers: list) -> bool:
        if self.token is None:
            return True
        given = next((v for k, v in headers if k == TOKEN_HEADER), b"")
        return hmac.compare_digest(given, self.token.encode())

    async def __call__(self, scope, receive, send) -> None:
        headers = scope["headers"]
        if not self.allowed(headers):
            return await self._error(send, 401, f"missing or wrong guard token ({TOKEN_HEADER.decode()} header)")
        target = scope.get("raw_path") or scope["path"].encode("utf-8")
        if not target.startswith(b"/") or target.startswith(b"//") or scope["method"] == "CONNECT":
            return await self._error(send, 400, "the guard relays requests for paths of its upstream only")
        query = scope.get("query_string") or b""
        url = self.base + target.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
        target = target + (b"?" + query if query else b"")         # after the upstream's own path (wire.py)
        forward = [(k, v) for k, v in headers if k not in _HOP]
        sized = any(k == b"content-length" for k, _ in headers)
        body = _Body(self.settings, receive)
        first = await body.first(headers)
        if first is None:
            return await self._refused(send, body)
        if body.more:                   # a body in several pieces: upstream as it comes (see _through)
            declared = next((v for k, v in headers if k == b"content-length"), None)
            return await self._through(scope, receive, send, url, target, forward, declared, body, first)
        raw = first
        encoding = _encoding(headers)
        if encoding and scope["method"] == "POST" and self.protocol.generation(scope["path"]):
            # a compressed body (Codex compresses its turns with zstd for the OpenAI provider
            # signed in with ChatGPT): searched and read as the upstream reads it
            plain = await self.proxy.cpu(_decoded, raw, encoding, self.settings.relay_max_body_bytes)
            self._unread(plain, encoding)
            if plain is not None and self.spec.marker in plain:
                parsed = await self._compaction_body(plain)
                if parsed is not None:
                    return await self._compaction(scope, receive, send, url, forward, raw, parsed, plain=plain)
        elif scope["method"] == "POST" and holds(raw, self.spec.marker, self.anchor) \
                and self.protocol.generation(scope["path"]):
            parsed = await self._compaction_body(raw)
            if parsed is not None:
                return await self._compaction(scope, receive, send, url, forward, raw, parsed)
        await self._pass(scope["method"], url, target, forward, raw, sized, receive, send)

    def _unread(self, plain: Optional[bytes], encoding: bytes) -> None:
        """Said once per coding: bodies the guard could not decode go on unchecked (were one a
        compaction, its answer would not be checked)."""
        if plain is None and encoding not in self.unread:
            self.unread.add(encoding)
            self.log(f"request bodies in {encoding.decode('latin-1')[:40]!r} the guard cannot decode (or over "
                     f"relay_max_body_bytes decoded) are relayed unchecked")

    async def _refused(self, send, body: "_Body") -> None:
        """The answer to a body that did not arrive whole: too large (413), too slow (408), or
        nothing when the client went away."""
        if body.failed == "large":
            await self._error(send, 413, f"request body over {self.settings.relay_max_body_bytes} bytes "
                              "(setting relay_max_body_bytes)")
        elif body.failed == "slow":
            await self._error(send, 408, f"the request body did not arrive within "
                              f"{self.settings.serve_body_timeout_seconds:g} s (setting serve_body_timeout_seconds)")

    async def _through(self, scope, receive, send, url: str, target: bytes, headers: list, declared,
                       body: "_Body", first: bytes) -> None:
        """A body in several pieces goes upstream as it comes, each piece kept (held once), so the
        upstream reads it while the rest arrives (the client's body is read at the client's pace,
        not the upstream's: `read`). Its first answer is awaited whole-bodied as L1:
        when the body turns out to be the agent's compaction, that answer is held and checked (the
        core's first level, already asked); otherwise it is relayed as it comes."""
        marker = self.spec.marker
        generation = scope["method"] == "POST" and self.protocol.generation(scope["path"])
        encoding = _encoding(scope["headers"])
        found = [generation and not encoding and holds(first, marker, self.anchor)]

        edge = len(marker) - 1             # a marker across two pieces has at most this much in each
        fed = asyncio.Event()               # the whole body has come from the client
        came = asyncio.Queue()              # its pieces after the first, as they come; None after the last

        async def read():
            """The client's body read as it comes, whatever the upstream's pace: that it is whole
            (and a compaction) is known even while an upstream that does not read holds its writes."""
            tail = first[-edge:]
            try:
                while body.more:
                    piece = await body.next()
                    if piece is None:
                        came.put_nowait(_BodyBroke(body.failed or "gone"))
                        return
                    if generation and not encoding and not found[0]:
                        # the piece searched where it lies (no copy of it), and the joint apart
                        found[0] = holds(piece, marker, self.anchor) or marker in tail + piece[:edge]
                        tail = (tail + piece)[-edge:] if len(piece) < edge else piece[-edge:]
                    came.put_nowait(piece)
                came.put_nowait(None)
                fed.set()
            except BaseException:
                came.put_nowait(_BodyBroke("gone"))     # never a body cut short passed off as whole
                raise

        async def feed():
            yield first
            while (piece := await came.get()) is not None:
                if isinstance(piece, _BodyBroke):
                    raise piece
                yield piece
        reading = asyncio.ensure_future(read())
        # its length as the client declared it; a chunked body goes on chunked (without either
        # header, h11 would take it for an empty body and refuse the first piece)
        head = self._head(headers, b"Content-Length: " + declared if declared else b"Transfer-Encoding: chunked")
        sending = asyncio.ensure_future(
            self.wire.request(scope["method"], target, head, pieces=feed(), chunked=not declared))

        async def answered():
            """The upstream's answer, or None once the client has the error that stands for it."""
            try:
                resp, failed = await sending, None
            except (WireError, _BodyBroke) as exc:      # the body broke off, or the upstream could not be reached
                resp, failed = None, exc
            # (an upstream that answered before the body's end: the rest is not read, and the
            # client's next message is the answer's business: _relay_answer)
            if not reading.done():
                await _cancel_task(reading)
            elif not reading.cancelled():
                reading.exception()         # (retrieved: whatever it was, the answer says it)
            if failed is None:
                return resp
            if body.failed is not None or isinstance(failed, _BodyBroke):
                await self._refused(send, body)
            else:
                await self._unreached(send, failed)
            return None
        # the body whole (or broken off), or the answer first (an upstream that answers before the
        # body's end, or an error): whether it is a compaction is known from the body, so a
        # compaction is handed to the core before its answer's head comes, and its deadline holds
        # from there (relay_compaction_deadline_seconds, not relay_read_timeout_seconds)
        try:
            await asyncio.wait({sending, reading}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            sending.cancel()
            reading.cancel()
            raise
        if not fed.is_set():
            resp = await answered()
            return None if resp is None else await self._relay_answer(scope["method"], url, resp, receive, send)
        if generation and encoding:         # compressed: searched as the upstream reads it
            plain = await self.proxy.cpu(_decoded, body.whole(), encoding, self.settings.relay_max_body_bytes)
            self._unread(plain, encoding)
            found[0] = plain is not None and marker in plain
        parsed = None
        if found[0]:                        # joined only here: an ordinary turn's body never is
            raw = body.whole()
            plain = raw if not encoding else plain
            parsed = await self._compaction_body(plain)
        if parsed is None:
            resp = await answered()
            return None if resp is None else await self._relay_answer(scope["method"], url, resp, receive, send)
        return await self._compaction(scope, receive, send, url, headers, raw, parsed, asked=_Asked(sending),
                                      plain=plain)

    async def _pass(self, method: str, url: str, target: bytes, headers: list, raw: bytes, sized: bool, receive,
                    send) -> None:
        """The request relayed as it came, its answer as it comes."""
        # the body's length as the client said it (or as it came, chunked)
        head = self._head(headers, b"Content-Length: %d" % len(raw) if raw or sized else None)
        try:
            resp = await self.wire.request(method, target, head, raw)
        except WireError as exc:
            return await self._unreached(send, exc)
        await self._relay_answer(method, url, resp, receive, send)

    @staticmethod
    def _head(headers: list, framing: Optional[bytes]) -> bytes:
        """The request's header lines after the upstream's Host (wire.py): the client's own
        headers as they came (uvicorn's parser let no line break into them), then the body's framing."""
        lines = [k + b": " + v for k, v in headers]
        if framing:
            lines.append(framing)
        lines.append(b"")
        return b"\r\n".join(lines)

    async def _unreached(self, send, exc: "WireError") -> None:
        if exc.timeout:
            return await self._error(send, 504, f"{safe_url(self.base)} did not answer within "
                                     f"{self.settings.relay_read_timeout_seconds:g} s ({exc.name})")
        return await self._error(send, 502, f"the guard could not reach {safe_url(self.base)} ({exc.name})")

    async def _relay_answer(self, method: str, url: str, resp, receive, send) -> None:
        """The upstream's answer relayed as it comes; the client gone, the upstream's answer too."""
        gone = asyncio.ensure_future(_disconnected(receive))
        pump = asyncio.ensure_future(self._pump(resp, send))
        try:
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not pump.done():             # the client went away: so does the upstream's answer
                await _cancel_task(pump)
            elif pump.exception() is not None:
                self.log(f"{method} {safe_url(url.split('?')[0])}: the upstream's answer broke off "
                         f"({type(pump.exception()).__name__})")
        finally:
            gone.cancel()
            await resp.aclose()

    async def _pump(self, resp, send) -> None:
        await send({"type": "http.response.start", "status": resp.status,
                    "headers": [(k, v) for k, v in resp.headers if k.lower() not in _HOP_OUT]})
        try:
            async for chunk in resp.stream:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            # the upstream connection back in the pool before the client hears the end: its next
            # request (sent the moment this one ends) finds it there instead of opening another
            await resp.aclose()
        finally:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _error(self, send, status: int, message: str) -> None:
        data = json.dumps(self.protocol.error_body(status, message)).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data, "more_body": False})

    # ------------------------------------------------------------------ its compactions
    async def _compaction_body(self, raw: bytes) -> Optional[dict]:
        """The body, when it is the agent's compaction request (parsed off the event loop)."""
        def parse():
            try:
                body = json.loads(raw)
            except (ValueError, RecursionError):
                return None
            return body if isinstance(body, dict) and self.spec.read(body) is not None else None
        return await self.proxy.cpu(parse)

    async def _compaction(self, scope, receive, send, url: str, headers: list, raw: bytes, body: dict,
                          asked=None, plain: Optional[bytes] = None) -> None:
        """A compaction through the core; `asked`: its L1 answer already under way (a body streamed
        through), which the core's first level takes (or which is closed when no level takes it);
        `plain`: the body decoded, when it came compressed (`raw` is what L1 sends again)."""
        proxy = self.proxy
        if not proxy.admit():
            if asked is not None:           # already sent: its answer goes back unchecked, not refused
                proxy.log("a compaction over the limits of serve_max_concurrent and serve_max_queued: relayed "
                          "unchecked")
                try:
                    resp = await asked.answer()
                except WireError as exc:
                    return await self._unreached(send, exc)
                return await self._relay_answer(scope["method"], url, resp, receive, send)
            return await self._error(send, 429, f"{proxy.in_flight} compactions in progress or waiting (settings "
                                     "serve_max_concurrent, serve_max_queued); retry shortly")
        try:
            await self._compacted(scope, receive, send, url, headers, raw, body, asked, plain)
        finally:
            if asked is not None:           # read by L1, or never taken (the breaker open, the client gone)
                with contextlib.suppress(Exception):
                    await asked.aclose()

    async def _compacted(self, scope, receive, send, url: str, headers: list, raw: bytes, body: dict,
                         asked, plain: Optional[bytes] = None) -> None:
        proxy = self.proxy
        plain = raw if plain is None else plain
        request = await proxy.cpu(self._request, body, plain)
        route = RelayRoute(self, url, headers, raw, body, asked)
        proto = self.spec.protocol
        proxy.in_flight += 1
        task = asyncio.ensure_future(proxy.admitted(proto, body, len(plain), (request, None), route))
        task.add_done_callback(lambda _t: setattr(proxy, "in_flight", proxy.in_flight - 1))
        model = self.protocol.model_of(scope["path"], body) or "compaction-guard"
        if self.protocol.streamed(scope["path"], body):
            return await LateHeadersStream(task, proto, model, self.settings.serve_keepalive_seconds,
                                           self.protocol.usage_asked(body), logger=proxy.log)(scope, receive, send)
        gone = asyncio.ensure_future(_disconnected(receive))
        done, _ = await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        if task not in done:
            await _cancel_task(task)
            return
        gone.cancel()
        try:
            out = task.result()
        except Exception as exc:          # noqa: BLE001 - never expected; the client still gets a well-formed error
            proxy.log(f"internal error: {type(exc).__name__}")
            return await self._error(send, 500, f"the guard failed on this request ({type(exc).__name__}); see its log")
        extra = [(k.encode(), v.encode()) for k, v in headers_of(out).items()]
        if out.raw is not None:
            status, rheaders, data = out.raw
            hs = [(k, v) for k, v in rheaders if k.lower() not in _HOP_OUT and k.lower() not in
                  (b"content-length", b"content-encoding")]
        else:
            status, data = 200, json.dumps(self.protocol.body(out, model)).encode()
            hs = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status,
                    "headers": hs + extra + [(b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data, "more_body": False})

    def _request(self, body: dict, raw: bytes) -> Request:
        from ..tokens import estimate_tokens
        shape = self.spec.read(body)
        return Request(shape.history, shape.previous, shape.instructions,
                       of_request(shape.history, shape.instructions), shape.rejected,
                       context_tokens=estimate_tokens(raw.decode("utf-8", "replace")),
                       context_source=f"the whole request {self.agent.title} sent (system prompt, tools, messages), "
                                      "estimated", fallback=shape.fallback)


async def _disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class RelayRoute:
    """Levels 1 and 2 of a relayed compaction: to the agent's upstream, with the client's own
    headers (its credentials among them), in the mode it asked for; L1 its request as it came."""

    provider = "relay"

    def __init__(self, relay: Relay, url: str, headers: list, raw: bytes, body: dict, asked=None):
        self.relay = relay
        self.asked = asked          # L1 already under way (_Asked), taken by the first call
        self.url = url
        self.headers = headers
        # L2's body is written anew, as plain JSON: without the encoding the client's body had
        self.plain_headers = [(k, v) for k, v in headers if k.lower() != b"content-encoding"]
        self.raw = raw
        self.body = body
        self.proto = relay.spec.protocol
        self.model = relay.protocol.model_of(url.split("?", 1)[0], body)
        self.deadline = relay.settings.relay_compaction_deadline_seconds
        secrets_ = []
        for k, v in headers:
            if any(h in k for h in _SECRET_HINTS):
                value = v.decode("latin-1")
                secrets_.append(value)
                if " " in value:            # "Bearer <token>": the token alone too
                    secrets_.append(value.split(" ", 1)[1])
        self.scrub = Redactor(secrets_)

    def describe(self) -> str:
        return self.relay.describe()

    def first(self, proto: str, body: dict) -> dict:
        return body

    def aggressive(self, proto: str, body: dict, req, contract=None, failures=()) -> dict:
        return self.relay.protocol.aggressive(body, brevity(req, contract), req.max_tokens, req.temperature,
                                              reasoning_off="reasoning_only" in failures)

    async def call(self, body: dict) -> Reply:
        import httpx
        data = self.raw if body is self.body else json.dumps(body, ensure_ascii=False).encode("utf-8")
        client = self.relay.client
        cap = self.relay.settings.serve_max_upstream_bytes
        where = safe_url(self.relay.base)
        asked, self.asked = (self.asked, None) if body is self.body else (None, self.asked)
        try:
            if asked is not None:       # L1, sent as the body came: its answer, decoded as httpx does
                answer = await asked.answer()
                resp = httpx.Response(answer.status, headers=answer.headers, stream=_Stream(answer))
                opened = _Opened(resp)
            else:
                opened = client.stream("POST", self.url, content=data,
                                       headers=self.headers if body is self.body else self.plain_headers)
            async with opened as resp:
                chunks, size = [], 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > cap:
                        raise UpstreamFailure(f"{where}: an answer larger than {cap:,} bytes (setting "
                                              "serve_max_upstream_bytes)", "error")
                    chunks.append(chunk)
                status, rheaders = resp.status_code, resp.headers.raw
        except httpx.TimeoutException:
            raise UpstreamFailure(f"{where}: no answer in time", "timeout") from None
        except UpstreamFailure:
            raise
        except Exception as exc:        # noqa: BLE001 - httpx's, or wire's under an answer already asked
            if getattr(exc, "timeout", False):
                raise UpstreamFailure(f"{where}: no answer in time", "timeout") from None
            how = getattr(exc, "name", None) or type(exc).__name__
            raise UpstreamFailure(self.scrub(f"{where}: connection failed ({how})"), "error") from None
        answer = b"".join(chunks)
        raw = (status, rheaders, answer)
        if status >= 300:
            from ..httpjson import _error_message
            message = _error_message(status, self.scrub(answer[:65536].decode("utf-8", "replace")).encode())
            exc = UpstreamFailure(self.scrub(f"{where}: HTTP {status}: {message}"), "error",
                                  client_side=400 <= status < 500 and status not in (401, 403, 408, 429))
            exc.raw = raw
            raise exc
        streamed = b"text/event-stream" in dict((k.lower(), v) for k, v in rheaders).get(b"content-type", b"")
        if streamed:
            text, reasoning, finish, error = self.relay.protocol.read_stream(answer)
            if error is not None:
                exc = UpstreamFailure(self.scrub(f"{where}: {error}"), "error")
                exc.raw = raw
                raise exc
        else:
            try:
                text, reasoning, finish = self.relay.protocol.parse_answer(json.loads(answer))
            except (ValueError, RecursionError) as exc:
                raise UpstreamFailure(f"{where}: {exc}", "error") from None
        return Reply(self.scrub(text), reasoning, finish, 0, raw)


def relay_app(app, relay: Relay):
    """The ASGI app: the guard's own paths (and the lifespan) to `app`, everything else relayed."""
    async def asgi(scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OWN_PATHS:
            return await app(scope, receive, send)
        return await relay(scope, receive, send)
    return asgi


_WINDOW = 29_000
# letters from the most to the least common in English text (and in the agents' requests: their
# prompts, code and JSON); every other byte counts as more common than any of them
_LETTERS = b"etaoinshrdlcumwfgypbvkjxqz"


def anchor(marker: bytes) -> int:
    """Where the marker's rarest byte lies in it: a capital letter before a small one, the least
    common letter first (`Y` of Claude Code's marker, `q` of Codex's, `X` of Gemini CLI's: about
    370, 1,000 and 420 of each per MB of the agent's recorded requests)."""
    def rank(i: int) -> int:
        c = marker[i:i + 1]
        low = c.lower()
        if low not in _LETTERS or len(low) != 1:
            return -1
        return _LETTERS.index(low) + (100 if c != low else 0)
    return max(range(len(marker)), key=rank)


def holds(data: bytes, marker: bytes, at: int = -1) -> bool:
    """`marker in data`, the relay's one look at every turn: each place its rarest byte (`at`,
    anchor()) lies, found by memchr, compared with the marker; after more such places than the
    body has 4 KB (text full of that byte), the search over what is left (searched()). On the
    agents' own requests about 0.1 ms a MB where `in` takes 0.17-0.23 ms."""
    if at < 0:
        at = anchor(marker)
    byte, find, starts = marker[at:at + 1], data.find, data.startswith
    i = find(byte, at)
    left = 64 + (len(data) >> 12)
    while i >= 0:
        if starts(marker, i - at):
            return True
        left -= 1
        if not left:
            return searched(data, marker, i - at + 1)
        i = find(byte, i + 1)
    return False


def searched(data: bytes, marker: bytes, start: int = 0) -> bool:
    """`marker in data[start:]` in windows under 30,000 bytes (overlapping by the marker's
    length): there CPython's find skips ahead by the marker's length (Horspool) where over a
    whole body it runs Two-Way, about twice as slow on a 1 MB turn."""
    n = len(data)
    if n - start <= _WINDOW or len(marker) >= 100:
        return data.find(marker, start) >= 0
    find, reach = data.find, _WINDOW + len(marker) - 1
    return any(find(marker, i, i + reach) >= 0 for i in range(start, n, _WINDOW))


def _encoding(headers: list) -> bytes:
    """The request body's content coding (b"" for none or identity), lower case."""
    value = next((v for k, v in headers if k == b"content-encoding"), b"").strip().lower()
    return b"" if value == b"identity" else value


def _decoded(raw: bytes, encoding: bytes, limit: int) -> Optional[bytes]:
    """A compressed request body decoded (zstd, gzip, deflate), at most `limit` bytes of it; None
    when it cannot be (another coding, broken data, or more than `limit`: then it is relayed as
    it came, unread)."""
    import zlib
    try:
        if encoding == b"zstd":
            import zstandard
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            out = reader.read(limit + 1)
        elif encoding in (b"gzip", b"x-gzip", b"deflate"):
            d = zlib.decompressobj(31 if encoding != b"deflate" else 15)
            out = d.decompress(raw, limit + 1)
        else:
            return None
    except Exception:               # noqa: BLE001 - zlib.error, zstandard.ZstdError: unreadable, left unread
        return None
    return out if len(out) <= limit else None


class _BodyBroke(Exception):
    """A request body that stopped before its end (too large, too slow, or its client gone)."""


class _Body:
    """A request's body as it comes: `first()` its first piece (the whole body, for most turns),
    `next()` each further one, within `relay_max_body_bytes` and `serve_body_timeout_seconds` in
    all; `failed` says why it stopped ("large", "slow", "gone"), `whole()` what came, held once."""

    def __init__(self, settings, receive):
        import time
        self.receive = receive
        self.limit = settings.relay_max_body_bytes
        self.deadline = time.monotonic() + settings.serve_body_timeout_seconds
        self.pieces, self.size, self.more, self.failed = [], 0, True, None

    async def first(self, headers) -> Optional[bytes]:
        declared = next((v for k, v in headers if k == b"content-length"), b"")
        if declared.isdigit() and int(declared) > self.limit:
            self.failed = "large"
            return None
        return await self.next()

    async def next(self) -> Optional[bytes]:
        import time
        try:
            left = max(0.0, self.deadline - time.monotonic())
            if hasattr(asyncio, "timeout"):         # 3.11: no task of its own for every turn
                async with asyncio.timeout(left):
                    msg = await self.receive()
            else:
                msg = await asyncio.wait_for(self.receive(), left)
        except asyncio.TimeoutError:
            self.failed = "slow"
            return None
        if msg["type"] == "http.disconnect":
            self.failed = "gone"
            return None
        piece = msg.get("body", b"")
        self.size += len(piece)
        if self.size > self.limit:
            self.failed = "large"
            return None
        self.more = bool(msg.get("more_body"))
        if piece:
            self.pieces.append(piece)
        return piece

    def whole(self) -> bytes:
        return self.pieces[0] if len(self.pieces) == 1 else b"".join(self.pieces)


class _Asked:
    """A compaction already on its way upstream (its body sent as it came, whole): its answer
    (wire.Answer) once its head comes, awaited within the compaction's deadline."""

    def __init__(self, sending: "asyncio.Future"):
        self.sending = sending

    async def answer(self):
        return await self.sending

    async def aclose(self) -> None:
        """The request cancelled when no head came yet, its answer closed when one did."""
        if not self.sending.done():
            await _cancel_task(self.sending)
        elif not self.sending.cancelled() and self.sending.exception() is None:
            await self.sending.result().aclose()


class _Stream(httpx.AsyncByteStream):
    """An answer wire.py is reading, as httpx's byte stream (httpx decodes it)."""

    def __init__(self, resp):
        self.resp = resp

    async def __aiter__(self):
        async for chunk in self.resp.stream:
            yield chunk

    async def aclose(self) -> None:
        await self.resp.aclose()


class _Opened:
    """`async with` over an httpx.Response already open (as client.stream gives one)."""

    def __init__(self, resp):
        self.resp = resp

    async def __aenter__(self):
        return self.resp

    async def __aexit__(self, *exc) -> None:
        await self.resp.aclose()
