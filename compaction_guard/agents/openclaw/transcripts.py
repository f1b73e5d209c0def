"""OpenClaw session transcripts kept as files, under `<state>/agents/<id>/sessions/`.

- `<session>.jsonl`: one JSON entry per line (the legacy store before the agent database,
  and what a migration leaves behind). Read from the byte offset where the last check
  stopped (a file that shrank or was replaced is read again from the start), the entries
  of the open window (stores/entries.py) read again for their text only. A line that is
  not JSON, or a last line still being written, is skipped with a count, never the file.
- archives, written once and never changed: `<session>.jsonl.deleted.<time>[.<hex>][.zst]`
  and `<session>.jsonl.reset.<time>...` (the transcript of a deleted or reset session,
  plain or zstd) and `cold/<sha256>.jsonl.zst` (OpenClaw's cold tier: a header line, then
  `{"kind": "event", "row": {"seq", "event_json"}}` lines). Each is read whole once (its
  size and mtime are its watermark). Where the agent database lists an archive (it is the
  canonical copy, stores/agent_db.py reads it there) the file is not read again.

Each compaction entry is one record (stores/entries.py): id = the entry's id, identity =
the session id and that id (the same in every copy of the session: JSONL, database,
archive), so each is counted once.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Optional

from ...errors import GuardError
from ...tokens import content_key
from .entries import SessionReader
from ...stores.source import Source
from .sniff import is_archive_name

JSONL_KIND = "openclaw-session"
ARCHIVE_KIND = "openclaw-archive"
MAX_ARCHIVE_BYTES = 256 << 20      # decompressed; OpenClaw caps a cold archive at 64 MB


def session_key(record) -> str:
    """A compaction entry's identity: OpenClaw's session id and the entry's id, the same
    whether the session lives in a JSONL file (any path, any inode), an archive or the
    agent database."""
    return f"openclaw-session\x1f{record.meta.get('session')}\x1f{record.id}"


def session_of(name: str) -> str:
    """The session id in a transcript's file name: what comes before `.jsonl`."""
    return name.split(".jsonl", 1)[0]


class SessionFileSource(Source):
    """One session JSONL file."""

    kind = JSONL_KIND

    def __init__(self, path: Path):
        super().__init__(path)
        self.session = session_of(path.name)
        self._offset = 0
        self._inode = None
        self._between = 0
        self._history, self._recent = [], []
        self._seen, self._seen_recent = [], []
        self._window_start = None
        self.bad_lines = 0

    def records(self, watermark):
        wm = watermark or {}
        st, offset = self.resume_point(wm)
        self._history = [tuple(x) for x in wm.get("history", [])] if offset else []
        self._recent = [tuple(x) for x in wm.get("recent", [])] if offset else []
        self._inode = st.st_ino
        between = int(wm.get("between") or 0) if offset else 0
        # the open window's entries are read again (for their text) from where it starts
        replay = wm.get("window") if offset else 0
        replay = replay if isinstance(replay, int) and 0 <= replay <= offset else None
        reader = SessionReader(self.session, self.kind, self.input_chars, complete=not offset,
                               between=between)
        self._reader = reader
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
                rec = reader.feed(entry, line_start, old)
                if rec is None:
                    continue
                rec.meta["offset"] = line_start
                self.records_read += 1
                self._seen.append((rec.id, content_key(rec.content)))
                self._seen_recent.append((rec.meta.get("timestamp"), rec.meta.get("tokens_before"),
                                          rec.meta.get("tokens_after")))
                yield rec
            self._offset = pos
        self._between = reader.between
        self.bad_lines += reader.bad
        if self.bad_lines:
            self.notes.append(f"{self.path}: skipped {self.bad_lines} line(s) that are not valid JSON")

    def new_watermark(self):
        # staleness and storms need the last compactions of the session: keys and figures only
        reader = getattr(self, "_reader", None)
        start = reader.window.start() if reader is not None else None
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


