"""Counting once (issue #10): each stored summary counts once, ever, per store identity,
whatever sequence of checks, re-checks, --all, --file, appends, rewrites, deletions and
failures came before; the counters equal one clean pass over the stores."""
import json
import os
import shutil
import sqlite3

import pytest
import yaml
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from compaction_guard import operations
from compaction_guard.ledger import Ledger, ledger_path
from compaction_guard.settings import DEFAULT
from compaction_guard.state import StateStore, state_path
from compaction_guard.agents.openclaw import transcripts

from conftest import run_guard
from openclaw_fixtures import LcmBuilder, agent_db, compaction, message, session_jsonl

GOOD = ["The user moved billing from PayPal to Stripe on 2026-11-21; webhook /api/stripe/webhook; 412 "
        "subscriptions migrated, 3 failed on expired cards.",
        "Deploy of v2.3.1 to staging passed; the login bug in auth.py is fixed (PR #88). Next: production on Friday.",
        "Decided to keep Postgres 16; the migration script db/migrate_0042.sql runs in the maintenance window.",
        "The flaky test test_upload_retry was quarantined; ticket QA-311 tracks the root cause (a race in the mock S3)."]
FALLBACK = "[TRUNCATED: 40 of 52 lines dropped by compaction-resilience-guard L3]\nuser: deploy failed on web-3"
EMPTY = "Summary unavailable due to context limits."


def state(home):
    return StateStore(state_path(home), DEFAULT).read()


def stored(home):
    return state(home)["stored_summaries"]


def session_file(home, sid="s-0001"):
    return home / "agents" / "main" / "sessions" / f"{sid}.jsonl"


def write_session(home, summaries, sid="s-0001", atomic=False):
    """A session transcript with one message and one compaction per summary."""
    entries = []
    for i, text in enumerate(summaries):
        entries.append(message(2 * i, f"message {i} about the deploy and the billing work"))
        entries.append(compaction(f"c{i:04d}", text, 5000 + 100 * i, f"2026-11-28T1{i % 10}:00:00.000Z"))
    path = session_file(home, sid)
    if atomic:        # as an editor or a sync tool rewrites it: a new file renamed over the old (new inode)
        tmp = path.with_suffix(".tmp")
        session_jsonl(tmp, sid, entries)
        os.replace(tmp, path)
    else:
        session_jsonl(path, sid, entries)
    return path


# ------------------------------------------------------------------ the reported cases
def test_a_file_checked_three_times_counts_once(home, tmp_path):
    f = tmp_path / "summaries.json"
    f.write_text(json.dumps([{"id": "a", "content": GOOD[0]}, {"id": "b", "content": FALLBACK}]))
    for _ in range(3):
        operations.check(home, file=f)
    assert stored(home) == {"by_model": 1, "by_fallback": 1}
    rep = operations.report(home)
    assert rep["fallback_share"] == 0.5 and rep["total_compactions"] == 0     # no chain run: no L3 share of runs


def test_a_dag_over_20000_nodes_counts_each_node_once(home):
    path = home / "skill-state" / "memory-dag-compactor" / "state.yaml"
    path.parent.mkdir(parents=True)
    nodes = [{"id": f"s-d0-{i:05d}", "depth": 0, "content": f"{GOOD[i % 4]} (batch {i})", "source_type": "entries",
              "source_range": f"e-{i:05d}"} for i in range(20050)]
    path.write_text(yaml.safe_dump({"dag_nodes": nodes}), encoding="utf-8")
    assert operations.check(home, collect=False).checked == 20050
    for _ in range(2):
        assert operations.check(home, collect=False).checked == 0       # the oldest 50 are not read again
    assert sum(stored(home).values()) == 20050
    assert "memory-dag-compactor" not in str(state(home)["watermarks"])   # no list of 20,000 ids in the state


def test_a_store_that_fails_half_way_counts_what_it_read_once(home, monkeypatch):
    write_session(home, GOOD)
    real = transcripts.SessionFileSource.records

    def two_then_fail(self, watermark):
        for i, rec in enumerate(real(self, watermark)):
            if i == 2:
                raise OSError(5, "Input/output error")
            yield rec
    monkeypatch.setattr(transcripts.SessionFileSource, "records", two_then_fail)
    rep = operations.check(home)
    assert rep.checked == 2 and rep.errors
    monkeypatch.setattr(transcripts.SessionFileSource, "records", real)
    rep = operations.check(home)              # the watermark did not move: all 4 read, 2 of them new
    assert rep.checked == 4 and not rep.errors
    assert stored(home) == {"by_model": 4, "by_fallback": 0}


