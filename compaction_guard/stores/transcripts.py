"""OpenClaw session transcripts: JSONL files and the per-agent SQLite database.

File-backed: $OPENCLAW_HOME/agents/<agentId>/sessions/<sessionId>.jsonl, one JSON
entry per line. Database-backed (OpenClaw 2026.7.2+):
$OPENCLAW_HOME/agents/<agentId>/agent/openclaw-agent.sqlite, table transcript_events
(session_id, seq, event_json | event_zstd). Either way a compaction entry is
{"type": "compaction", "id", "timestamp", "summary", "tokensBefore", "firstKeptEntryId", ...}:
one record, id = the entry's id, stale scope = the session, input tokens = tokensBefore,
input text = what the compaction condensed: the previous compaction's summary and the
message entries from the previous compaction's first kept entry up to this one's
(`role: text`, tool calls as `name(arguments)`; at most `input_chars`, the latest).

JSONL is read from the byte offset where the last check stopped (a file that
shrank or was replaced is read again from the start), the entries of the open window
(from the last compaction's first kept entry) read again for their text only. A line
that is not JSON, or a last line still being written, is skipped with a count, never
the file. The agent database gives input texts on a full read (the first check, or
--all); an incremental read gives tokensBefore only.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..tokens import content_key
from ..errors import GuardError
from ..records import SummaryRecord
from . import sqlite_ro
from .source import Source, keep_tail

JSONL_KIND = "openclaw-session"
BATCH = 500          # rows per page when an idle WAL agent database is read immutable
AGENT_DB_KIND = "openclaw-agent-db"


def _compaction_record(entry: dict, session: str, source: str, between: int) -> Optional[SummaryRecord]:
    if not isinstance(entry, dict) or entry.get("type") != "compaction":
        return None
    summary = entry.get("summary")
    tokens = entry.get("tokensBefore")
    tokens = int(tokens) if isinstance(tokens, (int, float)) and not isinstance(tokens, bool) and tokens > 0 else None
    return SummaryRecord(
        id=str(entry.get("id") or "?"), content=summary if isinstance(summary, str) else ("" if summary is None else str(summary)),
        source=source, input_tokens=tokens, stale_scope=f"session:{session}",
        meta={"session": session, "timestamp": entry.get("timestamp"), "tokens_before": tokens,
              "entries_since_previous": between, "from_hook": bool(entry.get("fromHook"))})


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
        if not isinstance(msg, dict):
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
        return entry["summary"]
    return None


class Window:
    """The text a session's next compaction condenses: the previous compaction's summary
    and the entries since its first kept entry, in bounded memory (about twice `limit`
    characters; the input given is the last `limit`)."""

    def __init__(self, limit: int, complete: bool):
        self.limit = limit
        self.complete = complete      # False: it started mid-way (an incremental read)
        self.parts = []               # (entry id, text, position)
        self.chars = 0
        self.previous = None
        self.compaction_at = None     # position of the last compaction entry

    def add(self, entry_id, text: str, at) -> None:
        self.parts.append((entry_id, text, at))
        self.chars += len(text) + 1
        while self.chars > 2 * self.limit and len(self.parts) > 1:
            self.chars -= len(self.parts.pop(0)[1]) + 1

    def start(self):
        """Where a later read must start to see this window again."""
        return self.parts[0][2] if self.parts else self.compaction_at

    def close(self, entry: dict, at) -> Optional[str]:
        """A compaction entry: the text it condensed (None if the window is not known whole)."""
        kept = entry.get("firstKeptEntryId")
        idx = next((i for i, p in enumerate(self.parts) if kept is not None and p[0] == kept), None)
        cut = self.parts if idx is None else self.parts[:idx]
        text = None
        if self.complete and (cut or self.previous):
            pieces = ([f"(previous summary) {self.previous}"] if self.previous else []) + [p[1] for p in cut]
            text = keep_tail(pieces, self.limit)
        # the next window is known whole unless its kept entries came before where this read started
        self.complete = idx is not None or kept is None or self.complete
        self.parts = [] if idx is None else self.parts[idx:]
        self.chars = sum(len(p[1]) + 1 for p in self.parts)
        summary = entry.get("summary")
        self.previous = summary if isinstance(summary, str) and summary.strip() else None
        self.compaction_at = at
        return text


def session_key(record) -> str:
    """A compaction entry's identity: OpenClaw's session id and the entry's id, the same
    whether the session lives in a JSONL file (any path, any inode) or the agent database."""
    return f"openclaw-session\x1f{record.meta.get('session')}\x1f{record.id}"


class SessionFileSource(Source):
    """One session JSONL file."""

    kind = JSONL_KIND

    def __init__(self, path: Path):
        super().__init__(path)
        self.session = path.stem
        self._offset = 0
        self._inode = None
        self._between = 0
        self._history, self._recent = [], []
        self._seen, self._seen_recent = [], []
        self.bad_lines = 0

    def records(self, watermark):
        wm = watermark or {}
        try:
            st = self.path.stat()
        except OSError as exc:
            raise GuardError(f"{self.path}: cannot be read ({exc.strerror}); check its permissions") from None
        offset = int(wm.get("offset") or 0)
        if wm.get("inode") not in (None, st.st_ino) or offset > st.st_size:
            if offset:
                self.notes.append(f"{self.path}: replaced or shortened since the last check; read again from the start")
            offset = 0
        self._history = [tuple(x) for x in wm.get("history", [])] if offset else []
        self._recent = [tuple(x) for x in wm.get("recent", [])] if offset else []
        self._inode = st.st_ino
        between = int(wm.get("between") or 0) if offset else 0
        # the open window's entries are read again (for their text) from where it starts
        replay = wm.get("window") if offset else 0
        replay = replay if isinstance(replay, int) and 0 <= replay <= offset else None
        window = Window(self.input_chars, complete=replay is not None)
        self._window = window
        try:
            fh = open(self.path, "rb")
        except OSError as exc:
            raise GuardError(f"{self.path}: cannot be read ({exc.strerror}); check its permissions") from None
        with fh:
            pos = replay if replay is not None else offset
            fh.seek(pos)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break            # a line still being written: read it next time
                line_start, pos = pos, pos + len(raw)
                if not raw.strip():
                    continue
                old = line_start < offset        # read again for the window's text only
                try:
                    entry = json.loads(raw)
                except (ValueError, RecursionError):
                    self.bad_lines += 0 if old else 1
                    continue
                if not isinstance(entry, dict):
                    between += 0 if old else 1
                    continue
                if entry.get("type") == "compaction":
                    text = window.close(entry, line_start)
                    if old:
                        continue
                else:
                    t = entry_text(entry)
                    if t is not None:
                        window.add(entry.get("id"), t, line_start)
                    between += 0 if old else 1
                    continue
                rec = _compaction_record(entry, self.session, self.kind, between)
                rec.input_text = text
                between = 0
                rec.meta["offset"] = line_start
                self.records_read += 1
                self._seen.append((rec.id, content_key(rec.content)))
                self._seen_recent.append((rec.meta.get("timestamp"), rec.meta.get("tokens_before")))
                yield rec
            self._offset = pos
        self._between = between
        if self.bad_lines:
            self.notes.append(f"{self.path}: skipped {self.bad_lines} line(s) that are not valid JSON")

    def new_watermark(self):
        # staleness and storms need the last compactions of the session: keys and figures only
        window = getattr(self, "_window", None)
        start = window.start() if window is not None else None
        return {"offset": self._offset, "inode": self._inode, "between": self._between,
                "window": start if isinstance(start, int) else self._offset,
                "history": [list(x) for x in (self._history + self._seen)[-200:]],
                "recent": [list(x) for x in (self._recent + self._seen_recent)[-20:]]}

    def history(self, scope, record=None):
        return self._history

    def recent(self, scope):
        return self._recent

    def count_key(self, record) -> str:
        return session_key(record)

    def covered(self, watermark):
        wm = watermark or {}
        same = wm.get("inode") == self._inode
        top = int(wm.get("offset") or 0)
        return lambda record: same and record.meta.get("offset", 0) < top


class AgentDbSource(Source):
    """An agent's openclaw-agent.sqlite: compaction events of every session."""

    kind = AGENT_DB_KIND

    def __init__(self, path: Path, con=None):
        super().__init__(path)
        self.con = con or sqlite_ro.connect(path, "OpenClaw agent database (openclaw-agent.sqlite)")
        cols = sqlite_ro.tables(self.con)
        te = cols.get("transcript_events")
        if not te or not {"session_id", "seq"} <= te or not ({"event_json", "event_zstd"} & te):
            self.con.close()
            raise GuardError(f"{self.path}: a SQLite database, but not an OpenClaw agent database (no transcript_events "
                             "with session_id, seq, event_json/event_zstd); check the path")
        self.has_json = "event_json" in te
        self.has_zstd = "event_zstd" in te
        self._max = 0
        self.bad_events = 0
        self._dctx = None

    def _decode(self, text, blob) -> Optional[dict]:
        raw = text
        if raw is None and blob is not None:
            try:
                import zstandard
            except ImportError:
                raise GuardError(f"{self.path}: holds zstd-compressed events; install zstandard (pip install zstandard)") from None
            if self._dctx is None:
                self._dctx = zstandard.ZstdDecompressor()
            try:
                raw = self._dctx.decompressobj().decompress(bytes(blob))
            except zstandard.ZstdError:
                return None
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return None

    def records(self, watermark):
        start = int((watermark or {}).get("rowid") or 0)
        top = self.con.execute("SELECT coalesce(max(rowid), 0) FROM transcript_events").fetchone()[0]
        if start > top:
            self.notes.append(f"{self.path}: fewer events than at the last check; checking all of them")
            start = 0
        self._start = self._max = start
        cols = ", ".join(["event_json" if self.has_json else "NULL", "event_zstd" if self.has_zstd else "NULL"])
        # counting the events between compactions needs every event of the session, in order;
        # on a full read each session's window gives its compactions their input text (rows
        # come session by session: one window at a time)
        between = {}
        full = start == 0
        window, window_of = None, None
        for rowid, session, seq, text, blob in self._rows(
                f"SELECT rowid, session_id, seq, {cols} FROM transcript_events WHERE rowid > ?", start):
            self._max = max(self._max, rowid)
            if full and session != window_of:
                window, window_of = Window(self.input_chars, complete=True), session
            if text is not None and '"compaction"' not in text and not full:
                between[session] = between.get(session, 0) + 1
                continue
            entry = self._decode(text, blob)
            if entry is None:
                self.bad_events += 1
                continue
            rec = _compaction_record(entry, str(session), self.kind, between.get(session, 0))
            if rec is None:
                if full and isinstance(entry, dict):
                    t = entry_text(entry)
                    if t is not None:
                        window.add(entry.get("id"), t, rowid)
                between[session] = between.get(session, 0) + 1
                continue
            if full:
                rec.input_text = window.close(entry, rowid)
            between[session] = 0
            rec.meta["seq"] = seq
            rec.meta["rowid"] = rowid
            self.records_read += 1
            yield rec
        if self.bad_events:
            self.notes.append(f"{self.path}: skipped {self.bad_events} event(s) that could not be decoded")

    def _rows(self, select: str, start: int):
        """The rows of `select` in (session_id, seq) order. Through `mode=ro`, one query: a
        snapshot. Through `immutable` (an idle WAL database: no lock) a writer starting
        during the check could tear a read, so the rows come in pages (keyset on the
        primary key) with the file looked at before and after each; once it changed, the
        connection becomes `mode=ro` and the rest, this page included, is read through
        it (as LcmSource._batch does)."""
        order = " ORDER BY session_id, seq"
        after = " AND (session_id, seq) > (?, ?)"
        if not sqlite_ro.is_immutable(self.con):
            yield from self.con.execute(select + order, (start,))
            return
        state = sqlite_ro.file_state(self.path)
        key = ()
        while True:
            rows = None
            if sqlite_ro.file_state(self.path) == state:
                rows = self.con.execute(select + (after if key else "") + order + " LIMIT ?",
                                        (start, *key, BATCH)).fetchall()
            if sqlite_ro.file_state(self.path) != state:
                self.con.close()
                self.con = sqlite_ro.connect(self.path, "OpenClaw agent database (openclaw-agent.sqlite)", shared=True)
                self.notes.append(f"{self.path}: a writer started during the check; read on through its lock, "
                                  "what it may have touched read again")
                yield from self.con.execute(select + (after if key else "") + order, (start, *key))
                return
            if not rows:
                return
            yield from rows
            key = (rows[-1][1], rows[-1][2])

    def new_watermark(self):
        return {"rowid": self._max}

    def count_key(self, record) -> str:
        return session_key(record)

    def covered(self, watermark):
        top = int((watermark or {}).get("rowid") or 0)
        return lambda record: record.meta.get("rowid", 0) <= top

    def history(self, scope, record=None):
        if not scope.startswith("session:") or not getattr(self, "_start", 0):
            return ()
        return [(str(e.get("id")), content_key(e["summary"])) for e in self._earlier(scope[8:])
                if isinstance(e.get("summary"), str)]

    def recent(self, scope):
        if not scope.startswith("session:") or not getattr(self, "_start", 0):
            return ()
        return [(e.get("timestamp"), e.get("tokensBefore")) for e in self._earlier(scope[8:])][-20:]

    def _earlier(self, session: str) -> list:
        """Compaction events of a session at or before the watermark."""
        cols = ", ".join(["event_json" if self.has_json else "NULL", "event_zstd" if self.has_zstd else "NULL"])
        out = []
        for _, text, blob in self.con.execute(f"SELECT rowid, {cols} FROM transcript_events WHERE session_id = ? "
                                              "AND rowid <= ? ORDER BY seq", (session, self._start)):
            if text is not None and '"compaction"' not in text:
                continue
            e = self._decode(text, blob)
            if isinstance(e, dict) and e.get("type") == "compaction":
                out.append(e)
        return out

    def close(self):
        self.con.close()


def session_files(home: Path) -> list:
    agents = home / "agents"
    if not agents.is_dir():
        return []
    return sorted(agents.glob("*/sessions/*.jsonl"))


def agent_dbs(home: Path) -> list:
    agents = home / "agents"
    if not agents.is_dir():
        return []
    return sorted(p for p in agents.glob("*/agent/openclaw-agent.sqlite") if p.is_file())


def looks_like_session_jsonl(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0].strip()
    try:
        entry = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(entry, dict) and entry.get("type") in ("session", "compaction", "message") and "id" in entry
