"""The real Gemini CLI for tests: the pinned npm package setup_gemini.sh installs (a bundled Node
program, engines node >=20), run headless (`gemini -p`) against the scripted Gemini-API server on
127.0.0.1 (tests/modelkit/gemini.py), with a throwaway HOME (Gemini CLI keeps everything under ~/.gemini),
telemetry, usage statistics and update checks off.

GUARD_GEMINI may point at bundle/gemini.js; GUARD_NODE at a node binary (default: `node` on PATH, or
the cache's node_modules/node/bin/node when setup installed one).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

VERSION = "0.61.0"
MODEL = "gemini-2.5-flash"       # token limit 1,048,576 in Gemini CLI's tables


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("GUARD_GEMINI_CACHE") or Path(base, "compaction-guard", f"gemini-{VERSION}"))


def binary():
    """bundle/gemini.js of the pinned install, or None."""
    cand = os.environ.get("GUARD_GEMINI") or str(cache_dir() / "node_modules/@google/gemini-cli/bundle/gemini.js")
    p = Path(cand)
    return p if p.is_file() else None


def node() -> str:
    if os.environ.get("GUARD_NODE"):
        return os.environ["GUARD_NODE"]
    local = cache_dir() / "node_modules/node/bin/node"
    return str(local) if local.is_file() else (shutil.which("node") or "node")


def settings(threshold: float = 0.5, hooks: dict | None = None, **extra) -> dict:
    """A ~/.gemini/settings.json for an offline headless run."""
    s = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "model": {"name": MODEL, "compressionThreshold": threshold},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "enableAutoUpdate": False,
                    "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "ui": {"hideTips": True},
    }
    if hooks:
        s["hooks"] = hooks
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(s.get(k), dict):
            s[k].update(v)
        else:
            s[k] = v
    return s


def write_settings(home: Path, **kw) -> Path:
    d = home / ".gemini"
    d.mkdir(parents=True, exist_ok=True)
    p = d / "settings.json"
    p.write_text(json.dumps(settings(**kw), indent=2))
    return p


def env_for(home: Path, base_url: str, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GEMINI_", "GOOGLE_", "OTEL_", "CLOUDSDK_"))}
    env.update(HOME=str(home), GEMINI_API_KEY="sk-test-0000", GOOGLE_GEMINI_BASE_URL=base_url,
               GEMINI_CLI_TRUST_WORKSPACE="true", GEMINI_CLI_NO_RELAUNCH="true", NO_COLOR="1", TERM="dumb",
               CI="1", NO_BROWSER="true")
    env.pop("XDG_CONFIG_HOME", None)
    env.update(extra)
    return env


def run(cwd: Path, env: dict, prompt: str, *args, timeout: float = 180, check: bool = True) -> dict:
    """One headless turn (`gemini -p PROMPT --output-format json`). Returns {rc, stdout, stderr, json}."""
    b = binary()
    if b is None:
        raise FileNotFoundError("the pinned Gemini CLI is not installed: run setup_gemini.sh")
    p = subprocess.run([node(), str(b), "-p", prompt, "--output-format", "json", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    out = {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr, "json": None}
    try:
        out["json"] = json.loads(p.stdout)
    except ValueError:
        pass
    if check:
        assert p.returncode == 0, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    return out


def sessions(home: Path) -> list[Path]:
    """The session stores: ~/.gemini/tmp/<project>/chats/session-*.jsonl."""
    return sorted((home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


GOT_IT = "Got it. Thanks for the additional context!"


def compressions(path: Path) -> list[dict]:
    """The `$set` records of a session file that are compressions: their `messages` hold a user message
    followed by a gemini message with the canned reply (a plain --resume also writes `$set.messages`)."""
    out = []
    for r in records(path):
        msgs = (r.get("$set") or {}).get("messages") if isinstance(r, dict) else None
        if not msgs:
            continue
        for a, b in zip(msgs, msgs[1:]):
            if a.get("type") == "user" and b.get("type") == "gemini" and _content_text(b) == GOT_IT:
                out.append(r)
                break
    return out


def _content_text(msg) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""
