"""`compaction-guard serve`: a validating proxy OpenClaw compacts through.

OpenClaw sends compaction to any OpenAI- or Anthropic-compatible endpoint (a custom
provider under `models.providers`, `agents.defaults.compaction.model` set to it). The
guard is that endpoint. It speaks

    POST /v1/chat/completions   OpenAI chat completions, streamed (SSE) or not
    POST /v1/messages           Anthropic Messages, streamed (its event sequence) or not
    GET  /v1/models, /healthz, /metrics (Prometheus, via prometheus_client)

and for each request: forwards it to the upstream (the provider settings: flags,
GUARD_*, config.yaml, openclaw.json; one pooled httpx client), checks the reply with
the detectors against the conversation in the request, and on a failure escalates like
the chain: L2 is the same request made aggressive (a smaller max_tokens, reasoning off,
a brevity instruction added to the client's own prompt, and what L1's failure calls
for: chain.l2_adjustment), L3 the deterministic truncation of the conversation
(summarizers.truncate_l3: within L2's target, in the conversation's own language and
words). The client gets a well-formed answer in the protocol and mode it asked for,
with the summary that passed; `X-Compaction-Guard-Level` and `...-Failures` say which
level and why. A streamed request gets SSE keep-alive lines while it waits (and then
the level in a comment line, since its headers left before the level was known).

`--observe`: every reply is checked and recorded, but returned unchanged (a trial).
Every request is recorded in the state like a chain run (level_usage, failures, the
shared circuit breaker), so --report, --status and Prometheus show live compactions.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hmac
import ipaddress
import json
import math
import os
import re
import secrets
import socket
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import breaker
from .chain import Attempt, ChainResult, adjust_l2, level_requests
from .check import check_record
from .contract import Contract, minimum_tokens, of_request
from .errors import GuardError
from .httpjson import _error_message, _retry_after
from .reasoning import strip_reasoning
from .records import SummaryRecord
from .redact import Redactor, safe_url, url_secrets
from .state import StateStore, empty_state, record_abandoned, record_chain, state_path
from . import listen
from .structured import build as structured_l3
from .summarizers import l2_target, truncate_l3
from .tokens import estimate_tokens

HOP_HEADER = "x-compaction-guard-hop"
ANTHROPIC_VERSION = "2023-06-01"
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


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


class BadRequest(ValueError):
    """A request the guard refuses (400, in the request's own protocol)."""


# ----------------------------------------------------------------- requests checked
_WHOLE_FIELDS = ("max_tokens", "max_completion_tokens", "top_k", "n", "seed")
_NUMBER_FIELDS = ("temperature", "top_p", "frequency_penalty", "presence_penalty", "repeat_penalty")
_MAX_TOKENS_LIMIT = 10_000_000


def _no_constant(name: str):
    raise BadRequest(f"{name} is not a JSON number (NaN and Infinity are not JSON)")


def parse_body(raw: bytes, settings) -> dict:
    """The request's JSON, every field of the type it must have: refused (BadRequest) when
    it is not UTF-8 or not JSON, nests deeper than serve_max_json_depth, holds a number that
    is not finite (`1e400`, `NaN`) or a string that is not Unicode (a lone surrogate such as
    `\\ud800`, valid JSON that no encoder can send on), or when a field the guard reads or
    forwards is of the wrong type (`max_tokens: "abc"`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not UTF-8") from None
    try:
        body = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequest(f"the request's JSON nests deeper than {settings.serve_max_json_depth} levels") from None
    except ValueError as exc:
        if isinstance(exc, BadRequest):
            raise
        raise BadRequest("the request body is not JSON") from None
    _walk(body, settings.serve_max_json_depth)
    if not isinstance(body, dict):
        raise BadRequest("the request body is not a JSON object")
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        raise BadRequest("the request has no messages list")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise BadRequest(f"messages[{i}] is not an object")
        if not isinstance(m.get("role"), str):
            raise BadRequest(f"messages[{i}].role is not a string")
        c = m.get("content")
        if not (c is None or isinstance(c, str) or (isinstance(c, list) and all(isinstance(x, dict) for x in c))):
            raise BadRequest(f"messages[{i}].content is neither a string nor a list of parts")
    if body.get("model") is not None and not isinstance(body["model"], str):
        raise BadRequest("model is not a string")
    sys_ = body.get("system")
    if not (sys_ is None or isinstance(sys_, str) or (isinstance(sys_, list) and all(isinstance(x, dict) for x in sys_))):
        raise BadRequest("system is neither a string nor a list of blocks")
    for k in _WHOLE_FIELDS:
        v = body.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _MAX_TOKENS_LIMIT
                              or (k in ("max_tokens", "max_completion_tokens") and v < 1)):
            raise BadRequest(f"{k} must be a whole number from {1 if k.startswith('max') else 0} to "
                             f"{_MAX_TOKENS_LIMIT}")
    for k in _NUMBER_FIELDS:
        v = body.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise BadRequest(f"{k} must be a number")
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise BadRequest("stream must be true or false")
    for k in ("stop", "stop_sequences"):
        v = body.get(k)
        if not (v is None or isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))):
            raise BadRequest(f"{k} must be a string or a list of strings")
    for k in ("stream_options", "thinking", "metadata"):
        if body.get(k) is not None and not isinstance(body[k], dict):
            raise BadRequest(f"{k} must be an object")
    return body


def _walk(value, max_depth: int) -> None:
    """Depth, finite numbers, and Unicode strings, everywhere in the value (iteratively)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > max_depth:
                raise BadRequest(f"the request's JSON nests deeper than {max_depth} levels")
            if isinstance(v, dict):
                for k in v:
                    _unicode(k)
                v = v.values()
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, str):
            _unicode(v)
        elif isinstance(v, float) and not math.isfinite(v):
            raise BadRequest("a number in the request is not finite (1e400 and the like cannot be sent on)")


