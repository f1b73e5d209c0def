"""Record real Codex CLI 0.171.0 compactions (good and degenerate) into data/.

    python3 record.py [case ...]        # all cases when none given; `--list` to list them

Re-executes itself under `unshare -n` (a network namespace with only loopback, brought up with
`ip link set lo up`) so Codex cannot reach the internet; the scripted Responses server runs in the same
namespace. Each case gets its own throwaway HOME / CODEX_HOME under /tmp. Writes, per case:
  data/<case>.jsonl                 the rollout (Codex's store, copied whole)
  data/request-<case>.json          the compaction request(s) Codex sent (headers without keys)
  data/after-<case>.json            the next turn's request after the compaction (what the model saw; tools elided)
  data/hook-<case>-<Event>.json     stdin of the PreCompact / PostCompact hooks (+ SessionStart/UserPromptSubmit
                                    for the injection case)
  data/stderr-<case>.txt            stderr of the Codex process that compacted (the WARN for a dropped summary)
  data/manifest.json                per case: commands, exit codes, thread id, what was found
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]         # this recipe, and tests/ (the scripted-model kit)
from codex_real import AppServer, binary, env_for, rollout_for, run, write_config  # noqa: E402
from modelkit.base import HTTP_500, NO_MESSAGE  # noqa: E402
from modelkit.responses import ScriptedResponses  # noqa: E402

DATA = HERE / "data"
CORPUS = Path("/work/main/tests/corpus/real/openclaw_histories.jsonl")
MODEL = "gpt-5.5"            # a slug the binary knows (its bundled catalogue), so no fallback-metadata warnings
WINDOW = 100_000             # model_context_window for the automatic cases
THRESHOLD = 80               # model_post_turn_compact_threshold_percent
HIGH = 90_000                # input_tokens the server reports on the turn that should trigger compaction
PRETURN_HIGH = 99_000        # pre-turn cases: over the effective window (95 % of WINDOW), no post-turn threshold
EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "PostCompact", "Stop", "PostToolUse")

INTRO = "Keep deploy ticket OPS-4411 and branch release/2.7 in mind."
LONG_T1 = (INTRO + " The config constant is MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts. "
           "Here is the incident log:\n")
T2 = "Noted the log? Reply OK."
T2_TOOL = "Noted the log? Run `cat notes.txt` (RUN_TOOL) and reply OK."   # injection cases: a real tool call
T3 = ("Next: should MAX_RETRY_BACKOFF_MS be lowered to 30000 on release/2.7? "
      "Just note the question for now; we decide after the log review.")
T4 = "What was the deploy ticket, and what did I ask last?"

GOOD_LONG = """## Current progress and key decisions
- The user shared the incident log of SUP-82841 (Cloud Storage writes failing for the service account; comments mention `gcloud edge-cloud networking subnets list`, `--update-labels`, `parallel=N`) for review. I acknowledged it; no changes made yet.

## Important context, constraints, preferences
- Keep deploy ticket OPS-4411 and branch release/2.7 in mind.
- Config constant MAX_RETRY_BACKOFF_MS=45000, defined in src/deploy/retry.ts.

## What remains (next steps)
- The user's latest ask: should MAX_RETRY_BACKOFF_MS be lowered to 30000 on release/2.7? Only note it for now; decide after the log review.

## Critical references
- OPS-4411, release/2.7, MAX_RETRY_BACKOFF_MS=45000, src/deploy/retry.ts, SUP-82841."""

GOOD_SHORT = """## Current progress and key decisions
- No work done yet; the user set context only.

## Important context, constraints, preferences
- Keep deploy ticket OPS-4411 and branch release/2.7 in mind.

## What remains (next steps)
- The user's latest ask: should MAX_RETRY_BACKOFF_MS be lowered to 30000 on release/2.7? Only note it for now; decide after the log review.

