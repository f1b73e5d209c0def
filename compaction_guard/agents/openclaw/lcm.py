"""lossless-claw's lcm.db, read-only and streamed.

Every row of `summaries`, in insertion (rowid) order. A leaf's input is its source
messages (summary_messages -> messages, in their ordinal order, `role: content`), after
the conversation's previous summary (lossless-claw writes a leaf with it as context); a
condensed node's input is its source summaries (summary_parents: its
`parent_summary_id` rows are the SOURCE summaries, the naming is inverted). Both as
text (what language_drift, ungrounded and the identifier checks read; at most
`input_chars` of it, the latest) and as lossless-claw's own token_count totals (the
inflation ratio: the summary is counted the same way, token_counter "lcm"). The texts
are read batch by batch with their summaries: never all at once. Rows with model = 'emergency-fallback' were written with no
model at all: L3 usage. Stale scope: the conversation.

Path: $LCM_DATABASE_PATH, else <OpenClaw state directory>/lcm.db (layout.py).
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Optional

from ...tokens import content_key
from ...errors import GuardError
from ...records import SummaryRecord
from ... import sqlite_ro
from ...stores.source import Source, keep_tail

KIND = "lossless-claw"
REQUIRED = {"summaries": {"summary_id", "conversation_id", "content"}}
BATCH = 500


def looks_like_lcm(cols: dict) -> bool:
    return "summaries" in cols and {"summary_id", "conversation_id", "content"} <= cols["summaries"]


def _tokens(n) -> int:
    """A token total from SQLite's TOTAL() (a float, so a damaged row cannot overflow it)."""
    try:
        return max(0, min(int(n or 0), 10 ** 15))
    except (TypeError, ValueError, OverflowError):
        return 0


