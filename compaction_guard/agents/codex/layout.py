"""Where Codex CLI keeps things: everything under its home (`$CODEX_HOME`, else `~/.codex`):
rollouts under `sessions/YYYY/MM/DD/` and `archived_sessions/` (store.py), hooks in
`hooks.json`, settings in `config.toml`. The guard keeps its own state for Codex beside them,
in `<home>/compaction-guard/` (state.yaml, config.yaml, hook.log, marks)."""
from __future__ import annotations

import os
from pathlib import Path


def codex_home(env=None) -> Path:
    """Codex's home, as Codex finds it."""
    env = os.environ if env is None else env
    given = (env.get("CODEX_HOME") or "").strip()
    if given:
        return Path(os.path.expanduser(given))
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"


class CodexLayout:
    """Where Codex keeps things, resolved once (the layout agents/base.py describes). A plain
    class: the hook imports it on every event."""
    agent = "codex"

    def __init__(self, state_dir: Path, origin: str, notes: list | None = None, config_problem: str | None = None,
                 agents: tuple = ()):
        self.state_dir = state_dir          # Codex's home
        self.origin = origin
        self.notes = [] if notes is None else notes
        self.config_problem = config_problem
        self.agents = agents

    def __repr__(self) -> str:
        return f"CodexLayout({self.state_dir!r}, {self.origin!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, CodexLayout) and (self.state_dir, self.origin) == (other.state_dir, other.origin)

    @property
    def sessions(self) -> Path:
        return self.state_dir / "sessions"

    @property
    def archived(self) -> Path:
        return self.state_dir / "archived_sessions"

    @property
    def hooks_path(self) -> Path:
        return self.state_dir / "hooks.json"

    @property
    def config_path(self) -> Path:
        return self.state_dir / "config.toml"

    @property
    def guard_dir(self) -> Path:
        return self.state_dir / "compaction-guard"

    @property
    def hint(self) -> str:
        return "set CODEX_HOME to Codex's home, or pass --home DIR"

    def describe(self) -> str:
        return f"Codex home {self.state_dir} ({self.origin})"

    def looked(self) -> list:
        return [str(self.sessions / "YYYY" / "MM" / "DD" / "rollout-*.jsonl"), str(self.archived / "rollout-*.jsonl")]

    def to_dict(self) -> dict:
        return {"agent": "codex", "codex_home": str(self.state_dir), "origin": self.origin,
                "sessions": str(self.sessions), "state": str(self.guard_dir / "state.yaml")}


def resolve(env=None, home: str | None = None) -> CodexLayout:
    env = os.environ if env is None else env
    if home:
        return CodexLayout(Path(os.path.expanduser(home)), "--home")
    if (env.get("CODEX_HOME") or "").strip():
        return CodexLayout(codex_home(env), "$CODEX_HOME")
    return CodexLayout(codex_home(env), "the default, ~/.codex")
