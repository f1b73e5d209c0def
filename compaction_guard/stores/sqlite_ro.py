"""Opening a user's SQLite database without changing it.

`mode=ro` never writes the database, but on a WAL database with no -wal/-shm files
(OpenClaw not running) SQLite would create them. So a WAL database with no -wal
file is opened `immutable=1`, which creates nothing; any other database (WAL with a
writer active: the last committed state; rollback journal: a writer's lock is
waited for up to the busy timeout) is opened `mode=ro`.
"""
from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path

from ..errors import GuardError

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_SECONDS = 10.0


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def connect(path: Path, what: str) -> sqlite3.Connection:
    path = Path(path).resolve()
    if not is_sqlite(path):
        raise GuardError(f"{path}: not a SQLite database; check the path to the {what}")
    wal = Path(str(path) + "-wal")
    with open(path, "rb") as fh:
        header = fh.read(20)
    wal_mode = len(header) >= 20 and header[18] == 2 and header[19] == 2
    query = "mode=ro&immutable=1" if wal_mode and not wal.exists() else "mode=ro"
    uri = f"file:{urllib.parse.quote(str(path))}?{query}"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
        con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        con.execute("PRAGMA query_only = 1")
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise GuardError(f"{path}: cannot be read as a SQLite database ({exc}); check that it is the {what} "
                         "and not damaged") from None
    return con


def tables(con: sqlite3.Connection) -> dict:
    """{table: set(columns)}."""
    out = {}
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
        out[name] = {row[1] for row in con.execute(f"PRAGMA table_info('{name}')")}
    return out
