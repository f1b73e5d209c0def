"""The guard's stable Python API: check one summary, compact a history through the chain.

    from compaction_guard.api import check_summary, compact

    verdict = check_summary("Let me read the notes file first.", history)
    verdict.valid, verdict.failures, verdict.reasons      # False, ("empty",), {"empty": "..."}

    done = compact(history, summarize)                    # summarize(ask) -> str, any model
    done.summary, done.level                              # a summary that passed, and its level (1, 2 or 3)

`history` is the conversation the summary replaces: a string, or turns, each a
`(role, text)` pair or a mapping with `role` and `content` (roles: user/human,
assistant/ai/model, tool, system). `summarize` is any callable taking an `Ask` (what
one level asks: the guard's prompt, the target size, the temperature) and returning the
summary text; it may raise, return an error text, a refusal, a loop or a preamble: the
level fails, the next one runs, and L3 (built from the history's own lines, no model)
always answers. `acompact` is the same for an event loop (`summarize` may be async).
`prompt`, when given, is the summarization prompt the framework itself sends: the
sections it asks for are then demanded of every level, and L3 is written in them.

`compact(..., record="langchain")` records the run (its level, what failed) in the
guard's state of the Python frameworks (`compaction-guard --agent frameworks --status`,
`--report`); a state that cannot be written never stops the compaction (`notes` say so).

Nothing here imports a framework; the integrations (compaction_guard.integrations.*) build
on it. Settings are compaction_guard.settings.Settings (every threshold).
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, Mapping, Optional, Sequence, Tuple, Union

from .errors import GuardError

if TYPE_CHECKING:               # imported when first used: importing an integration stays cheap
    from .chain import ChainResult
    from .settings import Settings
    from .summarizers import SummaryReply, SummaryRequest

__all__ = ["Ask", "Attempt", "Compaction", "Verdict", "acompact", "check_summary", "compact", "render_history"]

log = logging.getLogger("compaction_guard")

Turn = Union[Tuple[str, str], Mapping[str, Any]]
History = Union[str, Sequence[Turn]]
Summarize = Callable[["Ask"], Union[str, "SummaryReply"]]
AsyncSummarize = Callable[["Ask"], Union[str, "SummaryReply", Awaitable[Union[str, "SummaryReply"]]]]

# the labels a rendered history carries (OpenClaw's, which contract.turns and structured L3 read)
# L3's structure when the framework's prompt asks for none: what the agent needs to go on
L3_SECTIONS = ("## Latest request", "## Identifiers", "## Decisions", "## Open tasks", "## Conversation so far")
_ROLES = {"user": "User", "human": "User", "assistant": "Assistant", "ai": "Assistant", "model": "Assistant",
          "tool": "Tool result", "function": "Tool result", "system": "System", "developer": "System"}


def render_history(history: History) -> str:
    """The history as the guard reads it: `[User]: ...`, `[Assistant]: ...`, `[Tool result]: ...`
    lines, one per turn (a string is taken as it is)."""
    if isinstance(history, str):
        return history
    lines = []
    for turn in history:
        if isinstance(turn, Mapping):
            role, text = turn.get("role", "user"), turn.get("content", "")
        else:
            role, text = turn
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        label = _ROLES.get(str(role).lower(), str(role).strip().title() or "User")
        if text.strip():
            lines.append(f"[{label}]: {text.strip()}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Verdict:
    """The check of one summary against the history it replaces."""

    valid: bool
    failures: Tuple[str, ...]           # failure kinds (findings.FAILURE_KINDS, or the summarizer's: error, ...)
    reasons: Mapping[str, str]          # kind -> one line saying why
    warnings: Tuple[str, ...] = ()      # "kind: reason" of what is suspicious (the summary stays valid)
    output_tokens: int = 0
    input_tokens: Optional[int] = None

    def to_dict(self) -> dict:
        return {"valid": self.valid, "failures": list(self.failures), "reasons": dict(self.reasons),
                "warnings": list(self.warnings), "output_tokens": self.output_tokens,
                "input_tokens": self.input_tokens}


@dataclass(frozen=True)
class Ask:
    """What one LLM level of the chain asks of a summarizer.

    level 1 is the normal request, level 2 the aggressive one (after level 1 failed): a
    smaller target, a lower temperature. `system` and `prompt` are the guard's own prompt for
    the level (the history fenced as data); a framework that has its own prompt sends it at
    level 1 and adds `instruction` to it at level 2."""

    level: int
    history: str                        # the conversation, rendered (render_history)
    system: str                         # the guard's system prompt for this level
    prompt: str                         # the guard's user message: the history, fenced, and the target
    target_tokens: int
    max_tokens: int
    temperature: Optional[float] = None
    sections: Tuple[str, ...] = ()      # the headings the framework's prompt asks for, in order
    deadline: Optional[float] = None    # time.monotonic() by which the whole chain must be done
    # after a loop at level 1: {"frequency_penalty": ..., "presence_penalty": ...} (settings), else empty
    penalties: Mapping[str, float] = field(default_factory=dict)

    @property
    def aggressive(self) -> bool:
        return self.level >= 2

    @property
    def instruction(self) -> str:
        """The level's demands in one paragraph, to add to a framework's own prompt (level 2)."""
        shape = f" Use exactly these section headings, in this order: {'; '.join(self.sections)}." \
            if self.sections else ""
        return (f"Be brief: at most {self.target_tokens} tokens. Keep only durable facts: decisions, identifiers "
                f"(paths, ids, versions, numbers), open tasks and the latest request. Do not repeat yourself. "
                f"Write in the conversation's language. Output only the summary, no preamble.{shape}")


@dataclass(frozen=True)
class Attempt:
    """One level's outcome."""

    level: int
    valid: bool
    failures: Tuple[str, ...]
    reasons: Mapping[str, str]
    seconds: float
    skipped: bool = False


