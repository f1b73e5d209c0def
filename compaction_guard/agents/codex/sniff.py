"""Whether a file is a Codex rollout, from its first bytes: read for every file the user names, so
without the store's module (its import is paid only for its own files)."""
from __future__ import annotations


def looks_like_rollout(head: bytes) -> bool:
    """Whether a file's first bytes are a Codex rollout: its first line a `session_meta`."""
    first = head.lstrip()[:200]
    return first.startswith(b"{") and b'"type":"session_meta"' in first.replace(b" ", b"")
