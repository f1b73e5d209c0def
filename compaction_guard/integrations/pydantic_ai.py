"""Pydantic AI (`pip install 'compaction-resilience-guard[pydantic-ai]'`): a history processor
that summarizes the older messages through the guard's chain.

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from compaction_guard.integrations.pydantic_ai import GuardedHistory

    agent = Agent(model, capabilities=[ProcessHistory(GuardedHistory(model, trigger_messages=40))])

Pydantic AI has no summarizer of its own: a history processor gets the messages before each model
request and returns the ones to send, and (2.x, capabilities.ProcessHistory) what it returns becomes
the run's history (`result.all_messages()`). GuardedHistory leaves a history of fewer than
`trigger_messages` messages alone; past that it summarizes all but the last `keep_messages` (never
splitting a tool call from its return) with `model` through pydantic_ai.direct.model_request: the
guard's prompt, checked against those messages, redone aggressively, else built by extraction
(the latest request, the identifiers, decisions, open tasks). The summary replaces them as the
first user prompt of the kept history (the system prompt parts kept ahead of it): a raised error,
an error text, a refusal, a loop or a preamble never becomes the history, and the run goes on.
Each run is recorded as `pydantic-ai` in the frameworks' state.
"""
from __future__ import annotations

import dataclasses

from ._common import Guarded, last_resort, outcome, said

PREFIX = "Summary of the conversation so far:\n\n"


def _turns(messages) -> list:
    """(role, text) of Pydantic AI messages: user prompts, the model's text and tool calls, tool returns."""
    out = []
    for m in messages:
        for part in getattr(m, "parts", ()):
            kind = getattr(part, "part_kind", "")
            if kind == "user-prompt":
                content = part.content
                out.append(("user", content if isinstance(content, str) else
                            " ".join(c for c in content if isinstance(c, str))))
            elif kind == "system-prompt":
                out.append(("system", part.content))
            elif kind == "text":
                out.append(("assistant", part.content))
            elif kind == "tool-call":
                out.append(("assistant", f"called {part.tool_name}({part.args})"))
            elif kind in ("tool-return", "retry-prompt"):
                out.append(("tool", str(part.content)))
    return out


def _starts_turn(message) -> bool:
    """A request holding a user prompt and no tool return: where a kept history may begin."""
    kinds = {getattr(p, "part_kind", "") for p in getattr(message, "parts", ())}
    return getattr(message, "kind", "") == "request" and "user-prompt" in kinds and \
        not kinds & {"tool-return", "retry-prompt"}


class GuardedHistory(Guarded):
    """A Pydantic AI history processor (async; for capabilities.ProcessHistory).

    model:            the model that writes summaries (a pydantic_ai Model, or a model name)
    trigger_messages: summarize once the history holds this many messages
    keep_messages:    the most recent messages kept as they are (at least this many)
    settings, record, home, on_compaction: as for every integration (compaction_guard.integrations)"""

    framework = "pydantic-ai"

    def __init__(self, model, *, trigger_messages: int = 40, keep_messages: int = 8, settings=None,
                 record: bool = True, home=None, on_compaction=None):
        Guarded.__init__(self, settings, record, home, on_compaction)
        if keep_messages < 1 or trigger_messages <= keep_messages:
            raise ValueError("keep_messages must be 1 or more and less than trigger_messages")
        self.model = model
        self.trigger_messages = trigger_messages
        self.keep_messages = keep_messages

    def cut(self, messages: list) -> int:
        """Where the kept part begins (0: nothing to summarize)."""
        if len(messages) < self.trigger_messages:
            return 0
        for i in range(len(messages) - self.keep_messages, 0, -1):
            if _starts_turn(messages[i]):
                return i
        return 0

    async def __call__(self, messages: list) -> list:
        at = self.cut(messages)
        if not at:
            return messages
        from pydantic_ai.direct import model_request
        from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
        from .. import api
        from ..summarizers import SummarizerError
        old, kept = messages[:at], messages[at:]
        history = [t for t in _turns(old) if t[0] != "system"]

        async def summarize(ask):
            request = ModelRequest(parts=[SystemPromptPart(ask.system), UserPromptPart(ask.prompt)])
            options = {"max_tokens": ask.max_tokens, **ask.penalties}
            if ask.temperature is not None:
                options["temperature"] = ask.temperature
            response = await model_request(self.model, [request], model_settings=options)
            if response.finish_reason == "length":
                raise SummarizerError("the model stopped at max_tokens", kind="cut_off")
            if response.finish_reason == "content_filter":
                raise SummarizerError("the model's content filter stopped the answer", kind="refusal")
            return (response.text or "").strip()
        try:
            done = await api.acompact(history, summarize, name=f"pydantic-ai:{type(self.model).__name__}",
                                      model=str(getattr(self.model, "model_name", self.model)), **self.options())
            summary = done.summary
            said(self.framework, done)
            self.tell(outcome(self.framework, done))
        except Exception as exc:        # noqa: BLE001 - the guard's own bug never ends the run
            summary = last_resort(api.render_history(history), exc)
        system = [p for m in old for p in getattr(m, "parts", ()) if getattr(p, "part_kind", "") == "system-prompt"]
        first = kept[0]
        return [dataclasses.replace(first, parts=[*system, UserPromptPart(PREFIX + summary), *first.parts]),
                *kept[1:]]
