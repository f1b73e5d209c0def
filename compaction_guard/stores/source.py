"""Source: one store the check reads, streamed.

A source yields SummaryRecords beyond its watermark (all of them with --all),
in the store's order, and afterwards reports its new watermark. `history(scope)`
gives the contents of summaries of a stale scope that an incremental check
skipped, so staleness is still judged against them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Optional

from ..tokens import content_key


def keep_tail(parts: list, limit: int) -> str:
    """The parts joined by newlines, at most the last `limit` characters (the latest state
    matters most; what an over-long input costs the detectors stays bounded)."""
    text = "\n".join(parts)
    return text[-limit:] if len(text) > limit else text


class Source:
    kind = "source"            # shown to people and in results' `source`
    # the input text a store gives a summary is cut to its last this many characters
    # (Settings.max_input_chars; operations sets it)
    input_chars = 200_000

    def __init__(self, path: Path):
        self.path = Path(path)
        self.notes: list = []   # warnings a person should see (skipped lines, ...)
        self.records_read = 0

    @property
    def key(self) -> str:
        """Identifies the store in the state's watermarks."""
        return f"{self.kind}:{self.path}"

    def count_key(self, record) -> str:
        """The summary's identity across checks, counted once ever (ledger.py): the
        store's identity and the record's own id. By default the store is its file
        (resolved path); stores with ids of their own say who they are."""
        if not hasattr(self, "_resolved"):
            self._resolved = str(self.path.resolve())
        return f"{self.kind}\x1f{self._resolved}\x1f{record.id}"

    def resume_point(self, wm: dict) -> tuple:
        """(stat, offset) of an append-only file: where the last check stopped, or 0 when the
        file was replaced (another inode) or shortened since (said in the notes)."""
        from ..errors import GuardError
        try:
            st = self.path.stat()
        except OSError as exc:
            raise GuardError(f"{self.path}: cannot be read ({exc.strerror}); check its permissions") from None
        offset = int(wm.get("offset") or 0)
        if wm.get("inode") not in (None, st.st_ino) or offset > st.st_size:
            if offset:
                self.notes.append(f"{self.path}: replaced or shortened since the last check; read again from the start")
            offset = 0
        return st, offset

    def count(self, watermark: Optional[dict]) -> Optional[int]:
        """How many records `records(watermark)` will yield, when cheap to know."""
        return None

    def records(self, watermark: Optional[dict]) -> Iterator:
        raise NotImplementedError

    def new_watermark(self) -> Optional[dict]:
        return None

    def history(self, scope: str, record=None) -> Iterable[tuple]:
        """(id, content key) of the summaries of `scope` that come before `record` and that
        the check does not hold in memory: skipped by an incremental check, or forgotten to
        bound memory (tokens.content_key: no summary text is kept)."""
        return ()

    def summaries(self, ids: list) -> Iterable[tuple]:
        """(id, content) of the store's summaries with these ids (a condensed summary's
        sources, for tainted_lineage), as many as the store has."""
        return ()

    def recent(self, scope: str) -> Iterable[tuple]:
        """(timestamp, tokens_before) of the last compactions in `scope` before this check."""
        return ()

    def covered(self, watermark: Optional[dict]):
        """A predicate: was this record read before `watermark`? Counting asks the ledger;
        this tells it what a guard older than the ledger already counted."""
        return lambda record: False

    def close(self) -> None:
        pass

    def describe(self) -> dict:
        return {"name": self.kind, "path": str(self.path), "summaries": self.records_read}


