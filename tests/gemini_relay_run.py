"""One live session of the real Gemini CLI through `compaction-guard serve --agent gemini`, for
tests/test_gemini_relay.py.

    unshare -n python3 tests/gemini_relay_run.py OUTDIR

Inside a network namespace with only loopback (Gemini CLI tries the internet at start): brings
`lo` up, starts the scripted Gemini API (tests/modelkit/gemini.py) on
127.0.0.1, then serve and Gemini CLI as the README's routing line writes them: `compaction-guard
serve --agent gemini` (its own process; `--base-url` the scripted API, offline), and
`GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8742`, the port the one serve listens on. One session, one headless run after the other (`gemini -p`, then
`--resume latest`): ordinary turns (a tool call Gemini CLI runs, streamed answers), two automatic
compressions (a compression threshold of 1% of gemini-2.5-flash's window: a pasted incident log
passes it) and then, the threshold at 90% (no automatic one), two manual ones (`/compress`; a
headless run ends with its turn, a compression still running then lost: the model takes 2 s to
answer those turns, as a real one does, so that the compression ends first). Each compression is Gemini CLI's two calls, the
summary and the verify call; the upstream answers each from SUMMARIES (first calls) and VERIFIES
(verify calls) in order (the guard asks L1, then L2 when L1 fails). Writes OUTDIR/run.json: each
run's exit status and answer, the upstream's requests (kind, path, the credential they carried),
the text of the main requests after the last compression, the serve log.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "tests" / "recordings" / "gemini"
sys.path.insert(0, str(REC))
sys.path.insert(0, str(ROOT / "tests"))

import gemini_real as g  # noqa: E402
from livekit import readme_section, serve_process  # noqa: E402
from record import GOOD_LONG, P1_LONG, P2, PREAMBLE, SCRATCH, incident_log  # noqa: E402
from modelkit.base import HTTP_500  # noqa: E402
from modelkit.gemini import ScriptedGemini, is_compression, is_verify  # noqa: E402

LOOP = "The user asked about the deploy ticket and I said I would check it. " * 60
GOOD_L2 = ("<state_snapshot>\n    <overall_goal>\n        Keep deploy ticket OPS-4411 and branch release/2.7 in mind.\n"
           "    </overall_goal>\n    <key_knowledge>\n        - MAX_RETRY_BACKOFF_MS=45000 lives in src/deploy/retry.ts; "
           "notes.txt says \"deploy notes: OPS-4411\"; the incident logs were shared for review.\n"
           "    </key_knowledge>\n    <task_state>\n        1. [TODO] Answer the next question about the logs. "
           "<-- CURRENT FOCUS\n    </task_state>\n</state_snapshot>")
# what the upstream answers, in order: the first calls (L1, then L2 where L1 failed) ...
SUMMARIES = [SCRATCH + GOOD_LONG,       # auto 1: passes at L1
             PREAMBLE, PREAMBLE,        # auto 2: L3
             LOOP, LOOP,                # manual 1: L3
             "", GOOD_L2]               # manual 2: L2
# ... and the verify calls
VERIFIES = [GOOD_LONG,                  # auto 1: passes at L1, stored unchanged
            PREAMBLE, PREAMBLE,         # auto 2: L3, the guard's L3 of the first call repeated
            HTTP_500, HTTP_500,         # manual 1: L3, the same
            PREAMBLE, PREAMBLE]         # manual 2: L3, the first call's L2 answer repeated
# the level of each call, in order (first call, verify call per compression)
LEVELS = ["L1", "L1", "L3", "L3", "L3", "L3", "L2", "L3"]
P3 = ("Here is a second incident log, from the canary; keep it too:\n\n"
      + incident_log(6000).replace("SUP-", "CAN-"))
# (kind, prompt, compression threshold)
RUNS = [("turn", P1_LONG, 0.01), ("auto", P2, 0.01), ("auto", P3, 0.01), ("manual", "/compress", 0.9),
        ("turn", "Which branch was it again?", 0.9), ("manual", "/compress", 0.9),
        ("after", "What was the deploy ticket, and what did I ask last?", 0.9)]


def readme_routing() -> tuple:
    """(the serve command, the variable's value) as the README's Gemini CLI section writes them."""
    part = readme_section("## Behind Gemini CLI", "## Behind opencode")
    cmd = re.search(r"`(compaction-guard serve --agent gemini[^`]*)`", part).group(1)
    return cmd, re.search(r"`GOOGLE_GEMINI_BASE_URL=(\S+) gemini`", part).group(1)


def main() -> int:
    out = Path(sys.argv[1])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if g.binary() is None:
        raise SystemExit("gemini_relay_run: the pinned Gemini CLI is not installed (tests/recordings/gemini/setup_gemini.sh)")
    home, work = out / "home", out / "work"
    (work / "src" / "deploy").mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (work / "notes.txt").write_text("deploy notes: OPS-4411\n")
    (work / "src" / "deploy" / "retry.ts").write_text("export const MAX_RETRY_BACKOFF_MS = 45000;\n")
    info = {"runs": [], "script": {"good": GOOD_LONG, "good_l2": GOOD_L2, "preamble": PREAMBLE, "loop": LOOP,
                                   "levels": LEVELS}}
    with ScriptedGemini(summaries=SUMMARIES, verifies=VERIFIES) as up:
        log = out / "serve.log"
        serve_env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "GUARD_"))}
        serve_env.update(HOME=str(home))
        cmd, base_url = readme_routing()
        info["readme"] = {"command": cmd, "GOOGLE_GEMINI_BASE_URL": base_url}
        # four L3s in a row would open the circuit breaker (the upstream skipped for a while): not here
        with serve_process(shlex.split(cmd)[2:] + ["--base-url", up.url, "--set", "breaker_threshold=10"], serve_env,
                           log) as port:
            env = g.env_for(home, base_url.replace(":8742", f":{port}"))
            mains_after = []
            for i, (kind, prompt, threshold) in enumerate(RUNS):
                g.write_settings(home, threshold=threshold)
                up.main_delay = 2.0 if kind == "manual" else 0.0
                n = len(up.requests)
                t0 = time.monotonic()
                r = g.run(work, env, prompt, *(["--resume", "latest"] if i else []), timeout=300, check=False)
                reqs = up.requests[n:]
                info["runs"].append({"kind": kind, "rc": r["rc"], "seconds": round(time.monotonic() - t0, 1),
                                     "stderr": r["stderr"][-1500:], "response": (r["json"] or {}).get("response"),
                                     "requests": ["verify" if is_compression(q["body"]) and is_verify(q["body"])
                                                  else "summary" if is_compression(q["body"])
                                                  else q["path"].split(":")[-1].split("?")[0] for q in reqs]})
                if kind == "after":
                    mains_after = [[(c.get("role"), "".join(p.get("text", "") for p in c.get("parts") or []
                                                              if isinstance(p, dict)))
                                    for c in q["body"].get("contents") or []]
                                   for q in reqs if q["path"].split("?")[0].endswith(":streamGenerateContent")]
            info["after"] = mains_after
        info["requests"] = [{"path": q["path"], "key": k} for q, k in zip(up.requests, up.keys)]
        # the tool's result as Gemini CLI sent it back to the model
        info["tool_results"] = [p["functionResponse"].get("response") for q in up.requests
                                for c in (q["body"] or {}).get("contents") or [] for p in c.get("parts") or []
                                if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)][:4]
        info["compressions"] = [(kind, text[:60]) for kind, text in up.compressions]
    info["serve_log"] = log.read_text()
    (out / "run.json").write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
