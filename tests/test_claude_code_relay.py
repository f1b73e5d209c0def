"""The valve for Claude Code (issue #56): the real Claude Code (pinned, headless) with
ANTHROPIC_BASE_URL at `compaction-guard serve --agent claude-code`, whose upstream is the
scripted Anthropic server on 127.0.0.1. Ordinary turns (text, a tool call, streamed) reach the
agent as the upstream sent them, with the agent's own credentials going to the upstream only;
a compaction whose upstream answer is degenerate leaves the guard's L2 or L3 in the transcript;
a good one is stored unchanged."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_code_real import env_for, require, run, transcript
from livekit import free_port, wait_healthz
from modelkit.anthropic import ScriptedAnthropic, is_compaction
from test_claude_code_live import GOOD, PREAMBLE, incident_log

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-ant-test-key-0000"          # what claude_code_real.env_for gives Claude Code
LOOP = "<summary>\n" + "The user asked about the deploy ticket and I said I would check it. " * 80
GOOD_L2 = ("<summary>\n1. Primary Request and Intent: keep deploy ticket OPS-4411 and branch release/2.7; the "
           "incident log of SUP-82841 was shared.\n7. Pending Tasks: answer questions about the log.\n</summary>")
OVERLOADED = {"status": 529, "error": {"type": "overloaded_error", "message": "Overloaded"}}


class Serve:
    """`compaction-guard serve --agent claude-code` as a user starts it, in a process of its own."""

    def __init__(self, cfg: Path, upstream: str, *extra):
        self.port = free_port()
        self.log = cfg.parent / "serve.log"
        env = dict(os.environ, CLAUDE_CONFIG_DIR=str(cfg), HOME=str(cfg))
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--agent", "claude-code",
                                      "--base-url", upstream, "--port", str(self.port), *extra],
                                     env=env, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        if not wait_healthz(self.port, 60):
            self.proc.kill()
            raise AssertionError(self.log.read_text())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> str:
        self.proc.terminate()
        self.proc.wait(30)
        return self.log.read_text()


def guard(*args, env):
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def summaries_in(cfg: Path, sid: str) -> list:
    return [json.loads(x) for x in open(transcript(cfg, sid), encoding="utf-8") if '"isCompactSummary":true' in x]


def stored(entry: dict) -> str:
    from compaction_guard.agents.claude_code.store import summary_text
    return summary_text(entry)


def hook_said(cfg: Path) -> list:
    """The sessions' verdicts the guard's state holds (the hook's and the relay's)."""
    import yaml
    state = yaml.safe_load((cfg / "compaction-guard" / "state.yaml").read_text())
    return [v for v in (state.get("sessions") or {}).values() if isinstance(v, dict)]


def session(tmp_path, upstream, *flags, **extra):
    cfg, work = tmp_path / "claude", tmp_path / "work"
    cfg.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text("deploy notes: OPS-4411 goes out from branch release/2.7\n")
    srv = Serve(cfg, upstream.url, *flags)
    return cfg, work, srv, env_for(cfg, srv.url, **extra)


def test_ordinary_turns_pass_through_and_a_good_summary_is_stored_unchanged(tmp_path):
    binary = require()
    read = {"tool_use": {"name": "Read", "input": {"file_path": str(tmp_path / "work" / "notes.txt")}}}
    with ScriptedAnthropic(summaries=[GOOD], replies=[read, "The deploy ticket is OPS-4411."],
                           input_tokens=30000) as up:
        cfg, work, srv, env = session(tmp_path, up)
        try:
            first = run(binary, work, env, "Read notes.txt and tell me the deploy ticket.", "--allowedTools", "Read")
            sid = first["session_id"]
            # the tool call reached Claude Code whole: it ran it, and its result went back upstream
            assert first["result"] == "The deploy ticket is OPS-4411.", first
            results = [b for r in up.requests for m in r["body"].get("messages", []) if isinstance(m.get("content"), list)
                       for b in m["content"] if b.get("type") == "tool_result"]
            assert results and "release/2.7" in json.dumps(results)
            run(binary, work, env, "Noted the log? Reply OK.", "--resume", sid)
            run(binary, work, env, "/compact", "--resume", sid)
        finally:
            log = srv.stop()
        # the agent's credentials went to the upstream with every request, its path and query as sent
        assert up.requests and all(r["key"] == KEY for r in up.requests if r["path"] != "/")
        assert all(r["path"].startswith("/v1/messages") for r in up.requests if r["path"] != "/")
        assert any(r["path"] == "/v1/messages?beta=true" for r in up.requests)
        assert all("anthropic-version" in r["headers"] for r in up.requests if r["path"].startswith("/v1/"))
        asked = [r for r in up.requests if is_compaction(r["body"])]
        assert len(asked) == 1                  # passed at L1: no second call
        got = summaries_in(cfg, sid)
        assert got and stored(got[-1]) == GOOD[GOOD.index("<summary>") + 9:GOOD.index("</summary>")].strip()
        # nothing of the key in the guard's log or state
        assert KEY not in log and KEY[:12] not in log
        state = (cfg / "compaction-guard" / "state.yaml").read_text()
        assert KEY[:12] not in state
        report = guard("--agent", "claude-code", "--report", "--format", "json", env=env)
        doc = json.loads(report.stdout)
        assert doc["level_usage"]["l1_normal"] == 1, doc["level_usage"]


@pytest.mark.parametrize("trigger", ["manual", "auto"])
def test_degenerate_compactions_leave_the_guards_summary_in_the_transcript(tmp_path, trigger):
    binary = require()
    if trigger == "manual":
        # each /compact gets L1's and L2's answers in turn; the last passes at L2
        script = [PREAMBLE, PREAMBLE, LOOP, LOOP, "", "", OVERLOADED, OVERLOADED, PREAMBLE, GOOD_L2]
        extra, tokens = {}, 30000
    else:
        script = [LOOP]
        extra, tokens = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000", "ANTHROPIC_MODEL": "claude-sonnet-4-5"}, 196000
    with ScriptedAnthropic(summaries=script, input_tokens=tokens) as up:
        # four L3s in a row would open the circuit breaker (the upstream skipped for a while): not here
        cfg, work, srv, env = session(tmp_path, up, "--set", "breaker_threshold=10", **extra)
        # the guard's hooks beside the relay: a summary the relay wrote is not warned about
        assert guard("install", "claude-code", env=env).returncode == 0
        try:
            sid = run(binary, work, env, "Keep deploy ticket OPS-4411 and branch release/2.7 in mind. Here is the "
                      "incident log:\n" + incident_log(3000 if trigger == "auto" else 6000))["session_id"]
            run(binary, work, env, "Noted the log? Reply OK.", "--resume", sid)
            if trigger == "manual":
                for n in range(5):
                    run(binary, work, env, "/compact", "--resume", sid)
                    if n < 4:
                        run(binary, work, env, f"Step {n}: what was the deploy ticket?", "--resume", sid)
            else:
                run(binary, work, env, "What is the ticket?", "--resume", sid)
        finally:
            log = srv.stop()
        got = [stored(e) for e in summaries_in(cfg, sid)]
        bounds = [json.loads(x) for x in open(transcript(cfg, sid), encoding="utf-8") if '"compact_boundary"' in x]
    assert got, log
    if trigger == "manual":
        assert len(got) == 5, log
        l3, l2 = got[:4], got[4]
        assert l2 == GOOD_L2[len("<summary>\n"):-len("\n</summary>")], l2      # L2's answer, unchanged
        assert "answered at L2" in log
    else:
        assert all(b["compactMetadata"]["trigger"] == "auto" for b in bounds)
        l3 = got
    for text in l3:                 # the guard's L3: the conversation's own lines in Claude Code's sections
        assert "compaction-resilience-guard L3" in text, text[:300]
        assert "1. Primary Request and Intent:" in text and "OPS-4411" in text
        assert PREAMBLE not in text and "I said I would check it. The user asked" not in text
    assert log.count("answered at L3") == len(l3), log
    # the PostCompact hook knew each of them as the guard's own: no warning reached the model
    told = [json.dumps(r["body"]) for r in up.requests if "failed its check" in json.dumps(r["body"])]
    assert not told, [t[t.index("failed its check"):][:200] for t in told]
    assert hook_said(cfg) == [] or all(not v.get("failures") for v in hook_said(cfg))
    # a plain check passes them: the guard's own L3 (serve kept a key of each answer) is level usage,
    # counted as a fallback's, and no failure
    check = guard("--agent", "claude-code", "--check", "--format", "json", env=env)
    doc = json.loads(check.stdout)
    assert doc["results"], check.stderr
    for r in doc["results"]:
        assert r["valid"], r
    assert sum(bool(r.get("guard_l3")) for r in doc["results"]) == len(l3), doc["results"]
