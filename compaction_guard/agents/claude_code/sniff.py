"""Whether a file is Claude Code's, from its first bytes: read for every file the user names, so
without the store's module (its import is paid only for its own files)."""
from __future__ import annotations


def looks_like_transcript(head: bytes) -> bool:
    """Whether a file's first bytes are Claude Code's transcript lines: an entry type of its
    own and a sessionId, read from the bytes (its first line may be longer than the head)."""
    first = head.lstrip()[:1]
    if first != b"{" or b'"sessionId":' not in head:
        return False
    return any(k in head for k in (b'"type":"queue-operation"', b'"parentUuid":', b'"type":"file-history-snapshot"',
                                   b'"isSidechain":'))
