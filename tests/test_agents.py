"""One guard for every agent on the machine: each agent is a package of its own, listed once in
the registry, and a plain --check finds every agent's stores under one HOME."""
import ast
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo" / "openclaw-home"
CC_DATA = ROOT / "tests" / "data" / "claude-code"
CODEX_DATA = ROOT / "tests" / "recordings" / "codex" / "data"
GEMINI_DATA = ROOT / "tests" / "recordings" / "gemini" / "data"
OPENCODE_DATA = ROOT / "tests" / "recordings" / "opencode" / "data"
PKG = ROOT / "compaction_guard"


def machine(tmp_path, openclaw=True, claude=True, codex=True, gemini=True, opencode=True) -> Path:
    """A user's home holding what OpenClaw (the demo's DAG state: good and broken summaries),
    Claude Code (two real transcripts: a good compaction and a loop), Codex (two real rollouts)
    and Gemini CLI (two real chat sessions), each a good compaction and a loop, and opencode (its
    database with a loop stored as the summary) wrote."""
    home = tmp_path / "user"
    home.mkdir()
    if openclaw:
        shutil.copytree(DEMO, home / ".openclaw")
    if claude:
        proj = home / ".claude" / "projects" / "-work"
        proj.mkdir(parents=True)
        for case in ("good", "loop"):
            shutil.copy(CC_DATA / f"{case}.jsonl", proj / f"{case}.jsonl")
    if codex:
        day = home / ".codex" / "sessions" / "2026" / "12" / "05"
        day.mkdir(parents=True)
        for case in ("good-auto", "loop-auto"):
            thread = json.loads((CODEX_DATA / f"{case}.jsonl").open().readline())["payload"]["id"]
            shutil.copy(CODEX_DATA / f"{case}.jsonl", day / f"rollout-2026-12-05T14-25-58-{thread}.jsonl")
    if gemini:
        chats = home / ".gemini" / "tmp" / "work" / "chats"
        chats.mkdir(parents=True)
        for case in ("good-long", "loop"):
            shutil.copy(GEMINI_DATA / f"session-{case}.jsonl", chats / f"session-2026-12-05T15-04-{case}.jsonl")
    if opencode:
        shutil.copytree(OPENCODE_DATA / "loop", home / ".local" / "share" / "opencode")
    return home


def guard(home: Path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "CLAUDE_", "CODEX_", "GEMINI_", "OPENCODE_", "XDG_", "GUARD_"))}
    env["HOME"] = str(home)
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_plain_check_checks_every_agent_on_the_machine(tmp_path):
    home = machine(tmp_path)
    p = guard(home, "--check")
    assert p.returncode == 1, p.stderr            # failures found in both agents' stores
    first = [ln for ln in p.stdout.splitlines() if ln.startswith("Checking ")]
    assert len(first) == 5
    assert "OpenClaw state directory" in first[0] and "memory-dag-compactor" in first[0]
    assert "Claude Code configuration directory" in first[1] and "claude-code" in first[1]
    assert f"Codex home {home / '.codex'}" in first[2] and "codex" in first[2]
    assert f"Gemini CLI directory {home / '.gemini'}" in first[3] and "gemini: DEGRADED" in p.stdout
    assert f"opencode data directory {home / '.local' / 'share' / 'opencode'}" in first[4] and "opencode: DEGRADED" in p.stdout
    assert "openclaw: DEGRADED" in p.stdout and "claude-code: DEGRADED" in p.stdout and "codex: DEGRADED" in p.stdout
    doc = json.loads(guard(home, "--check", "--all", "--format", "json").stdout)
    assert [a["agent"] for a in doc["agents"]] == ["openclaw", "claude-code", "codex", "gemini", "opencode",
                                                   "frameworks"]
    assert all(a["summaries_checked"] > 0 and a["failures_found"] > 0 for a in doc["agents"][:5])
    assert doc["agents"][5]["status"] == "ABSENT"     # no framework integration has compacted here
    assert "frameworks: not on this machine" in p.stdout
    assert doc["summaries_checked"] == sum(a["summaries_checked"] for a in doc["agents"])
    sources = {r["source"] for r in doc["results"]}
    assert {"memory-dag-compactor", "claude-code", "codex", "gemini", "opencode"} <= sources
    # each agent's verdicts are kept in its own state
    assert (home / ".openclaw" / "skill-state" / "compaction-resilience-guard" / "state.yaml").is_file()
    assert (home / ".claude" / "compaction-guard" / "state.yaml").is_file()
    assert (home / ".codex" / "compaction-guard" / "state.yaml").is_file()
    assert (home / ".gemini" / "compaction-guard" / "state.yaml").is_file()
    assert (home / ".local" / "share" / "opencode" / "compaction-guard" / "state.yaml").is_file()


