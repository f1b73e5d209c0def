"""Whether a file may be one of OpenClaw's (or its plugins'), from its first bytes, its name or its
parsed data: asked of every file the user names, so without the stores' modules (their import is
paid only for a file that may be theirs). stores.sniff says which store it is."""
from __future__ import annotations

import json


def might_be(probe) -> bool:
    """What stores.sniff needs before it can find a store: a SQLite file, a session's JSONL, an
    archive's name, or a memory-dag-compactor state."""
    name = probe.path.name
    return probe.is_sqlite or looks_like_session_jsonl(probe.head) or name.endswith(".zst") \
        or is_archive_name(name) or (probe.path.suffix.lower() in (".yaml", ".yml", ".json")
                                     and is_dag_state(probe.data()))


def is_dag_state(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("dag_nodes"), list)


def is_archive_name(name: str) -> bool:
    return ".jsonl.deleted." in name or ".jsonl.reset." in name


def looks_like_session_jsonl(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0].strip()
    try:
        entry = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(entry, dict) and entry.get("type") in ("session", "compaction", "message") and "id" in entry
