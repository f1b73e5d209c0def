"""The guard as an OpenClaw hook: each compaction checked seconds after it is written.

`compaction-guard hook install` writes an internal hook (OpenClaw's managed hooks
directory, `<state>/hooks/compaction-resilience-guard/`: HOOK.md, handler.js, guard.json)
on the event `session:compact:after`, and enables it with OpenClaw's own command
(`openclaw hooks enable compaction-resilience-guard`, which adds the named entry to
`hooks.internal.entries` in OpenClaw's config: directory hooks load only when named).
`hook remove` disables it the same way and deletes the directory. Nothing else is written.

The handler runs the guard's incremental check of that state directory (bounded: it is
killed after `timeoutMs`), and for the compacted session's new results that failed:
- pushes one line to `event.messages`, which OpenClaw hands to the compaction's notice
  callback (chat channels show it where they show compaction notices);
- writes the same line to the gateway's log (`[compaction-resilience-guard] ...`);
- the check itself records the failure in the guard's state (`--status`, `--report`,
  the Prometheus metrics).
It never throws and never blocks the compaction (OpenClaw's after-event cannot veto one).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ...errors import GuardError
from .layout import GUARD_NAME, Layout

HOOK_MD = """---
name: {name}
description: "Checks every compaction summary OpenClaw writes, seconds after it is written (compaction-resilience-guard)"
metadata:
  {{ "openclaw": {{ "emoji": "🛡️", "events": ["session:compact:after"], "requires": {{ "bins": ["node"] }} }} }}
---

# compaction-resilience-guard

After each compaction (`session:compact:after`) this hook runs the guard's incremental check
of this state directory: `{command} --check --format json --home <this state directory>`,
killed after {timeout_s:g} s. When the compacted session's new summary failed (empty, inflated,
garbled, looping, a fallback marker, ...), it says so in one line: in the compaction notice
(where the channel shows one) and in the gateway log (`[compaction-resilience-guard]`). The
check records every verdict in the guard's state: `compaction-guard --status`, `--report`.

It reads OpenClaw's stores read-only and writes only the guard's own state
(`skill-state/compaction-resilience-guard/`). It never blocks or changes a compaction.
Installed by `compaction-guard hook install`; removed by `compaction-guard hook remove`.
"""

HANDLER_JS = r"""// compaction-resilience-guard: check each compaction seconds after OpenClaw writes it.
// Written by `compaction-guard hook install`; see HOOK.md. Never throws, never blocks.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const stateDir = path.resolve(here, "..", "..");
const MAX_OUTPUT = 8 * 1024 * 1024;

function runGuard(argv, timeoutMs) {
  return new Promise((resolve) => {
    let out = "";
    let done = false;
    const finish = (value) => { if (!done) { done = true; clearTimeout(timer); resolve(value); } };
    let child;
    try {
      // its own process group: a timeout kills the guard and anything it started
      child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: process.env, detached: true });
    } catch (err) {
      return resolve({ error: String(err?.message ?? err) });
    }
    const timer = setTimeout(() => {
      try { process.kill(-child.pid, "SIGKILL"); } catch { try { child.kill("SIGKILL"); } catch {} }
      child.stdout.destroy(); child.stderr.destroy(); child.unref();
      finish({ error: `timed out after ${timeoutMs} ms` });
    }, timeoutMs);
    child.stdout.on("data", (d) => { if (out.length < MAX_OUTPUT) out += d; });
    child.stderr.on("data", () => {});
    child.on("error", (err) => finish({ error: String(err?.message ?? err) }));
    child.on("close", (code) => finish({ code, out }));
  });
}