def _unicode(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("a string in the request is not valid Unicode (a lone surrogate such as \\ud800)") from None


# ----------------------------------------------------------------- the two protocols
def _text_of(content) -> str:
    """A message's text: a string, or content parts/blocks of type text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


# a conversation fenced in the request (OpenClaw's shape): what is cut to fit a small upstream context
_CONVERSATION_RE = re.compile(r"<conversation>\s*(.*?)\s*</conversation>", re.S)


@dataclass
class Request:
    """A compaction request read: `history` (the conversation itself, fenced parts only when
    the client fences them), `previous` (the summary being replaced), `instructions` (what
    the prompt asks, the history taken out), `contract` (what the answer must be, see
    contract.py), and `text`, what the checks read as the input: the history and the previous
    summary."""
    history: str
    previous: Optional[str]
    instructions: str
    contract: Contract
    rejected: Optional[str] = None    # the agent's audit rejected the previous answer: its reasons

    @property
    def text(self) -> str:
        prev = f"<previous-summary>\n{self.previous}\n</previous-summary>" if self.previous else ""
        return "\n\n".join(p for p in (self.history, prev) if p)

    @property
    def plain(self) -> str:
        """The previous summary and the history as plain text (what an unstructured L3 cuts)."""
        return "\n\n".join(p for p in (self.previous, self.history) if p)


def prepare(raw: bytes, proto: str, settings) -> tuple:
    """(body, request, input_tokens): parse_body, read_request and the history's token
    estimate in one call, which a worker process makes for a large body (json and the
    regexes over megabytes hold the interpreter lock while they run)."""
    body = parse_body(raw, settings)
    request = read_request(proto, body)
    return body, request, estimate_tokens(request.text)


def rough_size(body: dict) -> int:
    """About how many characters the body's messages hold (their string contents)."""
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    return sum(len(m["content"]) if isinstance(m.get("content"), str) else len(str(m.get("content")))
               for m in msgs if isinstance(m, dict))


def read_request(proto: str, body: dict) -> Request:
    """What the request asks to be summarized: every non-system message's text, the last user
    message taken for the instructions; unless an agent recognizes the request as its own
    (agents/<name>/requests.py: OpenClaw fences the history in `<conversation>`, so its English
    instructions are not taken for history, their language or their size, and hands over the
    summary it replaces)."""
    from .agents import every
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    parts = [_text_of(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") != "system"]
    text = "\n\n".join(p for p in parts if p)
    last = next((_text_of(m.get("content")) for m in reversed(msgs) if isinstance(m, dict)
                 and m.get("role") == "user"), "")
    for agent in sorted(every(), key=lambda a: a.request_order):
        shape = agent.read_request(text, last)
        if shape is not None:
            return Request(shape.history, shape.previous, shape.instructions,
                           of_request(shape.history, shape.instructions), shape.rejected)
    return Request(text, None, last, of_request(text, last), None)


def conversation(proto: str, body: dict) -> str:
    """The text the checks read as a request's input (Request.text)."""
    return read_request(proto, body).text


def _system_of(proto: str, body: dict) -> str:
    if proto == "anthropic":
        return _text_of(body.get("system"))
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    return "\n\n".join(_text_of(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") == "system")


def translate(proto: str, body: dict, to: str) -> dict:
    """The client's request in the upstream's protocol (text content; other fields that
    mean the same thing kept)."""
    if proto == to:
        return dict(body)
    system = _system_of(proto, body)
    msgs = [{"role": m.get("role") if m.get("role") in ("user", "assistant") else "user",
             "content": _text_of(m.get("content"))}
            for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") != "system"]
    out = {k: body[k] for k in ("model", "temperature", "top_p", "stop") if k in body}
    if to == "anthropic":
        out["max_tokens"] = body.get("max_tokens") or body.get("max_completion_tokens") or 1024
        if "stop" in out:
            out["stop_sequences"] = out.pop("stop") if isinstance(out["stop"], list) else [out.pop("stop")]
        if system:
            out["system"] = system
        out["messages"] = msgs
    else:
        out["max_tokens"] = body.get("max_tokens") or 1024
        if "stop_sequences" in body:
            out["stop"] = body["stop_sequences"]
        out["messages"] = ([{"role": "system", "content": system}] if system else []) + msgs
    return out


def _add_instruction(proto: str, body: dict, text: str) -> dict:
    """The client's prompt kept, an instruction added to its system prompt."""
    b = dict(body)
    if proto == "anthropic":
        sys_ = b.get("system")
        if isinstance(sys_, list):
            b["system"] = list(sys_) + [{"type": "text", "text": text}]
        else:
            b["system"] = f"{sys_}\n\n{text}" if sys_ else text
    else:
        msgs = list(b.get("messages") or [])
        if msgs and isinstance(msgs[0], dict) and msgs[0].get("role") == "system":
            msgs[0] = dict(msgs[0], content=f"{_text_of(msgs[0].get('content'))}\n\n{text}")
        else:
            msgs.insert(0, {"role": "system", "content": text})
        b["messages"] = msgs
    return b


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
            from .llm import LocalSummarizer
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
        if not isinstance(data, dict):
            raise UpstreamFailure(f"{self.describe()}: the answer is not a JSON object", "error")
        if self.proto == "anthropic":
            blocks = data.get("content") if isinstance(data.get("content"), list) else []
            text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
            thinking = sum(len(b.get("thinking", "") or "") for b in blocks if isinstance(b, dict)
                           and b.get("type") in ("thinking", "redacted_thinking"))
            stop = data.get("stop_reason")
            return text, thinking, {"max_tokens": "cut_off", "refusal": "refusal"}.get(stop)
        try:
            choice = data["choices"][0]
            msg = choice.get("message") or {}
        except (KeyError, IndexError, TypeError, AttributeError):
            raise UpstreamFailure(f"{self.describe()}: answer has no choices[0].message", "error") from None
        if not isinstance(msg, dict):
            raise UpstreamFailure(f"{self.describe()}: answer has no choices[0].message", "error")
        reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
        finish = "refusal" if msg.get("refusal") else ("cut_off" if choice.get("finish_reason") == "length" else None)
        return _text_of(msg.get("content")), len(reasoning) if isinstance(reasoning, str) else 0, finish


def _warm_check(settings) -> bool:
    """A check in a worker process, so that its imports and data are loaded."""
    r = check_record(SummaryRecord("warm", "Warm-up: the deploy of v2.3.1 passed.", "serve",
                                   input_text="user: deploy v2.3.1\nassistant: it passed"), settings)
    return r.valid


# ----------------------------------------------------------------- one compaction
@dataclass
class Outcome:
    summary: Optional[str]        # None only with --observe when the upstream gave no text
    level: int
    attempts: list
    input_tokens: int
    output_tokens: int
    breaker_open: bool = False
    observed: list = field(default_factory=list)     # --observe: what L1 failed (returned unchanged)
    seconds: float = 0.0
    bytes_in: int = 0
    retry_of: Optional[str] = None      # the agent's audit rejected the previous answer for these reasons

    @property
    def failures(self) -> list:
        seen = []
        for a in self.attempts:
            for k in a.failures:
                if k not in seen:
                    seen.append(k)
        return seen


class Proxy:
    """The compaction path: upstream calls, checks, escalation, recording."""

    def __init__(self, upstream: Upstream, settings, home: Path, observe: bool = False, logger=None):
        from concurrent.futures import ThreadPoolExecutor
        self.upstream = upstream
        self.settings = settings
        self.store = StateStore(state_path(home), settings, warn=self.log)
        self.observe = observe
        self.in_flight = 0          # admitted: running or waiting for a slot
        self.running = 0
        self.logger = logger
        # parsing and the state: a bounded thread pool, off the event loop; the checks and L3
        # (pure Python, seconds on a large history) in worker processes, so that they never
        # hold the event loop's interpreter lock
        self.pool = ThreadPoolExecutor(max_workers=max(1, settings.serve_check_threads),
                                       thread_name_prefix="guard-check")
        self.procs = None
        if settings.serve_check_processes > 0:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor
            self.procs = ProcessPoolExecutor(max_workers=settings.serve_check_processes,
                                             mp_context=multiprocessing.get_context("spawn"))
        if self.procs is not None:
            upstream.offload = self.heavy      # a large body's JSON made in a worker process
        self._slots = None          # made in the server's event loop (first use)
        self.stopping = None        # an asyncio.Event set on SIGTERM: answer at L3 now
        self.state_error = None     # the last time the state could not be read or written, and why
        self.seen_state = None      # (monotonic time, state): the last state read or written, for /healthz
        self._refresh = None        # /healthz's read of the state in the background, under load

    async def cpu(self, fn, *args):
        """`fn(*args)` in the thread pool."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def heavy(self, fn, *args):
        """`fn(*args)` in a worker process (a thread when serve_check_processes is 0)."""
        if self.procs is None:
            return await self.cpu(fn, *args)
        return await asyncio.get_running_loop().run_in_executor(self.procs, fn, *args)

    def warm(self) -> None:
        """Start the worker processes and load the detectors' data in each, before the
        first request waits on it."""
        if self.procs is not None:
            for f in [self.procs.submit(_warm_check, self.settings) for _ in range(self.settings.serve_check_processes)]:
                f.result()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self.procs is not None:
            self.procs.shutdown(wait=False, cancel_futures=True)

    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(max(1, self.settings.serve_max_concurrent))
            self.stopping = asyncio.Event()
        return self._slots

    def admit(self) -> bool:
        """Whether one more compaction may wait for a slot (serve_max_concurrent running,
        serve_max_queued waiting)."""
        return self.in_flight < self.settings.serve_max_concurrent + self.settings.serve_max_queued

    async def prepare(self, raw: bytes, proto: str) -> tuple:
        """(body, (request, input_tokens) or None): the request parsed (BadRequest when it is
        not well formed); a body of serve_process_body_bytes or more read whole in a worker
        process, so that the event loop (/healthz) is not held while it is."""
        if self.procs is not None and len(raw) >= self.settings.serve_process_body_bytes:
            body, request, tokens = await self.heavy(prepare, raw, proto, self.settings)
            return body, (request, tokens)
        return await self.cpu(parse_body, raw, self.settings), None

    async def admitted(self, proto: str, body: dict, size: int, prepared: Optional[tuple] = None) -> "Outcome":
        async with self.slots():
            self.running += 1
            try:
                return await self.compact(proto, body, size, prepared)
            finally:
                self.running -= 1

    def read_state(self) -> dict:
        """The state, or an empty one when it cannot be read (a directory in its place, no
        permission): compaction goes on, /healthz says what is wrong."""
        try:
            state = self.store.read()
        except GuardError as exc:
            self._state_failed(str(exc))
            return empty_state()
        self.seen_state = (time.monotonic(), state)
        return state

    async def health_state(self) -> dict:
        """The state /healthz reports: the one this guard last read or wrote, when that is
        under serve_health_state_max_age_seconds old; older, read again, and while
        compactions are in flight (their parsing holds the interpreter) answered from the
        last one seen as the new read goes on in the background: /healthz waits on no file
        and no thread under load."""
        seen = self.seen_state
        if seen is not None and time.monotonic() - seen[0] < self.settings.serve_health_state_max_age_seconds:
            return seen[1]
        if seen is None or not self.in_flight:
            return await asyncio.to_thread(self.read_state)
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(asyncio.to_thread(self.read_state))
        return seen[1]

    def _state_failed(self, why: str) -> None:
        if self.state_error is None or self.state_error[1] != why:
            self.log(f"the state cannot be used: {why}")
        self.state_error = (time.time(), why)

    async def compact(self, proto: str, body: dict, size: int = 0, prepared: Optional[tuple] = None) -> Outcome:
        """One compaction request, answered (L1, L2, L3); cancelled, when the client goes away,
        with its upstream call, and then counted as abandoned, not as a compaction.
        `prepared`: (request, input_tokens), when Proxy.prepare read them already."""
        t0 = time.monotonic()
        if prepared is None:
            request = await self.cpu(read_request, proto, body)      # regexes over megabytes: off the loop
            prepared = (request, None)
        request, input_tokens = prepared
        try:
            out = await self._compact(proto, body, request, input_tokens)
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.to_thread(self._abandoned, time.monotonic() - t0, size))
            raise
        out.seconds = time.monotonic() - t0
        out.bytes_in = size
        out.retry_of = request.rejected
        return await self._done(out)

    def _abandoned(self, seconds: float, size: int) -> None:
        self.log(f"abandoned after {seconds:.1f} s: the client went away; its upstream work was cancelled "
                 f"({size:,} bytes in)")
        try:
            with self.store.update() as state:
                record_abandoned(state)
        except GuardError as exc:
            self._state_failed(str(exc))

    def log(self, line: str) -> None:
        """One line per request on stderr (figures only, never content)."""
        if self.logger is not None:
            self.logger(f"compaction-guard serve: {line}")

    async def _compact(self, proto: str, body: dict, request: Request, input_tokens: Optional[int] = None) -> Outcome:
        s = self.settings
        text, previous, contract = request.text, request.previous, request.contract
        if input_tokens is None:
            input_tokens = await self.cpu(estimate_tokens, text)
        room = minimum_tokens(contract)           # what the asked structure alone needs
        state = await self.cpu(self.read_state)
        skip = breaker.open_until(state) is not None and not self.observe
        deadline = time.monotonic() + s.chain_deadline_seconds
        attempts = []
        requests = level_requests(input_tokens, s)
        for req in requests[:1] if self.observe else requests:
            if attempts and "loop" in attempts[-1].failures:
                break                  # the upstream is the guard: L2 would loop as L1 did
            if self.stopping is not None and self.stopping.is_set() and not skip:
                attempts.append(Attempt(req.level, req.strategy, False, [], 0, 0.0, skipped=True,
                                        warnings=["skipped: the server is shutting down"]))
                continue
            why = None
            if req.level == 2:
                req, why = adjust_l2(req, attempts[-1].failures if attempts else [], s)
            asked = {"temperature": req.temperature, "max_tokens": req.max_tokens, "target_tokens": req.target_tokens}
            if why:
                asked["adjustment"] = why
            if skip:
                attempts.append(Attempt(req.level, req.strategy, False, [], 0, 0.0, skipped=True, request=asked,
                                        warnings=["skipped: circuit breaker open"]))
                continue
            if room and req.target_tokens < room:     # every level can meet the structure asked for
                req = dataclasses.replace(req, target_tokens=room, max_tokens=max(req.max_tokens, room + room // 2))
            up = self._level_body(proto, body, req, contract) if req.level == 2 else \
                translate(proto, body, self.upstream.proto)
            if req.level == 2 and req.penalties:
                asked["penalties"] = ({k: up[k] for k in ("frequency_penalty", "presence_penalty", "repeat_penalty")
                                       if k in up} or "none: the Anthropic API has no repetition penalty")
            t0 = time.perf_counter()
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise UpstreamFailure(f"the {s.chain_deadline_seconds:g} s deadline passed before L{req.level}",
                                          "timeout")
                reply, reasoning_chars, finish, retries = await self._upstream_call(up, remaining)
            except asyncio.TimeoutError:
                attempts.append(Attempt(req.level, req.strategy, False, ["timeout"], 0, time.perf_counter() - t0,
                                        {"timeout": f"the {s.chain_deadline_seconds:g} s deadline passed"}, request=asked))
                continue
            except UpstreamFailure as exc:
                attempts.append(Attempt(req.level, req.strategy, False, [exc.kind], 0, time.perf_counter() - t0,
                                        {exc.kind: str(exc)}, retries=exc.retries, request=asked))
                attempts[-1].client_side = exc.client_side
                continue
            except Exception as exc:      # noqa: BLE001 - whatever the upstream call raised: a failed level
                why = self.upstream.scrub(f"{self.upstream.describe()}: the call failed ({type(exc).__name__})")
                attempts.append(Attempt(req.level, req.strategy, False, ["error"], 0, time.perf_counter() - t0,
                                        {"error": why}, request=asked))
                continue
            stripped = strip_reasoning(reply)
            summary = stripped.text.strip()
            warnings = [f"reasoning_stripped: {stripped.reasoning_chars} chars of reasoning removed"] if stripped.kind else []
            if finish in ("cut_off", "refusal"):
                kind = finish
                attempts.append(Attempt(req.level, req.strategy, False, [kind], estimate_tokens(summary),
                                        time.perf_counter() - t0, {kind: f"the upstream's stop reason says {kind}"},
                                        warnings, retries, request=asked))
                attempts[-1].text = reply
                continue
            if not summary and (reasoning_chars or stripped.kind):
                attempts.append(Attempt(req.level, req.strategy, False, ["reasoning_only"], 0, time.perf_counter() - t0,
                                        {"reasoning_only": "reasoning and no summary"}, warnings, retries,
                                        request=asked))
                attempts[-1].text = reply
                continue
            verdict = await self.heavy(check_record, SummaryRecord(
                f"serve-L{req.level}", summary, "serve", input_text=text, previous=previous, contract=contract), s)
            attempts.append(Attempt(req.level, req.strategy, verdict.valid, verdict.failures, verdict.output_tokens,
                                    time.perf_counter() - t0, verdict.reasons, warnings + verdict.warnings, retries,
                                    request=asked))
            attempts[-1].text = reply
            if verdict.valid:
                return Outcome(summary, req.level, attempts, input_tokens, verdict.output_tokens, skip)
        if self.observe:          # returned unchanged (or the upstream's error): recorded as what it was
            a = attempts[0]
            return Outcome(getattr(a, "text", None), 1, attempts, input_tokens, a.output_tokens, observed=a.failures)
        t0 = time.perf_counter()
        budget = max(l2_target(input_tokens, s), room)
        if contract.structured:
            l3 = await self.heavy(structured_l3, request.history, previous, contract, s, budget)
        else:
            l3 = (await self.heavy(truncate_l3, request.plain, s, budget)).text
        verdict = await self.heavy(check_record, SummaryRecord("serve-L3", l3, "serve", input_text=text,
                                                             contract=contract), s, None, True)
        notes = ["L3 keeps the conversation's own words and language"]
        if contract.structured:
            notes.append("L3 in the structure asked for: "
                         + ", ".join(list(contract.sections) + ([f"<{contract.wrapper}>"] if contract.wrapper else [])
                                     + ([f"'{contract.footer} ...'"] if contract.footer else [])))
        if "format" in verdict.failures:          # never expected: said, so a test and the operator see it
            notes.append(f"format: {verdict.reasons['format']}")
        attempts.append(Attempt(3, "deterministic", True, [], verdict.output_tokens, time.perf_counter() - t0,
                                warnings=verdict.warnings + notes))
        return Outcome(l3, 3, attempts, input_tokens, verdict.output_tokens, skip)

    async def _upstream_call(self, body: dict, remaining: float) -> tuple:
        """The upstream call within `remaining` seconds; when the server begins shutting down,
        given up serve_shutdown_seconds - 5 s later (the request is then answered at L3)."""
        call = asyncio.ensure_future(asyncio.wait_for(self.upstream.call(body), remaining))
        if self.stopping is None:
            return await call
        stop = asyncio.ensure_future(self.stopping.wait())
        try:
            done, _ = await asyncio.wait({call, stop}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            stop.cancel()
        if call in done:
            return call.result()
        # shutting down: the upstream has until shortly before the server must be down
        grace = max(0.0, self.settings.serve_shutdown_seconds - 5.0)
        done, _ = await asyncio.wait({call}, timeout=grace)
        if call in done:
            return call.result()
        await _cancel_task(call)
        raise UpstreamFailure(f"the server is shutting down and the upstream had not answered {grace:g} s later: "
                              "answered without it", "timeout")

    def _level_body(self, proto: str, body: dict, req, contract: Contract = None) -> dict:
        """L2: the client's request in the upstream's protocol, made aggressive."""
        b = translate(proto, body, self.upstream.proto)
        shape = ""
        if contract is not None and contract.sections:
            shape = f" Use exactly these section headings, in this order: {'; '.join(contract.sections)}."
        elif contract is not None and contract.wrapper == "summary":
            shape = " Put the summary inside <summary></summary> tags."
        if contract is not None and contract.footer:
            shape += f' End with one line that starts "{contract.footer}" and lists what you left out.'
        b = _add_instruction(self.upstream.proto, b, (
            f"Be brief: at most {req.target_tokens} tokens. Keep only durable facts: decisions, identifiers (paths, "
            f"ids, versions, numbers), open tasks and the latest request. Do not repeat yourself.{shape}"))
        if "max_completion_tokens" in b:
            b["max_completion_tokens"] = min(int(b["max_completion_tokens"] or req.max_tokens), req.max_tokens)
        else:
            b["max_tokens"] = min(int(b.get("max_tokens") or req.max_tokens), req.max_tokens)
        if req.temperature is not None:
            b["temperature"] = req.temperature
        if self.upstream.proto == "anthropic":
            if "thinking" in b:
                b["thinking"] = {"type": "disabled"}
        else:
            if "reasoning_effort" in b:
                b["reasoning_effort"] = "low"
            if req.penalties:
                b["frequency_penalty"] = self.settings.l2_frequency_penalty
                b["presence_penalty"] = self.settings.l2_presence_penalty
                if self.upstream.choice.provider == "local" or "api.openai.com" not in self.upstream.base_url:
                    b["repeat_penalty"] = self.settings.l2_repeat_penalty     # llama.cpp, Ollama
        return b

    async def _done(self, out: Outcome) -> Outcome:
        result = ChainResult(out.summary or "", out.level, out.input_tokens, out.output_tokens, out.attempts,
                             summarizer=self.upstream.describe(), provider=self.upstream.choice.provider,
                             model=self.upstream.model or "", breaker_open=out.breaker_open)

        # a request the upstream refused as invalid (a 4xx of the client's making) says nothing
        # of the upstream's health: it does not count toward opening the shared breaker
        llm = [a for a in out.attempts if a.level < 3 and not a.skipped]
        blamed = not (llm and all(getattr(a, "client_side", False) for a in llm))

        def record():
            with self.store.update() as state:
                record_chain(state, result, via="serve")
                if blamed or out.level != 3:
                    breaker.record(state, out.level, out.breaker_open, self.settings)
            self.seen_state = (time.monotonic(), state)
        try:
            await self.cpu(record)
        except GuardError as exc:
            self._state_failed(f"not written: {exc}")    # the client still gets its summary
        def said(a) -> str:
            kinds = ",".join(a.failures) or ("skipped" if a.skipped else "ok")
            http = re.search(r"HTTP (\d{3})", a.reasons.get("error", "")) if "error" in a.failures else None
            return f"L{a.level} {kinds}" + (f" (HTTP {http.group(1)})" if http else "")
        tried = "; ".join(said(a) for a in out.attempts)
        upstream = sum(a.seconds for a in out.attempts if a.level < 3)
        self.log(f"{'observed' if self.observe else 'answered'} at L{out.level} ({tried}) in {out.seconds:.2f} s, "
                 f"{upstream:.2f} s upstream; {out.input_tokens:,} -> {out.output_tokens:,} tokens, "
                 f"{out.bytes_in:,} bytes in, {len((out.summary or '').encode()):,} bytes out"
                 + (f"; a retry: the agent's audit rejected the previous answer ({out.retry_of})" if out.retry_of else ""))
        return out


# ----------------------------------------------------------------- answers
def _headers(out: Optional[Outcome]) -> dict:
    if out is None:
        return {}
    h = {"x-compaction-guard-level": str(out.level),
         "x-compaction-guard-failures": ",".join(out.failures) or "none"}
    if out.observed:
        h["x-compaction-guard-observed"] = "would escalate: " + ",".join(out.observed)
    return h


def openai_body(out: Outcome, model: str) -> dict:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": out.summary},
                                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": out.input_tokens, "completion_tokens": out.output_tokens,
                      "total_tokens": out.input_tokens + out.output_tokens}}


def anthropic_body(out: Outcome, model: str) -> dict:
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": out.summary}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": out.input_tokens, "output_tokens": out.output_tokens}}


def _sse(event: Optional[str], data) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def openai_stream(out: Outcome, model: str, include_usage: bool = False):
    """The answer as OpenAI's chunks; with `stream_options.include_usage` (OpenClaw always asks
    for it) a last chunk with no choices and the usage, as OpenAI sends it."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model}
    yield _sse(None, dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                          "finish_reason": None}]))
    for piece in _pieces(out.summary):
        yield _sse(None, dict(base, choices=[{"index": 0, "delta": {"content": piece}, "finish_reason": None}]))
    yield _sse(None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    if include_usage:
        yield _sse(None, dict(base, choices=[], usage={"prompt_tokens": out.input_tokens,
                                                       "completion_tokens": out.output_tokens,
                                                       "total_tokens": out.input_tokens + out.output_tokens}))
    yield b"data: [DONE]\n\n"


def anthropic_stream(out: Outcome, model: str):
    mid = f"msg_{uuid.uuid4().hex[:24]}"
    yield _sse("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": out.input_tokens, "output_tokens": 0}}})
    yield _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})
    for piece in _pieces(out.summary):
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": piece}})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
    yield _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                 "usage": {"output_tokens": out.output_tokens}})
    yield _sse("message_stop", {"type": "message_stop"})


