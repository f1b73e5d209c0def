"""Record real Gemini CLI compressions (good and degenerate) into data/.

    python3 record.py [case ...]        (all cases when none given)

Re-executes itself under `unshare -n` (a network namespace with only loopback: Gemini CLI tries the
internet at start), brings `lo` up, and runs each case in its own throwaway HOME under /tmp/gemrec/<case>,
against the kit's ScriptedGemini (tests/modelkit/gemini.py) in the same namespace.

Auto cases (the agent decides on its own):
  run 1: fresh `gemini -p P1`              -> the model asks read_file notes.txt, then answers "Noted."
  run 2: `gemini --resume latest -p P2`    -> first call: tool call; before the second call Gemini CLI sees
         the promptTokenCount reported for the first (realistic: request JSON / 4) >= compressionThreshold
         x 1,048,576 and compresses (two :generateContent calls), then sends the compressed history.
  (On a resume the count starts as Gemini CLI's own estimate of the loaded history, kept below the
  threshold here, so the compression happens mid-run, after the tool call.)
Manual cases: run 2 is `gemini --resume latest -p /compress`.

Writes data/session-<case>.jsonl (the store, whole), data/request-<case>.json (the compression
requests), data/hook-<case>-<Event>.json (hook stdin), data/manifest.json (what happened per case).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TMP = Path("/tmp/gemrec")
CORPUS = HERE.parents[1] / "corpus" / "real" / "openclaw_histories.jsonl"

sys.path[:0] = [str(HERE), str(HERE.parents[1])]         # this recipe, and tests/ (the scripted-model kit)
import gemini_real as g  # noqa: E402
from modelkit.gemini import ScriptedGemini, is_compression, is_verify, system_text  # noqa: E402


def incident_log(tokens: int = 6000) -> str:
    rows = [json.loads(x) for x in open(CORPUS, encoding="utf-8")]
    text = "\n\n".join(r["text"] for r in rows if r["lang"] == "en")
    while len(text) < tokens * 4:
        text += "\n\n" + text
    return text[:tokens * 4]


HEAD = ("Keep deploy ticket OPS-4411 and branch release/2.7 in mind. The config constant is "
        "MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts.")
P1_LONG = HEAD + " Here is the incident log:\n\n" + incident_log(6000)
P1_SHORT = HEAD
P2 = "Now check notes.txt again and tell me whether anything in it contradicts the ticket."

GOOD_LONG = """<state_snapshot>
    <overall_goal>
        Keep deploy ticket OPS-4411 and branch release/2.7 in mind while reviewing the incident log (SUP-82841) the user shared.
    </overall_goal>

    <active_constraints>
        - Deploy ticket: OPS-4411. Branch: release/2.7.
        - Config constant MAX_RETRY_BACKOFF_MS=45000 is defined in src/deploy/retry.ts; do not change it unless asked.
    </active_constraints>

    <key_knowledge>
        - Incident log opens with SUP-82841 (opened by marek@example.com, priority P3): which service account email to use when writing to Cloud Storage.
        - Comments mention `gcloud edge-cloud networking subnets list`, parallel=N and cloud-storage-file-suffix; a status table shows web-2 warn and web-8/web-5 fail.
        - Review comments touch src/gateway/router.ts:129/352 and app/models/user.rb:344.
    </key_knowledge>

    <artifact_trail>
        - `src/deploy/retry.ts`: holds MAX_RETRY_BACKOFF_MS=45000 (not modified).
    </artifact_trail>

    <file_system_state>
        - READ: `notes.txt` - "deploy notes: OPS-4411".
    </file_system_state>

    <recent_actions>
        - Read notes.txt; acknowledged the incident log ("Noted.").
    </recent_actions>

    <task_state>
        1. [DONE] Receive the incident log for OPS-4411 / release/2.7.
        2. [TODO] Answer the user's next question about the log, keeping OPS-4411, release/2.7 and MAX_RETRY_BACKOFF_MS=45000 in mind. <-- CURRENT FOCUS
    </task_state>