export default async function handler(event) {
  try {
    if (event?.type !== "session" || event?.action !== "compact:after") return;
    const cfg = JSON.parse(readFileSync(path.join(here, "guard.json"), "utf8"));
    const sessionId = event.context?.sessionId;
    const res = await runGuard([...cfg.command, "--check", "--format", "json", "--home", stateDir], cfg.timeoutMs ?? 20000);
    if (res.error) { console.warn(`[compaction-resilience-guard] the check could not run: ${res.error}`); return; }
    let doc;
    try { doc = JSON.parse(res.out); } catch { console.warn(`[compaction-resilience-guard] the check gave no report (exit ${res.code})`); return; }
    const mine = (doc.results ?? []).filter((r) => !sessionId || r.session === sessionId);
    const failed = mine.filter((r) => !r.valid);
    if (failed.length === 0) {
      console.log(`[compaction-resilience-guard] session ${sessionId ?? "?"}: ${mine.length} new summar${mine.length === 1 ? "y" : "ies"} checked, valid (status ${doc.status})`);
      return;
    }
    const r = failed[failed.length - 1];
    const kind = r.failures[0];
    const line = `compaction-guard: the compaction summary just stored for this session failed (${r.failures.join(", ")}): ${r.reasons?.[kind] ?? ""} [entry ${r.id}]`;
    event.messages?.push?.(line);
    console.warn(`[compaction-resilience-guard] session ${sessionId ?? "?"}: ${line}`);
  } catch (err) {
    console.warn(`[compaction-resilience-guard] ${String(err?.message ?? err)}`);
  }
}
"""


def guard_command() -> list:
    """How the hook runs this guard: the `compaction-guard` beside this Python, else `python -m`."""
    exe = Path(sys.executable).parent / "compaction-guard"
    if exe.is_file() and os.access(exe, os.X_OK):
        return [str(exe)]
    return [sys.executable, "-m", "compaction_guard.cli"]


def hook_dir(layout: Layout) -> Path:
    return layout.hooks_dir / GUARD_NAME


def _ours(d: Path) -> bool:
    try:
        return (d / "HOOK.md").read_text(encoding="utf-8").splitlines()[1].strip() == f"name: {GUARD_NAME}"
    except (OSError, IndexError, UnicodeDecodeError):
        return False


def _openclaw(cmd: Optional[str]) -> Optional[list]:
    """The `openclaw` command to enable the hook with: --openclaw / $OPENCLAW_BIN, else on PATH."""
    cmd = cmd or os.environ.get("OPENCLAW_BIN")
    if cmd:
        return cmd.split()
    found = shutil.which("openclaw")
    return [found] if found else None


def _enable(openclaw: Optional[list], verb: str, layout: Layout) -> tuple:
    """(done, what to tell the operator) of `openclaw hooks enable|disable <name>`."""
    manual = f"openclaw hooks {verb} {GUARD_NAME}"
    if openclaw is None:
        return False, f"OpenClaw's command is not on PATH: run `{manual}` on the gateway host"
    env = dict(os.environ, OPENCLAW_STATE_DIR=str(layout.state_dir))
    if layout.config_origin != "default":
        env["OPENCLAW_CONFIG_PATH"] = str(layout.config_path)
    try:
        p = subprocess.run([*openclaw, "hooks", verb, GUARD_NAME], capture_output=True, text=True, env=env, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"`{manual}` could not run ({exc}); run it yourself"
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return False, f"`{manual}` failed ({tail[0][:200]}); run it yourself"
    return True, f"{'enabled' if verb == 'enable' else 'disabled'} with `{manual}`"


def install(layout: Layout, openclaw: Optional[str] = None, timeout_s: float = 20.0) -> dict:
    """Write the hook into OpenClaw's managed hooks directory and enable it."""
    if not layout.state_dir.is_dir():
        raise GuardError(f"{layout.state_dir}: no OpenClaw state directory there; {layout.hint}")
    d = hook_dir(layout)
    if d.exists() and not _ours(d):
        raise GuardError(f"{d}: a hook of that name that the guard did not write; move it away first")
    command = guard_command()
    d.mkdir(parents=True, exist_ok=True)
    (d / "HOOK.md").write_text(HOOK_MD.format(name=GUARD_NAME, command=" ".join(command), timeout_s=timeout_s),
                               encoding="utf-8")
    (d / "handler.js").write_text(HANDLER_JS, encoding="utf-8")
    (d / "guard.json").write_text(json.dumps({"command": command, "timeoutMs": int(timeout_s * 1000)}, indent=2) + "\n",
                                  encoding="utf-8")
    done, said = _enable(_openclaw(openclaw), "enable", layout)
    return {"hook": str(d), "event": "session:compact:after", "command": command, "enabled": done, "note": said}


def remove(layout: Layout, openclaw: Optional[str] = None) -> dict:
    """Disable the hook and delete its directory (only if the guard wrote it)."""
    d = hook_dir(layout)
    if not d.exists():
        return {"hook": str(d), "removed": False, "note": "not installed"}
    if not _ours(d):
        raise GuardError(f"{d}: a hook the guard did not write; not removed")
    done, said = _enable(_openclaw(openclaw), "disable", layout)
    shutil.rmtree(d)
    return {"hook": str(d), "removed": True, "disabled": done, "note": said}
