"""Gemini CLI's chat sessions as a store, on what Gemini CLI 0.61.0 really wrote
(tests/recordings/gemini/data, recorded by tests/recordings/gemini/record.py and
tests/gemini_live_run.py): no binary needed. The hook: test_gemini_hook.py."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_guard.agents.gemini import store
from compaction_guard.agents.gemini.layout import resolve
from compaction_guard.check import check_record
from compaction_guard.settings import DEFAULT

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "recordings" / "gemini" / "data"


def records(name: str) -> list:
    return list(store.SessionSource(DATA / f"{name}.jsonl").records(None))


@pytest.mark.parametrize("case, kinds", [
    ("good-long", []), ("good-short", []), ("manual-good", []), ("bad-then-good", []), ("hook-inject", []),
    ("preamble-long", ["empty"]), ("preamble-short", ["empty"]), ("manual-preamble", ["empty"]),
    ("good-then-bad", ["empty"]), ("loop", ["repetition"]), ("language", ["language_drift"]),
    ("skeleton", ["empty"]), ("echo", ["empty"]),
])
def test_each_compression_gemini_cli_stored_is_one_record_with_its_verdict(case, kinds):
    (rec,) = records(f"session-{case}")
    assert check_record(rec, DEFAULT).failures == kinds
    if case == "echo":      # Gemini CLI's own prompt stored as the summary: named so (issue 58)
        assert "prompt sent back" in check_record(rec, DEFAULT).reasons["empty"]
    lines = [json.loads(x) for x in (DATA / f"session-{case}.jsonl").open()]
    assert rec.meta["session"] == lines[0]["sessionId"]
    assert any(m.get("id") == rec.id for d in lines for m in (d.get("$set") or {}).get("messages", []))
    assert "Keep deploy ticket OPS-4411" in rec.input_text and "<session_context>" not in rec.input_text
    assert rec.context_before > 7000 and rec.context_after is None and "tokens.input" in rec.context_source


def test_resumes_stubs_and_refused_or_failed_compressions_are_no_records():
    for name in ("resume-only", "session-preamble-short-1", "session-good-then-bad-1", "session-inflated",
                 "session-empty", "session-whitespace", "session-verify-empty", "session-hook-inject-sessionstart"):
        assert records(name) == [], name


def test_a_resume_after_a_compression_reloads_its_summary_and_is_no_new_record():
    """A real session (tests/gemini_live_run.py): a compression, then `--resume`, whose `$set`
    reloads the summary and its acknowledgement under the ids they had."""
    (rec,) = records("session-live-preamble")
    assert rec.content == "Let me read the notes file first." and check_record(rec, DEFAULT).failures == ["empty"]
    sets = [d["$set"]["messages"] for d in map(json.loads, (DATA / "session-live-preamble.jsonl").open())
            if "messages" in d.get("$set", {})]
    assert sum(any(m["id"] == rec.id for m in s) for s in sets) == 2


def test_the_count_before_is_the_prompt_that_triggered_it():
    (rec,) = records("session-good-long")
    assert rec.context_before == 14313          # FINDINGS.md: the tool call's promptTokenCount
    (short,) = records("session-good-short")   # longer than the visible history, a fraction of the context
    assert len(short.content) > len(short.input_text) and check_record(short, DEFAULT).valid


def gemini_home(tmp_path, *cases) -> Path:
    gem = tmp_path / ".gemini"
    chats = gem / "tmp" / "work" / "chats"
    chats.mkdir(parents=True)
    for case in cases:
        shutil.copy(DATA / f"session-{case}.jsonl", chats / f"session-2026-12-05T15-04-{case}.jsonl")
    return gem


def guard(gem: Path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GUARD_", "CODEX_", "CLAUDE_"))}
    env.update(HOME=str(gem.parent))
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_check_finds_gemini_cli_and_counts_each_compression_once(tmp_path):
    gem = gemini_home(tmp_path, "good-long", "loop", "preamble-short-1")
    p = guard(gem, "--check")
    assert p.returncode == 1 and "gemini: DEGRADED" in p.stdout and f"Gemini CLI directory {gem}" in p.stdout, p.stdout
    doc = json.loads(guard(gem, "--agent", "gemini", "--check", "--format", "json").stdout)
    assert doc["summaries_checked"] == 0                     # counted once
    # --file on one session file; its verdicts go to Gemini CLI's state
    p = guard(gem, "--check", "--file", DATA / "session-skeleton.jsonl", "--format", "json")
    assert p.returncode == 1 and [r["source"] for r in json.loads(p.stdout)["results"]] == ["gemini"]
    assert (gem / "compaction-guard" / "state.yaml").is_file()


def test_the_layout_follows_gemini_cli_home():
    assert resolve({"HOME": "/h"}).state_dir == Path("/h/.gemini")
    lay = resolve({"HOME": "/h", "GEMINI_CLI_HOME": "/g"})
    assert lay.state_dir == Path("/g/.gemini") and "$GEMINI_CLI_HOME" in lay.describe()
