"""Opening a user's SQLite database without changing it.

`mode=ro` never writes the database, but on a WAL database with no -wal/-shm files
(OpenClaw not running) SQLite would create them. So: when a -wal file exists (a
writer is or was active), open `mode=ro` and read the last committed state,
waiting up to the busy timeout for a writer's lock; when it does not, open
`immutable=1`, which creates nothing. Every query runs on this one connection.
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
    query = "mode=ro" if wal.exists() else "mode=ro&immutable=1"
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