def decompress(raw: bytes, what: Path, limit: int = MAX_ARCHIVE_BYTES) -> bytes:
    """A zstd frame's bytes, at most `limit` of them (a GuardError past that)."""
    import zstandard
    try:
        out = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    except zstandard.ZstdError as exc:
        raise GuardError(f"{what}: not a readable zstd archive ({exc}); check the file") from None
    if len(out) > limit:
        raise GuardError(f"{what}: over {limit >> 20} MB decompressed; not read")
    return out


def archive_entries(data: bytes) -> Iterator:
    """(position, entry or None) of an archive's lines: a transcript's entries, or a cold
    archive's events (`kind: event`, the entry in `row.event_json`, its `row.seq` the position)."""
    for n, raw in enumerate(data.split(b"\n")):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            yield n, None
            continue
        if isinstance(line, dict) and "kind" in line and "type" not in line:
            if line.get("kind") != "event":
                continue                 # header, identities, index rows
            row = line.get("row") if isinstance(line.get("row"), dict) else {}
            try:
                entry = json.loads(row.get("event_json") or "null")
            except (ValueError, RecursionError, TypeError):
                entry = None
            seq = row.get("seq")
            yield (seq if isinstance(seq, int) else n), entry
        else:
            yield n, line


def read_archive(data: bytes, session: str, kind: str, limit: int) -> tuple:
    """(records, lines that did not read) of one whole archived transcript."""
    reader = SessionReader(session, kind, limit, complete=True)
    out = []
    for at, entry in archive_entries(data):
        if isinstance(entry, dict) and entry.get("type") == "session" and isinstance(entry.get("id"), str):
            reader.session = entry["id"]
        rec = reader.feed(entry, at)
        if rec is not None:
            rec.meta["archive"] = True
            out.append(rec)
    return out, reader.bad


class ArchiveFileSource(Source):
    """A deleted or reset session's archived transcript (plain or zstd), read whole once."""

    kind = ARCHIVE_KIND

    def __init__(self, path: Path):
        super().__init__(path)
        self.session = session_of(path.name)
        self._sig = None

    def records(self, watermark):
        try:
            st = self.path.stat()
        except OSError as exc:
            raise GuardError(f"{self.path}: cannot be read ({exc.strerror}); check its permissions") from None
        self._sig = [st.st_size, st.st_mtime_ns]
        if (watermark or {}).get("sig") == self._sig:
            return                          # archives do not change: read once
        if st.st_size > MAX_ARCHIVE_BYTES:
            raise GuardError(f"{self.path}: over {MAX_ARCHIVE_BYTES >> 20} MB; not read")
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise GuardError(f"{self.path}: cannot be read ({exc.strerror}); check its permissions") from None
        data = decompress(raw, self.path) if self.path.name.endswith(".zst") else raw
        recs, bad = read_archive(data, self.session, self.kind, self.input_chars)
        if bad:
            self.notes.append(f"{self.path}: skipped {bad} line(s) that are not valid JSON")
        for rec in recs:
            self.records_read += 1
            yield rec

    def new_watermark(self):
        return {"sig": self._sig} if self._sig else None

    def count_key(self, record) -> str:
        return session_key(record)

    def covered(self, watermark):
        done = (watermark or {}).get("sig") == self._sig
        return lambda record: done


def session_files(sessions_dir: Path) -> list:
    """The live (legacy) transcripts of one agent's sessions directory."""
    try:
        return sorted(p for p in sessions_dir.glob("*.jsonl") if p.is_file())
    except OSError:
        return []


def archive_files(sessions_dir: Path, listed: Optional[set] = None) -> list:
    """Archived transcripts in one agent's sessions directory, less those the agent
    database lists (`listed`: their names; it holds them, stores/agent_db.py)."""
    listed = listed or set()
    try:
        return sorted(p for p in sessions_dir.iterdir() if p.is_file() and is_archive_name(p.name)
                      and p.name not in listed)
    except OSError:
        return []
