"""One live run of the real Gemini CLI behind the guard, for tests/test_gemini_live.py.

    unshare -n python3 tests/gemini_live_run.py CASE OUTDIR [auto|manual]

Inside a network namespace with only loopback (Gemini CLI tries the internet at start): brings
`lo` up, starts the scripted Gemini API (tests/modelkit/gemini.py) whose
compression answers are CASE's summary, writes Gemini CLI's settings (a compression threshold of
1% of gemini-2.5-flash's window), installs the guard's hook with `compaction-guard install
gemini`, and runs three headless turns in one session: `gemini -p` with the incident log; then
`gemini --resume latest -p` (mode auto: its second model call comes after Gemini CLI compressed;
mode manual: the prompt is `/compress`); then `gemini --resume latest -p` again (a later process,
the summary still in the history). The user's own hook on BeforeModel keeps each event as Gemini
CLI wrote it (OUTDIR/events/). Writes OUTDIR/run.json: each turn's exit status, the kinds of
request, and the text of every main request after the compression.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "tests" / "recordings" / "gemini"
sys.path[:0] = [str(REC), str(ROOT / "tests")]

import gemini_real as g  # noqa: E402
from record import GOOD_LONG, P1_LONG, P2, PREAMBLE, SCRATCH  # noqa: E402
from modelkit.gemini import ScriptedGemini, is_compression  # noqa: E402

CASES = {"good": ([SCRATCH + GOOD_LONG], [GOOD_LONG]), "preamble": ([PREAMBLE], [None])}
P3 = "What was the deploy ticket, and what did I ask last?"


def _texts(body: dict) -> list:
    return [(c.get("role"), "".join(p.get("text", "") for p in c.get("parts") or [] if isinstance(p, dict)))
            for c in body.get("contents") or []]


def main() -> int:
    case, out = sys.argv[1], Path(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "auto"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if g.binary() is None:
        raise SystemExit("gemini_live_run: the pinned Gemini CLI is not installed (tests/recordings/gemini/setup_gemini.sh)")
    home, work = out / "home", out / "work"
    (work / "src" / "deploy").mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (work / "notes.txt").write_text("deploy notes: OPS-4411\n")
    (work / "src" / "deploy" / "retry.ts").write_text("export const MAX_RETRY_BACKOFF_MS = 45000;\n")
    # the user's own hook on the same event, kept by the guard's install: it keeps each event as
    # Gemini CLI wrote it (the bytes on stdin)
    events = out / "events"
    events.mkdir(exist_ok=True)
    recorder = out / "record_event.py"
    recorder.write_text("import sys, time\nfrom pathlib import Path\n"
                        f"Path({str(events)!r}, f'{{time.time_ns()}}.json').write_bytes(sys.stdin.buffer.read())\n")
    mine = {"BeforeModel": [{"hooks": [{"type": "command", "command": f"{sys.executable} {recorder}",
                                        "timeout": 30000}]}]}
    g.write_settings(home, threshold=0.01 if mode == "auto" else 0.9, hooks=mine)
    summaries, verifies = CASES[case]
    info = {"case": case, "mode": mode, "turns": []}
    with ScriptedGemini(summaries=summaries, verifies=verifies) as srv:
        env = g.env_for(home, srv.url)
        inst = subprocess.run([sys.executable, str(ROOT / "guard.py"), "install", "gemini", "--format", "json"],
                              env=env, capture_output=True, text=True, timeout=60)
        info["install"] = {"rc": inst.returncode, "stdout": inst.stdout, "stderr": inst.stderr}
        turns = [(P1_LONG, []), ("/compress" if mode == "manual" else P2, ["--resume", "latest"]),
                 (P3, ["--resume", "latest"])]
        kinds, mains_after, compressed = [], [], False
        for prompt, args in turns:
            n = len(srv.requests)
            r = g.run(work, env, prompt, *args, timeout=240, check=False)
            info["turns"].append({"rc": r["rc"], "stderr": r["stderr"][-1500:],
                                  "response": (r["json"] or {}).get("response")})
            for q in srv.requests[n:]:
                if is_compression(q["body"]):
                    kinds.append("compression")
                    compressed = True
                    continue
                kinds.append(q["path"].split(":")[-1].split("?")[0])
                if compressed and q["path"].split("?")[0].endswith(":streamGenerateContent"):
                    mains_after.append(_texts(q["body"]))
        info["kinds"] = kinds
        info["after"] = mains_after
    info["settings"] = json.loads((home / ".gemini" / "settings.json").read_text())
    log = home / ".gemini" / "compaction-guard" / "hook.log"
    info["hook_log"] = log.read_text() if log.exists() else ""
    (out / "run.json").write_text(json.dumps(info, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
