#!/usr/bin/env python3
"""Record what the real lossless-claw (1.0.0-beta.4) writes inside the real OpenClaw 2026.9.6 gateway.

    unshare -n sh -c 'ip link set lo up && python3 record.py [case ...]'

cases: good loop preamble oversized empty empty500 (default: all). Per case: a throwaway home under
/tmp/lcmrec/<case>/ ($LCM_REC_WORK), two scripted OpenAI-compatible servers on 127.0.0.1 (tests/modelkit/openai_chat.py, ScriptedLosslessClaw:
`main` for the agent, `summ` for lossless-claw's summaryModel), the plugin (plugin/, made ready by
setup_plugin.sh) installed with `openclaw plugins install --link`, the gateway, TURNS user turns (the deferred background worker summarizes), then a forced
`openclaw sessions compact <key>` and one more turn. After the gateway stopped: data/<case>/lcm.db*
(copied whole), data/<case>-requests.json, data/<case>-gateway.log (lcm/compaction lines),
data/<case>-rows.json (the rows read back), data/manifest.json.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]         # this recipe, and tests/ (the scripted-model kit)
from modelkit.openai_chat import ScriptedLosslessClaw, lossless_inner as inner  # noqa: E402

DATA = HERE / "data"
WORK = Path(os.environ.get("LCM_REC_WORK") or "/tmp/lcmrec")       # throwaway homes, never in the repository


def plugin_dir() -> Path:
    """The real plugin, built at the pinned commit (plugin/, setup_plugin.sh), ready in the cache."""
    return Path(subprocess.run([str(HERE / "setup_plugin.sh")], capture_output=True, text=True,
                               check=True).stdout.strip().splitlines()[-1])
KEY = "agent:main:lcm"
COMMIT = "a0a20bae231ed643a92b00d7a1cf468598942eea"

TURNS = [
    "Deploy release v2.4.1 to staging-3; the ticket is OPS-4412. Keep the rollout at 10 percent for the first hour "
    "and page the on-call if the error rate exceeds 2 percent. The release notes live in docs/release-2.4.1.md.",
    "The database host is db-7.internal:5432 and it must stay read-only during the rollout. Replication lag must "
    "stay under 5 seconds; if it grows beyond that, pause the rollout and tell me before doing anything else.",
    "Edit config/rollout.yaml so that canary_percent is 10 and max_error_rate is 0.02, then commit it on the branch "
    "release/2.4.1 with the message 'OPS-4412: canary settings'. Do not push to main.",
    "The smoke test suite is tests/smoke/test_checkout.py; run it against staging-3 with the flag --env=staging-3 "
    "and report the pass count. Yesterday 41 of 43 passed; the two failures were flaky payment timeouts.",
    "Marta Okafor from the payments team owns the flaky tests; open a follow-up ticket PAY-2210 for her with the "
    "failing test names, and mention that the timeout is 30 seconds in tests/smoke/conftest.py.",
    "After the smoke tests, raise the canary to 50 percent only if the error rate is below 1 percent for 30 "
    "minutes. Record the decision with its timestamp in the ticket OPS-4412 so the audit trail is complete.",
    "We decided against a blue-green switch for this release because the load balancer lb-east-2 cannot hold two "
    "full pools; keep the canary approach. Note that the change freeze starts Friday at 18:00 UTC.",
    "Finally, prepare a rollback plan: revert to v2.4.0, restore config/rollout.yaml from the previous commit, and "
    "purge the CDN cache for assets.example.com. Keep the plan in docs/rollback-2.4.1.md.",
    "Summarize for me which of these steps are done, which are pending, and what still blocks the 50 percent step.",
    "One more constraint: nobody may touch db-7 schema migrations until OPS-4412 is closed.",
    "The error rate on staging-3 is now 0.4 percent after 35 minutes, so the 50 percent step is allowed; go ahead.",
    "Marta says PAY-2210 is fixed by raising the timeout to 45 seconds in tests/smoke/conftest.py; rerun the suite.",
    "The rerun passed 43 of 43. Close PAY-2210 and note the result in OPS-4412.",
    "Schedule the production rollout of v2.4.1 for Thursday 10:00 UTC, before the Friday change freeze.",
]

# the facts a good summary keeps, by a key that appears in the text summarized
FACTS = [
    ("first hour", "Deploy v2.4.1 to staging-3 under ticket OPS-4412, canary at 10 percent for the first hour; page on-call above 2 percent errors."),
    ("release-2.4.1.md", "Release notes: docs/release-2.4.1.md."),
    ("db-7.internal", "db-7.internal:5432 stays read-only during the rollout; pause and report if replication lag exceeds 5 seconds."),
    ("canary_percent is", "config/rollout.yaml: canary_percent 10, max_error_rate 0.02, to be committed on release/2.4.1 ('OPS-4412: canary settings'); no push to main."),
    ("test_checkout.py", "Smoke suite tests/smoke/test_checkout.py runs with --env=staging-3; yesterday 41/43 passed (2 flaky payment timeouts)."),
    ("Marta Okafor from", "Follow-up PAY-2210 for Marta Okafor (payments) on the flaky tests; timeout is 30 s in tests/smoke/conftest.py."),
    ("only if the error rate", "Raise the canary to 50 percent only after 30 minutes below 1 percent errors; log the decision in OPS-4412."),
    ("lb-east-2", "Blue-green rejected (lb-east-2 cannot hold two pools); canary approach kept. Change freeze Friday 18:00 UTC."),
    ("v2.4.0", "Rollback plan in docs/rollback-2.4.1.md: revert to v2.4.0, restore config/rollout.yaml, purge the CDN cache for assets.example.com."),
    ("schema migrations", "No db-7 schema migrations until OPS-4412 is closed."),
    ("0.4 percent", "Staging-3 error rate 0.4 percent after 35 minutes: 50 percent canary step approved."),
    ("45 seconds", "PAY-2210 fixed by raising the timeout to 45 s in tests/smoke/conftest.py; rerun requested."),
    ("43 of 43", "Rerun passed 43/43; PAY-2210 to be closed, result noted in OPS-4412."),
    ("Thursday 10:00", "Production rollout of v2.4.1 scheduled Thursday 10:00 UTC, before the Friday freeze."),
]
FILES = ["docs/release-2.4.1.md", "config/rollout.yaml", "tests/smoke/test_checkout.py", "tests/smoke/conftest.py",
         "docs/rollback-2.4.1.md"]

LOOP = "The deployment of v2.4.1 to staging-3 is tracked in ticket OPS-4412. " * 60
PREAMBLE = "Let me read the notes file first."


def good(kind: str, prompt: str) -> str:
    text = inner(prompt)
    facts = [f for k, f in FACTS if k in text]
    if not facts:
        facts = ["The conversation segment holds assistant acknowledgements only; no new decisions."]
    files = [f for f in FILES if f in text]
    if kind.startswith("leaf"):
        # short: a good leaf is well under its source (lossless-claw sizes leaves by chars/4)
        facts = [f.split(";")[0].split(":")[0].rstrip(".") + "." for f in facts][:2 if kind == "leaf-normal" else 1]
        body = " ".join(facts)
        ftxt = ("Files: " + ", ".join(f"{f} (mentioned)" for f in files[:2])) if files else "Files: none"
        return f"{body}\n{ftxt}\nExpand for details about: acknowledgements, exact wording"
    short = [f.split(";")[0].split(":")[0].split(",")[0].rstrip(".") for f in facts][:3]
    return (f"Timeline (UTC): ~03:00 {'; '.join(short)}.\n"
            "Expand for details about: file paths, thresholds, acknowledgements")


def oversized(kind: str, prompt: str) -> str:
    text = inner(prompt)
    words = [w for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9._:/-]{3,}", text)] or ["rollout"]
    out, i = [], 0
    while sum(len(s) + 1 for s in out) < 5 * len(text):
        w = words[i % len(words)]
        out.append(f"Detail {i + 1}: the segment mentions {w}, which is recorded here in full together with its "
                   f"surrounding context so that nothing about {w} is lost in later turns.")
        i += 1
    return " ".join(out)


RESPONDERS = {
    "good": lambda k, p: (200, good(k, p)),
    "loop": lambda k, p: (200, LOOP),
    "preamble": lambda k, p: (200, PREAMBLE),
    "oversized": lambda k, p: (200, oversized(k, p)),
    "empty": lambda k, p: (200, ""),
    "empty500": lambda k, p: (500, ""),
}


_turns = {"n": 0}


def turn_reply(body: dict) -> str:
    """A short, distinct assistant reply (identical replies would be deduplicated by lossless-claw)."""
    texts = []
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            c = m.get("content")
            t = c if isinstance(c, str) else " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            t = re.sub(r"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>.*?<<<END_OPENCLAW_INTERNAL_CONTEXT>>>", "", t, flags=re.S)
            t = re.sub(r"\s+", " ", t).strip()
            if t:
                texts.append(t)
    _turns["n"] += 1
    last = texts[-1] if texts else ""
    first = re.split(r"(?<=[.;])\s", last)[0][:160]
    return (f"Step {_turns['n']} noted: {first} I will keep the earlier constraints, act on this next, "
            "and report back with concrete results.")


def openclaw_install() -> Path:
    return Path(subprocess.run([str(HERE.parents[2] / "scripts" / "setup_openclaw.sh")], capture_output=True, text=True,
                               check=True).stdout.strip().splitlines()[-1])


def env_for(home: Path, oc: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "GUARD_", "LCM_"))}
    env.update(OPENCLAW_HOME=str(home), HOME=str(home), OPENCLAW_STATE_DIR=str(home / ".openclaw"), PATH=f"{oc / 'node-bin'}:{env.get('PATH', '')}", OPENCLAW_NO_AUTO_UPDATE="1",
               OPENCLAW_DISABLE_UPDATE_CHECK="1", NO_COLOR="1", TZ="UTC")
    return env


def openclaw(oc: Path, home: Path, *args, timeout=240):
    return subprocess.run([str(oc / "node-bin" / "node"), str(oc / "node_modules/openclaw/openclaw.mjs"), *map(str, args)],
                          capture_output=True, text=True, env=env_for(home, oc), timeout=timeout)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_entry(mid, name, ctx, max_tokens):
    return {"id": mid, "name": name, "reasoning": False, "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": ctx, "maxTokens": max_tokens}


LCM_CONFIG = {
    "freshTailCount": 2,
    "leafChunkTokens": 200,
    "leafMinFanout": 2,
    "leafTargetTokens": 192,
    "condensedMinFanout": 2,
    "condensedMinFanoutHard": 2,
    "condensedTargetTokens": 60,
    "contextThreshold": 0.01,
    "sweepMaxDepth": -1,
    "summaryModel": "summ/summarizer",
    "summaryTimeoutMs": 30000,
}


def config(main_port, summ_port, gport, workspace) -> dict:
    return {
        "agents": {"defaults": {"model": {"primary": "scripted/scripted"}, "workspace": str(workspace)}},
        "models": {"mode": "replace", "catalogRefresh": {"enabled": False}, "providers": {
            "scripted": {"baseUrl": f"http://127.0.0.1:{main_port}/v1", "apiKey": "sk-scripted-not-a-key",
                         "api": "openai-completions", "models": [model_entry("scripted", "Scripted", 32000, 2048)]},
            "summ": {"baseUrl": f"http://127.0.0.1:{summ_port}/v1", "apiKey": "sk-summ-not-a-key",
                     "api": "openai-completions", "models": [model_entry("summarizer", "Summarizer", 32000, 4096)]}}},
        "gateway": {"mode": "local", "bind": "loopback", "port": gport, "auth": {"mode": "none"}},
        "update": {"checkOnStart": False},
    }


class Gateway:
    def __init__(self, oc, home, port, log):
        self.log = log
        self.proc = subprocess.Popen([str(oc / "node-bin" / "node"), str(oc / "node_modules/openclaw/openclaw.mjs"),
                                      "gateway", "run", "--port", str(port), "--bind", "loopback"],
                                     stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env_for(home, oc),
                                     start_new_session=True)

    def text(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, pattern, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if re.search(pattern, self.text()):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.3)
        return False

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_quiet(log: list, lock, seconds=4.0, limit=90.0):
    """Wait until no summarization request arrived for `seconds` (the background worker settles)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        with lock:
            last = max((q["t"] for q in log if q["kind"] != "turn"), default=0)
        if time.time() - last > seconds:
            return
        time.sleep(0.5)


