"""OpenClaw transcript entries, wherever they are kept (a JSONL file, the agent database,
a cold or deletion archive): what each put in the model's context, and what each
compaction condensed.

A transcript is a tree: every entry names its `parentId`; the active branch is the path
from the latest entry back to the root (a `leaf` entry moves the leaf: an entry whose
parent is a leaf entry hangs under that leaf's `targetId`). OpenClaw builds the model's
context from that path (packages/agent-core session.ts `resolveSessionContextWindow`):
the last boundary on it (a `compaction` or a `reset`), the entries from the boundary's
`firstKeptEntryId` (when it is on the path) up to the boundary, and everything after it;
of those, `message` (not `excludeFromContext`), `custom_message` and `branch_summary` are
context, the others (`custom` model snapshots, labels, model changes, ...) are not, though
a `firstKeptEntryId` may point at one. A reset keeps only the user and assistant turns
before it, and no summary.

So a compaction C condensed: the previous boundary's summary (when it is a compaction),
and the context entries on C's path between that boundary's first kept entry and C's own
first kept entry. `Window` holds the entries since the last boundary's first kept entry,
bounded (about twice `limit` characters of text; the input given is its last `limit`), and
answers that at each compaction.
"""
from __future__ import annotations

import json
from typing import Optional

from ...records import SummaryRecord
from ...stores.source import keep_tail

BOUNDARIES = ("compaction", "reset")
CONTEXT_TYPES = ("message", "custom_message", "branch_summary")


def _blocks_text(content) -> str:
    """The text of a message's content: a string, or text blocks and tool calls."""
    if isinstance(content, str):
        return content
    out = []
    if isinstance(content, list):
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                out.append(b["text"])
            elif b.get("type") == "toolCall":
                args = b.get("arguments")
                out.append(f"{b.get('name', 'tool')}({json.dumps(args, ensure_ascii=False)[:2000] if args else ''})")
    return "\n".join(out)


def entry_text(entry: dict) -> Optional[str]:
    """What a transcript entry put in the model's context, as text (None: nothing)."""
    t = entry.get("type")
    if t == "message":
        msg = entry.get("message")
        if not isinstance(msg, dict) or msg.get("excludeFromContext") is True:
            return None
        role = msg.get("role") or "message"
        if role == "bashExecution":
            text = f"{msg.get('command') or ''}\n{msg.get('output') or ''}"
        elif role in ("branchSummary", "compactionSummary"):
            text = msg.get("summary") if isinstance(msg.get("summary"), str) else ""
        else:
            text = _blocks_text(msg.get("content"))
        return f"{role}: {text}" if text.strip() else None
    if t == "custom_message":
        text = _blocks_text(entry.get("content"))
        return text if text.strip() else None
    if t == "branch_summary" and isinstance(entry.get("summary"), str):
        return entry["summary"] if entry["summary"].strip() else None
    return None


def _count(v) -> Optional[int]:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 10 ** 15 else None


def compaction_record(entry: dict, session: str, source: str, between: int) -> SummaryRecord:
    """One compaction entry as a record: id = the entry's id, stale scope = the session,
    input tokens = tokensBefore, the context after it = tokensAfter (when OpenClaw measured it)."""
    summary = entry.get("summary")
    before = _count(entry.get("tokensBefore"))
    after = entry.get("tokensAfter")
    after = int(after) if isinstance(after, (int, float)) and not isinstance(after, bool) and 0 <= after < 10 ** 15 \
        else None
    return SummaryRecord(
        id=str(entry.get("id") or "?"),
        content=summary if isinstance(summary, str) else ("" if summary is None else str(summary)),
        source=source, input_tokens=before, stale_scope=f"session:{session}",
        context_before=before, context_after=after,
        context_source="OpenClaw's tokensBefore/tokensAfter" if after is not None else "OpenClaw's tokensBefore",
        meta={"session": session, "timestamp": entry.get("timestamp"), "tokens_before": before,
              "tokens_after": after, "entries_since_previous": between, "from_hook": bool(entry.get("fromHook"))})


class _Node:
    __slots__ = ("parent", "text", "at", "type", "kept", "role")

    def __init__(self, parent, text, at, typ, kept, role):
        self.parent, self.text, self.at, self.type, self.kept, self.role = parent, text, at, typ, kept, role


