"""The README's steps for each agent, run as written, from nothing installed: each "Behind <agent>"
section's `sh` blocks, line by line, in a fresh virtual environment (its `pip install` line is what
gets the command) with a throwaway HOME that holds what the agent itself wrote (real stores the real
agents wrote, as after using it). No agent binary is run here (their live tests run them; the
Codex trust prompt the README quotes: test_codex_live.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
REC = ROOT / "tests" / "recordings"


def steps(title: str) -> list:
    """The command lines of the `sh` blocks under `## Behind <title> in three steps`, comments
    left on them (bash reads them as it reads the README)."""
    toks = MarkdownIt("commonmark").parse((ROOT / "README.md").read_text(encoding="utf-8"))
    out, inside = [], False
    for i, t in enumerate(toks):
        if t.type == "heading_open" and t.tag == "h2":
            inside = toks[i + 1].content == f"Behind {title} in three steps"
        elif inside and t.type == "fence" and t.info.strip() == "sh":
            out += [ln for ln in t.content.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    assert out, f"no steps under Behind {title}"
    return out


def _thread(rollout: Path) -> str:
    return json.loads(rollout.read_text(encoding="utf-8").splitlines()[0])["payload"]["id"]


def _agents_own_files(name: str, home: Path) -> None:
    """What the agent wrote while the user worked with it: a real store its real binary wrote."""
    if name == "OpenClaw":
        d = home / ".openclaw" / "agents" / "main" / "agent"
        d.mkdir(parents=True)
        shutil.copy(DATA / "openclaw-live" / "openclaw-agent.sqlite", d)
    elif name == "Claude Code":
        d = home / ".claude" / "projects" / "-work"
        d.mkdir(parents=True)
        shutil.copy(DATA / "claude-code" / "good.jsonl", d)
    elif name == "Codex":
        src = REC / "codex" / "data" / "good-auto.jsonl"
        d = home / ".codex" / "sessions" / "2026" / "12" / "05"
        d.mkdir(parents=True)
        shutil.copy(src, d / f"rollout-2026-12-05T14-25-58-{_thread(src)}.jsonl")
    elif name == "Gemini CLI":
        d = home / ".gemini" / "tmp" / "work" / "chats"
        d.mkdir(parents=True)
        shutil.copy(REC / "gemini" / "data" / "session-good-long.jsonl", d / "session-2026-12-05T15-04-a7dc17fc.jsonl")
    elif name == "opencode":
        (home / ".local" / "share").mkdir(parents=True)
        shutil.copytree(REC / "opencode" / "data" / "good-long", home / ".local" / "share" / "opencode")


def _fresh(tmp_path: Path) -> dict:
    """A virtual environment with nothing of the guard's in it, and a throwaway HOME."""
    venv, home = tmp_path / "venv", tmp_path / "home"
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "LANG", "LC_", "SSL_", "REQUESTS_CA"))}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}:/usr/bin:/bin", VIRTUAL_ENV=str(venv),
               OPENAI_API_KEY="sk-readme-steps-not-a-key",
               # pip's cache of the machine (the throwaway HOME has none): the same packages, sooner
               PIP_CACHE_DIR=str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pip"))
    assert subprocess.run(["bash", "-c", "command -v compaction-guard"], env=env).returncode != 0
    return env


def _serve_answers(line: str, env: dict) -> str:
    """Start the README's serve line as written (127.0.0.1:8742), ask its /livez, stop it. In a network
    namespace of its own when it can be (root): the port is then its own whatever else runs here."""
    probe = ("for i in $(seq 150); do python3 -c 'import urllib.request,sys; "
             "sys.stdout.write(urllib.request.urlopen(\"http://127.0.0.1:8742/livez\", timeout=1).read().decode())' "
             "2>/dev/null && break; kill -0 $pid 2>/dev/null || break; sleep 0.2; done")
    script = f"{line} 2>serve.err & pid=$!; {probe}; kill -TERM $pid; wait $pid; echo; echo rc=$?; cat serve.err"
    if os.geteuid() == 0 and shutil.which("unshare"):
        argv = ["unshare", "-n", "bash", "-c", f"ip link set lo up; {script}"]
    else:
        import socket
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", 8742)) == 0:
                pytest.skip("127.0.0.1:8742 is taken here and no network namespace can be made (not root)")
        argv = ["bash", "-c", script]
    p = subprocess.run(argv, env=env, cwd=env["HOME"], capture_output=True, text=True, timeout=120)
    return p.stdout + p.stderr


CHECKS = {          # what each agent's steps leave, beyond each line's exit status
    "OpenClaw": lambda home: (home / ".openclaw" / "hooks" / "compaction-resilience-guard" / "handler.js").is_file(),
    "Claude Code": lambda home: "hook claude-code" in (home / ".claude" / "settings.json").read_text(),
    "Codex": lambda home: "hook codex" in (home / ".codex" / "hooks.json").read_text(),
    "Gemini CLI": lambda home: "hook gemini" in (home / ".gemini" / "settings.json").read_text(),
    "opencode": lambda home: "hook opencode" in (home / ".config" / "opencode" / "plugin" /
                                                 "compaction-guard.js").read_text(),
}


@pytest.mark.parametrize("agent", list(CHECKS))
def test_the_readmes_steps_for_each_agent_run_as_written_from_nothing_installed(agent, tmp_path):
    env = _fresh(tmp_path)
    home = Path(env["HOME"])
    _agents_own_files(agent, home)
    lines = steps(agent)
    assert lines[0].startswith("pip install "), lines      # the first step gets the command
    checked = 0
    for line in lines:
        if line.startswith("compaction-guard serve"):
            out = _serve_answers(line, env)
            assert '"ok"' in out and "rc=0" in out and "Traceback" not in out, out
            continue
        t0 = time.monotonic()
        p = subprocess.run(["bash", "-c", line], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
        said = f"{line}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}"
        assert "Traceback" not in p.stdout + p.stderr, said
        if line.startswith("pip install"):
            assert p.returncode == 0, said
            print(f"{line}: {time.monotonic() - t0:.0f} s")
        elif "--check" in line:
            # the agent's real store: found and read; the status its summaries make, and the exit status with it
            status = "HEALTHY" if p.returncode == 0 else "DEGRADED"
            assert p.returncode in (0, 1) and f"Status: {status}" in p.stdout, said
            assert "Summaries checked:  0" not in p.stdout, said
            checked += 1
        else:
            assert p.returncode == 0, said
    assert checked == 1 and CHECKS[agent](home)
    if agent == "Codex":        # the hook Codex runs is the installed command's (not this checkout's), and runs
        hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
        cmd = hooks["PostCompact"][0]["hooks"][0]["command"]
        assert cmd.startswith(str(tmp_path / "venv" / "bin")) and cmd.endswith("-m compaction_guard hook codex"), cmd
        p = subprocess.run(["bash", "-c", cmd], input="{}", env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and not p.stdout and not p.stderr, p
