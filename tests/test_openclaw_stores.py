"""lcm.db, session JSONL and agent SQLite: found under the home, read-only, incremental."""
import hashlib
import json
import os
import sqlite3
import threading
import time


from compaction_guard import operations
from compaction_guard.settings import DEFAULT
from compaction_guard.state import StateStore, state_path
from compaction_guard import sqlite_ro
from conftest import run_guard
from openclaw_fixtures import LcmBuilder, agent_db, compaction, message, session_jsonl

GOOD_A = ("The user migrated the session store to SQLite (better-sqlite3 v12). 412 sessions moved with "
          "scripts/migrate-sessions.ts; PR #1893 is open. Next: an index on sessions(updated_at).")
GOOD_B = ("Billing moved from PayPal to Stripe on 2026-11-21; webhook /api/stripe/webhook; 3 subscriptions "
          "failed on expired cards and the user will email those customers by Friday.")
GOOD_C = "Week summary: billing migration shipped, 23 of 31 tickets closed, search rewrite postponed to Q1."
# a Russian summary whose UTF-8 bytes were read as cp1252 on the way into the store
MOJIBAKE = "Пользователь перенёс CI на GitHub Actions; публикация ждёт тегов v*.".encode().decode("cp1252", "replace")
HISTORY = [f"user asked about step {i}: configure service-{i} on host web-{i:02d}, port {8000 + i}, "
           f"and the assistant answered with the exact config file /etc/svc/{i}.yaml and its checksum." for i in range(30)]


def files_digest(root):
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and "compaction-resilience-guard" not in str(p):
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def build_lcm(home):
    b = LcmBuilder(home / "lcm.db")
    c1 = b.conversation("sess-1")
    m1 = b.messages(c1, HISTORY[:10])
    m2 = b.messages(c1, HISTORY[10:20])
    s1 = b.summary(c1, GOOD_A, messages=m1, sid="sum_00000000000000a1")
    s2 = b.summary(c1, GOOD_B, messages=m2, sid="sum_00000000000000a2")
    b.summary(c1, GOOD_C, parents=[s1, s2], sid="sum_00000000000000a3")
    m3 = b.messages(c1, HISTORY[20:21])
    b.summary(c1, "\n\n".join([GOOD_A, GOOD_B, GOOD_C]), messages=m3, sid="sum_00000000000000a4")  # inflation
    m4 = b.messages(c1, HISTORY[23:30])
    b.summary(c1, "\n".join(HISTORY[23:25]) + "\n[Truncated from 1842 tokens]", messages=m4,
              model="emergency-fallback", sid="sum_00000000000000a5")
    c2 = b.conversation("sess-2")
    m5 = b.messages(c2, HISTORY[:12])
    b.summary(c2, GOOD_A, messages=m5[:6], sid="sum_00000000000000b1")
    b.summary(c2, GOOD_A + "  ", messages=m5[6:], sid="sum_00000000000000b2")    # stale within the conversation
    b.commit()
    return b


def test_lcm_db_found_measured_and_tagged(home):
    b = build_lcm(home)
    b.close()
    before = files_digest(home)
    rep = operations.check(home)
    by = {r.id: r for r in rep.results}
    assert {r.source for r in rep.results} == {"lossless-claw"}
    assert by["sum_00000000000000a1"].valid and by["sum_00000000000000a2"].valid and by["sum_00000000000000a3"].valid
    # input measured from the source messages / source summaries, in lossless-claw's own units
    assert by["sum_00000000000000a1"].input_tokens > by["sum_00000000000000a1"].output_tokens
    assert by["sum_00000000000000a3"].input_tokens == by["sum_00000000000000a1"].output_tokens + \
        by["sum_00000000000000a2"].output_tokens
    assert by["sum_00000000000000a4"].failures == ["inflation"]
    assert by["sum_00000000000000a5"].failures == ["truncation_marker"]
    assert by["sum_00000000000000b2"].failures == ["stale"]
    assert rep.sources[0]["name"] == "lossless-claw" and rep.fallback == 1
    st = StateStore(state_path(home), DEFAULT).read()
    assert st["stored_summaries"] == {"by_model": 6, "by_fallback": 1}
    assert files_digest(home) == before          # not a byte of the store changed
    assert not (home / "lcm.db-wal").exists()    # and nothing was created beside it


