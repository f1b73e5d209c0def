"""The real OpenClaw gateway, live on 127.0.0.1: the guard's hook installed with OpenClaw's own
`hooks enable`, turns sent with `openclaw agent`, compactions forced with `openclaw sessions
compact`, the model a scripted OpenAI-compatible server (tests/modelkit/openai_chat.py) that
records what OpenClaw sends. Then the guard checks the home OpenClaw wrote."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from livekit import wait_healthz  # noqa: E402
from openclaw_real import env_for, free_port, node, openclaw, package, require
from modelkit.openai_chat import ScriptedOpenAI

GOOD = ("## Decisions\n- Deploy v2.4.1 to staging-3 (ticket OPS-4412).\n\n## Open TODOs\n- Run the smoke tests.\n\n"
        "## Constraints/Rules\n- None stated.\n\n## Pending user asks\n- Run the smoke tests on staging-3.\n\n"
        "## Exact identifiers\n- OPS-4412, v2.4.1, staging-3")
LOOP = "## Decisions\n" + "The user wants the smoke tests run on staging-3. " * 60
TURNS = ["Deploy release v2.4.1 to staging-3; the ticket is OPS-4412. Remember the ticket.",
         "Then run the smoke tests on staging-3 and tell me the result."]
KEY = "agent:main:live"


def _config(port_model: int, port_gateway: int, workspace) -> dict:
    return {
        "agents": {"defaults": {"model": {"primary": "scripted/scripted"}, "workspace": str(workspace),
                                "compaction": {"mode": "default"}}},
        "models": {"mode": "replace", "providers": {"scripted": {
            "baseUrl": f"http://127.0.0.1:{port_model}/v1", "apiKey": "sk-scripted-not-a-key",
            "api": "openai-completions",
            "models": [{"id": "scripted", "name": "Scripted", "reasoning": False, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 32000, "maxTokens": 2048}]}}},
        "gateway": {"mode": "local", "bind": "loopback", "port": port_gateway, "auth": {"mode": "none"}},
    }


class Gateway:
    def __init__(self, where, home, port, log):
        self.log = log
        self.proc = subprocess.Popen([str(node(where)), str(package(where) / "openclaw.mjs"), "gateway", "run",
                                      "--port", str(port), "--bind", "loopback"], stdout=open(log, "w"),
                                     stderr=subprocess.STDOUT, env=env_for(home, where), start_new_session=True)

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, pattern: str, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if re.search(pattern, self.text()):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.3)
        return False

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def guard(home, where, *args):
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *map(str, args)], capture_output=True, text=True,
                          env=env_for(home, where), timeout=120)


def test_live_gateway_compactions_are_checked_by_the_hook_and_by_a_check(tmp_path):
    where = require()
    home = tmp_path / "user"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    t0 = time.monotonic()
    # compactions of a history that mentions db-7 loop; the others are good
    with ScriptedOpenAI([GOOD], when=[("db-7", LOOP)], record=tmp_path / "requests.jsonl") as model:
        gport = free_port()
        (state / "openclaw.json").write_text(json.dumps(_config(model.port, gport, home / "workspace"), indent=2))
        oc = f"{node(where)} {package(where) / 'openclaw.mjs'}"
        p = guard(home, where, "hook", "install", "--openclaw", oc)
        assert p.returncode == 0 and "enabled with `openclaw hooks enable" in p.stdout, p.stdout + p.stderr
        cfg = json.loads((state / "openclaw.json").read_text())
        assert cfg["hooks"]["internal"]["entries"]["compaction-resilience-guard"]["enabled"] is True
        gw = Gateway(where, home, gport, tmp_path / "gateway.log")
        try:
            assert gw.wait_for(r"\[gateway\] ready", 90), gw.text()[-3000:]
            assert "loaded 1 internal hook handler" in gw.text()
            for m in TURNS:
                r = openclaw(where, home, "agent", "--session-key", KEY, "--message", m, timeout=180)
                assert r.returncode == 0, r.stdout + r.stderr
            r = openclaw(where, home, "sessions", "compact", KEY, timeout=180)
            assert r.returncode == 0 and "Compacted session" in r.stdout, r.stdout + r.stderr
            assert gw.wait_for(r"\[compaction-resilience-guard\] session \S+: \d+ new summar\w+ checked, valid", 60), \
                gw.text()[-3000:]
            r = openclaw(where, home, "agent", "--session-key", KEY, "--message", "Also check db-7 replication lag.",
                         timeout=180)
            assert r.returncode == 0, r.stdout + r.stderr
            r = openclaw(where, home, "sessions", "compact", KEY, timeout=180)
            assert r.returncode == 0, r.stdout + r.stderr
            assert gw.wait_for(r"\[compaction-resilience-guard\].*failed \(repetition\)", 60), gw.text()[-3000:]
        finally:
            gw.stop()
        compaction_requests = [q for q in model.requests if q["kind"] == "compaction"]
    assert compaction_requests and all(q["body"].get("stream") is True for q in compaction_requests)
    # what the hook's checks recorded: the failure is in the guard's state
    st = json.loads(guard(home, where, "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["failures_by_kind"] == {"repetition": 1}
    # and a check of the whole home finds every compaction OpenClaw wrote, by its ids
    doc = json.loads(guard(home, where, "--check", "--all", "--format", "json").stdout)
    assert doc["layout"].endswith("(OPENCLAW_HOME/.openclaw)") and doc["sources"][0]["name"] == "openclaw-agent-db"
    import sqlite3
    import zstandard
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        events = [json.loads(text if text is not None else zstandard.ZstdDecompressor().decompressobj().decompress(blob))
                  for text, blob in con.execute("SELECT event_json, event_zstd FROM transcript_events ORDER BY seq")]
        counters = json.loads(con.execute("SELECT entry_json FROM session_nodes WHERE session_key = ?",
                                          (KEY,)).fetchone()[0])
    compactions = [e for e in events if e.get("type") == "compaction"]
    ids = [e["id"] for e in compactions]
    # OpenClaw stored the looping answer (after the previous summary, which it carries forward)
    assert "The user wants the smoke tests run on staging-3. " * 3 in compactions[-1]["summary"]
    by = {r["id"]: r for r in doc["results"]}
    assert ids and set(ids) <= set(by)
    assert by[ids[-1]]["failures"] == ["repetition"] and by[ids[-1]]["session"] == counters["sessionId"]
    assert counters["compactionCount"] >= 2 and counters["contextTokens"] == 32000
    assert time.monotonic() - t0 < 360
    # removed the same way: OpenClaw's own `hooks disable`, then the directory
    p = guard(home, where, "hook", "remove", "--openclaw", oc)
    assert p.returncode == 0 and "disabled with `openclaw hooks disable" in p.stdout, p.stdout + p.stderr
    assert not (state / "hooks" / "compaction-resilience-guard").exists()
    cfg = json.loads((state / "openclaw.json").read_text())
    assert cfg["hooks"]["internal"]["entries"]["compaction-resilience-guard"]["enabled"] is False
    if os.environ.get("GUARD_RECORD_FIXTURES"):       # keep what OpenClaw sent and wrote (tests/data/openclaw-live)
        _record(Path(os.environ["GUARD_RECORD_FIXTURES"]), db, model.requests)


def _record(out: Path, db: Path, requests: list) -> None:
    import shutil
    out.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal"):          # as OpenClaw left it (its CHECKs need a newer SQLite than Python's to VACUUM)
        (out / f"openclaw-agent.sqlite{suffix}").unlink(missing_ok=True)
        if Path(f"{db}{suffix}").exists() and Path(f"{db}{suffix}").stat().st_size:
            shutil.copyfile(f"{db}{suffix}", out / f"openclaw-agent.sqlite{suffix}")
    with open(out / "requests.jsonl", "w", encoding="utf-8") as fh:
        for q in (q for q in requests if q["kind"] == "compaction"):      # the compactions (turns: 50 KB each)
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")


def _route_compaction(cfg: dict, mode: str, port: int, model_id: str, name: str, context: int, max_tokens: int) -> None:
    """Only compaction through the guard on `port` (agents.defaults.compaction.model), as the README says."""
    cfg["agents"]["defaults"]["compaction"] = {"mode": mode, "model": f"guard/{model_id}", "keepRecentTokens": 300}
    cfg["models"]["providers"]["guard"] = {
        "baseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "unused", "api": "openai-completions",
        "models": [{"id": model_id, "name": name, "reasoning": False, "input": ["text"],
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    "contextWindow": context, "maxTokens": max_tokens}]}


def _user_home(tmp_path):
    """(a user's home, its OpenClaw state directory)."""
    home = tmp_path / "user"
    (home / ".openclaw").mkdir(parents=True)
    return home, home / ".openclaw"


def _serve(home, where, upstream_url: str, port: int, log):
    """`compaction-guard serve` in front of the scripted model, as a process on 127.0.0.1."""
    env = env_for(home, where, GUARD_PROVIDER="openai", GUARD_BASE_URL=upstream_url, GUARD_MODEL="scripted",
                  OPENAI_API_KEY="sk-scripted-not-a-key")
    return subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--port", str(port),
                             "--set", "chain_deadline_seconds=20", "--set", "breaker_threshold=1000"],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)


