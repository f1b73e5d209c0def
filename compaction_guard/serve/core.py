"""The validating core: one compaction request answered by levels, as the chain does (L1 the
request as the client sent it, L2 the same made aggressive, L3 built by extraction in the
structure asked for), each answer checked with the same detectors against the conversation in
the request; recorded in the agent's state (level usage, failures, the shared circuit breaker).

Where a level's answer comes from is a `Route` (its `first`, `aggressive` and `call`): the
configured model (`ModelRoute`, for agents that send compaction to a model of its own) or the
client's own upstream with its own credentials (serve/relay.py, for agents that compact on the
endpoint of every turn)."""
from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .. import breaker
from ..chain import Attempt, ChainResult, adjust_l2, level_requests
from ..check import check_record
from ..contract import Contract, minimum_tokens
from ..errors import GuardError
from ..reasoning import strip_reasoning
from ..records import SummaryRecord
from ..state import StateStore, empty_state, record_abandoned, record_chain, state_path
from ..structured import build as structured_l3
from ..summarizers import l2_target, truncate_l3
from ..tokens import estimate_tokens
from .requests import Request, parse_body, prepare, read_request, translate, _add_instruction
from .upstream import Upstream, UpstreamFailure


def _warm_check(settings) -> bool:
    """A check in a worker process, so that its imports and data are loaded."""
    r = check_record(SummaryRecord("warm", "Warm-up: the deploy of v2.3.1 passed.", "serve",
                                   input_text="user: deploy v2.3.1\nassistant: it passed"), settings)
    return r.valid


# ----------------------------------------------------------------- where a level's answer comes from
@dataclass
class Reply:
    """One level's answer from upstream: its text, reasoning characters, stop reason (None,
    "cut_off", "refusal"), the retries it took, and, where the client's own upstream answered
    (the relay), that answer as it came (`raw`: status, headers, body), relayed unchanged when
    it passes."""
    text: str
    reasoning_chars: int = 0
    finish: Optional[str] = None
    retries: int = 0
    raw: Optional[tuple] = None


class ModelRoute:
    """Levels 1 and 2 through the configured model (`Upstream`): the client's request in the
    upstream's protocol, L2 made aggressive (a smaller max_tokens, reasoning off, a brevity
    instruction added to the client's own system prompt, what L1's failure calls for)."""

    def __init__(self, upstream: Upstream, settings):
        self.upstream = upstream
        self.settings = settings
        self.proto = upstream.proto
        self.provider = upstream.choice.provider
        self.model = upstream.model or ""
        self.deadline = settings.chain_deadline_seconds

    def describe(self) -> str:
        return self.upstream.describe()

    def scrub(self, text: str) -> str:
        return self.upstream.scrub(text)

    def first(self, proto: str, body: dict) -> dict:
        return translate(proto, body, self.upstream.proto)

    async def call(self, body: dict) -> Reply:
        text, reasoning, finish, retries = await self.upstream.call(body)
        return Reply(text, reasoning, finish, retries)

    def aggressive(self, proto: str, body: dict, req, contract: Contract = None, failures=()) -> dict:
        """L2: the client's request in the upstream's protocol, made aggressive."""
        b = translate(proto, body, self.upstream.proto)
        b = _add_instruction(self.upstream.proto, b, brevity(req, contract))
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


