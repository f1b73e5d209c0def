"""What every agent's hook shares: running under a time budget without ever breaking the agent,
logging a problem where the operator looks, the operator's settings, the per-session mark
that says a warning is due, and the Claude-style hooks file (`{"hooks": {Event: [{"hooks":
[{"type": "command", ...}]}]}}`) that Claude Code's settings.json and Codex's hooks.json both
use: the guard's own entries added and removed, every other one kept.

Imported on every hook event: standard library only, and nothing of the detectors until a
hook has something to check.
"""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from ..errors import GuardError

MAX_STDIN = 4 << 20


def read_all(stdin) -> dict:
    raw = stdin.read(MAX_STDIN)
    return json.loads(raw) if raw.strip() else {}


def run(handle, budget: float, log, stdin=None, stdout=None, read=read_all) -> int:
    """One hook call: the event's JSON from stdin (`read(stdin)`) to `handle(data) -> str`, its
    answer (if any) to stdout, within `budget` seconds. Always 0: whatever happens (bad input, a
    crash, the budget spent) goes to `log(line)`, never to the agent."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    old = None
    try:
        if hasattr(signal, "SIGALRM"):
            def out_of_time(*_):
                raise TimeoutError
            old = signal.signal(signal.SIGALRM, out_of_time)
            signal.setitimer(signal.ITIMER_REAL, budget)
        data = read(stdin)
        if not isinstance(data, dict):
            return 0
        text = handle(data)
        if text:
            stdout.write(text)
            stdout.flush()
    except BaseException as exc:      # noqa: BLE001 - a hook never breaks the agent it runs in
        log(f"{type(exc).__name__}: {exc}"[:300])
    finally:
        if old is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return 0


def main(handle, resolve, budget: float, stdin=None, stdout=None, env=None, settings=None, read=read_all) -> int:
    """An agent's `hook NAME` command: `handle(data, env, settings)` run by `run`, its problems
    logged in the guard's directory of the layout `resolve(env)` gives."""
    def log(line: str) -> None:
        try:
            log_problem(resolve(env).guard_dir, line)
        except Exception:             # noqa: BLE001
            pass
    return run(lambda data: handle(data, env, settings), budget, log, stdin, stdout, read)


def log_problem(guard_dir: Path, line: str) -> None:
    """A problem inside a hook, appended to `<guard dir>/hook.log` (never raised)."""
    try:
        guard_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(guard_dir / "hook.log", "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {line}\n")
    except Exception:                 # noqa: BLE001
        pass


def load_settings(layout, env):
    """The operator's settings for this agent (<guard dir>/config.yaml), or the defaults when
    that file cannot be read (the hook still runs; the problem goes to its hook.log)."""
    from .. import config
    from ..settings import DEFAULT
    try:
        return config.load(layout, env).settings
    except GuardError as exc:
        log_problem(layout.guard_dir, f"settings: {exc}"[:300])
        return DEFAULT


_UNSAFE_RE = re.compile(r"[^A-Za-z0-9_.-]")


def mark(guard_dir: Path, folder: str, session: str) -> Path:
    """A per-session mark file under `<guard dir>/<folder>/`: its presence is the whole of a
    hook's ordinary path (one stat)."""
    return guard_dir / folder / (_UNSAFE_RE.sub("_", session)[:120] or "_")


def set_mark(path: Path, on: bool, text: str = "") -> None:
    if on:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(text, encoding="utf-8")
    else:
        path.unlink(missing_ok=True)


_USER_RE = re.compile(r"^user: (.+)$", re.M)


def identifiers_of(text: str, most: int) -> list:
    """The text's identifiers (paths, ids, versions, figures with units): those the user's own
    messages name first, in their order, then the rest, most frequent first."""
    from collections import Counter
    from ..detectors.identifiers import scan
    said = [i for m in _USER_RE.finditer(text) for i, _ in scan(m.group(1)[:4000])]
    c = Counter(i for i, _ in scan(text))
    out = list(dict.fromkeys(said))
    out += [i for i, _ in c.most_common(most * 2) if i not in out]
    return out[:most]


def last_request(history: str) -> str:
    """The user's last message in a history rendered as `user: ...` lines."""
    asks = [m.group(1).strip() for m in _USER_RE.finditer(history)]
    return asks[-1][:300] if asks else ""


