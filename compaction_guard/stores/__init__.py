"""Stores: where summaries live. Each is a Source that streams SummaryRecords; nothing here writes.

The stores of each agent live in its package (agents/<name>/); here are what every agent
shares: the Source interface (source.py), plain summaries files (records_file: text or
Markdown, JSON, YAML, JSONL), reading a user's file, and `load_file`, which asks every
agent whether a file the user named is one of its stores (sniffed from the content, not
only the name) before reading it as a summaries file.
"""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Optional

from ..errors import GuardError
from . import records_file
from .source import ListSource, Source

SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_SUFFIXES = {".db", ".sqlite", ".sqlite3"}
MAX_FILE_BYTES = 1 << 30


def read_text(path: Path, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> tuple:
    """(text, note) of a user's file, read-only; note says if bytes were not UTF-8."""
    st = _check_regular(path, what)
    if st.st_size > max_bytes:
        raise GuardError(f"{path}: {st.st_size:,} bytes is over the {max_bytes:,}-byte limit (setting max_file_bytes); "
                         "split the file or raise the limit")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except PermissionError:
        raise GuardError(f"{path}: permission denied; run as a user who can read it") from None
    except OSError as exc:
        raise GuardError(f"{path}: cannot be read ({exc.strerror}); check the file") from None
    if raw.startswith(SQLITE_MAGIC):
        raise GuardError(f"{path}: a SQLite database, not a text file")
    if path.suffix.lower() in SQLITE_SUFFIXES:
        raise GuardError(f"{path}: named like a SQLite database but is not one; check the path (or rename it if it "
                         "is a summaries file)")
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError:
        bad = raw.decode("utf-8", errors="replace").count("\ufffd")
        return raw.decode("utf-8", errors="replace"), f"{path}: not valid UTF-8 ({bad} byte sequences replaced)"


def _check_regular(path: Path, what: str):
    """The file's stat, or a GuardError saying why it cannot be read as a file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise GuardError(f"{path}: no such {what}; check the path") from None
    except PermissionError:
        raise GuardError(f"{path}: permission denied; run as a user who can read it") from None
    if stat.S_ISDIR(st.st_mode):
        raise GuardError(f"{path}: is a directory; give a summaries file inside it")
    if not stat.S_ISREG(st.st_mode):
        raise GuardError(f"{path}: not a regular file; give a summaries file")
    return st


def load_file(path, input_text: Optional[str] = None, input_tokens: Optional[int] = None,
              layout=None, max_bytes: int = MAX_FILE_BYTES) -> Source:
    """The store in one file the user named: one of an agent's stores (each agent's `sniff`,
    in the registry's order), else a summaries file or one summary."""
    from ..agents.base import Probe
    path = Path(path)
    _check_regular(path, "file")
    probe = Probe(path, max_bytes)
    try:
        _, src = _sniff(probe, layout)
        if src is not None:
            return src
    finally:
        probe.close()
    if probe.is_sqlite:
        raise GuardError(f"{path}: a SQLite database with an unknown schema (none of the agents' stores the guard "
                         "reads); check the path")
    if path.suffix.lower() in SQLITE_SUFFIXES:
        raise GuardError(f"{path}: named like a SQLite database but is not one; check the path (or rename it if it "
                         "is a summaries file)")
    text, note = probe.text()
    data = probe.data()
    source = f"file:{path.name}"
    recs = records_file.parse(path, text, data, source, input_text, input_tokens)
    kind = "text" if data is records_file._NOT_STRUCTURED else "summaries-file"
    return ListSource(kind, path, recs, note)


def _sniff(probe, layout=None) -> tuple:
    """(agent name, Source) of the first agent whose store the probed file is, else (None, None)."""
    from ..agents import every
    for agent in every():
        src = agent.sniff(probe, layout)
        if src is not None:
            return agent.name, src
    return None, None


def owner_of(path) -> Optional[str]:
    """The name of the agent whose store the file is (None: a summaries file, or unreadable:
    the check says why)."""
    from ..agents.base import Probe
    try:
        _check_regular(Path(path), "file")
        probe = Probe(Path(path), MAX_FILE_BYTES)
        try:
            name, src = _sniff(probe)
        finally:
            probe.close()
    except (GuardError, OSError):
        return None
    if src is not None:
        src.close()
    return name
