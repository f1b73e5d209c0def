"""Behind the real Gemini CLI: the pinned 0.61.0 (tests/recordings/gemini/setup_gemini.sh),
headless, inside a network namespace with only loopback, against the scripted Gemini API on
127.0.0.1; the guard's hook installed by its own command beside the user's own hook; a real
automatic compression (1% of the window) and a manual one (`/compress`), then a later `--resume`;
what Gemini CLI's requests to the model carried; the guard's check of the session file Gemini CLI
wrote (tests/gemini_live_run.py runs each case)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recordings" / "gemini"))

from gemini_real import binary  # noqa: E402
from livekit import require, run as live_run  # noqa: E402

GUARD_LINE = "compaction-resilience-guard: the last compaction of this session failed its check"
NOTE = "compaction-resilience-guard: the summary above failed its check"


def _live(case: str, tmp_path: Path, mode: str = "auto") -> tuple:
    require(binary() is not None, "Gemini CLI", "tests/recordings/gemini/setup_gemini.sh", "GUARD_REQUIRE_GEMINI")
    out = tmp_path / f"{case}-{mode}"
    run = live_run("gemini_live_run.py", case, out, mode)
    assert run["install"]["rc"] == 0, run["install"]
    assert [t["rc"] for t in run["turns"]] == [0, 0, 0], run["turns"]
    assert run["kinds"].count("compression") == 2, run["kinds"]         # Gemini CLI's summary and its check
    assert not run["hook_log"], run["hook_log"]
    # the user's own hook kept beside the guard's, and run on every model call
    groups = run["settings"]["hooks"]["BeforeModel"]
    assert "record_event.py" in groups[0]["hooks"][0]["command"] and "hook gemini" in groups[1]["hooks"][0]["command"]
    assert len(list((out / "events").iterdir())) == run["kinds"].count("streamGenerateContent")
    home = out / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GUARD_"))}
    env.update(HOME=str(home))
    return run, home, env


def guard(env, *args):
    return subprocess.run([sys.executable, str(ROOT / "guard.py"), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def _summary_texts(run) -> list:
    """Per main request after the compression: the text of the message that carries the summary."""
    return [next((t for r, t in req if "Let me read the notes file first." in t or "<state_snapshot>" in t), None)
            for req in run["after"]]


@pytest.mark.parametrize("mode", ["auto", "manual"])
def test_a_preamble_gemini_cli_stored_fails_and_the_model_is_told_beside_it(tmp_path, mode):
    run, home, env = _live("preamble", tmp_path, mode)
    texts = [t for t in _summary_texts(run) if t is not None]
    assert len(texts) >= 3, run["after"]     # every later request, the resumed process's too, carries the summary
    first, *later = texts
    # the first request that carries the summary: the whole warning, after the summary, in its message
    assert first.index("Let me read the notes file first.") < first.index(GUARD_LINE)
    assert "(empty)" in first and "OPS-4411" in first and "src/deploy/retry.ts" in first
    # every later one (the next `--resume` process included): the short note, not the warning again
    assert all(NOTE in t and GUARD_LINE not in t for t in later), later
    st = json.loads(guard(env, "--agent", "gemini", "--status", "--format", "json").stdout)
    assert st["status"] == "DEGRADED" and st["failed_since_check"][0]["failures"] == ["empty"]
    p = guard(env, "--check", "--format", "json")        # a plain check finds Gemini CLI
    assert p.returncode == 1, p.stderr
    (res,) = json.loads(p.stdout)["results"]
    assert res["failures"] == ["empty"] and res["source"] == "gemini"
    # counted once, the resumed history not read as a second compression
    again = json.loads(guard(env, "--agent", "gemini", "--check", "--format", "json").stdout)
    assert again["summaries_checked"] == 0


def test_a_good_compression_passes_and_nothing_is_added(tmp_path):
    run, home, env = _live("good", tmp_path)
    texts = [t for t in _summary_texts(run) if t is not None]
    assert len(texts) >= 3 and not any("compaction-resilience-guard" in t for t in texts)
    p = guard(env, "--agent", "gemini", "--check", "--format", "json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["summaries_checked"] == 1 and doc["status"] == "HEALTHY", p.stdout[-1500:]
    assert json.loads(guard(env, "--agent", "gemini", "--status", "--format", "json").stdout)["status"] == "HEALTHY"
