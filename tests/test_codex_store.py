"""Codex's rollouts as a store, its hook and its install, on what Codex CLI 0.171.0 really wrote
(tests/recordings/codex/data, recorded by tests/recordings/codex/record.py): no binary needed."""
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_guard.agents.codex import hook, store
from compaction_guard.agents.codex.layout import resolve
from compaction_guard.check import check_record
from compaction_guard.settings import DEFAULT

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "recordings" / "codex" / "data"


def thread_of(case: str) -> str:
    return json.loads((DATA / f"{case}.jsonl").open().readline())["payload"]["id"]


def codex_home(tmp_path, *cases) -> Path:
    """A Codex home holding the recorded rollouts of `cases` where Codex keeps them."""
    home = tmp_path / ".codex"
    day = home / "sessions" / "2026" / "12" / "05"
    day.mkdir(parents=True, exist_ok=True)
    for case in cases:
        shutil.copy(DATA / f"{case}.jsonl", day / f"rollout-2026-12-05T14-25-58-{thread_of(case)}.jsonl")
    return home


def guard(env_home: Path, *args, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "GUARD_", "OPENCLAW_", "CLAUDE_"))}
    env.update(HOME=str(env_home.parent), CODEX_HOME=str(env_home))
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=120, input=stdin)


def records(case: str) -> list:
    return list(store.RolloutSource(DATA / f"{case}.jsonl").records(None))


@pytest.mark.parametrize("case, kinds", [
    ("good-auto", []), ("good-manual", []), ("good-preturn", []), ("good-short-auto", []), ("good-short-manual", []),
    ("preamble-auto", ["empty"]), ("preamble-short-auto", ["empty"]), ("preamble-manual", ["empty"]),
    ("loop-auto", ["repetition"]), ("echo-auto", ["empty"]), ("language-auto", ["language_drift"]),
    # Codex stored its last reply when the compaction answer was empty (manual and before a turn)
    ("empty-manual", ["empty"]), ("whitespace-preturn", ["empty"]), ("nomessage-manual", ["empty"]),
])
def test_each_compaction_codex_stored_is_one_record_with_its_verdict(case, kinds):
    (rec,) = records(case)
    assert check_record(rec, DEFAULT).failures == kinds
    raw = next(json.loads(x) for x in (DATA / f"{case}.jsonl").open() if '"compacted"' in x)
    assert rec.id == raw["payload"]["window_id"] and rec.meta["thread"] == thread_of(case)
    assert not rec.content.startswith("Another language model")          # Codex's prefix taken away
    assert raw["payload"]["message"].endswith(rec.content)
    assert rec.context_before > rec.context_after > 0 and "Codex's token_count" in rec.context_source
    assert "user: Keep deploy ticket OPS-4411" in rec.input_text and "<environment_context>" not in rec.input_text


def test_codex_s_own_counts_are_the_last_turn_not_the_compaction_call():
    (rec,) = records("good-auto")
    assert (rec.context_before, rec.context_after) == (90010, 13142)       # ordinals 32 and 40 (FINDINGS.md §5)
    # a good summary longer than the short conversation it replaced did not grow Codex's context
    (short,) = records("good-short-auto")
    assert len(short.content) > len(short.input_text) and check_record(short, DEFAULT).valid


def test_dropped_compactions_leave_no_record():
    for case in ("empty-auto", "whitespace-auto", "nomessage-auto", "error-auto", "error-manual"):
        assert records(case) == []


