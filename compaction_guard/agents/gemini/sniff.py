"""Whether a file is a Gemini CLI session, from its first bytes: read for every file the user names,
so without the store's module (its import is paid only for its own files)."""
from __future__ import annotations


def looks_like_session(head: bytes) -> bool:
    """A Gemini CLI session file: its first line the metadata (`sessionId`, `projectHash`)."""
    first = head.lstrip()[:600].replace(b" ", b"")
    return first.startswith(b'{"sessionId":') and b'"projectHash":' in first
