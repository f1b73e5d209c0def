"""opencode's database as a store, the hook its plugin runs, installing the plugin, and its
compaction requests as serve reads them, on what opencode 1.18.33 really wrote and sent
(tests/recordings/opencode/data, recorded by tests/recordings/opencode/record.py): no binary
needed. The real binary: test_opencode_live.py."""
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_guard import operations, serve
from compaction_guard.agents.opencode import hook, store
from compaction_guard.agents.opencode.layout import resolve
from compaction_guard.check import check_record
from compaction_guard.contract import of_request
from compaction_guard.settings import DEFAULT

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "recordings" / "opencode" / "data"


def files(d: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def records(case: str) -> list:
    src = store.OpencodeDbSource(DATA / case / "opencode.db")
    try:
        return list(src.records(None))
    finally:
        src.close()


@pytest.mark.parametrize("case, kinds", [
    ("good-long", [[]]), ("good-short", [[]]), ("manual-good", [[]]), ("prior", [[], []]),
    ("empty", [["empty"]]), ("empty-short", [["empty"]]), ("empty-ws", [["empty"]]), ("manual-empty", [["empty"]]),
    ("inject", [["empty"]]), ("preamble-long", [["empty"]]), ("preamble-short", [["empty"]]),
    ("loop", [["repetition"]]), ("echo", [["empty"]]), ("language", [["language_drift"]]),
])
def test_each_summary_opencode_stored_is_one_record_with_its_verdict(case, kinds):
    before = files(DATA / case)
    recs = records(case)
    assert [check_record(r, DEFAULT).failures for r in recs] == kinds
    assert files(DATA / case) == before                # nothing written beside the database, not even -shm
    export = json.loads((DATA / f"{case}-export.json").read_text())
    ids = {m["info"]["id"] for m in export["messages"] if m["info"].get("summary") is True}
    assert {r.id for r in recs} == ids and all(r.meta["session"] == export["info"]["id"] for r in recs)
    first = recs[0]
    assert "Keep deploy ticket OPS-4411" in first.input_text and first.context_source.startswith("opencode's")
    assert first.context_before == (1208 if case.startswith("manual") else 15008)


def test_the_history_is_what_opencode_replaced_and_a_later_one_carries_the_prior_summary():
    (good,) = records("good-long")
    request = json.loads((DATA / "request-good-long.json").read_text())["body"]
    sent = request["messages"][1]["content"]
    # the tail opencode kept verbatim is not in the replaced history: only the head it sent
    assert "Noted the log? Reply OK." not in good.input_text and "Noted the log? Reply OK." not in sent
    assert good.input_text.startswith("user: Keep deploy ticket") and "assistant: Noted" not in good.input_text
    assert good.context_after == 1200
    first, second = records("prior")
    assert second.previous == first.content and "user: " not in second.input_text
    assert "I will keep that in mind" in second.input_text


def test_incremental_and_counted_once(tmp_path):
    shutil.copytree(DATA / "prior", tmp_path / "db")
    src = store.OpencodeDbSource(tmp_path / "db" / "opencode.db")
    assert len(list(src.records(None))) == 2
    wm = src.new_watermark()
    src.close()
    again = store.OpencodeDbSource(tmp_path / "db" / "opencode.db")
    assert list(again.records(wm)) == [] and again.history(next(iter(again._earlier), "")) is not None
    again.close()


WRITER = """
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_autocheckpoint = 0")
(sid, data), = db.execute("SELECT session_id, data FROM message WHERE instr(data, '\\"summary\\":true') > 0")
db.execute("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
           ("msg_zzzlate", sid, 1896484022646, 1896484022646, data))
db.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
           ("prt_zzzlate", "msg_zzzlate", sid, 1896484022646, 1896484022646,
            json.dumps({"type": "text", "text": "Let me check the log first."}, separators=(",", ":"))))
db.commit()
print("ready", flush=True)
sys.stdin.read()
"""


def test_rows_still_in_the_wal_are_read_and_nothing_is_written_beside_the_database(tmp_path):
    """A summary opencode (another process) has committed to its WAL but not checkpointed: read
    while the writer is open (-wal and -shm there), after it was killed (both left), and with the
    -wal alone (no -shm: read from a private copy)."""
    d = tmp_path / "data"
    shutil.copytree(DATA / "good-long", d)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(d / "opencode.db")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        for state in ("writing", "killed"):
            if state == "killed":
                writer.kill()
                writer.wait()
            before = files(d)
            src = store.OpencodeDbSource(d / "opencode.db")
            recs = list(src.records(None))
            src.close()
            assert [r.id for r in recs][-1] == "msg_zzzlate" and recs[-1].content == "Let me check the log first."
            assert files(d) == before, state
    finally:
        writer.kill()
        writer.wait()
    lone = tmp_path / "lone"
    lone.mkdir()
    for name in ("opencode.db", "opencode.db-wal"):
        shutil.copy(d / name, lone / name)
    src = store.OpencodeDbSource(lone / "opencode.db")
    assert [r.id for r in src.records(None)][-1] == "msg_zzzlate"
    src.close()
    assert sorted(p.name for p in lone.iterdir()) == ["opencode.db", "opencode.db-wal"]


def opencode_home(tmp_path, case: str) -> tuple:
    home = tmp_path / "home"
    shutil.copytree(DATA / case, home / ".local" / "share" / "opencode")
    env = {"HOME": str(home)}
    return home, env, resolve(env)


def run_hook(env, payload: dict) -> dict:
    out = io.StringIO()
    assert hook.hook_main(io.StringIO(json.dumps(payload)), out, env=env) == 0
    return json.loads(out.getvalue()) if out.getvalue() else {}


def test_the_plugins_hook_judges_a_summary_and_answers_the_warning(tmp_path):
    home, env, layout = opencode_home(tmp_path, "empty")
    (rec,) = records("empty")
    session = rec.meta["session"]
    said = run_hook(env, {"event": "compacted", "session_id": session, "message_id": rec.id})
    assert said["failures"] == ["empty"]
    assert said["warning"].startswith("compaction-resilience-guard: the last compaction of this session failed")
    assert "OPS-4411" in said["warning"] and f"opencode export {session}" in said["warning"]
    mark = json.loads(hook.failed_mark(layout, session).read_text())
    assert mark["told"] is False and "OPS-4411" not in json.dumps(mark)       # no text of the conversation kept
    st = operations.status(layout)
    assert st["status"] == "DEGRADED" and st["failed_since_check"][0]["failures"] == ["empty"]
    # a process that did not see the compaction asks for the warning again
    assert "OPS-4411" in run_hook(env, {"event": "warning", "session_id": session})["warning"]
    assert run_hook(env, {"event": "other", "session_id": session}) == {}
    assert run_hook(env, {"event": "compacted", "session_id": session, "message_id": "msg_nothere"}) == {}
    assert "not found" in (layout.guard_dir / "hook.log").read_text()


def test_a_good_summary_takes_the_mark_away(tmp_path):
    home, env, layout = opencode_home(tmp_path, "good-long")
    (rec,) = records("good-long")
    session = rec.meta["session"]
    hook.failed_mark(layout, session).parent.mkdir(parents=True)
    hook.failed_mark(layout, session).write_text("{}")
    assert run_hook(env, {"event": "compacted", "session_id": session, "message_id": rec.id}) == \
        {"id": rec.id, "failures": []}
    assert not hook.failed_mark(layout, session).exists()


def test_install_writes_the_plugin_and_uninstall_takes_only_it(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "OPENCODE_"))}
    env.update(HOME=str(home))
    plugins = home / ".config" / "opencode" / "plugin"
    plugins.mkdir(parents=True)
    (plugins / "mine.js").write_text("export const Mine = async () => ({})\n")

    def guard(*args):
        return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True,
                              text=True, timeout=60)
    p = guard("install", "opencode")
    assert p.returncode == 0 and "plugin written" in p.stdout, p.stderr
    text = (plugins / hook.PLUGIN).read_text()
    assert json.dumps(str(home / ".local" / "share" / "opencode" / "compaction-guard")) in text
    assert '"hook", "opencode"]' in text and "__GUARD__" not in text
    assert "already there" in guard("install", "opencode").stdout
    assert guard("uninstall", "opencode").returncode == 0
    assert sorted(p.name for p in plugins.iterdir()) == ["mine.js"]
    (plugins / hook.PLUGIN).write_text("// someone else's\n")
    p = guard("install", "opencode")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not the guard's" in p.stderr
    assert guard("uninstall", "opencode").returncode == 0 and (plugins / hook.PLUGIN).exists()


