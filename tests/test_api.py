"""The stable Python API (compaction_guard.api): a verdict for one summary, and a compaction
through the chain with any summarizer, recorded in the frameworks' state when asked."""
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_guard.api import Ask, Compaction, Verdict, acompact, check_summary, compact, render_history
from compaction_guard.state import StateStore, state_path
from compaction_guard.settings import DEFAULT

ROOT = Path(__file__).resolve().parents[1]

HISTORY = [
    ("user", "Please fix ticket OPS-4471: the deploy of api-gateway v2.3.1 fails on /etc/gw/routes.yaml line 88."),
    ("assistant", "I read /etc/gw/routes.yaml; line 88 declares the route /v2/orders a second time, which the "
                  "gateway rejects at start."),
    ("user", "Which commit added it?"),
    ("assistant", "Commit 9f3c2ab by the payments team, merged on Tuesday into release/2.3."),
    ("user", "What else changed in that release? I want to know before we touch it."),
    ("assistant", "Between v2.3.0 and v2.3.1 the gateway gained rate limits for /v2/payments (120 requests a "
                  "minute per key), the health check moved from /healthz to /livez, and the TLS bundle was "
                  "rotated. The rate limits live in /etc/gw/limits.yaml; nobody touched the TLS settings since. "
                  "The payments team also raised the upstream timeout from 15 s to 30 s for /v2/orders, which "
                  "is where the duplicate came from: they copied the whole block to change one value."),
    ("user", "Are there tests for the routes file?"),
    ("assistant", "Yes: tests/gateway/test_routes.py loads the file and fails on any duplicate path, but the "
                  "CI job that runs it, gateway-lint, was skipped on that merge because the label skip-lint was "
                  "set on PR 1187. Locally the test fails with DuplicateRouteError('/v2/orders')."),
    ("user", "Remove the duplicate, keep the --strict flag on, and open a PR against release/2.3."),
]
GOOD = ("Ticket OPS-4471: the api-gateway v2.3.1 deploy fails because /etc/gw/routes.yaml line 88 declares "
        "/v2/orders twice (added in commit 9f3c2ab on release/2.3). Next: remove the duplicate route, keep "
        "--strict on, open a PR against release/2.3.")
PREAMBLE = "Let me read the notes file first."


def test_check_summary_gives_kinds_and_reasons():
    bad = check_summary(PREAMBLE, HISTORY)
    assert isinstance(bad, Verdict) and not bad.valid and bad.failures == ("empty",)
    assert "OPS-4471" in bad.reasons["empty"]          # it names what the history held
    good = check_summary(GOOD, HISTORY)
    assert good.valid and not good.failures and good.input_tokens > good.output_tokens
    loop = check_summary("I will check the route. " * 40, HISTORY)
    assert "repetition" in loop.failures
    assert check_summary(GOOD, HISTORY, previous=GOOD).failures == ("stale",)
    assert json.loads(json.dumps(bad.to_dict()))["failures"] == ["empty"]


def test_history_is_rendered_as_turns_whatever_its_shape():
    as_pairs = render_history(HISTORY[:2])
    as_dicts = render_history([{"role": "human", "content": HISTORY[0][1]}, {"role": "ai", "content": HISTORY[1][1]}])
    assert as_pairs == as_dicts and as_pairs.startswith("[User]: Please fix") and "\n[Assistant]: I read" in as_pairs
    assert render_history("plain text stays") == "plain text stays"


def test_a_good_answer_is_kept_unchanged_at_level_1():
    asks = []
    done = compact(HISTORY, lambda ask: asks.append(ask) or GOOD)
    assert isinstance(done, Compaction) and done.level == 1 and done.summary == GOOD and not done.failures
    (ask,) = asks
    assert isinstance(ask, Ask) and not ask.aggressive and "OPS-4471" in ask.prompt and ask.system


@pytest.mark.parametrize("bad", [PREAMBLE, "Error generating summary: Connection error.",
                                 "I'm sorry, but I can't help with that request.",
                                 "The route is fixed. " * 60])
def test_a_bad_answer_is_redone_aggressively(bad):
    asks = []
    done = compact(HISTORY, lambda ask: asks.append(ask) or (bad if ask.level == 1 else GOOD))
    assert done.level == 2 and done.summary == GOOD and done.failures and not done.attempts[0].valid
    assert asks[1].aggressive and asks[1].target_tokens < asks[0].target_tokens
    assert "Be brief" in asks[1].instruction


def test_raising_at_every_level_still_answers_with_the_identifiers_and_the_latest_ask():
    def down(ask):
        raise ConnectionError("HTTP 500 from the model")
    done = compact(HISTORY, down)
    assert done.level == 3 and done.failures == ("error",)
    for ident in ("OPS-4471", "/etc/gw/routes.yaml", "9f3c2ab", "release/2.3"):
        assert ident in done.summary
    assert "open a PR against release/2.3" in done.summary and done.output_tokens < done.input_tokens
    assert "HTTP 500" in done.attempts[0].reasons["error"]