</state_snapshot>"""

GOOD_SHORT = """<state_snapshot>
    <overall_goal>
        Keep deploy ticket OPS-4411 and branch release/2.7 in mind for the upcoming deploy work.
    </overall_goal>

    <active_constraints>
        - Deploy ticket: OPS-4411. Branch: release/2.7.
        - Config constant MAX_RETRY_BACKOFF_MS=45000 is defined in src/deploy/retry.ts; do not change it unless asked.
    </active_constraints>

    <key_knowledge>
        - notes.txt says "deploy notes: OPS-4411".
    </key_knowledge>

    <artifact_trail>
        - `src/deploy/retry.ts`: holds MAX_RETRY_BACKOFF_MS=45000 (not modified).
    </artifact_trail>

    <file_system_state>
        - READ: `notes.txt`.
    </file_system_state>

    <recent_actions>
        - Read notes.txt; acknowledged the ticket and branch ("Noted.").
    </recent_actions>

    <task_state>
        1. [TODO] Wait for the user's next deploy request on OPS-4411 / release/2.7. <-- CURRENT FOCUS
    </task_state>
</state_snapshot>"""

SCRATCH = ("<scratchpad>\nThe user wants OPS-4411, release/2.7 and MAX_RETRY_BACKOFF_MS=45000 (src/deploy/retry.ts) "
           "kept; I read notes.txt. Nothing was modified.\n</scratchpad>\n\n")

SPANISH = """<state_snapshot>
    <overall_goal>
        Tener presentes el ticket de despliegue OPS-4411 y la rama release/2.7 mientras se revisa el registro de incidentes (SUP-82841) que compartió el usuario.
    </overall_goal>

    <active_constraints>
        - Ticket de despliegue: OPS-4411. Rama: release/2.7.
        - La constante de configuración MAX_RETRY_BACKOFF_MS=45000 está definida en src/deploy/retry.ts; no cambiarla salvo que se pida.
    </active_constraints>

    <key_knowledge>
        - El registro empieza con SUP-82841 (abierto por marek@example.com, prioridad P3): qué cuenta de servicio usar al escribir en Cloud Storage.
        - Los comentarios mencionan `gcloud edge-cloud networking subnets list`, parallel=N y cloud-storage-file-suffix; una tabla de estado muestra web-2 en aviso y web-8/web-5 en fallo.
    </key_knowledge>

    <artifact_trail>
        - `src/deploy/retry.ts`: contiene MAX_RETRY_BACKOFF_MS=45000 (sin cambios).
    </artifact_trail>

    <file_system_state>
        - LEÍDO: `notes.txt` - "deploy notes: OPS-4411".
    </file_system_state>

    <recent_actions>
        - Se leyó notes.txt; se confirmó la recepción del registro ("Noted.").
    </recent_actions>

    <task_state>
        1. [HECHO] Recibir el registro de incidentes de OPS-4411 / release/2.7.
        2. [PENDIENTE] Responder la próxima pregunta del usuario sobre el registro. <-- FOCO ACTUAL
    </task_state>
</state_snapshot>"""

SKELETON = """<state_snapshot>
    <overall_goal>
    </overall_goal>

    <active_constraints>
    </active_constraints>

    <key_knowledge>
    </key_knowledge>

    <artifact_trail>
    </artifact_trail>

    <file_system_state>
    </file_system_state>

    <recent_actions>
    </recent_actions>

    <task_state>
    </task_state>
