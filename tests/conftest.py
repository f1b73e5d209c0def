import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo" / "openclaw-home"

# Every test (and every guard it starts) sees an empty home: a plain --check looks for every
# agent's stores there, and must never find the ones of the person running the tests. The
# caches the pinned agents are installed in stay where they are.
os.environ.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
os.environ["HOME"] = tempfile.mkdtemp(prefix="guard-tests-home-")
for _var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME",
             "XDG_STATE_HOME", "LCM_DATABASE_PATH", "OPENCLAW_HOME", "OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH"):
    os.environ.pop(_var, None)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty OpenClaw state directory, set as OPENCLAW_STATE_DIR."""
    h = tmp_path / "openclaw"
    h.mkdir()
    monkeypatch.delenv("OPENCLAW_HOME", raising=False)
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(h))
    return h


@pytest.fixture
def demo_home(tmp_path, monkeypatch):
    """A copy of the bundled demo home (good and broken DAG summaries)."""
    h = tmp_path / "demo"
    shutil.copytree(DEMO, h)
    monkeypatch.delenv("OPENCLAW_HOME", raising=False)
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(h))
    return h


def run_guard(*args, home=None, stdin=None):
    """Run guard.py as a user would; returns CompletedProcess (text)."""
    env = dict(os.environ)
    if home is not None:
        env.pop("OPENCLAW_HOME", None)
        env.pop("OPENCLAW_CONFIG_PATH", None)
        env["OPENCLAW_STATE_DIR"] = str(home)
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *map(str, args)], capture_output=True, text=True,
                          input=stdin, env=env, timeout=120)
