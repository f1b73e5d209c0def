"""OpenClaw's real compactions through `compaction-guard serve`, with a real small model as the upstream.

OpenClaw 2026.9.6's gateway on 127.0.0.1 (the pinned install of scripts/setup_openclaw.sh), its turns
answered by the scripted model (tests/modelkit/openai_chat.py), only its compaction routed through `serve`
(agents.defaults.compaction.model), serve's upstream SmolLM2-135M on this CPU (`--provider local`).
Each session: five turns of real human text in one language (tests/corpus/real/human.jsonl), then a
forced compaction (`openclaw sessions compact`). Printed: per mode, how many compactions OpenClaw
completed and stored, how many requests serve answered at each level and why the levels failed,
how many answers OpenClaw's audit rejected (its corrective retries and its `failed quality checks`).

    python3 benchmarks/openclaw_serve_live.py [--sessions 6] [--modes safeguard,default]

Needs the test set-up (scripts/setup.sh test: the local model; scripts/setup_openclaw.sh). Takes about
half a minute a session on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

from openclaw_real import env_for, free_port, node, openclaw, package, install  # noqa: E402
from modelkit.openai_chat import ScriptedOpenAI  # noqa: E402


def config(model_port: int, serve_port: int, gateway_port: int, workspace: Path, mode: str) -> dict:
    entry = {"reasoning": False, "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
    return {
        "agents": {"defaults": {"model": {"primary": "scripted/scripted"}, "workspace": str(workspace),
                                "compaction": {"mode": mode, "model": "guard/smollm2", "keepRecentTokens": 300}}},
        "models": {"mode": "replace", "providers": {
            "scripted": {"baseUrl": f"http://127.0.0.1:{model_port}/v1", "apiKey": "sk-scripted", "api": "openai-completions",
                         "models": [dict(entry, id="scripted", name="Scripted", contextWindow=32000, maxTokens=2048)]},
            "guard": {"baseUrl": f"http://127.0.0.1:{serve_port}/v1", "apiKey": "unused", "api": "openai-completions",
                      "models": [dict(entry, id="smollm2", name="SmolLM2 via compaction-guard", contextWindow=8192,
                                      maxTokens=1024)]}}},
        "gateway": {"mode": "local", "bind": "loopback", "port": gateway_port, "auth": {"mode": "none"}},
    }


def run_mode(where: Path, mode: str, sessions: int, rng: random.Random) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix=f"ocserve-{mode}-"))
    home = tmp / "user"
    (home / ".openclaw").mkdir(parents=True)
    human = [json.loads(line) for line in (ROOT / "tests" / "corpus" / "real" / "human.jsonl").read_text().splitlines()]
    by = {}
    for r in human:
        by.setdefault(r["lang"], []).append(r)
    langs = sorted(lang for lang, rows in by.items() if len(rows) >= 6)
    out = {"mode": mode, "sessions": 0, "stored": 0, "levels": Counter(), "l1": Counter(), "l2": Counter(),
           "retries_after_audit": 0, "audit_rejections": 0, "languages": []}
    with ScriptedOpenAI(["(unused)"]) as model:
        mport, sport, gport = model.port, free_port(), free_port()
        (home / ".openclaw" / "openclaw.json").write_text(json.dumps(config(mport, sport, gport, home / "ws", mode)))
        slog, glog = tmp / "serve.log", tmp / "gateway.log"
        env = env_for(home, where)
        srv = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--provider", "local", "--port",
                                str(sport), "--set", "breaker_threshold=1000"], stdout=open(slog, "w"),
                               stderr=subprocess.STDOUT, env=env, start_new_session=True)
        gw = subprocess.Popen([str(node(where)), str(package(where) / "openclaw.mjs"), "gateway", "run", "--port",
                               str(gport), "--bind", "loopback"], stdout=open(glog, "w"), stderr=subprocess.STDOUT,
                              env=env, start_new_session=True)
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{sport}/healthz", timeout=1).read()
                    if "[gateway] ready" in glog.read_text(errors="replace"):
                        break
                except OSError:
                    pass
                time.sleep(0.5)
            for i in range(sessions):
                lang = langs[(i * 7) % len(langs)]
                key = f"agent:main:{mode}-{i}-{lang}"
                msgs = [r["text"][:500] for r in rng.sample(by[lang], 5)]
                msgs[-1] += "\n\nPlease summarize what we have so far and tell me the next step."
                for m in msgs:
                    openclaw(where, home, "agent", "--session-key", key, "--message", m, timeout=180)
                r = openclaw(where, home, "sessions", "compact", key, timeout=400)
                out["sessions"] += 1
                out["languages"].append(lang)
                out["stored"] += "Compacted session" in r.stdout
        finally:
            for p in (gw, srv):
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait(timeout=30)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    os.killpg(p.pid, signal.SIGKILL)
        for line in slog.read_text(errors="replace").splitlines():
            m = re.search(r"answered at L(\d) \((.*?)\) in", line)
            if not m:
                continue
            out["levels"][f"L{m.group(1)}"] += 1
            for part in m.group(2).split("; "):
                lvl, _, kinds = part.partition(" ")
                if lvl in ("L1", "L2"):
                    out[lvl.lower()].update(kinds.split(" ")[0].split(","))
            out["retries_after_audit"] += "a retry: the agent's audit rejected" in line
        out["audit_rejections"] = glog.read_text(errors="replace").count("failed quality checks")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--modes", default="safeguard,default")
    ap.add_argument("--seed", type=int, default=24)
    args = ap.parse_args()
    where = install()
    if where is None:
        sys.exit("the pinned OpenClaw is not installed: run scripts/setup_openclaw.sh")
    rng = random.Random(args.seed)
    for mode in args.modes.split(","):
        r = run_mode(where, mode, args.sessions, rng)
        n = sum(r["levels"].values())
        print(f"{mode}: {r['sessions']} sessions ({', '.join(r['languages'])}), {r['stored']} compactions stored; "
              f"{n} requests through serve: " + ", ".join(f"{k} {v}" for k, v in sorted(r["levels"].items()))
              + f"; L1 failed {dict(r['l1'].most_common())}, L2 failed {dict(r['l2'].most_common())}; "
              f"answers OpenClaw's audit rejected: {r['retries_after_audit']} retried, {r['audit_rejections']} final")
    return 0


if __name__ == "__main__":
    sys.exit(main())