def brevity(req, contract: Contract = None) -> str:
    """L2's instruction: brief, the durable facts, the structure the request asked for."""
    shape = ""
    if contract is not None and contract.sections:
        shape = f" Use exactly these section headings, in this order: {'; '.join(contract.sections)}."
    elif contract is not None and contract.wrapper:
        shape = f" Put the summary inside <{contract.wrapper}></{contract.wrapper}> tags."
    if contract is not None and contract.footer:
        shape += f' End with one line that starts "{contract.footer}" and lists what you left out.'
    return (f"Be brief: at most {req.target_tokens} tokens. Keep only durable facts: decisions, identifiers (paths, "
            f"ids, versions, numbers), open tasks and the latest request. Do not repeat yourself.{shape}")


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
    raw: Optional[tuple] = None         # the upstream's answer as it came, when it passed (the relay)

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

    def __init__(self, upstream: Optional[Upstream], settings, home: Path, observe: bool = False, logger=None,
                 describe: Optional[str] = None):
        from concurrent.futures import ThreadPoolExecutor
        self.upstream = upstream
        # the route of a compaction endpoint's requests (the configured model); a relay passes its own
        self.route = ModelRoute(upstream, settings) if upstream is not None else None
        self.upstream_text = describe or (upstream.describe() if upstream is not None else "")
        self.settings = settings
        self.home = home            # the agent's layout: its state, and whose it is
        self.store = StateStore(state_path(home), settings, warn=self.log, agent=getattr(home, "agent", None))
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
        if self.procs is not None and upstream is not None:
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

    async def admitted(self, proto: str, body: dict, size: int, prepared: Optional[tuple] = None,
                       route=None) -> "Outcome":
        async with self.slots():
            self.running += 1
            try:
                return await self.compact(proto, body, size, prepared, route)
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

    async def compact(self, proto: str, body: dict, size: int = 0, prepared: Optional[tuple] = None,
                      route=None) -> Outcome:
        """One compaction request, answered (L1, L2, L3); cancelled, when the client goes away,
        with its upstream call, and then counted as abandoned, not as a compaction.
        `prepared`: (request, input_tokens), when Proxy.prepare read them already; `route`:
        where its levels 1 and 2 go (the configured model when None)."""
        route = route or self.route
        t0 = time.monotonic()
        if prepared is None:
            request = await self.cpu(read_request, proto, body)      # regexes over megabytes: off the loop
            prepared = (request, None)
        request, input_tokens = prepared
        try:
            out = await self._compact(proto, body, request, input_tokens, route)
        except asyncio.CancelledError:
            await asyncio.shield(asyncio.to_thread(self._abandoned, time.monotonic() - t0, size))
            raise
        out.seconds = time.monotonic() - t0
        out.bytes_in = size
        out.retry_of = request.rejected
        return await self._done(out, route)

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

    async def _compact(self, proto: str, body: dict, request: Request, input_tokens: Optional[int], route) -> Outcome:
        s = self.settings
        text, previous, contract = request.text, request.previous, request.contract
        if input_tokens is None:
            input_tokens = await self.cpu(estimate_tokens, text)
        room = minimum_tokens(contract)           # what the asked structure alone needs
        state = await self.cpu(self.read_state)
        skip = breaker.open_until(state) is not None and not self.observe
        deadline = time.monotonic() + route.deadline
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
            up = (route.aggressive(proto, body, req, contract, attempts[-1].failures if attempts else [])
                  if req.level == 2 else route.first(proto, body))
            if req.level == 2 and req.penalties:
                asked["penalties"] = ({k: up[k] for k in ("frequency_penalty", "presence_penalty", "repeat_penalty")
                                       if k in up} or "none: the Anthropic API has no repetition penalty")
            t0 = time.perf_counter()
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:
                    raise UpstreamFailure(f"the {route.deadline:g} s deadline passed before L{req.level}", "timeout")
                answer = await self._upstream_call(route, up, remaining)
                reply, reasoning_chars, finish, retries = answer.text, answer.reasoning_chars, answer.finish, answer.retries
            except asyncio.TimeoutError:
                attempts.append(Attempt(req.level, req.strategy, False, ["timeout"], 0, time.perf_counter() - t0,
                                        {"timeout": f"the {route.deadline:g} s deadline passed"}, request=asked))
                continue
            except UpstreamFailure as exc:
                attempts.append(Attempt(req.level, req.strategy, False, [exc.kind], 0, time.perf_counter() - t0,
                                        {exc.kind: str(exc)}, retries=exc.retries, request=asked))
                attempts[-1].client_side = exc.client_side
                attempts[-1].raw = exc.raw
                continue
            except Exception as exc:      # noqa: BLE001 - whatever the upstream call raised: a failed level
                why = route.scrub(f"{route.describe()}: the call failed ({type(exc).__name__})")
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
                f"serve-L{req.level}", summary, "serve", input_text=text, previous=previous, contract=contract,
                context_before=request.context_tokens, context_source=request.context_source), s)
            attempts.append(Attempt(req.level, req.strategy, verdict.valid, verdict.failures, verdict.output_tokens,
                                    time.perf_counter() - t0, verdict.reasons, warnings + verdict.warnings, retries,
                                    request=asked))
            attempts[-1].text = reply
            attempts[-1].raw = answer.raw
            if verdict.valid:
                return Outcome(summary, req.level, attempts, input_tokens, verdict.output_tokens, skip, raw=answer.raw)
        if self.observe:          # returned unchanged (or the upstream's error): recorded as what it was
            a = attempts[0]
            return Outcome(getattr(a, "text", None), 1, attempts, input_tokens, a.output_tokens, observed=a.failures,
                           raw=getattr(a, "raw", None))
        t0 = time.perf_counter()

        def l3_record(content: str) -> SummaryRecord:
            return SummaryRecord("serve-L3", content, "serve", input_text=text, contract=contract,
                                 context_before=request.context_tokens, context_source=request.context_source)
        if request.fallback and request.fallback.strip():
            # the answer the prompt itself accepts (Gemini CLI's verify call: "repeat the exact
            # same <state_snapshot>"), when it passes: the guard's own L3 of the call before
            # survives the call that re-asks for it
            verdict = await self.heavy(check_record, l3_record(strip_reasoning(request.fallback).text.strip()), s,
                                       None, True)
            if verdict.valid:
                attempts.append(Attempt(3, "deterministic", True, [], verdict.output_tokens, time.perf_counter() - t0,
                                        warnings=verdict.warnings + [
                                            "L3 repeats the answer this request quotes, as its prompt asks when there "
                                            "is nothing to improve (it passes the check)"]))
                return Outcome(request.fallback.strip(), 3, attempts, input_tokens, verdict.output_tokens, skip)
        budget = max(l2_target(input_tokens, s), room)
        if contract.structured:
            l3 = await self.heavy(structured_l3, request.history, previous, contract, s, budget)
        else:
            l3 = (await self.heavy(truncate_l3, request.plain, s, budget)).text
        verdict = await self.heavy(check_record, l3_record(l3), s, None, True)
        notes = ["L3 keeps the conversation's own words and language"]
        if contract.structured:
            notes.append("L3 in the structure asked for: "
                         + ", ".join(list(contract.sections or contract.outline)
                                     + ([f"<{contract.wrapper}>"] if contract.wrapper else [])
                                     + ([f"'{contract.footer} ...'"] if contract.footer else [])))
        if "format" in verdict.failures:          # never expected: said, so a test and the operator see it
            notes.append(f"format: {verdict.reasons['format']}")
        attempts.append(Attempt(3, "deterministic", True, [], verdict.output_tokens, time.perf_counter() - t0,
                                warnings=verdict.warnings + notes))
        return Outcome(l3, 3, attempts, input_tokens, verdict.output_tokens, skip)

    async def _upstream_call(self, route, body: dict, remaining: float) -> Reply:
        """The route's call within `remaining` seconds; when the server begins shutting down,
        given up serve_shutdown_seconds - 5 s later (the request is then answered at L3)."""
        call = asyncio.ensure_future(asyncio.wait_for(route.call(body), remaining))
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

    async def _done(self, out: Outcome, route) -> Outcome:
        result = ChainResult(out.summary or "", out.level, out.input_tokens, out.output_tokens, out.attempts,
                             summarizer=route.describe(), provider=route.provider, model=route.model or "",
                             breaker_open=out.breaker_open)

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


async def _cancel_task(task) -> None:
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