def test_lcm_incremental_then_all(home):
    b = build_lcm(home)
    assert len(operations.check(home).results) == 7
    assert operations.check(home).results == []                       # nothing new
    c = b.con.execute("SELECT conversation_id FROM conversations WHERE session_id='sess-2'").fetchone()[0]
    m = b.messages(c, HISTORY[12:16])
    b.summary(c, GOOD_A, messages=m, sid="sum_00000000000000b3")    # stale against a summary checked last time
    b.commit()
    rep = operations.check(home)
    assert [(r.id, r.failures) for r in rep.results] == [("sum_00000000000000b3", ["stale"])]
    assert len(operations.check(home, recheck_all=True).results) == 8
    st = StateStore(state_path(home), DEFAULT).read()
    assert sum(st["stored_summaries"].values()) == 8          # --all counted nothing twice
    b.close()


def test_lcm_read_while_a_writer_holds_the_lock(home):
    b = build_lcm(home)
    b.close()
    writer = sqlite3.connect(home / "lcm.db", timeout=5)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO conversations (session_id) VALUES ('busy')")
    try:
        rep = operations.check(home)          # WAL: the reader sees the last committed state
        assert len(rep.results) == 7 and not rep.errors
    finally:
        writer.rollback()
        writer.close()


def test_lcm_rollback_journal_writer_waits_for_busy_timeout(home):
    b = LcmBuilder(home / "lcm.db", wal=False)
    c = b.conversation("s")
    b.summary(c, GOOD_A, messages=b.messages(c, HISTORY[:8]))
    b.close()
    writer = sqlite3.connect(home / "lcm.db", timeout=5, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.5, lambda: writer.execute("COMMIT")).start()
    t0 = time.monotonic()
    rep = operations.check(home, save=False)
    assert len(rep.results) == 1 and time.monotonic() - t0 >= 0.4
    writer.close()


def sessions_home(home):
    d = home / "agents" / "main" / "sessions"
    entries = [message(i, HISTORY[i]) for i in range(6)]
    entries.append(compaction("c1", GOOD_A, 41000, "2026-11-28T09:10:00.000Z"))
    entries += [message(i, HISTORY[i]) for i in range(6, 9)]
    entries.append(compaction("c2", GOOD_A.replace(" ", "  "), 43000, "2026-11-28T11:10:00.000Z"))   # stale
    entries += [message(i, HISTORY[i]) for i in range(9, 12)]
    entries.append(compaction("c3", "Summary unavailable due to context limits. Older messages were truncated.", 52000,
                              "2026-11-28T13:00:00.000Z"))
    session_jsonl(d / "sess-a.jsonl", "sess-a", entries)
    return d / "sess-a.jsonl"


def test_session_jsonl_compactions(home):
    f = sessions_home(home)
    before = files_digest(home)
    rep = operations.check(home)
    assert [(r.id, r.source, r.failures) for r in rep.results] == [
        ("c1", "openclaw-session", []), ("c2", "openclaw-session", ["stale"]), ("c3", "openclaw-session", ["empty"])]
    assert rep.results[0].input_tokens == 41000
    assert files_digest(home) == before
    # a compaction appended later is seen by the next check, alone
    with open(f, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(message(12, HISTORY[12], parent="c3")) + "\n")
        fh.write(json.dumps(compaction("c4", GOOD_A, 60000, "2026-11-28T15:00:00.000Z", parent="m0012")) + "\n")
    rep = operations.check(home)
    # an old summary again (stale), and nothing in it is about what it condensed: the last
    # summary and message 12, read again from the file (ungrounded)
    assert [(r.id, r.failures) for r in rep.results] == [("c4", ["ungrounded", "stale"])]
    assert "service-12" not in rep.results[0].reasons["ungrounded"] and rep.results[0].fidelity["grounding"] <= 0.03


