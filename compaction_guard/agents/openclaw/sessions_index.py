"""OpenClaw's session counters, read-only: each session key's SessionEntry.

OpenClaw 2026.9 keeps them in the agent database, `session_nodes.entry_json`
(`from_agent_db`); `agents/<agentId>/sessions/sessions.json`, a map from session key to
the same entry, is the legacy store (a migration input since 2026.7; `read`). An entry
has `sessionId` (the current transcript), `updatedAt`, the token counters `totalTokens`
(what the session holds) and `contextTokens` (the model's context window),
`totalTokensFresh` (false: the total is from before the last turn), and `compactionCount`.
The guard reads the counters to say which sessions are near their window: their next
compaction is the one that must work (`context_pressure`, operations.check).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ...errors import GuardError

MAX_BYTES = 64 << 20


@dataclass
class SessionUsage:
    agent: str
    key: str
    session_id: str
    total_tokens: int
    context_tokens: int
    compactions: Optional[int]
    path: Path
    fresh: Optional[bool] = None

    @property
    def scope(self) -> str:
        """The key the session's compaction verdicts are kept under (entries.py's stale_scope)."""
        return f"session:{self.session_id}"

    @property
    def share(self) -> float:
        return self.total_tokens / self.context_tokens if self.context_tokens else 0.0


def _int(v) -> Optional[int]:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None


def _usage(agent: str, key, e, path: Path) -> Optional[SessionUsage]:
    if not isinstance(e, dict) or not isinstance(e.get("sessionId"), str):
        return None
    total, window = _int(e.get("totalTokens")), _int(e.get("contextTokens"))
    if total is None or not window:
        return None
    fresh = e.get("totalTokensFresh")
    return SessionUsage(agent, str(key), e["sessionId"], total, window, _int(e.get("compactionCount")), path,
                        fresh if isinstance(fresh, bool) else None)


def from_agent_db(con, agent: str, path: Path) -> list:
    """The sessions of an agent database's session_nodes with both counters."""
    out = []
    for key, raw in con.execute("SELECT session_key, entry_json FROM session_nodes ORDER BY session_key"):
        try:
            e = json.loads(raw) if isinstance(raw, str) and len(raw) < MAX_BYTES else None
        except (ValueError, RecursionError):
            continue
        u = _usage(agent, key, e, path)
        if u is not None:
            out.append(u)
    return out


def read(path: Path) -> list:
    """The sessions of one sessions.json with both counters; a GuardError when it is not
    a JSON object (the caller reports it and goes on)."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise GuardError(f"{path}: over {MAX_BYTES >> 20} MB; not read")
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise GuardError(f"{path}: cannot be read ({exc.strerror}); check its permissions") from None
    except (ValueError, RecursionError):
        raise GuardError(f"{path}: not valid JSON (OpenClaw may be writing it); the next check reads it again") from None
    if not isinstance(data, dict):
        raise GuardError(f"{path}: not a map of session keys; check the file")
    agent = path.parents[1].name
    return [u for u in (_usage(agent, key, e, path) for key, e in data.items()) if u is not None]