</state_snapshot>"""

PREAMBLE = "Let me read the notes file first."
LOOP = "The user asked about the deploy ticket and I said I would check it. " * 60
# larger than the whole history (and than the prompt count Gemini CLI last saw): three copies of the log
INFLATED = "<state_snapshot>\n    <key_knowledge>\n" + "\n".join([incident_log(6000)] * 3) + \
    "\n    </key_knowledge>\n</state_snapshot>"

ECHO = "@echo"          # filled from the recorded good-long request (its system instruction, verbatim)

# name: (size, mode, summaries (1st calls), verifies (2nd calls; None = same text as the 1st), extra)
CASES = {
    "good-long":        ("long", "auto", [SCRATCH + GOOD_LONG], [GOOD_LONG], {"hooks": True}),
    "good-short":       ("short", "auto", [SCRATCH + GOOD_SHORT], [GOOD_SHORT], {"hooks": True}),
    "preamble-long":    ("long", "auto", [PREAMBLE], [None], {}),
    "preamble-short":   ("short", "auto", [PREAMBLE], [None], {}),
    "loop":             ("long", "auto", [LOOP], [None], {}),
    "empty":            ("long", "auto", [""], [None], {"timeout": 300}),
    "whitespace":       ("long", "auto", ["   \n"], [None], {"timeout": 300}),
    "echo":             ("long", "auto", [ECHO], [None], {}),
    "language":         ("long", "auto", [SPANISH], [None], {}),
    "skeleton":         ("long", "auto", [SKELETON], [None], {}),
    "inflated":         ("long", "auto", [INFLATED], [None], {}),
    "bad-then-good":    ("long", "auto", [PREAMBLE], [GOOD_LONG], {}),
    "good-then-bad":    ("long", "auto", [SCRATCH + GOOD_LONG], [PREAMBLE], {}),
    "verify-empty":     ("long", "auto", [SCRATCH + GOOD_LONG], [""], {"timeout": 300}),
    "manual-good":      ("long", "manual", [SCRATCH + GOOD_LONG], [GOOD_LONG], {"hooks": True}),
    "manual-preamble":  ("long", "manual", [PREAMBLE], [None], {}),
    "resume-only":      ("long", "resume", [GOOD_LONG], [None], {}),
    "hook-inject":      ("long", "auto", [SCRATCH + GOOD_LONG], [GOOD_LONG], {"inject": ["BeforeAgent", "BeforeModel"]}),
    # SessionStart additionalContext is prepended to the -p prompt as <hook_context>...: on --resume Gemini CLI
    # drops user messages starting with <hook_context> (or /, ?, <session_context>): the prompt is lost
    "hook-inject-sessionstart": ("long", "auto", [SCRATCH + GOOD_LONG], [GOOD_LONG], {"inject": ["SessionStart"]}),
}
THRESHOLD = {"long": 0.01, "short": 0.005}   # x 1,048,576 tokens (gemini-2.5-flash)
EVENTS = ["SessionStart", "BeforeAgent", "PreCompress", "BeforeModel", "AfterModel", "AfterAgent", "SessionEnd"]

HOOK_RECORDER = r"""#!/usr/bin/env python3
# records one hook event: {"event": <name>, "stdin": <what Gemini CLI sent>} appended to argv[2]
# (one locked write: Gemini CLI can run hooks of different events concurrently, e.g. /compress)
import fcntl, json, sys
data = json.load(sys.stdin)
with open(sys.argv[2], "a") as fh:
    fcntl.flock(fh, fcntl.LOCK_EX)
    fh.write(json.dumps({"event": sys.argv[1], "stdin": data}) + "\n")
"""

# hook-inject: SessionStart/BeforeAgent add context; BeforeModel rewrites a message of the request it is given
INJECTOR = r"""#!/usr/bin/env python3
import fcntl, json, sys
event, log = sys.argv[1], sys.argv[2]
inject = sys.argv[3].split(",") if len(sys.argv) > 3 else []
data = json.load(sys.stdin)
with open(log, "a") as fh:
    fcntl.flock(fh, fcntl.LOCK_EX)
    fh.write(json.dumps({"event": event, "stdin": data}) + "\n")
out = {}
if event not in inject:
    pass
elif event == "BeforeAgent":
    out = {"hookSpecificOutput": {"hookEventName": "BeforeAgent",
           "additionalContext": "GUARD-BEFOREAGENT: the ticket is OPS-4411 <check>"}}
elif event == "SessionStart":
    out = {"hookSpecificOutput": {"hookEventName": "SessionStart",
           "additionalContext": "GUARD-SESSIONSTART: branch release/2.7"}}
elif event == "BeforeModel":
    req = data.get("llm_request") or {}
    msgs = [dict(m) for m in req.get("messages") or []]
    note = "GUARD-BEFOREMODEL: MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts\n"
    # put the note in front of the summary message when there is one (after a compression), else in
    # front of the first message; appending a message instead makes it the newest user turn
    target = next((m for m in msgs if "<state_snapshot>" in str(m.get("content"))), msgs[0] if msgs else None)
    if target is not None:
        target["content"] = note + str(target.get("content"))
    out = {"hookSpecificOutput": {"hookEventName": "BeforeModel", "llm_request": {"messages": msgs}}}