def test_bad_jsonl_lines_are_skipped_with_a_count(home):
    d = home / "agents" / "main" / "sessions"
    session_jsonl(d / "s.jsonl", "s", [message(0, HISTORY[0]), compaction("c1", GOOD_B, 30000, "2026-11-28T09:00:00Z")])
    with open(d / "s.jsonl", "a") as fh:
        fh.write('{"type": "compaction", "id": "broken", "summ\n')              # invalid line
        fh.write(json.dumps(compaction("c2", GOOD_C, 31000, "2026-11-28T10:00:00Z", parent="c1")) + "\n")
        fh.write('{"type": "compaction", "id": "c3", "summary": "half a li')    # being written: no newline yet
    rep = operations.check(home)
    assert [r.id for r in rep.results] == ["c1", "c2"]
    assert any("skipped 1 line" in n for n in rep.notes)
    with open(d / "s.jsonl", "a") as fh:
        fh.write('ne that is now complete and long enough.", "tokensBefore": 32000, "timestamp": "2026-11-28T11:00:00Z"}\n')
    assert [r.id for r in operations.check(home).results] == ["c3"]


def test_storms_are_warnings_with_numbers(home):
    d = home / "agents" / "main" / "sessions"
    entries = []
    for i in range(7):
        entries.append(message(i, HISTORY[i]))
        entries.append(compaction(f"c{i}", f"{GOOD_A} Round {i}: checked host web-{i:02d}.", 190000 + i * 500,
                                  f"2026-11-28T09:0{i}:00.000Z"))
    session_jsonl(d / "storm.jsonl", "storm", entries)
    rep = operations.check(home)
    assert all(r.valid for r in rep.results)
    warned = [w for r in rep.results for w in r.warnings]
    assert any(w.startswith("compaction_storm: 6 compactions within 10 minutes") for w in warned)
    assert any(w.startswith("not_shrinking: 3 compactions in a row") and "190000, 190500, 191000" in w for w in warned)


def test_not_shrinking_reads_what_each_compaction_left_when_the_agent_records_it(home):
    """With tokensAfter known, a run of compactions is judged by what each left: the context
    before each may fall while what remains after each grows."""
    d = home / "agents" / "main" / "sessions"
    entries = []
    for i in range(3):
        entries.append(message(i, HISTORY[i]))
        c = compaction(f"c{i}", f"{GOOD_A} Round {i}.", 90000 - i * 1000, f"2026-11-28T09:0{i}:00.000Z")
        c["tokensAfter"] = 20000 + i * 4000
        entries.append(c)
    session_jsonl(d / "s.jsonl", "s", entries)
    warned = [w for r in operations.check(home).results for w in r.warnings]
    assert any(w.startswith("not_shrinking: 3 compactions in a row") and "tokensAfter 20000, 24000, 28000" in w
               for w in warned), warned


def test_agent_sqlite_with_zstd_events(home):
    db = home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    events = [("s1", 1, message(1, HISTORY[1])), ("s1", 2, compaction("e1", GOOD_B, 38000, "2026-11-28T09:00:00Z")),
              ("s1", 3, message(3, HISTORY[3])), ("s1", 4, compaction("e2", MOJIBAKE, 39000, "2026-11-28T10:00:00Z")),
              ("s2", 1, compaction("e3", GOOD_C, 12000, "2026-11-28T09:00:00Z"))]
    agent_db(db, events, compress_from=2)
    before = files_digest(home)
    rep = operations.check(home)
    assert [(r.id, r.source, r.failures) for r in rep.results] == [
        ("e1", "openclaw-agent-db", []), ("e2", "openclaw-agent-db", ["garbled"]), ("e3", "openclaw-agent-db", [])]
    assert files_digest(home) == before


def test_file_accepts_each_store(home, tmp_path):
    build_lcm(tmp_path).close()
    p = run_guard("--check", "--file", tmp_path / "lcm.db", "--format", "json", home=home)
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["summaries_checked"] == 7 and doc["results"][0]["source"] == "lossless-claw"
    f = sessions_home(tmp_path)
    doc = json.loads(run_guard("--check", "--file", f, "--format", "json", home=home).stdout)
    assert [r["id"] for r in doc["results"]] == ["c1", "c2", "c3"]
    db = tmp_path / "agent.sqlite"
    agent_db(db, [("s", 1, compaction("e1", GOOD_B, 38000, "2026-11-28T09:00:00Z"))])
    doc = json.loads(run_guard("--check", "--file", db, "--format", "json", home=home).stdout)
    assert doc["results"][0]["id"] == "e1" and doc["results"][0]["valid"]