def test_check_status_and_file_read_opencodes_database(tmp_path):
    home, env, layout = opencode_home(tmp_path, "prior-after-empty")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "OPENCODE_", "GUARD_"))}
    env.update(HOME=str(home))
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), "--agent", "opencode", "--check", "--format", "json"],
                       env=env, capture_output=True, text=True, timeout=120)
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["summaries_checked"] == 2 and doc["results"][0]["failures"] == ["empty"]
    before = files(DATA / "loop")
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), "--check", "--file", str(DATA / "loop" / "opencode.db"),
                        "--format", "json"], env=env, capture_output=True, text=True, timeout=120)
    assert json.loads(p.stdout)["results"][0]["failures"] == ["repetition"], p.stderr
    assert files(DATA / "loop") == before


@pytest.mark.parametrize("case", ["good-long", "prior"])
def test_serve_reads_opencodes_request_its_history_its_prior_summary_and_its_template(case):
    body = json.loads((DATA / f"request-{case}.json").read_text())["body"]
    req = serve.read_request("openai", body)
    assert "<template>" not in req.text and "[User]:" in req.text or "[Assistant]:" in req.text
    assert req.contract.sections == ("## Objective", "## Important Details", "## Work State", "## Next Move",
                                     "## Relevant Files")
    if case == "prior":
        (first, _second) = records("prior")
        assert req.previous == first.content and "<prior-summary>" not in req.text
    else:
        assert req.previous is None and "OPS-4411" in req.text
    assert of_request(req.text, req.instructions).sections == req.contract.sections
