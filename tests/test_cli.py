"""guard.py as a user runs it: exit codes, one JSON document, one-line errors."""
import json

import pytest

from conftest import run_guard


def test_check_without_store_says_so_and_is_not_healthy(home):
    """A check that found nothing to check is not healthy: status NO_STORE, exit 2, one line
    on stderr saying where it looked and which variable to set; JSON, --status and the
    Prometheus metrics say it too."""
    p = run_guard("--check", home=home)
    assert p.returncode == 2, p.stderr
    assert "Status: NO_STORE" in p.stdout and "HEALTHY" not in p.stdout
    (line,) = [x for x in p.stderr.splitlines() if x.strip()]
    assert "no compaction store found" in line and str(home) in line and "OPENCLAW_STATE_DIR" in line
    doc = json.loads(run_guard("--check", "--format", "json", home=home).stdout)
    assert doc["status"] == "NO_STORE" and doc["nothing_found"]
    assert "NO_STORE" in run_guard("--status", home=home).stdout
    prom = run_guard("--report", "--format", "prometheus", home=home).stdout
    assert 'compaction_guard_healthy{agent="openclaw"} 0' in prom


def test_check_demo_text_and_json(demo_home):
    p = run_guard("--check", home=demo_home)
    assert p.returncode == 1
    assert "Status: DEGRADED" in p.stdout and "s-d0-003" in p.stdout and "repetition:" in p.stdout
    again = json.loads(run_guard("--check", "--format", "json", home=demo_home).stdout)
    assert again["summaries_checked"] == 0          # incremental: nothing new since the last check
    p = run_guard("--check", "--all", "--format", "json", home=demo_home)
    assert p.returncode == 1
    doc = json.loads(p.stdout)   # one JSON document and nothing else on stdout
    assert set(doc) >= {"checked_at", "summaries_checked", "failures_found", "escalations", "status", "results"}
    assert doc["summaries_checked"] == 10 and doc["failures_found"] == 7 and doc["status"] == "DEGRADED"
    r = doc["results"][3]
    assert set(r) == {"id", "source", "valid", "failures", "warnings", "reasons", "output_tokens", "input_tokens", "entropy",
                      "fidelity"}
    assert r["id"] == "s-d0-003" and r["source"] == "memory-dag-compactor" and r["input_tokens"] > 0
    assert r["fidelity"] is None                     # a loop: nothing to measure against its input
    good = doc["results"][0]["fidelity"]             # a good leaf against its MEMORY.md entries
    assert set(good) == {"word_overlap", "same_language", "grounding", "content_words", "key_identifiers",
                         "identifier_retention"}
    assert good["same_language"] is True and 0.5 < good["grounding"] <= 1.0 and good["word_overlap"] > 0.5
    assert [x["id"] for x in doc["results"]][:3] == ["s-d0-000", "s-d0-001", "s-d0-002"]   # input order
    # warnings by kind: each summary once per kind, as its results say
    from collections import Counter
    want = Counter(k for x in doc["results"] for k in {w.split(":", 1)[0] for w in x["warnings"]})
    assert doc["warnings_by_kind"] == dict(want) and sum(want.values()) >= 1


def test_check_file_text_with_input(tmp_path, home):
    summary = tmp_path / "summary.md"
    summary.write_text("用户要求发送每周报告，我已经把报告发到了团队频道，并附上了本周的主要指标和下周的计划。")
    src = tmp_path / "input.txt"
    src.write_text("The user asked for the weekly report; I sent it.")
    p = run_guard("--check", "--file", summary, "--input", src, "--format", "json", home=home)
    assert p.returncode == 1
    assert json.loads(p.stdout)["results"][0]["failures"] == ["inflation"]
    p = run_guard("--check", "--file", summary, "--input-tokens", "500", home=home)
    assert p.returncode == 0 and "HEALTHY" in p.stdout


