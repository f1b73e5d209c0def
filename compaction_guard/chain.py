"""The three-level compaction chain: normal -> aggressive -> deterministic.

Escalation is a loop over level settings and one predicate (after whisper's
decode_with_fallback): a level's output goes through the same detectors as a stored
summary, and any failure (a detector's, or the summarizer's own: HTTP error after
retries, timeout, refusal, reasoning only, cut off at max_tokens) moves on to the
next level at once. L3 is deterministic truncation: it always returns, it never
grows the input, and it runs even when the chain's deadline has passed.

    result = run_chain(text)                       # the embedded extractive summarizer
    result = run_chain(text, summarizer=my_llm)    # anything with .summarize(text, request)
    result.summary, result.level_used, result.attempts
    result = await arun_chain(text, summarizer=s)  # in an event loop: awaits s.asummarize(text, request)
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Optional

from .check import check_record
from .contract import Contract, minimum_tokens
from .records import SummaryRecord
from .settings import DEFAULT, Settings, effective_l2_temperature
from .structured import build as structured_l3
from .summarizers import ExtractiveSummarizer, SummarizerError, SummaryReply, SummaryRequest, l2_target, truncate_l3
from .tokens import estimate_tokens

LEVEL_KEYS = {1: "l1_normal", 2: "l2_aggressive", 3: "l3_deterministic"}


def level_requests(input_tokens: int, settings: Settings, deadline: Optional[float] = None) -> list:
    """The LLM levels' settings. L2: a smaller target and max_tokens, a lower
    temperature (at most 0.2), reasoning reduced."""
    l1_target = max(64, min(settings.l1_max_tokens, int(input_tokens * settings.l1_target_ratio)))
    l2 = l2_target(input_tokens, settings)
    l1_max = l1_target + max(64, l1_target // 2)
    l2_max = min(l2 + max(32, l2 // 2), l1_max - 1)
    l2_temp, _ = effective_l2_temperature(settings)
    return [
        SummaryRequest(level=1, strategy="normal", target_tokens=l1_target, max_tokens=l1_max,
                       temperature=settings.l1_temperature, deadline=deadline),
        SummaryRequest(level=2, strategy="aggressive", target_tokens=l2, max_tokens=l2_max,
                       temperature=l2_temp, reduce_reasoning=True, deadline=deadline),
    ]


def l2_adjustment(failures, settings: Settings) -> dict:
    """What L2 changes after L1 failed this way (one decision, shared by the chain and
    the proxy; Whisper raises its temperature on a repetition failure):
    - a loop: repetition penalties, and L1's temperature kept (colder feeds loops);
    - garbled text: the coldest temperature L2 allows;
    - cut off or too large: a smaller target (l2_cut_target_scale).
    Returns {"why", "penalties", "temperature", "target_scale"} (why None: no change)."""
    f = set(failures or ())
    l2_temp, _ = effective_l2_temperature(settings)
    if "repetition" in f:
        return {"why": "L1 looped: repetition penalties, L1's temperature kept", "penalties": True,
                "temperature": settings.l1_temperature, "target_scale": 1.0}
    if "garbled" in f:
        return {"why": "L1 was garbled: temperature lowered", "penalties": False,
                "temperature": min(l2_temp, 0.05), "target_scale": 1.0}
    if f & {"cut_off", "inflation"}:
        return {"why": f"L1 was {'cut off' if 'cut_off' in f else 'too large'}: target lowered",
                "penalties": False, "temperature": l2_temp, "target_scale": settings.l2_cut_target_scale}
    return {"why": None, "penalties": False, "temperature": l2_temp, "target_scale": 1.0}


def adjust_l2(request: SummaryRequest, failures, settings: Settings) -> tuple:
    """(L2 request after L1's failures, why or None)."""
    adj = l2_adjustment(failures, settings)
    if adj["why"] is None:
        return request, None
    target = max(16, int(request.target_tokens * adj["target_scale"]))
    max_tokens = max(target + 16, int(request.max_tokens * adj["target_scale"]))
    return dataclasses.replace(request, temperature=adj["temperature"], penalties=adj["penalties"],
                               target_tokens=target, max_tokens=max_tokens), adj["why"]


@dataclass
class Attempt:
    level: int
    strategy: str
    valid: bool
    failures: list
    output_tokens: int
    seconds: float
    reasons: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    retries: int = 0
    skipped: bool = False
    request: dict = field(default_factory=dict)     # what the level asked for: temperature, max_tokens, target

    def to_dict(self) -> dict:
        d = {"level": self.level, "strategy": self.strategy, "valid": self.valid, "failures": self.failures,
             "output_tokens": self.output_tokens, "seconds": round(self.seconds, 4), "reasons": self.reasons,
             "warnings": self.warnings, "retries": self.retries}
        if self.request:
            d["request"] = self.request
        if self.skipped:
            d["skipped"] = True
        return d


@dataclass
class ChainResult:
    summary: str
    level_used: int
    input_tokens: int
    output_tokens: int
    attempts: list
    summarizer: str = "extractive"
    provider: str = "extractive"
    model: str = ""
    breaker_open: bool = False
    notes: list = field(default_factory=list)

    @property
    def level_key(self) -> str:
        return LEVEL_KEYS[self.level_used]

    def to_dict(self) -> dict:
        return {"level_used": self.level_used, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "result": self.summary, "provider": self.provider, "model": self.model, "summarizer": self.summarizer,
                "breaker_open": self.breaker_open, "notes": self.notes,
                "attempts": [a.to_dict() for a in self.attempts]}


def _describe(summarizer) -> str:
    return summarizer.describe() if hasattr(summarizer, "describe") else getattr(summarizer, "name", type(summarizer).__name__)


class _Raised:
    """What a summarizer raised, handed back to the chain's steps (an exception is not a reply)."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException):
        self.exc = exc


def chain_steps(text: str, summarizer=None, settings: Settings = DEFAULT, record_id: str = "chain",
                previous: Optional[str] = None, skip_llm: bool = False, deadline_seconds: Optional[float] = None,
                contract: Optional[Contract] = None, history: Optional[str] = None,
                l3_contract: Optional[Contract] = None):
    """The chain without its calls: a generator that yields each LLM level's SummaryRequest,
    is sent what the summarizer answered (a str or SummaryReply) or `_Raised(exception)`, and
    returns the ChainResult. `run_chain` and `arun_chain` drive it; `summarizer` is only
    described here (its name, model, penalties, key scrubbing), never called.

    contract: what the request demands of the answer (contract.Contract): each level's target
              is raised to what its structure needs, each answer is checked against it (`format`),
              a structured request asks it of the summarizer (SummaryRequest.contract), and L3 is
              built in that structure from `history` (structured.build)
    history:  the conversation alone, for a structured L3 (default: `text`)
    l3_contract: the structure L3 is written in when the request asked for none (the latest
              request, the identifiers, ... by extraction: structured.build), unless that would be
              no smaller than the input (a short history: then the input itself)"""
    input_tokens = estimate_tokens(text)
    budget = settings.chain_deadline_seconds if deadline_seconds is None else deadline_seconds
    deadline = time.monotonic() + budget
    attempts = []
    meta = {"summarizer": _describe(summarizer), "provider": getattr(summarizer, "name", "custom"),
            "model": getattr(summarizer, "model", "") or ""}
    contract = contract if contract is not None and contract.structured else None
    room = minimum_tokens(contract) if contract is not None else 0
    for request in level_requests(input_tokens, settings, deadline):
        why = None
        if request.level == 2 and attempts:
            request, why = adjust_l2(request, attempts[-1].failures, settings)
        if room and request.target_tokens < room:       # every level can meet the structure asked for
            request = dataclasses.replace(request, target_tokens=room, max_tokens=max(request.max_tokens,
                                                                                      room + room // 2))
        if contract is not None:
            request = dataclasses.replace(request, contract=contract)
        asked = {"temperature": request.temperature, "max_tokens": request.max_tokens,
                 "target_tokens": request.target_tokens}
        if why:
            asked["adjustment"] = why
            if request.penalties:
                asked["penalties"] = getattr(summarizer, "penalty_params", lambda s: {})(settings) or \
                    "none: this API has no repetition penalty"

        def add(attempt, asked=asked):
            attempt.request = asked
            attempts.append(attempt)
        if skip_llm:
            add(Attempt(request.level, request.strategy, False, [], 0, 0.0, skipped=True,
                        warnings=["skipped: circuit breaker open"]))
            continue
        t0 = time.perf_counter()
        if time.monotonic() >= deadline:
            add(Attempt(request.level, request.strategy, False, ["timeout"], 0, 0.0,
                        reasons={"timeout": f"the chain's {budget:g} s deadline passed before this level"}))
            continue
        reply = yield request
        if isinstance(reply, _Raised):
            exc = reply.exc
            if isinstance(exc, SummarizerError):
                add(Attempt(request.level, request.strategy, False, [exc.kind], 0, time.perf_counter() - t0,
                            reasons={exc.kind: str(exc)}, warnings=list(getattr(exc, "warnings", [])),
                            retries=exc.retries))
            else:   # a summarizer's bug or a malformed answer: escalate, never crash the chain
                scrub = getattr(summarizer, "_scrub", str)      # an LLM summarizer's key never reaches a reason
                add(Attempt(request.level, request.strategy, False, ["error"], 0, time.perf_counter() - t0,
                            reasons={"error": f"summarizer failed ({type(exc).__name__}: {scrub(str(exc))[:200]})"}))
            continue
        if not isinstance(reply, SummaryReply):
            reply = SummaryReply("" if reply is None else str(reply))
        verdict = check_record(SummaryRecord(record_id, reply.text, "chain", input_text=text, previous=previous,
                                             contract=contract), settings)
        add(Attempt(request.level, request.strategy, verdict.valid, verdict.failures, verdict.output_tokens,
                    time.perf_counter() - t0, verdict.reasons, reply.warnings + verdict.warnings, reply.retries))
        if verdict.valid:
            return ChainResult(reply.text, request.level, input_tokens, verdict.output_tokens, attempts, **meta)
    t0 = time.perf_counter()
    shape = contract if contract is not None else (l3_contract if l3_contract is not None
                                                   and l3_contract.structured else None)
    cut = None
    if shape is not None:
        cut = structured_l3(text if history is None else history, previous, shape, settings,
                            max(l2_target(input_tokens, settings), minimum_tokens(shape)))
        if contract is None and estimate_tokens(cut) >= input_tokens:
            # a history shorter than its extraction: kept whole (never larger than the input)
            cut, shape = truncate_l3(text, settings, budget=input_tokens).text, None
    if cut is None:
        cut = truncate_l3(text, settings).text
    verdict = check_record(SummaryRecord(record_id, cut, "chain", input_text=text, contract=contract), settings,
                           allow_own_l3=True)
    # L3 is accepted whatever the detectors say: what they still see came with the input.
    notes = [f"{k}: {r} (inherited from the input)" for k, r in verdict.reasons.items()]
    notes.append("L3 keeps the input's own words: its language and identifiers, by construction")
    if shape is not None:
        notes.append(f"L3 in the structure {'asked for' if contract is not None else 'of the guard'}: " + ", ".join(
            list(shape.sections) + ([f"<{shape.wrapper}>"] if shape.wrapper else [])
            + ([f"'{shape.footer} ...'"] if shape.footer else [])))
    attempts.append(Attempt(3, "deterministic", True, [], verdict.output_tokens, time.perf_counter() - t0,
                            warnings=verdict.warnings + notes))
    return ChainResult(cut, 3, input_tokens, verdict.output_tokens, attempts, breaker_open=skip_llm, **meta)


def run_chain(text: str, summarizer=None, settings: Settings = DEFAULT, record_id: str = "chain",
              previous: Optional[str] = None, skip_llm: bool = False,
              deadline_seconds: Optional[float] = None, contract: Optional[Contract] = None,
              history: Optional[str] = None, l3_contract: Optional[Contract] = None) -> ChainResult:
    """Summarize `text`, escalating L1 -> L2 -> L3 until a summary passes every detector.

    previous:  the summary this one replaces (so a stale answer is caught)
    skip_llm:  go straight to L3 (the circuit breaker is open)
    deadline_seconds: the whole chain's budget (default settings.chain_deadline_seconds)
    contract, history, l3_contract: what the request demands of the answer, L3's structure (see chain_steps)
    """
    summarizer = summarizer or ExtractiveSummarizer()
    steps = chain_steps(text, summarizer, settings, record_id, previous, skip_llm, deadline_seconds, contract,
                        history, l3_contract)
    try:
        request = next(steps)
        while True:
            try:
                reply = summarizer.summarize(text, request)
            except Exception as exc:       # noqa: BLE001 - judged by the chain: the next level
                reply = _Raised(exc)
            request = steps.send(reply)
    except StopIteration as done:
        return done.value


async def arun_chain(text: str, summarizer=None, settings: Settings = DEFAULT, record_id: str = "chain",
                     previous: Optional[str] = None, skip_llm: bool = False,
                     deadline_seconds: Optional[float] = None, contract: Optional[Contract] = None,
                     history: Optional[str] = None, l3_contract: Optional[Contract] = None) -> ChainResult:
    """`run_chain` for an event loop: each level awaits `summarizer.asummarize(text, request)`
    (a summarizer without one runs `summarize` in a thread), within what is left of the
    chain's deadline (a level still running then is cancelled and fails as `timeout`)."""
    import asyncio
    summarizer = summarizer or ExtractiveSummarizer()
    steps = chain_steps(text, summarizer, settings, record_id, previous, skip_llm, deadline_seconds, contract,
                        history, l3_contract)
    call = getattr(summarizer, "asummarize", None)
    try:
        request = next(steps)
        while True:
            remaining = (request.deadline - time.monotonic()) if request.deadline is not None else None
            try:
                pending = call(text, request) if call is not None else \
                    asyncio.to_thread(summarizer.summarize, text, request)
                reply = await asyncio.wait_for(pending, remaining)
            except asyncio.TimeoutError:
                reply = _Raised(SummarizerError("the chain's deadline passed during this level", kind="timeout"))
            except Exception as exc:       # noqa: BLE001 - judged by the chain: the next level
                reply = _Raised(exc)
            request = steps.send(reply)
    except StopIteration as done:
        return done.value
