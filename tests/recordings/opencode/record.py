"""Record real opencode compactions (good and degenerate) into /work/rec/opencode/data/.

    python3 record.py                 # every case
    python3 record.py good-long empty # some cases
    python3 record.py --list

Runs itself inside a network namespace with only loopback (`unshare -n`, then `ip link set lo up`):
the scripted server (tests/modelkit/openai_chat.py, ScriptedOpencode: two ports: main turns and compaction) and every opencode
process share it, so nothing leaves 127.0.0.1. Each case has its own throwaway HOME under /tmp.

Per case it writes (data/):
  <case>/opencode.db, -wal, -shm      the store as opencode left it (copied after its last process exited)
  <case>-export.json                  `opencode export <session>`
  request-<case>.json                  the compaction request (prior: the second one; -first: the first)
  next-<case>.json                    the first main-turn request after the compaction (tools: names only)
  <case>-compaction.json              read back from the store: the marker, the summary message, counts
  <case>-requests.json                every request in order: port, kind, reported usage, sizes
  <case>-runs.json                    each opencode process: command, exit code, event types, stderr tail
  plugin-<case>.jsonl                 what the recorder plugin received (no deltas / plugin.added noise)
  hook-<case>-<event>.json            the plugin records of one event/hook around the compaction
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PLUGIN = HERE / "plugin" / "recorder.js"
sys.path[:0] = [str(HERE), str(HERE.parents[1])]         # this recipe, and tests/ (the scripted-model kit)

import opencode_real as oc  # noqa: E402
from modelkit.openai_chat import ScriptedOpencode  # noqa: E402

CORPUS = HERE.parents[1] / "corpus" / "real" / "openclaw_histories.jsonl"
FIRST = ("Keep deploy ticket OPS-4411 and branch release/2.7 in mind. The config constant is "
         "MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts.")
OVER = 15000          # prompt_tokens reported once: over the usable context (16000 - 4000 output)


def incident_log(tokens: int = 6000) -> str:
    """As tests/test_claude_code_live.py: the English rows' text, about `tokens` tokens."""
    rows = [json.loads(x) for x in open(CORPUS, encoding="utf-8")]
    text = "\n\n".join(r["text"] for r in rows if r["lang"] == "en")
    while len(text) < tokens * 4:
        text += "\n\n" + text
    return text[:tokens * 4]


def first_message(long: bool) -> str:
    return FIRST + " Here is the incident log:\n" + incident_log() if long else FIRST


GOOD_LONG = """## Objective
- Keep deploy ticket OPS-4411 and branch release/2.7 in mind while reviewing the incident log of SUP-82841; latest ask: which ticket and branch the user mentioned.

## Important Details
- Deploy ticket OPS-4411, branch release/2.7.
- Config constant MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts.
- Incident log SUP-82841 (opened by marek@example.com, P3): Cloud Storage writes by the service account; gcloud edge-cloud networking subnets, --update-labels, parallel=N.

## Work State
### Completed
- Read the incident log.

### Active
- Answering which ticket and branch the user mentioned.

### Blocked
- (none)

## Next Move
1. Answer: OPS-4411 on branch release/2.7.
2. (none)

## Relevant Files
- src/deploy/retry.ts: holds MAX_RETRY_BACKOFF_MS=45000"""

GOOD_SHORT = """## Objective
- Keep deploy ticket OPS-4411 and branch release/2.7 in mind; latest ask: which ticket and branch the user mentioned.

## Important Details
- Deploy ticket OPS-4411, branch release/2.7.
- Config constant MAX_RETRY_BACKOFF_MS=45000 in src/deploy/retry.ts.

## Work State
### Completed
- (none)

### Active
- Answering which ticket and branch the user mentioned.

### Blocked
- (none)

## Next Move
1. Answer: OPS-4411 on branch release/2.7.
2. (none)

## Relevant Files
- src/deploy/retry.ts: holds MAX_RETRY_BACKOFF_MS=45000"""

