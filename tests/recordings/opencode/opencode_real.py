"""The real opencode for the tests: the pinned native binary setup_opencode.sh installs, run headless
(`opencode run --format json`) against the scripted OpenAI-compatible server on 127.0.0.1, its
configuration, data and HOME in a temporary folder, updates and the models.dev fetch off.

Run it inside a network namespace with only loopback (`unshare -n`, then `ip link set lo up`), the
scripted server in the same namespace: opencode otherwise tries models.dev and npm at start.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

VERSION = "1.18.33"
PROVIDER = "scripted"            # main turns
COMPACTION_PROVIDER = "scomp"     # compaction only, through agent.compaction.model
MODEL = "main"
COMPACTION_MODEL = "summarizer"


def binary():
    cand = os.environ.get("GUARD_OPENCODE")
    if not cand:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        found = sorted(Path(base, "compaction-guard", f"opencode-{VERSION}").glob(
            "node_modules/opencode-linux-*/bin/opencode"))
        cand = str(found[0]) if found else ""
    p = Path(cand) if cand else None
    return p if p is not None and p.is_file() else None


def config_deps():
    """The real @opencode-ai/plugin install setup_opencode.sh keeps beside the binary (or None)."""
    b = binary()
    if b is None:
        return None
    d = b.parents[3] / "config-deps"      # <cache>/node_modules/opencode-linux-x64/bin/opencode
    return d if (d / "package-lock.json").is_file() else None


def prepare_config_dir(config_dir: Path) -> None:
    """Make opencode skip its run-time `npm install @opencode-ai/plugin` in a config dir (offline it
    fails after ~70 s, and plugins wait for it): package.json and package-lock.json copied from the
    cached real install, node_modules linked to it."""
    config_dir.mkdir(parents=True, exist_ok=True)
    deps = config_deps()
    if deps is None:
        return
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(deps / name, config_dir / name)
    link = config_dir / "node_modules"
    if not link.exists():
        link.symlink_to(deps / "node_modules")


def install_plugin(home: Path, source: Path) -> Path:
    """Copy a JS plugin into the throwaway ~/.config/opencode/plugin/."""
    d = Path(home) / ".config/opencode/plugin"
    d.mkdir(parents=True, exist_ok=True)
    dest = d / Path(source).name
    shutil.copy2(source, dest)
    return dest


def require() -> Path:
    b = binary()
    if b is None:
        msg = "the pinned opencode is not installed: run setup_opencode.sh"
        try:
            import pytest
        except ImportError:
            raise RuntimeError(msg)
        if os.environ.get("GUARD_REQUIRE_OPENCODE") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return b


def config(base_url: str, compaction_url: str | None = None, context: int = 16000, output: int = 4000,
           compaction: dict | None = None, plugins: list | None = None) -> dict:
    """opencode.json: one openai-compatible provider for the main turns and, when `compaction_url` is
    given, a second one that only the compaction agent uses."""
    def provider(name, url, model):
        return {"npm": "@ai-sdk/openai-compatible", "name": name,
                "options": {"baseURL": url, "apiKey": "sk-test-0000"},
                "models": {model: {"name": model, "limit": {"context": context, "output": output}}}}
    cfg = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
           "model": f"{PROVIDER}/{MODEL}", "small_model": f"{PROVIDER}/{MODEL}",
           "provider": {PROVIDER: provider("Scripted", base_url, MODEL)}}
    if compaction_url:
        cfg["provider"][COMPACTION_PROVIDER] = provider("Scripted compaction", compaction_url, COMPACTION_MODEL)
        cfg["agent"] = {"compaction": {"model": f"{COMPACTION_PROVIDER}/{COMPACTION_MODEL}"}}
    if compaction is not None:
        cfg["compaction"] = compaction
    if plugins:
        cfg["plugin"] = plugins
    return cfg


def env_for(home: Path, base_url: str, compaction_url: str | None = None, cfg: dict | None = None, **extra) -> dict:
    """A throwaway HOME and XDG dirs under `home`; writes `home/opencode.json` (OPENCODE_CONFIG)."""
    home = Path(home)
    dirs = {"XDG_CONFIG_HOME": home / ".config", "XDG_DATA_HOME": home / ".local/share",
            "XDG_CACHE_HOME": home / ".cache", "XDG_STATE_HOME": home / ".local/state"}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    prepare_config_dir(dirs["XDG_CONFIG_HOME"] / "opencode")
    path = home / "opencode.json"
    path.write_text(json.dumps(cfg or config(base_url, compaction_url), indent=2))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCODE_", "XDG_", "OPENAI_", "ANTHROPIC_"))}
    env.update({k: str(v) for k, v in dirs.items()})
    env.update(HOME=str(home), OPENCODE_CONFIG=str(path), OPENCODE_DISABLE_MODELS_FETCH="1",
               OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_SHARE="1", OPENCODE_DISABLE_LSP_DOWNLOAD="1",
               OPENCODE_DISABLE_DEFAULT_PLUGINS="1", NO_COLOR="1")
    env.update(extra)
    return env


def events(stdout: str) -> list:
    out = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def run(binary: Path, cwd: Path, env: dict, text: str, session: str | None = None, timeout: float = 120,
        via_stdin: bool = True) -> dict:
    """One headless turn (`opencode run --format json`); returns
    {"returncode", "events", "session", "stdout", "stderr"}.

    via_stdin (default): the text is piped on stdin with no message argument, so it arrives as is.
    Given as an argument instead, `opencode run` wraps any argument holding a space in double quotes
    (the model then sees `"Keep deploy ..."` with the quotes)."""
    args = [str(binary), "run", "--format", "json"]
    if session:
        args += ["--session", session]
    if not via_stdin:
        args.append(text)
    env = dict(env, PWD=str(cwd))       # `opencode run` takes its directory from $PWD, not the cwd
    p = subprocess.run(args, cwd=cwd, env=env, input=text if via_stdin else None,
                       stdin=None if via_stdin else subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=timeout)
    evs = events(p.stdout)
    sid = next((e.get("sessionID") for e in evs if e.get("sessionID")), None)
    return {"returncode": p.returncode, "events": evs, "session": sid, "stdout": p.stdout, "stderr": p.stderr}


def export(binary: Path, cwd: Path, env: dict, session: str, timeout: float = 60) -> dict:
    p = subprocess.run([str(binary), "export", session], cwd=cwd, env=dict(env, PWD=str(cwd)), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout)
    out = p.stdout
    start = out.find("{")
    return json.loads(out[start:]) if start >= 0 else {"error": p.stderr[-2000:]}


class Serve:
    """`opencode serve` on 127.0.0.1 (for a manual compaction: POST /session/:id/summarize)."""

    def __init__(self, binary: Path, cwd: Path, env: dict, port: int):
        self.port = port
        self.proc = subprocess.Popen([str(binary), "serve", "--hostname", "127.0.0.1", "--port", str(port)],
                                     cwd=cwd, env=dict(env, PWD=str(cwd)), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def wait(self, timeout: float = 60) -> None:
        end = time.time() + timeout
        while time.time() < end:
            try:
                self.call("GET", "/session", timeout=2)
                return
            except Exception:
                if self.proc.poll() is not None:
                    raise RuntimeError("opencode serve exited: " + (self.proc.stdout.read() or "")[-2000:])
                time.sleep(0.3)
        raise TimeoutError("opencode serve did not answer")

    def call(self, method: str, path: str, body=None, timeout: float = 120):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
        return json.loads(raw) if raw.strip() else None

    def stop(self) -> str:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)   # its own process group (start_new_session)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return self.proc.stdout.read() if self.proc.stdout else ""


def db_path(home: Path) -> Path:
    return Path(home) / ".local/share/opencode/opencode.db"


def copy_store(home: Path, dest: Path) -> list:
    """Copy opencode.db with its -wal and -shm, as they are (opencode not running)."""
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(db_path(home)) + suffix)
        if src.exists():
            shutil.copy2(src, dest / src.name)
            copied.append(dest / src.name)
    return copied


def messages(db: Path, session: str) -> list:
    """[(message data, [part data])] of a session, in order (opens read-only; sees the -wal)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("select id, data from message where session_id=? order by time_created, id",
                           (session,)).fetchall()
        out = []
        for mid, data in rows:
            parts = [json.loads(d) for (d,) in con.execute(
                "select data from part where message_id=? order by id", (mid,))]
            out.append((dict(json.loads(data), id=mid), parts))
        return out
    finally:
        con.close()
