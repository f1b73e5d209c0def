"""memory-dag-compactor's state (openclaw-superpowers), read-only.

`$OPENCLAW_HOME/skill-state/memory-dag-compactor/state.yaml` holds `dag_nodes`
(id, depth, content, source_type, source_range, ...) and `dag_edges`. A leaf
(source_type "entries") summarizes entries of `$OPENCLAW_HOME/workspace/MEMORY.md`;
a condensed node (source_type "summaries") summarizes its child nodes. Entries are
split at lines starting "- ", "## " or a YYYY-MM-DD date and numbered e-0000, e-0001,
... in file order (REFERENCE.md section 1).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from ...errors import GuardError
from ...records import SummaryRecord

SOURCE = "memory-dag-compactor"
_ENTRY_START_RE = re.compile(r"^(?:- |## |\d{4}-\d{2}-\d{2})")


def memory_entries(text: str) -> dict:
    """{entry id: text} for MEMORY.md, in file order."""
    entries = []
    current = None
    for line in text.splitlines():
        if _ENTRY_START_RE.match(line):
            if current is not None:
                entries.append("\n".join(current))
            current = [line]
        elif current is not None:
            current.append(line)
    if current is not None:
        entries.append("\n".join(current))
    return {f"e-{i:04d}": e for i, e in enumerate(entries)}


def _ids(value) -> list:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return [p.strip() for p in str(value).split(",") if p.strip()]


def records(path: Path, data: dict, memory_text: Optional[str], source: str = SOURCE) -> list:
    """One record per DAG node, in state order, with its input text when known."""
    nodes = data.get("dag_nodes") or []
    by_id = {}
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise GuardError(f"{path}: dag_nodes[{i}] is a {type(n).__name__}, not a node mapping; "
                             "the state file is damaged, let memory-dag-compactor rebuild it")
        by_id[str(n.get("id", f"#{i + 1}"))] = n
    children = {}
    for e in data.get("dag_edges") or []:
        if isinstance(e, dict) and "parent_id" in e and "child_id" in e:
            children.setdefault(str(e["parent_id"]), []).append(str(e["child_id"]))
    entries = memory_entries(memory_text) if memory_text is not None else None
    out = []
    for i, n in enumerate(nodes):
        nid = str(n.get("id", f"#{i + 1}"))
        content = n.get("content")
        content = "" if content is None else str(content)
        src_ids = _ids(n.get("source_range"))
        input_text = None
        meta = {"depth": n.get("depth")}
        if n.get("source_type") == "summaries" or (not src_ids and nid in children):
            kids = src_ids or children.get(nid, [])
            meta["sources"] = [k for k in kids if k in by_id]      # condensed from these nodes (tainted_lineage)
            texts = [str(by_id[k].get("content") or "") for k in kids if k in by_id]
            if texts:
                input_text = "\n\n".join(texts)
        elif entries is not None and src_ids:
            texts = [entries[k] for k in src_ids if k in entries]
            if texts:
                input_text = "\n".join(texts)
        out.append(SummaryRecord(id=nid, content=content, source=source, input_text=input_text,
                                 stale_scope=f"{source}:{path}", meta=meta))
    return out
