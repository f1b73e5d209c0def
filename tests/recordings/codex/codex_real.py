"""The real Codex CLI for recordings and live tests: the pinned native binary setup_codex.sh installs,
run headless (`codex exec`, or `codex app-server` for a manual compaction) against the scripted
Responses server on 127.0.0.1, with a throwaway CODEX_HOME (and HOME), telemetry/updates off.

Run it inside a network namespace with only loopback (`unshare -n`, then `ip link set lo up`): at start
Codex tries github.com (plugin sync) and chatgpt.com.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

VERSION = "0.171.0"
PROVIDER = "scripted"
KEY_ENV = "SCRIPTED_API_KEY"
HERE = Path(__file__).resolve().parent


def binary() -> Path | None:
    cand = os.environ.get("GUARD_CODEX")
    if not cand:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        found = sorted(Path(base, "compaction-guard", f"codex-{VERSION}").glob(
            "node_modules/@openai/codex-linux-*/vendor/*/bin/codex"))
        cand = str(found[0]) if found else ""
    p = Path(cand) if cand else None
    return p if p is not None and p.is_file() else None


def write_config(codex_home: Path, base_url: str, *, model: str = "gpt-5.1-codex", context_window: int | None = None,
                 threshold_percent: int | None = None, extra: str = "") -> Path:
    """config.toml with a custom Responses provider at base_url (http://127.0.0.1:P/v1), no retries."""
    codex_home.mkdir(parents=True, exist_ok=True)
    lines = [
        f'model = "{model}"',
        f'model_provider = "{PROVIDER}"',
        'approval_policy = "never"',
        'sandbox_mode = "read-only"',
        'check_for_update_on_startup = false',
        '',
    ]
    if context_window is not None:
        lines.insert(2, f"model_context_window = {context_window}")
    if threshold_percent is not None:
        lines.insert(2, f"model_post_turn_compact_threshold_percent = {threshold_percent}")
    lines += [
        "[analytics]", "enabled = false", "",
        "[feedback]", "enabled = false", "",
        f"[model_providers.{PROVIDER}]",
        'name = "Scripted"',
        f'base_url = "{base_url}"',
        'wire_api = "responses"',
        f'env_key = "{KEY_ENV}"',
        'requires_openai_auth = false',
        'supports_websockets = false',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        'stream_idle_timeout_ms = 20000',
        '',
    ]
    cfg = codex_home / "config.toml"
    cfg.write_text("\n".join(lines) + extra, encoding="utf-8")
    return cfg


def env_for(home: Path, base_url: str = "", **extra) -> dict:
    """A throwaway HOME and CODEX_HOME (home/.codex); telemetry, updates, colour off."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "OPENAI_", "ANTHROPIC_", "CLAUDE_", "OTEL_"))}
    env.update(HOME=str(home), CODEX_HOME=str(codex_home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".local/state"),
               XDG_DATA_HOME=str(home / ".local/share"),
               NO_COLOR="1", RUST_LOG=os.environ.get("CODEX_REC_RUST_LOG", "warn"),
               CODEX_DISABLE_UPDATE_CHECK="1", DO_NOT_TRACK="1")
    env[KEY_ENV] = "sk-test-0000"
    if base_url:
        env["SCRIPTED_BASE_URL"] = base_url
    env.update(extra)
    return env


def run(binary: Path, cwd: Path, env: dict, prompt: str, *, resume: str | None = None, config: list = (),
        bypass_hook_trust: bool = True, timeout: float = 120) -> dict:
    """One headless turn (`codex exec --json`); returns {rc, stdout, stderr, events, thread_id}."""
    args = [str(binary), "exec", "--json", "--skip-git-repo-check", "--color", "never"]
    if bypass_hook_trust:
        args.append("--dangerously-bypass-hook-trust")
    for c in config:
        args += ["-c", c]
    if resume:
        args += ["resume", resume]
    args.append(prompt)
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    events = []
    for line in p.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    thread = next((e.get("thread_id") for e in events if e.get("type") == "thread.started"), None)
    return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr, "events": events, "thread_id": thread,
            "argv": args}


class AppServer:
    """`codex app-server` over stdio (JSON-RPC 2.0 lines, no "jsonrpc" field needed). A reader thread
    queues stdout lines (select() on a buffered pipe misses lines already read into the buffer)."""

    def __init__(self, binary: Path, cwd: Path, env: dict, extra_args: list = ()):
        self.p = subprocess.Popen([str(binary), "app-server", *extra_args], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.next_id = 1
        self.messages = []          # every message read (notifications and responses)
        self._q: queue.Queue = queue.Queue()
        self._err: list = []
        threading.Thread(target=self._pump, args=(self.p.stdout, self._q), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.p.stderr, None), daemon=True).start()

    def _pump(self, stream, q):
        for line in stream:
            if q is None:
                self._err.append(line)
            else:
                q.put(line)
        if q is not None:
            q.put(None)

    def send(self, method: str, params: dict | None = None, *, notify: bool = False):
        msg = {"method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            msg["id"] = self.next_id
            self.next_id += 1
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        return msg.get("id")

    def read_until(self, pred, timeout: float = 60):
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                break
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            try:
                m = json.loads(line)
            except ValueError:
                continue
            self.messages.append(m)
            # answer any server->client request (approvals etc.) with an empty result
            if "id" in m and "method" in m:
                self.p.stdin.write(json.dumps({"id": m["id"], "result": {}}) + "\n")
                self.p.stdin.flush()
            if pred(m):
                return m
        raise TimeoutError(f"app-server: condition not met in {timeout}s; last: {self.messages[-3:]}")

    def call(self, method: str, params: dict | None = None, timeout: float = 60):
        i = self.send(method, params)
        m = self.read_until(lambda m: m.get("id") == i and "method" not in m, timeout)
        if "error" in m:
            raise RuntimeError(f"{method}: {m['error']}")
        return m.get("result")

    def close(self, timeout: float = 10) -> str:
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.terminate()
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        time.sleep(0.1)
        return "".join(self._err)


def rollouts(codex_home: Path) -> list:
    return sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))


def rollout_for(codex_home: Path, thread_id: str) -> Path:
    found = [p for p in rollouts(codex_home) if thread_id in p.name]
    assert found, f"no rollout for {thread_id} under {codex_home}"
    return found[0]
