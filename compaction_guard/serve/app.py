"""The ASGI app (starlette): the compaction endpoints (`/v1/chat/completions`, `/v1/messages`),
`/v1/models`, `/healthz`, `/livez`, `/metrics`; admission, the client token, body limits and
timeouts; answers in the protocol and mode the client asked for (a stream's headers leave
with its first bytes: `LateHeadersStream`); and, in front of an agent that compacts on the
endpoint of every turn, everything else relayed (serve/relay.py)."""
from __future__ import annotations

import asyncio
import hmac
import time
from typing import Optional

from .. import breaker
from .answers import PROTOCOLS, LateHeadersStream, error_body
from .core import Proxy, _cancel_task
from .requests import BadRequest
from .upstream import HOP_HEADER, _signature
from .protocol import headers_of


# ----------------------------------------------------------------- the ASGI app
def build_app(proxy: Proxy, settings, token: Optional[str] = None, relay=None):
    """The app; with `relay` (serve/relay.py), every path but the guard's own is relayed to the
    agent's upstream, and the client token travels in its own header (the agent's credentials
    hold Authorization and x-api-key)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def allowed(request: Request) -> bool:
        if token is None:
            return True
        if relay is not None:
            given = request.headers.get("x-compaction-guard-token", "")
            return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())
        given = request.headers.get("authorization", "")
        given = given[7:] if given.lower().startswith("bearer ") else request.headers.get("x-api-key", "")
        return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())

    def unauthorized(proto: str = "openai"):
        return refuse(proto, 401, "missing or wrong token (Authorization: Bearer <token>)")

    async def livez(request: Request):
        # the one path open without the token: says the process answers, nothing more
        return JSONResponse({"status": "ok"})

    async def models(request: Request):
        if not allowed(request):
            return unauthorized()
        model = (proxy.upstream.model if proxy.upstream is not None else None) or "compaction-guard"
        return JSONResponse({"object": "list", "data": [{"id": model, "object": "model", "created": 0,
                                                         "owned_by": "compaction-guard"}]})

    async def healthz(request: Request):
        if not allowed(request):
            return unauthorized()
        state = await proxy.health_state()
        doc = {"status": "ok", "upstream": proxy.upstream_text, "observe": proxy.observe,
               "in_flight": proxy.in_flight, "running": proxy.running, "circuit_open_until": breaker.open_until(state)}
        if proxy.state_error is not None:
            at, why = proxy.state_error
            doc.update(status="degraded", state_error=why,
                       state_error_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at)))
        return JSONResponse(doc, status_code=200 if doc["status"] == "ok" else 503)

    async def metrics(request: Request):
        if not allowed(request):
            return unauthorized()
        text = await asyncio.to_thread(_metrics_text, proxy)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    def refuse(proto: str, status: int, message: str, headers: Optional[dict] = None):
        return JSONResponse(error_body(proto, status, message), status_code=status, headers=headers)

    async def read_body(request: Request, limit: int) -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise OverflowError
            chunks.append(chunk)
        return b"".join(chunks)

    async def handle(request: Request, proto: str):
        if not allowed(request):
            return unauthorized(proto)
        if request.headers.get(HOP_HEADER):
            return refuse(proto, 508, "the guard's upstream is the guard itself; point --base-url at the model")
        limit = settings.serve_max_body_bytes
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            return refuse(proto, 413, f"request body over {limit} bytes (setting serve_max_body_bytes)")
        try:
            raw = await asyncio.wait_for(read_body(request, limit), settings.serve_body_timeout_seconds)
        except OverflowError:
            return refuse(proto, 413, f"request body over {limit} bytes (setting serve_max_body_bytes)")
        except asyncio.TimeoutError:
            return refuse(proto, 408, f"the request body did not arrive within {settings.serve_body_timeout_seconds:g} s "
                          "(setting serve_body_timeout_seconds)")
        mark = _signature(raw)
        if mark is not None and mark in proxy.upstream.sending:
            # a body this guard is sending upstream, come back (a forwarder dropped the hop header)
            return refuse(proto, 508, "the guard's upstream is the guard itself (through a forwarder); point "
                          "--base-url at the model")
        try:
            body, prepared = await proxy.prepare(raw, proto)
        except BadRequest as exc:
            return refuse(proto, 400, str(exc))
        if not proxy.admit():
            retry = str(settings.serve_retry_after_seconds)
            return refuse(proto, 429, f"{proxy.in_flight} compactions in progress or waiting (settings "
                          "serve_max_concurrent, serve_max_queued); retry shortly", headers={"retry-after": retry})
        model = body.get("model") or (proxy.upstream.model if proxy.upstream is not None else None) \
            or "compaction-guard"
        proxy.in_flight += 1
        task = asyncio.ensure_future(proxy.admitted(proto, body, len(raw), prepared))
        task.add_done_callback(lambda _t: setattr(proxy, "in_flight", proxy.in_flight - 1))
        if proxy.observe:         # a trial: the upstream's error stays an error
            out = await _unless_gone(task, request)
            if out is None:
                return Response(status_code=499)
            if out.summary is None:
                err = next(iter(out.attempts[0].reasons.values()), "the upstream failed")
                return JSONResponse(error_body(proto, 502, err), status_code=502, headers=headers_of(out))
            if body.get("stream"):
                return LateHeadersStream(task, proto, model, settings.serve_keepalive_seconds, PROTOCOLS[proto].usage_asked(body))
        if not body.get("stream"):
            try:
                out = await _unless_gone(task, request)
            except Exception as exc:      # noqa: BLE001 - never expected; the client still gets a well-formed error
                proxy.log(f"internal error: {type(exc).__name__}")
                return refuse(proto, 500, f"the guard failed on this request ({type(exc).__name__}); see its log")
            if out is None:           # the client went away: nobody to answer
                return Response(status_code=499)
            doc = PROTOCOLS[proto].body(out, model)
            return JSONResponse(doc, headers=headers_of(out))
        return LateHeadersStream(task, proto, model, settings.serve_keepalive_seconds, PROTOCOLS[proto].usage_asked(body),
                                 logger=proxy.log)

    async def chat(request):
        return await handle(request, "openai")

    async def messages(request):
        return await handle(request, "anthropic")

    routes = [Route("/v1/chat/completions", chat, methods=["POST"]),
              Route("/chat/completions", chat, methods=["POST"]),
              Route("/v1/messages", messages, methods=["POST"]),
              Route("/v1/models", models, methods=["GET"]),
              Route("/livez", livez, methods=["GET"]),
              Route("/healthz", healthz, methods=["GET"]),
              Route("/metrics", metrics, methods=["GET"])]

    async def lifespan(app):
        proxy.slots()             # made in this event loop
        await asyncio.to_thread(proxy.read_state)       # what /healthz reports before the first compaction
        yield
        if proxy.upstream is not None:
            await proxy.upstream.close()
        if relay is not None:
            await relay.close()
        proxy.close()

    from contextlib import asynccontextmanager
    if relay is not None:
        routes = [r for r in routes if r.path in ("/livez", "/healthz", "/metrics")]
    app = Starlette(routes=routes, lifespan=asynccontextmanager(lifespan))
    if relay is None:
        return app
    from .relay import relay_app
    return relay_app(app, relay)


async def _unless_gone(task, request):
    """The compaction's outcome, or None when the client went away first: then the compaction
    (and its upstream call) is cancelled, and counted as abandoned (Proxy.compact)."""
    async def gone():
        while not await request.is_disconnected():
            await asyncio.sleep(0.25)
    watch = asyncio.ensure_future(gone())
    done, _ = await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        watch.cancel()
        return task.result()
    await _cancel_task(task)
    return None


def _metrics_text(proxy: Proxy) -> str:
    """The agent's state as Prometheus metrics (exposition.py: the names `--report --format
    prometheus`, the Pushgateway and the textfile use too), and what serve is working on."""
    from .. import operations
    from ..render import report_prometheus
    rep = operations.report(proxy.home, proxy.settings)
    return report_prometheus(rep) + (
        "# HELP compaction_guard_serve_in_flight Compactions the proxy is working on.\n"
        "# TYPE compaction_guard_serve_in_flight gauge\n"
        f"compaction_guard_serve_in_flight {proxy.in_flight}\n")
