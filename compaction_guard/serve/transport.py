"""httpcore's network backend on asyncio's own streams, for the relay's pass-through (relay.py).

httpcore reaches asyncio through anyio, whose cancel scopes, task lookups and checkpoints wrap every
read and write. Here a read is `StreamReader.read`, a
write `StreamWriter.write` and `drain`, each under `asyncio.timeout`; TLS is `StreamWriter.start_tls`
(a small relayed turn's CPU 0.68 -> 0.55 ms here, A/B in one run).
Python 3.11 and later (`asyncio.timeout`, `start_tls` on a stream); on 3.10 the relay keeps
httpcore's own backend (`backend()` is None there)."""
from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
from typing import Optional

import httpcore


def backend() -> Optional[httpcore.AsyncNetworkBackend]:
    """The backend, or None where this Python lacks what it needs (the relay then uses httpcore's)."""
    if sys.version_info < (3, 11):
        return None
    return AsyncioBackend()


class AsyncioStream(httpcore.AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    async def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self.reader.read(max_bytes)
        except TimeoutError:
            raise httpcore.ReadTimeout(f"no bytes within {timeout} s") from None
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    async def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        if not buffer:
            return
        try:
            self.writer.write(buffer)
            if self.writer.transport.get_write_buffer_size() > 0:      # only when the kernel took less
                async with asyncio.timeout(timeout):
                    await self.writer.drain()
        except TimeoutError:
            raise httpcore.WriteTimeout(f"not sent within {timeout} s") from None
        except (OSError, RuntimeError) as exc:      # RuntimeError: a transport already closing
            raise httpcore.WriteError(str(exc)) from exc

    async def aclose(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()

    async def start_tls(self, ssl_context, server_hostname: Optional[str] = None,
                        timeout: Optional[float] = None) -> "AsyncioStream":
        try:
            async with asyncio.timeout(timeout):
                await self.writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no TLS handshake within {timeout} s") from None
        except OSError as exc:          # ssl.SSLError among them
            raise httpcore.ConnectError(str(exc)) from exc
        return self

    def get_extra_info(self, info: str):
        if info == "ssl_object":
            return self.writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self.writer.get_extra_info("sockname")
        if info == "server_addr":
            return self.writer.get_extra_info("peername")
        if info == "socket":
            return self.writer.get_extra_info("socket")
        if info == "is_readable":           # an idle pooled connection the server closed, or sent bytes on
            if self.reader.at_eof() or self.writer.is_closing() or self.reader.exception() is not None:
                return True
            sock = self.writer.get_extra_info("socket")
            return sock is not None and _readable(sock)
        return None


def _readable(sock) -> bool:
    from httpcore._utils import is_socket_readable
    return is_socket_readable(sock)


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: Optional[float] = None,
                          local_address: Optional[str] = None, socket_options=None) -> AsyncioStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=(local_address, 0) if local_address else None, limit=1 << 20)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection within {timeout} s") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            with contextlib.suppress(OSError):
                sock.setsockopt(*option)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return AsyncioStream(reader, writer)

    async def connect_unix_socket(self, path: str, timeout: Optional[float] = None,
                                  socket_options=None) -> AsyncioStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path, limit=1 << 20)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection within {timeout} s") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
