"""Pydantic AI for real: an Agent whose model is pydantic-ai's OpenAIChatModel on the scripted
OpenAI server on 127.0.0.1 (real HTTP), with GuardedHistory as its history processor
(capabilities.ProcessHistory), run turn by turn with the history it returns. Guarded, a summary
model that raises, answers an error text, a refusal, a loop, a preamble or another language leaves
an L2 or L3 summary carrying the conversation's identifiers and latest ask; a good answer is kept
unchanged. Unguarded (the same processor storing the model's answer as it is), the bad one is stored."""
import asyncio
import dataclasses

import pytest

pytest.importorskip("pydantic_ai")

from openai import AsyncOpenAI  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities import ProcessHistory  # noqa: E402
from pydantic_ai.direct import model_request  # noqa: E402
from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from compaction_guard.integrations.pydantic_ai import PREFIX, GuardedHistory, _turns  # noqa: E402
from compaction_guard.prompts import L1_SYSTEM, user_message  # noqa: E402
from compaction_guard.api import render_history  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402
from compaction_guard.state import StateStore  # noqa: E402
from frameworks_kit import BAD, GOOD_PLAIN, TURNS, ScriptedOpenAI, carries_the_history  # noqa: E402

L2_MARK = "Compress the conversation between the fence lines"


def model_of(srv):
    client = AsyncOpenAI(base_url=srv.url, api_key="unused", max_retries=0, timeout=20)
    return OpenAIChatModel("scripted", provider=OpenAIProvider(openai_client=client))


class Unguarded(GuardedHistory):
    """The same processor with the model's answer stored as it is (what a hand-written one does)."""

    async def __call__(self, messages):
        at = self.cut(messages)
        if not at:
            return messages
        text = render_history(_turns(messages[:at]))
        answer = await model_request(self.model, [ModelRequest(parts=[SystemPromptPart(L1_SYSTEM),
                                                                      UserPromptPart(user_message(text, 400))])])
        return [dataclasses.replace(messages[at], parts=[UserPromptPart(PREFIX + answer.text),
                                                         *messages[at].parts]), *messages[at + 1:]]


def run(srv, state_dir, guarded=True, reports=None):
    model = model_of(srv)
    cls = GuardedHistory if guarded else Unguarded
    processor = cls(model, trigger_messages=9, keep_messages=1, home=state_dir,
                    on_compaction=reports.append if reports is not None else None)
    agent = Agent(model, system_prompt="You are the gateway team's assistant.",
                  capabilities=[ProcessHistory(processor)])

    async def turns():
        history = []
        for turn in TURNS:
            result = await agent.run(turn, message_history=history)
            history = result.all_messages()
        return history
    return asyncio.run(turns())


def stored_summary(messages) -> str:
    first = messages[0]
    assert first.parts[0].part_kind == "system-prompt"             # the system prompt is kept ahead
    part = first.parts[1]
    assert part.part_kind == "user-prompt" and part.content.startswith(PREFIX), first
    assert first.parts[2].content == TURNS[-1]                      # the kept ask follows it
    return part.content[len(PREFIX):]


@pytest.mark.parametrize("case", sorted(BAD))
def test_guarded_a_bad_summary_never_becomes_the_history(case, tmp_path):
    reports = []
    with ScriptedOpenAI([BAD[case]]) as srv:
        messages = run(srv, tmp_path, reports=reports)
    summary = stored_summary(messages)
    assert not isinstance(BAD[case], str) or BAD[case].strip() not in summary
    assert carries_the_history(summary), summary
    assert len(messages) == 2 and messages[-1].kind == "response"   # the run went on
    (report,) = reports
    assert report["level"] == 3 and report["failures"]
    state = StateStore(tmp_path / "state.yaml", DEFAULT).read()
    assert state["totals"]["via"] == {"pydantic-ai": 1} and state["level_usage"]["l3_deterministic"] == 1


@pytest.mark.parametrize("case", sorted(BAD))
def test_unguarded_the_same_run_stores_the_bad_answer_or_ends_the_run(case, tmp_path):
    with ScriptedOpenAI([BAD[case]]) as srv:
        if isinstance(BAD[case], dict):
            with pytest.raises(Exception, match="500|server had an error"):
                run(srv, tmp_path, guarded=False)
            return
        messages = run(srv, tmp_path, guarded=False)
    assert messages[0].parts[0].content == PREFIX + BAD[case]
    assert not carries_the_history(messages[0].parts[0].content)


def test_a_good_answer_is_kept_unchanged(tmp_path):
    reports = []
    with ScriptedOpenAI([GOOD_PLAIN]) as srv:
        messages = run(srv, tmp_path, reports=reports)
    assert stored_summary(messages) == GOOD_PLAIN and reports[0]["level"] == 1


def test_a_failed_answer_redone_by_the_aggressive_prompt_is_kept_at_l2(tmp_path):
    with ScriptedOpenAI([BAD["refusal"]], when=[(L2_MARK, GOOD_PLAIN)]) as srv:
        messages = run(srv, tmp_path)
    assert stored_summary(messages) == GOOD_PLAIN
    l2 = [r for r in srv.requests if r["kind"] == "compaction"][-1]["body"]
    assert l2.get("max_completion_tokens", l2.get("max_tokens")) < 2000 and l2["temperature"] <= 0.2
