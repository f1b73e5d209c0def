"""The configured model (`Upstream`): one pooled async HTTP client (httpx) to the provider the
operator set (flags, GUARD_*, config.yaml, openclaw.json), its key sent only there and scrubbed
from every message; retries on 429, 5xx and dropped connections; a whitespace signature ending
every body it sends, so that its own request come back through a forwarder is known (508)."""
from __future__ import annotations

import asyncio
import json
import os
import secrets
from typing import Optional

from ..httpjson import _error_message, _retry_after
from ..redact import Redactor, safe_url, url_secrets
from .requests import _CONVERSATION_RE, _text_of, rough_size
from . import anthropic, openai_chat

HOP_HEADER = "x-compaction-guard-hop"
ANTHROPIC_VERSION = anthropic.VERSION


def _signed(body: dict) -> tuple:
    """(bytes, mark): the body as JSON, ending with a signature of 32 spaces and tabs (JSON
    allows whitespace after the value; every parser reads the body as without it). A
    forwarder that drops the hop header still passes the body on as it is: a request that
    arrives ending with the signature of a body this guard is sending is its own (508)."""
    mark = "".join(" \t"[b] for b in (secrets.randbits(32) >> i & 1 for i in range(32)))
    return json.dumps(body, ensure_ascii=False).encode("utf-8") + b"\n" + mark.encode(), mark


def _signature(raw: bytes) -> Optional[str]:
    tail = raw[-33:]
    if len(tail) == 33 and tail[:1] == b"\n" and not tail[1:].strip(b" \t"):
        return tail[1:].decode()
    return None


class UpstreamFailure(Exception):
    """An upstream call that gave no usable answer. `kind`: error, timeout, or loop (the
    upstream is this guard: fatal, no level after it is tried); `client_side`: the upstream
    refused the request itself (a 4xx other than 401, 403, 408 and 429), which says nothing
    of the upstream's health (the circuit breaker does not count it)."""

    def __init__(self, message: str, kind: str = "error", retries: int = 0, client_side: bool = False):
        super().__init__(message)
        self.kind = kind
        self.retries = retries
        self.client_side = client_side
        self.raw = None         # (status, headers, body): the upstream's answer as it came, when the relay had one