print(json.dumps(out))
"""


def hooks_settings(script: Path, log: Path, events=EVENTS, inject=()) -> dict:
    tail = f" {','.join(inject)}" if inject else ""
    return {e: [{"hooks": [{"type": "command", "command": f"{script} {e} {log}{tail}", "timeout": 30000}]}]
            for e in events}


def trim(obj, limit=3000, keep_system=True):
    """Shorten long strings (not the system instruction) so that fixtures stay small."""
    if isinstance(obj, dict):
        return {k: (v if keep_system and k == "systemInstruction" else trim(v, limit, keep_system))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [trim(v, limit, keep_system) for v in obj]
    if isinstance(obj, str) and len(obj) > limit:
        return obj[:limit] + f"...[trimmed {len(obj) - limit} chars]"
    return obj


def run_case(name: str, echo_text: str | None) -> dict:
    size, mode, summaries, verifies, extra = CASES[name]
    summaries = [echo_text if s == ECHO else s for s in summaries]
    root = TMP / name
    shutil.rmtree(root, ignore_errors=True)
    home, work = root / "home", root / "work"
    (work / "src/deploy").mkdir(parents=True)
    home.mkdir(parents=True)
    (work / "notes.txt").write_text("deploy notes: OPS-4411\n")
    (work / "src/deploy/retry.ts").write_text("export const MAX_RETRY_BACKOFF_MS = 45000;\n")
    hook_log = root / "hooks.jsonl"
    script = root / ("inject.py" if extra.get("inject") else "hook.py")
    script.write_text(INJECTOR if extra.get("inject") else HOOK_RECORDER)
    script.chmod(0o755)
    threshold = 0.9 if mode in ("manual", "resume") else THRESHOLD[size]
    g.write_settings(home, threshold=threshold, hooks=hooks_settings(script, hook_log, inject=extra.get("inject") or ()))
    rec = root / "requests.jsonl"
    p1 = P1_LONG if size == "long" else P1_SHORT
    info = {"case": name, "size": size, "mode": mode, "threshold": threshold, "runs": []}
    with ScriptedGemini(summaries=summaries, verifies=verifies, record=rec) as srv:
        env = g.env_for(home, srv.url)
        prompts = [(p1, [])]
        if mode == "manual":
            prompts.append(("/compress", ["--resume", "latest"]))
        else:
            prompts.append((P2, ["--resume", "latest"]))
        for i, (prompt, args) in enumerate(prompts):
            n_before = len(srv.requests)
            t = time.time()
            try:
                r = g.run(work, env, prompt, *args, timeout=extra.get("timeout", 180), check=False)
                rc, out, err = r["rc"], r["stdout"], r["stderr"]
            except subprocess.TimeoutExpired as e:
                rc, out, err = "timeout", (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), \
                    (e.stderr or b"").decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            reqs = srv.requests[n_before:]
            try:
                parsed = json.loads(out)
                resp = parsed.get("response")
                models = (parsed.get("stats") or {}).get("models") or {}
            except (ValueError, AttributeError):
                resp, models = None, {}
            info["runs"].append({
                "argv": ["gemini", "-p", prompt if len(prompt) < 200 else prompt[:120] + "...", "--output-format",
                         "json", *args],
                "rc": rc, "seconds": round(time.time() - t, 1), "response": resp,
                "stats_tokens": {m: {"total": v.get("tokens"), "roles": {r: x.get("tokens") for r, x in
                                                                          (v.get("roles") or {}).items()}}
                                 for m, v in models.items()},
                "stdout_tail": None if resp is not None else out[-800:],
                "stderr_tail": "\n".join(l for l in err.splitlines() if not l.startswith("Warning: ")
                                         and "Ripgrep" not in l)[-1500:],
                "requests": [("compress-verify" if is_verify(q["body"]) else "compress-summary")
                             if is_compression(q["body"]) else q["path"].split(":")[-1].split("?")[0]
                             for q in reqs],
            })
        info["server_compression_answers"] = [(k, t[:80]) for k, t in srv.compressions]
        requests = list(srv.requests)
    # ---- fixtures
    comp = [q for q in requests if is_compression(q["body"])]
    full = name in ("good-long", "good-short", "manual-good")
    if comp:
        (DATA / f"request-{name}.json").write_text(json.dumps(comp if full else trim(comp), indent=1,
                                                              ensure_ascii=False))
    stores = g.sessions(home)
    info["store_files"] = [str(p.relative_to(home)) for p in stores]
    info["home_files"] = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    for k, p in enumerate(stores):
        dest = DATA / ("resume-only.jsonl" if name == "resume-only" else
                       f"session-{name}.jsonl" if k == 0 else f"session-{name}-{k}.jsonl")
        shutil.copy(p, dest)
        recs = g.records(p)
        info.setdefault("store_records", []).append(
            [("$set:" + ",".join(r["$set"])) if "$set" in r else
             ("$rewindTo" if "$rewindTo" in r else
              (f"{r.get('type')}" + (f" tokens={r['tokens']}" if r.get("tokens") else "")) if "type" in r else
              "metadata") for r in recs])
        info.setdefault("compressions_in_store", []).append(len(g.compressions(p)))
    # hooks
    events = []
    if hook_log.exists():
        events = [json.loads(x) for x in hook_log.read_text().splitlines() if x.strip()]
    info["hook_events"] = [e["event"] + (":" + e["stdin"].get("trigger", "") if e["event"] == "PreCompress" else "")
                           for e in events]
    if extra.get("hooks") or extra.get("inject"):
        by = {}
        for e in events:
            by.setdefault(e["event"], []).append(e["stdin"])
        for ev, lst in by.items():
            if ev in ("BeforeModel", "AfterModel"):
                # the first one whose request carries the summary (after the compression), else the last
                pick = [x for x in lst if "<state_snapshot>" in json.dumps(x.get("llm_request"))] or lst[-1:]
                lst = pick[:1]
            (DATA / f"hook-{name}-{ev}.json").write_text(json.dumps(lst if len(lst) > 1 else lst[0], indent=1,
                                                                    ensure_ascii=False))
    if extra.get("inject"):
        post = [q for q in requests if q["path"].split("?")[0].endswith(":streamGenerateContent")]
        info["inject_seen_by_model"] = {
            tag: [i for i, q in enumerate(post) if tag in json.dumps(q["body"].get("contents"))]
            for tag in ("GUARD-BEFOREAGENT", "GUARD-SESSIONSTART", "GUARD-BEFOREMODEL")}
        info["inject_in_store"] = {tag: any(tag in p.read_text() for p in stores)
                                   for tag in ("GUARD-BEFOREAGENT", "GUARD-SESSIONSTART", "GUARD-BEFOREMODEL")}
        info["main_request_shapes"] = [[(c.get("role"), [next(iter(x), "") for x in c.get("parts") or []],
                                          sum(len(x.get("text", "")) for x in c.get("parts") or []))
                                         for c in q["body"].get("contents") or []] for q in post]
        slim = [{"path": q["path"], "contents": q["body"].get("contents"),
                 "systemInstruction": "[omitted: the main system prompt]", "tools": "[omitted]"} for q in post]
        (DATA / f"request-{name}-main.json").write_text(json.dumps(trim(slim, 1500), indent=1, ensure_ascii=False))
    return info


def main(names):
    DATA.mkdir(exist_ok=True)
    manifest_p = DATA / "manifest.json"
    manifest = json.loads(manifest_p.read_text()) if manifest_p.exists() else {}
    manifest["gemini_cli"] = g.VERSION
    manifest["node"] = subprocess.run([g.node(), "--version"], capture_output=True, text=True).stdout.strip()
    echo_text = None
    for name in names:
        if name == "echo":
            good = DATA / "request-good-long.json"
            if not good.exists():
                manifest.setdefault("cases", {})["good-long"] = run_case("good-long", None)
            echo_text = system_text(json.loads(good.read_text())[0]["body"])
        t = time.time()
        info = run_case(name, echo_text)
        info["total_seconds"] = round(time.time() - t, 1)
        manifest.setdefault("cases", {})[name] = info
        manifest_p.write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
        print(name, [r["rc"] for r in info["runs"]], info.get("compressions_in_store"),
              info["server_compression_answers"], file=sys.stderr)


if __name__ == "__main__":
    if os.environ.get("GEMREC_NETNS") != "1":
        os.environ["GEMREC_NETNS"] = "1"
        os.execvp("unshare", ["unshare", "-n", sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    main(sys.argv[1:] or list(CASES))