def test_simulate_stdin_json(home):
    text = "\n".join(f"user: check host web-{i:02d}\nassistant: web-{i:02d} latency {100 + i} ms" for i in range(50))
    p = run_guard("--simulate", "-", "--format", "json", home=home, stdin=text)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert set(doc) >= {"level_used", "input_tokens", "output_tokens", "result", "attempts"}
    assert doc["level_used"] in (1, 2, 3) and doc["output_tokens"] < doc["input_tokens"]
    assert set(doc["attempts"][0]) >= {"level", "strategy", "valid", "failures", "output_tokens", "seconds"}


def test_report_and_status_after_runs(demo_home):
    run_guard("--check", home=demo_home)
    run_guard("--simulate", "a short note that is long enough to summarize, with host web-01", home=demo_home)
    p = run_guard("--report", home=demo_home)
    assert p.returncode == 0 and "L3 deterministic" in p.stdout and "Recent failures" in p.stdout
    rep = json.loads(run_guard("--report", "--format", "json", home=demo_home).stdout)
    # 10 stored summaries (one written by a fallback), reported apart from the 1 chain run (at L1)
    assert rep["stored_summaries"] == {"by_model": 9, "by_fallback": 1} and rep["stored_total"] == 10
    assert rep["total_compactions"] == 1 and rep["level_usage"] == {"l1_normal": 1, "l2_aggressive": 0,
                                                                    "l3_deterministic": 0}
    assert rep["failures_by_kind"]["inflation"] == 2
    st = json.loads(run_guard("--status", "--format", "json", home=demo_home).stdout)
    assert st["status"] == "DEGRADED" and st["summaries_checked"] == 10
    p = run_guard("--status", home=demo_home)
    assert p.returncode == 0 and "DEGRADED" in p.stdout.splitlines()[0]