@pytest.mark.parametrize("mode", ["safeguard", "default"])
def test_openclaw_compacts_through_serve_and_stores_what_it_answers(tmp_path, mode):
    """Only compaction routed through the guard (agents.defaults.compaction.model), the model
    answering every compaction request with a loop: the guard escalates to L3, its L3 has the
    structure OpenClaw asked for, OpenClaw's audit (safeguard) accepts it, and OpenClaw stores
    the compaction, written from the guard's answer."""
    where = require()
    home, state = _user_home(tmp_path)
    with ScriptedOpenAI([LOOP]) as model:
        gport, sport = free_port(), free_port()
        cfg = _config(model.port, gport, home / "workspace")
        _route_compaction(cfg, mode, sport, "compactor", "compaction-guard", 32000, 2048)
        (state / "openclaw.json").write_text(json.dumps(cfg, indent=2))
        srv = _serve(home, where, model.url, sport, tmp_path / "serve.log")
        gw = None
        try:
            wait_healthz(sport, 20)
            gw = Gateway(where, home, gport, tmp_path / "gateway.log")
            assert gw.wait_for(r"\[gateway\] ready", 90), gw.text()[-3000:]
            for m in TURNS + ["Also check db-7 replication lag.", "Then tell me the lag in seconds."]:
                r = openclaw(where, home, "agent", "--session-key", KEY, "--message", m, timeout=180)
                assert r.returncode == 0, r.stdout + r.stderr
            r = openclaw(where, home, "sessions", "compact", KEY, timeout=240)
            assert r.returncode == 0 and "Compacted session" in r.stdout, (r.stdout + r.stderr, gw.text()[-4000:])
        finally:
            if gw is not None:
                gw.stop()
            os.killpg(srv.pid, signal.SIGTERM)
            srv.wait(timeout=30)
        turns = [q for q in model.requests if q["kind"] == "turn"]
        compactions = [q for q in model.requests if q["kind"] == "compaction"]
    assert turns and compactions, "turns go to the model directly, compactions through the guard to it"
    assert "failed quality checks" not in gw.text()
    import sqlite3
    import zstandard
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        events = [json.loads(t if t is not None else zstandard.ZstdDecompressor().decompressobj().decompress(b))
                  for t, b in con.execute("SELECT event_json, event_zstd FROM transcript_events ORDER BY seq")]
    stored = [e for e in events if e.get("type") == "compaction"]
    assert stored and "compaction-resilience-guard L3" in stored[-1]["summary"], stored[-1]["summary"][:2000]
    if mode == "safeguard":
        for h in ("## Decisions", "## Open TODOs", "## Constraints/Rules", "## Pending user asks", "## Exact identifiers"):
            assert h in stored[-1]["summary"]
    # the guard recorded each compaction it answered, by level
    rep = json.loads(guard(home, where, "--report", "--format", "json").stdout)
    assert rep["level_usage"]["l3_deterministic"] >= 1
    # and OpenClaw's stored compaction checks valid: the guard's own L3 (serve recorded a key of its
    # answer), whatever OpenClaw wrapped round it, counted as a fallback's and no failure
    doc = json.loads(guard(home, where, "--check", "--all", "--format", "json").stdout)
    last = next(r for r in doc["results"] if r["id"] == stored[-1]["id"])
    assert last["failures"] == [] and last.get("guard_l3") is True, last


