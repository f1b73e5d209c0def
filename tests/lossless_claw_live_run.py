"""One live run of the real lossless-claw inside the real OpenClaw gateway, `compaction-guard serve` as its
summary model, for tests/test_lossless_claw_live.py.

    unshare -n python3 tests/lossless_claw_live_run.py CASE OUTDIR serve

Inside a network namespace with only loopback: the scripted agent model and the scripted summary
model (tests/modelkit/openai_chat.py, ScriptedLosslessClaw; CASE's answers: `loop` repeats one sentence),
`compaction-guard serve` in front of the summary model, OpenClaw's config with lossless-claw as its
context engine (the plugin made ready by setup_plugin.sh, installed with `openclaw plugins install
--link`) and `config.summaryModel` naming the guard's provider (`models.providers.guard`, the
baseUrl serve's; `llm.allowedModels` lets the plugin use it), the gateway, five turns (lossless-claw's
background worker writes a leaf) and a forced `openclaw sessions compact`. Writes OUTDIR/run.json:
each command's exit status, the summary requests serve forwarded, the rows of lcm.db.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "tests" / "recordings" / "lossless-claw"
sys.path.insert(0, str(REC))
sys.path.append(str(ROOT / "tests"))

import record as lcm  # noqa: E402
from modelkit.openai_chat import ScriptedLosslessClaw  # noqa: E402
from livekit import free_port, wait_healthz  # noqa: E402

KEY = lcm.KEY


def main() -> int:
    case, out = sys.argv[1], Path(sys.argv[2])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    oc = lcm.openclaw_install()
    home = out / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    log, lock = [], threading.Lock()
    main_srv = ScriptedLosslessClaw("main", lcm.RESPONDERS[case], log, lock, lcm.turn_reply)
    summ = ScriptedLosslessClaw("summ", lcm.RESPONDERS[case], log, lock, lcm.turn_reply)
    sport, gport = free_port(), free_port()
    info = {"case": case, "commands": []}
    senv = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "GUARD_", "LCM_"))}
    senv.update(HOME=str(home), OPENCLAW_STATE_DIR=str(state), GUARD_PROVIDER="openai",
                GUARD_BASE_URL=f"http://127.0.0.1:{summ.port}/v1", GUARD_MODEL="summarizer",
                OPENAI_API_KEY="sk-summ-not-a-key")
    serve = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--port", str(sport), "--set",
                              "chain_deadline_seconds=30", "--set", "breaker_threshold=1000"],
                             stdout=open(out / "serve.log", "w"), stderr=subprocess.STDOUT, env=senv,
                             start_new_session=True)
    gw = None
    try:
        if not wait_healthz(sport, 30):
            raise TimeoutError("serve did not answer")
        cfg = lcm.config(main_srv.port, summ.port, gport, home / "workspace")
        cfg["models"]["providers"]["guard"] = dict(cfg["models"]["providers"]["summ"],
                                                   baseUrl=f"http://127.0.0.1:{sport}/v1", apiKey="unused")
        (state / "openclaw.json").write_text(json.dumps(cfg, indent=2))
        r = lcm.openclaw(oc, home, "plugins", "install", "--force", "--accept-capabilities", "--link",
                         lcm.plugin_dir())
        info["commands"].append({"cmd": "plugins install", "rc": r.returncode, "out": (r.stdout + r.stderr)[-600:]})
        cfg = json.loads((state / "openclaw.json").read_text())
        entry = cfg["plugins"]["entries"]["lossless-claw"]
        entry["hooks"] = {"allowConversationAccess": True}
        entry["llm"] = {"allowModelOverride": True, "allowedModels": ["guard/summarizer"]}
        entry["config"] = dict(lcm.LCM_CONFIG, summaryModel="guard/summarizer")
        (state / "openclaw.json").write_text(json.dumps(cfg, indent=2))
        gw = lcm.Gateway(oc, home, gport, out / "gateway.log")
        if not gw.wait_for(r"\[gateway\] ready", 120):
            raise SystemExit("the gateway did not start: " + gw.text()[-3000:])
        for m in lcm.TURNS[:5]:
            r = lcm.openclaw(oc, home, "agent", "--session-key", KEY, "--message", m)
            info["commands"].append({"cmd": "agent", "rc": r.returncode})
            lcm.wait_quiet(log, lock, 3.0, 60)
        r = lcm.openclaw(oc, home, "sessions", "compact", KEY)
        info["commands"].append({"cmd": "sessions compact", "rc": r.returncode, "out": (r.stdout + r.stderr)[-600:]})
        lcm.wait_quiet(log, lock, 4.0, 60)
    finally:
        if gw is not None:
            gw.stop()
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(timeout=30)
        main_srv.close()
        summ.close()
    info["summary_requests"] = [{"kind": q["kind"], "answer": (q.get("answer") or "")[:200]}
                                for q in log if q["kind"] != "turn"]
    db = state / "lcm.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        info["summaries"] = [{"id": sid, "kind": kind, "content": content} for sid, kind, content in con.execute(
            "SELECT summary_id, kind, content FROM summaries ORDER BY rowid")]
    info["gateway_lcm"] = [ln for ln in gw.text().splitlines() if "lcm" in ln.lower()][-30:] if gw else []
    (out / "run.json").write_text(json.dumps(info, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