class Window:
    """The entries a session's next compaction may condense (see the module doc).

    `complete`: the window was read from the transcript's start (or from where an earlier
    read said it starts); an incremental read that starts mid-way gives no input text for
    a compaction whose path leaves what it read."""

    def __init__(self, limit: int, complete: bool = True):
        self.limit = limit
        self.complete = complete
        self.nodes = {}          # entry id -> _Node, in the order read
        self.chars = 0
        self.last = None         # the last entry read: the parent of one that names none (version 1)

    def _ids(self, entry: dict, at) -> tuple:
        """(id, parent id): the entry's own, or for a transcript older than ids and parents
        (version 1: a list) a made-up id and the entry before it."""
        eid = entry.get("id")
        eid = eid if isinstance(eid, str) else f"@{at}"
        if entry.get("type") == "leaf":
            parent = entry.get("targetId")
        elif "parentId" in entry:
            parent = entry.get("parentId")
        else:
            parent = self.last
        self.last = eid
        return eid, (parent if isinstance(parent, str) else None)

    def add(self, entry: dict, at) -> None:
        """Any entry (a compaction goes through `close`)."""
        typ = entry.get("type")
        if typ == "session":
            return
        eid, parent = self._ids(entry, at)
        text = entry_text(entry) if typ in CONTEXT_TYPES else None
        role = (entry.get("message") or {}).get("role") if typ == "message" and isinstance(entry.get("message"), dict) \
            else None
        if typ == "reset":
            kept = entry.get("firstKeptEntryId")
        else:
            kept = None
        old = self.nodes.pop(eid, None)
        if old is not None and old.text:
            self.chars -= len(old.text) + 1
        self.nodes[eid] = _Node(parent, text, at, typ, kept, role)
        if text:
            self.chars += len(text) + 1
            self._trim()

    def _trim(self) -> None:
        """Keep about twice `limit` characters: the oldest texts go first (their entries stay)."""
        if self.chars <= 2 * self.limit:
            return
        for node in self.nodes.values():
            if node.text:
                self.chars -= len(node.text) + 1
                node.text = None
                if self.chars <= 2 * self.limit:
                    return

    def _path(self, leaf: Optional[str]) -> tuple:
        """(the entries from the previous boundary's first kept entry up to `leaf`, oldest
        first, the boundary itself left out; the boundary node or None; whether the path
        is known whole: it reached the root, or the boundary and what it kept)."""
        back, boundary, seen = [], None, set()
        cur, whole = leaf, True
        while cur is not None and cur not in seen:
            seen.add(cur)
            node = self.nodes.get(cur)
            if node is None:
                whole = False            # read from mid-way, or forgotten
                break
            if boundary is None and node.type in BOUNDARIES:
                boundary = node
                if not node.kept:
                    break
            else:
                back.append((cur, node))
                if boundary is not None and cur == boundary.kept:
                    break
            cur = node.parent
        path = back[::-1]
        if boundary is not None and boundary.kept and not (path and path[0][0] == boundary.kept):
            # its first kept entry is not on this path: nothing before the boundary was kept
            path = [p for p in path if p[1].at > boundary.at]
        return path, boundary, whole

    def close(self, entry: dict, at) -> tuple:
        """A compaction entry: (the text it condensed or None when not known, the previous
        compaction's summary or None)."""
        eid, parent = self._ids(entry, at)
        path, boundary, whole = self._path(parent)
        previous = boundary.text if boundary is not None and boundary.type == "compaction" else None
        text = None
        if whole or self.complete:
            kept = entry.get("firstKeptEntryId")
            idx = next((i for i, (eid, _) in enumerate(path) if eid == kept), None) if kept else None
            cut = path if idx is None else path[:idx]
            is_reset = boundary is not None and boundary.type == "reset"
            pieces = ([f"(previous summary) {previous}"] if previous else [])
            for _, node in cut:
                if not node.text:
                    continue
                if is_reset and node.at < boundary.at and node.role not in ("user", "assistant"):
                    continue            # a reset keeps only the turns before it
                pieces.append(node.text)
            if pieces:
                text = keep_tail(pieces, self.limit)
        summary = entry.get("summary")
        kept = entry.get("firstKeptEntryId")
        kept = kept if isinstance(kept, str) and kept in self.nodes else None   # else it kept nothing known
        self.nodes.pop(eid, None)
        self.nodes[eid] = _Node(parent, summary if isinstance(summary, str) and summary.strip() else None, at,
                                "compaction", kept, None)
        self._forget_before(kept, at)
        return text, previous

    def _forget_before(self, kept, at) -> None:
        """After a compaction, what lies before its first kept entry is behind it for good
        (on its branch; a later jump back to an older branch reads as not known whole)."""
        start = self.nodes[kept].at if isinstance(kept, str) and kept in self.nodes else at
        drop = [k for k, n in self.nodes.items() if n.at < start]
        for k in drop:
            n = self.nodes.pop(k)
            if n.text:
                self.chars -= len(n.text) + 1

    def start(self):
        """Where a later read must start to see this window again (the oldest entry kept)."""
        return min((n.at for n in self.nodes.values()), default=None)


class SessionReader:
    """Entries of one session in order in, compaction records out: each with the text it
    condensed (when known), its previous summary, and how many entries came between."""

    def __init__(self, session: str, source_kind: str, limit: int, complete: bool = True, between: int = 0):
        self.session = session
        self.kind = source_kind
        self.window = Window(limit, complete)
        self.between = between
        self.bad = 0

    def feed(self, entry, at, old: bool = False) -> Optional[SummaryRecord]:
        """One entry (`old`: read again for the window only). A compaction gives its record."""
        if not isinstance(entry, dict):
            if not old:
                self.bad += 1
            return None
        if entry.get("type") != "compaction":
            self.window.add(entry, at)
            if not old and entry.get("type") != "session":
                self.between += 1
            return None
        text, previous = self.window.close(entry, at)
        if old:
            return None
        rec = compaction_record(entry, self.session, self.kind, self.between)
        rec.input_text = text
        rec.previous = previous
        self.between = 0
        return rec
