"""Running serve: the checks before it starts (the upstream is not this proxy, a token when it
listens beyond loopback, the keys fit a header), uvicorn with a header timeout and a graceful,
bounded shutdown (compactions in flight fall to L3), exit 0 on SIGTERM."""
from __future__ import annotations

import ipaddress
import os
import socket
import sys
import urllib.parse
from pathlib import Path

from .. import listen
from ..errors import GuardError
from ..redact import safe_url

_LOOPBACK = ("127.0.0.1", "::1", "localhost")


# ----------------------------------------------------------------- running it
def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _addresses(host: str) -> set:
    """Every address `host` names (`127.1`, `2130706433`, `localhost.`, `[::ffff:127.0.0.1]`
    included), IPv4-mapped IPv6 ones as IPv4; empty when it does not resolve."""
    host = (host or "").strip("[]")
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]            # `localhost.`: the same name, written from the root
    out = set()
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, OSError):
        infos = []
    for info in infos:
        try:
            ip = ipaddress.ip_address(info[4][0].split("%")[0])
        except ValueError:
            continue
        if ip.version == 6 and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        out.add(ip)
    return out


def _is_local(ip) -> bool:
    """Whether `ip` is this machine's: loopback, or an address it can bind."""
    if ip.is_loopback or ip.is_unspecified:
        return True
    fam = socket.AF_INET if ip.version == 4 else socket.AF_INET6
    try:
        with socket.socket(fam, socket.SOCK_DGRAM) as sock:
            sock.bind((str(ip), 0))
        return True
    except OSError:
        return False


def check_upstream_is_not_us(base_url: str, host: str, port: int) -> None:
    """Refuse an upstream that is this proxy: the same port on an address the proxy serves
    (the address resolved, so every spelling of it counts; every local address when it
    serves them all)."""
    u = urllib.parse.urlsplit(base_url)
    try:
        up_port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise GuardError(f"--base-url {safe_url(base_url)}: its port is not a number") from None
    if up_port != port:
        return
    ups = _addresses(u.hostname or "")
    served = _addresses(host)
    every = not served or any(ip.is_unspecified for ip in served)
    # connecting to 0.0.0.0 (or ::) reaches this machine's loopback
    ups_loop = any(ip.is_loopback or ip.is_unspecified for ip in ups)
    if (ups & served) or (every and any(_is_local(ip) for ip in ups)) \
            or (ups_loop and any(ip.is_loopback for ip in served)):
        raise GuardError(f"--base-url {safe_url(base_url)} is this proxy itself ({host}:{port}); point it at the "
                         "model's endpoint")


