"""One live run of the real opencode behind the guard, for tests/test_opencode_live.py.

    unshare -n python3 tests/opencode_live_run.py CASE OUTDIR [plugin|manual|serve]

Inside a network namespace with only loopback: brings `lo` up, starts the scripted
OpenAI-compatible server (tests/modelkit/openai_chat.py, ScriptedOpencode; its compaction answers
are CASE's summary), writes opencode's configuration (a 16,000-token model; compaction, and only
compaction, on its own provider), and runs headless turns in one session as
tests/recordings/opencode/record.py does: the incident log, a short turn, a turn after which the
model reports 15,000 prompt tokens (opencode compacts after it in the same process, then runs its
"Continue" turn), and a later `opencode run --session`. Mode `plugin`: the guard's plugin
installed by `compaction-guard install opencode`. Mode `manual`: the same plugin, the compaction
asked for through `opencode serve` (`POST /session/:id/summarize`). Mode `serve`: no plugin; the
compaction model is `compaction-guard serve --agent opencode` configured with the README's
opencode.json snippet (its port the one serve listens on), whose upstream is the scripted
compaction model. Mode `offline`: the plugin installed by `compaction-guard install opencode --offline`
into a configuration directory with nothing of npm's in it, as a user's machine has it. Writes OUTDIR/run.json: each turn's exit status and seconds, the requests' kinds
and the system messages and texts of every main request after the compaction, what serve
answered, and the summaries opencode stored.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "tests" / "recordings" / "opencode"
sys.path.insert(0, str(REC))
sys.path.append(str(ROOT / "tests"))

import opencode_real as oc  # noqa: E402
from livekit import free_port, wait_healthz  # noqa: E402
from record import GOOD_LONG, LOOP, OVER, first_message  # noqa: E402
from modelkit.openai_chat import ScriptedOpencode  # noqa: E402

SUMMARIES = {"good": GOOD_LONG, "empty": "", "loop": LOOP}


def _texts(msg: dict) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    return "".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


def stored(db: Path) -> list:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = []
        for mid, data in con.execute("SELECT id, data FROM message ORDER BY time_created, id"):
            info = json.loads(data)
            if info.get("summary") is True:
                text = "".join(json.loads(p).get("text", "") for (p,) in con.execute(
                    "SELECT data FROM part WHERE message_id = ? ORDER BY id", (mid,)) if '"type":"text"' in p)
                out.append({"id": mid, "text": text, "finish": info.get("finish")})
        return out
    finally:
        con.close()


def main() -> int:
    case, out = sys.argv[1], Path(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else "plugin"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    binary = oc.binary()
    if binary is None:
        raise SystemExit("opencode_live_run: the pinned opencode is not installed (tests/recordings/opencode/"
                         "setup_opencode.sh)")
    home, work = out / "home", out / "work"
    work.mkdir(parents=True, exist_ok=True)
    info = {"case": case, "mode": mode, "turns": []}
    serve_proc = None
    with ScriptedOpencode([SUMMARIES[case]]) as srv:
        compaction_url = srv.url_of("compaction")
        if mode == "serve":
            sport = free_port()
            senv = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / ".local/share"),
                        GUARD_PROVIDER="openai", GUARD_BASE_URL=compaction_url, GUARD_MODEL=oc.COMPACTION_MODEL,
                        OPENAI_API_KEY="sk-scripted-not-a-key")
            serve_proc = subprocess.Popen([sys.executable, str(ROOT / "guard.py"), "serve", "--agent", "opencode",
                                           "--port", str(sport), "--set", "chain_deadline_seconds=30",
                                           "--set", "breaker_threshold=1000"],
                                          stdout=open(out / "serve.log", "w"), stderr=subprocess.STDOUT, env=senv,
                                          start_new_session=True)
            if not wait_healthz(sport, 30):
                raise TimeoutError("serve did not answer")
        if mode == "serve":
            # the README's opencode.json, as written there, its port the one serve listens on
            cfg = oc.config(srv.url_of("main"))
            readme = (ROOT / "README.md").read_text(encoding="utf-8")
            block = readme[readme.index("## Behind opencode"):]
            snippet = json.loads(block[block.index("```json") + 7:block.index("```", block.index("```json") + 7)]
                                 .replace("127.0.0.1:8742", f"127.0.0.1:{sport}"))
            cfg["provider"].update(snippet["provider"])
            cfg["agent"] = snippet["agent"]
            env = oc.env_for(home, srv.url_of("main"), cfg=cfg)
        else:
            env = oc.env_for(home, srv.url_of("main"), compaction_url)
        if mode == "offline":
            # as a user's machine has it: nothing of npm's in the config directory (env_for linked the
            # real SDK there for the other modes); the guard's install marks the SDK for opencode
            cfgdir = home / ".config" / "opencode"
            for name in ("package.json", "package-lock.json", "node_modules"):
                if (cfgdir / name).is_symlink() or (cfgdir / name).is_file():
                    (cfgdir / name).unlink()
        if mode in ("plugin", "manual", "offline"):
            inst = subprocess.run([sys.executable, str(ROOT / "guard.py"), "install", "opencode", "--format", "json"]
                                  + (["--offline"] if mode == "offline" else []),
                                  env=env, capture_output=True, text=True, timeout=60)
            info["install"] = {"rc": inst.returncode, "stdout": inst.stdout, "stderr": inst.stderr}
        session = None

        def turn(text: str) -> None:
            nonlocal session
            t0 = time.monotonic()
            r = oc.run(binary, work, env, text, session=session, timeout=180)
            session = session or r["session"]
            info["turns"].append({"rc": r["returncode"], "stderr": r["stderr"][-1500:],
                                  "seconds": round(time.monotonic() - t0, 1)})

        try:
            turn(first_message(True))
            turn("Noted the log? Reply OK.")
            if mode == "manual":
                port = free_port()
                serve = oc.Serve(binary, work, env, port)
                try:
                    serve.wait(90)
                    info["summarize"] = serve.call("POST", f"/session/{session}/summarize",
                                                   {"providerID": oc.PROVIDER, "modelID": oc.MODEL, "auto": False},
                                                   timeout=150)
                finally:
                    info["serve_output"] = serve.stop()[-3000:]
                turn("Which ticket and branch did I mention?")
            else:
                srv.next_turn_prompt_tokens = OVER
                turn("Which ticket and branch did I mention?")
            turn("What was the config constant, and in which file?")
        finally:
            if serve_proc is not None:
                os.killpg(serve_proc.pid, signal.SIGTERM)
                serve_proc.wait(timeout=30)
        requests = list(srv.requests)
    info["session"] = session
    kinds = [q["kind"] for q in requests]
    info["kinds"] = kinds
    last = max((i for i, k in enumerate(kinds) if k == "compaction"), default=None)
    info["after"] = [] if last is None else [
        {"system": [_texts(m) for m in q["body"].get("messages") or [] if m.get("role") == "system"],
         "texts": [(m.get("role"), _texts(m)) for m in q["body"].get("messages") or [] if m.get("role") != "system"]}
        for q in requests[last + 1:] if q["kind"] == "turn"]
    info["compaction_answers"] = [q.get("answered", "")[:200] for q in requests if q["kind"] == "compaction"]
    info["stored"] = stored(oc.db_path(home))
    log = home / ".local" / "share" / "opencode" / "compaction-guard" / "hook.log"
    info["hook_log"] = log.read_text() if log.exists() else ""
    (out / "run.json").write_text(json.dumps(info, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