def test_bad_stores_are_errors_and_the_others_are_checked(home):
    sessions_home(home)
    (home / "lcm.db").write_bytes(b"this is not a database")
    db = home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE something_else (x)")
    con.commit()
    con.close()
    p = run_guard("--check", "--format", "json", home=home)
    doc = json.loads(p.stdout)
    # failures found AND a store unreadable: 2 wins (the check is incomplete), the failures are still reported
    assert doc["failures_found"] >= 1 and doc["errors"]
    assert p.returncode == 2
    assert [r["id"] for r in doc["results"]] == ["c1", "c2", "c3"]
    errs = p.stderr.strip().splitlines()
    assert len(errs) == 2 and "Traceback" not in p.stderr
    assert any("lcm.db: not a SQLite database" in e for e in errs)
    assert any("unknown schema" in e or "not an OpenClaw agent database" in e for e in errs)


def test_check_says_which_stores_it_found(home):
    build_lcm(home).close()
    sessions_home(home)
    p = run_guard("--check", home=home)
    assert "source: lossless-claw" in p.stdout and "source: openclaw-session" in p.stdout
    assert "by source:" in p.stdout


def _big_lcm(home, n=1200):
    b = LcmBuilder(home / "lcm.db")
    c = b.conversation("big")
    for i in range(n):
        b.summary(c, f"{GOOD_A} Checkpoint {i}: host web-{i:04d} verified.", messages=b.messages(c, HISTORY[:3]))
    b.close()


def _run_on_tty(args, home, env_extra):
    import pty
    import subprocess
    import sys
    from conftest import ROOT
    import tempfile
    master, slave = pty.openpty()
    env = dict(os.environ, OPENCLAW_STATE_DIR=str(home), **env_extra)
    stdout = tempfile.TemporaryFile()
    p = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), *args], stdout=stdout, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    p.wait()
    os.close(master)
    stdout.seek(0)
    out = stdout.read().decode()
    return out, b"".join(chunks).decode(errors="replace")


def test_progress_bar_on_a_terminal_only(home):
    _big_lcm(home)
    out, err = _run_on_tty(["--check", "--all"], home, {"GUARD_PROGRESS_DELAY": "0"})
    assert "lossless-claw: " in err and "/s" in err and "1,000/1,200" in err
    assert "Summaries checked:  1200" in out
    out, err = _run_on_tty(["--check", "--all", "--format", "json"], home, {"GUARD_PROGRESS_DELAY": "0"})
    assert err.strip() == "" and json.loads(out)["summaries_checked"] == 1200
    p = run_guard("--check", "--all", home=home)           # stderr is a pipe: no bar
    assert p.stderr == ""


def test_staleness_in_bounded_memory_rereads_forgotten_conversations(home):
    """With room for only 2 remembered summaries, conversation A is forgotten while B, C
    and D are checked; A's repeat is still caught, by re-reading A from the store."""
    from compaction_guard.settings import DEFAULT as D
    b = LcmBuilder(home / "lcm.db")
    convs = [b.conversation(f"s{i}") for i in range(4)]
    texts = [GOOD_A, GOOD_B, GOOD_C, HISTORY[0] + " " + HISTORY[1]]
    for c, t in zip(convs, texts):      # each history holds what its summary says
        b.summary(c, t, messages=b.messages(c, HISTORY[:5] + [t]))
    b.summary(convs[0], GOOD_A + "\n", messages=b.messages(convs[0], HISTORY[6:12]), sid="sum_0000000000000a02")
    b.close()
    rep = operations.check(home, settings=D.with_overrides(max_stale_keys=2), save=False)
    by = {r.id: r.failures for r in rep.results}
    assert by["sum_0000000000000a02"] == ["stale"]
    assert sum(1 for f in by.values() if f) == 1


