"""One live run of the real Codex CLI behind the guard, for tests/test_codex_live.py.

    unshare -n python3 tests/codex_live_run.py CASE OUTDIR [MODE]

Inside a network namespace with only loopback (Codex tries github.com at start): brings `lo` up,
starts the scripted Responses server (tests/modelkit/responses.py) whose compaction
answer is CASE's summary, writes Codex's config (automatic compaction after a turn at 80% of a
100,000-token window), installs the guard's hooks with `compaction-guard install codex`, and runs
four `codex exec` turns (the third reports 90,000 input tokens, so Codex compacts after it; the
fourth is the turn after the compaction). The hooks run as `codex exec
--dangerously-bypass-hook-trust` runs them. MODE `preturn`: no post-turn threshold, the third turn
reports 99,000 (over the window), so the fourth `codex exec ... resume` compacts before its turn,
in the same process. MODE `manual`: the hooks trusted as Codex stores trust (`hooks/list` through
`codex app-server`, then `[hooks.state."<key>"] trusted_hash` in config.toml, what `/hooks` does),
three turns, a compaction asked for through `codex app-server` (`thread/compact/start`), then the
fourth turn, all without the bypass flag. Writes OUTDIR/run.json: the thread, each turn's exit
status, the requests' kinds, and the first request after the compaction (its input items' text).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "tests" / "recordings" / "codex"
sys.path[:0] = [str(REC), str(ROOT / "tests")]

from codex_real import binary, env_for, run, write_config  # noqa: E402
from record import manual_compact, trust_hooks  # noqa: E402
from modelkit.responses import ScriptedResponses  # noqa: E402

SUMMARIES = {
    "good": "## Current progress and key decisions\n- The user asked to keep deploy ticket OPS-4411 and branch "
            "release/2.7 in mind; MAX_RETRY_BACKOFF_MS=45000 lives in src/deploy/retry.ts.\n- The incident log of "
            "SUP-82841 (Cloud Storage writes failing for the service account) was shared for review.\n"
            "## What remains\n- Decide whether MAX_RETRY_BACKOFF_MS should be lowered to 30000 on release/2.7 after "
            "the log review.",
    "preamble": "Let me read the notes file first.",
    "empty": "",
}
FIRST = ("Keep deploy ticket OPS-4411 and branch release/2.7 in mind. The config constant is "
         "MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts. Here is the incident log of SUP-82841:\n"
         + "\n".join(f"2026-12-0{1 + i % 5}T10:{i % 60:02d}:00Z svc-deploy worker-{i % 7} retry {i} backoff "
                     f"{(i * 37) % 5000} ms status=503 bucket=gs://deploy-artifacts/{i % 13}" for i in range(120)))
TURNS = (FIRST, "Noted the log? Reply OK.",
         "Next: should MAX_RETRY_BACKOFF_MS be lowered to 30000 on release/2.7? Just note the question for now.",
         "What was the deploy ticket, and what did I ask last?")


def main() -> int:
    case, out = sys.argv[1], Path(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "auto"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    b = binary()
    if b is None:
        raise SystemExit("codex_live_run: the pinned Codex is not installed (tests/recordings/codex/setup_codex.sh)")
    home = out / "home"
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    info = {"case": case, "turns": []}
    with ScriptedResponses([SUMMARIES[case]], input_tokens=0, compaction_input_tokens=0) as srv:
        env = env_for(home, srv.url)
        codex_home = Path(env["CODEX_HOME"])
        if mode == "auto":
            write_config(codex_home, srv.url, model="gpt-5.5", context_window=100000, threshold_percent=80)
        elif mode == "preturn":
            write_config(codex_home, srv.url, model="gpt-5.5", context_window=100000)
        else:
            write_config(codex_home, srv.url, model="gpt-5.5")
        inst = subprocess.run([sys.executable, str(ROOT / "guard.py"), "install", "codex", "--format", "json"],
                              env=env, capture_output=True, text=True, timeout=60)
        info["install"] = {"rc": inst.returncode, "stdout": inst.stdout, "stderr": inst.stderr}
        bypass = mode != "manual"
        if not bypass:
            info["trusted"] = trust_hooks(b, work, env, codex_home)
        thread = None
        after_from = None
        for i, prompt in enumerate(TURNS):
            if i == 2 and mode != "manual":
                srv.input_tokens = 90000 if mode == "auto" else 99000
            if i == 3:
                if mode == "manual":
                    info["manual"] = {k: v for k, v in manual_compact(b, work, env, thread).items() if k != "stderr"}
                after_from = len(srv.requests)
            r = run(b, work, env, prompt, resume=thread, bypass_hook_trust=bypass, timeout=120)
            srv.input_tokens = 0
            thread = thread or r["thread_id"]
            info["turns"].append({"rc": r["rc"], "stderr_tail": r["stderr"][-800:]})
        requests = list(srv.requests)
    info["thread"] = thread
    info["kinds"] = [r["kind"] for r in requests]
    after = [r for r in requests[after_from or 0:] if r["kind"] == "turn"]
    if mode == "preturn":       # the turn after the compaction is in the same process, after it
        comp = max(i for i, r in enumerate(requests) if r["kind"] == "compaction")
        after = [r for r in requests[comp:] if r["kind"] == "turn"]
    if after:
        items = (after[0].get("body") or {}).get("input") or []
        info["after_input"] = [{"role": it.get("role"), "text": "\n".join(
            c.get("text", "") for c in it.get("content") or [] if isinstance(c, dict))} for it in items
            if isinstance(it, dict) and it.get("type") == "message"]
    (out / "run.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
