"""Stores: where summaries live. Each is a Source that streams SummaryRecords; nothing here writes.

- records_file: plain text / Markdown, JSON, YAML, JSONL summaries files
- dag_state:    memory-dag-compactor's state.yaml (+ MEMORY.md for leaf inputs)
- lcm:          lossless-claw's lcm.db (SQLite, read-only)
- transcripts:  OpenClaw session JSONL files and archived transcripts (deleted, reset)
- agent_db:     OpenClaw's per-agent openclaw-agent.sqlite (events, cold and deletion
                archives, session counters)
- claude_code:  Claude Code's session transcripts (projects/<dir>/<session>.jsonl)

To add a store: a Source subclass (stores/source.py) yielding SummaryRecords with the
store's own ids, a branch in `load_file` sniffed from content (not only the name)
and, if it belongs to an agent's layout (layout.py), an entry in `discover`.
"""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Optional

from ..errors import GuardError
from ..layout import Layout
from .. import sqlite_ro
from . import agent_db, claude_code, dag_state, lcm, records_file, transcripts
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


def _sqlite_source(path: Path) -> Source:
    con = sqlite_ro.connect(path, "database")
    cols = sqlite_ro.tables(con)
    if lcm.looks_like_lcm(cols):
        return lcm.LcmSource(path, con)
    if "transcript_events" in cols:
        return agent_db.AgentDbSource(path, con)
    con.close()
    raise GuardError(f"{path}: a SQLite database with an unknown schema (neither lossless-claw's summaries table nor "
                     "OpenClaw's transcript_events); check the path")


def load_file(path, input_text: Optional[str] = None, input_tokens: Optional[int] = None,
              layout: Optional[Layout] = None, max_bytes: int = MAX_FILE_BYTES) -> Source:
    """The store in one file the user named: a summaries file, one summary, a DAG state,
    an lcm.db, a session JSONL or an agent database (sniffed from the content)."""
    path = Path(path)
    _check_regular(path, "file")
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head.startswith(SQLITE_MAGIC):
        return _sqlite_source(path)
    if path.suffix.lower() in SQLITE_SUFFIXES:
        raise GuardError(f"{path}: named like a SQLite database but is not one; check the path (or rename it if it "
                         "is a summaries file)")
    if transcripts.looks_like_session_jsonl(head):
        return transcripts.SessionFileSource(path)
    if claude_code.looks_like_transcript(head):
        return claude_code.TranscriptSource(path)
    if path.name.endswith(".zst") or transcripts.is_archive_name(path.name):
        return transcripts.ArchiveFileSource(path)
    text, note = read_text(path, max_bytes=max_bytes)
    data = records_file.load_data(path, text)
    if dag_state.is_dag_state(data):
        mem = _memory_for(path, layout)
        return ListSource(dag_state.SOURCE, path, dag_state.records(path, data, mem), note, incremental=True,
                          identity=dag_state.SOURCE)
    source = f"file:{path.name}"
    recs = records_file.parse(path, text, data, source, input_text, input_tokens)
    kind = "text" if data is records_file._NOT_STRUCTURED else "summaries-file"
    return ListSource(kind, path, recs, note)
def _memory_for(state_path: Path, layout: Optional[Layout]) -> Optional[str]:
    """MEMORY.md for a DAG state: the layout's workspace, else beside the state directory
    the state sits in."""
    candidates = []
    if layout is not None:
        candidates.append(layout.memory)
    # <state>/skill-state/memory-dag-compactor/state.yaml -> <state>/workspace/MEMORY.md
    parents = state_path.resolve().parents
    if len(parents) >= 3:
        candidates.append(parents[2] / "workspace" / "MEMORY.md")
    for c in candidates:
        if c.is_file():
            try:
                return read_text(c, "MEMORY.md")[0]
            except GuardError:
                return None
    return None


def discover(layout: Layout) -> tuple:
    """(sources, errors): every store of one OpenClaw installation (or of Claude Code's, for
    its layout). A store that cannot be read is an error line and the others are still checked."""
    if getattr(layout, "agent", None) == "claude-code":
        return claude_code.discover(layout.projects)
    found, errors = [], []

    def attempt(make):
        try:
            src = make()
            found.append(src)
            return src
        except GuardError as exc:
            errors.append(str(exc))
            return None

    state = layout.dag_state
    if state.exists():
        def dag():
            text, note = read_text(state, "state file")
            data = records_file.load_data(state, text)
            if not dag_state.is_dag_state(data):
                raise GuardError(f"{state}: not a memory-dag-compactor state (no dag_nodes list); check the file")
            mem = _memory_for(state, layout)
            return ListSource(dag_state.SOURCE, state, dag_state.records(state, data, mem), note, incremental=True,
                              identity=dag_state.SOURCE)
        attempt(dag)
    if layout.lcm_db.exists():
        attempt(lambda: lcm.LcmSource(layout.lcm_db))
    for agent in layout.agents:
        listed = set()
        if agent.database.is_file():
            src = attempt(lambda a=agent: agent_db.AgentDbSource(a.database, agent=a.id, sessions_dir=a.sessions))
            if src is not None:
                try:
                    listed = src.archive_names()
                except Exception:      # noqa: BLE001 - a damaged table: its files are read instead
                    listed = set()
        for f in transcripts.session_files(agent.sessions):
            attempt(lambda f=f: transcripts.SessionFileSource(f))
        for f in transcripts.archive_files(agent.sessions, listed):
            attempt(lambda f=f: transcripts.ArchiveFileSource(f))
    return found, errors
