"""OpenClaw's stores in its state directory: the agent databases and session files (with
their archives), lossless-claw's lcm.db and memory-dag-compactor's state.yaml; and the
same stores when the user names one file (sniffed from its content, not only its name)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...errors import GuardError
from ...stores import ListSource, read_text, records_file
from . import agent_db, dag_state, lcm, transcripts
from .layout import Layout
from .sniff import is_archive_name, is_dag_state, looks_like_session_jsonl


def sniff(probe, layout: Optional[Layout] = None):
    """The Source of a file of OpenClaw's (or of its plugins'), else None."""
    if probe.is_sqlite:
        cols = probe.tables()
        if lcm.looks_like_lcm(cols):
            return lcm.LcmSource(probe.path, probe.take_connection())
        if "transcript_events" in cols:
            return agent_db.AgentDbSource(probe.path, probe.take_connection())
        return None
    if looks_like_session_jsonl(probe.head):
        return transcripts.SessionFileSource(probe.path)
    name = probe.path.name
    if name.endswith(".zst") or is_archive_name(name):
        return transcripts.ArchiveFileSource(probe.path)
    if probe.path.suffix.lower() in (".yaml", ".yml", ".json"):
        text, note = probe.text()
        data = probe.data()
        if is_dag_state(data):
            return _dag_source(probe.path, data, note, layout)
    return None


def _dag_source(path: Path, data, note, layout: Optional[Layout]):
    mem = memory_for(path, layout)
    return ListSource(dag_state.SOURCE, path, dag_state.records(path, data, mem), note, incremental=True,
                      identity=dag_state.SOURCE)


def memory_for(state_path: Path, layout: Optional[Layout]) -> Optional[str]:
    """MEMORY.md for a DAG state: the layout's workspace, else beside the state directory
    the state sits in."""
    candidates = []
    if layout is not None and getattr(layout, "agent", None) == "openclaw":
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
    """(sources, errors): every store of one OpenClaw installation. A store that cannot be
    read is an error line and the others are still checked."""
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
            if not is_dag_state(data):
                raise GuardError(f"{state}: not a memory-dag-compactor state (no dag_nodes list); check the file")
            return _dag_source(state, data, note, layout)
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


def usages(layout: Layout, sources: list, notes: list) -> list:
    """Each session's context use: the agent databases' session counters, else (an agent
    with no database) the legacy sessions.json."""
    from . import sessions_index
    out = [u for src in sources for u in getattr(src, "usages", [])]
    with_db = {u.agent for u in out}
    for agent in layout.agents:
        path = agent.sessions / "sessions.json"
        if agent.id in with_db or agent.database.is_file() or not path.is_file():
            continue
        try:
            out += sessions_index.read(path)
        except GuardError as exc:
            notes.append(str(exc))
    return out