def test_deleting_the_newest_lcm_row_recounts_nothing_and_says_so_once(home):
    b = LcmBuilder(home / "lcm.db")
    conv = b.conversation("sess-1")
    for i, text in enumerate(GOOD):
        b.summary(conv, text, sid=f"sum_{i:016x}")
    b.close()
    operations.check(home)
    con = sqlite3.connect(home / "lcm.db")
    con.execute("DELETE FROM summaries WHERE rowid = (SELECT max(rowid) FROM summaries)")
    con.commit()
    con.close()
    rep = operations.check(home)
    assert rep.checked == 3                                  # read again from the start...
    assert sum(stored(home).values()) == 4                   # ...and nothing counted twice
    assert sum("fewer summaries" in n for n in rep.notes) == 1


def test_a_transcript_rewritten_atomically_is_not_recounted(home):
    path = write_session(home, GOOD[:3])
    operations.check(home)
    inode = path.stat().st_ino
    write_session(home, GOOD[:3] + [EMPTY], atomic=True)     # same entries plus one, a new inode
    assert path.stat().st_ino != inode
    rep = operations.check(home)
    assert rep.checked == 4 and stored(home) == {"by_model": 4, "by_fallback": 0}
    assert state(home)["totals"]["failures"] == {"openclaw-session": {"empty": 1}}


def test_a_session_in_its_jsonl_elsewhere_and_in_the_agent_db_counts_once(home, tmp_path):
    write_session(home, GOOD[:2])
    operations.check(home)
    copy = tmp_path / "elsewhere" / "s-0001.jsonl"          # the same session checked from another path
    copy.parent.mkdir()
    shutil.copy(session_file(home), copy)
    operations.check(home, file=copy)
    assert sum(stored(home).values()) == 2
    # OpenClaw 2026.7.2+ moves sessions into the agent database: the same entries, counted once
    events = [json.loads(line) for line in session_file(home).read_text().splitlines()[1:]]
    agent_db(home / "agents" / "main" / "agent" / "openclaw-agent.sqlite",
             [("s-0001", i, e) for i, e in enumerate(events)])
    assert operations.check(home).checked == 2
    assert sum(stored(home).values()) == 2


def test_all_after_an_upgrade_does_not_recount_what_an_older_guard_counted(home):
    """A state written before the ledger: the watermark says what was counted."""
    path = write_session(home, GOOD[:3])
    size = path.stat().st_size
    with StateStore(state_path(home), DEFAULT).update() as s:
        s["stored_summaries"]["by_model"] = 3
        s["watermarks"][f"openclaw-session:{path}"] = {"offset": size, "inode": path.stat().st_ino}
    write_session(home, GOOD[:3] + [GOOD[3]])               # appended in place (same inode)
    assert path.stat().st_size > size
    assert operations.check(home, recheck_all=True).checked == 4
    assert stored(home) == {"by_model": 4, "by_fallback": 0}
    assert operations.check(home, recheck_all=True).checked == 4
    assert stored(home) == {"by_model": 4, "by_fallback": 0}


def test_a_vanished_store_keeps_no_watermark(home):
    path = write_session(home, GOOD[:2])
    operations.check(home)
    assert any(str(path) in k for k in state(home)["watermarks"])
    path.unlink()
    operations.check(home)
    assert state(home)["watermarks"] == {}


# ------------------------------------------------------------------ crashes between the phases
def test_a_crash_after_the_ledger_before_the_state_loses_no_count(home, monkeypatch):
    write_session(home, GOOD[:3] + [EMPTY])
    real = StateStore._write

    def crash(self, st_):
        raise KeyboardInterrupt           # the process dies between phase 1 (ledger) and phase 2 (state)
    monkeypatch.setattr(StateStore, "_write", crash)
    with pytest.raises(KeyboardInterrupt):
        operations.check(home)
    monkeypatch.setattr(StateStore, "_write", real)
    assert stored(home) == {"by_model": 0, "by_fallback": 0}   # the state never saw the check
    operations.check(home)                                      # settles the pending batch, counts nothing new
    st_ = state(home)
    assert st_["stored_summaries"] == {"by_model": 4, "by_fallback": 0}
    assert st_["totals"]["failures"] == {"openclaw-session": {"empty": 1}}
    with Ledger(ledger_path(state_path(home))) as led:
        assert led.con.execute("SELECT count(*) FROM pending").fetchone()[0] == 0


def test_a_crash_after_the_state_before_the_ledger_is_told_counts_nothing_twice(home, monkeypatch):
    write_session(home, GOOD[:3] + [EMPTY])
    monkeypatch.setattr(Ledger, "done", lambda self, batch: None)     # phase 3 never happens
    operations.check(home)
    monkeypatch.undo()
    with Ledger(ledger_path(state_path(home))) as led:
        assert led.con.execute("SELECT count(*) FROM pending").fetchone()[0] == 1
    operations.check(home)
    st_ = state(home)
    assert st_["stored_summaries"] == {"by_model": 4, "by_fallback": 0}
    assert st_["totals"]["failures"] == {"openclaw-session": {"empty": 1}}


# ------------------------------------------------------------------ any sequence = one clean pass
OPS = st.lists(st.sampled_from(["append", "rewrite", "lcm", "check", "check_all", "check_file", "fail"]),
               min_size=1, max_size=9)