SPANISH = """## Objective
- Recordar el ticket de despliegue OPS-4411 y la rama release/2.7 mientras se revisa el registro del incidente SUP-82841; última petición: qué ticket y qué rama mencionó el usuario.

## Important Details
- Ticket de despliegue OPS-4411, rama release/2.7.
- Constante de configuración MAX_RETRY_BACKOFF_MS=45000 en src/deploy/retry.ts.
- Registro del incidente SUP-82841 (abierto por marek@example.com, P3): escrituras en Cloud Storage con la cuenta de servicio.

## Work State
### Completed
- Se leyó el registro del incidente.

### Active
- Responder qué ticket y qué rama mencionó el usuario.

### Blocked
- (ninguno)

## Next Move
1. Responder: OPS-4411 en la rama release/2.7.
2. (ninguno)

## Relevant Files
- src/deploy/retry.ts: contiene MAX_RETRY_BACKOFF_MS=45000"""

PREAMBLE = "Let me read the notes file first."
LOOP = "The user asked about the deploy ticket and I said I would check it. " * 60
PRIOR_SECOND = GOOD_LONG.replace("latest ask: which ticket and branch the user mentioned.",
                                 "latest ask: summarize the plan so far.").replace(
    "- Deploy ticket OPS-4411, branch release/2.7.", "- Deploy ticket OPS-4411, branch release/2.7.\n"
    "- Rollback window: 20 minutes.")

# name: (long, summaries, mode, extra plugin env)
CASES = {
    "good-long": dict(long=True, summaries=[GOOD_LONG], mode="auto"),
    "good-short": dict(long=False, summaries=[GOOD_SHORT], mode="auto"),
    "preamble-long": dict(long=True, summaries=[PREAMBLE], mode="auto"),
    "preamble-short": dict(long=False, summaries=[PREAMBLE], mode="auto"),
    "loop": dict(long=True, summaries=[LOOP], mode="auto"),
    "empty": dict(long=True, summaries=[""], mode="auto"),
    "empty-ws": dict(long=True, summaries=["   \n"], mode="auto"),
    "empty-short": dict(long=False, summaries=[""], mode="auto"),   # no tail kept: nothing of the history left
    "echo": dict(long=True, summaries=None, mode="auto"),          # filled from request-good-long.json
    "language": dict(long=True, summaries=[SPANISH], mode="auto"),
    "prior": dict(long=True, summaries=[GOOD_LONG, PRIOR_SECOND], mode="prior"),
    "prior-after-empty": dict(long=True, summaries=["", GOOD_LONG], mode="prior"),  # no <prior-summary> then?
    "manual-good": dict(long=True, summaries=[GOOD_LONG], mode="manual"),
    "manual-empty": dict(long=True, summaries=[""], mode="manual"),
    # the plugin puts a note in front of the model after a bad (empty) summary, and runs shell commands
    "inject": dict(long=True, summaries=[""], mode="auto", env={"OC_REC_INJECT": "1", "OC_REC_SHELL": "1"}),
}

# the plugin records written one file each (all of them are in plugin-<case>.jsonl)
HOOK_KEYS = {"session.compacted", "message.updated-summary", "message.part.updated-compaction",
             "message.part.updated-text", "experimental.session.compacting", "experimental.compaction.autocontinue",
             "experimental.text.complete", "experimental.chat.system.transform",
             "experimental.chat.messages.transform", "chat.params", "verdict", "inject", "shell"}
NOISE = {"message.part.delta", "plugin.added", "catalog.updated", "reference.updated", "integration.updated",
         "session.diff", "lsp.updated", "file.watcher.updated"}


def in_netns() -> bool:
    """Only loopback here (/proc/net/dev is per network namespace; /sys/class/net is not remounted)."""
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return [x.split(":")[0].strip() for x in lines] == ["lo"]


