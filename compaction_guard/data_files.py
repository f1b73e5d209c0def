"""The package's own data files (compaction_guard/data/), read from the installed package's
directory. importlib.resources would give the same bytes for ~8 ms of imports (tempfile, zipfile)
in every process that checks a summary; the package installs as a directory (pyproject.toml:
zip-safe false)."""
from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def path(name: str) -> Path:
    """data/<name>'s path."""
    return DATA / name


def read_text(name: str) -> str:
    """data/<name>'s text (UTF-8)."""
    return (DATA / name).read_text(encoding="utf-8")