def test_agent_narrows_to_one_and_home_alone_names_openclaws_directory(tmp_path):
    home = machine(tmp_path)
    doc = json.loads(guard(home, "--agent", "claude-code", "--check", "--format", "json").stdout)
    assert [a["agent"] for a in doc["agents"]] == ["claude-code"]
    assert {r["source"] for r in doc["results"]} == {"claude-code"}
    doc = json.loads(guard(home, "--home", home / ".openclaw", "--check", "--format", "json").stdout)
    assert [a["agent"] for a in doc["agents"]] == ["openclaw"]
    assert doc["layout"].startswith(f"OpenClaw state directory {home / '.openclaw'}")


def test_an_absent_agent_is_a_line_and_one_agent_alone_is_checked(tmp_path):
    home = machine(tmp_path, openclaw=False)
    p = guard(home, "--check")
    assert p.returncode == 1, p.stderr
    assert "openclaw: not on this machine" in p.stdout and "claude-code: DEGRADED" in p.stdout
    assert not (home / ".openclaw").exists()       # nothing is created for an agent that is not there


def test_one_agents_unreadable_store_is_a_line_and_the_others_are_still_checked(tmp_path):
    home = machine(tmp_path)
    bad = home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)     # a damaged database
    p = guard(home, "--check", "--format", "json")
    assert p.returncode == 2
    doc = json.loads(p.stdout)
    assert any(str(bad) in e for e in doc["errors"])
    assert any(str(bad) in ln for ln in p.stderr.splitlines())
    cc = next(a for a in doc["agents"] if a["agent"] == "claude-code")
    assert cc["summaries_checked"] > 0 and not cc["errors"]


def test_no_store_only_when_no_agent_has_anything_to_check(tmp_path):
    home = tmp_path / "empty"
    home.mkdir()
    p = guard(home, "--check")
    assert p.returncode == 2 and "Status: NO_STORE" in p.stdout
    (line,) = [x for x in p.stderr.splitlines() if x.strip()]
    assert "OpenClaw" in line and "Claude Code" in line and str(home / ".claude") in line
    # an agent that is there with nothing to check is named in a note while another is checked
    home = machine(tmp_path, claude=False)
    (home / ".claude").mkdir()
    p = guard(home, "--check")
    assert p.returncode == 1 and "note: Claude Code: no compaction store found" in p.stdout


