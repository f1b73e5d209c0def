"""OpenClaw's session store: `agents/<agentId>/sessions/sessions.json`, read-only.

A map from session key to a SessionEntry (OpenClaw's src/config/sessions.ts; see its
docs, reference/session-management-compaction): `sessionId` (the current transcript),
`updatedAt`, the token counters `inputTokens`, `outputTokens`, `totalTokens` (what the
session holds) and `contextTokens` (the model's context window), and `compactionCount`.
The guard reads the counters to say which sessions are near their window: their next
compaction is the one that must work (`context_pressure`, operations.check).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import GuardError

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

    @property
    def share(self) -> float:
        return self.total_tokens / self.context_tokens if self.context_tokens else 0.0


def _int(v) -> Optional[int]:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None


def session_indexes(home: Path) -> list:
    return sorted(home.glob("agents/*/sessions/sessions.json"))


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
    out = []
    for key, e in data.items():
        if not isinstance(e, dict) or not isinstance(e.get("sessionId"), str):
            continue
        total, window = _int(e.get("totalTokens")), _int(e.get("contextTokens"))
        if total is None or not window:
            continue
        out.append(SessionUsage(agent, str(key), e["sessionId"], total, window, _int(e.get("compactionCount")), path))
    return out
