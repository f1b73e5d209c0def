"""The guard on stores OpenClaw's own code wrote (npm openclaw 2026.9.6, tests/openclaw/write_stores.mjs):
its SessionManager for transcripts and compactions, its session store for the counters, its
delete and cold-tier maintenance for the archives, its doctor for VACUUM, its functions and
constants for the fallback markers. The home is a user's home with OPENCLAW_HOME pointing at
it: the state is `<home>/.openclaw`, as OpenClaw resolves it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
import subprocess
import sys

import pytest

from openclaw_real import env_for, openclaw, require, write_stores
from conftest import ROOT

S1, S2, S3, S4, S5, S6 = (f"11111111-0000-4000-8000-00000000000{i}" for i in range(1, 7))

# real text longer than OpenClaw's 16,000-character summary budget (the heads of Debian's package
# documents, tests/corpus/real/docs.jsonl): OpenClaw's own capCompactionSummary cuts it
LONG = "\n\n".join(json.loads(line)["text"] for line in
                   (ROOT / "tests" / "corpus" / "real" / "docs.jsonl").read_text().splitlines()[:40]
                   if json.loads(line)["part"] == "head")

GOOD_WITH_FILES = {"openclaw": "with-files", "text": (
    "## Decisions\n- Deployed v2.4.1 to staging-3 (ticket OPS-4412).\n\n## Open TODOs\n- Run the smoke tests.\n\n"
    "## Constraints/Rules\n- Deploy only from the release branch.\n\n## Pending user asks\n- Run the smoke tests on "
    "staging-3.\n\n## Exact identifiers\n- OPS-4412, v2.4.1, staging-3"),
    "readFiles": ["deploy/staging.yaml", "docs/runbook/smoke.md", "ops/inventory/hosts.ini", "ci/pipelines/release.yml",
                  "scripts/smoke/run_all.sh"],
    "modifiedFiles": ["deploy/release.txt"]}

BRANCHED = {"op": "session", "key": "agent:main:branched", "session": S5, "entries": [
    {"ref": "q1", "user": "The job queue needs a new backend; propose one."},
    {"ref": "q2", "assistant": "Option one: move the queue to MySQL 5.7 on host mq-old-9, tickets QUE-1180, QUE-1181, "
                               "QUE-1182, QUE-1183 and QUE-1184 for the cut-over."},
    {"ref": "q3", "user": "No, MySQL is wrong for this. Let us go back and try something else."},
    {"branch": "q1"},
    {"ref": "qb", "branchSummary": "An earlier branch proposed a relational backend; the user rejected it.", "from": "q1"},
    {"ref": "q4", "assistant": "Then Redis Streams on host mq-new-2, with consumer group workers."},
    {"ref": "q5", "user": "Good, go with Redis Streams on mq-new-2."},
    # a summary of the abandoned branch: its identifiers are nowhere on the path it condensed
    {"ref": "qc1", "compaction": "The queue moves to MySQL 5.7 on host mq-old-9; cut-over tickets QUE-1180, QUE-1181, "
                                 "QUE-1182, QUE-1183 and QUE-1184.", "firstKept": "q5", "tokensBefore": 3000,
     "tokensAfter": 500},
]}

PLAN = [
    {"op": "session", "key": "agent:main:ops", "session": S1, "entries": [
        {"ref": "u1", "user": "Deploy release v2.4.1 to staging-3; the ticket is OPS-4412. Deploy only from the "
                              "release branch."},
        {"ref": "a1", "assistant": "Deployed v2.4.1 to staging-3 from the release branch. Smoke tests pending."},
        {"ref": "u2", "user": "Run the smoke tests on staging-3 next."},
        {"ref": "c1", "compaction": GOOD_WITH_FILES, "firstKept": "u2", "tokensBefore": 3097, "tokensAfter": 1200},
        {"ref": "a2", "assistant": "Smoke tests passed on staging-3: 42 of 42."},
        {"ref": "c2", "compaction": "## Decisions\n- v2.4.1 on staging-3 passed its smoke tests, 42 of 42 (OPS-4412).",
         "firstKept": "a2", "tokensBefore": 3680, "tokensAfter": 5155},
    ]},
    {"op": "counters", "key": "agent:main:ops", "entry": {"sessionId": S1, "totalTokens": 190000,
                                                          "contextTokens": 200000, "compactionCount": 2,
                                                          "totalTokensFresh": True}},
    {"op": "session", "key": "agent:main:billing", "session": S2, "entries": [
        {"ref": "b1", "user": "Migrate the billing tables to Postgres 16: invoices, payments, refunds."},
        {"ref": "b2", "assistant": "Migrated invoices and payments to Postgres 16; refunds are left."},
        {"ref": "bc1", "compaction": {"openclaw": "partial", "completed": 1, "total": 3,
                                      "text": "## Decisions\n- Billing to Postgres 16: invoices and payments migrated."},
         "firstKept": "b2", "tokensBefore": 9000, "tokensAfter": 900},
        {"ref": "b3", "user": "Now migrate the refunds table."},
        {"ref": "b4", "assistant": "The refunds table is migrated to Postgres 16 too."},
        {"ref": "bc2", "compaction": "copy-forward", "firstKept": "b4", "tokensBefore": 9400, "tokensAfter": 1000},
        {"ref": "b5", "user": "Here are the notes of the packages the billing hosts run, for the record:\n\n" + LONG},
        {"ref": "b5a", "assistant": "Noted: the package notes of the billing hosts."},
        {"ref": "bc3", "compaction": {"openclaw": "truncated", "text": LONG}, "firstKept": "b5a",
         "tokensBefore": 20000, "tokensAfter": 5000},
    ]},
    {"op": "counters", "key": "agent:main:billing", "entry": {"sessionId": S2, "totalTokens": 1200,
                                                              "contextTokens": 200000, "compactionCount": 3}},
    {"op": "session", "key": "agent:main:gone", "session": S3, "entries": [
        {"ref": "g1", "user": "Rotate the API key of the payments gateway pg-east-2."},
        {"ref": "g2", "assistant": "Rotated the pg-east-2 key; the old one is revoked."},
        {"ref": "gc1", "compaction": "Rotated the API key of payments gateway pg-east-2 and revoked the old one.",
         "firstKept": "g2", "tokensBefore": 2000, "tokensAfter": 300},
    ]},
    {"op": "delete", "key": "agent:main:gone"},
    {"op": "session", "key": "agent:main:windows", "session": S4, "entries": [
        {"ref": "w1", "user": "Bump the mobile app to build 731 and ship it to TestFlight."},
        {"ref": "w2", "assistant": "Build 731 is on TestFlight."},
        {"ref": "wr", "reset": "new"},
        {"ref": "w3", "user": "Set up nightly backups of the orders database to bucket s3://acme-orders-backup."},
        {"ref": "snap", "custom": "model-snapshot", "data": {"provider": "scripted", "modelId": "scripted"}},
        {"ref": "w4", "assistant": "Nightly backup of orders scheduled at 02:00 to s3://acme-orders-backup."},
        {"ref": "wc1", "compaction": "Nightly backups of the orders database go to s3://acme-orders-backup at 02:00.",
         "firstKept": "snap", "tokensBefore": 4000, "tokensAfter": 700},
        {"ref": "w5", "user": "The restore drill is ticket INC-20931; run it on Friday."},
        {"ref": "wc2", "compaction": "Orders backups to s3://acme-orders-backup nightly at 02:00; the restore drill "
                                     "INC-20931 runs on Friday.", "firstKept": "w5", "tokensBefore": 4200,
         "tokensAfter": 800},
    ]},
]


@pytest.fixture(scope="module")
def real_home(tmp_path_factory):
    where = require()
    home = tmp_path_factory.mktemp("user") / "home"
    plan = json.loads(json.dumps(PLAN))
    # `copy-forward`: the partial summary carried into the next one, marker and all, with a line
    # added, as OpenClaw does when it re-distills a previous summary
    first = write_stores(home, [])["markers"]
    partial = ("## Decisions\n- Billing to Postgres 16: invoices and payments migrated.\n\n"
               + first["partial_example"])
    for step in plan:
        for e in step.get("entries", []):
            if e.get("compaction") == "copy-forward":
                e["compaction"] = partial + "\n- Refunds migrated to Postgres 16 as well."
    out = write_stores(home, plan + [BRANCHED])
    return where, home, out["refs"], out["markers"]


def _max_rowid(db) -> int:
    import sqlite3
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return con.execute("SELECT max(rowid) FROM transcript_events").fetchone()[0]


def _rowid_of(db, entry_id) -> int:
    import sqlite3
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return con.execute("SELECT rowid FROM transcript_events WHERE json_extract(event_json, '$.id') = ?",
                           (entry_id,)).fetchone()[0]


def guard(home, where, *args, **extra):
    env = env_for(home, where, **extra)
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.fixture
def fresh_home(real_home, tmp_path):
    """A copy of the home OpenClaw wrote, for a test that changes it."""
    where, home, refs, markers = real_home
    copy = tmp_path / "home"
    shutil.copytree(home, copy, symlinks=True)
    return where, copy, refs, markers


def test_the_home_is_found_as_openclaw_finds_it(fresh_home, tmp_path):
    where, home, refs, _ = fresh_home
    p = guard(home, where, "--check")
    first = p.stdout.splitlines()[0]
    assert first.startswith(f"Checking OpenClaw state directory {home / '.openclaw'} (OPENCLAW_HOME/.openclaw)")
    assert "openclaw-agent-db" in first and "Status: DEGRADED" in p.stdout
    # OPENCLAW_STATE_DIR names the state directory itself
    assert "summaries checked" in guard(home, where, "--check", "--all", OPENCLAW_STATE_DIR=str(home / ".openclaw")).stdout
    # --home given the user's home (which holds .openclaw) means that .openclaw
    p = guard(tmp_path, where, "--check", "--all", "--home", str(home))
    assert f"{home / '.openclaw'} (--home {home}: its .openclaw)" in p.stdout.splitlines()[0]
    # pointed at nothing: not HEALTHY, exit 2, where it looked and what to set
    empty = tmp_path / "nobody"
    empty.mkdir()
    p = guard(empty, where, "--check")
    assert p.returncode == 2 and "Status: NO_STORE" in p.stdout
    assert str(empty / ".openclaw") in p.stderr and "OPENCLAW_STATE_DIR" in p.stderr


def test_every_compaction_openclaw_wrote_is_found_with_its_verdict(fresh_home):
    where, home, refs, _ = fresh_home
    p = guard(home, where, "--check", "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    by = {r["id"]: r for r in doc["results"]}
    expected = ["c1", "c2", "bc1", "bc2", "bc3", "gc1", "wc1", "wc2", "qc1"]
    assert sorted(by) == sorted(refs[r] for r in expected)          # OpenClaw's own entry ids, each once
    v = {ref: by[refs[ref]] for ref in expected}
    # structured summary with OpenClaw's headings and file lists: valid, no invented identifiers
    assert v["c1"]["valid"] and not v["c1"]["warnings"], v["c1"]
    # tokensAfter above tokensBefore: the context grew
    assert v["c2"]["failures"] == ["inflation"] and "5,155 tokens after it, 3,680 before" in v["c2"]["reasons"]["inflation"]
    # OpenClaw's partial summary: a fallback that lost chunks 2-3 of 3
    assert v["bc1"]["failures"] == ["truncation_marker"]
    assert "chunks 1-1 of 3" in v["bc1"]["reasons"]["truncation_marker"] and "lost the other 2" in \
        v["bc1"]["reasons"]["truncation_marker"]
    # the same summary carried forward into the next: counted where it was written, not again
    assert v["bc2"]["valid"] and any(w.startswith("inherited_marker") for w in v["bc2"]["warnings"]), v["bc2"]
    # cut to OpenClaw's budget by its own capCompactionSummary
    assert v["bc3"]["failures"] == ["truncation_marker"] and "openclaw-summary-truncated" in \
        v["bc3"]["reasons"]["truncation_marker"]
    # the deleted session, read from the database's archive (the .deleted file is its copy: not read again)
    assert v["gc1"]["valid"] and v["gc1"]["source"] == "openclaw-agent-db"
    # windows: after a reset, and kept from a custom (model-snapshot) entry: INC-20931 is the user's own
    assert v["wc1"]["valid"] and v["wc2"]["valid"], (v["wc1"], v["wc2"])
    assert not any("invented" in w for w in v["wc2"]["warnings"])
    assert v["wc1"]["fidelity"]["grounding"] >= 0.5        # judged against what came after the reset
    # the branch it came back from is not what it condensed: that branch's ids are invented here
    assert v["qc1"]["failures"] == ["invented_identifiers"] and "QUE-1180" in v["qc1"]["reasons"]["invented_identifiers"]
    assert doc["written_by_fallback"] == 2
    # the counters OpenClaw keeps in session_nodes: a session near its window whose last compaction failed
    (warn,) = doc["session_warnings"]
    assert warn["session_key"] == "agent:main:ops" and warn["total_tokens"] == 190000 \
        and warn["context_tokens"] == 200000 and warn["last_compaction"] == refs["c2"]


def test_incremental_checks_survive_openclaws_vacuum_and_archives(fresh_home):
    """The watermark is per session and seq, the store's own key: a deleted session (whose
    rows were the newest), OpenClaw's `doctor --session-sqlite compact` (VACUUM, which may
    renumber rowids: the table has no INTEGER PRIMARY KEY) and the cold tier lose nothing
    and count nothing twice."""
    where, home, refs, _ = fresh_home
    db = home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    first = json.loads(guard(home, where, "--check", "--format", "json").stdout)
    assert first["summaries_checked"] == 9
    top_before = _max_rowid(db)
    # delete the session whose rows are the newest, VACUUM, then OpenClaw appends a compaction
    write_stores(home, [{"op": "delete", "key": "agent:main:branched"}])
    p = openclaw(where, home, "doctor", "--session-sqlite", "compact", "--session-sqlite-agent", "main", "--yes")
    assert p.returncode == 0 and "compact reclaimed" in p.stdout, p.stdout + p.stderr
    out = write_stores(home, [{"op": "session", "key": "agent:main:billing", "session": S2, "entries": [
        {"ref": "b6", "user": "The billing migration is finished: all 12 tables are on Postgres 16."},
        {"ref": "wc3", "compaction": "All 12 billing tables are migrated to Postgres 16; the migration is finished.",
         "firstKept": "b6", "tokensBefore": 4300, "tokensAfter": 600}]}])
    # the new compaction's rowid is below the highest one the first check saw: a rowid
    # watermark would never read it
    assert _rowid_of(db, out["refs"]["wc3"]) <= top_before
    second = json.loads(guard(home, where, "--check", "--format", "json").stdout)
    new = [r["id"] for r in second["results"]]
    # the new compaction, and the deleted session's compactions once more from its archive (not new: counted)
    assert out["refs"]["wc3"] in new
    rep = json.loads(guard(home, where, "--report", "--format", "json").stdout)
    assert rep["stored_total"] == 10                    # 9 + the new one: nothing counted twice
    # the cold tier: the session's events leave transcript_events for a zstd archive
    write_stores(home, [{"op": "cold", "afterDays": 30}])
    third = json.loads(guard(home, where, "--check", "--format", "json").stdout)
    assert third["status"] in ("HEALTHY", "DEGRADED")
    rep = json.loads(guard(home, where, "--report", "--format", "json").stdout)
    assert rep["stored_total"] == 10
    cold = json.loads(guard(home, where, "--check", "--all", "--format", "json").stdout)
    assert out["refs"]["wc3"] in {r["id"] for r in cold["results"]}      # read from the cold archive


def test_hook_install_and_remove_without_openclaw_on_path(tmp_path, monkeypatch):
    """Written into OpenClaw's managed hooks directory; without OpenClaw's command the operator is
    told how to enable it; a hook of that name the guard did not write is never touched."""
    from compaction_guard.agents.openclaw import hook as hooks, layout
    state = tmp_path / ".openclaw"
    state.mkdir()
    monkeypatch.delenv("OPENCLAW_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    lay = layout.at(state)
    doc = hooks.install(lay)
    d = state / "hooks" / "compaction-resilience-guard"
    assert doc["enabled"] is False and "openclaw hooks enable compaction-resilience-guard" in doc["note"]
    assert sorted(p.name for p in d.iterdir()) == ["HOOK.md", "guard.json", "handler.js"]
    assert '"events": ["session:compact:after"]' in (d / "HOOK.md").read_text()
    assert hooks.remove(lay)["removed"] and not d.exists()
    other = state / "hooks" / "compaction-resilience-guard"
    other.mkdir(parents=True)
    (other / "HOOK.md").write_text("---\nname: something-else\n---\n")
    with pytest.raises(Exception, match="did not write"):
        hooks.install(lay)
    assert (other / "HOOK.md").read_text().startswith("---\nname: something-else")


@pytest.mark.parametrize("command,expect", [
    (["/bin/false"], "gave no report"),
    (["/bin/sh", "-c", "sleep 30"], "timed out"),
    (["/nonexistent/compaction-guard"], "could not run"),
    (["/bin/sh", "-c", """echo '{"results": [{"id": "x", "session": "S", "valid": false, "failures": ["empty"], """
                       """"reasons": {"empty": "nothing in it"}}], "status": "DEGRADED"}'"""],
     "failed (empty): nothing in it"),
])
def test_the_hook_handler_never_breaks_the_gateway(tmp_path, command, expect):
    """OpenClaw awaits the handler: whatever the guard does (fails, hangs, is missing), it
    returns, within its timeout, without throwing; a failure becomes one line for the user."""
    from compaction_guard.agents.openclaw import hook as hooks, layout
    where = require()
    state = tmp_path / ".openclaw"
    state.mkdir()
    hooks.install(layout.at(state), openclaw="/bin/true")
    d = state / "hooks" / "compaction-resilience-guard"
    (d / "guard.json").write_text(json.dumps({"command": command, "timeoutMs": 1500}))
    runner = tmp_path / "run.mjs"
    runner.write_text(
        f'import handler from {json.dumps(str(d / "handler.js"))};\n'
        'const event = {type: "session", action: "compact:after", context: {sessionId: "S"}, messages: []};\n'
        'const logs = []; console.log = console.warn = (...a) => logs.push(a.join(" "));\n'
        'await handler(event);\n'
        'process.stdout.write(JSON.stringify({messages: event.messages, logs}));\n')
    from openclaw_real import node
    p = subprocess.run([str(node(where)), str(runner)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert any(expect in line for line in out["logs"]), out
    assert (out["messages"] != []) == ("failed (" in expect)


def test_the_layout_is_resolved_as_openclaw_resolves_it(tmp_path):
    """The state directory and config the guard settles on are those OpenClaw's own code
    uses (`openclaw config file`; where its SessionManager writes the agent database), for
    OPENCLAW_HOME, OPENCLAW_STATE_DIR, OPENCLAW_CONFIG_PATH and the legacy names."""
    from compaction_guard.agents.openclaw import layout
    where = require()
    legacy = tmp_path / "legacy"
    (legacy / ".clawdbot").mkdir(parents=True)
    (legacy / ".clawdbot" / "clawdbot.json").write_text("{}")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    cases = [
        {"OPENCLAW_HOME": str(legacy)},
        {"OPENCLAW_HOME": str(fresh)},
        {"OPENCLAW_HOME": str(fresh), "OPENCLAW_STATE_DIR": str(tmp_path / "st")},
        {"OPENCLAW_HOME": str(legacy), "OPENCLAW_CONFIG_PATH": "~/elsewhere.json5"},
        {"OPENCLAW_HOME": str(fresh), "OPENCLAW_STATE_DIR": "~/named-state"},
    ]
    for extra in cases:
        env = env_for(fresh, where, **extra)
        p = subprocess.run([*openclaw_bin(where), "config", "file"], capture_output=True, text=True, env=env,
                           timeout=120)
        theirs = p.stdout.strip().splitlines()[-1]
        mine = layout.resolve(env)
        assert str(mine.config_path) == theirs, (extra, theirs, mine.config_path)
        if "OPENCLAW_STATE_DIR" not in extra:      # where OpenClaw's SessionManager writes is that state dir
            write_stores(Path(extra["OPENCLAW_HOME"]), [{"op": "session", "key": "agent:main:where", "session": S6,
                                                         "entries": [{"ref": "q", "user": "where is this kept?"}]}])
            assert (mine.state_dir / "agents" / "main" / "agent" / "openclaw-agent.sqlite").is_file(), extra


def openclaw_bin(where):
    from openclaw_real import node, package
    return [str(node(where)), str(package(where) / "openclaw.mjs")]


def test_the_compaction_model_is_read_as_openclaw_names_it(tmp_path, monkeypatch):
    """A config OpenClaw validates (`openclaw config validate`): the compaction model a bare
    alias of agents.defaults.models, its key a SecretRef, its model entry with an api and
    baseUrl of its own. The guard calls that model, at that URL, with that key."""
    from compaction_guard import providers
    from compaction_guard.agents.openclaw import layout
    where = require()
    state = tmp_path / "home" / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text("""{
  // JSON5, as OpenClaw writes it
  agents: { defaults: {
    model: { primary: "proxy/sum-1" },
    models: { "proxy/sum-1": { alias: "summarizer" } },
    compaction: { mode: "safeguard", model: "summarizer" },
  } },
  models: { providers: { proxy: {
    baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions",
    apiKey: { source: "env", provider: "default", id: "PROXY_KEY" },
    models: [ { id: "sum-1", name: "Sum", api: "anthropic-messages", baseUrl: "https://llm.example.internal/v1",
                reasoning: false, input: ["text"], cost: {input: 0, output: 0, cacheRead: 0, cacheWrite: 0},
                contextWindow: 8000, maxTokens: 1000 } ],
  } } },
}""")
    p = openclaw(where, tmp_path / "home", "config", "validate", "--json")
    assert json.loads(p.stdout.strip().splitlines()[-1])["valid"] is True, p.stdout + p.stderr
    monkeypatch.setenv("PROXY_KEY", "pk-from-secretref")
    choice = providers.resolve({}, layout.at(state))
    assert (choice.provider, choice.model, choice.base_url, choice.api_key_env) == \
        ("anthropic", "sum-1", "https://llm.example.internal", "PROXY_KEY")
    assert choice.api_key() == "pk-from-secretref" and "alias of proxy/sum-1" in choice.note
    monkeypatch.delenv("PROXY_KEY")
    choice = providers.resolve({}, layout.at(state))
    assert choice.provider == "extractive" and "PROXY_KEY is not set" in choice.note


def test_openclaw_reads_the_skills_requirements(tmp_path):
    """SKILL.md's metadata.openclaw, as OpenClaw itself parses it (`openclaw skills info`)."""
    where = require()
    d = tmp_path / "home" / ".openclaw" / "skills" / "compaction-resilience-guard"
    d.mkdir(parents=True)
    shutil.copyfile(ROOT / "SKILL.md", d / "SKILL.md")
    p = openclaw(where, tmp_path / "home", "skills", "info", "compaction-resilience-guard", "--json")
    info = json.loads(p.stdout[p.stdout.index("{"):])
    assert info["name"] == "compaction-resilience-guard" and info["eligible"] is True, info
    assert info["requirements"]["bins"] == ["python3"] and not any(info["missing"].values())


def test_an_agent_directory_the_config_moves_is_found(tmp_path):
    """`agents.entries.<id>.agentDir` (a `~` in it is the effective home, OPENCLAW_HOME): the
    agent's database is looked for there (here the one the live gateway wrote)."""
    from compaction_guard import operations
    from compaction_guard.agents.openclaw import layout
    home = tmp_path / "user"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text('{ agents: { entries: { main: {}, ops: { agentDir: "~/ops-agent" } } } }')
    (home / "ops-agent").mkdir()
    shutil.copyfile(ROOT / "tests" / "data" / "openclaw-live" / "openclaw-agent.sqlite",
                    home / "ops-agent" / "openclaw-agent.sqlite")
    lay = layout.resolve({"OPENCLAW_HOME": str(home)})
    ops = next(a for a in lay.agents if a.id == "ops")
    assert ops.configured and ops.database == (home / "ops-agent" / "openclaw-agent.sqlite").resolve()
    rep = operations.check(lay, save=False)
    assert [s["path"] for s in rep.sources] == [str(ops.database)] and rep.checked == 2