def read_rows(db: Path) -> dict:
    """The tables named in the brief, read from a copy (the copy keeps the original untouched)."""
    out = {}
    tmp = db.parent / ".readcopy"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    for s in ("", "-wal", "-shm"):
        if Path(f"{db}{s}").exists():
            shutil.copyfile(f"{db}{s}", tmp / f"lcm.db{s}")
    con = sqlite3.connect(tmp / "lcm.db")
    con.row_factory = sqlite3.Row
    tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    out["tables"] = tables
    for t in ("summaries", "summary_parents", "summary_messages", "pending_summary_nodes", "conversations",
              "context_items"):
        if t in tables:
            out[t] = [dict(r) for r in con.execute(f"SELECT * FROM {t}")]
    if "messages" in tables:
        out["messages"] = [dict(r) for r in con.execute(
            "SELECT message_id, conversation_id, seq, role, token_count, substr(content,1,120) AS content_head FROM messages")]
    con.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_case(case: str, oc: Path) -> dict:
    work = WORK / case
    shutil.rmtree(work, ignore_errors=True)
    home = work / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    log, lock = [], threading.Lock()
    responder = RESPONDERS[case]
    main = ScriptedLosslessClaw("main", responder, log, lock, turn_reply)
    summ = ScriptedLosslessClaw("summ", responder, log, lock, turn_reply)
    gport = free_port()
    cfg = config(main.port, summ.port, gport, home / "workspace")
    (state / "openclaw.json").write_text(json.dumps(cfg, indent=2))
    cmds = []
    plugin = plugin_dir()
    r = openclaw(oc, home, "plugins", "install", "--force", "--accept-capabilities", "--link", plugin)
    cmds.append({"cmd": "openclaw plugins install --force --accept-capabilities --link <setup_plugin.sh's directory>",
                 "rc": r.returncode})
    assert r.returncode == 0, r.stdout + r.stderr
    cfg = json.loads((state / "openclaw.json").read_text())
    entry = cfg["plugins"]["entries"]["lossless-claw"]
    entry["hooks"] = {"allowConversationAccess": True}
    entry["llm"] = {"allowModelOverride": True, "allowedModels": ["summ/summarizer"]}
    entry["config"] = dict(LCM_CONFIG)
    (state / "openclaw.json").write_text(json.dumps(cfg, indent=2))
    gw = Gateway(oc, home, gport, work / "gateway.log")
    t0 = time.time()
    try:
        assert gw.wait_for(r"\[gateway\] ready", 120), gw.text()[-3000:]
        for i, m in enumerate(TURNS[:10]):
            main.phase = summ.phase = f"turn-{i + 1}"
            r = openclaw(oc, home, "agent", "--session-key", KEY, "--message", m)
            cmds.append({"phase": main.phase, "cmd": "openclaw agent --session-key KEY --message ...",
                         "rc": r.returncode, "out": (r.stdout + r.stderr)[-400:]})
            print(f"[{case}] {main.phase} rc={r.returncode} reqs={len(log)}", flush=True)
            wait_quiet(log, lock, 3.0, 60)
        main.phase = summ.phase = "forced-compact"
        r = openclaw(oc, home, "sessions", "compact", KEY)
        cmds.append({"phase": "forced-compact", "cmd": f"openclaw sessions compact {KEY}", "rc": r.returncode,
                     "out": (r.stdout + r.stderr)[-1500:]})
        print(f"[{case}] forced rc={r.returncode} {(r.stdout + r.stderr)[-300:]!r}", flush=True)
        wait_quiet(log, lock, 4.0, 60)
        for i, m in enumerate(TURNS[10:]):
            main.phase = summ.phase = f"turn-{11 + i}"
            r = openclaw(oc, home, "agent", "--session-key", KEY, "--message", m)
            cmds.append({"phase": main.phase, "cmd": "openclaw agent --session-key KEY --message ...",
                         "rc": r.returncode, "out": (r.stdout + r.stderr)[-400:]})
            print(f"[{case}] {main.phase} rc={r.returncode} reqs={len(log)}", flush=True)
            wait_quiet(log, lock, 3.0, 60)
        main.phase = summ.phase = "forced-compact-2"
        r = openclaw(oc, home, "sessions", "compact", KEY)
        cmds.append({"phase": "forced-compact-2", "cmd": f"openclaw sessions compact {KEY}", "rc": r.returncode,
                     "out": (r.stdout + r.stderr)[-1500:]})
        print(f"[{case}] forced-2 rc={r.returncode} {(r.stdout + r.stderr)[-300:]!r}", flush=True)
        wait_quiet(log, lock, 4.0, 60)
        main.phase = summ.phase = "shutdown"
    finally:
        gw.stop()
        main.close()
        summ.close()
    # copy the store whole, as the gateway left it
    out = DATA / case
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for s in ("", "-wal", "-shm"):
        src = state / f"lcm.db{s}"
        if src.exists():
            shutil.copyfile(src, out / f"lcm.db{s}")
    (DATA / f"{case}-requests.json").write_text(json.dumps(log, indent=1, ensure_ascii=False))
    full = gw.text()
    (work / "gateway.full.log").write_text(full)
    keep = [ln for ln in full.splitlines()
            if re.search(r"lcm|lossless|compact|summar|context.?engine|plugin|error|warn|\[gateway\] ready", ln, re.I)]
    (DATA / f"{case}-gateway.log").write_text("\n".join(keep) + "\n")
    rows = read_rows(state / "lcm.db") if (state / "lcm.db").exists() else {}
    try:                     # lossless-claw's own log (/tmp/openclaw/lossless-claw-<date>.log), cut to this case
        from extract_lcm_log import extract
        extract(case)
    except Exception as e:   # noqa: BLE001
        print(f"[{case}] lcm log not extracted: {e}", flush=True)
    (DATA / f"{case}-rows.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False, default=str))
    kinds = {}
    for q in log:
        kinds[f"{q['server']}:{q['phase']}:{q['kind']}"] = kinds.get(f"{q['server']}:{q['phase']}:{q['kind']}", 0) + 1
    return {"case": case, "seconds": round(time.time() - t0, 1), "commands": cmds, "requests_by_server_phase_kind": kinds,
            "summaries": [{k: s[k] for k in ("summary_id", "kind", "depth", "token_count", "source_message_token_count",
                                             "descendant_token_count", "model") if k in s}
                          | {"content_head": s.get("content", "")[:100]} for s in rows.get("summaries", [])],
            "files": sorted(p.name for p in out.iterdir())}


def main(argv):
    cases = argv or list(RESPONDERS)
    oc = openclaw_install()
    DATA.mkdir(exist_ok=True)
    mf = DATA / "manifest.json"
    manifest = json.loads(mf.read_text()) if mf.exists() else {}
    manifest.update({"lossless_claw": {"version": "1.0.0-beta.4", "branch": "next/1.0", "commit": COMMIT},
                     "openclaw": "2026.9.6", "session_key": KEY, "turns": TURNS, "lcm_config": LCM_CONFIG,
                     "recipe": "unshare -n sh -c 'ip link set lo up && python3 record.py <case>'"})
    manifest.setdefault("cases", {})
    for case in cases:
        res = run_case(case, oc)
        manifest["cases"][case] = res
        mf.write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
        print(json.dumps(res["summaries"], indent=1)[:3000], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
