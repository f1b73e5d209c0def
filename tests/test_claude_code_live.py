"""Behind the real Claude Code (issue #27): the pinned binary, headless, against the scripted
Anthropic server on 127.0.0.1; the guard's hook installed by its own command; real manual and
automatic compactions; what the agent's next request carried."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_code_real import env_for, require, run, transcript
from modelkit.anthropic import ScriptedAnthropic

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "corpus" / "real"
PREAMBLE = "Let me read the notes file."
GOOD = ("<analysis>The user shared an incident log and asked me to keep the ticket.</analysis>\n<summary>\n"
        "1. Primary Request and Intent: keep deploy ticket OPS-4411 and branch release/2.7 in mind; the incident log "
        "of SUP-82841 (Cloud Storage writes failing for the service account) was shared for review.\n"
        "2. Key Technical Concepts: gcloud edge-cloud networking subnets, --update-labels, parallel=N.\n"
        "3. Pending Tasks: answer questions about the log.\n</summary>")


def incident_log(tokens: int = 6000) -> str:
    rows = [json.loads(x) for x in open(REAL / "openclaw_histories.jsonl", encoding="utf-8")]
    text = "\n\n".join(r["text"] for r in rows if r["lang"] == "en")
    while len(text) < tokens * 4:
        text += "\n\n" + text
    return text[:tokens * 4]


def guard(*args, env):
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def setup(tmp_path, server, **extra):
    cfg, work = tmp_path / "claude", tmp_path / "work"
    cfg.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text("deploy notes: OPS-4411\n")
    env = env_for(cfg, server.url, **extra)
    inst = guard("install", "claude-code", env=env)
    assert inst.returncode == 0, inst.stderr
    assert "PostCompact" in inst.stdout and "UserPromptSubmit" in inst.stdout
    return cfg, work, env


def compaction_requests(server):
    from modelkit.anthropic import is_compaction
    return [r for r in server.requests if is_compaction(r["body"])]


def test_a_preamble_stored_as_the_summary_is_caught_and_the_agent_is_told_what_was_lost(tmp_path):
    binary = require()
    with ScriptedAnthropic(summaries=[PREAMBLE], input_tokens=30000) as server:
        cfg, work, env = setup(tmp_path, server)
        first = run(binary, work, env, "Keep deploy ticket OPS-4411 and branch release/2.7 in mind. Here is the "
                    "incident log:\n" + incident_log())
        sid = first["session_id"]
        run(binary, work, env, "Noted the log? Reply OK.", "--resume", sid)
        run(binary, work, env, "/compact", "--resume", sid)
        # PreCompact: the history's identifiers were appended to the summary prompt
        asked = compaction_requests(server)
        assert asked, [r["path"] for r in server.requests]
        prompt = json.dumps(asked[-1]["body"]["messages"][-1])
        assert "Keep these identifiers verbatim" in prompt and "OPS-4411" in prompt
        # the transcript holds the preamble as the summary; the store and the hook both say so
        t = transcript(cfg, sid)
        stored = [json.loads(x) for x in open(t, encoding="utf-8") if '"isCompactSummary":true' in x]
        assert stored and PREAMBLE in json.dumps(stored[-1])
        before = len(server.requests)
        run(binary, work, env, "What was the deploy ticket?", "--resume", sid)
        later = json.dumps([r["body"] for r in server.requests[before:]])
        assert "the last compaction of this session failed its check" in later
        assert "OPS-4411" in later
        # once only: the next turn's request holds it once (in the history), not again
        run(binary, work, env, "And the branch?", "--resume", sid)
        assert json.dumps(server.requests[-1]["body"]).count("the last compaction of this session failed") == 1
        check = guard("--agent", "claude-code", "--check", "--format", "json", env=env)
        status = guard("--agent", "claude-code", "--status", env=env)
        report = guard("--agent", "claude-code", "--report", env=env)
    assert f"claude-code:{sid}: empty" in report.stdout, report.stdout
    assert check.returncode == 1, check.stderr
    doc = json.loads(check.stdout)
    fails = [r for r in doc["results"] if not r["valid"]]
    assert fails and "empty" in fails[0]["failures"], doc["results"]
    assert "Claude Code configuration directory" in status.stdout and "DEGRADED" in status.stdout


def test_a_good_summary_passes_and_nothing_is_added(tmp_path):
    binary = require()
    with ScriptedAnthropic(summaries=[GOOD], input_tokens=30000) as server:
        cfg, work, env = setup(tmp_path, server)
        first = run(binary, work, env, "Keep deploy ticket OPS-4411 and branch release/2.7 in mind. Here is the "
                    "incident log:\n" + incident_log())
        sid = first["session_id"]
        run(binary, work, env, "/compact", "--resume", sid)
        before = len(server.requests)
        run(binary, work, env, "What was the deploy ticket?", "--resume", sid)
        assert "compaction-resilience-guard" not in json.dumps([r["body"] for r in server.requests[before:]])
        check = guard("--agent", "claude-code", "--check", "--format", "json", env=env)
    doc = json.loads(check.stdout)
    assert doc["results"] and all(r["valid"] for r in doc["results"]), doc["results"]


def test_install_is_idempotent_keeps_other_settings_and_uninstall_takes_only_its_own(tmp_path):
    cfg = tmp_path / "claude"
    cfg.mkdir()
    mine = {"model": "opus", "hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command",
                                                                                        "command": "my-linter"}]}]}}
    (cfg / "settings.json").write_text(json.dumps(mine))
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(cfg))
    first = guard("install", "claude-code", env=env)
    again = guard("install", "claude-code", env=env)
    assert first.returncode == 0 and "added on PreCompact, PostCompact, UserPromptSubmit, PostToolUse" in first.stdout
    assert "nothing changed" in again.stdout
    data = json.loads((cfg / "settings.json").read_text())
    assert data["model"] == "opus"
    cmds = [h["command"] for g in data["hooks"]["PostToolUse"] for h in g["hooks"]]
    assert "my-linter" in cmds and sum("hook claude-code" in c for c in cmds) == 1
    out = guard("uninstall", "claude-code", env=env)
    assert out.returncode == 0
    assert json.loads((cfg / "settings.json").read_text()) == mine


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"hook_event_name": "PostCompact"}',
                                   '{"hook_event_name": "PostCompact", "compact_summary": 5, "transcript_path": 7}',
                                   '{"hook_event_name": "PreCompact", "transcript_path": "/nonexistent/x.jsonl"}',
                                   '{"hook_event_name": "UserPromptSubmit", "session_id": "s"}'])
def test_the_hook_exits_0_whatever_it_is_given(tmp_path, stdin):
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(tmp_path / "claude"))
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), "hook", "claude-code"], input=stdin, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout == "" or json.loads(p.stdout)


def test_automatic_compaction_is_checked_too(tmp_path):
    """Claude Code compacts on its own when the usage it is told nears its window
    (CLAUDE_CODE_AUTO_COMPACT_WINDOW, a model with a 200k window): the same hook, the same store."""
    binary = require()
    with ScriptedAnthropic(summaries=[PREAMBLE], input_tokens=196000) as server:
        cfg, work, env = setup(tmp_path, server, CLAUDE_CODE_AUTO_COMPACT_WINDOW="200000",
                               ANTHROPIC_MODEL="claude-sonnet-4-5")
        sid = run(binary, work, env, "Keep deploy ticket OPS-4411 in mind. Log:\n" + incident_log(3000))["session_id"]
        run(binary, work, env, "What is the ticket?", "--resume", sid)
        run(binary, work, env, "And the branch?", "--resume", sid)
        assert compaction_requests(server)
        bounds = [json.loads(x) for x in open(transcript(cfg, sid), encoding="utf-8") if '"compact_boundary"' in x]
        assert bounds and all(b["compactMetadata"]["trigger"] == "auto" for b in bounds)
        assert "the last compaction of this session failed its check" in json.dumps(server.requests[-1]["body"])
        check = guard("--agent", "claude-code", "--check", "--format", "json", env=env)
    doc = json.loads(check.stdout)
    assert [r for r in doc["results"] if not r["valid"]], doc["results"]