def test_status_and_report_cover_every_agent_with_a_state(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families
    home = machine(tmp_path)
    guard(home, "--check")
    st = json.loads(guard(home, "--status", "--format", "json").stdout)
    agents = ["openclaw", "claude-code", "codex", "gemini", "opencode"]
    assert st["status"] == "DEGRADED" and [d["agent"] for d in st["agents"]] == agents
    text = guard(home, "--status").stdout
    assert text.count("Compaction Resilience Guard — DEGRADED") == 5
    rep = json.loads(guard(home, "--report", "--format", "json").stdout)
    assert [r["agent"] for r in rep["agents"]] == agents
    prom = guard(home, "--report", "--format", "prometheus").stdout
    fams = {f.name: f for f in text_string_to_metric_families(prom)}
    agents = {s.labels["agent"] for s in fams["compaction_guard_healthy"].samples}
    assert agents == {"openclaw", "claude-code", "codex", "gemini", "opencode"}
    html = tmp_path / "r.html"
    assert guard(home, "--report", "--html", html).returncode == 0
    page = html.read_text(encoding="utf-8")
    assert page.count("<body>") == 1 and page.count("</body>") == 1
    # narrowed, the documents are one agent's, as before
    one = json.loads(guard(home, "--agent", "claude-code", "--status", "--format", "json").stdout)
    assert one["agent"] == "claude-code" and "agents" not in one


# the keys of one agent's report and status (the seed's documents): a script written against
# them reads the same keys, over every agent, the day a second agent is installed
SEED_REPORT = ("since", "last_check_at", "level_usage", "level_share", "total_compactions", "stored_summaries",
               "stored_total", "fallback_share", "l3_warning", "failures_by_kind", "failures_by_source",
               "failures_total", "recent_failures", "daily", "checks", "chain_runs", "totals", "last_check",
               "circuit_breaker")
SEED_STATUS = ("last_check_at", "status", "summaries_checked", "failures_found", "failures_by_kind", "level_usage",
               "l3_share", "stored_summaries", "fallback_share", "circuit_open_until")


def test_with_two_agents_the_seeds_keys_stay_at_the_top_over_both(tmp_path):
    home = machine(tmp_path, openclaw=False, gemini=False, opencode=False)      # Claude Code and Codex
    guard(home, "--check")
    one = {a: json.loads(guard(home, "--agent", a, "--report", "--format", "json").stdout)
           for a in ("claude-code", "codex")}
    rep = json.loads(guard(home, "--report", "--format", "json").stdout)
    assert set(SEED_REPORT) <= set(one["codex"]) and set(SEED_REPORT) <= set(rep)
    assert [r["agent"] for r in rep["agents"]] == ["claude-code", "codex"]
    for key in ("stored_total", "failures_total", "checks", "total_compactions"):
        assert rep[key] == sum(one[a][key] for a in one), key
    for kind, n in rep["failures_by_kind"].items():
        assert n == sum(one[a]["failures_by_kind"].get(kind, 0) for a in one)
    assert rep["stored_summaries"] == {k: sum(one[a]["stored_summaries"][k] for a in one)
                                       for k in one["codex"]["stored_summaries"]}
    assert rep["fallback_share"] == round(rep["stored_summaries"]["by_fallback"] / rep["stored_total"], 4)
    ones = {a: json.loads(guard(home, "--agent", a, "--status", "--format", "json").stdout) for a in one}
    st = json.loads(guard(home, "--status", "--format", "json").stdout)
    assert set(SEED_STATUS) <= set(ones["codex"]) and set(SEED_STATUS) <= set(st)
    assert st["summaries_checked"] == sum(ones[a]["summaries_checked"] for a in ones)
    assert st["failures_found"] == sum(ones[a]["failures_found"] for a in ones)
    assert st["status"] == "DEGRADED" and [d["agent"] for d in st["agents"]] == ["claude-code", "codex"]
    # the text and HTML reports say which agent each block is
    text = guard(home, "--report").stdout
    assert "Compaction Resilience Report for Claude Code" in text and "Compaction Resilience Report for Codex" in text
    html = tmp_path / "r.html"
    assert guard(home, "--report", "--html", html).returncode == 0
    page = html.read_text(encoding="utf-8")
    assert "Report for Claude Code</h1>" in page and "Report for Codex</h1>" in page


def test_check_file_is_recorded_in_the_state_of_the_agent_whose_store_it_is(tmp_path):
    home = tmp_path / "user"
    home.mkdir()
    (home / ".claude").mkdir()
    p = guard(home, "--check", "--file", CC_DATA / "loop.jsonl")
    assert p.returncode == 1, p.stderr
    assert (home / ".claude" / "compaction-guard" / "state.yaml").is_file()
    assert not (home / ".openclaw").exists()


def test_install_and_hook_name_the_agent(tmp_path):
    home = machine(tmp_path)
    p = guard(home, "install", "nobody")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "openclaw, claude-code, codex, gemini" in p.stderr
    p = guard(home, "install")
    assert p.returncode == 2 and "install NAME" in p.stderr
    p = guard(home, "install", "claude-code", "--format", "json")
    assert p.returncode == 0 and json.loads(p.stdout)["added"]
    p = guard(home, "uninstall", "claude-code")
    assert p.returncode == 0 and "removed from" in p.stdout
    # OpenClaw's hook, by its own name and by the older `hook install`
    for argv in (("install", "openclaw"), ("hook", "install")):
        p = guard(home, *argv, "--openclaw", "/bin/true")
        assert p.returncode == 0 and "hook written:" in p.stdout, p.stderr
    assert (home / ".openclaw" / "hooks" / "compaction-resilience-guard" / "handler.js").is_file()
    p = guard(home, "uninstall", "openclaw", "--openclaw", "/bin/true")
    assert p.returncode == 0 and "hook removed" in p.stdout
    p = guard(home, "hook", "openclaw")
    assert p.returncode == 2 and "install openclaw" in p.stderr


def _imports(path: Path) -> set:
    """The modules a file imports, made absolute."""
    pkg = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name == "__init__.py":
        pkg += ".__init__"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = pkg.split(".")[:-node.level] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_an_agent_package_knows_no_other_agent_and_detectors_know_no_agent():
    from compaction_guard import agents
    names = [module.rsplit(".", 1)[1] for _, module in agents.REGISTRY]
    for name in names:
        for f in (PKG / "agents" / name).rglob("*.py"):
            others = {i for i in _imports(f) for o in names if o != name
                      and i.startswith(f"compaction_guard.agents.{o}")}
            assert not others, f"{f} imports another agent: {others}"
    for f in (PKG / "detectors").rglob("*.py"):
        assert not any(i.startswith("compaction_guard.agents") for i in _imports(f)), f
    for f in PKG.rglob("*.py"):         # outside the agents, only the registry and the interface
        if "agents" not in f.relative_to(PKG).parts:
            assert not any(i.startswith(f"compaction_guard.agents.{n}") for i in _imports(f) for n in names), f
    # every registered agent implements the interface and is found by name
    for name in agents.NAMES:
        a = agents.get(name)
        assert a.name == name and a.title and isinstance(a, agents.base.Agent)


def test_the_registry_is_the_only_list_of_agents():
    """Outside the agents' packages no module names an agent to choose what to do."""
    for f in PKG.rglob("*.py"):
        if "agents" in f.relative_to(PKG).parts:
            continue
        src = f.read_text(encoding="utf-8")
        assert '== "claude-code"' not in src and "== 'claude-code'" not in src, f
        assert '== "openclaw"' not in src, f


def test_a_damaged_database_named_with_file_is_one_line(tmp_path):
    db = tmp_path / "x.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t(a)")
    con.close()
    p = guard(tmp_path, "--check", "--file", db)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "unknown schema" in p.stderr