## Critical references
- OPS-4411, release/2.7, MAX_RETRY_BACKOFF_MS."""

PREAMBLE = "Let me read the notes file first."
LOOP = "The user asked about the deploy ticket and I said I would check it. " * 60
LANGUAGE = """## Progreso actual y decisiones clave
- El usuario compartió el registro del incidente SUP-82841 (fallan las escrituras en Cloud Storage de la cuenta de servicio; los comentarios mencionan `gcloud edge-cloud networking subnets list`, `--update-labels`, `parallel=N`) para revisarlo. Lo confirmé; todavía no hay cambios.

## Contexto importante y restricciones
- Tener presente el ticket de despliegue OPS-4411 y la rama release/2.7.
- La constante de configuración MAX_RETRY_BACKOFF_MS=45000 está en src/deploy/retry.ts.

## Lo que queda por hacer
- Última petición del usuario: ¿reducir MAX_RETRY_BACKOFF_MS a 30000 en release/2.7? Solo anotarlo; se decide tras revisar el registro.

## Referencias críticas
- OPS-4411, release/2.7, MAX_RETRY_BACKOFF_MS=45000, src/deploy/retry.ts, SUP-82841."""
# what Codex 0.171.0 sent as its summarization prompt (the last input item of the compaction request,
# observed); record.py uses the one recorded in the good case when it is there
ECHO_FALLBACK = ("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that "
                 "will resume the task.\n\nInclude:\n- Current progress and key decisions made\n- Important context, "
                 "constraints, or user preferences\n- What remains to be done (clear next steps)\n- Any critical data, "
                 "examples, or references needed to continue\n\nBe concise, structured, and focused on helping the next "
                 "LLM seamlessly continue the work.\n")

# name: (summary, long conversation?, mode, inject)
CASES = {
    "good-auto": (GOOD_LONG, True, "auto", False),
    "good-short-auto": (GOOD_SHORT, False, "auto", False),
    "preamble-auto": (PREAMBLE, True, "auto", False),
    "preamble-short-auto": (PREAMBLE, False, "auto", False),
    "loop-auto": (LOOP, True, "auto", False),
    "empty-auto": ("", True, "auto", False),
    "whitespace-auto": ("   \n", True, "auto", False),
    "echo-auto": (None, True, "auto", False),
    "language-auto": (LANGUAGE, True, "auto", False),
    "good-manual": (GOOD_LONG, True, "manual", False),
    "preamble-manual": (PREAMBLE, True, "manual", False),
    "empty-manual": ("", True, "manual", False),
    "whitespace-manual": ("   \n", True, "manual", False),
    "good-short-manual": (GOOD_SHORT, False, "manual", False),
    "inject-auto": (PREAMBLE, True, "auto", True),
    "inject-manual": (PREAMBLE, True, "manual", True),
    # automatic compaction at the start of the next turn (model_auto_compact_token_limit, phase "pre_turn")
    "good-preturn": (GOOD_LONG, True, "preturn", False),
    "empty-preturn": ("", True, "preturn", False),
    "whitespace-preturn": ("   \n", True, "preturn", False),
    "nomessage-preturn": (NO_MESSAGE, True, "preturn", False),
    "inject-preturn": (PREAMBLE, True, "preturn", True),
    # agent-specific: the compaction response holds no output item at all (only response.completed), or fails
    "nomessage-auto": (NO_MESSAGE, True, "auto", False),
    "nomessage-manual": (NO_MESSAGE, True, "manual", False),
    "error-auto": (HTTP_500, True, "auto", False),
    "error-manual": (HTTP_500, True, "manual", False),
}


def incident_log(tokens: int = 6000) -> str:
    rows = [json.loads(x) for x in open(CORPUS, encoding="utf-8")]
    text = "\n\n".join(r["text"] for r in rows if r["lang"] == "en")
    while len(text) < tokens * 4:
        text += "\n\n" + text
    return text[:tokens * 4]


def reexec_in_netns() -> None:
    if os.environ.get("CODEX_REC_NETNS") == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    env = dict(os.environ, CODEX_REC_NETNS="1")
    os.execvpe("unshare", ["unshare", "-n", sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]], env)


def hooks_json(log: Path, inject: bool) -> dict:
    rec = HERE / "hook_recorder.py"
    return {"hooks": {ev: [{"hooks": [{"type": "command",
                                       "command": f"python3 {rec} {ev} {log}" + (" inject" if inject else ""),
                                       "timeout": 10}]}] for ev in EVENTS}}


def trust_hooks(b: Path, work: Path, env: dict, codex_home: Path) -> list:
    """Persist hook trust as Codex does: ask `hooks/list` (app-server) for each hook's key and currentHash, then
    write `[hooks.state."<key>"] trusted_hash = "<currentHash>"` into config.toml."""
    a = AppServer(b, work, env)
    try:
        a.call("initialize", {"clientInfo": {"name": "codex-rec", "version": "0"}, "capabilities": {"experimentalApi": True}})
        a.send("initialized", notify=True)
        listed = a.call("hooks/list", {"cwds": [str(work)]})
    finally:
        a.close()
    hooks = [h for entry in listed["data"] for h in entry["hooks"]]
    extra = "".join(f'\n[hooks.state."{h["key"]}"]\ntrusted_hash = "{h["currentHash"]}"\n' for h in hooks)
    with open(codex_home / "config.toml", "a", encoding="utf-8") as fh:
        fh.write(extra)
    return [{"key": h["key"], "trustStatus_before": h["trustStatus"], "currentHash": h["currentHash"]} for h in hooks]


def manual_compact(b: Path, work: Path, env: dict, thread: str, timeout: float = 60, then: str | None = None) -> dict:
    """thread/compact/start through `codex app-server`; with `then`, one more turn (turn/start) in the same
    process after the compaction."""
    a = AppServer(b, work, env)
    out = {"argv": [str(b), "app-server"], "rpc": ["initialize", "initialized", "thread/resume", "thread/compact/start"]}

    def compaction_done(m):
        # turn/completed is not always emitted for a standalone compaction turn (seen missing in 2 of 5 runs);
        # the thread going idle after the contextCompaction item completed is the other end marker
        if m.get("method") in ("turn/completed", "error"):
            return True
        done_items = [x for x in a.messages if x.get("method") == "item/completed"
                      and (x.get("params") or {}).get("item", {}).get("type") == "contextCompaction"]
        return bool(done_items) and m.get("method") == "thread/status/changed" and \
            (m.get("params") or {}).get("status", {}).get("type") == "idle"

    try:
        a.call("initialize", {"clientInfo": {"name": "codex-rec", "version": "0"}, "capabilities": {"experimentalApi": True}})
        a.send("initialized", notify=True)
        a.call("thread/resume", {"threadId": thread})
        out["compact_result"] = a.call("thread/compact/start", {"threadId": thread})
        done = a.read_until(compaction_done, timeout)
        out["ended_by"] = done.get("method")
        time.sleep(0.5)
        if then:
            out["rpc"].append("turn/start")
            a.call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": then}]})
            a.read_until(lambda m: m.get("method") == "turn/completed", timeout)
            time.sleep(0.5)
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        out["error"] = repr(e)[:1500]
    finally:
        out["stderr"] = a.close()
    out["notifications"] = [m.get("method") for m in a.messages if "method" in m]
    out["compaction_items"] = [m["params"]["item"] for m in a.messages
                               if m.get("method") in ("item/started", "item/completed")
                               and (m.get("params") or {}).get("item", {}).get("type") == "contextCompaction"]
    out["hook_runs"] = [{k: m["params"]["run"].get(k) for k in ("eventName", "status", "entries")}
                        for m in a.messages if m.get("method") == "hook/completed"]
    out["errors"] = [m for m in a.messages if m.get("method") in ("error", "warning") or "error" in m]
    return out


def slim_request(r: dict, drop_tools: bool) -> dict:
    body = dict(r["body"] or {})
    if drop_tools and isinstance(body.get("tools"), list) and body["tools"]:
        body["tools"] = f"<{len(r['body']['tools'])} tool definitions omitted>"
    return {"method": r["method"], "path": r["path"], "kind": r["kind"], "headers": r["headers"], "body": body}


def clean_stderr(text: str) -> str:
    # drop the two environment notices every run prints (no network, /tmp home); keep everything else
    keep = [ln for ln in text.splitlines() if "curated plugin sync" not in ln and "could not create PATH aliases" not in ln]
    return "\n".join(keep) + ("\n" if keep else "")


def run_case(name: str, b: Path, echo_prompt: str) -> dict:
    summary, long, mode, inject = CASES[name]
    if summary is None:
        summary = echo_prompt
    home = Path(f"/tmp/codex-rec-{name}")
    shutil.rmtree(home, ignore_errors=True)
    work = home / "work"
    work.mkdir(parents=True)
    (work / "notes.txt").write_text("deploy notes: OPS-4411\n", encoding="utf-8")
    codex_home = home / ".codex"
    log = home / "hooks.jsonl"
    info: dict = {"case": name, "mode": mode, "long": long, "inject": inject, "summary_sent": summary,
                  "runs": []}
    # auto: the turn that should trigger compaction reports HIGH input tokens; others bytes/4
    with ScriptedResponses([summary], input_tokens=0, compaction_input_tokens=0) as srv:
        env = env_for(home, srv.url)
        if mode == "auto":
            write_config(codex_home, srv.url, model=MODEL, context_window=WINDOW, threshold_percent=THRESHOLD)
        elif mode == "preturn":
            # no post-turn threshold: usage over the (95 %) window makes Codex compact at the START of the next turn
            write_config(codex_home, srv.url, model=MODEL, context_window=WINDOW)
        else:
            write_config(codex_home, srv.url, model=MODEL)
        (codex_home / "hooks.json").write_text(json.dumps(hooks_json(log, inject), indent=1), encoding="utf-8")
        bypass = True
        if mode == "manual":
            # app-server has no bypass flag: persist trust the way Codex stores it, then run exec without bypass too
            info["hook_trust"] = trust_hooks(b, work, env, codex_home)
            bypass = False
        first = (LONG_T1 + incident_log()) if long else INTRO
        prompts = [first, T2_TOOL if inject else T2, T3]
        thread = None
        compaction_run = None
        for i, prompt in enumerate(prompts):
            if mode in ("auto", "preturn") and i == len(prompts) - 1:
                srv.input_tokens = HIGH if mode == "auto" else PRETURN_HIGH
            r = run(b, work, env, prompt, resume=thread, bypass_hook_trust=bypass, timeout=120)
            srv.input_tokens = 0
            thread = thread or r["thread_id"]
            info["runs"].append({"argv": [a if len(a) < 200 else a[:80] + "...<prompt elided>" for a in r["argv"]],
                                 "rc": r["rc"], "reported_input_tokens": {"auto": HIGH, "preturn": PRETURN_HIGH}.get(mode, "bytes/4") if i == 2 else "bytes/4"})
            if r["rc"] != 0:
                info["error"] = f"turn {i + 1} exited {r['rc']}: {r['stderr'][-600:]}"
                break
            if mode == "auto" and i == len(prompts) - 1:
                compaction_run = r
        if "error" not in info and mode == "manual":
            n_before_after = len(srv.requests)
            m = manual_compact(b, work, env, thread, then=T4 if inject else None)
            info["manual"] = {k: v for k, v in m.items() if k != "stderr"}
            compaction_run = {"stderr": m["stderr"], "rc": None}
        else:
            n_before_after = len(srv.requests)
        if "error" not in info and not (inject and mode == "manual"):
            r = run(b, work, env, T4, resume=thread, bypass_hook_trust=bypass, timeout=120)
            info["runs"].append({"argv": [a if len(a) < 200 else a[:80] + "..." for a in r["argv"]], "rc": r["rc"],
                                 "reported_input_tokens": "bytes/4", "note": "the turn after the compaction"})
            if mode == "preturn":
                compaction_run = r
            if r["rc"] != 0:
                info["runs"][-1]["stderr_tail"] = clean_stderr(r["stderr"])[-1500:]
                info["runs"][-1]["error_events"] = [e for e in r["events"] if e.get("type") in ("error", "turn.failed")]
        requests = list(srv.requests)
    info["thread_id"] = thread
    info["request_kinds"] = [r["kind"] for r in requests]
    comp = [r for r in requests if r["kind"] == "compaction"]
    after = [r for r in requests[n_before_after:] if r["kind"] == "turn"]
    if comp:
        (DATA / f"request-{name}.json").write_text(
            json.dumps([slim_request(r, False) for r in comp] if len(comp) > 1 else slim_request(comp[0], False),
                       indent=1, ensure_ascii=False), encoding="utf-8")
    if after:
        (DATA / f"after-{name}.json").write_text(json.dumps(slim_request(after[0], True), indent=1, ensure_ascii=False),
                                                 encoding="utf-8")
    if compaction_run is not None:
        (DATA / f"stderr-{name}.txt").write_text(clean_stderr(compaction_run["stderr"]), encoding="utf-8")
    if thread:
        src = rollout_for(codex_home, thread)
        shutil.copyfile(src, DATA / f"{name}.jsonl")
        info["rollout_path"] = str(src)
        lines = [json.loads(x) for x in open(src, encoding="utf-8")]
        info["rollout_types"] = sorted({ln["type"] for ln in lines})
        info["compacted_lines"] = sum(1 for ln in lines if ln["type"] == "compacted")
    info["codex_home_files"] = sorted(str(p.relative_to(codex_home)) for p in codex_home.glob("*") if p.is_file())
    hooks = [json.loads(x) for x in open(log, encoding="utf-8")] if log.exists() else []
    info["hook_events"] = [h["event"] for h in hooks]
    # the transcript's `compacted` line count while each compaction hook ran
    info["compacted_lines_seen_by_hooks"] = [[h["event"], h.get("compacted_lines_seen")] for h in hooks
                                             if h["event"] in ("PreCompact", "PostCompact")]
    wanted = EVENTS if inject else ("PreCompact", "PostCompact")
    for ev in wanted:
        got = [h["stdin"] for h in hooks if h["event"] == ev]
        if got:
            (DATA / f"hook-{name}-{ev}.json").write_text(json.dumps(got if len(got) > 1 else got[0], indent=1,
                                                                    ensure_ascii=False), encoding="utf-8")
    if inject:
        seen = json.dumps([r["body"] for r in requests], ensure_ascii=False)
        info["markers_seen_by_model"] = sorted(set(re.findall(r"GUARD-CTX-[A-Za-z]+(?:-[a-z]+)?", seen)))
        info["post_tool_use_request_has_marker"] = any(
            "GUARD-CTX-PostToolUse" in json.dumps(r["body"]) for r in requests
            if any(i.get("type") == "function_call_output" for i in (r["body"] or {}).get("input", []) if isinstance(i, dict)))
        info["markers_in_after_request"] = sorted(set(re.findall(
            r"GUARD-CTX-[A-Za-z]+(?:-[a-z]+)?", json.dumps([r["body"] for r in after], ensure_ascii=False))))
    return info


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    if "--list" in sys.argv:
        print("\n".join(CASES))
        return 0
    reexec_in_netns()
    b = binary()
    if b is None:
        print("codex is not installed: run ./setup_codex.sh", file=sys.stderr)
        return 2
    DATA.mkdir(exist_ok=True)
    names = args or list(CASES)
    manifest_path = DATA / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest["codex_version"] = subprocess.run([str(b), "--version"], capture_output=True, text=True,
                                               env=env_for(Path("/tmp/codex-rec-version"))).stdout.strip()
    manifest.setdefault("cases", {})
    for name in names:
        echo_prompt = ECHO_FALLBACK
        good = DATA / "request-good-auto.json"
        if good.exists():
            req = json.loads(good.read_text())
            req = req[0] if isinstance(req, list) else req
            echo_prompt = req["body"]["input"][-1]["content"][0]["text"]
        t0 = time.time()
        try:
            info = run_case(name, b, echo_prompt)
        except Exception as e:  # noqa: BLE001 - keep going with the other cases
            info = {"case": name, "error": repr(e)}
        info["seconds"] = round(time.time() - t0, 1)
        manifest["cases"][name] = info
        manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"{name}: compacted_lines={info.get('compacted_lines')} kinds={info.get('request_kinds')} "
              f"hooks={info.get('hook_events')} error={info.get('error')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