def test_a_check_counts_each_once_and_reads_only_what_is_new(tmp_path):
    home = codex_home(tmp_path, "good-auto", "loop-auto")
    p = guard(home, "--agent", "codex", "--check", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["summaries_checked"] == 2 and doc["failures_by_kind"] == {"repetition": 1}
    assert json.loads(guard(home, "--agent", "codex", "--check", "--format", "json").stdout)["summaries_checked"] == 0
    # Codex archives the thread (the file moves): read again, not counted again
    (home / "archived_sessions").mkdir()
    loop = next(home.rglob(f"*{thread_of('loop-auto')}.jsonl"))
    loop.rename(home / "archived_sessions" / loop.name)
    guard(home, "--agent", "codex", "--check")
    rep = json.loads(guard(home, "--agent", "codex", "--report", "--format", "json").stdout)
    assert rep["stored_summaries"] == {"by_model": 2, "by_fallback": 0} and rep["failures_total"] == 1


def test_check_file_sniffs_a_rollout(tmp_path):
    home = tmp_path / ".codex"
    home.mkdir()
    p = guard(home, "--check", "--file", DATA / "preamble-auto.jsonl", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and [r["source"] for r in doc["results"]] == ["codex"]
    assert (home / "compaction-guard" / "state.yaml").is_file()


def hook_input(case: str, event: str, home: Path) -> str:
    """A hook input Codex really sent, its transcript path moved into `home`."""
    data = json.loads((DATA / f"hook-{case}-{event}.json").read_text())
    data["transcript_path"] = str(next(home.rglob(f"*{data['session_id']}.jsonl")))
    return json.dumps(data)


def run_hook(home: Path, payload: str) -> str:
    out = io.StringIO()
    assert hook.hook_main(io.StringIO(payload), out, env={"CODEX_HOME": str(home), "HOME": str(home.parent)}) == 0
    return out.getvalue()


def test_the_hook_checks_each_compaction_and_warns_once(tmp_path):
    home = codex_home(tmp_path, "preamble-manual")
    layout = resolve({"CODEX_HOME": str(home)})
    session = thread_of("preamble-manual")
    ask = json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": "go on"})
    assert run_hook(home, ask) == "" and not layout.guard_dir.exists()     # the ordinary path writes nothing
    assert run_hook(home, hook_input("preamble-manual", "PreCompact", home)) == ""
    assert run_hook(home, hook_input("preamble-manual", "PostCompact", home)) == ""
    assert hook.pending_mark(layout, session).exists() and not hook.compacting_mark(layout, session).exists()
    said = json.loads(run_hook(home, ask))["hookSpecificOutput"]
    assert said["hookEventName"] == "UserPromptSubmit"
    assert "failed its check (empty)" in said["additionalContext"] and "OPS-4411" in said["additionalContext"]
    assert run_hook(home, ask) == ""                                          # once
    st = json.loads(guard(home, "--agent", "codex", "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["failed_since_check"][0]["session"] == f"codex:{session}"
    # the check reads the same compaction: one session, under the hook's key, in --report
    assert guard(home, "--agent", "codex", "--check").returncode == 1
    report = json.loads(guard(home, "--agent", "codex", "--report", "--format", "json").stdout)
    assert [x["session"] for x in report["failed_sessions"]] == [f"codex:{session}"]


def test_a_precompact_with_no_compaction_after_it_is_a_dropped_compaction(tmp_path):
    home = codex_home(tmp_path, "empty-auto")
    session = thread_of("empty-auto")
    assert run_hook(home, hook_input("empty-auto", "PreCompact", home)) == ""
    start = json.dumps({"session_id": session, "hook_event_name": "SessionStart", "source": "resume"})
    assert run_hook(home, start) == ""           # nothing was lost from the history: the operator is told, not the model
    p = guard(home, "--agent", "codex", "--check")
    assert p.returncode == 1 and f"dropped compaction: codex:{session}" in p.stdout
    assert "its compaction call answered 1 output token(s)" in p.stdout
    report = guard(home, "--agent", "codex", "--report").stdout
    assert "(no summary stored: the compaction was dropped)" in report and "(LNone)" not in report, report
    # checked again with nothing new: the session's latest compaction is still the dropped one
    again = guard(home, "--agent", "codex", "--check")
    assert again.returncode == 1 and f"Status: DEGRADED: 1 session whose last compaction failed" in again.stdout
    rep = json.loads(guard(home, "--agent", "codex", "--report", "--format", "json").stdout)
    assert rep["failures_total"] == 1 and rep["stored_summaries"]["by_model"] == 0
    assert run_hook(home, start) == ""           # counted once
    assert json.loads(guard(home, "--agent", "codex", "--report", "--format", "json").stdout)["failures_total"] == 1


def test_a_good_compaction_leaves_no_warning(tmp_path):
    home = codex_home(tmp_path, "good-manual")
    layout = resolve({"CODEX_HOME": str(home)})
    for ev in ("PreCompact", "PostCompact"):
        assert run_hook(home, hook_input("good-manual", ev, home)) == ""
    assert not list((layout.guard_dir / "pending").glob("*")) and not list((layout.guard_dir / "compacting").glob("*"))


def test_install_keeps_the_users_hooks_and_uninstall_takes_only_the_guards(tmp_path):
    home = tmp_path / ".codex"
    home.mkdir()
    mine = {"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "notify-send compacting"}]}]},
            "other": 1}
    (home / "hooks.json").write_text(json.dumps(mine))
    p = guard(home, "install", "codex")
    assert p.returncode == 0 and "trust" in p.stdout, p.stderr
    data = json.loads((home / "hooks.json").read_text())
    assert data["other"] == 1 and data["hooks"]["PreCompact"][0] == mine["hooks"]["PreCompact"][0]
    assert all(any("hook codex" in h["command"] for g in data["hooks"][ev] for h in g["hooks"]) for ev in hook.EVENTS)
    assert json.loads(guard(home, "install", "codex", "--format", "json").stdout)["added"] == []     # idempotent
    assert guard(home, "uninstall", "codex").returncode == 0
    assert json.loads((home / "hooks.json").read_text()) == mine
    (home / "hooks.json").write_text("{not json")
    p = guard(home, "install", "codex")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "hooks.json" in p.stderr and "Traceback" not in p.stderr


def test_a_reply_codex_stored_over_a_blank_answer_fails_whatever_it_says():
    """Asked for (or before a turn), Codex stores the thread's last reply when its compaction
    model answered nothing, and keeps the blank answer apart (`compaction_output`): the record's
    `answer`. Stored text over a blank answer is `empty`, however good the text looks."""
    for case in ("empty-manual", "whitespace-preturn"):
        (rec,) = records(case)
        assert rec.answer is not None and not rec.answer.strip()
        r = check_record(rec, DEFAULT)
        assert r.failures == ["empty"] and "answered nothing" in r.reasons["empty"]
    (good,) = records("good-manual")
    assert good.answer == good.content and check_record(good, DEFAULT).valid
    from dataclasses import replace
    long_reply = replace(good, answer="")           # a long, good-looking reply in place of a blank answer
    assert check_record(long_reply, DEFAULT).failures == ["empty"]
