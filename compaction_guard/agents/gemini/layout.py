"""Where Gemini CLI keeps things: everything under `<home>/.gemini`, `<home>` being
`$GEMINI_CLI_HOME` (Gemini CLI 0.61's own variable, which replaces the user's home) or the
user's home: chat sessions under `tmp/<project>/chats/` (store.py), settings in
`settings.json`. The guard keeps its own state for Gemini CLI in `<.gemini>/compaction-guard/`."""
from __future__ import annotations

import os
from pathlib import Path


def gemini_dir(env=None) -> Path:
    """Gemini CLI's `.gemini` directory, as Gemini CLI finds it."""
    env = os.environ if env is None else env
    given = (env.get("GEMINI_CLI_HOME") or "").strip()
    home = Path(os.path.expanduser(given)) if given else Path(env.get("HOME") or os.path.expanduser("~"))
    return home / ".gemini"


class GeminiLayout:
    """Where Gemini CLI keeps things, resolved once (the layout agents/base.py describes)."""
    agent = "gemini"

    def __init__(self, state_dir: Path, origin: str, notes: list | None = None, config_problem: str | None = None,
                 agents: tuple = ()):
        self.state_dir = state_dir          # the .gemini directory
        self.origin = origin
        self.notes = [] if notes is None else notes
        self.config_problem = config_problem
        self.agents = agents

    def __repr__(self) -> str:
        return f"GeminiLayout({self.state_dir!r}, {self.origin!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, GeminiLayout) and (self.state_dir, self.origin) == (other.state_dir, other.origin)

    @property
    def projects(self) -> Path:
        return self.state_dir / "tmp"

    @property
    def settings_path(self) -> Path:
        return self.state_dir / "settings.json"

    @property
    def guard_dir(self) -> Path:
        return self.state_dir / "compaction-guard"

    @property
    def hint(self) -> str:
        return "set GEMINI_CLI_HOME to the directory holding Gemini CLI's .gemini, or pass --home DIR (the .gemini)"

    def describe(self) -> str:
        return f"Gemini CLI directory {self.state_dir} ({self.origin})"

    def looked(self) -> list:
        return [str(self.projects / "*" / "chats" / "session-*.jsonl")]

    def to_dict(self) -> dict:
        return {"agent": "gemini", "gemini_dir": str(self.state_dir), "origin": self.origin,
                "chats": str(self.projects / "*" / "chats"), "state": str(self.guard_dir / "state.yaml")}


def resolve(env=None, home: str | None = None) -> GeminiLayout:
    env = os.environ if env is None else env
    if home:
        return GeminiLayout(Path(os.path.expanduser(home)), "--home")
    if (env.get("GEMINI_CLI_HOME") or "").strip():
        return GeminiLayout(gemini_dir(env), "$GEMINI_CLI_HOME/.gemini")
    return GeminiLayout(gemini_dir(env), "the default, ~/.gemini")
