"""Reading summaries files and memory-dag-compactor state, read-only, with clear errors."""
import hashlib
import json
import sqlite3

import pytest
import yaml

from compaction_guard import operations
from compaction_guard.errors import GuardError
from compaction_guard.agents.openclaw import dag_state
from compaction_guard.stores import load_file

GOOD = "The user migrated CI to GitHub Actions; the publish job is pending and runs only on tags v*."


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name,body", [
    ("s.json", json.dumps([{"id": "a", "content": GOOD}, {"id": "b", "summary": ""}])),
    ("s.json", json.dumps({"summaries": [{"id": "a", "content": GOOD}, {"id": "b", "content": ""}]})),
    ("s.jsonl", json.dumps({"id": "a", "content": GOOD}) + "\n" + json.dumps({"id": "b", "content": ""}) + "\n"),
    ("s.yaml", yaml.safe_dump({"summaries": [{"id": "a", "content": GOOD}, {"id": "b", "content": ""}]})),
    ("s.yml", yaml.safe_dump([{"id": "a", "content": GOOD}, {"id": "b", "content": None}])),
    ("s.txt", json.dumps([{"id": "a", "content": GOOD}, {"id": "b", "content": ""}])),  # content wins over the name
])
def test_records_formats(tmp_path, name, body):
    p = tmp_path / name
    p.write_text(body, encoding="utf-8")
    loaded = load_file(p)
    assert [r.id for r in loaded.records(None)] == ["a", "b"]
    rep = operations.check(tmp_path, p, save=False)
    assert [r.valid for r in rep.results] == [True, False]
    assert rep.results[1].failures == ["empty"]


def test_record_fields_reach_the_detectors(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps([{"id": "x", "content": GOOD, "input": "short", "previous": "old"},
                             {"id": "y", "content": GOOD, "previous": GOOD + "  "},
                             {"id": "z", "content": GOOD, "input_tokens": 5}]))
    rep = operations.check(tmp_path, p, save=False)
    assert [r.failures for r in rep.results] == [["inflation"], ["stale"], ["inflation"]]
    assert rep.results[0].input_tokens == 2


def test_markdown_summary_that_parses_as_yaml_stays_one_summary(tmp_path):
    p = tmp_path / "summary.md"
    p.write_text("Decision: use SQLite\nNext: migrate the 412 sessions with scripts/migrate.ts\n")
    loaded = load_file(p, input_text=GOOD * 5)
    recs = list(loaded.records(None))
    assert len(recs) == 1 and loaded.kind == "text"
    assert recs[0].input_text == GOOD * 5


def test_dag_state_inputs_from_memory_and_children(demo_home):
    state = demo_home / "skill-state" / "memory-dag-compactor" / "state.yaml"
    before = {p: digest(p) for p in demo_home.rglob("*") if p.is_file()}
    loaded = load_file(state)
    by_id = {r.id: r for r in loaded.records(None)}
    assert loaded.kind == "memory-dag-compactor"
    # a leaf's input: its MEMORY.md entries, split at "- ", "## " and dates
    assert "British spelling" in by_id["s-d0-000"].input_text and "ci.yml" in by_id["s-d0-000"].input_text
    # a condensed node's input: its children
    assert by_id["s-d1-000"].input_text.startswith(by_id["s-d0-000"].content)
    rep = operations.check(demo_home)
    verdict = {r.id: r.failures for r in rep.results}
    assert verdict["s-d0-000"] == [] and verdict["s-d0-001"] == [] and verdict["s-d1-000"] == []
    assert verdict["s-d0-002"] == ["empty"]
    assert "repetition" in verdict["s-d0-003"]
    assert verdict["s-d0-004"] == ["garbled"]
    assert verdict["s-d0-005"] == ["inflation", "ungrounded"]   # and about something else than its one entry
    assert verdict["s-d0-006"] == ["truncation_marker"]
    assert verdict["s-d0-007"] == ["empty"]
    assert verdict["s-d1-001"] == ["stale"]
    # the compactor's files are untouched (the guard wrote only its own state)
    after = {p: digest(p) for p in before}
    assert before == after


def test_memory_entries_split():
    text = "# Title\n- one\n  continued\n## Two\n2026-11-24 three\nplain line\n- four"
    entries = dag_state.memory_entries(text)
    assert list(entries) == ["e-0000", "e-0001", "e-0002", "e-0003"]
    assert entries["e-0000"] == "- one\n  continued" and entries["e-0002"] == "2026-11-24 three\nplain line"


def test_no_store_is_said_plainly_and_is_not_healthy(home):
    rep = operations.check(home)
    assert rep.results == [] and rep.status == "NO_STORE"
    assert "no compaction store found" in rep.nothing_found and str(home) in rep.nothing_found
    assert "OPENCLAW_STATE_DIR" in rep.nothing_found      # which variable to set
    assert operations.status(home)["status"] == "NO_STORE"


@pytest.mark.parametrize("name,body,needle", [
    ("lcm.db", b"not a database at all", "not one"),
    ("s.json", b"[{\"id\": 1,", "not valid JSON"),
    ("s.json", b"{\"hello\": \"world\"}", "not a summaries file"),
    ("s.yaml", b"a: [1, 2\n", "not valid YAML"),
    ("s.yaml", b"just: a mapping\n", "neither a summaries file"),
    ("s.json", b"[42]", "not a summaries file"),
    ("s.json", b"{\"summaries\": [42]}", "not a mapping"),
    ("s.json", b"[{\"content\": \"x\", \"input_tokens\": -3}]", "input_tokens"),
])
def test_bad_files_are_clear_errors(tmp_path, name, body, needle):
    p = tmp_path / name
    p.write_bytes(body)
    with pytest.raises(GuardError) as err:
        load_file(p)
    assert str(p) in str(err.value) and needle in str(err.value)


def test_sqlite_file_is_named_not_misread(tmp_path):
    p = tmp_path / "lcm.db"
    con = sqlite3.connect(p)
    con.execute("create table summaries (summary_id text)")
    con.commit()
    con.close()
    before = digest(p)
    with pytest.raises(GuardError, match="SQLite database"):
        load_file(p)
    assert digest(p) == before


def test_directory_and_missing(tmp_path):
    with pytest.raises(GuardError, match="is a directory"):
        load_file(tmp_path)
    with pytest.raises(GuardError, match="no such file"):
        load_file(tmp_path / "nope.yaml")


def test_invalid_utf8_text_is_checked_not_refused(tmp_path):
    p = tmp_path / "s.txt"
    p.write_bytes(GOOD.encode() + b" \xff\xfe\xfa\xfb\xfc\xfd\xff\xfe\xfa\xfb\xfc\xfd\xff\xfe\xfa\xfb\xfc\xfd")
    rep = operations.check(tmp_path, p, save=False)
    assert "not valid UTF-8" in rep.notes[0]
    assert rep.results[0].failures == ["garbled"]