def test_openclaw_compacts_through_serve_to_the_local_model_in_safeguard_mode(tmp_path):
    """The real small model (SmolLM2-135M, offline, scripts/setup.sh installs it) as the upstream
    of serve, failing on its own: OpenClaw's safeguard compaction still completes, its audit
    accepts the guard's answer, and the compaction is stored."""
    from test_local_model import _available
    if not _available():
        pytest.fail("the local model is not installed (scripts/setup.sh test)") if os.environ.get("CI") else \
            pytest.skip("the local model is not installed (scripts/setup.sh test)")
    where = require()
    home, state = _user_home(tmp_path)
    with ScriptedOpenAI([GOOD]) as model:
        gport, sport = free_port(), free_port()
        cfg = _config(model.port, gport, home / "workspace")
        _route_compaction(cfg, "safeguard", sport, "smollm2", "SmolLM2 via compaction-guard", 8192, 1024)
        (state / "openclaw.json").write_text(json.dumps(cfg, indent=2))
        srv = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--provider", "local", "--port",
                                str(sport), "--set", "breaker_threshold=1000"], stdout=open(tmp_path / "serve.log", "w"),
                               stderr=subprocess.STDOUT, env=env_for(home, where), start_new_session=True)
        gw = None
        try:
            wait_healthz(sport, 60)
            gw = Gateway(where, home, gport, tmp_path / "gateway.log")
            assert gw.wait_for(r"\[gateway\] ready", 90), gw.text()[-3000:]
            for m in TURNS + ["Also, the database host is db-7.internal:5432 and it must stay read-only.",
                              "Now check replication lag on db-7 and tell me the number."]:
                r = openclaw(where, home, "agent", "--session-key", KEY, "--message", m, timeout=180)
                assert r.returncode == 0, r.stdout + r.stderr
            r = openclaw(where, home, "sessions", "compact", KEY, timeout=300)
        finally:
            if gw is not None:
                gw.stop()
            os.killpg(srv.pid, signal.SIGTERM)
            srv.wait(timeout=30)
    log = (tmp_path / "serve.log").read_text()
    answered = [line for line in log.splitlines() if " answered at L" in line]
    assert r.returncode == 0 and "Compacted session" in r.stdout, (r.stdout + r.stderr, log[-3000:])
    assert answered and "failed quality checks" not in gw.text(), log[-3000:]