def test_a_writer_starting_mid_check_is_read_through_its_lock(tmp_path, monkeypatch):
    """An idle WAL lcm.db is read `immutable` (no lock, nothing created). A writer that starts
    during the check (a -wal file appears, a checkpoint rewrites pages of the file) could give
    a torn read: the batch read while it happened is read again through `mode=ro`, which takes
    the shared locks, and the check says so. Every record comes out once, with content the
    database held, and the writer's new summaries are seen."""
    from compaction_guard.agents.openclaw import lcm as lcm_store
    path = tmp_path / "lcm.db"
    b = LcmBuilder(path)
    conv = b.conversation("sess-w")
    for i in range(12):
        b.summary(conv, f"Leaf {i}: the user migrated batch {i} of the sessions to SQLite.", sid=f"sum_a{i:02d}")
    b.close()
    assert not (tmp_path / "lcm.db-wal").exists()
    monkeypatch.setattr(lcm_store, "BATCH", 4)
    src = lcm_store.LcmSource(path)
    assert sqlite_ro.is_immutable(src.con)
    seen = {}
    writer = None
    for n, rec in enumerate(src.records(None)):
        seen.setdefault(rec.id, []).append(rec.content)
        if n == 5 and writer is None:        # mid-check: lossless-claw starts writing
            writer = sqlite3.connect(path)
            writer.execute("INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, model) "
                           "VALUES ('sum_new', ?, 'leaf', 0, 'A new leaf written during the check.', 9, 'm')", (conv,))
            writer.execute("UPDATE summaries SET content = content || ' (edited)' WHERE summary_id = 'sum_a10'")
            writer.commit()
            writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    writer.close()
    src.close()
    assert all(len(v) == 1 for v in seen.values())                      # each record once
    assert "sum_new" in seen and seen["sum_a10"] == [
        "Leaf 10: the user migrated batch 10 of the sessions to SQLite. (edited)"]   # read after the writer
    assert seen["sum_a00"] == ["Leaf 0: the user migrated batch 0 of the sessions to SQLite."]
    assert any("a writer started during the check" in note for note in src.notes)
    assert not sqlite_ro.is_immutable(src.con)


def test_a_writer_starting_mid_check_of_the_agent_db_gives_no_torn_read(tmp_path, monkeypatch):
    """The same for openclaw-agent.sqlite: read immutable in pages while idle; a writer
    appearing mid-check switches the read to `mode=ro` from the page it was on."""
    from compaction_guard.agents.openclaw import agent_db as tr
    path = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    events = []
    for i in range(12):
        events.append(("s-1", 2 * i, message(2 * i, f"step {i} of the migration")))
        events.append(("s-1", 2 * i + 1, compaction(f"c{i:02d}", f"Step {i}: the user migrated batch {i} of the "
                                                    "sessions to SQLite.", 1000 + i, "2026-11-28T10:00:00.000Z")))
    agent_db(path, events)
    assert not path.with_name(path.name + "-wal").exists()
    monkeypatch.setattr(tr, "BATCH", 5)
    src = tr.AgentDbSource(path)
    assert sqlite_ro.is_immutable(src.con)
    seen, writer = {}, None
    for n, rec in enumerate(src.records(None)):
        seen.setdefault(rec.id, []).append(rec.content)
        if n == 3 and writer is None:          # OpenClaw starts writing
            writer = sqlite3.connect(path)
            writer.execute("INSERT INTO transcript_events (session_id, seq, event_type, event_json) VALUES (?, ?, ?, ?)",
                           ("s-1", 100, "compaction", json.dumps(compaction("c-new", "A compaction written during "
                                                                            "the check.", 2000, "2026-11-28T11:00:00.000Z"))))
            writer.commit()
            writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    writer.close()
    src.close()
    assert all(len(v) == 1 for v in seen.values()) and len(seen) == 13     # each once, the new one seen
    assert seen["c00"] == ["Step 0: the user migrated batch 0 of the sessions to SQLite."]
    assert any("a writer started during the check" in note for note in src.notes)
    assert not sqlite_ro.is_immutable(src.con)