def record_verdict(layout, settings, key: str, entry: dict, record=None, result=None) -> None:
    """A compaction the hook judged: the session's verdict (`entry`, under `key`) in the state,
    and, when `record` is the stored summary (its `key` its identity in the count ledger),
    counted once with the checks' counts and its event handed to a team's telemetry
    (verdicts.count_once, state.StateStore.update)."""
    from ..state import StateStore, keep_verdict, state_path
    store = StateStore(state_path(layout), settings, agent=layout.agent)
    with store.update() as state:
        if record is not None and result is not None:
            from ..verdicts import count_once
            count_once(store, state, record, result, settings, layout.agent)
        keep_verdict(state, key, entry)


def warning_text(failures: list, reason: str, lost: list, ask: str, transcript) -> str:
    """What the model is told, once, after a failed compaction."""
    lines = [f"compaction-resilience-guard: the last compaction of this session failed its check "
             f"({', '.join(failures or [])}): {reason}".strip().rstrip(":"),
             "The summary you were given does not carry the earlier conversation."]
    if lost:
        lines.append(f"Identifiers from before the compaction that the summary dropped: {', '.join(lost)}.")
    if ask:
        lines.append(f"The user's last request before it: {ask}")
    lines.append(f"If you need more, read the full transcript: {transcript or 'its path is in the summary'}.")
    return "\n".join(lines)


def warn_once(layout, key: str, mark_path: Path, event: str, settings, source_of) -> str:
    """The warning due after a failed compaction, once: the session's state entry `key` is
    marked warned and its mark removed; what was lost is read again from the session's file
    (`source_of(path)`, the agent's Source for it: its newest record is that compaction).
    The hook's answer (`additionalContext` for `event`), or '' when nothing is due."""
    from ..state import StateStore, now_iso, state_path
    where = state_path(layout)
    mark_path.unlink(missing_ok=True)
    if not where.exists():
        return ""
    with StateStore(where, settings).update() as state:
        entry = state["sessions"].get(key)
        if not isinstance(entry, dict) or not entry.get("pending"):
            return ""
        entry["pending"] = False
        entry["warned_at"] = now_iso()
    reason, lost, ask = "", [], ""
    transcript = entry.get("transcript")
    if isinstance(transcript, str) and Path(transcript).is_file():
        reason, lost, ask = what_was_lost(source_of(Path(transcript)), settings)
    text = warning_text(entry.get("failures") or [], reason, lost, ask, transcript)
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})


def what_was_lost(source, settings) -> tuple:
    """(the reason, the identifiers dropped, the user's last request) of the newest compaction
    a session's Source yields, read from the session's file itself."""
    from ..check import check_record
    last = newest_record(source, settings)
    if last is None:
        return "", [], ""
    return lost_in(last, check_record(last, settings))


def newest_record(source, settings):
    """The last record a session's Source yields (its newest compaction), or None."""
    source.input_chars = settings.max_input_chars
    last = None
    for last in source.records(None):
        pass
    return last


_QUOTED_RE = re.compile(r"'([^'\s]{2,80})'")


def lost_in(record, result) -> tuple:
    """(the reason, the identifiers dropped, the user's last request) of one judged compaction.
    Every identifier the reason itself names as missing (a constant, a version, a figure: one
    word that is not only letters, in the history and not in the summary) is in the list too."""
    history = record.input_text or ""
    content = record.content if isinstance(record.content, str) else ""
    reason = next(iter(result.reasons.values()), "")[:400]
    lost = [i for i in identifiers_of(history, 40) if i not in content][:12]
    lost += [q for q in dict.fromkeys(_QUOTED_RE.findall(reason))
             if not q.isalpha() and q not in lost and q in history and q not in content]
    return reason, lost, last_request(history)


def command(mark_words: str) -> str:
    """The command a hook entry runs: this Python and this guard, wherever they are (from a
    source checkout, its guard.py; installed, the package)."""
    import shlex
    checkout = Path(__file__).resolve().parents[2] / "guard.py"
    if checkout.is_file():
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(checkout))} {mark_words}"
    return f"{shlex.quote(sys.executable)} -m compaction_guard {mark_words}"


