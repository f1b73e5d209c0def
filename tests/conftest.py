import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo" / "openclaw-home"


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
