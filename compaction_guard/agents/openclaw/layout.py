"""Where OpenClaw keeps things, resolved once and handed down.

OpenClaw 2026.9's own rules (src/config/state-dir.ts, src/config/paths.ts,
src/infra/home-dir.ts, src/agents/agent-scope-config.ts), in the order it applies them:

- the *effective home* is `OPENCLAW_HOME` (it replaces the user's home; `~` in it is the
  OS home), else `HOME`, else the OS home;
- the *state directory* is `OPENCLAW_STATE_DIR` (a leading `~` is the effective home),
  else `<effective home>/.openclaw` if it exists, else the legacy `<effective home>/.clawdbot`
  if that exists, else `<effective home>/.openclaw`;
- the *config* is `OPENCLAW_CONFIG_PATH`, else `openclaw.json` or the legacy
  `clawdbot.json` in the state directory, else (no state-dir override) the first of those
  names that exists in `~/.openclaw` or `~/.clawdbot`, else `<state>/openclaw.json`;
- an agent's directory is `agents.entries.<id>.agentDir` (or the legacy `agents.list[]`)
  from the config, else `<state>/agents/<id>/agent`; its session files (legacy transcripts,
  `sessions.json`, archives, `cold/`) are always `<state>/agents/<id>/sessions`;
- its database, `openclaw-agent.sqlite`, is where OpenClaw's registry says
  (`<state>/state/openclaw.sqlite`, table `agent_databases`: agent id and path, relative to
  the state directory or absolute), else in the agent's directory.

The plugins' stores: lossless-claw's `lcm.db` is `LCM_DATABASE_PATH`, else `<state>/lcm.db`;
memory-dag-compactor's state is `<state>/skill-state/memory-dag-compactor/state.yaml` and its
`MEMORY.md` is in the workspace (`OPENCLAW_WORKSPACE_DIR`, else the config's
`agents.defaults.workspace`, else `<state>/workspace`). The guard keeps its own state and
config in `<state>/skill-state/compaction-resilience-guard/`, and its OpenClaw hook in
`<state>/hooks/compaction-resilience-guard/`.

`resolve()` is the only place that reads the environment for OpenClaw's paths; everything
below it takes a `Layout`.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

GUARD_NAME = "compaction-resilience-guard"
CONFIG_NAMES = ("openclaw.json", "clawdbot.json")
_AGENT_ID_OK = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$", re.I)
MAX_CONFIG_BYTES = 16 << 20


def normalize_agent_id(value) -> str:
    """OpenClaw's normalizeAgentId: lower case, other characters as '-', 'main' if nothing is left."""
    raw = str(value or "").strip()
    low = raw.lower()
    if _AGENT_ID_OK.match(raw):
        return low
    out = re.sub(r"[^a-z0-9_-]+", "-", low).strip("-")[:64]
    return out or "main"


@dataclass(frozen=True)
class Agent:
    id: str
    dir: Path             # agentDir
    sessions: Path        # <state>/agents/<id>/sessions: legacy JSONL, sessions.json, archives
    configured: bool      # named in the config (else found on disk or in the registry)
    db: Optional[Path] = None     # the registry's path of its database, when it has one

    @property
    def database(self) -> Path:
        return self.db if self.db is not None else self.dir / "openclaw-agent.sqlite"


@dataclass
class Layout:
    agent = "openclaw"                # whose layout (agents.REGISTRY); not a field
    state_dir: Path
    origin: str                       # how the state directory was chosen, said to the operator
    config_path: Path
    config_origin: str
    config: Optional[dict] = None     # the parsed config (JSON5), when it exists and reads
    config_problem: Optional[str] = None
    agents: tuple = ()
    lcm_db: Path = Path()
    lcm_origin: str = ""
    workspace: Path = Path()
    hint: str = ""                    # which variable to set when nothing is found
    notes: list = field(default_factory=list)

    @property
    def dag_state(self) -> Path:
        return self.state_dir / "skill-state" / "memory-dag-compactor" / "state.yaml"

    @property
    def memory(self) -> Path:
        return self.workspace / "MEMORY.md"

    @property
    def guard_dir(self) -> Path:
        return self.state_dir / "skill-state" / GUARD_NAME

    @property
    def hooks_dir(self) -> Path:
        return self.state_dir / "hooks"

    def describe(self) -> str:
        """One line: which state directory and why."""
        return f"OpenClaw state directory {self.state_dir} ({self.origin})"

    def looked(self) -> list:
        """The places a check looks for stores, for a check that found none."""
        out = [str(self.dag_state), str(self.lcm_db)]
        for a in self.agents or (Agent("*", self.state_dir / "agents" / "*" / "agent",
                                       self.state_dir / "agents" / "*" / "sessions", False),):
            out.append(str(a.database))
            out.append(str(a.sessions / "*.jsonl"))
        return out

    def to_dict(self) -> dict:
        return {"state_dir": str(self.state_dir), "origin": self.origin, "config": str(self.config_path),
                "config_origin": self.config_origin, "lcm_db": str(self.lcm_db),
                "agents": [{"id": a.id, "dir": str(a.dir), "sessions": str(a.sessions),
                            "configured": a.configured} for a in self.agents]}


