"""LangChain (`pip install 'compaction-resilience-guard[langchain]'`): the guard as the
`summarizer` of LangChain 1.5's SummarizationMiddleware.

    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from compaction_guard.integrations.langchain import GuardedSummarizer

    agent = create_agent(model, middleware=[SummarizationMiddleware(
        model, trigger=("tokens", 4000), summarizer=GuardedSummarizer(model))])

LangChain 1.5 (langchain/agents/middleware/summarization.py) coerces `summarizer` to a
Runnable and calls `invoke` (or `ainvoke`, in an async agent) with the trimmed messages it is
about to replace; only the returned text comes from the summarizer: the middleware keeps its
trigger, its choice of messages and its "Here is a summary of the conversation to date:"
message. GuardedSummarizer asks `model` with the middleware's own prompt (`summary_prompt`, its
DEFAULT_SUMMARY_PROMPT unless given) exactly as the middleware would, checks the answer against
those messages and the sections the prompt asks for, redoes a failed one with the guard's
aggressive prompt, then writes one by extraction in those sections: a raised error, an error
text, a refusal, a loop or a preamble never becomes the history, and the agent's turn goes on.

Each run is a chain run in LangChain's callbacks (`compaction-guard`), with a custom event
`compaction_guard` carrying the level and what failed (ids and figures, no text), and is
recorded in the frameworks' state (`compaction-guard --agent frameworks --report`).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, get_buffer_string
from langchain_core.runnables import Runnable, RunnableConfig

from ._common import Guarded, last_resort, outcome, said

EVENT = "compaction_guard"
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system", "function": "tool"}


def turns(messages: Sequence[BaseMessage]) -> list:
    """(role, text) of LangChain messages, a tool call written as `name(args)`."""
    out = []
    for m in messages:
        text = m.text if isinstance(getattr(type(m), "text", None), property) else str(m.content)
        calls = getattr(m, "tool_calls", None) or []
        if calls:
            text = "\n".join([text] * bool(text.strip()) + [f"called {c.get('name')}({c.get('args')})" for c in calls])
        out.append((_ROLES.get(m.type, "user"), text))
    return out


def _text(response) -> str:
    text = getattr(response, "text", response)
    if isinstance(text, str):           # langchain-core 1.x: a property (a str)
        return str(text)
    return str(text() if callable(text) else text)


class GuardedSummarizer(Guarded, Runnable[Sequence[BaseMessage], str]):
    """The `summarizer` of SummarizationMiddleware: the model's summary, checked, redone or built.

    model:          the chat model that writes summaries (a BaseChatModel, or any Runnable taking a
                    prompt and returning a message)
    summary_prompt: the middleware's `summary_prompt`, when it is not LangChain's default
    settings:       compaction_guard.settings.Settings (default: the operator's, config.yaml in the
                    frameworks' state directory)
    record:         record each run in the frameworks' state (default True); `home` names that directory"""

    framework = "langchain"
    name = "compaction-guard"

    def __init__(self, model, *, summary_prompt: Optional[str] = None, settings=None, record: bool = True,
                 home=None):
        Guarded.__init__(self, settings, record, home)
        if summary_prompt is None:
            from langchain.agents.middleware.summarization import DEFAULT_SUMMARY_PROMPT
            summary_prompt = DEFAULT_SUMMARY_PROMPT
        self.model = model
        self.summary_prompt = summary_prompt

    # ------------------------------------------------------------------ what each level sends
    def _level(self, messages, ask) -> tuple:
        """(the model's input, keywords) for one level: at L1 the middleware's own prompt, at L2
        the guard's aggressive prompt with the sections the middleware's prompt asks for."""
        if ask.level == 1:
            return self.summary_prompt.format(messages=get_buffer_string(messages, format="xml")).rstrip(), {}
        fields = getattr(type(self.model), "model_fields", {}) or {}
        kw = {k: v for k, v in (("max_tokens", ask.max_tokens), ("temperature", ask.temperature),
                                *ask.penalties.items()) if k in fields and v is not None}
        return [SystemMessage(f"{ask.system}\n\n{ask.instruction}"), HumanMessage(ask.prompt)], kw

    @staticmethod
    def _answer(response) -> str:
        from ..summarizers import SummarizerError
        meta = getattr(response, "response_metadata", None) or {}
        stop = meta.get("finish_reason") or meta.get("stop_reason")
        if stop in ("length", "max_tokens"):
            raise SummarizerError("the model stopped at max_tokens", kind="cut_off")
        if stop == "content_filter":
            raise SummarizerError("the model's content filter stopped the answer", kind="refusal")
        return _text(response).strip()

    # ------------------------------------------------------------------ Runnable
    def invoke(self, input: Sequence[BaseMessage], config: Optional[RunnableConfig] = None, **kwargs: Any) -> str:
        return self._call_with_config(self._run, list(input), config, run_type="chain")

    async def ainvoke(self, input: Sequence[BaseMessage], config: Optional[RunnableConfig] = None,
                      **kwargs: Any) -> str:
        return await self._acall_with_config(self._arun, list(input), config, run_type="chain")

    def _run(self, messages, run_manager, config) -> str:
        from langchain_core.callbacks.manager import dispatch_custom_event
        from .. import api
        history = turns(messages)
        try:
            def summarize(ask):
                prompt, kw = self._level(messages, ask)
                return self._answer(self.model.invoke(prompt, config=config, **kw))
            done = api.compact(history, summarize, prompt=self.summary_prompt, name=self._model_name(),
                               model=self._model_id(), **self.options())
        except Exception as exc:       # noqa: BLE001 - the guard's own bug never ends the agent's turn
            return last_resort(api.render_history(history), exc)
        said(self.framework, done)
        dispatch_custom_event(EVENT, outcome(self.framework, done), config=config)
        return done.summary

    async def _arun(self, messages, run_manager, config) -> str:
        from langchain_core.callbacks.manager import adispatch_custom_event
        from .. import api
        history = turns(messages)
        try:
            async def summarize(ask):
                prompt, kw = self._level(messages, ask)
                return self._answer(await self.model.ainvoke(prompt, config=config, **kw))
            done = await api.acompact(history, summarize, prompt=self.summary_prompt, name=self._model_name(),
                                      model=self._model_id(), **self.options())
        except Exception as exc:       # noqa: BLE001 - the guard's own bug never ends the agent's turn
            return last_resort(api.render_history(history), exc)
        said(self.framework, done)
        await adispatch_custom_event(EVENT, outcome(self.framework, done), config=config)
        return done.summary

    def _model_name(self) -> str:
        return f"langchain:{type(self.model).__name__}"

    def _model_id(self) -> str:
        return str(getattr(self.model, "model_name", None) or getattr(self.model, "model", None) or "")
