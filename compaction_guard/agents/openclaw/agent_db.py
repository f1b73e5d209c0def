"""An OpenClaw agent's database, `<agentDir>/openclaw-agent.sqlite` (OpenClaw 2026.7.2 and
later; schema of 2026.9: src/state/openclaw-agent-board-schema.ts), read-only.

- `transcript_events(session_id, seq, event_json | event_zstd, ...)`, PRIMARY KEY
  (session_id, seq): every session's entries (events of 1 KB or more that compress by 10%
  are stored as plain zstd frames). Read session by session in `seq` order; the
  watermark is, per session, the last `seq` checked, where its open window starts and
  how many entries came since its last compaction: the store's own keys, so a VACUUM
  (`openclaw doctor --session-sqlite compact`, which renumbers rowids: the table has no
  INTEGER PRIMARY KEY) loses nothing.
- `session_transcript_cold_archives`: sessions moved to the cold tier, their events taken
  out of transcript_events into a zstd archive, in the row (`storage = 'sqlite'`) or in
  `<sessions>/cold/<archive_name>`; each read once.
- `session_transcript_archives`: deleted and reset sessions' transcripts (`encoding`
  identity or zstd), the canonical copy of the `*.jsonl.deleted.*` / `*.jsonl.reset.*`
  files; each read once.
- `session_nodes.entry_json`: each session key's counters (`sessionId`, `totalTokens`,
  `contextTokens`, `compactionCount`, `totalTokensFresh`), for context pressure.

Each compaction event is one record (stores/entries.py), identified as in every other
copy of the session (transcripts.session_key).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ...errors import GuardError
from ...tokens import content_key
from ... import sqlite_ro
from . import sessions_index
from .entries import SessionReader
from ...stores.source import Source
from .transcripts import decompress, read_archive, session_key

KIND = "openclaw-agent-db"
BATCH = 500          # rows per page when an idle WAL database is read immutable
WHAT = "OpenClaw agent database (openclaw-agent.sqlite)"


class AgentDbSource(Source):
    """An agent's openclaw-agent.sqlite: compaction events of every session, hot, cold or archived."""

    kind = KIND

    def __init__(self, path: Path, con=None, agent: Optional[str] = None, sessions_dir: Optional[Path] = None):
        super().__init__(path)
        self.con = con or sqlite_ro.connect(path, WHAT)
        cols = sqlite_ro.tables(self.con)
        te = cols.get("transcript_events")
        if not te or not {"session_id", "seq"} <= te or not ({"event_json", "event_zstd"} & te):
            self.con.close()
            raise GuardError(f"{self.path}: a SQLite database, but not an OpenClaw agent database (no transcript_events "
                             "with session_id, seq, event_json/event_zstd); check the path")
        self.agent = agent or (self.path.parent.parent.name if self.path.parent.name == "agent" else self.path.stem)
        self.sessions_dir = sessions_dir or self.path.parent.parent / "sessions"
        self.cols = ", ".join(["event_json" if "event_json" in te else "NULL",
                               "event_zstd" if "event_zstd" in te else "NULL"])
        self.has_nodes = {"entry_json"} <= cols.get("session_nodes", set())
        self.has_cold = {"session_id", "archive_name", "storage"} <= cols.get("session_transcript_cold_archives", set())
        self.has_archives = {"session_id", "generation", "encoding", "archive_blob"} <= \
            cols.get("session_transcript_archives", set())
        self.has_identities = {"session_id", "event_type", "seq"} <= cols.get("transcript_event_identities", set())
        self.usages = []
        self.bad_events = 0
        self._dctx = None
        self._state = {}
        self._cold_done, self._archives_done = [], []
        self._marks = {}

    # -- reading -------------------------------------------------------------------
    def _decode(self, text, blob) -> Optional[dict]:
        raw = text
        if raw is None and blob is not None:
            import zstandard
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

    def _reconnect(self) -> None:
        self.con.close()
        self.con = sqlite_ro.connect(self.path, WHAT, shared=True)
        self.notes.append(f"{self.path}: a writer started during the check; read on through its lock")

    def _session_rows(self, session: str, start: int):
        """(rowid, seq, json, zstd) of one session from `start`, in seq order. Through
        `mode=ro` one query (a snapshot). Through `immutable` (an idle WAL database: no lock)
        a writer starting mid-read could tear it, so rows come in pages with the file looked
        at before and after each; once it changed, the rest is read through `mode=ro`."""
        select = f"SELECT rowid, seq, {self.cols} FROM transcript_events WHERE session_id = ? AND seq >= ?"
        if not sqlite_ro.is_immutable(self.con):
            yield from self.con.execute(select + " ORDER BY seq", (session, start))
            return
        state = sqlite_ro.file_state(self.path)
        at = start
        while True:
            rows = None
            if sqlite_ro.file_state(self.path) == state:
                rows = self.con.execute(select + " ORDER BY seq LIMIT ?", (session, at, BATCH)).fetchall()
            if sqlite_ro.file_state(self.path) != state:
                self._reconnect()
                yield from self.con.execute(select + " ORDER BY seq", (session, at))
                return
            if not rows:
                return
            yield from rows
            at = rows[-1][1] + 1

    def records(self, watermark):
        wm = watermark or {}
        old_state = wm.get("sessions") if isinstance(wm.get("sessions"), dict) else {}
        self._legacy_rowid = wm.get("rowid") if isinstance(wm.get("rowid"), int) else None
        self._old = old_state
        if self.has_nodes:
            try:
                self.usages = sessions_index.from_agent_db(self.con, self.agent, self.path)
            except Exception as exc:         # noqa: BLE001 - counters are extra; the transcripts still count
                self.notes.append(f"{self.path}: session counters not read ({exc})")
        tops = self.con.execute("SELECT session_id, max(seq) FROM transcript_events GROUP BY session_id "
                                "ORDER BY session_id").fetchall()
        state = {}
        for session, top in tops:
            session = str(session)
            prev = old_state.get(session)
            prev = prev if isinstance(prev, list) and len(prev) == 3 and all(isinstance(x, int) for x in prev) else None
            if prev is not None and top <= prev[0]:
                state[session] = prev
                continue
            last, wstart, between = prev if prev is not None else (-1, 0, 0)
            start = wstart if prev is not None and wstart <= last else 0
            reader = SessionReader(session, self.kind, self.input_chars, complete=prev is None, between=between)
            read_to = last
            for rowid, seq, text, blob in self._session_rows(session, start):
                old = seq <= last
                entry = self._decode(text, blob)
                if entry is None:
                    self.bad_events += 0 if old else 1
                    continue
                read_to = max(read_to, seq)
                rec = reader.feed(entry, seq, old)
                if rec is None:
                    continue
                rec.meta.update(seq=seq, rowid=rowid)
                self.records_read += 1
                yield rec
            ws = reader.window.start()
            state[session] = [read_to, ws if isinstance(ws, int) else read_to + 1, reader.between]
        self._state = state
        yield from self._cold(wm)
        yield from self._deleted(wm)
        if self.bad_events:
            self.notes.append(f"{self.path}: skipped {self.bad_events} event(s) that could not be decoded")

    def _cold(self, wm):
        """Sessions in the cold tier: their archives, each read once (by name)."""
        if not self.has_cold:
            return
        done = set(wm.get("cold") or [])
        blob = "archive_blob" if "archive_blob" in self._table_cols("session_transcript_cold_archives") else "NULL"
        for session, name, storage, data in self.con.execute(
                f"SELECT session_id, archive_name, storage, {blob} FROM session_transcript_cold_archives "
                "ORDER BY session_id").fetchall():
            self._cold_done.append(name)
            if name in done:
                continue
            where = self.sessions_dir / "cold" / str(name)
            try:
                raw = bytes(data) if storage == "sqlite" and data is not None else where.read_bytes()
                recs, bad = read_archive(decompress(raw, where), str(session), self.kind, self.input_chars)
            except OSError as exc:
                self.notes.append(f"{where}: the cold archive of session {session} that {self.path.name} lists "
                                  f"cannot be read ({exc.strerror}); its compactions were not checked (restore it "
                                  "from a backup)")
                continue
            except GuardError as exc:
                self.notes.append(str(exc))
                continue
            self.bad_events += bad
            for rec in recs:
                rec.meta.update(cold=True)
                self.records_read += 1
                yield rec

    def _deleted(self, wm):
        """Deleted and reset sessions' archived transcripts, each read once."""
        if not self.has_archives:
            return
        done = set(wm.get("archives") or [])
        for session, generation, encoding, data, name in self.con.execute(
                "SELECT session_id, generation, encoding, archive_blob, archive_name FROM session_transcript_archives "
                "ORDER BY created_at, session_id").fetchall():
            key = f"{session}\x1f{generation}"
            self._archives_done.append(key)
            if key in done or data is None:
                continue
            where = self.path.parent / str(name)
            try:
                raw = decompress(bytes(data), where) if encoding == "zstd" else bytes(data)
            except GuardError as exc:
                self.notes.append(str(exc))
                continue
            recs, bad = read_archive(raw, str(session), self.kind, self.input_chars)
            self.bad_events += bad
            for rec in recs:
                self.records_read += 1
                yield rec

    def _table_cols(self, table: str) -> set:
        return {row[1] for row in self.con.execute(f"PRAGMA table_info('{table}')")}

    def archive_names(self) -> set:
        """Names of the archive files this database holds the canonical copy of."""
        names = set()
        if self.has_archives:
            names.update(str(n) for (n,) in self.con.execute("SELECT archive_name FROM session_transcript_archives"))
        return names

    # -- what the check keeps ----------------------------------------------------------
    def new_watermark(self):
        return {"v": 2, "sessions": self._state, "cold": sorted(set(self._cold_done))[-10000:],
                "archives": sorted(set(self._archives_done))[-10000:]}

    def count_key(self, record) -> str:
        return session_key(record)

    def covered(self, watermark):
        wm = watermark or {}
        if isinstance(wm.get("rowid"), int):          # a guard older than the per-session watermark
            top = wm["rowid"]
            return lambda record: record.meta.get("rowid", 0) <= top and not record.meta.get("cold")
        sessions = wm.get("sessions") if isinstance(wm.get("sessions"), dict) else {}

        def seen(record):
            s = sessions.get(str(record.meta.get("session")))
            return isinstance(s, list) and "seq" in record.meta and record.meta["seq"] <= s[0]
        return seen

    def _earlier(self, session: str) -> list:
        """Compaction events of a session up to the last checked seq (what an incremental
        read of it did not yield)."""
        prev = self._old.get(session) if isinstance(getattr(self, "_old", None), dict) else None
        if not isinstance(prev, list) or not prev:
            return []
        out = []
        if self.has_identities:          # its index finds a session's compactions without reading the rest
            cols = ", ".join("NULL" if c == "NULL" else f"e.{c}" for c in self.cols.split(", "))
            rows = self.con.execute(
                f"SELECT {cols} FROM transcript_event_identities i JOIN transcript_events e "
                "ON e.session_id = i.session_id AND e.seq = i.seq WHERE i.session_id = ? "
                "AND i.event_type = 'compaction' AND i.seq <= ? ORDER BY i.seq", (session, prev[0]))
        else:
            rows = self.con.execute(f"SELECT {self.cols} FROM transcript_events WHERE session_id = ? AND seq <= ? "
                                    "ORDER BY seq", (session, prev[0]))
        for text, blob in rows:
            if text is not None and '"compaction"' not in text:
                continue
            e = self._decode(text, blob)
            if isinstance(e, dict) and e.get("type") == "compaction":
                out.append(e)
        return out

    def history(self, scope, record=None):
        if not scope.startswith("session:"):
            return ()
        return [(str(e.get("id")), content_key(e["summary"])) for e in self._earlier(scope[8:])
                if isinstance(e.get("summary"), str)]

    def recent(self, scope):
        if not scope.startswith("session:"):
            return ()
        return [(e.get("timestamp"), e.get("tokensBefore"), e.get("tokensAfter")) for e in self._earlier(scope[8:])][-20:]

    def close(self):
        self.con.close()
