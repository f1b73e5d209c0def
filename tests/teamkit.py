"""A team of machines for the team's-view tests: homes holding the five agents' real stores
(the recordings under tests/recordings and tests/data), each agent's hook run on them as the
agent runs it, and the real Prometheus and Pushgateway from Debian's packages.

Each machine is a home directory; each agent there gets one recorded case, good or broken, and
its hook sees that case's compaction: Claude Code's PostCompact (the transcript as it was before
the summary was written, then the whole of it), Codex's recorded PostCompact event, Gemini CLI's
BeforeModel after the compression, opencode's plugin call for the stored summary, and OpenClaw's
hook, which is the incremental check of its state directory (lossless-claw's lcm.db).
`LABELS` is what each case's recipe made (tests/corpus/real/agents.jsonl, the recordings'
manifests), not what the guard says of it.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT / "tests" / "data" / "claude-code"
CODEX = ROOT / "tests" / "recordings" / "codex" / "data"
GEMINI = ROOT / "tests" / "recordings" / "gemini" / "data"
OPENCODE = ROOT / "tests" / "recordings" / "opencode" / "data"
LCM = ROOT / "tests" / "recordings" / "lossless-claw" / "data"

AGENTS = ("openclaw", "claude-code", "codex", "gemini", "opencode")


def _labels() -> dict:
    """(agent, case) -> the recipe's label per summary ('good' or what broke), from the recordings."""
    out = {}
    for line in (ROOT / "tests" / "corpus" / "real" / "agents.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["stored"]:             # keyed by the recorded file: its case is its name
            f = Path(row["source_file"])
            case = f.parent.name if f.name == "opencode.db" else f.stem.removeprefix("session-")
            out.setdefault((row["agent"], case), []).append(row["label"])
    manifest = json.loads((LCM / "manifest.json").read_text())["cases"]
    for case in ("good", "empty"):
        # lossless-claw's cases: `empty` is a model that answered nothing, every summary a fallback's
        out[("openclaw", case)] = ["good" if case == "good" else "fallback"] * len(manifest[case]["summaries"])
    return out


LABELS = _labels()
VALID_LABELS = ("good",)        # a summary cut off inside the structure its request asked for fails (#58)
GOOD = {"openclaw": ["good"], "claude-code": ["good"], "codex": ["good-auto", "good-manual",
        "good-short-auto"], "gemini": ["good-long", "good-short"], "opencode": ["good-long", "good-short"]}
BAD = {"openclaw": ["empty"], "claude-code": ["loop", "preamble", "cut-off"],
       "codex": ["preamble-auto", "loop-auto", "echo-auto", "language-auto"],
       "gemini": ["preamble-long", "loop", "echo", "language"], "opencode": ["empty", "loop", "preamble-long"]}
# which machines' agent got a broken compaction (20 machines)
FAILING = {"openclaw": {5, 15}, "claude-code": {3, 7, 11, 15, 19}, "codex": {4, 9, 14, 19}, "gemini": {9, 19},
           "opencode": {1, 3, 5, 7, 9, 11, 13, 15, 17, 19}}


def case_of(agent: str, machine: int) -> str:
    pool = BAD[agent] if machine in FAILING[agent] else GOOD[agent]
    return pool[machine % len(pool)]


def expected(agent: str, machines: range) -> tuple:
    """(failed, stored) the recipes' labels give for `agent` over `machines`."""
    labels = [lab for m in machines for lab in LABELS[(agent, case_of(agent, m))]]
    return sum(1 for lab in labels if lab not in VALID_LABELS), len(labels)


# ------------------------------------------------------------------ a machine
class Machine:
    """One home with the five agents' stores, the guard configured by `settings` (config.yaml
    in each agent's guard directory), its hooks run in this process."""

    def __init__(self, root: Path, n: int, settings: dict):
        self.n = n
        self.home = root / f"machine-{n:02d}"
        self.home.mkdir(parents=True)
        self.env = {"HOME": str(self.home)}
        self.settings = dict(settings, machine_label=f"machine-{n:02d}", user_label=f"dev{n:02d}")

    def layout(self, agent: str):
        from compaction_guard import agents
        return agents.get(agent).resolve(self.env)

    def configure(self, agent: str) -> None:
        import yaml
        guard_dir = self.layout(agent).guard_dir
        guard_dir.mkdir(parents=True, exist_ok=True)
        (guard_dir / "config.yaml").write_text(yaml.safe_dump(self.settings))

    def run(self, agent: str, case: str) -> None:
        """The agent's store of `case` in this home, and its hook on that compaction."""
        self.configure(agent)
        getattr(self, "_" + agent.replace("-", "_"))(case)

    # each agent as its hook sees a compaction
    def _openclaw(self, case: str) -> None:
        from compaction_guard import config, operations
        layout = self.layout("openclaw")
        layout.state_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(LCM / case / "lcm.db", layout.state_dir / "lcm.db")
        # OpenClaw's hook (handler.js) runs the incremental check of its state directory
        operations.check(layout, settings=config.load(layout, self.env).settings)

    def _claude_code(self, case: str) -> None:
        from compaction_guard.agents.claude_code import hook, store
        lines = (CLAUDE / f"{case}.jsonl").read_text().splitlines(keepends=True)
        session = json.loads(lines[0])["sessionId"]
        at = next(i for i, x in enumerate(lines) if '"compact_boundary"' in x)
        summary = store.summary_text(json.loads(lines[at + 1]))
        path = self.home / ".claude" / "projects" / "-work" / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines[:at]))          # at PostCompact the summary is not written yet
        event = {"hook_event_name": "PostCompact", "session_id": session, "transcript_path": str(path),
                 "trigger": "manual", "compact_summary": f"<analysis>a</analysis>\n<summary>{summary}</summary>"}
        hook_call(hook, event, self.env)
        path.write_text("".join(lines))               # then Claude Code writes it

    def _codex(self, case: str) -> None:
        from compaction_guard.agents.codex import hook
        thread = json.loads((CODEX / f"{case}.jsonl").open().readline())["payload"]["id"]
        day = self.home / ".codex" / "sessions" / "2026" / "12" / "05"
        day.mkdir(parents=True, exist_ok=True)
        path = day / f"rollout-2026-12-05T14-25-58-{thread}.jsonl"
        shutil.copy(CODEX / f"{case}.jsonl", path)
        event = json.loads((CODEX / f"hook-{case}-PostCompact.json").read_text())
        event["transcript_path"] = str(path)
        hook_call(hook, event, self.env)

    def _gemini(self, case: str) -> None:
        from compaction_guard.agents.gemini import hook
        src = GEMINI / f"session-{case}.jsonl"
        session = json.loads(src.open().readline())["sessionId"]
        path = self.home / ".gemini" / "tmp" / "work" / "chats" / f"session-2026-12-06T02-44-{session[:8]}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, path)
        event = {"session_id": session, "transcript_path": str(path), "cwd": str(self.home),
                 "hook_event_name": "BeforeModel", "timestamp": "2026-12-06T02:45:00.000Z",
                 "llm_request": {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "go on"}]}}
        hook_call(hook, event, self.env)

    def _opencode(self, case: str) -> None:
        from compaction_guard.agents.opencode import hook, store
        data = self.home / ".local" / "share" / "opencode"
        shutil.copytree(OPENCODE / case, data, dirs_exist_ok=True)
        src = store.OpencodeDbSource(data / "opencode.db")
        try:
            recs = list(src.records(None))
        finally:
            src.close()
        for rec in recs:                              # the plugin calls the hook for each stored summary
            hook_call(hook, {"event": "compacted", "session_id": rec.meta["session"], "message_id": rec.id}, self.env)


