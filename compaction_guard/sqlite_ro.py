"""Opening a user's SQLite database without changing it.

`mode=ro` never writes the database, but on a WAL database with no -wal/-shm files
(OpenClaw not running) SQLite would create them. So a WAL database with no -wal
file is opened `immutable=1`, which creates nothing; any other database (WAL with a
writer active: the last committed state; rollback journal: a writer's lock is
waited for up to the busy timeout) is opened `mode=ro`.
"""
from __future__ import annotations

import os
import sqlite3
import urllib.parse
from pathlib import Path

from .errors import GuardError

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_SECONDS = 10.0


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def file_state(path: Path) -> tuple:
    """What changes when anyone writes the database: its size, mtime and inode, and
    whether a -wal file exists (a writer has started)."""
    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns, st.st_ino, os.path.exists(str(path) + "-wal")
    except OSError:
        return None


def is_immutable(con: sqlite3.Connection) -> bool:
    return getattr(con, "_guard_immutable", False)


def connect(path: Path, what: str, shared: bool = False) -> sqlite3.Connection:
    """A read-only connection. `immutable` (creates nothing, takes no lock) for a WAL
    database with no writer; `shared=True` forces `mode=ro`, which sees a writer's WAL
    and takes the shared locks (used once a writer has appeared, see LcmSource)."""
    path = Path(path).resolve()
    if not is_sqlite(path):
        raise GuardError(f"{path}: not a SQLite database; check the path to the {what}")
    wal = Path(str(path) + "-wal")
    with open(path, "rb") as fh:
        header = fh.read(20)
    wal_mode = len(header) >= 20 and header[18] == 2 and header[19] == 2
    immutable = wal_mode and not wal.exists() and not shared
    return _open(path, "mode=ro&immutable=1" if immutable else "mode=ro", what, immutable)


def _open(path: Path, query: str, what: str, immutable: bool = False):
    uri = f"file:{urllib.parse.quote(str(path))}?{query}"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
        con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        con.execute("PRAGMA query_only = 1")
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise GuardError(f"{path}: cannot be read as a SQLite database ({exc}); check that it is the {what} "
                         "and not damaged") from None
    return _Connection(con, immutable)


def connect_unchanged(path: Path, what: str) -> sqlite3.Connection:
    """A read-only connection that sees what a writer still holds in its WAL and writes nothing
    beside the database, not even SQLite's shared-memory file: with -wal and -shm there, `mode=ro`
    with the -shm opened read-only (`readonly_shm`); with a -wal left alone (no -shm: its writer
    stopped without a checkpoint), a private copy of the two files, read there; with no -wal, as
    `connect`."""
    path = Path(path).resolve()
    wal, shm = Path(str(path) + "-wal"), Path(str(path) + "-shm")
    if not wal.exists():
        return connect(path, what)
    if not is_sqlite(path):
        raise GuardError(f"{path}: not a SQLite database; check the path to the {what}")
    if not shm.exists():
        return _private_copy(path, wal, what)
    return _open(path, "mode=ro&readonly_shm=1", what)


def _private_copy(path: Path, wal: Path, what: str):
    import shutil
    import tempfile
    tmp = Path(tempfile.mkdtemp(prefix="guard-sqlite-"))
    try:
        shutil.copyfile(path, tmp / "db")
        shutil.copyfile(wal, tmp / "db-wal")
        wrapped = _open(tmp / "db", "mode=ro", what)
    except (OSError, GuardError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, GuardError):
            raise GuardError(str(exc).replace(str(tmp / "db"), str(path))) from None
        raise GuardError(f"{path}: cannot be copied to read its write-ahead log ({exc.strerror}); check the disk "
                         "space and permissions") from None
    wrapped._guard_tmp = tmp
    return wrapped


class _Connection:
    """A sqlite3 connection that remembers whether it was opened immutable."""

    def __init__(self, con: sqlite3.Connection, immutable: bool):
        self._con = con
        self._guard_immutable = immutable

    def __getattr__(self, name):
        return getattr(self._con, name)

    def close(self) -> None:
        self._con.close()
        tmp = getattr(self, "_guard_tmp", None)
        if tmp is not None:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)


def tables(con: sqlite3.Connection) -> dict:
    """{table: set(columns)}."""
    out = {}
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
        out[name] = {row[1] for row in con.execute(f"PRAGMA table_info('{name}')")}
    return out
