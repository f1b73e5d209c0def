"""LangChain 1.5 for real: a create_agent agent with SummarizationMiddleware, its model
langchain-openai's ChatOpenAI on the scripted OpenAI server on 127.0.0.1 (real HTTP), run turn by
turn with a checkpointer, its stored history read back. Guarded (summarizer=GuardedSummarizer),
a summary model that raises, answers an error text, a refusal, a loop, a preamble or another
language leaves an L2 or L3 summary carrying the conversation's identifiers and latest ask; a
good answer is kept unchanged. Unguarded, the same run stores the bad answer (or ends the turn)."""
import asyncio

import pytest

pytest.importorskip("langchain", minversion="1.5")
pytest.importorskip("langchain_openai")

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import SummarizationMiddleware  # noqa: E402
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from compaction_guard.integrations.langchain import EVENT, GuardedSummarizer  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402
from compaction_guard.state import StateStore  # noqa: E402
from frameworks_kit import BAD, GOOD_SECTIONS, IDENTIFIERS, TURNS, ScriptedOpenAI, carries_the_history  # noqa: E402

L2_MARK = "Compress the conversation between the fence lines"    # the guard's aggressive prompt
PREFIX = "Here is a summary of the conversation to date:\n\n"


class Events(BaseCallbackHandler):
    def __init__(self):
        self.seen = []

    def on_custom_event(self, name, data, **kwargs):
        if name == EVENT:
            self.seen.append(data)


def run(srv, state_dir, guarded=True, use_async=False, events=None):
    """The agent, turn by turn; returns its stored history (the checkpointer's)."""
    model = ChatOpenAI(model="scripted", base_url=srv.url, api_key="unused", max_retries=0, timeout=20)
    summarizer = GuardedSummarizer(model, home=state_dir) if guarded else None
    agent = create_agent(model, middleware=[SummarizationMiddleware(model, trigger=("messages", 9),
                                                                    keep=("messages", 1), summarizer=summarizer)],
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}, "callbacks": [events] if events else []}
    if use_async:
        async def turns():
            for turn in TURNS:
                await agent.ainvoke({"messages": [HumanMessage(turn)]}, config)
        asyncio.run(turns())
    else:
        for turn in TURNS:
            agent.invoke({"messages": [HumanMessage(turn)]}, config)
    return agent.get_state(config).values["messages"]


def stored_summary(messages) -> str:
    first = messages[0]
    assert isinstance(first, HumanMessage) and first.content.startswith(PREFIX), first
    return first.content[len(PREFIX):]


@pytest.mark.parametrize("case", sorted(BAD))
def test_guarded_a_bad_summary_never_becomes_the_history(case, tmp_path):
    events = Events()
    with ScriptedOpenAI([BAD[case]]) as srv:         # the model answers every summary request this way
        messages = run(srv, tmp_path, events=events)
    summary = stored_summary(messages)
    bad = BAD[case]
    assert not isinstance(bad, str) or bad.strip() not in summary
    assert carries_the_history(summary), summary
    for h in ("## SESSION INTENT", "## SUMMARY", "## ARTIFACTS", "## NEXT STEPS"):     # the middleware's sections
        assert h in summary
    assert messages[-2].content == TURNS[-1] and len(messages) == 3       # the turn went on: kept ask, the reply
    (event,) = events.seen
    assert event["level"] == 3 and event["failures"] and event["framework"] == "langchain"
    compactions = [r for r in srv.requests if r["kind"] == "compaction"]
    assert "Messages to summarize:" in str(compactions[0]["body"]["messages"])     # L1: the middleware's prompt
    assert L2_MARK in str(compactions[-1]["body"]["messages"])                     # L2: the guard's
    state = StateStore(tmp_path / "state.yaml", DEFAULT).read()
    assert state["level_usage"]["l3_deterministic"] == 1 and state["totals"]["via"] == {"langchain": 1}
    assert {f["source"] for f in state["failures"]} == {"langchain"}


@pytest.mark.parametrize("case", sorted(BAD))
def test_unguarded_the_same_run_stores_the_bad_answer_or_ends_the_turn(case, tmp_path):
    with ScriptedOpenAI([BAD[case]]) as srv:
        if isinstance(BAD[case], dict):               # LangChain 1.5 lets the error end the agent's turn
            with pytest.raises(Exception, match="500|server had an error"):
                run(srv, tmp_path, guarded=False)
            return
        messages = run(srv, tmp_path, guarded=False)
    assert stored_summary(messages) == BAD[case].strip()
    assert not carries_the_history(stored_summary(messages))


def test_a_good_answer_is_kept_unchanged(tmp_path):
    events = Events()
    with ScriptedOpenAI([GOOD_SECTIONS]) as srv:
        messages = run(srv, tmp_path, events=events)
    assert stored_summary(messages) == GOOD_SECTIONS
    assert events.seen[0]["level"] == 1 and not events.seen[0]["failures"]
    assert sum(r["kind"] == "compaction" for r in srv.requests) == 1


def test_a_failed_answer_redone_by_the_aggressive_prompt_is_kept_at_l2(tmp_path):
    with ScriptedOpenAI([BAD["preamble"]], when=[(L2_MARK, GOOD_SECTIONS)]) as srv:
        messages = run(srv, tmp_path)
    assert stored_summary(messages) == GOOD_SECTIONS
    l2 = [r for r in srv.requests if r["kind"] == "compaction"][-1]["body"]
    assert l2.get("max_completion_tokens", l2.get("max_tokens")) < 2000 and l2["temperature"] <= 0.2   # smaller, colder
    assert "## SESSION INTENT; ## SUMMARY; ## ARTIFACTS; ## NEXT STEPS" in str(l2["messages"])


def test_async_agent_is_guarded_the_same_way(tmp_path):
    events = Events()
    with ScriptedOpenAI([BAD["preamble"]]) as srv:
        messages = run(srv, tmp_path, use_async=True, events=events)
    assert carries_the_history(stored_summary(messages)) and events.seen[0]["level"] == 3
    assert all(i in stored_summary(messages) for i in IDENTIFIERS)