def echo_summary() -> str:
    """opencode's own compaction instructions, as the good case's request carried them."""
    req = json.loads((DATA / "request-good-long.json").read_text())
    content = req["body"]["messages"][-1]["content"]
    text = content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content)
    return text.split("</conversation>\n\n", 1)[1]


def trim_request(item: dict) -> dict:
    out = dict(item)
    body = dict(item["body"])
    if body.get("tools"):
        body["tools"] = [t.get("function", {}).get("name") for t in body["tools"]]
        body["_note"] = "tools trimmed to their names by record.py"
    out["body"] = body
    return out


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Case:
    def __init__(self, name: str, spec: dict, binary: Path, keep: bool):
        self.name, self.spec, self.binary, self.keep = name, spec, binary, keep
        self.home = Path(tempfile.mkdtemp(prefix=f"oc-{name}-", dir="/tmp"))
        self.work = self.home / "work"
        self.work.mkdir()
        self.log = self.home / "plugin.jsonl"
        self.runs = []
        self.session = None

    def turn(self, env, text, timeout=150):
        t0 = time.time()
        r = oc.run(self.binary, self.work, env, text, session=self.session, timeout=timeout)
        self.session = self.session or r["session"]
        self.runs.append({"cmd": ["opencode", "run", "--format", "json"] + (["--session", self.session] if self.session else []),
                          "stdin": text[:200] + (f"…[{len(text)} chars]" if len(text) > 200 else ""),
                          "returncode": r["returncode"], "seconds": round(time.time() - t0, 1),
                          "events": [e.get("type") for e in r["events"]],
                          "errors": [e for e in r["events"] if e.get("type") == "error"],
                          "stderr_tail": r["stderr"][-1500:]})
        if r["returncode"] != 0:
            print(f"  [{self.name}] run exited {r['returncode']}: {r['stderr'][-500:]}", file=sys.stderr)
        return r

    def manual(self, env, srv):
        port = free_port()
        serve = oc.Serve(self.binary, self.work, env, port)
        entry = {"cmd": ["opencode", "serve", "--hostname", "127.0.0.1", "--port", str(port)]}
        try:
            serve.wait(90)
            body = {"providerID": oc.PROVIDER, "modelID": oc.MODEL, "auto": False}
            t0 = time.time()
            try:
                res = serve.call("POST", f"/session/{self.session}/summarize", body, timeout=150)
                entry.update(request={"method": "POST", "path": f"/session/{self.session}/summarize", "body": body},
                             response=res, seconds=round(time.time() - t0, 1))
            except urllib.error.HTTPError as e:
                entry.update(request={"path": f"/session/{self.session}/summarize", "body": body},
                             http_error=e.code, response=e.read().decode()[:2000])
            time.sleep(1.0)
        finally:
            out = serve.stop()
            entry["output_tail"] = out[-1500:]
            self.runs.append(entry)

    def run(self) -> dict:
        spec = self.spec
        summaries = spec["summaries"] if spec["summaries"] is not None else [echo_summary()]
        rec = self.home / "requests.jsonl"
        with ScriptedOpencode(summaries, record=str(rec)) as srv:
            env = oc.env_for(self.home, srv.url_of("main"), srv.url_of("compaction"), OC_REC_LOG=str(self.log),
                             OC_REC_STATE=str(self.home / "plugin-state"), **spec.get("env", {}))
            oc.install_plugin(self.home, PLUGIN)
            long = spec["long"]
            self.turn(env, first_message(long))
            self.turn(env, "Noted the log? Reply OK." if long else "Noted? Reply OK.")
            if spec["mode"] == "manual":
                self.manual(env, srv)
                self.turn(env, "Which ticket and branch did I mention?")
            else:
                srv.next_turn_prompt_tokens = OVER
                self.turn(env, "Which ticket and branch did I mention?")
                if spec["mode"] == "prior":
                    self.turn(env, "Also remember the rollback window is 20 minutes.")
                    srv.next_turn_prompt_tokens = OVER
                    self.turn(env, "Summarize the plan so far.")
            self.turn(env, "What was the config constant, and in which file?")
            requests = list(srv.requests)
            exported = oc.export(self.binary, self.work, env, self.session) if self.session else {}
        return self.write(requests, exported)

    def write(self, requests, exported) -> dict:
        n = self.name
        for old in [DATA / n] + list(DATA.glob(f"hook-{n}-*.json")):
            if old.is_dir():
                shutil.rmtree(old)
            elif old.exists():
                old.unlink()
        oc.copy_store(self.home, DATA / n)
        (DATA / f"{n}-export.json").write_text(json.dumps(exported, indent=1, ensure_ascii=False))
        (DATA / f"{n}-runs.json").write_text(json.dumps(self.runs, indent=1, ensure_ascii=False))
        index = [{"i": i, "port": r["port"], "kind": r["kind"], "usage_reported": r["usage_reported"],
                  "messages": len(r["body"].get("messages") or []), "tools": len(r["body"].get("tools") or []),
                  "chars": len(json.dumps(r["body"]))} for i, r in enumerate(requests)]
        (DATA / f"{n}-requests.json").write_text(json.dumps(index, indent=1))
        comp = [i for i, r in enumerate(requests) if r["kind"] == "compaction"]
        if comp:
            last = comp[-1]
            (DATA / f"request-{n}.json").write_text(json.dumps(requests[last], indent=1, ensure_ascii=False))
            if len(comp) > 1:
                (DATA / f"request-{n}-first.json").write_text(json.dumps(requests[comp[0]], indent=1,
                                                                         ensure_ascii=False))
            nxt = next((r for r in requests[last + 1:] if r["kind"] == "turn"), None)
            if nxt:
                (DATA / f"next-{n}.json").write_text(json.dumps(trim_request(nxt), indent=1, ensure_ascii=False))
        store = self.read_store()
        (DATA / f"{n}-compaction.json").write_text(json.dumps(store, indent=1, ensure_ascii=False))
        self.write_plugin_log()
        if not self.keep:
            shutil.rmtree(self.home, ignore_errors=True)
        return {"case": n, "session": self.session, "compaction_requests": len(comp),
                "returncodes": [r.get("returncode") for r in self.runs], "store": store.get("summary_brief")}

    def read_store(self) -> dict:
        db = DATA / self.name / "opencode.db"
        if not db.exists() or not self.session:
            return {"error": "no store"}
        msgs = oc.messages(db, self.session)
        out = {"session": self.session, "messages": [], "compactions": []}
        for i, (m, parts) in enumerate(msgs):
            kinds = [p.get("type") for p in parts]
            out["messages"].append({"i": i, "id": m["id"], "role": m.get("role"), "agent": m.get("agent"),
                                    "summary": m.get("summary"), "finish": m.get("finish"), "tokens": m.get("tokens"),
                                    "error": m.get("error"), "parts": kinds,
                                    "text": "".join(p.get("text", "") for p in parts if p.get("type") == "text")[:300]})
        for i, (m, parts) in enumerate(msgs):
            if m.get("role") == "user" and any(p.get("type") == "compaction" for p in parts):
                before = [x for x, _ in msgs[:i] if x.get("role") == "assistant" and not x.get("summary")]
                summ = next(((x, ps) for x, ps in msgs[i + 1:] if x.get("summary") and x.get("parentID") == m["id"]),
                            (None, []))
                out["compactions"].append({
                    "marker_message": m, "marker_parts": parts,
                    "summary_message": summ[0], "summary_parts": summ[1],
                    "last_assistant_before": {"id": before[-1]["id"], "tokens": before[-1].get("tokens")} if before else None,
                })
        if out["compactions"]:
            c = out["compactions"][-1]
            text = "".join(p.get("text", "") for p in c["summary_parts"] if p.get("type") == "text")
            out["summary_brief"] = {"finish": (c["summary_message"] or {}).get("finish"),
                                    "error": (c["summary_message"] or {}).get("error"),
                                    "text_parts": sum(1 for p in c["summary_parts"] if p.get("type") == "text"),
                                    "text": text[:120]}
        return out

    def write_plugin_log(self) -> None:
        if not self.log.exists():
            return
        rows = [json.loads(x) for x in self.log.read_text().splitlines() if x.strip()]
        keep = [r for r in rows if not (r.get("hook") == "event" and r.get("type") in NOISE)]
        with open(DATA / f"plugin-{self.name}.jsonl", "w", encoding="utf-8") as fh:
            for r in keep:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        write_hooks(self.name, keep)