class ListSource(Source):
    """A store that is read whole (a summaries file, a DAG state)."""

    def __init__(self, kind: str, path: Path, records: list, note: Optional[str] = None, incremental: bool = False,
                 identity: Optional[str] = None):
        super().__init__(path)
        self.kind = kind
        self.identity = identity       # a store whose ids are its own (a DAG's node ids), wherever its file is
        self._records = records
        self._incremental = incremental
        self._seen = []
        if note:
            self.notes.append(note)

    def count(self, watermark):
        return len(self._records)

    def count_key(self, record) -> str:
        return f"{self.identity}\x1f{record.id}" if self.identity else super().count_key(record)

    def records(self, watermark):
        """All records, or with a watermark (incremental stores) those not checked before:
        `counted`, a predicate over records (the ledger's), and the `ids` an older
        version of the guard kept."""
        wm = watermark or {}
        done = set(wm.get("ids", [])) if self._incremental else set()
        counted = wm.get("counted") if self._incremental else None
        self._skipped = {}
        for r in self._records:
            self._seen.append(r.id)
            if r.id in done or (counted is not None and counted(r)):
                self._skipped.setdefault(r.stale_scope, []).append((r.id, content_key(r.content or "")))
                continue
            self.records_read += 1
            yield r

    def new_watermark(self):
        return None          # read whole every time; the ledger says what was counted

    def history(self, scope, record=None):
        return getattr(self, "_skipped", {}).get(scope, ())

    def summaries(self, ids):
        if not hasattr(self, "_by_id"):
            self._by_id = {r.id: r for r in self._records}
        return [(i, self._by_id[i].content) for i in ids if i in self._by_id]

    def covered(self, watermark):
        done = set((watermark or {}).get("ids", []))
        return lambda record: record.id in done


def open_store(path: Path):
    """A store file opened for reading, or the one-line error naming it."""
    from ..errors import GuardError
    try:
        return open(path, "rb")
    except OSError as exc:
        raise GuardError(f"{path}: cannot be read ({exc.strerror}); check its permissions") from None


def json_lines(fh, pos: int) -> Iterator:
    """(offset, end, object) of each complete line of an append-only JSONL file from `pos` on:
    None for a line that is not a JSON object, {} for a blank one. A last line still being
    written (no newline yet) ends the reading."""
    import json
    fh.seek(pos)
    for raw in fh:
        if not raw.endswith(b"\n"):
            return
        start, pos = pos, pos + len(raw)
        if not raw.strip():
            yield start, pos, {}
            continue
        try:
            d = json.loads(raw)
        except (ValueError, RecursionError):
            d = None
        yield start, pos, d if isinstance(d, dict) else None


class SessionFileSource(Source):
    """One agent's append-only session file (a transcript, a rollout, a chat session): read
    from the byte offset where the last check stopped; each record's `meta` holds its
    `offset` and its session under `session_meta`, which with the record's id is what is
    counted once (so a file the agent moves or copies counts nothing twice)."""

    session_meta = "session"        # the meta key naming the record's session

    def __init__(self, path: Path):
        super().__init__(path)
        self._offset = 0
        self._inode = None
        self._seen = []             # (id, content key) of the records yielded, for staleness
        self._history = []
        self.bad_lines = 0

    def _start(self, watermark) -> int:
        """The offset to yield records from (resume_point), the earlier records' history read
        back from `watermark`."""
        wm = watermark or {}
        st, offset = self.resume_point(wm)
        self._inode = st.st_ino
        self._history = [tuple(x) for x in wm.get("history", [])] if offset else []
        return offset

    def _yielded(self, rec):
        self.records_read += 1
        self._seen.append((rec.id, content_key(rec.content)))
        return rec

    def _finish(self, pos: int) -> None:
        self._offset = pos
        if self.bad_lines:
            self.notes.append(f"{self.path}: skipped {self.bad_lines} line(s) that are not valid JSON")

    def new_watermark(self) -> Optional[dict]:
        return {"offset": self._offset, "inode": self._inode,
                "history": [list(x) for x in (self._history + self._seen)[-200:]]}

    def history(self, scope, record=None):
        return self._history

    def count_key(self, record) -> str:
        return f"{self.kind}\x1f{record.meta.get(self.session_meta)}\x1f{record.id}"

    def covered(self, watermark):
        wm = watermark or {}
        same = wm.get("inode") == self._inode
        top = int(wm.get("offset") or 0)
        return lambda record: same and record.meta.get("offset", 0) < top
