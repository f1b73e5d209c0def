"""Reading a file the user named: read-only, size-bounded, one clear error for what it cannot be."""
from __future__ import annotations

import stat
from pathlib import Path

from ..errors import GuardError

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