# ------------------------------------------------------------------ the hooks file
def read_json_object(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise GuardError(f"{path}: not readable as JSON ({exc}); fix it by hand, then run this again") from None
    if not isinstance(data, dict):
        raise GuardError(f"{path}: not a JSON object; fix it by hand, then run this again")
    return data


def _ours(h, mark_words: str) -> bool:
    return isinstance(h, dict) and mark_words in str(h.get("command", ""))


def add_entries(path: Path, events: tuple, cmd: str, mark_words: str, timeout: int, matcher: bool = True) -> list:
    """The guard's command on each of `events` in the hooks file at `path` (idempotent: an
    entry already there with this command is left alone, an older one replaced); every other
    entry and setting kept. The events it added or changed."""
    data = read_json_object(path)
    if "hooks" in data and not isinstance(data["hooks"], dict):
        raise GuardError(f"{path}: `hooks` is not an object; fix it by hand, then run this again")
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    added = []
    for ev in events:
        groups = hooks.get(ev) if isinstance(hooks.get(ev), list) else []
        have = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if _ours(h, mark_words)]
        if have and all(h.get("command") == cmd for h in have):
            continue
        groups = [dict(g, hooks=[h for h in g.get("hooks", []) if not _ours(h, mark_words)]) if isinstance(g, dict)
                  else g for g in groups]
        groups = [g for g in groups if not (isinstance(g, dict) and not g.get("hooks"))]
        entry = {"hooks": [{"type": "command", "command": cmd, "timeout": timeout}]}
        groups.append({"matcher": "", **entry} if matcher else entry)
        hooks[ev] = groups
        added.append(ev)
    if added:
        data["hooks"] = hooks
        write_json(path, data)
    return added


def install_entries(path: Path, events: tuple, mark_words: str, timeout: int, guard_dir: Path, key: str,
                    matcher: bool = True) -> dict:
    """`install NAME` for an agent whose hooks live in a Claude-style hooks file: the guard's
    command on `events` (add_entries), and what was done, for install_text (the file under `key`)."""
    cmd = command(mark_words)
    added = add_entries(path, events, cmd, mark_words, timeout, matcher=matcher)
    return {key: str(path), "added": added, "command": cmd, "state": str(guard_dir / "state.yaml")}


def uninstall_entries(path: Path, mark_words: str, key: str) -> dict:
    return {key: str(path), "removed": remove_entries(path, mark_words)}


def entries_text(action: str, doc: dict, key: str, agent: str, after: str = "") -> str:
    """What install/uninstall did to a hooks file, for a person."""
    if action == "install":
        what = f"added on {', '.join(doc['added'])}" if doc["added"] else "already there, nothing changed"
        return (f"{doc[key]}: hook entries {what}\n  they run: {doc['command']}\n"
                f"  verdicts go to {doc['state']} (compaction-guard --agent {agent} --status / --report)\n{after}")
    what = f"removed from {', '.join(doc['removed'])}" if doc["removed"] else "not there (none of the guard's), nothing changed"
    return f"{doc[key]}: hook entries {what}\n"


def remove_entries(path: Path, mark_words: str) -> list:
    """The guard's entries taken out of the hooks file at `path`, nothing else; the events
    they were on."""
    data = read_json_object(path)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    removed = []
    for ev, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        kept = []
        for g in groups:
            if isinstance(g, dict) and any(_ours(h, mark_words) for h in g.get("hooks", [])):
                rest = [h for h in g.get("hooks", []) if not _ours(h, mark_words)]
                removed.append(ev)
                if rest:
                    kept.append(dict(g, hooks=rest))
            else:
                kept.append(g)
        if kept:
            hooks[ev] = kept
        else:
            del hooks[ev]
    if removed:
        if hooks:
            data["hooks"] = hooks
        else:
            data.pop("hooks", None)
        write_json(path, data)
    return sorted(set(removed))


def write_json(path: Path, data: dict) -> None:
    """`data` written to `path` whole or not at all (a temporary file renamed), its mode kept."""
    import tempfile
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except OSError as exc:
        raise GuardError(f"{path}: cannot be written ({exc.strerror}); check its permissions") from None