def _clean(value) -> Optional[str]:
    """OpenClaw's normalizeHomeDirValue: trimmed, and not 'undefined' or 'null'."""
    v = (value or "").strip()
    return v if v and v not in ("undefined", "null") else None


def _os_home(env) -> Path:
    h = _clean(env.get("HOME")) or _clean(env.get("USERPROFILE"))
    if h:
        return Path(h).resolve()
    try:
        return Path.home().resolve()
    except RuntimeError:
        return Path.cwd()


def effective_home(env) -> tuple:
    """(path, origin): OPENCLAW_HOME replaces the user's home."""
    explicit = _clean(env.get("OPENCLAW_HOME"))
    if not explicit:
        return _os_home(env), "HOME"
    if explicit == "~" or explicit.startswith(("~/", "~\\")):
        return Path(str(_os_home(env)) + explicit[1:]).resolve(), "OPENCLAW_HOME"
    return Path(explicit).resolve(), "OPENCLAW_HOME"


def _user_path(value: str, home: Path) -> Path:
    """OpenClaw's resolveHomeRelativePath: a leading ~ is the effective home."""
    v = value.strip()
    if v == "~" or v.startswith(("~/", "~\\")):
        return Path(str(home) + v[1:]).resolve()
    return Path(v).resolve()


def read_config(path: Path) -> tuple:
    """(data, problem) of an OpenClaw config (JSON5); (None, None) when it does not exist."""
    try:
        if not path.is_file():
            return None, None
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return None, f"{path}: over {MAX_CONFIG_BYTES >> 20} MB; not read"
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); its settings are not used"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        try:
            import json5   # OpenClaw's config is JSON5 (comments, bare keys, trailing commas)
            data = json5.loads(text)
        except Exception:    # noqa: BLE001 - json5 raises several kinds; any of them means unreadable
            return None, f"{path}: not valid JSON5; its settings are not used (fix it, or `openclaw doctor`)"
    if not isinstance(data, dict):
        return None, f"{path}: not an object; its settings are not used"
    return data, None


def _roster(cfg: Optional[dict]) -> list:
    """(id, config) of each agent the config names: agents.entries (a map) or legacy agents.list."""
    agents = cfg.get("agents") if isinstance(cfg, dict) else None
    if not isinstance(agents, dict):
        return []
    entries = agents.get("entries")
    if isinstance(entries, dict):
        return [(normalize_agent_id(k), v) for k, v in entries.items() if isinstance(v, dict)]
    lst = agents.get("list")
    if isinstance(lst, list):
        return [(normalize_agent_id(e.get("id")), e) for e in lst if isinstance(e, dict)]
    return []


def registry(state: Path) -> list:
    """(agent id, database path) of OpenClaw's agent database registry, read-only; [] when
    there is none or it cannot be read (the agents' directories are looked in anyway)."""
    import sqlite3
    from ... import sqlite_ro
    from ...errors import GuardError
    db = state / "state" / "openclaw.sqlite"
    if not db.is_file():
        return []
    try:
        con = sqlite_ro.connect(db, "OpenClaw state database")     # creates nothing beside it
    except (GuardError, OSError):
        return []
    try:
        rows = con.execute("SELECT agent_id, path FROM agent_databases ORDER BY agent_id, path").fetchall()
    except sqlite3.Error:
        return []
    finally:
        con.close()
    out = []
    for aid, p in rows:
        if isinstance(aid, str) and isinstance(p, str) and p.strip():
            path = Path(p)
            out.append((normalize_agent_id(aid), (path if path.is_absolute() else state / path).resolve()))
    return out