def test_the_frameworks_prompt_sections_are_demanded_and_l3_is_written_in_them():
    prompt = ("Summarize the conversation.\n\n## SESSION INTENT\nWhat the user wants.\n\n## ARTIFACTS\nFiles.\n\n"
              "## NEXT STEPS\nWhat remains.\n\n<messages>\n{messages}\n</messages>")
    assert "format" in check_summary(GOOD, HISTORY, prompt=prompt).failures     # no sections
    done = compact(HISTORY, lambda ask: GOOD, prompt=prompt)
    assert done.level == 3 and done.failures == ("format",)
    for h in ("## SESSION INTENT", "## ARTIFACTS", "## NEXT STEPS"):
        assert h in done.summary
    artifacts = done.summary.split("## ARTIFACTS")[1].split("##")[0]
    assert "/etc/gw/routes.yaml" in artifacts and "OPS-4471" in artifacts


def test_acompact_awaits_an_async_summarizer_and_times_out_a_slow_one():
    async def slow(ask):
        await asyncio.sleep(5 if ask.level == 1 else 0)
        return GOOD

    async def main():
        return await acompact(HISTORY, slow, deadline_seconds=0.5)
    done = asyncio.run(main())
    assert done.level == 3 and done.attempts[0].failures == ("timeout",)

    async def fine(ask):
        return GOOD
    assert asyncio.run(acompact(HISTORY, fine)).summary == GOOD


def guard(home: Path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "CLAUDE_", "CODEX_", "GEMINI_",
                                                                   "OPENCODE_", "XDG_", "GUARD_", "COMPACTION_GUARD"))}
    env["HOME"] = str(home)
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_recorded_run_is_in_the_frameworks_state_that_check_status_and_report_read(tmp_path, monkeypatch):
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("COMPACTION_GUARD_FRAMEWORKS_DIR", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    compact(HISTORY, lambda ask: GOOD, record="langchain")
    compact(HISTORY, lambda ask: PREAMBLE if ask.level == 1 else GOOD, record="pydantic-ai")
    where = home / ".local" / "state" / "compaction-guard" / "frameworks" / "state.yaml"
    state = StateStore(where, DEFAULT).read()
    assert state["totals"]["via"] == {"langchain": 1, "pydantic-ai": 1}
    assert state["level_usage"] == {"l1_normal": 1, "l2_aggressive": 1, "l3_deterministic": 0}
    assert [f["source"] for f in state["failures"]] == ["pydantic-ai"]
    assert PREAMBLE not in where.read_text() and "OPS-4471" not in where.read_text()   # ids and figures only
    p = guard(home, "--check")
    assert p.returncode == 0, p.stderr
    assert "frameworks: HEALTHY" in p.stdout and "checked as they are made, 2 compactions (langchain 1, pydantic-ai 1" \
        in p.stdout
    st = json.loads(guard(home, "--status", "--format", "json").stdout)
    assert st["agent"] == "frameworks" and st["level_usage"]["l2_aggressive"] == 1
    rep = guard(home, "--agent", "frameworks", "--report").stdout
    assert "langchain: 1, pydantic-ai: 1" in rep and "pydantic-ai" in rep and "empty" in rep
    # nothing recorded yet: said where, never HEALTHY
    empty = tmp_path / "empty"
    (empty / ".local" / "state" / "compaction-guard" / "frameworks").mkdir(parents=True)
    p = guard(empty, "--agent", "frameworks", "--check")
    assert p.returncode == 2 and "Status: NO_STORE" in p.stdout and "no LangChain" in p.stderr


def test_a_state_that_cannot_be_written_never_stops_the_compaction(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    done = compact(HISTORY, lambda ask: GOOD, record="langchain", home=blocker / "sub")
    assert done.summary == GOOD and any("state was not written" in n for n in done.notes)


def test_the_cli_compact_runs_through_the_api(tmp_path):
    text = render_history(HISTORY)
    src = tmp_path / "h.txt"
    src.write_text(text)
    home = tmp_path / "oc"
    home.mkdir()
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), "--home", str(home), "--compact", "--input", str(src),
                        "--fault", "L1=error", "--format", "json"], capture_output=True, text=True, timeout=120,
                       env={k: v for k, v in os.environ.items() if not k.startswith(("GUARD_", "OPENCLAW_"))})
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["level_used"] == 2 and doc["attempts"][0]["failures"] == ["error"]
    state = StateStore(state_path(home), DEFAULT).read()
    assert state["totals"]["via"] == {"chain": 1}