def test_a_valid_condensed_summary_built_from_a_failed_one_is_tainted(home):
    """tainted_lineage: lossless-claw's summary_parents, in the same check and in a later
    incremental one (the failed source then read back from the store and judged)."""
    b = LcmBuilder(home / "lcm.db")
    conv = b.conversation("sess-t")
    m = b.messages(conv, HISTORY[:4])
    b.summary(conv, GOOD_A, messages=m, sid="sum_leaf_ok")
    b.summary(conv, "Summary unavailable due to context limits.", messages=b.messages(conv, HISTORY[4:8]),
              sid="sum_leaf_empty")
    b.summary(conv, GOOD_B, parents=["sum_leaf_ok", "sum_leaf_empty"], sid="sum_cond_1")
    b.commit()
    rep = operations.check(home)
    by = {r.id: r for r in rep.results}
    assert by["sum_leaf_empty"].failures == ["empty"]
    w = [f for f in by["sum_cond_1"].findings if f.kind == "tainted_lineage"]
    assert by["sum_cond_1"].valid and len(w) == 1
    assert w[0].figures["failed_sources"] == [{"id": "sum_leaf_empty", "kind": "empty"}] and "sum_leaf_empty" in w[0].reason
    # later: a new condensed summary over the same failed leaf, the leaves not read again
    b.summary(conv, "The session store moved to SQLite; PR #1893 is open and the index is next.",
              parents=["sum_leaf_ok", "sum_leaf_empty"], sid="sum_cond_2")
    b.close()
    rep = operations.check(home)
    assert [r.id for r in rep.results] == ["sum_cond_2"]
    assert "tainted_lineage" in [f.kind for f in rep.results[0].findings]


def test_a_dag_node_condensed_from_a_garbled_leaf_is_tainted(home):
    import yaml
    path = home / "skill-state" / "memory-dag-compactor" / "state.yaml"
    path.parent.mkdir(parents=True)
    garbled = ("Пользователь перенёс CI на GitHub Actions; публикация ждёт тегов v*. "
               "用户要求添加覆盖率徽章。").encode("utf-8").decode("latin-1")
    nodes = [{"id": "s-d0-000", "depth": 0, "content": GOOD_A, "source_type": "entries", "source_range": "e-0000"},
             {"id": "s-d0-001", "depth": 0, "content": garbled, "source_type": "entries", "source_range": "e-0001"},
             {"id": "s-d1-000", "depth": 1, "content": GOOD_B, "source_type": "summaries",
              "source_range": "s-d0-000,s-d0-001"}]
    path.write_text(yaml.safe_dump({"dag_nodes": nodes}, allow_unicode=True), encoding="utf-8")
    rep = operations.check(home)
    by = {r.id: r for r in rep.results}
    assert by["s-d0-001"].failures == ["garbled"] and by["s-d1-000"].valid
    assert any(w.startswith("tainted_lineage") and "s-d0-001 (garbled)" in w for w in by["s-d1-000"].warnings)


