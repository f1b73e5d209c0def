"""Where opencode keeps things, as opencode 1.18 finds them: its data directory
`$XDG_DATA_HOME/opencode` (else `~/.local/share/opencode`) holding the database `opencode.db`
(`$OPENCODE_DB` names another: a path, or a name in the data directory; a release channel other
than latest/beta/prod uses `opencode-<channel>.db`, so every `opencode*.db` there is read); its
configuration directory `$XDG_CONFIG_HOME/opencode` (else `~/.config/opencode`), or
`$OPENCODE_CONFIG_DIR`, whose `plugin/` folder opencode loads plugins from. The guard keeps its
state for opencode in `<data>/compaction-guard/`."""
from __future__ import annotations

import os
from pathlib import Path


def _xdg(env, name: str, default: str) -> Path:
    given = (env.get(name) or "").strip()
    if given and os.path.isabs(given):
        return Path(given)
    return Path(env.get("HOME") or os.path.expanduser("~")) / default


class OpencodeLayout:
    """Where opencode keeps things, resolved once (the layout agents/base.py describes)."""
    agent = "opencode"

    def __init__(self, state_dir: Path, origin: str, config_dir: Path, db: Path | None = None,
                 notes: list | None = None, config_problem: str | None = None):
        self.state_dir = state_dir          # opencode's data directory
        self.origin = origin
        self.config_dir = config_dir
        self.db = db                        # named by $OPENCODE_DB, else every opencode*.db in state_dir
        self.notes = [] if notes is None else notes
        self.config_problem = config_problem

    def __repr__(self) -> str:
        return f"OpencodeLayout({self.state_dir!r}, {self.origin!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, OpencodeLayout) and (self.state_dir, self.origin, self.db) == \
            (other.state_dir, other.origin, other.db)

    @property
    def plugin_dir(self) -> Path:
        return self.config_dir / "plugin"

    @property
    def guard_dir(self) -> Path:
        return self.state_dir / "compaction-guard"

    @property
    def hint(self) -> str:
        return ("set XDG_DATA_HOME (opencode's data is in $XDG_DATA_HOME/opencode) or OPENCODE_DB, or pass "
                "--home DIR (the directory holding opencode.db)")

    def describe(self) -> str:
        db = f", database {self.db}" if self.db is not None else ""
        return f"opencode data directory {self.state_dir} ({self.origin}){db}"

    def looked(self) -> list:
        return [str(self.db)] if self.db is not None else [str(self.state_dir / "opencode*.db")]

    def to_dict(self) -> dict:
        return {"agent": "opencode", "data_dir": str(self.state_dir), "origin": self.origin,
                "database": str(self.db) if self.db is not None else str(self.state_dir / "opencode*.db"),
                "plugins": str(self.plugin_dir), "state": str(self.guard_dir / "state.yaml")}


def resolve(env=None, home: str | None = None) -> OpencodeLayout:
    env = os.environ if env is None else env
    config = Path(env["OPENCODE_CONFIG_DIR"]) if (env.get("OPENCODE_CONFIG_DIR") or "").strip() \
        else _xdg(env, "XDG_CONFIG_HOME", ".config") / "opencode"
    if home:
        return OpencodeLayout(Path(os.path.expanduser(home)), "--home", config)
    data = _xdg(env, "XDG_DATA_HOME", ".local/share") / "opencode"
    origin = "$XDG_DATA_HOME/opencode" if (env.get("XDG_DATA_HOME") or "").strip() else \
        "the default, ~/.local/share/opencode"
    named = (env.get("OPENCODE_DB") or "").strip()
    if named == ":memory:":
        return OpencodeLayout(data, origin, config, notes=["OPENCODE_DB is :memory:: opencode keeps nothing on disk"],
                              db=data / ":memory:")
    if named:
        db = Path(named) if os.path.isabs(named) else data / named
        return OpencodeLayout(data, origin, config, db=db)
    return OpencodeLayout(data, origin, config)
