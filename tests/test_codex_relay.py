"""The valve for Codex (issue #57): the real Codex CLI (pinned 0.171.0, headless, offline in a
network namespace) with its custom provider's base_url at `compaction-guard serve --agent codex`,
whose upstream is the scripted Responses server on 127.0.0.1 (tests/codex_relay_run.py runs the
whole session once). Ordinary turns and a tool call reach Codex as the upstream sent them, with
Codex's credential going to the upstream only; automatic and manual compactions whose upstream
answer is degenerate (a preamble, HTTP 500, a loop, empty) leave the guard's L3 or L2 in the
rollout, a good one is stored unchanged, and a plain check passes them or names the fallback."""
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recordings" / "codex"))

from codex_real import binary, rollout_for  # noqa: E402
from livekit import check_passes_and_knows_the_guards_l3, guard, require, session  # noqa: E402

from compaction_guard.agents.codex.store import summary_of  # noqa: E402
from compaction_guard.structured import NOTE  # noqa: E402

KEY = "Bearer sk-test-0000"          # what codex_real.env_for gives Codex (SCRIPTED_API_KEY)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    require(binary() is not None, "Codex", "tests/recordings/codex/setup_codex.sh", "GUARD_REQUIRE_CODEX")
    out = tmp_path_factory.mktemp("codex-relay")
    info = session("codex_relay_run.py", out)
    home = out / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "GUARD_"))}
    env.update(HOME=str(home), CODEX_HOME=str(home / ".codex"))
    return info, home, env


def summaries(home: Path, thread: str) -> list:
    lines = [json.loads(x) for x in open(rollout_for(home / ".codex", thread), encoding="utf-8")]
    return [summary_of(d["payload"]["message"]) for d in lines if d.get("type") == "compacted"]


def test_ordinary_turns_and_a_tool_call_reach_codex_as_the_upstream_sent_them(run):
    info, home, env = run
    steps = info["steps"]
    assert all(s.get("rc") == 0 for s in steps if s["kind"] == "turn"), steps
    messages = [[e["item"] for e in s["events"] if e["item"]["type"] == "agent_message"] for s in steps
                if s["kind"] == "turn"]
    assert messages[0][-1]["text"] == "Noted. I will keep that in mind. (reply 1)"
    # the tool call the upstream asked for: Codex ran it, and its output went back upstream
    calls = [e["item"] for e in steps[1]["events"] if e["item"]["type"] == "command_execution"]
    assert len(calls) == 1 and "cat notes.txt" in calls[0]["command"] and calls[0]["exit_code"] == 0
    assert calls[0]["aggregated_output"] == "deploy notes: OPS-4411\n"
    assert any("deploy notes: OPS-4411" in str(o) for o in info["tool_outputs"])
    # every request went to the upstream's path with Codex's own credential; none of it in the guard's log
    # serve and the provider as the README's routing line writes them
    assert info["readme"]["command"] == "compaction-guard serve --agent codex --base-url URL"
    assert info["readme"]["base_url"] == "http://127.0.0.1:8742"
    posts = [r for r in info["requests"] if r["method"] == "POST"]
    assert posts and all(r["path"] == "/v1/responses" and r["key"] == KEY for r in posts)
    assert "sk-test-0000" not in info["serve_log"]
    state = (home / ".codex" / "compaction-guard" / "state.yaml").read_text()
    assert "sk-test-0000" not in state


def test_every_compaction_leaves_the_upstreams_good_answer_or_the_guards_in_the_rollout(run):
    info, home, env = run
    script = info["script"]
    assert all(s.get("error") is None and s.get("compaction_items") == 2 for s in info["steps"]
               if s["kind"] == "manual"), info["steps"]
    got = summaries(home, info["thread"])
    assert len(got) == len(script["levels"]) == 6, info["serve_log"]
    levels = [line.split("answered at ")[1][:2] for line in info["serve_log"].splitlines() if "answered at" in line]
    assert levels == script["levels"] == ["L1", "L3", "L3", "L3", "L3", "L2"], info["serve_log"]
    assert got[0] == script["good"]                # passed at L1: stored as the upstream wrote it
    assert got[5] == script["good_l2"]             # L2's answer, as the upstream wrote it
    for text in got[1:5]:                          # the guard's L3: Codex's handoff parts, the conversation's lines
        assert text.startswith("## Current progress and key decisions made") and NOTE in text, text[:300]
        assert "## What remains to be done (clear next steps)" in text and "OPS-4411" in text
        assert script["preamble"] not in text and script["loop"][:80] not in text
    # what the model sees next: the last summary, after the user's own messages
    texts = [m["text"] for m in info["last_input"]]
    assert any(script["good_l2"] in t for t in texts), texts[-3:]


def test_the_state_has_each_verdict_and_a_plain_check_passes_them_knowing_the_guards_l3(run):
    info, home, env = run
    doc = json.loads(guard(env, "--agent", "codex", "--report", "--format", "json").stdout)
    assert doc["level_usage"] == {"l1_normal": 1, "l2_aggressive": 1, "l3_deterministic": 4}, doc["level_usage"]
    check_passes_and_knows_the_guards_l3(env, "codex", 6)
