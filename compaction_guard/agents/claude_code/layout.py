"""Where Claude Code keeps things: everything under its configuration directory
(`$CLAUDE_CONFIG_DIR`, else `~/.claude`): transcripts under `projects/` (store.py), settings in
`settings.json`. The guard keeps its own state for Claude Code beside them, in
`<config>/compaction-guard/` (state.yaml, config.yaml, hook.log)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


def config_dir(env=None) -> Path:
    """Claude Code's configuration directory, as Claude Code finds it."""
    env = os.environ if env is None else env
    given = (env.get("CLAUDE_CONFIG_DIR") or "").strip()
    if given:
        return Path(os.path.expanduser(given))
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"


@dataclass
class ClaudeLayout:
    """Where Claude Code keeps things, resolved once (the layout agents/base.py describes)."""
    state_dir: Path                   # Claude Code's configuration directory
    origin: str
    notes: list = field(default_factory=list)
    config_problem: Optional[str] = None
    agents: tuple = ()
    agent: str = "claude-code"

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


def resolve(env=None, home: Optional[str] = None) -> ClaudeLayout:
    env = os.environ if env is None else env
    if home:
        return ClaudeLayout(Path(os.path.expanduser(home)), "--home")
    if (env.get("CLAUDE_CONFIG_DIR") or "").strip():
        return ClaudeLayout(config_dir(env), "$CLAUDE_CONFIG_DIR")
    return ClaudeLayout(config_dir(env), "the default, ~/.claude")
