"""Google ADK (`pip install 'compaction-resilience-guard[google-adk]'`): the summarizer of ADK 2.x's
event compaction.

    from google.adk.apps import App
    from google.adk.apps.app import EventsCompactionConfig
    from compaction_guard.integrations.google_adk import GuardedEventsSummarizer

    app = App(name="ops", root_agent=agent, events_compaction_config=EventsCompactionConfig(
        summarizer=GuardedEventsSummarizer(agent.canonical_model), compaction_interval=5, overlap_size=1))

ADK (google/adk/apps/compaction.py) calls `maybe_summarize_events(events=...)` and appends the
Event it returns, whose `actions.compaction.compacted_content` stands for those events from then
on; its own LlmEventSummarizer stores whatever the model answered but an empty one. This one asks
`llm` with ADK's own prompt and formatting (LlmEventSummarizer's, or `prompt_template`), checks the
answer against the events it replaces, redoes a failed one with the guard's aggressive prompt, then
builds one by extraction (the latest request, the identifiers, decisions, open tasks): a raised
error, an error text, a refusal, a loop or a preamble never becomes the history, and the turn goes
on. Each run is recorded as `google-adk` in the frameworks' state.
"""
from __future__ import annotations

from typing import Optional

from google.adk.apps.base_events_summarizer import BaseEventsSummarizer

from ._common import Guarded, last_resort, outcome, said


def _turns(events) -> list:
    """(role, text) of ADK events: the user's and the agents' text, tool calls and their responses."""
    out = []
    for event in events:
        content = getattr(event, "content", None)
        if not (content and content.parts):
            continue
        role = "user" if event.author == "user" else "assistant"
        for part in content.parts:
            if part.text and not part.thought:
                out.append((role, part.text))
            if part.function_call:
                out.append(("assistant", f"called {part.function_call.name}({part.function_call.args})"))
            if part.function_response:
                out.append(("tool", f"{part.function_response.name}: {part.function_response.response}"))
    return out


class GuardedEventsSummarizer(Guarded, BaseEventsSummarizer):
    """A BaseEventsSummarizer for EventsCompactionConfig(summarizer=...).

    llm:             the BaseLlm that writes summaries (e.g. the agent's `canonical_model`, a LiteLlm)
    prompt_template: ADK's `{conversation_history}` template (default: LlmEventSummarizer's)
    settings, record, home, on_compaction: as for every integration (compaction_guard.integrations)"""

    framework = "google-adk"

    def __init__(self, llm, prompt_template: Optional[str] = None, *, settings=None, record: bool = True,
                 home=None, on_compaction=None):
        from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
        Guarded.__init__(self, settings, record, home, on_compaction)
        self._llm = llm
        self._adk = LlmEventSummarizer(llm, prompt_template)     # ADK's own prompt and formatting

    async def _ask(self, text: str, system: Optional[str], ask) -> str:
        from google.genai import types
        from google.adk.models.llm_request import LlmRequest
        from ..summarizers import SummarizerError
        config = None
        if system is not None:
            config = types.GenerateContentConfig(system_instruction=system, max_output_tokens=ask.max_tokens,
                                                 temperature=ask.temperature, **ask.penalties)
        request = LlmRequest(model=self._llm.model, contents=[types.Content(role="user", parts=[types.Part(text=text)])],
                             config=config or types.GenerateContentConfig())
        parts, stop = [], None
        async for response in self._llm.generate_content_async(request, stream=False):
            if response.error_code:
                raise SummarizerError(f"the model answered an error ({response.error_code}: "
                                      f"{(response.error_message or '')[:200]})")
            stop = response.finish_reason or stop
            if response.content and response.content.parts:
                parts += [p.text for p in response.content.parts if p.text and not p.thought]
                break
        if stop == types.FinishReason.MAX_TOKENS:
            raise SummarizerError("the model stopped at max_tokens", kind="cut_off")
        return "".join(parts).strip()

    async def maybe_summarize_events(self, *, events: list):
        if not events:
            return None
        from google.genai import types
        from google.adk.events.event import Event
        from google.adk.events.event_actions import EventActions, EventCompaction
        from .. import api
        history = _turns(events)

        async def summarize(ask):
            if ask.level == 1:       # ADK's own request, as LlmEventSummarizer sends it
                prompt = self._adk._prompt_template.format(
                    conversation_history=self._adk._format_events_for_prompt(events))
                return await self._ask(prompt, None, ask)
            return await self._ask(ask.prompt, f"{ask.system}\n\n{ask.instruction}", ask)
        try:
            done = await api.acompact(history, summarize, name=f"google-adk:{type(self._llm).__name__}",
                                      model=str(getattr(self._llm, "model", "")), **self.options())
            summary = done.summary
            said(self.framework, done)
            self.tell(outcome(self.framework, done))
        except Exception as exc:        # noqa: BLE001 - the guard's own bug never ends the turn
            summary = last_resort(api.render_history(history), exc)
        compaction = EventCompaction(start_timestamp=events[0].timestamp, end_timestamp=events[-1].timestamp,
                                     compacted_content=types.Content(role="model", parts=[types.Part(text=summary)]))
        return Event(author="user", actions=EventActions(compaction=compaction), invocation_id=Event.new_id())
