"""`Probe`: a file the user named, read once for every agent's `sniff` (agents/base.py):
its first bytes, and (asked for) its SQLite tables, its text and its parsed data."""
from __future__ import annotations

from pathlib import Path


class Probe:
    """A file the user named, read once for every agent's `sniff`: its first bytes, and (asked
    for) its SQLite tables, its text and its parsed data. Read-only; `close()` lets go of a
    database connection no store took."""

    def __init__(self, path: Path, max_bytes: int):
        self.path = Path(path)
        self.max_bytes = max_bytes
        with open(self.path, "rb") as fh:
            self.head = fh.read(4096)
        self._con = None
        self._tables = None
        self._text = None

    @property
    def is_sqlite(self) -> bool:
        from .files import SQLITE_MAGIC      # (not sqlite_ro's: a text file needs no sqlite3)
        return self.head.startswith(SQLITE_MAGIC)

    def tables(self) -> dict:
        """{table: set of columns} of a SQLite file (empty for any other)."""
        if self._tables is None:
            from .. import sqlite_ro
            self._tables = {}
            if self.is_sqlite:
                self._con = sqlite_ro.connect_unchanged(self.path, "database")
                self._tables = sqlite_ro.tables(self._con)
        return self._tables

    def take_connection(self):
        """The open read-only connection, handed to the store that reads the file."""
        con, self._con = self._con, None
        return con

    def text(self) -> tuple:
        """(text, note) of a text file (stores.read_text)."""
        if self._text is None:
            from .files import read_text
            self._text = read_text(self.path, max_bytes=self.max_bytes)
        return self._text

    def data(self):
        """The file parsed as JSON, YAML or JSONL (records_file.load_data)."""
        if not hasattr(self, "_data"):
            from . import records_file
            self._data = records_file.load_data(self.path, self.text()[0])
        return self._data

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
