"""The Python agent frameworks (LangChain, Pydantic AI, Google ADK): the guard runs inside the
application (compaction_guard.integrations), checks each summary as it is made and records the
run in one state of its own (layout.py), each run labelled with its framework (`via`). No store
to read: a check says what the integrations recorded."""
from __future__ import annotations

from ..base import Agent

FRAMEWORKS = ("langchain", "pydantic-ai", "google-adk")


class Frameworks(Agent):
    name = "frameworks"
    title = "Python frameworks (LangChain, Pydantic AI, Google ADK)"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def checked_as_made(self, layout, state: dict):
        totals = state.get("totals") or {}
        runs = {k: n for k, n in (totals.get("via") or {}).items() if k in FRAMEWORKS}
        if not runs:
            return False, (f"nothing recorded in {layout.describe()}: no LangChain, Pydantic AI or Google ADK "
                           "integration has compacted here yet (docs/frameworks.md)")
        usage = state.get("level_usage") or {}
        levels = ", ".join(f"L{i} {usage.get(k, 0)}" for i, k in
                           enumerate(("l1_normal", "l2_aggressive", "l3_deterministic"), 1))
        last = next((h.get("at") for h in state.get("chain_history") or [] if h.get("via") in FRAMEWORKS), None)
        return True, (f"{self.title}: checked as they are made, {sum(runs.values())} compactions ("
                      + ", ".join(f"{k} {n}" for k, n in sorted(runs.items()))
                      + f"; answered at {levels}; the last at {last}); --agent frameworks --report says what the "
                      "model's answers failed with")


AGENT = Frameworks()
