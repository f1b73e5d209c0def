"""Where Claude Code keeps things: everything under its configuration directory
(`$CLAUDE_CONFIG_DIR`, else `~/.claude`): transcripts under `projects/` (store.py), settings in
`settings.json`. The guard keeps its own state for Claude Code beside them, in
`<config>/compaction-guard/` (state.yaml, config.yaml, hook.log)."""
from __future__ import annotations

import os
from pathlib import Path


def config_dir(env=None) -> Path:
    """Claude Code's configuration directory, as Claude Code finds it."""
    env = os.environ if env is None else env
    given = (env.get("CLAUDE_CONFIG_DIR") or "").strip()
    if given:
        return Path(os.path.expanduser(given))
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"


class ClaudeLayout:
    """Where Claude Code keeps things, resolved once (the layout agents/base.py describes). A
    plain class: the hook imports it on every event, and dataclasses costs 15 ms to import."""
    agent = "claude-code"

    def __init__(self, state_dir: Path, origin: str, notes: list | None = None,
                 config_problem: str | None = None, agents: tuple = ()):
        self.state_dir = state_dir          # Claude Code's configuration directory
        self.origin = origin
        self.notes = [] if notes is None else notes
        self.config_problem = config_problem
        self.agents = agents

    def __repr__(self) -> str:
        return f"ClaudeLayout({self.state_dir!r}, {self.origin!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ClaudeLayout) and (self.state_dir, self.origin, self.notes, self.config_problem,
                                                    self.agents) == (other.state_dir, other.origin, other.notes,
                                                                     other.config_problem, other.agents)

    @property
    def projects(self) -> Path:
        return self.state_dir / "projects"

    @property
    def settings_path(self) -> Path:
        return self.state_dir / "settings.json"

    @property
    def guard_dir(self) -> Path:
        return self.state_dir / "compaction-guard"

    @property
    def hint(self) -> str:
        return "set CLAUDE_CONFIG_DIR to Claude Code's configuration directory, or pass --home DIR"

    def describe(self) -> str:
        return f"Claude Code configuration directory {self.state_dir} ({self.origin})"

    def looked(self) -> list:
        return [str(self.projects / "*" / "*.jsonl")]

    def to_dict(self) -> dict:
        return {"agent": "claude-code", "config_dir": str(self.state_dir), "origin": self.origin,
                "projects": str(self.projects), "state": str(self.guard_dir / "state.yaml")}


def resolve(env=None, home: str | None = None) -> ClaudeLayout:
    env = os.environ if env is None else env
    if home:
        return ClaudeLayout(Path(os.path.expanduser(home)), "--home")
    if (env.get("CLAUDE_CONFIG_DIR") or "").strip():
        return ClaudeLayout(config_dir(env), "$CLAUDE_CONFIG_DIR")
    return ClaudeLayout(config_dir(env), "the default, ~/.claude")