def resolve(env=None, state_dir: Optional[str] = None) -> Layout:
    """The layout of one OpenClaw installation. `state_dir` (the --home flag) names the state
    directory itself and wins over the environment; a directory that only holds `.openclaw`
    (a user's home given by mistake) means that child."""
    env = os.environ if env is None else env
    home, home_origin = effective_home(env)
    override = False
    if state_dir:
        p = _user_path(str(state_dir), home)
        child = p / ".openclaw"
        if child.is_dir() and not (p / "agents").is_dir() and not any((p / n).is_file() for n in CONFIG_NAMES):
            p, origin = child.resolve(), f"--home {state_dir}: its .openclaw"
        else:
            origin = "--home"
        state, override = p, True
    elif _clean(env.get("OPENCLAW_STATE_DIR")):
        state, origin, override = _user_path(env["OPENCLAW_STATE_DIR"], home), "OPENCLAW_STATE_DIR", True
    else:
        new, legacy = home / ".openclaw", home / ".clawdbot"
        where = "OPENCLAW_HOME" if home_origin == "OPENCLAW_HOME" else "the user's home"
        if new.exists() or not legacy.exists():
            state, origin = new, f"{where}/.openclaw"
        else:
            state, origin = legacy, f"{where}/.clawdbot (legacy)"
    # the config
    if _clean(env.get("OPENCLAW_CONFIG_PATH")):
        cfg_path, cfg_origin = _user_path(env["OPENCLAW_CONFIG_PATH"], home), "OPENCLAW_CONFIG_PATH"
    else:
        found = next((state / n for n in CONFIG_NAMES if (state / n).is_file()), None)
        if found is None and not override:
            found = next((d / n for d in (home / ".openclaw", home / ".clawdbot") for n in CONFIG_NAMES
                          if (d / n).is_file()), None)
        cfg_path, cfg_origin = (found, "found") if found is not None else (state / CONFIG_NAMES[0], "default")
    cfg, problem = read_config(cfg_path)
    # agents: configured ones (with their agentDir) and those on disk
    agents, seen = [], set()
    for aid, entry in _roster(cfg):
        if aid in seen:
            continue
        seen.add(aid)
        ad = entry.get("agentDir")
        d = _user_path(ad, home) if isinstance(ad, str) and ad.strip() else state / "agents" / aid / "agent"
        agents.append(Agent(aid, d, state / "agents" / aid / "sessions", True))
    try:
        on_disk = sorted(p.name for p in (state / "agents").iterdir() if p.is_dir())
    except OSError:
        on_disk = []
    for name in on_disk:
        if name not in seen:
            seen.add(name)
            agents.append(Agent(name, state / "agents" / name / "agent", state / "agents" / name / "sessions", False))
    known = {a.database.resolve() for a in agents}
    for aid, db in registry(state):
        if db in known:
            continue
        known.add(db)
        mine = next((a for a in agents if a.id == aid), None)
        if mine is not None and not mine.database.exists():
            agents[agents.index(mine)] = Agent(aid, mine.dir, mine.sessions, mine.configured, db)
        else:
            agents.append(Agent(aid, db.parent, state / "agents" / aid / "sessions", False, db))
    # plugins' stores
    if _clean(env.get("LCM_DATABASE_PATH")):
        lcm, lcm_origin = _user_path(env["LCM_DATABASE_PATH"], home), "LCM_DATABASE_PATH"
    else:
        lcm, lcm_origin = state / "lcm.db", "state directory"
    ws_cfg = None
    if isinstance(cfg, dict):
        d = cfg.get("agents", {}).get("defaults") if isinstance(cfg.get("agents"), dict) else None
        ws_cfg = d.get("workspace") if isinstance(d, dict) else None
    if _clean(env.get("OPENCLAW_WORKSPACE_DIR")):
        ws = _user_path(env["OPENCLAW_WORKSPACE_DIR"], home)
    elif isinstance(ws_cfg, str) and ws_cfg.strip():
        ws = _user_path(ws_cfg, home)
    else:
        ws = state / "workspace"
    hint = ("set OPENCLAW_STATE_DIR to OpenClaw's state directory (or OPENCLAW_HOME to the home that holds "
            "its .openclaw), or pass --home DIR")
    return Layout(state, origin, cfg_path, cfg_origin, cfg, problem, tuple(agents), lcm, lcm_origin, ws, hint)


def at(state_dir, env=None) -> Layout:
    """The layout of the state directory `state_dir` (as `--home` names it; the environment
    still says where the config and lcm.db are when it names them)."""
    return resolve(env, state_dir=str(state_dir))
