"""The real OpenClaw for the tests: the pinned npm package scripts/setup_openclaw.sh installs
(with a Node it runs on), and helpers that run OpenClaw's own code to write stores.

`./scripts/test.sh` installs it (cached between runs) and sets GUARD_OPENCLAW to the install
and GUARD_REQUIRE_OPENCLAW=1: there a missing install fails the tests instead of skipping them.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WRITER = ROOT / "tests" / "openclaw" / "write_stores.mjs"
VERSION = "2026.9.6"


def install():
    """The install's directory, or None."""
    cand = os.environ.get("GUARD_OPENCLAW")
    if not cand:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        found = sorted(Path(base, "compaction-guard").glob(f"openclaw-{VERSION}-node-*"))
        cand = str(found[-1]) if found else ""
    p = Path(cand) if cand else None
    return p if p is not None and (p / ".ready").is_file() else None


def require() -> Path:
    where = install()
    if where is None:
        msg = "the pinned OpenClaw is not installed: run scripts/setup_openclaw.sh (scripts/test.sh does)"
        if os.environ.get("GUARD_REQUIRE_OPENCLAW") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return where


def node(where: Path) -> Path:
    return where / "node-bin" / "node"


def package(where: Path) -> Path:
    return where / "node_modules" / "openclaw"


def env_for(user_home: Path, where: Path, **extra) -> dict:
    """An environment in which OpenClaw (and the guard) see `user_home` as the home: the
    state directory is `user_home/.openclaw`, exactly as for a user who set OPENCLAW_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "GUARD_SERVE", "LCM_"))}
    env.update(OPENCLAW_HOME=str(user_home), PATH=f"{node(where).parent}:{env.get('PATH', '')}",
               OPENCLAW_DISABLE_UPDATE_CHECK="1", NO_COLOR="1", TZ="UTC")
    env.update(extra)
    return env


def write_stores(user_home: Path, plan: list, timeout: float = 120) -> dict:
    """Run OpenClaw's SessionManager and session store on `plan` (see write_stores.mjs);
    returns {"refs": {ref: entry id}, "markers": {...}}."""
    where = require()
    user_home.mkdir(parents=True, exist_ok=True)
    plan_file = user_home.parent / f".plan-{os.getpid()}-{len(plan)}.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    try:
        p = subprocess.run([str(node(where)), str(WRITER), str(package(where)), str(plan_file)],
                           capture_output=True, text=True, env=env_for(user_home, where), timeout=timeout)
    finally:
        plan_file.unlink(missing_ok=True)
    if p.returncode != 0:
        raise AssertionError(f"OpenClaw's writer failed ({p.returncode}): {p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def openclaw(where: Path, user_home: Path, *args, timeout: float = 120, **extra) -> subprocess.CompletedProcess:
    """Run the `openclaw` command itself."""
    return subprocess.run([str(node(where)), str(package(where) / "openclaw.mjs"), *map(str, args)],
                          capture_output=True, text=True, env=env_for(user_home, where, **extra), timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