def test_lcm_leaves_and_condensed_nodes_are_judged_against_their_source_texts(home):
    """Issue #12: a leaf's input is its messages' content (summary_messages -> messages), a
    condensed node's its sources' content; language_drift, ungrounded and the fidelity
    figures come with lossless-claw's own ids, and its token counts still rule inflation."""
    from pathlib import Path
    real = Path(__file__).parent / "corpus" / "real"
    out = next(json.loads(x) for x in open(real / "model_outputs.jsonl", encoding="utf-8") if '"h046-it-code-review-r1"' in x)
    hist = next(json.loads(x) for x in open(real / "histories.jsonl", encoding="utf-8") if f'"{out["history"]}"' in x)
    zh = ["我们的夜间备份任务又失败了，你能看看吗？", "backup.sh 从 2026-11-02 开始在 s3://acme-backups/nightly 上报 AccessDenied。",
          "那正是我们轮换 KMS 密钥的时候。", "是的，backup-writer 角色对新密钥 alias/backup-2026 没有授权。",
          "请修复并手动运行一次备份。"] * 3
    b = LcmBuilder(home / "lcm.db")
    conv = b.conversation("sess-fidelity")
    m_it = b.messages(conv, hist["text"].splitlines())
    b.summary(conv, out["output"], messages=m_it, sid="sum_it_offtopic")
    m_zh = b.messages(conv, zh)
    b.summary(conv, "The nightly backup fails with AccessDenied since the KMS key rotation; the backup-writer role "
              "needs a grant on alias/backup-2026, then run backup.sh once by hand.", messages=m_zh, sid="sum_zh_in_en")
    m_ok = b.messages(conv, HISTORY[:10])
    b.summary(conv, "Configured service-0 to service-9 on hosts web-00 to web-09, ports 8000-8009; each config file "
              "/etc/svc/<n>.yaml was given with its checksum.", messages=m_ok, sid="sum_ok")
    b.summary(conv, "Services 0-9 configured on web-00..web-09 (ports 8000-8009, /etc/svc/<n>.yaml).",
              parents=["sum_ok"], sid="sum_cond")
    b.close()
    before = files_digest(home)
    rep = operations.check(home)
    by = {r.id: r for r in rep.results}
    assert by["sum_it_offtopic"].failures == ["ungrounded"]
    assert by["sum_zh_in_en"].failures == ["language_drift"]
    ok = by["sum_ok"]
    assert ok.valid and ok.fidelity["same_language"] is True and ok.fidelity["grounding"] > 0.5
    assert ok.fidelity["identifier_retention"] is not None
    # lossless-claw's token_count totals, not a count of the joined text
    con = sqlite3.connect(home / "lcm.db")
    total = con.execute("SELECT TOTAL(m.token_count) FROM summary_messages sm JOIN messages m ON "
                        "m.message_id = sm.message_id WHERE sm.summary_id = 'sum_ok'").fetchone()[0]
    con.close()
    assert ok.input_tokens == int(total)
    cond = by["sum_cond"]
    assert cond.valid and cond.fidelity is not None and cond.fidelity["word_overlap"] > 0.5
    assert files_digest(home) == before


ZH = ["我们的夜间备份任务又失败了，你能看看吗？", "backup.sh 从 2026-11-02 开始在 s3://acme-backups/nightly 上报 AccessDenied。",
      "那正是我们轮换 KMS 密钥的时候。", "是的，backup-writer 角色对新密钥 alias/backup-2026 没有授权。",
      "请修复并手动运行一次备份。", "好的，我已经授权并重新运行了备份，这次成功了，上传了 38.2 GB。"]
ZH_SUMMARY = "夜间备份因 KMS 密钥轮换报 AccessDenied；已给 backup-writer 授权 alias/backup-2026 并手动运行备份，上传 38.2 GB 成功。"
EN_SUMMARY = ("The nightly backup failed with AccessDenied after the KMS key rotation; backup-writer was granted "
              "alias/backup-2026 and the manual re-run uploaded 38.2 GB.")


def test_a_session_compaction_is_judged_against_what_it_condensed_even_incrementally(home):
    """A compaction's input: the previous summary and the entries from the previous
    compaction's first kept entry; the next check reads that window again from the file
    (its offset in the state, no text) and judges the new compaction against it."""
    f = home / "agents" / "main" / "sessions" / "zh.jsonl"
    entries = [message(i, ZH[i]) for i in range(6)]
    entries.append(compaction("c1", ZH_SUMMARY, 9000, "2026-11-28T09:10:00.000Z", first_kept="m0004"))
    session_jsonl(f, "zh", entries)
    rep = operations.check(home)
    (r1,) = rep.results
    assert r1.valid and r1.fidelity["same_language"] is True and r1.input_tokens == 9000
    with open(f, "a", encoding="utf-8") as fh:
        for i in range(6, 8):
            fh.write(json.dumps(message(i, "".join(ZH[2:] if i % 2 else ZH[:4]), parent="c1" if i == 6 else "m0006"),
                                ensure_ascii=False) + "\n")
        fh.write(json.dumps(compaction("c2", EN_SUMMARY, 9500, "2026-11-28T10:10:00.000Z", first_kept="m0007",
                                       parent="m0007")) + "\n")
    rep = operations.check(home)
    (r2,) = rep.results
    assert r2.id == "c2" and r2.failures == ["language_drift"] and r2.fidelity is not None
    text = state_path(home).read_text()
    assert "备份" not in text and "nightly" not in text     # the window is an offset, not text


