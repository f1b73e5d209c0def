"""lossless-claw as it really runs, with `compaction-guard serve` as its summary model: the real plugin
(1.0.0-beta.4, tests/recordings/lossless-claw/setup_plugin.sh) inside the real OpenClaw 2026.9.6
gateway, offline, its summary model answering a loop (tests/lossless_claw_live_run.py)."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from livekit import require, run as live_run  # noqa: E402
from openclaw_real import install  # noqa: E402

LOOP = "The deployment of v2.4.1 to staging-3 is tracked in ticket OPS-4412. "
FOOTER = "Expand for details about:"


def test_serve_as_lossless_claws_summary_model_stores_its_shape_where_the_model_looped(tmp_path):
    require(install() is not None, "OpenClaw", "scripts/setup_openclaw.sh", "GUARD_REQUIRE_OPENCLAW")
    run = live_run("lossless_claw_live_run.py", "loop", tmp_path / "run", "serve")
    assert all(c["rc"] == 0 for c in run["commands"]), run["commands"]
    # the summary model looped at L1 and L2; lossless-claw stored what serve answered at L3
    assert run["summary_requests"] and all(q["answer"].startswith(LOOP * 2) for q in run["summary_requests"])
    assert run["summaries"], run["gateway_lcm"]
    for s in run["summaries"]:
        text = s["content"]
        assert LOOP * 2 not in text and "compaction-resilience-guard L3" in text
        assert text.splitlines()[-1].startswith(FOOTER)              # the shape its prompt asked for
        assert "OPS-4412" in text
    log = (tmp_path / "run" / "serve.log").read_text()
    assert "answered at L3" in log and "format" in log           # the loop lacked the footer too
    # the guard's own check of that lcm.db: what its L3 wrote (serve recorded a key of each answer) is
    # level usage, counted as a fallback's, and no failure
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "GUARD_", "LCM_"))}
    state = tmp_path / "run" / "home" / ".openclaw"
    env.update(HOME=str(tmp_path / "run" / "home"), OPENCLAW_STATE_DIR=str(state))
    p = subprocess.run([sys.executable, str(ROOT / "guard.py"), "--check", "--file", str(state / "lcm.db"), "--format",
                        "json"], env=env, capture_output=True, text=True, timeout=120)
    doc = json.loads(p.stdout)
    assert [(r["failures"], r.get("guard_l3")) for r in doc["results"]] == [([], True)] * len(run["summaries"]), \
        p.stdout[-2000:]
    assert doc["status"] == "HEALTHY" and doc["written_by_fallback"] == len(run["summaries"]), p.stdout[-2000:]
