"""One live session of the real Codex CLI through `compaction-guard serve --agent codex`, for
tests/test_codex_relay.py.

    unshare -n python3 tests/codex_relay_run.py OUTDIR

Inside a network namespace with only loopback (Codex tries github.com at start): brings `lo` up,
starts the scripted Responses server (tests/modelkit/responses.py) on 127.0.0.1,
then serve and Codex's custom provider as the README's routing line writes them (`compaction-guard
serve --agent codex --base-url URL`, URL the scripted server's /v1, in a process of its own; the
provider's `base_url = "http://127.0.0.1:8742"`, the port the one serve listens on). One thread, one after the other:
ordinary turns (the incident log; a turn whose answer is a tool call Codex runs), three automatic
compactions after a turn (Codex at 80% of a 100,000-token window: the scripted server reports
90,000 input tokens on those turns) and three manual ones (`codex app-server`,
`thread/compact/start`), each compaction answered by the upstream from SCRIPT in order (the guard
asks L1, then L2 when L1 fails). The first compaction's upstream takes 5 s, longer than Codex waits
between two events of a stream here (`stream_idle_timeout_ms = 3000`): the guard's keep-alive
events hold it. Writes OUTDIR/run.json: each step's exit status and what Codex
printed, the upstream's requests (kind, path, the credential they carried), the serve log.
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
REC = ROOT / "tests" / "recordings" / "codex"
sys.path.insert(0, str(REC))
sys.path.insert(0, str(ROOT / "tests"))

from codex_live_run import FIRST, SUMMARIES  # noqa: E402
from codex_real import binary, env_for, run, write_config  # noqa: E402
from livekit import readme_section, serve_process  # noqa: E402
from record import manual_compact  # noqa: E402
from modelkit.base import HTTP_500  # noqa: E402
from modelkit.responses import ScriptedResponses  # noqa: E402

GOOD = SUMMARIES["good"]
PREAMBLE = SUMMARIES["preamble"]
LOOP = "The user asked about the deploy ticket and I said I would check it. " * 80
GOOD_L2 = ("## Current progress and key decisions made\n- Deploy ticket OPS-4411 on branch release/2.7; "
           "MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts; the incident log of SUP-82841 was reviewed.\n"
           "## What remains to be done\n- Decide whether MAX_RETRY_BACKOFF_MS goes down to 30000.")
# the upstream's answers to compaction requests, in order (L1, then L2 where L1 failed)
SCRIPT = [GOOD,                         # auto 1: 5 s upstream; passes at L1, stored unchanged
          PREAMBLE, PREAMBLE,           # auto 2: L3
          HTTP_500, HTTP_500,           # auto 3: L3
          LOOP, LOOP,                   # manual 1: L3
          "", "",                       # manual 2: L3
          PREAMBLE, GOOD_L2]            # manual 3: L2
EXPECTED = ["L1", "L3", "L3", "L3", "L3", "L2"]
TOOL_TURN = "Noted the log? Run `cat notes.txt` (RUN_TOOL) and reply OK."
STEPS = [("turn", FIRST, 0), ("turn", TOOL_TURN, 0),
         ("turn", "Next: should MAX_RETRY_BACKOFF_MS be lowered to 30000 on release/2.7? Just note it.", 90000),
         ("turn", "Which branch was it again?", 90000),
         ("turn", "And the incident ticket?", 90000),
         ("manual", None, 0), ("turn", "Step 1: what was the deploy ticket?", 0),
         ("manual", None, 0), ("turn", "Step 2: what was the deploy ticket?", 0),
         ("manual", None, 0),
         ("turn", "What was the deploy ticket, and what did I ask last?", 0)]


def readme_routing() -> tuple:
    """(the serve command, the provider's base_url) as the README's Codex section writes them."""
    part = readme_section("## Behind Codex", "## Behind Gemini CLI")
    cmd = re.search(r"`(compaction-guard serve --agent codex[^`]*)`", part).group(1)
    return cmd, re.search(r'`base_url = "([^"]+)"`', part).group(1)


def main() -> int:
    out = Path(sys.argv[1])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    b = binary()
    if b is None:
        raise SystemExit("codex_relay_run: the pinned Codex is not installed (tests/recordings/codex/setup_codex.sh)")
    home = out / "home"
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "notes.txt").write_text("deploy notes: OPS-4411\n")
    info = {"steps": [], "script": {"good": GOOD, "good_l2": GOOD_L2, "preamble": PREAMBLE, "loop": LOOP,
                                    "levels": EXPECTED}}
    with ScriptedResponses(SCRIPT, input_tokens=0, compaction_input_tokens=0) as up:
        env = env_for(home)
        codex_home = Path(env["CODEX_HOME"])
        log = out / "serve.log"
        serve_env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "GUARD_"))}
        serve_env.update(HOME=str(home), CODEX_HOME=str(codex_home))
        cmd, base_url = readme_routing()
        info["readme"] = {"command": cmd, "base_url": base_url}
        args = [up.url if w == "URL" else w for w in shlex.split(cmd)[2:]]
        # four L3s in a row would open the circuit breaker (the upstream skipped for a while): not here
        with serve_process(args + ["--set", "breaker_threshold=10", "--set", "serve_keepalive_seconds=1"], serve_env,
                           log) as port:
            cfg = write_config(codex_home, base_url.replace(":8742", f":{port}"), model="gpt-5.5",
                               context_window=100000, threshold_percent=80)
            cfg.write_text(cfg.read_text().replace("stream_idle_timeout_ms = 20000", "stream_idle_timeout_ms = 3000"))
            thread = None
            for n, (kind, prompt, tokens) in enumerate(STEPS):
                t0 = time.monotonic()
                up.input_tokens = tokens
                up.compaction_delay = 5.0 if n == 2 else 0.0
                if kind == "turn":
                    r = run(b, work, env, prompt, resume=thread, timeout=180)
                    thread = thread or r["thread_id"]
                    step = {"kind": kind, "rc": r["rc"], "stderr_tail": r["stderr"][-800:],
                            "events": [e for e in r["events"] if e.get("type") == "item.completed"]}
                else:
                    m = manual_compact(b, work, env, thread, timeout=120)
                    step = {"kind": kind, "ended_by": m.get("ended_by"), "error": m.get("error"),
                            "errors": m.get("errors"), "compaction_items": len(m.get("compaction_items") or [])}
                up.input_tokens = 0
                step["seconds"] = round(time.monotonic() - t0, 1)
                info["steps"].append(step)
            info["thread"] = thread
        info["requests"] = [{"kind": r["kind"], "path": r["path"], "method": r["method"], "key": k}
                            for r, k in zip(up.requests, up.keys)]
        turns = [r["body"] for r in up.requests if r["kind"] == "turn"]
        # the tool's output as Codex sent it back to the model, and the last request's messages
        info["tool_outputs"] = [it.get("output") for b in turns for it in b.get("input") or []
                                if isinstance(it, dict) and it.get("type") == "function_call_output"]
        info["last_input"] = [{"role": it.get("role"), "text": "\n".join(
            c.get("text", "") for c in it.get("content") or [] if isinstance(c, dict))}
            for it in (turns[-1].get("input") or []) if isinstance(it, dict) and it.get("type") == "message"]
    info["serve_log"] = log.read_text()
    (out / "run.json").write_text(json.dumps(info, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
