"""Behind the real Codex CLI (issue #46): the pinned binary (tests/recordings/codex/setup_codex.sh),
headless, inside a network namespace with only loopback, against the scripted Responses server on
127.0.0.1; the guard's hooks installed by its own command; real automatic compactions (after a
turn at 80% of the window, and before a turn over the window), a manual one (`codex app-server`,
`thread/compact/start`, the hooks trusted as Codex keeps trust); what Codex's next request to the model carried; the guard's check
of the rollouts Codex wrote (tests/codex_live_run.py runs each case)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recordings" / "codex"))

from codex_real import binary  # noqa: E402
from livekit import require, run as live_run  # noqa: E402

GUARD_LINE = "compaction-resilience-guard: the last compaction of this session failed its check"


def _live(case: str, tmp_path: Path, mode: str = "auto") -> tuple:
    require(binary() is not None, "Codex", "tests/recordings/codex/setup_codex.sh", "GUARD_REQUIRE_CODEX")
    out = tmp_path / f"{case}-{mode}"
    run = live_run("codex_live_run.py", case, out, mode)
    assert run["install"]["rc"] == 0, run["install"]
    assert [t["rc"] for t in run["turns"]] == [0, 0, 0, 0], run["turns"]
    assert run["kinds"].count("compaction") == 1, run["kinds"]
    home = out / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "GUARD_"))}
    env.update(HOME=str(home), CODEX_HOME=str(home / ".codex"))
    return run, home, env


def guard(env, *args):
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_preamble_codex_stored_fails_and_its_next_request_carries_the_warning(tmp_path):
    run, home, env = _live("preamble", tmp_path)
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())
    assert {"PreCompact", "PostCompact", "SessionStart", "UserPromptSubmit"} <= set(hooks["hooks"])
    # the turn after the compaction: the summary Codex kept, then the guard's warning, as a
    # developer message Codex put there from the hook's additionalContext, before the user's ask
    texts = [(x["role"], x["text"]) for x in run["after_input"]]
    summary_at = next(i for i, (_r, t) in enumerate(texts) if "Let me read the notes file first." in t)
    warned = [i for i, (r, t) in enumerate(texts) if GUARD_LINE in t]
    assert len(warned) == 1 and texts[warned[0]][0] == "developer" and warned[0] > summary_at, texts
    warning = texts[warned[0]][1]
    assert "(empty)" in warning and "OPS-4411" in warning and "MAX_RETRY_BACKOFF_MS" in warning
    st = json.loads(guard(env, "--agent", "codex", "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["failed_since_check"][0]["failures"] == ["empty"]
    p = guard(env, "--agent", "codex", "--check", "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    (res,) = doc["results"]
    assert res["failures"] == ["empty"] and res["source"] == "codex"
    assert "the history held" in res["reasons"]["empty"]        # the reason names what was dropped
    # counted once: a second check reads nothing new
    again = json.loads(guard(env, "--agent", "codex", "--check", "--format", "json").stdout)
    assert again["summaries_checked"] == 0


def test_a_good_summary_passes_and_nobody_is_warned(tmp_path):
    run, home, env = _live("good", tmp_path)
    assert not any(GUARD_LINE in x["text"] for x in run["after_input"])
    assert not list((home / ".codex" / "compaction-guard" / "pending").glob("*"))
    p = guard(env, "--agent", "codex", "--check", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["summaries_checked"] == 1 and doc["status"] == "HEALTHY", p.stdout[-1500:]
    (res,) = doc["results"]
    assert res["valid"] and "inflation" not in res.get("reasons", {})


def test_a_compaction_codex_dropped_is_a_failure_the_check_reports(tmp_path):
    """An empty compaction answer after a turn: Codex keeps the history, prints a WARN and exits 0;
    no summary is stored and PostCompact never runs. The guard's hook sees the PreCompact left
    alone and counts an `empty` failure; the next check reports the dropped compaction."""
    run, home, env = _live("empty", tmp_path)
    rollout = next((home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert '"compacted"' not in rollout.read_text().replace(": ", ":")
    st = json.loads(guard(env, "--agent", "codex", "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["failed_since_check"][0]["failures"] == ["empty"]
    p = guard(env, "--agent", "codex", "--check")
    assert p.returncode == 1 and "dropped compaction" in p.stdout and "Status: DEGRADED" in p.stdout, p.stdout
    assert "its compaction call answered 1 output token(s)" in p.stdout       # Codex's own count of the answer
    rep = json.loads(guard(env, "--agent", "codex", "--report", "--format", "json").stdout)
    assert rep["failures_total"] == 1 and rep["recent_failures"][0]["summary_id"].startswith("dropped@")


@pytest.mark.parametrize("mode", ["manual", "preturn"])
def test_a_preamble_from_a_manual_or_pre_turn_compaction_is_caught_and_told(tmp_path, mode):
    """A compaction asked for through `codex app-server` (its hooks trusted, no bypass flag), and
    one Codex runs before a turn (the warning reaches the model in the same process, through
    SessionStart with source `compact`)."""
    run, home, env = _live("preamble", tmp_path, mode)
    if mode == "manual":
        assert {"preCompact", "postCompact"} <= {h["eventName"] for h in run["manual"]["hook_runs"]}
    texts = [(x["role"], x["text"]) for x in run["after_input"]]
    summary_at = next(i for i, (_r, t) in enumerate(texts) if "Let me read the notes file first." in t)
    warned = [i for i, (r, t) in enumerate(texts) if GUARD_LINE in t]
    assert len(warned) == 1 and warned[0] > summary_at and texts[warned[0]][0] == "developer", texts
    p = guard(env, "--agent", "codex", "--check", "--format", "json")
    assert p.returncode == 1 and json.loads(p.stdout)["failures_by_kind"] == {"empty": 1}, p.stdout[-1500:]


def test_codex_asks_to_trust_the_guards_hooks_at_start_as_the_readme_says(tmp_path):
    """The README's step 2 for Codex, against the real TUI: after `install codex`, Codex 0.171 asks at
    its start ("Hooks need review"); "Trust all and continue" trusts the guard's four entries."""
    import shutil
    require(binary() is not None, "Codex", "tests/recordings/codex/setup_codex.sh", "GUARD_REQUIRE_CODEX")
    if shutil.which("tmux") is None:
        pytest.fail("tmux is needed to run Codex's TUI") if os.environ.get("GUARD_REQUIRE_CODEX") == "1" else \
            pytest.skip("tmux is needed to run Codex's TUI")
    run = live_run("codex_trust_run.py", "trust", tmp_path / "trust", "tui")
    assert run["install"]["rc"] == 0 and '"Trust all and continue"' in run["install"]["stdout"], run["install"]
    screen = run["start_screen"]
    assert "Hooks need review" in screen and "4 hooks are new or changed" in screen, screen
    assert "Trust all and continue" in screen, screen
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert '"Hooks need review"' in readme and '"Trust all and continue"' in readme
    assert "Hooks need review" not in run["after_screen"], run["after_screen"]
    trusted = [ln for ln in run["config"].splitlines() if ln.startswith('[hooks.state."')]
    events = sorted(t.split(":")[-3] for t in trusted)
    assert events == ["post_compact", "pre_compact", "session_start", "user_prompt_submit"], run["config"]
    assert run["config"].count("trusted_hash = \"sha256:") == 4