def test_agent_db_compactions_get_their_input_text_on_a_full_read(home):
    db = home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    events = [("z", i + 1, message(i, ZH[i])) for i in range(6)]
    events.append(("z", 7, compaction("e1", EN_SUMMARY, 9000, "2026-11-28T09:00:00Z", first_kept="m0005")))
    agent_db(db, events, compress_from=3)
    rep = operations.check(home)
    (r,) = rep.results
    assert r.failures == ["language_drift"] and r.fidelity["same_language"] is False


def test_odd_entries_and_message_rows_give_input_text_without_breaking_the_check(home):
    """Whatever shape a transcript entry or an lcm message row has, the check reads on:
    content as a string, blocks, a number, null; tool calls, bash runs; empty and BLOB rows."""
    f = home / "agents" / "main" / "sessions" / "odd.jsonl"
    odd = [
        {"type": "message", "id": "a", "message": {"role": "user", "content": "plain string content about backup.sh"}},
        {"type": "message", "id": "b", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hidden"}, {"type": "toolCall", "name": "bash", "arguments": {"cmd": "ls /srv"}},
            {"type": "text", "text": "listing /srv for the backup"}, "not a block", {"type": "text", "text": 42}]}},
        {"type": "message", "id": "c", "message": {"role": "bashExecution", "command": "du -sh /srv", "output": None}},
        {"type": "message", "id": "d", "message": {"role": "toolResult", "content": 12345}},
        {"type": "message", "id": "e", "message": None},
        {"type": "message", "id": ["x"], "message": {"role": "user", "content": None}},
        {"type": "custom_message", "id": "f", "content": [{"type": "text", "text": "extension note"}]},
        {"type": "branch_summary", "id": "g", "summary": "an earlier branch looked at /srv/backup"},
        compaction("c1", "The user checked /srv with ls and du before fixing backup.sh.", 5000,
                   "2026-11-28T09:00:00Z", first_kept=["not", "an", "id"]),
    ]
    session_jsonl(f, "odd", odd)
    b = LcmBuilder(home / "lcm.db")
    conv = b.conversation("sess-odd")
    m = b.messages(conv, ["ordinary message about the nightly backup", "another one about backup.sh"])
    b.con.execute("UPDATE messages SET content = '' WHERE message_id = ?", (m[0],))
    b.con.execute("UPDATE messages SET content = ? WHERE message_id = ?", (b"\xff\xfe raw", m[1]))
    b.summary(conv, GOOD_A, messages=m, sid="sum_odd")
    b.close()
    p = run_guard("--check", "--format", "json", home=home)
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr
    doc = json.loads(p.stdout)
    by = {r["id"]: r for r in doc["results"]}
    assert by["c1"]["fidelity"] is not None and by["sum_odd"]["fidelity"] is None   # no text to read: no figures


def test_an_lcm_leaf_may_carry_identifiers_forward_from_the_previous_summary(home):
    """lossless-claw writes a leaf with the conversation's previous summary as context: the
    tickets and paths it carries forward from there are not invented."""
    ids = "SUP-1001, SUP-1002, SUP-1003, infra/iam/writer.tf, scripts/rotate.sh and v2.4.1"
    b = LcmBuilder(home / "lcm.db")
    conv = b.conversation("sess-carry")
    m1 = b.messages(conv, [f"user: the rotation broke {ids}; please track them", "assistant: tracking all of them"])
    b.summary(conv, f"The key rotation broke {ids}; all are tracked.", messages=m1, sid="sum_carry_1")
    m2 = b.messages(conv, ["user: the nightly backup now passes again after the grant, can you check the last runs "
                           "and tell me whether anything else is still failing in the pipeline?",
                           "assistant: confirmed, the backup job passed twice in a row; the upload finished, the "
                           "checksums matched and no other step of the pipeline failed since the grant was made."])
    b.summary(conv, f"The nightly backup passes again after the grant; still open from before: {ids}.", messages=m2,
              sid="sum_carry_2")
    b.close()
    by = {r.id: r for r in operations.check(home).results}
    assert by["sum_carry_2"].valid, by["sum_carry_2"].reasons
    assert not [f for f in by["sum_carry_2"].findings if f.kind == "invented_identifiers"]