class LcmSource(Source):
    kind = KIND

    def __init__(self, path: Path, con=None):
        super().__init__(path)
        self.con = con or sqlite_ro.connect(path, "lossless-claw database (lcm.db)")
        cols = sqlite_ro.tables(self.con)
        if not looks_like_lcm(cols):
            self.con.close()
            raise GuardError(f"{self.path}: a SQLite database, but not lossless-claw's schema (no summaries table with "
                             "summary_id, conversation_id, content); check the path")
        self.cols = cols
        self.has_model = "model" in cols["summaries"]
        self.has_kind = "kind" in cols["summaries"]
        self.has_msgs = "summary_messages" in cols and "messages" in cols and "token_count" in cols.get("messages", set())
        self.has_parents = "summary_parents" in cols and "token_count" in cols["summaries"]
        self._max_rowid = 0
        self._start = 0
        self._last = OrderedDict()      # conversation -> its last summary's content (bounded)
        self._file_state = sqlite_ro.file_state(self.path) if sqlite_ro.is_immutable(self.con) else None

    # --------------------------------------------------------------- watermark
    def _start_rowid(self, watermark: Optional[dict]) -> int:
        start = int((watermark or {}).get("rowid") or 0)
        top = self.con.execute("SELECT coalesce(max(rowid), 0) FROM summaries").fetchone()[0]
        if start > top:
            note = (f"{self.path}: fewer summaries than at the last check (rows deleted, or the database replaced); "
                    "reading all of them (those counted before are not counted again)")
            if note not in self.notes:          # count() and records() both ask
                self.notes.append(note)
            start = 0
        return start

    def count(self, watermark):
        self._start = self._start_rowid(watermark)
        return self.con.execute("SELECT count(*) FROM summaries WHERE rowid > ?", (self._start,)).fetchone()[0]

    def new_watermark(self):
        return {"rowid": self._max_rowid or self._start}

    # --------------------------------------------------------------- records
    def records(self, watermark):
        start = self._start_rowid(watermark)
        self._start = self._max_rowid = start
        select = ("SELECT rowid, summary_id, conversation_id, content, "
                  + ("kind, " if self.has_kind else "NULL, ")
                  + ("model " if self.has_model else "NULL ")
                  + "FROM summaries WHERE rowid > ? ORDER BY rowid LIMIT ?")
        last = start
        while True:
            rows, inputs = self._batch(select, last)
            if not rows:
                break
            ids = [r[1] for r in rows]
            parents = self._parents(ids) if self.has_parents else {}
            texts = self._input_texts(ids)
            for rowid, sid, conv, content, kind, model in rows:
                if sid in texts and kind != "condensed":
                    # lossless-claw writes a leaf with the conversation's previous summary as
                    # context (`previousSummary`): what it carries forward came from there
                    before = self._previous(conv, rowid)
                    if before:
                        texts[sid] = keep_tail([f"(previous summary) {before}", texts[sid]], self.input_chars)
                self._remember(conv, content)
                last = rowid
                self._max_rowid = rowid
                self.records_read += 1
                yield SummaryRecord(
                    id=str(sid), content=content if isinstance(content, str) else ("" if content is None else str(content)),
                    source=KIND, input_tokens=inputs.get(sid), input_text=texts.pop(sid, None),
                    stale_scope=f"lcm:{conv}", token_counter="lcm",
                    meta={"fallback": model == "emergency-fallback", "conversation_id": conv, "kind": kind,
                          "model": model, "rowid": rowid, "sources": parents.get(sid, [])})

    def _batch(self, select: str, last: int) -> tuple:
        """One batch of rows and their inputs. A database opened immutable (WAL, no writer)
        takes no lock: if a writer starts during the check (a -wal file appears, a
        checkpoint rewrites pages of the file), what is read may mix old and new pages.
        So the file is looked at before and after every batch; once it changed, the
        connection becomes `mode=ro` (it sees the writer's WAL and takes the shared locks)
        and the batch is read (again) through it."""
        if not sqlite_ro.is_immutable(self.con):
            rows = self.con.execute(select, (last, BATCH)).fetchall()
            return rows, (self._input_tokens([r[1] for r in rows]) if rows else {})
        if self._file_state is None:
            self._file_state = sqlite_ro.file_state(self.path)
        rows = inputs = None
        if sqlite_ro.file_state(self.path) == self._file_state:
            rows = self.con.execute(select, (last, BATCH)).fetchall()
            inputs = self._input_tokens([r[1] for r in rows]) if rows else {}
        if sqlite_ro.file_state(self.path) != self._file_state:
            self.con.close()
            self.con = sqlite_ro.connect(self.path, "lossless-claw database (lcm.db)", shared=True)
            self.notes.append(f"{self.path}: a writer started during the check; read on through its lock, "
                              "what it may have touched read again")
            rows = self.con.execute(select, (last, BATCH)).fetchall()
            inputs = self._input_tokens([r[1] for r in rows]) if rows else {}
        return rows, inputs

    def _parents(self, ids: list) -> dict:
        """{condensed summary id: [the summaries it was made from]} (summary_parents)."""
        out = {}
        marks = ",".join("?" * len(ids))
        for sid, pid in self.con.execute(f"SELECT summary_id, parent_summary_id FROM summary_parents WHERE summary_id "
                                         f"IN ({marks}) ORDER BY summary_id, ordinal", ids):
            out.setdefault(sid, []).append(str(pid))
        return out

    def _previous(self, conv, rowid: int) -> Optional[str]:
        """The content of the conversation's summary before `rowid`: remembered from this read,
        else read from the database (once per conversation)."""
        if conv in self._last:
            self._last.move_to_end(conv)
            return self._last[conv]
        row = self.con.execute("SELECT content FROM summaries WHERE conversation_id = ? AND rowid < ? "
                               "ORDER BY rowid DESC LIMIT 1", (conv, rowid)).fetchone()
        return row[0] if row and isinstance(row[0], str) else None

    def _remember(self, conv, content) -> None:
        """The last summary of the most recently met conversations (bounded)."""
        self._last[conv] = content if isinstance(content, str) else None
        self._last.move_to_end(conv)
        if len(self._last) > 2000:
            self._last.popitem(last=False)

    def _input_texts(self, ids: list) -> dict:
        """{summary id: the text it condensed}: a leaf's messages, a condensed node's sources."""
        parts = {}
        marks = ",".join("?" * len(ids))
        if self.has_msgs and "content" in self.cols.get("messages", set()):
            role = "m.role" if "role" in self.cols["messages"] else "NULL"
            order = "sm.ordinal" if "ordinal" in self.cols.get("summary_messages", set()) else "sm.rowid"
            for sid, who, text in self.con.execute(
                    f"SELECT sm.summary_id, {role}, m.content FROM summary_messages sm JOIN messages m "
                    f"ON m.message_id = sm.message_id WHERE sm.summary_id IN ({marks}) ORDER BY sm.summary_id, {order}",
                    ids):
                if isinstance(text, str) and text:
                    parts.setdefault(sid, []).append(f"{who}: {text}" if who else text)
        if "summary_parents" in self.cols:
            for sid, text in self.con.execute(
                    f"SELECT sp.summary_id, p.content FROM summary_parents sp JOIN summaries p "
                    f"ON p.summary_id = sp.parent_summary_id WHERE sp.summary_id IN ({marks}) "
                    f"ORDER BY sp.summary_id, sp.ordinal", ids):
                if isinstance(text, str) and text:
                    parts.setdefault(sid, []).append(text)
        return {sid: keep_tail(p, self.input_chars) for sid, p in parts.items()}

    def summaries(self, ids):
        out = []
        for i in range(0, len(ids), 500):
            chunk = list(ids[i:i + 500])
            marks = ",".join("?" * len(chunk))
            out += [(str(sid), c if isinstance(c, str) else ("" if c is None else str(c))) for sid, c in
                    self.con.execute(f"SELECT summary_id, content FROM summaries WHERE summary_id IN ({marks})", chunk)]
        return out

    def _input_tokens(self, ids: list) -> dict:
        out = {}
        marks = ",".join("?" * len(ids))
        if self.has_msgs:
            for sid, n in self.con.execute(
                    f"SELECT sm.summary_id, TOTAL(m.token_count) FROM summary_messages sm "
                    f"JOIN messages m ON m.message_id = sm.message_id WHERE sm.summary_id IN ({marks}) "
                    f"GROUP BY sm.summary_id", ids):
                out[sid] = _tokens(n)
        if self.has_parents:
            for sid, n in self.con.execute(
                    f"SELECT sp.summary_id, TOTAL(p.token_count) FROM summary_parents sp "
                    f"JOIN summaries p ON p.summary_id = sp.parent_summary_id WHERE sp.summary_id IN ({marks}) "
                    f"GROUP BY sp.summary_id", ids):
                out[sid] = out.get(sid, 0) + _tokens(n)
        return {k: v for k, v in out.items() if v > 0}

    def history(self, scope, record=None):
        """Summaries of a conversation before `record` (for staleness): those an
        incremental check skipped, or, after the tracker forgot the conversation, all."""
        if not scope.startswith("lcm:"):
            return ()
        before = (record.meta.get("rowid") if record is not None else None) or self._start + 1
        if before <= 1:
            return ()
        conv = scope[4:]
        return [(sid, content_key(c if isinstance(c, str) else ("" if c is None else str(c))))
                for sid, c in self.con.execute(
                    "SELECT summary_id, content FROM summaries WHERE conversation_id = ? AND rowid < ? ORDER BY rowid",
                    (conv, before))]

    def count_key(self, record) -> str:
        # lossless-claw's summary ids are its own (sum_<hash>), wherever the file is
        return f"{KIND}\x1f{record.id}"

    def covered(self, watermark):
        top = int((watermark or {}).get("rowid") or 0)
        return lambda record: record.meta.get("rowid", 0) <= top

    def close(self):
        self.con.close()
