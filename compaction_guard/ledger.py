"""Which stored summaries have been counted: each once, ever.

`counted.sqlite` beside the state file (the guard's own; never a user's store):

    counted(k BLOB PRIMARY KEY)             16-byte BLAKE2b of a summary's identity
    pending(batch INTEGER PRIMARY KEY,      what a check's new summaries add to the
            counts TEXT)                    state's counters, until state.yaml has it

A summary's identity is its store's identity and its id in that store
(`Source.count_key`): lossless-claw's summary id, OpenClaw's session id and entry
id (the same in a session's JSONL file and in the agent database), the DAG's node
id, a summaries file's resolved path and record id. Not a path and an inode alone:
a transcript rewritten under a new inode, a database whose newest row was deleted,
a DAG whose oldest nodes left the watermark, a store that failed half-way, a file
checked three times: each summary still counts once.

Counting is two-phase, so a crash at any point leaves every counter exact:
1. `stage`: one SQLite transaction marks the check's new summaries counted and keeps
   the counts they add as a pending batch;
2. the state file is written with those counts and the batch's number
   (`counted_batch`), under the state's lock;
3. `done`: the batch is deleted.
`settle` (under the same lock, before the next counting) applies a pending batch the
state file does not have (a crash between 1 and 2) and drops one it has (2 and 3).
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Iterable

from .errors import GuardError


def ledger_path(state_file: Path) -> Path:
    return Path(state_file).with_name("counted.sqlite")


def digest(key: str) -> bytes:
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Ledger:
    """The set of counted summaries and the batches not yet in the state file."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.con = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self.con.execute("PRAGMA journal_mode=WAL")
            self.con.execute("PRAGMA synchronous=FULL")
            self.con.execute("CREATE TABLE IF NOT EXISTS counted (k BLOB PRIMARY KEY) WITHOUT ROWID")
            self.con.execute("CREATE TABLE IF NOT EXISTS pending (batch INTEGER PRIMARY KEY, counts TEXT NOT NULL)")
            os.chmod(self.path, 0o600)          # the guard's own file: owner only, like state.yaml
        except (sqlite3.OperationalError, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise GuardError(f"{self.path}: cannot write the state's count ledger ({why}); free disk space or fix the "
                             "directory's permissions (the previous state is intact)") from None
        except sqlite3.DatabaseError as exc:
            raise GuardError(f"{self.path}: the guard's count ledger is damaged ({exc}); move it aside (the "
                             "summaries in the stores will then be counted once more)") from None

    def close(self) -> None:
        self.con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ----------------------------------------------------------------- lookups
    def has(self, key: bytes) -> bool:
        return self.con.execute("SELECT 1 FROM counted WHERE k = ?", (key,)).fetchone() is not None

    # ----------------------------------------------------------------- counting
    def stage(self, keys: Iterable[bytes], counts: dict, batch: int) -> None:
        """Phase 1: mark `keys` counted and keep `counts` as pending batch `batch` (the
        state's counted_batch + 1), in one transaction."""
        with self._transaction():
            self.con.executemany("INSERT OR IGNORE INTO counted (k) VALUES (?)", ((k,) for k in keys))
            self.con.execute("INSERT OR REPLACE INTO pending (batch, counts) VALUES (?, ?)", (batch, json.dumps(counts)))

    def done(self, batch: int) -> None:
        """Phase 3: the state file holds every batch up to `batch`."""
        self.con.execute("DELETE FROM pending WHERE batch <= ?", (batch,))

    def settle(self, applied: int, apply) -> int:
        """Apply, with `apply(counts)`, every pending batch numbered above `applied` (the
        state file's counted_batch: a crash came between phases 1 and 2) and return the
        highest batch number the state now holds. Call under the state's lock; the
        caller writes the state, then calls `done`."""
        top = applied
        for batch, counts in self.con.execute("SELECT batch, counts FROM pending ORDER BY batch").fetchall():
            if batch > applied:
                apply(json.loads(counts))
            top = max(top, batch)
        return top

    def _transaction(self):
        con = self.con

        class _Tx:
            def __enter__(self):
                con.execute("BEGIN IMMEDIATE")

            def __exit__(self, exc_type, *rest):
                con.execute("COMMIT" if exc_type is None else "ROLLBACK")
                return False
        return _Tx()
