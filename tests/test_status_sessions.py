"""The status is the state of the sessions, not of the last batch a check read: a second check with
nothing new stays DEGRADED while a session's latest compaction failed, and a later good one brings
HEALTHY; the guard's own L3 answer, stored by the agent, is level usage and not a failure. On the
databases the real opencode 1.18.33 wrote (tests/recordings/opencode/data) and a real serve."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_guard.own_answers import Matcher, entry
from compaction_guard.state import affected_sessions, empty_state, keep_verdict

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "recordings" / "opencode" / "data"


def _user(tmp_path: Path, case: str) -> dict:
    """A throwaway HOME whose opencode data directory is the one the real opencode wrote in `case`."""
    home = tmp_path / "home"
    (home / ".local" / "share").mkdir(parents=True)
    shutil.copytree(DATA / case, home / ".local" / "share" / "opencode")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "OPENCODE_", "GUARD_"))}
    env["HOME"] = str(home)
    return env


def guard(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def _db(env: dict) -> Path:
    return Path(env["HOME"]) / ".local" / "share" / "opencode" / "opencode.db"


def _as_it_was_after_its_first_compaction(db: Path) -> None:
    """The database as it stood before opencode's second compaction of the session: every message
    (and its parts) opencode wrote after the first summary taken away, as if not written yet."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT id, time_created, data FROM message ORDER BY time_created, id").fetchall()
        first = next(t for _i, t, d in rows if json.loads(d).get("summary") is True)
        later = [i for i, t, _d in rows if t > first]
        assert later
        con.executemany("DELETE FROM part WHERE message_id = ?", [(i,) for i in later])
        con.executemany("DELETE FROM message WHERE id = ?", [(i,) for i in later])
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def test_a_second_check_with_nothing_new_stays_degraded_until_a_good_compaction(tmp_path):
    env = _user(tmp_path, "prior-after-empty")       # one session: an empty summary, then a good one
    full = tmp_path / "full"
    shutil.copytree(_db(env).parent, full)
    _as_it_was_after_its_first_compaction(_db(env))

    first = guard(env, "--agent", "opencode", "--check", "--format", "json")
    doc = json.loads(first.stdout)
    assert first.returncode == 1 and doc["status"] == "DEGRADED" and doc["failures_found"] == 1, first.stdout[-800:]
    (session,) = doc["affected_sessions"]
    assert session["session"].startswith("opencode:ses_") and session["failures"] == ["empty"]
    since = doc["degraded_since"]

    # again, seconds later: nothing new to read, the session's last compaction still the failed one
    again = guard(env, "--agent", "opencode", "--check")
    assert again.returncode == 1, again.stdout
    assert f"Status: DEGRADED: 1 session whose last compaction failed, since {since}: {session['session']} (empty)" \
        in again.stdout and "Failures found:     0" in again.stdout
    again = json.loads(guard(env, "--agent", "opencode", "--check", "--format", "json").stdout)
    assert again["status"] == "DEGRADED" and again["summaries_checked"] == 0 and again["sessions_affected"] == 1
    assert again["degraded_since"] == since and again["affected_sessions"][0]["session"] == session["session"]
    st = json.loads(guard(env, "--agent", "opencode", "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["sessions_affected"] == 1 and st["degraded_since"] == since
    text = guard(env, "--agent", "opencode", "--status").stdout
    assert text.startswith("Compaction Resilience Guard — DEGRADED") and session["session"] in text and since in text
    # every agent at once says the same, and so do the metrics and the HTML report
    assert json.loads(guard(env, "--status", "--format", "json").stdout)["status"] == "DEGRADED"
    prom = guard(env, "--agent", "opencode", "--report", "--format", "prometheus").stdout
    assert 'compaction_guard_sessions_affected{agent="opencode"} 1' in prom
    assert 'compaction_guard_healthy{agent="opencode"} 0' in prom
    page = tmp_path / "report.html"
    guard(env, "--agent", "opencode", "--report", "--html", str(page))
    assert "Status: DEGRADED: 1 session whose last compaction failed" in page.read_text()
    report = guard(env, "--agent", "opencode", "--report").stdout
    listed = report[report.index("Sessions whose last compaction failed:"):report.index("Recent failures:")]
    assert listed.count("ses_") == 1 and session["session"] in listed      # once, by the agent's key

    # opencode compacts the session again, well: the session's latest compaction passed
    for f in full.glob("opencode.db*"):
        shutil.copy2(f, _db(env).parent / f.name)
    good = guard(env, "--agent", "opencode", "--check", "--format", "json")
    doc = json.loads(good.stdout)
    assert good.returncode == 0 and doc["status"] == "HEALTHY" and doc["sessions_affected"] == 0, good.stdout[-800:]
    st = json.loads(guard(env, "--agent", "opencode", "--status", "--format", "json").stdout)
    assert st["status"] == "HEALTHY" and st["sessions_affected"] == 0
    assert "Sessions whose last compaction failed" not in guard(env, "--agent", "opencode", "--report").stdout


def test_the_hooks_verdict_and_the_checks_are_one_session(tmp_path):
    """The plugin's hook judged the empty summary (recorded event); the check then reads it too:
    one session, under one key, in --report and in the status."""
    from compaction_guard.agents.opencode import hook, store
    env = _user(tmp_path, "empty")
    src = store.OpencodeDbSource(_db(env))
    try:
        (rec,) = list(src.records(None))
    finally:
        src.close()
    # what the plugin sends when opencode has stored a summary (plugin.js)
    answer = json.loads(hook.handle({"event": "compacted", "session_id": rec.meta["session"], "message_id": rec.id},
                                    env=env))
    assert answer["failures"] == ["empty"]
    for _ in range(2):
        guard(env, "--agent", "opencode", "--check")
    report = json.loads(guard(env, "--agent", "opencode", "--report", "--format", "json").stdout)
    assert [s["session"] for s in report["failed_sessions"]] == [f"opencode:{rec.meta['session']}"]
    st = json.loads(guard(env, "--agent", "opencode", "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["sessions_affected"] == 1


def test_a_session_whose_database_is_gone_no_longer_counts(tmp_path):
    env = _user(tmp_path, "empty")
    assert guard(env, "--agent", "opencode", "--check").returncode == 1
    for f in _db(env).parent.glob("opencode.db*"):
        f.unlink()
    p = guard(env, "--agent", "opencode", "--check", "--format", "json")
    assert p.returncode == 2 and json.loads(p.stdout)["status"] == "NO_STORE"       # never HEALTHY: nothing seen
    assert json.loads(guard(env, "--agent", "opencode", "--status", "--format", "json").stdout)["sessions_affected"] == 0


def test_each_session_keeps_when_its_failing_began_and_a_good_compaction_ends_it():
    state = empty_state()
    keep_verdict(state, "codex:a", {"id": "1", "failures": ["empty"], "at": "2026-12-01T10:00:00+00:00"})
    keep_verdict(state, "codex:b", {"id": "2", "failures": ["repetition"], "at": "2026-12-01T11:00:00+00:00",
                                      "pending": True})
    keep_verdict(state, "codex:a", {"id": "3", "failures": ["garbled"], "at": "2026-12-02T10:00:00+00:00"})
    # a check's verdict on b's same compaction keeps the warning its hook owes the model
    keep_verdict(state, "codex:b", {"id": "2", "failures": ["repetition"], "at": "2026-12-01T12:00:00+00:00"})
    state["sessions"]["ses_legacy"] = {"id": "x", "failures": ["empty"], "at": "2026-11-01T00:00:00+00:00"}
    got = affected_sessions(state)
    assert [(a["session"], a["since"], a["failures"], a["warned"]) for a in got] == [
        ("codex:a", "2026-12-01T10:00:00+00:00", ["garbled"], True),
        ("codex:b", "2026-12-01T11:00:00+00:00", ["repetition"], False)]
    keep_verdict(state, "codex:a", {"id": "4", "failures": [], "at": "2026-12-03T10:00:00+00:00"})
    keep_verdict(state, "codex:b", {"id": "5", "failures": [], "at": "2026-12-03T10:00:00+00:00"})
    assert affected_sessions(state) == []


# ------------------------------------------------------------------ the guard's own L3
def _l3_answer(tmp_path, env) -> str:
    """What serve (real HTTP) answers opencode's recorded compaction request when the model loops
    at L1 and L2: its L3, recorded in opencode's guard state."""
    pytest.importorskip("uvicorn")
    from modelkit.behaviours import B, FakeLLM
    from test_serve import Running, upstream
    from compaction_guard.agents.opencode.layout import resolve
    import urllib.request
    body = json.loads((DATA / "request-loop.json").read_text())["body"]
    body["stream"] = False
    layout = resolve(env)
    with FakeLLM([B("loop")]) as fake, Running(layout, upstream(fake)) as run:
        req = urllib.request.Request(run.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            assert r.headers["x-compaction-guard-level"] == "3"
            return json.loads(r.read())["choices"][0]["message"]["content"]


def test_the_guards_own_l3_stored_by_the_agent_counts_as_level_usage_not_a_failure(tmp_path, monkeypatch):
    env = _user(tmp_path, "good-long")
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("UPSTREAM_KEY", "sk-upstream-not-a-key")
    answer = _l3_answer(tmp_path, env)
    assert "compaction-resilience-guard L3" in answer
    # opencode keeps the answer as its summary; here, as a file, wrapped as an agent might wrap it
    stored = tmp_path / "summary.md"
    stored.write_text("The conversation so far, summarized:\n\n" + answer.replace("\n", "\n\n") + "\n\n<files/>\n")
    p = guard(env, "--agent", "opencode", "--check", "--file", str(stored), "--format", "json")
    doc = json.loads(p.stdout)
    (res,) = doc["results"]
    assert p.returncode == 0 and res["failures"] == [] and res["guard_l3"] is True, p.stdout[-1500:]
    assert doc["status"] == "HEALTHY" and doc["written_by_fallback"] == 1 and doc["guard_l3"] == 1
    rep = json.loads(guard(env, "--agent", "opencode", "--report", "--format", "json").stdout)
    assert rep["level_usage"]["l3_deterministic"] == 1                     # serve's own count, once
    assert rep["stored_summaries"]["by_fallback"] == 1 and rep["fallback_share"] == 1.0
    # the same note in text the guard did not answer (a model's forgery, or its answer changed): a failure
    forged = tmp_path / "forged.md"
    forged.write_text(answer.replace("OPS-4411", "OPS-4412"))
    (res,) = json.loads(guard(env, "--agent", "opencode", "--check", "--file", str(forged), "--format",
                              "json").stdout)["results"]
    assert res["failures"] == ["truncation_marker"] and "guard_l3" not in res


def test_an_own_answer_is_known_by_its_span_not_by_its_note():
    state = empty_state()
    text = "## Objective\nKeep OPS-4411.\n\n[TRUNCATED: 3 of 9 lines dropped by compaction-resilience-guard L3]\nend"
    state["own_answers"].append(entry(text, "2026-12-01T00:00:00+00:00"))
    known = Matcher(state)
    assert known(text) and known("Summary:\n" + text.replace("\n", "  \n") + "\n<read-files>a.py</read-files>")
    assert not known(text.replace("OPS-4411", "OPS-4410")) and not known(text[:-1])
    assert not Matcher(empty_state())(text) and not known("plain text with no note")
    assert "Keep" not in json.dumps(state["own_answers"])          # a key of the text, never the text