# ----------------------------------------------------------------- the upstream
class Upstream:
    """The real model, over one pooled async HTTP client (httpx)."""

    def __init__(self, choice, settings, env=None):
        import httpx
        env = os.environ if env is None else env
        self.choice = choice
        self.settings = settings
        self.local = None
        if choice.provider == "local":
            from ..llm import LocalSummarizer
            self.local = LocalSummarizer(settings, choice.timeout)
            self.local.start()
            self.base_url = self.local.base_url
            self.model = self.local.model
        else:
            self.base_url = (choice.base_url or "").rstrip("/")
            self.model = choice.model
        self.proto = "anthropic" if choice.provider == "anthropic" else "openai"
        self._key = choice.api_key(env)
        # every copy of the key (whole, cut, split, encoded) and the URL's own credentials
        self.scrub = Redactor([self._key, *url_secrets(self.base_url)])
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(choice.timeout, connect=min(10.0, choice.timeout)),
                                        limits=httpx.Limits(max_connections=64, max_keepalive_connections=16))
        # the local model's server answers one request at a time (one slot): the others wait
        # their turn (within their deadline) instead of being refused
        self._one_at_a_time = asyncio.Semaphore(1) if self.local is not None else None
        # the bodies this guard is sending upstream, by the whitespace signature each ends
        # with (see _signed): a request arriving with one of them is the guard's own
        self.sending = set()
        self.offload = None         # an async fn(f, *args) running f in a worker process (Proxy.heavy)

    def describe(self) -> str:
        return f"{self.choice.provider} {self.model or '(the client’s model)'} at {safe_url(self.base_url)}"

    async def close(self) -> None:
        await self.client.aclose()
        if self.local is not None:
            self.local.close()

    async def call(self, body: dict) -> tuple:
        """(text, reasoning_chars, finish, retries) of one upstream call, retried on 429,
        5xx and dropped connections (llm_max_retries, Retry-After honoured)."""
        body = dict(body, stream=False)
        body.pop("stream_options", None)         # only with streaming (the guard reads the whole answer)
        if self._one_at_a_time is not None:
            async with self._one_at_a_time:
                return await self._call(await self._fit_local(body))
        return await self._call(body)

    async def _post(self, url: str, body: dict, headers: dict) -> tuple:
        """(status, headers, bytes) of one POST, its answer read up to serve_max_upstream_bytes."""
        # megabytes of JSON: off the loop (in a worker process when large, see Proxy.prepare)
        if self.offload is not None and rough_size(body) >= self.settings.serve_process_body_bytes:
            data, mark = await self.offload(_signed, body)
        else:
            data, mark = await asyncio.to_thread(_signed, body)
        cap = self.settings.serve_max_upstream_bytes
        self.sending.add(mark)
        try:
            async with self.client.stream("POST", url, content=data,
                                          headers={**headers, "content-type": "application/json"}) as r:
                chunks, size = [], 0
                async for chunk in r.aiter_bytes():
                    size += len(chunk)
                    if size > cap:
                        raise UpstreamFailure(f"{self.describe()}: an answer larger than {cap:,} bytes "
                                              "(setting serve_max_upstream_bytes)", "error")
                    chunks.append(chunk)
                return r.status_code, r.headers, b"".join(chunks)
        finally:
            self.sending.discard(mark)

    async def _call(self, body: dict) -> tuple:
        import httpx
        if self.model:
            body["model"] = self.model
        if self.proto == "anthropic":
            url = f"{self.base_url}/v1/messages"
            headers = {"anthropic-version": ANTHROPIC_VERSION, HOP_HEADER: "1"}
            if self._key:
                headers["x-api-key"] = self._key
        else:
            url = f"{self.base_url}/chat/completions"
            headers = {HOP_HEADER: "1"}
            if self._key:
                headers["Authorization"] = f"Bearer {self._key}"
        retries = 0
        while True:
            try:
                status, rheaders, raw = await self._post(url, body, headers)
            except httpx.TimeoutException:
                raise UpstreamFailure(f"{self.describe()}: no answer within {self.choice.timeout:g} s", "timeout",
                                      retries) from None
            except httpx.HTTPError as exc:
                if retries < self.settings.llm_max_retries:
                    await asyncio.sleep(self.settings.llm_backoff_seconds * (2 ** retries))
                    retries += 1
                    continue
                raise UpstreamFailure(self.scrub(f"{self.describe()}: connection failed ({type(exc).__name__})"),
                                      "error", retries) from None
            if status == 508:
                # a guard's answer to a request from itself: retrying it only loops again
                raise UpstreamFailure(f"{self.describe()}: HTTP 508 Loop Detected: the upstream is this guard "
                                      "(directly or through a forwarder); point --base-url at the model", "loop",
                                      retries)
            if (status == 429 or status >= 500) and retries < self.settings.llm_max_retries:
                wait = _retry_after(rheaders.get("retry-after"))
                wait = self.settings.llm_backoff_seconds * (2 ** retries) if wait is None else wait
                if wait <= self.settings.llm_max_retry_after:     # the request's deadline bounds it too
                    retries += 1
                    await asyncio.sleep(wait)
                    continue
            if status >= 300:
                # scrubbed first, then cut: a cut message keeps no more of a key than the whole one
                message = _error_message(status, self.scrub(raw[:65536].decode("utf-8", "replace")).encode())
                raise UpstreamFailure(self.scrub(f"{self.describe()}: HTTP {status}: {message}"), "error", retries,
                                      client_side=400 <= status < 500 and status not in (401, 403, 408, 429))
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError):
                raise UpstreamFailure(f"{self.describe()}: the answer is not JSON", "error", retries) from None
            text, reasoning, finish = self._parse(data)
            return self.scrub(text), reasoning, finish, retries

    async def _fit_local(self, body: dict) -> dict:
        """The request cut to the local model's small context, counted by its own tokenizer:
        its answer's max tokens capped to a quarter of the context, and, when the prompt is
        still too long, the fenced conversation's head dropped (the latest state kept; the
        instructions kept whole). A request it cannot fit goes as it is (the upstream's error
        is then a failure like any other)."""
        n_ctx = self.settings.local_context_tokens
        cap = n_ctx // 4
        b = dict(body)
        for k in ("max_tokens", "max_completion_tokens"):
            if isinstance(b.get(k), int):
                b[k] = min(b[k], cap)
        if not any(isinstance(b.get(k), int) for k in ("max_tokens", "max_completion_tokens")):
            b["max_tokens"] = cap
        root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        text = "\n".join(_text_of(m.get("content")) for m in b.get("messages", []) if isinstance(m, dict))
        try:
            r = await self.client.post(f"{root}/tokenize", json={"content": text})
            total = len(r.json()["tokens"])
        except Exception:          # noqa: BLE001 - counting is best effort: the request goes as it is
            return b
        over = total + cap + 32 - n_ctx
        if over <= 0:
            return b
        msgs = [dict(m) if isinstance(m, dict) else m for m in b.get("messages", [])]
        for m in reversed(msgs):
            content = _text_of(m.get("content")) if isinstance(m, dict) else ""
            match = _CONVERSATION_RE.search(content)
            if not match:
                continue
            inner = match.group(1)
            try:
                r = await self.client.post(f"{root}/tokenize", json={"content": inner})
                toks = r.json()["tokens"]
                keep = max(64, len(toks) - over)
                r = await self.client.post(f"{root}/detokenize", json={"tokens": toks[-keep:]})
                tail = r.json()["content"]
            except Exception:      # noqa: BLE001
                return b
            m["content"] = content[:match.start(1)] + tail + content[match.end(1):]
            b["messages"] = msgs
            return b
        return b

    def _parse(self, data) -> tuple:
        try:
            return (anthropic if self.proto == "anthropic" else openai_chat).parse_answer(data)
        except ValueError as exc:
            raise UpstreamFailure(f"{self.describe()}: {exc}", "error") from None