def write_hooks(name: str, keep: list) -> None:
    """hook-<case>-<key>.json: the plugin records of one event/hook, from the first compaction-related
    record on (at most 12 each)."""
    for old in DATA.glob(f"hook-{name}-*.json"):
        old.unlink()
    start = next((i for i, r in enumerate(keep) if r.get("hook") == "experimental.session.compacting"
                  or (r.get("type") == "message.part.updated" and (r.get("properties", {}).get("part") or {}).get(
                      "type") == "compaction")), None)
    if start is None:
        return
    groups: dict = {}
    for r in keep[start:]:
        if r.get("hook") == "event":
            key = r["type"]
            p = r.get("properties") or {}
            if key == "message.updated":
                # user messages carry "summary": {"diffs": [...]}: only `true` marks a compaction summary
                if (p.get("info") or {}).get("summary") is True:
                    key = "message.updated-summary"
            elif key == "message.part.updated":
                key = f"message.part.updated-{(p.get('part') or {}).get('type')}"
        else:
            key = r["hook"]
        groups.setdefault(key, []).append(r)
    for key, items in groups.items():
        if key in HOOK_KEYS:
            (DATA / f"hook-{name}-{key}.json").write_text(json.dumps(items[:12], indent=1, ensure_ascii=False))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the throwaway homes under /tmp")
    ap.add_argument("--rehook", action="store_true", help="rewrite hook-*.json from data/plugin-*.jsonl only")
    args = ap.parse_args(argv)
    if args.rehook:
        for f in sorted(DATA.glob("plugin-*.jsonl")):
            write_hooks(f.name[len("plugin-"):-len(".jsonl")],
                        [json.loads(x) for x in f.read_text().splitlines() if x.strip()])
        return 0
    if args.list:
        print("\n".join(CASES))
        return 0
    if not in_netns():
        if os.environ.get("OC_REC_NETNS") == "1":
            print("record.py: not in a loopback-only network namespace", file=sys.stderr)
            return 2
        env = dict(os.environ, OC_REC_NETNS="1")
        return subprocess.call(["unshare", "-n", sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]], env=env)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    binary = oc.binary()
    if binary is None:
        print("record.py: run setup_opencode.sh first", file=sys.stderr)
        return 2
    DATA.mkdir(exist_ok=True)
    names = args.cases or list(CASES)
    if "echo" in names and "good-long" not in names and not (DATA / "request-good-long.json").exists():
        names.insert(0, "good-long")
    results = []
    for name in names:
        t0 = time.time()
        print(f"== {name}", file=sys.stderr, flush=True)
        try:
            res = Case(name, CASES[name], binary, args.keep).run()
        except Exception as e:  # keep going: one case failing must not lose the others
            res = {"case": name, "error": repr(e)[:1000]}
        res["seconds"] = round(time.time() - t0, 1)
        print(json.dumps(res, ensure_ascii=False), flush=True)
        results.append(res)
    summary = DATA / "record-summary.json"
    old = json.loads(summary.read_text()) if summary.exists() else {}
    old.update({r["case"]: r for r in results})
    summary.write_text(json.dumps(old, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
