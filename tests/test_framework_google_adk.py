"""Google ADK for real: an App whose LlmAgent's model is ADK's LiteLlm on the scripted OpenAI
server on 127.0.0.1 (real HTTP, litellm's OpenAI route), run by ADK's Runner turn by turn with
sliding-window event compaction (EventsCompactionConfig), its session's events read back.
Guarded (summarizer=GuardedEventsSummarizer), a summary model that raises, answers an error text,
a refusal, a loop, a preamble or another language leaves an L2 or L3 summary carrying the
conversation's identifiers and latest ask; a good answer is kept unchanged. Unguarded (ADK's own
LlmEventSummarizer), the bad answer is stored (a raised error: no compaction at all)."""
import asyncio
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")     # litellm reads its model map offline
pytest.importorskip("google.adk")
pytest.importorskip("litellm")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.apps.app import EventsCompactionConfig  # noqa: E402
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer  # noqa: E402
from google.adk.models.lite_llm import LiteLlm  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402

from compaction_guard.integrations.google_adk import GuardedEventsSummarizer  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402
from compaction_guard.state import StateStore  # noqa: E402
from frameworks_kit import BAD, GOOD_PLAIN, TURNS, ScriptedOpenAI, carries_the_history  # noqa: E402

L2_MARK = "Compress the conversation between the fence lines"
ADK_MARK = "The following is a conversation history between a user and an AI agent"


def run(srv, state_dir, guarded=True, reports=None):
    """The app, turn by turn; returns the texts of the compaction events its session stored."""
    llm = LiteLlm(model="openai/scripted", api_base=srv.url, api_key="unused", num_retries=0, timeout=20)
    agent = LlmAgent(name="ops", model=llm, instruction="You are the gateway team's assistant.")
    summarizer = GuardedEventsSummarizer(llm, home=state_dir, on_compaction=reports.append if reports is not None
                                         else None) if guarded else LlmEventSummarizer(llm)
    app = App(name="ops", root_agent=agent, events_compaction_config=EventsCompactionConfig(
        summarizer=summarizer, compaction_interval=4, overlap_size=0))

    async def turns():
        sessions = InMemorySessionService()
        runner = Runner(app=app, session_service=sessions)
        session = await sessions.create_session(app_name="ops", user_id="u")
        for turn in TURNS:
            async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=types.Content(
                    role="user", parts=[types.Part(text=turn)])):
                pass
        session = await sessions.get_session(app_name="ops", user_id="u", session_id=session.id)
        assert session.events[-1].author == "ops"                 # the last turn was answered
        return [e.actions.compaction.compacted_content.parts[0].text for e in session.events
                if e.actions and e.actions.compaction]
    return asyncio.run(turns())


@pytest.mark.parametrize("case", sorted(BAD))
def test_guarded_a_bad_summary_never_becomes_the_history(case, tmp_path):
    reports = []
    with ScriptedOpenAI([BAD[case]]) as srv:
        (summary,) = run(srv, tmp_path, reports=reports)
    assert not isinstance(BAD[case], str) or BAD[case].strip() not in summary
    assert carries_the_history(summary), summary
    assert reports[0]["level"] == 3 and reports[0]["failures"]
    compactions = [str(r["body"]["messages"]) for r in srv.requests if r["kind"] == "compaction"]
    assert ADK_MARK in compactions[0] and L2_MARK in compactions[-1]     # L1: ADK's own prompt; L2: the guard's
    state = StateStore(tmp_path / "state.yaml", DEFAULT).read()
    assert state["totals"]["via"] == {"google-adk": 1} and state["level_usage"]["l3_deterministic"] == 1


@pytest.mark.parametrize("case", sorted(BAD))
def test_unguarded_the_same_run_stores_the_bad_answer(case, tmp_path):
    with ScriptedOpenAI([BAD[case]]) as srv:
        stored = run(srv, tmp_path, guarded=False)
    if isinstance(BAD[case], dict):
        assert stored == []                 # ADK logs the error and keeps the whole history
    else:
        assert stored == [BAD[case]]


def test_a_good_answer_is_kept_unchanged(tmp_path):
    reports = []
    with ScriptedOpenAI([GOOD_PLAIN]) as srv:
        assert run(srv, tmp_path, reports=reports) == [GOOD_PLAIN]
    assert reports[0]["level"] == 1


def test_a_failed_answer_redone_by_the_aggressive_prompt_is_kept_at_l2(tmp_path):
    with ScriptedOpenAI([BAD["loop"]], when=[(L2_MARK, GOOD_PLAIN)]) as srv:
        assert run(srv, tmp_path) == [GOOD_PLAIN]
    l2 = [r for r in srv.requests if r["kind"] == "compaction"][-1]["body"]
    assert l2.get("max_completion_tokens", l2.get("max_tokens")) < 2000
    assert l2["frequency_penalty"] > 0 and l2["presence_penalty"] > 0      # after a loop: penalties