@hsettings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, texts=st.lists(st.sampled_from(GOOD + [FALLBACK, EMPTY]), min_size=12, max_size=12))
def test_any_sequence_counts_like_one_clean_pass(tmp_path_factory, ops, texts):
    home = tmp_path_factory.mktemp("seq")
    clean = tmp_path_factory.mktemp("clean")
    summaries = [texts[0]]
    write_session(home, summaries)
    lcm = LcmBuilder(home / "lcm.db")
    conv = lcm.conversation("sess-1")
    n_lcm = 0
    real = transcripts.SessionFileSource.records
    try:
        for op in ops:
            if op == "append" and len(summaries) < 6:
                summaries.append(texts[len(summaries)])
                write_session(home, summaries)
            elif op == "rewrite":
                write_session(home, summaries, atomic=True)
            elif op == "lcm" and n_lcm < 5:
                lcm.summary(conv, texts[6 + n_lcm], sid=f"sum_{n_lcm:016x}")
                lcm.commit()
                n_lcm += 1
            elif op == "check":
                operations.check(home)
            elif op == "check_all":
                operations.check(home, recheck_all=True)
            elif op == "check_file":
                operations.check(home, file=session_file(home))
            elif op == "fail":
                def one_then_fail(self, watermark):
                    for i, rec in enumerate(real(self, watermark)):
                        if i == 1:
                            raise OSError(5, "Input/output error")
                        yield rec
                transcripts.SessionFileSource.records = one_then_fail
                try:
                    operations.check(home)
                finally:
                    transcripts.SessionFileSource.records = real
        operations.check(home)                   # whatever came before, one more check catches up
    finally:
        transcripts.SessionFileSource.records = real
        lcm.close()
    shutil.copytree(home / "agents", clean / "agents")
    shutil.copy(home / "lcm.db", clean / "lcm.db")
    operations.check(clean)
    a, b = state(home), state(clean)
    assert a["stored_summaries"] == b["stored_summaries"]
    assert sum(a["stored_summaries"].values()) == len(summaries) + n_lcm
    assert a["totals"]["failures"] == b["totals"]["failures"]
    assert sorted((f["source"], f["summary_id"], f["failure_type"]) for f in a["failures"]) == \
        sorted((f["source"], f["summary_id"], f["failure_type"]) for f in b["failures"])


def test_the_cli_check_file_twice_counts_once(home, tmp_path):
    f = tmp_path / "one.txt"
    f.write_text(FALLBACK)
    for _ in range(2):
        assert run_guard("--check", "--file", f, home=home).returncode == 1
    st_ = json.loads(run_guard("--status", "--format", "json", home=home).stdout)
    assert st_["stored_summaries"] == {"by_model": 0, "by_fallback": 1}


# ------------------------------------------------------------------ context_pressure (issue #12, part)
def sessions_json(home, entries):
    path = home / "agents" / "main" / "sessions" / "sessions.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


def test_a_session_near_its_window_whose_last_compaction_failed_gets_context_pressure(home):
    write_session(home, GOOD[:2] + [EMPTY])                         # the last compaction failed
    write_session(home, GOOD[:2], sid="s-0002")                      # this one is fine
    idx = sessions_json(home, {
        "agent:main:main": {"sessionId": "s-0001", "totalTokens": 186_000, "contextTokens": 200_000,
                            "compactionCount": 3, "updatedAt": 1764576000000},
        "agent:main:other": {"sessionId": "s-0002", "totalTokens": 195_000, "contextTokens": 200_000},
        "agent:main:idle": {"sessionId": "s-0003", "totalTokens": 10_000, "contextTokens": 200_000}})
    before = idx.read_bytes()
    rep = operations.check(home)
    assert [w["session_id"] for w in rep.session_warnings] == ["s-0001"]
    w = rep.session_warnings[0]
    assert w["context_share"] == 0.93 and w["last_compaction_failures"] == ["empty"] and w["last_compaction"] == "c0002"
    assert idx.read_bytes() == before                                # read-only
    # an incremental check reads nothing new, and still knows the last verdict (kept in the state)
    rep = operations.check(home)
    assert rep.checked == 0 and [w["session_id"] for w in rep.session_warnings] == ["s-0001"]
    out = run_guard("--check", home=home)
    assert "WARNING context_pressure: session agent:main:main holds 186,000 of its 200,000-token context" in out.stdout
    doc = json.loads(run_guard("--check", "--format", "json", home=home).stdout)
    assert doc["session_warnings"][0]["kind"] == "context_pressure"


def test_a_broken_sessions_json_is_a_note_not_a_crash(home):
    write_session(home, GOOD[:1])
    path = home / "agents" / "main" / "sessions" / "sessions.json"
    path.write_text("{not json")
    rep = operations.check(home)
    assert rep.session_warnings == [] and any("sessions.json: not valid JSON" in n for n in rep.notes)
    assert not rep.errors