def hook_call(hook, event: dict, env: dict) -> str:
    out = io.StringIO()
    assert hook.hook_main(io.StringIO(json.dumps(event)), out, env=env) == 0
    return out.getvalue()


def wait_workers(machines: list, timeout: float = 60.0) -> None:
    """Until every agent's telemetry spool is empty and no worker holds its lock."""
    import fcntl
    deadline = time.monotonic() + timeout
    spools = [m.layout(a).guard_dir / "telemetry" for m in machines for a in AGENTS]
    while time.monotonic() < deadline:
        busy = False
        for sp in spools:
            if any(sp.glob("*.json")):
                busy = True
                break
            lock = sp / ".lock"
            if lock.exists():
                fd = os.open(lock, os.O_RDWR)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    busy = True
                finally:
                    os.close(fd)
            if busy:
                break
        if not busy:
            return
        time.sleep(0.1)
    raise AssertionError("the telemetry workers did not finish")


# ------------------------------------------------------------------ Prometheus and the Pushgateway
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binaries() -> dict:
    """Debian's prometheus, promtool and prometheus-pushgateway, or {} (the reason in 'missing')."""
    found = {name: shutil.which(name) for name in ("prometheus", "promtool", "prometheus-pushgateway")}
    missing = [n for n, p in found.items() if not p]
    return {"missing": missing} if missing else found


def get_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer")
