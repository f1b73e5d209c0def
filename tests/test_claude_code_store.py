"""Claude Code's transcripts as a store (issue #27), on what the real Claude Code 2.1.328 wrote
(tests/data/claude-code, recorded by tests/claude_code/record.py): each compaction one record,
its wrapper taken away, its history the conversation before the boundary; incremental,
read-only, counted once; the same detectors as every store."""
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from compaction_guard import operations
from compaction_guard.check import check_record
from compaction_guard.agents.claude_code import store as cc
from compaction_guard.agents.claude_code.layout import ClaudeLayout
from compaction_guard.stores import load_file
from compaction_guard.settings import DEFAULT

DATA = Path(__file__).parent / "data" / "claude-code"
# failures expected; the cut-off one stopped inside the <summary> Claude Code asked for, never closed:
# a cut_off failure naming what is missing (issue 58; a text that may merely have stopped is a warning)
EXPECT = {"good": set(), "preamble": {"empty"}, "cut-off": {"cut_off"}, "loop": {"repetition"}}


def records(path):
    return list(cc.TranscriptSource(path).records(None))


@pytest.mark.parametrize("case", sorted(EXPECT))
def test_each_recorded_compaction_is_one_record_judged_like_any_store(case):
    recs = records(DATA / f"{case}.jsonl")
    assert len(recs) == 1
    r = recs[0]
    entry = next(json.loads(x) for x in open(DATA / f"{case}.jsonl", encoding="utf-8") if '"isCompactSummary":true' in x)
    assert r.id == entry["uuid"] and r.meta["session"] == entry["sessionId"]
    assert "This session is being continued" not in r.content and "read the full transcript" not in r.content
    assert "OPS-4411" in r.input_text and "SUP-82841" in r.input_text        # the history it replaced
    assert r.context_before and r.context_after
    result = check_record(r, DEFAULT)
    kinds = set(result.failures)
    if case == "cut-off":
        assert "<summary> never closed" in result.reasons["cut_off"]
    if EXPECT[case]:
        assert EXPECT[case] <= kinds, (case, kinds, check_record(r, DEFAULT).reasons)
    else:
        assert not kinds, check_record(r, DEFAULT).reasons


def test_file_sniffed_as_a_claude_code_transcript():
    assert isinstance(load_file(DATA / "good.jsonl"), cc.TranscriptSource)


def test_a_check_of_the_config_dir_is_incremental_read_only_and_counts_once(tmp_path):
    cfg = tmp_path / "claude"
    proj = cfg / "projects" / cc.project_dir_name("/home/u/work")
    proj.mkdir(parents=True)
    for case in EXPECT:
        shutil.copy(DATA / f"{case}.jsonl", proj / f"{case}.jsonl")
    digest = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in proj.iterdir()}
    layout = ClaudeLayout(cfg, "test")
    first = operations.check(layout, settings=DEFAULT)
    again = operations.check(layout, settings=DEFAULT)
    assert first.checked == 4 and first.failures_found == 3 and again.checked == 0
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in proj.iterdir()} == digest
    # a compaction appended later is the one new record
    good = proj / "good.jsonl"
    lines = open(DATA / "preamble.jsonl", encoding="utf-8").read().splitlines(keepends=True)
    start = next(i for i, x in enumerate(lines) if '"compact_boundary"' in x)
    with open(good, "a", encoding="utf-8") as fh:
        fh.writelines(x.replace('"uuid":"', '"uuid":"x-', 1) if '"isCompactSummary":true' in x else x
                      for x in lines[start:])
    third = operations.check(layout, settings=DEFAULT, collect=True)
    assert third.checked == 1 and third.results[0].id.startswith("x-")
    # it replaced only the few lines after the first summary: its `previous` is that summary
    rec = list(cc.TranscriptSource(good).records(None))[-1]
    assert rec.previous and "OPS-4411" in rec.previous
    st = operations.status(layout, DEFAULT)
    assert st["stored_summaries"]["by_model"] == 5


def test_the_wrapper_is_taken_away_in_both_shapes():
    wrapped = ("This session is being continued from a previous conversation that ran out of context. The summary "
               "below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request: ship v2.\n\n"
               "If you need specific details from before compaction (like exact code snippets), read the full "
               "transcript at: /x/y.jsonl\nContinue the conversation from where it left off without asking.")
    assert cc.unwrap(wrapped) == "1. Primary Request: ship v2."
    assert cc.strip_analysis("<analysis>thinking</analysis>\n<summary>\nA.\n</summary>") == "A."
