"""Where the guard keeps its state for the Python agent frameworks (LangChain, Pydantic AI,
Google ADK): they keep their histories in the application's own memory or database, so the
guard has no store of theirs to read; its integrations (compaction_guard.integrations) check
each summary as it is made and record the run here: `$COMPACTION_GUARD_FRAMEWORKS_DIR`, else
`$XDG_STATE_HOME/compaction-guard/frameworks`, else `~/.local/state/compaction-guard/frameworks`
(state.yaml, config.yaml)."""
from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "COMPACTION_GUARD_FRAMEWORKS_DIR"


class FrameworksLayout:
    """The guard's directory for the frameworks (the layout agents/base.py describes)."""
    agent = "frameworks"

    def __init__(self, state_dir: Path, origin: str):
        self.state_dir = state_dir
        self.origin = origin
        self.notes = []
        self.config_problem = None

    def __repr__(self) -> str:
        return f"FrameworksLayout({self.state_dir!r}, {self.origin!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, FrameworksLayout) and (self.state_dir, self.origin) == (other.state_dir, other.origin)

    @property
    def guard_dir(self) -> Path:
        return self.state_dir

    @property
    def hint(self) -> str:
        return (f"the integrations write it when they first compact (docs/frameworks.md); set {VARIABLE} "
                "to name another directory, or pass --home DIR")

    def describe(self) -> str:
        return f"Python frameworks' state directory {self.state_dir} ({self.origin})"

    def looked(self) -> list:
        return [str(self.state_dir / "state.yaml")]

    def to_dict(self) -> dict:
        return {"agent": "frameworks", "state_dir": str(self.state_dir), "origin": self.origin,
                "state": str(self.state_dir / "state.yaml")}


def resolve(env=None, home: str | None = None) -> FrameworksLayout:
    env = os.environ if env is None else env
    if home:
        return FrameworksLayout(Path(os.path.expanduser(home)), "--home")
    given = (env.get(VARIABLE) or "").strip()
    if given:
        return FrameworksLayout(Path(os.path.expanduser(given)), f"${VARIABLE}")
    xdg = (env.get("XDG_STATE_HOME") or "").strip()
    if xdg and os.path.isabs(xdg):
        return FrameworksLayout(Path(xdg) / "compaction-guard" / "frameworks", "$XDG_STATE_HOME")
    user = Path(env.get("HOME") or os.path.expanduser("~"))
    return FrameworksLayout(user / ".local" / "state" / "compaction-guard" / "frameworks",
                            "the default, ~/.local/state/compaction-guard/frameworks")