def _protocol_class(header_timeout: float):
    """uvicorn's HTTP protocol (httptools' C parser when it is installed, as the `serve` extra
    installs it; else h11), except that a connection whose request headers have not all arrived
    within `header_timeout` seconds (of its opening, or of its last answer) is closed."""
    import importlib.util
    high_water = None
    if importlib.util.find_spec("httptools") is not None:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
        try:
            from uvicorn.protocols.http.flow_control import HIGH_WATER_LIMIT as high_water
        except ImportError:             # another uvicorn: its own on_body throughout
            high_water = None
    else:
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base

    class Protocol(Base):
        _header_timer = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def _arm(self):
            self._disarm()
            self._header_timer = self.loop.call_later(header_timeout, self._headers_too_slow)

        def _disarm(self):
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self):
            self._header_timer = None
            if (self.cycle is None or self.cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

        def on_headers_complete(self):          # httptools: a request's headers are all in
            super().on_headers_complete()
            self._disarm()

        def on_body(self, body):                # httptools: a piece of the body
            # the first piece since the app last read is handed on as it came: uvicorn appends
            # every piece to a bytearray that the app's receive() then copies (two copies of each
            # body, a relayed turn's largest cost after the kernel's); a bytes object goes through
            # receive() as it is. Anything else is uvicorn's own way.
            cycle = self.cycle
            if high_water is not None and cycle is not None and type(cycle.body) is bytearray \
                    and not cycle.body and not cycle.response_complete and not self.parser.should_upgrade():
                cycle.body = body
                if len(body) > high_water:
                    self.flow.pause_reading()
                cycle.message_event.set()
                return
            super().on_body(body)

        def handle_events(self):                # h11: the same, once its events are handled
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()

        def on_response_complete(self):
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc):
            self._disarm()
            super().connection_lost(exc)

    return Protocol


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, except that a SIGTERM or SIGINT that shut it down gracefully
        (every request in flight answered) ends the process with status 0, as a service
        manager expects, instead of being raised again; and that when it begins to shut
        down, the compactions in flight stop waiting on the upstream (Proxy.stopping)."""

        def __init__(self, config, proxy=None):
            super().__init__(config)
            self.proxy = proxy

        async def shutdown(self, sockets=None):
            if self.proxy is not None:
                self.proxy.slots()
                self.proxy.stopping.set()
            await super().shutdown(sockets=sockets)

        def capture_signals(self):
            import contextlib
            import signal
            import threading

            @contextlib.contextmanager
            def captured():
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
                try:
                    yield
                finally:
                    for sig, handler in original.items():
                        signal.signal(sig, handler)
            return captured()
    return Server


def serve(home: Path, choice, settings, host: str = "127.0.0.1", port: int = 8742, token_env: str = "GUARD_SERVE_TOKEN",
          observe: bool = False, env=None, ready=None, relay_to=None) -> int:
    """Run the proxy until SIGTERM/SIGINT (requests in flight finish; exit 0). `relay_to`:
    (agent, upstream URL) to stand in front of an agent that compacts on the endpoint of every
    turn (serve/relay.py); `choice` is then not used."""
    import importlib.util
    needs = ("uvicorn", "starlette", "httpx", "httptools", "prometheus_client")
    if not all(importlib.util.find_spec(m) for m in needs):
        raise GuardError("serve needs its extras: pip install 'compaction-resilience-guard[serve]'")
    env = os.environ if env is None else env
    token = env.get(token_env) or None
    if token is not None and (not token.strip() or token != token.strip() or not token.isascii()
                              or not token.isprintable()):
        raise GuardError(f"${token_env} is {'only whitespace' if not token.strip() else 'not one printable ASCII word'}"
                         f" (a trailing newline?): set it to the token clients send, e.g. "
                         f"export {token_env}=$(openssl rand -hex 24)")
    if not _is_loopback(host) and not token:
        raise GuardError(f"--host {host} is reachable from other machines: set a client token in ${token_env} "
                         "(clients send Authorization: Bearer <token>), or bind 127.0.0.1")
    if relay_to is not None:
        return _serve_relay(home, relay_to, settings, host, port, token, observe, ready)
    if choice.provider == "extractive":
        raise GuardError("serve needs an upstream model to forward to: --provider openai|anthropic|local with "
                         "--base-url and --model (or GUARD_* / openclaw.json)")
    if choice.provider != "local":
        if not choice.base_url:
            raise GuardError("serve needs the upstream's --base-url")
        check_upstream_is_not_us(choice.base_url, host, port)
        from ..providers import points_at_guard
        if points_at_guard(choice.base_url):
            raise GuardError(f"--base-url {choice.base_url} is another compaction-guard serve; point it at the model "
                             "itself")
    key = choice.api_key(env)
    if key is not None and (key != key.strip() or not key.isascii() or not key.isprintable()):
        where = f"${choice.api_key_env}" if choice.api_key_env else "the upstream key in openclaw.json"
        what = ("a trailing newline or spaces" if key != key.strip()
                else "characters an HTTP header cannot carry (non-ASCII or control characters)")
        raise GuardError(f"{where} has {what}: set it to the key alone")
    from .app import build_app
    from .core import Proxy
    from .upstream import Upstream
    upstream = Upstream(choice, settings, env)
    sock = listen.bind(host, port)      # before it says where: a taken port is one line, exit 2
    keep_heap(settings.serve_heap_keep_bytes)
    proxy = Proxy(upstream, settings, home, observe, logger=_log)
    proxy.warm()
    _log(f"compaction-guard serve: on http://{host}:{port}, upstream {upstream.describe()}, state {proxy.store.path}"
         + (" (observe: replies returned unchanged)" if observe else ""))
    return _run(build_app(proxy, settings, token), proxy, settings, host, port, ready, sock=sock)


def keep_heap(keep: int) -> bool:
    """glibc's allocator told to keep up to `keep` bytes of freed memory (M_TRIM_THRESHOLD) and to
    serve blocks under it from its heap (M_MMAP_THRESHOLD), as MALLOC_TRIM_THRESHOLD_ and
    MALLOC_MMAP_THRESHOLD_ would: every relayed turn's pieces (256 KB each) reuse the memory the
    last one freed. True when it was told; elsewhere (another C library, or keep 0) nothing."""
    if keep <= 0 or not sys.platform.startswith("linux"):
        return False
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3         # glibc's malloc.h
    return bool(mallopt(m_trim_threshold, keep)) and bool(mallopt(m_mmap_threshold, keep))


def _log(line: str) -> None:
    import sys
    print(line, file=sys.stderr, flush=True)


def _serve_relay(home, relay_to, settings, host, port, token, observe, ready) -> int:
    """serve in front of an agent's own API (serve/relay.py)."""
    from .app import build_app
    from .core import Proxy
    from .relay import Relay
    agent, base_url = relay_to
    u = urllib.parse.urlsplit(base_url or "")
    if u.scheme not in ("http", "https") or not u.hostname:
        raise GuardError(f"--base-url {safe_url(base_url or '')}: give the upstream {agent.title} talks to, as "
                         f"http(s)://host[:port] (default {agent.relay().upstream})")
    check_upstream_is_not_us(base_url, host, port)
    from ..providers import points_at_guard
    if points_at_guard(base_url):
        raise GuardError(f"--base-url {safe_url(base_url)} is another compaction-guard serve; point it at the API "
                         "itself")
    sock = listen.bind(host, port)      # before it says where: a taken port is one line, exit 2
    keep_heap(settings.serve_heap_keep_bytes)
    proxy = Proxy(None, settings, home, observe, logger=_log,
                  describe=f"{agent.title}'s upstream {safe_url(base_url)} (relayed)")
    relay = Relay(agent, base_url, proxy, settings, token=token, logger=_log)
    proxy.warm()
    through = f" through the proxy {relay.via.shown}" if relay.via is not None else ""
    _log(f"compaction-guard serve: on http://{host}:{port}, relaying {agent.title} to {safe_url(base_url)}{through} "
         f"(point {relay.spec.variable} at http://{host}:{port}; only its compactions are checked), state "
         f"{proxy.store.path}" + (" (observe: answers returned unchanged)" if observe else ""))
    # the upstream's own Date and Server headers are relayed: uvicorn adds none of its own
    return _run(build_app(proxy, settings, token, relay=relay), proxy, settings, host, port, ready, sock=sock,
                server_header=False, date_header=False)


def _run(app, proxy, settings, host, port, ready, sock=None, **options) -> int:
    import uvicorn
    # on SIGTERM, compactions in flight wait at most serve_shutdown_seconds - 5 s more for the
    # upstream, then answer at L3 (Proxy.stopping): the server is down within
    # serve_shutdown_seconds whatever clients do
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=max(1, int(settings.serve_shutdown_seconds)), lifespan="on",
                            http=_protocol_class(settings.serve_header_timeout_seconds), **options)
    server = _server_class()(config, proxy)
    if ready is not None:
        ready(server)
    server.run(sockets=None if sock is None else [sock])
    return 0
