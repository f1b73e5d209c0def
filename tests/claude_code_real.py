"""The real Claude Code for the tests: the pinned native binary scripts/setup_claude_code.sh
installs, run headless (`claude -p`) against the scripted Anthropic server on 127.0.0.1, its
configuration (and HOME) in a temporary folder, telemetry and updates off.

`./scripts/test.sh` installs it (cached) and sets GUARD_CLAUDE_CODE to the binary and
GUARD_REQUIRE_CLAUDE_CODE=1: there a missing install fails the tests instead of skipping them.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

VERSION = "2.1.328"


def binary():
    cand = os.environ.get("GUARD_CLAUDE_CODE")
    if not cand:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        found = sorted(Path(base, "compaction-guard", f"claude-code-{VERSION}").glob(
            "node_modules/@anthropic-ai/claude-code-linux-*/claude"))
        cand = str(found[0]) if found else ""
    p = Path(cand) if cand else None
    return p if p is not None and p.is_file() else None


def require() -> Path:
    b = binary()
    if b is None:
        msg = "the pinned Claude Code is not installed: run scripts/setup_claude_code.sh (scripts/test.sh does)"
        if os.environ.get("GUARD_REQUIRE_CLAUDE_CODE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return b


def env_for(config: Path, base_url: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENCLAW_"))}
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-ant-test-key-0000", DISABLE_TELEMETRY="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
               CLAUDE_CONFIG_DIR=str(config), HOME=str(config), NO_COLOR="1")
    env.update(extra)
    return env


def run(binary: Path, cwd: Path, env: dict, *args, timeout: float = 120) -> dict:
    """One headless turn; its JSON result."""
    p = subprocess.run([str(binary), "-p", *args, "--output-format", "json"], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, (p.stdout[-800:], p.stderr[-800:])
    return json.loads(p.stdout)


def transcript(config: Path, session: str) -> Path:
    found = list((config / "projects").glob(f"*/{session}.jsonl"))
    assert found, f"no transcript for {session} under {config}"
    return found[0]
