"""Behind the real opencode: the pinned 1.18.33 (tests/recordings/opencode/setup_opencode.sh),
headless, inside a network namespace with only loopback, against the scripted OpenAI-compatible
server on 127.0.0.1; the guard's plugin installed by its own command; a real automatic compaction
and a manual one (`opencode serve`, `POST /session/:id/summarize`); what opencode's next requests
carried; and a run with `compaction-guard serve` as opencode's compaction model, its upstream
answering a loop (tests/opencode_live_run.py runs each case)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recordings" / "opencode"))

from opencode_real import binary  # noqa: E402
from livekit import require, run as live_run  # noqa: E402

GUARD_LINE = "compaction-resilience-guard: the last compaction of this session failed its check"
NOTE = "compaction-resilience-guard: the summary of this conversation failed its check"


def _live(case: str, tmp_path: Path, mode: str) -> tuple:
    require(binary() is not None, "opencode", "tests/recordings/opencode/setup_opencode.sh", "GUARD_REQUIRE_OPENCODE")
    out = tmp_path / f"{case}-{mode}"
    run = live_run("opencode_live_run.py", case, out, mode)
    assert [t["rc"] for t in run["turns"]] == [0, 0, 0, 0], run["turns"]
    assert not run["hook_log"], run["hook_log"]
    home = out / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCODE_", "XDG_", "GUARD_"))}
    env.update(HOME=str(home))
    return run, home, env


def guard(env, *args):
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("mode", ["plugin", "manual"])
def test_an_empty_summary_opencode_stored_fails_and_the_model_is_told(tmp_path, mode):
    run, home, env = _live("empty", tmp_path, mode)
    assert run["install"]["rc"] == 0 and run["kinds"].count("compaction") == 1, run["kinds"]
    (summary,) = run["stored"]
    assert summary["text"] == "" and summary["finish"] == "stop"      # opencode stored it and went on
    extra = [a["system"][1:] for a in run["after"]]
    assert len(extra) >= 2 and all(len(x) == 1 for x in extra), extra
    first, *later = [x[0] for x in extra]
    # the next model call: the whole warning as a system message of its own, once
    assert first.startswith(GUARD_LINE) and "(empty)" in first and "OPS-4411" in first and "opencode export" in first
    # every later one (another `opencode run` process): the one-line note
    assert all(x.startswith(NOTE) for x in later), later
    st = json.loads(guard(env, "--agent", "opencode", "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["failed_since_check"][0]["failures"] == ["empty"]
    p = guard(env, "--check", "--format", "json")                 # a plain check finds opencode
    assert p.returncode == 1, p.stderr
    (res,) = json.loads(p.stdout)["results"]
    assert res["failures"] == ["empty"] and res["source"] == "opencode" and res["id"] == summary["id"]
    assert json.loads(guard(env, "--agent", "opencode", "--check", "--format", "json").stdout)["summaries_checked"] == 0


def test_a_good_summary_passes_and_nothing_is_added(tmp_path):
    run, home, env = _live("good", tmp_path, "plugin")
    assert run["after"] and all(len(a["system"]) == 1 for a in run["after"])
    p = guard(env, "--agent", "opencode", "--check", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["summaries_checked"] == 1 and doc["status"] == "HEALTHY", p.stdout[-1500:]


def test_serve_as_opencodes_compaction_model_replaces_a_loop_before_opencode_stores_it(tmp_path):
    """The scripted upstream answers every compaction request with a loop: serve escalates to L3,
    which answers in the Markdown structure opencode's template asks for; opencode stores that."""
    run, home, env = _live("loop", tmp_path, "serve")
    assert run["kinds"].count("compaction") >= 2           # L1 and L2 went upstream, both looped
    (summary,) = run["stored"]
    text = summary["text"]
    assert "The user asked about the deploy ticket and I said I would check it. " * 3 not in text
    heads = [ln for ln in text.splitlines() if ln.startswith("## ")]
    assert heads == ["## Objective", "## Important Details", "## Work State", "## Next Move", "## Relevant Files"]
    assert "OPS-4411" in text and "src/deploy/retry.ts" in text and "compaction-resilience-guard L3" in text
    rep = json.loads(guard(env, "--agent", "opencode", "--report", "--format", "json").stdout)
    assert rep["level_usage"]["l3_deterministic"] == 1
    doc = json.loads(guard(env, "--agent", "opencode", "--check", "--format", "json").stdout)
    (res,) = doc["results"]
    # the guard's own answer (serve recorded a key of it): level usage, a fallback's share, not a failure
    assert res["failures"] == [] and res["guard_l3"] is True and doc["status"] == "HEALTHY", doc
    rep = json.loads(guard(env, "--agent", "opencode", "--report", "--format", "json").stdout)
    # the failures recorded are the upstream's answers serve redid, none of what opencode stored
    assert rep["stored_summaries"]["by_fallback"] == 1 and set(rep["failures_by_source"]) == {"serve"}, rep


def test_installed_offline_opencode_starts_without_waiting_for_npm(tmp_path):
    """Offline, opencode with any plugin waits ~70 s at each start for its npm install of
    @opencode-ai/plugin (80 s measured here); `install opencode --offline` marks it installed, so the
    first turn takes seconds and the guard's plugin still checks the compaction."""
    run, home, env = _live("good", tmp_path, "offline")
    assert run["install"]["rc"] == 0 and json.loads(run["install"]["stdout"])["sdk"] == "marked", run["install"]
    assert run["turns"][0]["seconds"] < 40, run["turns"]
    assert run["kinds"].count("compaction") == 1 and len(run["stored"]) == 1
    # the plugin ran: opencode's hook recorded the compaction's verdict
    state = json.loads((home / ".local/share/opencode/compaction-guard/state.yaml").read_text())
    assert [v["failures"] for v in state["sessions"].values()] == [[]], state["sessions"]
    p = guard(env, "uninstall", "opencode")
    assert p.returncode == 0 and "the --offline mark" in p.stdout
    assert not (home / ".config/opencode/package-lock.json").exists()
