"""The valve for Gemini CLI (issue #57): the real Gemini CLI (pinned 0.61.0, headless, offline in a
network namespace) with GOOGLE_GEMINI_BASE_URL at `compaction-guard serve --agent gemini`, whose
upstream is the scripted Gemini API on 127.0.0.1 (tests/gemini_relay_run.py runs the whole session
once). Ordinary streamed turns and a tool call reach Gemini CLI as the upstream sent them, with its
key going to the upstream only; each compression is two calls (the summary, then the verify call
that may rewrite it), both checked: degenerate answers (a preamble, a loop, HTTP 500, empty) leave
the guard's L3 or L2 in the session file, the answer the guard chose surviving the verify call; a
good one is stored unchanged; a plain check passes them or names the fallback."""
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recordings" / "gemini"))

import gemini_real as g  # noqa: E402
from livekit import check_passes_and_knows_the_guards_l3, guard, require, session  # noqa: E402

from compaction_guard.structured import NOTE  # noqa: E402

KEY = "sk-test-0000"                 # what gemini_real.env_for gives Gemini CLI (GEMINI_API_KEY)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    require(g.binary() is not None, "Gemini CLI", "tests/recordings/gemini/setup_gemini.sh", "GUARD_REQUIRE_GEMINI")
    out = tmp_path_factory.mktemp("gemini-relay")
    info = session("gemini_relay_run.py", out)
    home = out / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GUARD_"))}
    env.update(HOME=str(home))
    return info, home, env


def stored(home: Path) -> list:
    """The summary of each compression in the session file, in order (a --resume writes the
    loaded history again: each summary counted once)."""
    path = max(g.sessions(home), key=lambda p: p.stat().st_size)     # the session; the rest are resume stubs
    out = []
    for rec in g.compressions(path):
        msgs = rec["$set"]["messages"]
        text = next(g._content_text(a) for a, b in zip(msgs, msgs[1:]) if a.get("type") == "user"
                    and g._content_text(b) == g.GOT_IT)
        if not out or out[-1] != text:
            out.append(text)
    return out


def test_ordinary_turns_and_a_tool_call_reach_gemini_cli_as_the_upstream_sent_them(run):
    info, home, env = run
    assert [r["rc"] for r in info["runs"]] == [0] * len(info["runs"]), [r["stderr"] for r in info["runs"]]
    assert all(r["response"] == "Noted." for r in info["runs"]), [r["response"] for r in info["runs"]]
    first = info["runs"][0]["requests"]
    assert first == ["streamGenerateContent", "streamGenerateContent"]       # the tool call, then its answer
    assert any(isinstance(t, dict) and t.get("output") == "deploy notes: OPS-4411\n" for t in info["tool_results"])
    # serve and Gemini CLI as the README's routing line writes them
    assert info["readme"] == {"command": "compaction-guard serve --agent gemini",
                              "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8742"}
    posts = [r for r in info["requests"] if r["path"].startswith("/v1beta/")]
    assert posts and all(r["key"] == KEY for r in posts)
    assert KEY not in info["serve_log"]
    assert KEY not in (home / ".gemini" / "compaction-guard" / "state.yaml").read_text()


def test_both_calls_of_every_compression_are_checked_and_the_session_keeps_a_good_summary(run):
    info, home, env = run
    script = info["script"]
    # (first call, verify call) per compression: auto good, auto preamble, manual loop/500, manual empty/preamble
    levels = [line.split("answered at ")[1][:2] for line in info["serve_log"].splitlines() if "answered at" in line]
    assert levels == script["levels"] == ["L1", "L1", "L3", "L3", "L3", "L3", "L2", "L3"], info["serve_log"]
    got = stored(home)
    assert len(got) == 4, got
    assert got[0] == script["good"]                # the verify call's answer, passed at L1: stored unchanged
    for text in got[1:3]:                          # the guard's L3, kept through the verify call
        assert text.startswith("<state_snapshot>\n<overall_goal>") and text.endswith("</state_snapshot>"), text[:200]
        assert NOTE in text and "OPS-4411" in text and "<task_state>" in text
        assert script["preamble"] not in text and script["loop"][:80] not in text
    # the first call's L2 answer, which the verify call's upstream spoiled: it survived
    assert got[3] == script["good_l2"]
    # and the next model call carries it
    assert any(script["good_l2"] in t for req in info["after"] for _role, t in req), info["after"][:1]


def test_the_state_has_each_verdict_and_a_plain_check_passes_them_knowing_the_guards_l3(run):
    info, home, env = run
    doc = json.loads(guard(env, "--agent", "gemini", "--report", "--format", "json").stdout)
    assert doc["level_usage"] == {"l1_normal": 2, "l2_aggressive": 1, "l3_deterministic": 5}, doc["level_usage"]
    check_passes_and_knows_the_guards_l3(env, "gemini", 4)