@dataclass(frozen=True)
class Compaction:
    """What `compact` produced: a summary that passed (or L3's), the level that wrote it, and
    each level's outcome. `chain` is the whole record (`to_dict()`: what --compact prints as JSON)."""

    summary: str
    level: int                          # 1, 2 or 3
    attempts: Tuple[Attempt, ...]
    input_tokens: int
    output_tokens: int
    notes: Tuple[str, ...] = ()
    chain: Optional["ChainResult"] = field(default=None, repr=False, compare=False)

    @property
    def failures(self) -> Tuple[str, ...]:
        """What the model's answers failed with, in order (empty when level 1 passed)."""
        return tuple(dict.fromkeys(k for a in self.attempts for k in a.failures))

    def to_dict(self) -> dict:
        d = self.chain.to_dict() if self.chain is not None else {"level_used": self.level, "result": self.summary}
        return dict(d, notes=list(self.notes))


def _contract(history_text: str, prompt: Optional[str]):
    if not prompt:
        return None
    from .contract import instructions_of, of_request
    found = of_request(history_text, instructions_of(prompt.replace(history_text, " ")))
    return found if found.structured else None


def check_summary(summary: str, history: History, *, previous: Optional[str] = None, prompt: Optional[str] = None,
                  settings: Optional["Settings"] = None) -> Verdict:
    """Check `summary` against the `history` it replaces (and the `previous` summary, so a
    summary stored again is `stale`); with `prompt`, also against the sections it asks for."""
    from .check import check_record
    from .records import SummaryRecord
    settings = _settings(settings)
    text = render_history(history)
    r = check_record(SummaryRecord("summary", summary if isinstance(summary, str) else str(summary or ""), "api",
                                   input_text=text, previous=previous, contract=_contract(text, prompt)), settings)
    return Verdict(r.valid, tuple(r.failures), dict(r.reasons), tuple(r.warnings), r.output_tokens, r.input_tokens)


class _Asking:
    """A callable `summarize(ask)` as the chain's Summarizer (summarize / asummarize)."""

    def __init__(self, fn, history: str, name: str, model: str, settings):
        self.fn = fn
        self.settings = settings
        self.history = history
        self.name = name
        self.model = model

    def ask(self, request: "SummaryRequest") -> Ask:
        from .prompts import system_prompt, user_message
        sections = tuple(getattr(request.contract, "sections", ()) or ())
        s = self.settings
        penalties = {"frequency_penalty": s.l2_frequency_penalty, "presence_penalty": s.l2_presence_penalty} \
            if request.penalties else {}
        return Ask(request.level, self.history, system_prompt(request.strategy),
                   user_message(self.history, request.target_tokens), request.target_tokens, request.max_tokens,
                   request.temperature, sections, request.deadline, penalties)

    def penalty_params(self, settings) -> dict:
        return {"frequency_penalty": settings.l2_frequency_penalty, "presence_penalty": settings.l2_presence_penalty}

    def summarize(self, text: str, request: "SummaryRequest"):
        return self.fn(self.ask(request))

    async def asummarize(self, text: str, request: "SummaryRequest"):
        ask = self.ask(request)
        if inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(getattr(self.fn, "__call__", None)):
            return await self.fn(ask)
        out = await asyncio.to_thread(self.fn, ask)      # a blocking callable does not hold the loop
        return (await out) if inspect.isawaitable(out) else out


def _summarizer(summarize, history: str, name: Optional[str], model: Optional[str], settings):
    if summarize is None or hasattr(summarize, "summarize"):
        return summarize                  # the chain's own (None: extractive) or a providers.build one
    if not callable(summarize):
        raise TypeError("summarize must be a callable taking an Ask, or None")
    return _Asking(summarize, history, name or getattr(summarize, "__name__", "callable"), model or "", settings)