def _pieces(text: str, size: int = 400):
    for i in range(0, len(text), size):
        yield text[i:i + size]


def error_body(proto: str, status: int, message: str) -> dict:
    if proto == "anthropic":
        kind = {401: "authentication_error", 413: "request_too_large", 400: "invalid_request_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                      "code": status}}


def _usage_asked(body: dict) -> bool:
    opts = body.get("stream_options")
    return isinstance(opts, dict) and opts.get("include_usage") is True


# ----------------------------------------------------------------- the ASGI app
def build_app(proxy: Proxy, settings, token: Optional[str] = None):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def allowed(request: Request) -> bool:
        if token is None:
            return True
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
        model = proxy.upstream.model or "compaction-guard"
        return JSONResponse({"object": "list", "data": [{"id": model, "object": "model", "created": 0,
                                                         "owned_by": "compaction-guard"}]})

    async def healthz(request: Request):
        if not allowed(request):
            return unauthorized()
        state = await proxy.health_state()
        doc = {"status": "ok", "upstream": proxy.upstream.describe(), "observe": proxy.observe,
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
        model = body.get("model") or proxy.upstream.model or "compaction-guard"
        proxy.in_flight += 1
        task = asyncio.ensure_future(proxy.admitted(proto, body, len(raw), prepared))
        task.add_done_callback(lambda _t: setattr(proxy, "in_flight", proxy.in_flight - 1))
        if proxy.observe:         # a trial: the upstream's error stays an error
            out = await _unless_gone(task, request)
            if out is None:
                return Response(status_code=499)
            if out.summary is None:
                err = next(iter(out.attempts[0].reasons.values()), "the upstream failed")
                return JSONResponse(error_body(proto, 502, err), status_code=502, headers=_headers(out))
            if body.get("stream"):
                return LateHeadersStream(task, proto, model, settings.serve_keepalive_seconds, _usage_asked(body))
        if not body.get("stream"):
            try:
                out = await _unless_gone(task, request)
            except Exception as exc:      # noqa: BLE001 - never expected; the client still gets a well-formed error
                proxy.log(f"internal error: {type(exc).__name__}")
                return refuse(proto, 500, f"the guard failed on this request ({type(exc).__name__}); see its log")
            if out is None:           # the client went away: nobody to answer
                return Response(status_code=499)
            doc = anthropic_body(out, model) if proto == "anthropic" else openai_body(out, model)
            return JSONResponse(doc, headers=_headers(out))
        return LateHeadersStream(task, proto, model, settings.serve_keepalive_seconds, _usage_asked(body),
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
        await proxy.upstream.close()
        proxy.close()

    from contextlib import asynccontextmanager
    return Starlette(routes=routes, lifespan=asynccontextmanager(lifespan))


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


async def _cancel_task(task) -> None:
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


class LateHeadersStream:
    """An SSE answer whose headers leave with its first bytes: the level is in them when
    the compaction is done before the first keep-alive; otherwise keep-alive lines go out
    while it runs, and the level follows in a comment line before the events."""

    def __init__(self, task, proto: str, model: str, keepalive: float, include_usage: bool = False, logger=None):
        self.task, self.proto, self.model, self.keepalive = task, proto, model, keepalive
        self.include_usage = include_usage
        self.logger = logger

    async def __call__(self, scope, receive, send):
        started = False

        async def emit(data: bytes, headers: Optional[dict] = None):
            nonlocal started
            if not started:
                h = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache",
                     **(headers or {})}
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(k.encode(), v.encode()) for k, v in h.items()]})
                started = True
            await send({"type": "http.response.body", "body": data, "more_body": True})

        async def gone():
            while (await receive())["type"] != "http.disconnect":
                pass
        watch = asyncio.ensure_future(gone())
        try:
            while True:
                done, _ = await asyncio.wait({self.task, watch}, timeout=self.keepalive,
                                             return_when=asyncio.FIRST_COMPLETED)
                if self.task in done:
                    break
                if watch in done:                    # the client went away: cancel its compaction
                    await _cancel_task(self.task)
                    return
                await emit(b'event: ping\ndata: {"type": "ping"}\n\n' if self.proto == "anthropic"
                           else b": keep-alive\n\n")
        except OSError:
            await _cancel_task(self.task)
            return
        finally:
            watch.cancel()
        try:
            out = self.task.result()
        except Exception as exc:          # noqa: BLE001 - never expected: the stream still ends well-formed
            if self.logger is not None:
                self.logger(f"internal error: {type(exc).__name__}")
            message = f"the guard failed on this request ({type(exc).__name__}); see its log"
            if self.proto == "anthropic":
                await emit(_sse("error", error_body("anthropic", 500, message)))
            else:
                await emit(_sse(None, error_body("openai", 500, message)) + b"data: [DONE]\n\n")
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        head = _headers(out)
        if started:
            await emit(f": compaction-guard level={out.level} failures={head['x-compaction-guard-failures']}\n\n".encode())
        events = anthropic_stream(out, self.model) if self.proto == "anthropic" else \
            openai_stream(out, self.model, self.include_usage)
        for chunk in events:
            await emit(chunk, head)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _metrics_text(proxy: Proxy) -> str:
    """The state's counters as Prometheus metrics, through prometheus_client."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    from . import operations
    from .render import failures_by_store_kind

    rep = operations.report(proxy.store.path.parents[2], proxy.settings)

    class StateCollector:
        def collect(self):
            c = CounterMetricFamily("compaction_guard_compactions", "Runs of the guard's chain (and proxied "
                                    "compactions), by the level that produced the summary.", labels=["level"])
            for k, n in rep["level_usage"].items():
                c.add_metric([k], n)
            yield c
            c = CounterMetricFamily("compaction_guard_stored_summaries", "Summaries found in the stores, each "
                                    "counted once, by who wrote them.", labels=["written_by"])
            for k, n in rep["stored_summaries"].items():
                c.add_metric([k[3:]], n)
            yield c
            c = CounterMetricFamily("compaction_guard_failures", "Failing summaries, by failure kind and store.",
                                    labels=["source", "kind"])
            for src, kinds in sorted(failures_by_store_kind(rep["totals"]["failures"]).items()):
                for kind, n in sorted(kinds.items()):
                    c.add_metric([src, kind], n)
            yield c
            yield GaugeMetricFamily("compaction_guard_l3_share", "Share of chain runs that ended at L3.",
                                    value=rep["level_share"]["l3_deterministic"])
            yield GaugeMetricFamily("compaction_guard_circuit_open", "1 while the circuit breaker skips the LLM levels.",
                                    value=1 if rep["circuit_breaker"]["open_until"] else 0)
            yield GaugeMetricFamily("compaction_guard_serve_in_flight", "Compactions the proxy is working on.",
                                    value=proxy.in_flight)

    reg = CollectorRegistry()
    reg.register(StateCollector())
    return generate_latest(reg).decode()


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
    """uvicorn's h11 protocol, except that a connection whose request headers have not all
    arrived within `header_timeout` seconds (of its opening, or of its last answer) is closed."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
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

        def handle_events(self):
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
          observe: bool = False, env=None, ready=None) -> int:
    """Run the proxy until SIGTERM/SIGINT (requests in flight finish; exit 0)."""
    import importlib.util
    if not all(importlib.util.find_spec(m) for m in ("uvicorn", "starlette", "httpx", "prometheus_client")):
        raise GuardError("serve needs its extras: pip install 'compaction-resilience-guard[serve]'")
    import uvicorn
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
    if choice.provider == "extractive":
        raise GuardError("serve needs an upstream model to forward to: --provider openai|anthropic|local with "
                         "--base-url and --model (or GUARD_* / openclaw.json)")
    if choice.provider != "local":
        if not choice.base_url:
            raise GuardError("serve needs the upstream's --base-url")
        check_upstream_is_not_us(choice.base_url, host, port)
        from .providers import points_at_guard
        if points_at_guard(choice.base_url):
            raise GuardError(f"--base-url {choice.base_url} is another compaction-guard serve; point it at the model "
                             "itself")
    key = choice.api_key(env)
    if key is not None and (key != key.strip() or not key.isascii() or not key.isprintable()):
        where = f"${choice.api_key_env}" if choice.api_key_env else "the upstream key in openclaw.json"
        what = ("a trailing newline or spaces" if key != key.strip()
                else "characters an HTTP header cannot carry (non-ASCII or control characters)")
        raise GuardError(f"{where} has {what}: set it to the key alone")
    upstream = Upstream(choice, settings, env)
    import sys

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
    sock = listen.bind(host, port)      # before it says where: a taken port is one line, exit 2
    proxy = Proxy(upstream, settings, home, observe, logger=log)
    proxy.warm()
    log(f"compaction-guard serve: on http://{host}:{port}, upstream {upstream.describe()}, state {proxy.store.path}"
        + (" (observe: replies returned unchanged)" if observe else ""))
    app = build_app(proxy, settings, token)
    # on SIGTERM, compactions in flight wait at most serve_shutdown_seconds - 5 s more for the
    # upstream, then answer at L3 (Proxy.stopping): the server is down within
    # serve_shutdown_seconds whatever clients do
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            timeout_graceful_shutdown=max(1, int(settings.serve_shutdown_seconds)), lifespan="on",
                            http=_protocol_class(settings.serve_header_timeout_seconds))
    server = _server_class()(config, proxy)
    if ready is not None:
        ready(server)
    server.run(sockets=[sock])
    return 0
