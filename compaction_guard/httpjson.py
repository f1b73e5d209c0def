"""One JSON POST with a hard deadline, over httpx (the project's one HTTP client:
the chain's LLM calls here, the proxy's upstream in serve/upstream.py).

The chain owns retries and deadlines, so this does one request and no retries: it
connects, sends, and reads the body in chunks, giving up when the per-call timeout
or the chain's deadline passes, whichever is first. Errors come
back as HTTPFailure (status, Retry-After, a short message with no secrets) or
CallTimeout.
"""
from __future__ import annotations

import email.utils
import http.client
import json
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


def post_json(url: str, payload: dict, headers: dict, timeout: float, deadline: Optional[float] = None,
              client=None, scrub=None) -> dict:
    """POST `payload` as JSON to `url`; the decoded JSON answer on 2xx.

    `deadline` is a time.monotonic() value after which the call is abandoned. `client`
    is an httpx.Client to reuse (its connection pool); without one, a client is made
    for the call. `scrub(text)` takes secrets out of an error body before it is cut short."""
    import httpx
    start = time.monotonic()
    end = start + timeout if deadline is None else min(start + timeout, deadline)
    if end <= start:
        raise CallTimeout("no time left before the chain's deadline")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HTTPFailure(None, f"not an http(s) URL: {parts.scheme}://{parts.hostname or ''}")
    own = client is None
    c = httpx.Client() if own else client
    body = json.dumps(payload).encode("utf-8")
    try:
        left = max(0.05, end - time.monotonic())
        with c.stream("POST", url, content=body, timeout=httpx.Timeout(left),
                      headers={"Content-Type": "application/json", "Accept": "application/json", **headers}) as resp:
            chunks, size = [], 0
            for chunk in resp.iter_bytes(65536):
                if time.monotonic() > end:
                    raise CallTimeout(f"no complete answer within {end - start:.1f} s")
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise HTTPFailure(resp.status_code, f"answer larger than {MAX_BODY_BYTES >> 20} MB")
                chunks.append(chunk)
            raw = b"".join(chunks)
            if resp.status_code >= 300:
                if scrub is not None:
                    raw = scrub(raw[:65536].decode("utf-8", "replace")).encode()
                raise HTTPFailure(resp.status_code, _error_message(resp.status_code, raw),
                                  _retry_after(resp.headers.get("retry-after")))
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise HTTPFailure(None, f"answer is not JSON ({len(raw)} bytes)") from None
    except httpx.TimeoutException:
        raise CallTimeout(f"no complete answer within {end - start:.1f} s") from None
    except httpx.HTTPError as exc:
        raise HTTPFailure(None, f"connection failed ({type(exc).__name__})") from None
    finally:
        if own:
            c.close()