def _public(result: "ChainResult", notes: list) -> Compaction:
    attempts = tuple(Attempt(a.level, a.valid, tuple(a.failures), dict(a.reasons), a.seconds, a.skipped)
                     for a in result.attempts)
    result.notes = list(result.notes) + notes
    return Compaction(result.summary, result.level_used, attempts, result.input_tokens, result.output_tokens,
                      tuple(result.notes), result)


class _State:
    """The run's record in the guard's state: the breaker read before, level and failures after."""

    def __init__(self, record: Optional[str], home, settings: "Settings", on_state_error: str):
        self.via = record
        self.settings = settings
        self.strict = on_state_error == "raise"
        self.notes = []
        self.store = None
        if record is None:
            return
        from . import agents
        from .state import StateStore, state_path
        if getattr(home, "agent", None) is not None:
            layout = home                       # an agent's layout (the CLI's)
        else:                                   # the frameworks' directory, as resolved or as named
            layout = agents.get("frameworks").resolve(home=None if home is None else str(home))
        self.store = StateStore(state_path(layout), settings, warn=self._warn)

    def _warn(self, line: str) -> None:
        log.warning("compaction-guard: %s", line)

    def _failed(self, exc: Exception) -> None:
        if self.strict:
            if isinstance(exc, GuardError):
                raise exc
            raise GuardError(f"{self.store.path}: the guard's state cannot be used ({exc})") from None
        self.notes.append(f"the guard's state was not written: {exc}")
        self._warn(str(exc))

    def breaker_open(self) -> bool:
        if self.store is None:
            return False
        from . import breaker
        try:
            return breaker.open_until(self.store.read()) is not None
        except (GuardError, OSError) as exc:
            self._failed(exc)
            return False

    def record(self, result: "ChainResult") -> None:
        if self.store is None:
            return
        from . import breaker
        from .state import record_chain
        try:
            with self.store.update() as state:
                record_chain(state, result, via=self.via)
                breaker.record(state, result.level_used, result.breaker_open, self.settings)
        except (GuardError, OSError) as exc:
            self._failed(exc)


def _settings(settings):
    if settings is None:
        from .settings import DEFAULT
        return DEFAULT
    return settings


def _prepare(history, summarize, previous, prompt, settings, record, home, on_state_error, name, model):
    from .contract import Contract
    settings = _settings(settings)
    text = render_history(history)
    contract = _contract(text, prompt)
    state = _State(record, home, settings, on_state_error)
    return dict(text=text, summarizer=_summarizer(summarize, text, name, model, settings), settings=settings,
                previous=previous, skip_llm=state.breaker_open(), contract=contract, history=text,
                l3_contract=Contract(sections=L3_SECTIONS)), state


def compact(history: History, summarize: Optional[Summarize] = None, *, previous: Optional[str] = None,
            prompt: Optional[str] = None, settings: Optional["Settings"] = None, record: Optional[str] = None, home=None,
            on_state_error: Literal["note", "raise"] = "note", deadline_seconds: Optional[float] = None,
            name: Optional[str] = None, model: Optional[str] = None) -> Compaction:
    """Summarize `history` through the chain: `summarize(ask)` at level 1, again aggressively
    at level 2 when level 1 failed its check (or raised), else L3 by extraction. Always
    returns a summary (see the module doc).

    previous:  the summary this one replaces (an answer that is a copy of it is `stale`)
    prompt:    the framework's own summarization prompt (its sections are demanded, L3 written in them)
    record:    a label (e.g. "langchain"): record the run in the guard's state in `home` (a directory;
               default: the Python frameworks' state directory, `compaction-guard --agent frameworks`);
               the breaker then skips the model while it keeps failing
    on_state_error: "note" (default: the problem is logged and in `notes`) or "raise" (GuardError)
    name, model: how the summarizer is named in the state and reports"""
    kwargs, state = _prepare(history, summarize, previous, prompt, settings, record, home, on_state_error, name,
                             model)
    from .chain import run_chain
    result = run_chain(deadline_seconds=deadline_seconds, **kwargs)
    state.record(result)
    return _public(result, state.notes)


async def acompact(history: History, summarize: Optional[AsyncSummarize] = None, *, previous: Optional[str] = None,
                   prompt: Optional[str] = None, settings: Optional["Settings"] = None, record: Optional[str] = None,
                   home=None, on_state_error: Literal["note", "raise"] = "note",
                   deadline_seconds: Optional[float] = None, name: Optional[str] = None,
                   model: Optional[str] = None) -> Compaction:
    """`compact` in an event loop: `summarize` may be async; a level still running when the
    chain's deadline passes is cancelled (`timeout`). The state is read and written in a
    thread, so the loop is not held by the file lock."""
    kwargs, state = await asyncio.to_thread(_prepare, history, summarize, previous, prompt, settings, record, home,
                                            on_state_error, name, model)
    from .chain import arun_chain
    result = await arun_chain(deadline_seconds=deadline_seconds, **kwargs)
    await asyncio.to_thread(state.record, result)
    return _public(result, state.notes)

