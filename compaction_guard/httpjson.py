"""A small JSON-over-HTTP client with a hard deadline (standard library only).

The chain owns retries and deadlines, so this client does one request and no
retries: it connects, sends, and reads the body in chunks, giving up when the
per-call timeout or the chain's deadline passes, whichever is first. Errors come
back as HTTPFailure (status, Retry-After, a short message with no secrets) or
CallTimeout.
"""
from __future__ import annotations

import email.utils
import http.client
import json
import socket
import time
import urllib.parse
from dataclasses import dataclass
from typing import Optional

MAX_BODY_BYTES = 32 << 20


class CallTimeout(Exception):
    """The call did not finish within its timeout or the chain's deadline."""


@dataclass
class HTTPFailure(Exception):
    status: Optional[int]          # None: no HTTP answer (connection refused, reset, bad JSON)
    message: str
    retry_after: Optional[float] = None

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}" if self.status else self.message

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status == 429 or self.status >= 500


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_message(status: int, body: bytes) -> str:
    """The server's own error message, short; never echoes request headers."""
    try:
        data = json.loads(body[:65536])
        err = data.get("error", data) if isinstance(data, dict) else data
        msg = err.get("message") if isinstance(err, dict) else str(err)
        if msg:
            return str(msg)[:200]
    except (ValueError, AttributeError, RecursionError):
        pass
    text = body[:200].decode("utf-8", "replace").strip()
    return text or http.client.responses.get(status, "error")


def post_json(url: str, payload: dict, headers: dict, timeout: float, deadline: Optional[float] = None) -> dict:
    """POST `payload` as JSON to `url`; the decoded JSON answer on 2xx.

    `deadline` is a time.monotonic() value after which the call is abandoned."""
    start = time.monotonic()
    end = start + timeout if deadline is None else min(start + timeout, deadline)
    if end <= start:
        raise CallTimeout("no time left before the chain's deadline")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HTTPFailure(None, f"not an http(s) URL: {parts.scheme}://{parts.hostname or ''}")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=max(0.05, end - time.monotonic()))
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    body = json.dumps(payload).encode("utf-8")
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                        "Accept": "application/json", **headers})
        resp = conn.getresponse()
        chunks, size = [], 0
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise CallTimeout(f"no complete answer within {end - start:.1f} s")
            if conn.sock is not None:
                conn.sock.settimeout(left)
            chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise HTTPFailure(resp.status, f"answer larger than {MAX_BODY_BYTES >> 20} MB")
            chunks.append(chunk)
        raw = b"".join(chunks)
        if resp.status >= 300:
            raise HTTPFailure(resp.status, _error_message(resp.status, raw), _retry_after(resp.getheader("Retry-After")))
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise HTTPFailure(None, f"answer is not JSON ({len(raw)} bytes)") from None
    except socket.timeout:
        raise CallTimeout(f"no complete answer within {end - start:.1f} s") from None
    except (ConnectionError, http.client.HTTPException, OSError) as exc:
        if isinstance(exc, (HTTPFailure, CallTimeout)):
            raise
        raise HTTPFailure(None, f"connection failed ({type(exc).__name__}: {exc.strerror or exc})"
                          if isinstance(exc, OSError) else f"connection failed ({type(exc).__name__})") from None
    finally:
        conn.close()