@pytest.mark.parametrize("args,needle", [
    (["--check", "--file", "/nonexistent/summaries.yaml"], "no such file"),
    (["--check", "--file", "{tmp}"], "is a directory"),
    (["--check", "--file", "{tmp}/bad.json"], "not valid JSON"),
    (["--check", "--file", "{tmp}/fake.db"], "not one"),
    (["--file", "x.yaml"], "go with --check"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, home, args, needle):
    (tmp_path / "bad.json").write_text("[{")
    (tmp_path / "fake.db").write_text("hello")
    p = run_guard(*[a.replace("{tmp}", str(tmp_path)) for a in args], home=home)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr


def test_corrupt_state_warns_on_stderr_keeps_json_clean(demo_home):
    sp = demo_home / "skill-state" / "compaction-resilience-guard"
    sp.mkdir(parents=True)
    (sp / "state.yaml").write_text("{{{ not yaml")
    p = run_guard("--status", "--format", "json", home=demo_home)
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "NEVER_CHECKED"
    assert "corrupt" in p.stderr


def test_installed_entry_point_has_the_same_flags(demo_home):
    """`pip install .` puts compaction-guard next to this interpreter (scripts/setup.sh does it)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    exe = Path(sys.executable).parent / "compaction-guard"
    if not exe.exists():
        pytest.skip("compaction-guard is not installed in this environment (run scripts/setup.sh)")
    p = subprocess.run([str(exe), "--check", "--format", "json"], capture_output=True, text=True,
                       env=dict(os.environ, OPENCLAW_STATE_DIR=str(demo_home)), timeout=60)
    assert p.returncode == 1 and json.loads(p.stdout)["summaries_checked"] == 10


def test_json_output_with_a_lone_surrogate_id(home, tmp_path):
    """Valid JSON can hold a lone surrogate ("\\ud800"); the JSON output escapes it instead of crashing."""
    f = tmp_path / "s.json"
    f.write_text('[{"id": "\\ud800", "content": "The user migrated the sessions to SQLite and added an index."}]')
    p = run_guard("--check", "--file", str(f), "--format", "json", home=home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["results"][0]["id"] == "\ud800"


def test_json_stays_whole_when_the_check_breaks_part_way(home, tmp_path, monkeypatch, capsys):
    """An internal error after results were streamed closes the document with an error entry;
    --debug adds the traceback on stderr, without it there is none."""
    from compaction_guard import cli, operations
    real = operations.check

    def breaks(*args, on_result=None, **kw):
        def one_then_fail(result):
            on_result(result)
            raise RuntimeError("disk went away")
        return real(*args, on_result=one_then_fail, **kw)

    monkeypatch.setattr(operations, "check", breaks)
    f = tmp_path / "s.json"
    f.write_text(json.dumps([{"id": f"s{i}", "content": f"The user asked for report {i}; it was sent."} for i in range(3)]))
    args = ["--check", "--file", str(f), "--format", "json", "--home", str(home)]
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert len(doc["results"]) == 1 and doc["status"] == "ERROR" and "disk went away" in doc["errors"][0]
    assert "internal error (RuntimeError: disk went away)" in err and "Traceback" not in err
    assert cli.main(args + ["--debug"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["status"] == "ERROR" and "Traceback (most recent call last)" in err


def test_help_lists_every_command_and_every_flag_on_one_line():
    from compaction_guard.cli import build_parser
    p = run_guard("--help")
    assert p.returncode == 0 and not p.stderr
    lines = p.stdout.splitlines()
    for command in ("install NAME", "uninstall NAME", "hook NAME", "hook install|remove", "serve"):
        (line,) = [ln for ln in lines if ln.startswith(f"  {command} ")]
        assert len(line.split(None, len(command.split()))[-1]) > 20, line       # and what it does, on that line
    for action in build_parser()._actions:
        flag = action.option_strings[-1] if action.option_strings else None
        if flag and action.help:
            (line,) = [ln for ln in lines if ln.lstrip().startswith((action.option_strings[0] + " ",
                                                                     action.option_strings[0] + ","))]
            assert action.help.split()[0] in line and flag in line, line


@pytest.mark.parametrize("argv, shows", [
    (["install", "--help"], ["claude-code", "opencode", "--offline", "--project", "--home"]),
    (["uninstall", "--help"], ["codex", "gemini", "--home"]),
    (["install", "codex", "--help"], ["--home", "--format"]),
    (["serve", "--help"], ["--port", "--host", "--provider", "--base-url", "--observe", "--agent"]),
    (["hook", "--help"], ["hook NAME", "stdin", "claude-code"]),
    (["hook", "codex", "--help"], ["hook NAME"]),
])
def test_each_command_has_its_help(argv, shows):
    p = run_guard(*argv)
    assert p.returncode == 0 and not p.stderr, p.stderr
    assert all(s in p.stdout for s in shows), p.stdout


def _one_line(p) -> str:
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout, p.stderr
    (line,) = p.stderr.splitlines()
    return line


def test_serve_with_a_port_out_of_range_or_taken_is_one_line_and_says_nothing_before(tmp_path):
    import socket
    up = ["--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    assert "99999 is not a port" in _one_line(run_guard("serve", *up, "--port", "99999", home=tmp_path))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        p = run_guard("serve", *up, "--port", str(port), home=tmp_path)
    line = _one_line(p)
    assert f"127.0.0.1:{port} is already in use" in line and "on http://" not in p.stderr and not p.stdout
    assert "install takes the agent" in _one_line(run_guard("install"))


def test_no_store_anywhere_is_said_once_and_short(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENCLAW_STATE_DIR", raising=False)
    import os
    import subprocess
    import sys
    from conftest import ROOT
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "CLAUDE", "CODEX", "GEMINI", "XDG_"))}
    env["HOME"] = str(tmp_path)
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), "--check"], env=env, capture_output=True, text=True,
                       timeout=120)
    line = _one_line(p)
    assert line.startswith(f"compaction-guard: no compaction store of any agent found: looked for OpenClaw in "
                           f"{tmp_path / '.openclaw'}, Claude Code in {tmp_path / '.claude'}, ")
    assert "OPENCLAW_STATE_DIR" in line and "CODEX_HOME" in line
    assert len(line.replace(str(tmp_path), "~")) < 500 and "looked for" not in p.stdout and "Status: NO_STORE" in p.stdout
