"""Stores: where summaries live. Each is a Source that streams SummaryRecords; nothing here writes.

The stores of each agent live in its package (agents/<name>/); here are what every agent
shares: the Source interface (source.py), plain summaries files (records_file: text or
Markdown, JSON, YAML, JSONL), reading a user's file, and `load_file`, which asks every
agent whether a file the user named is one of its stores (sniffed from the content, not
only the name) before reading it as a summaries file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..errors import GuardError
from . import records_file
from .files import MAX_FILE_BYTES, SQLITE_MAGIC, SQLITE_SUFFIXES, _check_regular, read_text  # noqa: F401
from .probe import Probe
from .source import ListSource, Source


def load_file(path, input_text: Optional[str] = None, input_tokens: Optional[int] = None,
              layout=None, max_bytes: int = MAX_FILE_BYTES) -> Source:
    """The store in one file the user named: one of an agent's stores (each agent's `sniff`,
    in the registry's order), else a summaries file or one summary."""
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
