"""The agents the guard stands behind: one package each, listed once here.

An agent package (`agents/<name>/`) holds everything the guard knows about one agent and
nothing about another: where the agent keeps things (its layout, resolved once from its own
variables), its stores (Sources yielding SummaryRecords with the history and the agent's own
counts), its hook command, installing that hook, the compaction requests `serve` must read,
and where the guard's own state for it lives. Its `__init__` exposes `AGENT`, an
`agents.base.Agent`. Detectors never learn which agent wrote a summary.

A new agent: its package, one line in REGISTRY, its real binary in the tests.
Packages are imported when first asked for, so a hook pays only for its own agent.
"""
from __future__ import annotations

import importlib

from ..errors import GuardError

# (name on the command line, package) in the order a plain --check reads them
REGISTRY = (
    ("openclaw", "compaction_guard.agents.openclaw"),
    ("claude-code", "compaction_guard.agents.claude_code"),
    ("codex", "compaction_guard.agents.codex"),
    ("gemini", "compaction_guard.agents.gemini"),
    ("opencode", "compaction_guard.agents.opencode"),
    ("frameworks", "compaction_guard.agents.frameworks"),
)
NAMES = tuple(name for name, _ in REGISTRY)
DEFAULT = "openclaw"        # whose layout serve, --compact and --print-config use when no --agent is named


def get(name: str):
    """The Agent called `name`; a GuardError naming the known ones for any other."""
    for known, module in REGISTRY:
        if known == name:
            return importlib.import_module(module).AGENT
    raise GuardError(f"unknown agent {name!r}; the guard knows: {', '.join(NAMES)}")


def every() -> list:
    """Every registered Agent, in the registry's order."""
    return [get(name) for name in NAMES]


def of_layout(layout):
    """The Agent whose layout this is."""
    return get(getattr(layout, "agent", DEFAULT))


def layout_of(where=None):
    """A layout as given (anything with an `agent`), else the default agent's layout of the
    directory `where` names, or (None) the one the environment names."""
    if getattr(where, "agent", None) is not None:
        return where
    return get(DEFAULT).resolve(home=None if where is None else str(where))
