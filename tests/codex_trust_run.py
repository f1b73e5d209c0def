"""The README's Codex trust step against the real Codex TUI, for tests/test_codex_live.py.

    unshare -n python3 tests/codex_trust_run.py CASE OUTDIR [MODE]      (CASE and MODE unused)

Inside a network namespace with only loopback: installs the guard's hooks with `compaction-guard
install codex` into a throwaway CODEX_HOME, starts the interactive `codex` (0.171: `--no-daemon`, in
tmux, which answers the terminal's queries), reads the screen it shows at start, chooses "Trust all
and continue" (one Down, Enter) and reads the screen again. Writes OUTDIR/run.json: the install's
exit status, both screens, and Codex's config.toml after.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "recordings" / "codex"))

from codex_real import binary, env_for, write_config  # noqa: E402


def main() -> int:
    out = Path(sys.argv[2])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    home, work = out / "home", out / "work"
    work.mkdir(parents=True, exist_ok=True)
    env = env_for(home, "http://127.0.0.1:9/v1")
    write_config(home / ".codex", "http://127.0.0.1:9/v1")
    inst = subprocess.run([sys.executable, str(ROOT / "guard.py"), "install", "codex"], env=env, capture_output=True,
                          text=True, timeout=60)
    info = {"install": {"rc": inst.returncode, "stdout": inst.stdout, "stderr": inst.stderr}}
    env = dict(env, TERM="xterm-256color")
    sock = str(out / "tmux.sock")

    def tmux(*args) -> str:
        return subprocess.run(["tmux", "-S", sock, *args], env=env, capture_output=True, text=True, timeout=30).stdout

    cmd = f"cd {shlex.quote(str(work))} && exec {shlex.quote(str(binary()))} --no-daemon"
    subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-s", "cx", "-x", "150", "-y", "45", cmd], env=env,
                   check=True, timeout=30)
    try:
        screen = ""
        for _ in range(60):
            time.sleep(1)
            screen = tmux("capture-pane", "-p", "-t", "cx")
            if "Trust all and continue" in screen:
                break
        info["start_screen"] = screen
        tmux("send-keys", "-t", "cx", "Down")
        time.sleep(1)
        tmux("send-keys", "-t", "cx", "Enter")
        for _ in range(30):
            time.sleep(1)
            screen = tmux("capture-pane", "-p", "-t", "cx")
            if "Hooks need review" not in screen and screen.strip():
                break
        info["after_screen"] = screen
    finally:
        tmux("kill-server")
    cfg = home / ".codex" / "config.toml"
    info["config"] = cfg.read_text(encoding="utf-8") if cfg.exists() else ""
    (out / "run.json").write_text(json.dumps(info, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
