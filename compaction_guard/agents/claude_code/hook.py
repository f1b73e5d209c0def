"""The guard behind Claude Code: its hook, and installing the hook.

Claude Code keeps everything under its configuration directory (`$CLAUDE_CONFIG_DIR`, else
`~/.claude`, layout.py): transcripts under `projects/` (store.py), settings in
`settings.json`. The guard keeps its own state for Claude Code beside them, in
`<config>/compaction-guard/state.yaml` (`--agent claude-code --status` / `--report` read it).

`compaction-guard hook claude-code` is one command for every hook event, reading the hook's
JSON on stdin:
- PreCompact: prints "keep these identifiers verbatim: ..." (the history's identifiers), which
  Claude Code appends to its summary prompt;
- PostCompact: checks `compact_summary` (its `<analysis>` dropped, as Claude Code stores it)
  against the history in `transcript_path` (since the last boundary: at this hook the file
  does not hold the new summary yet) with the same detectors as every store, and records the
  verdict in the guard's state; a failed one is kept as a warning for the session;
- UserPromptSubmit, PostToolUse: after a failed compaction, once, returns `additionalContext`
  (the reason, the identifiers and the last request the summary dropped), which reaches the model.
Whatever happens inside (bad input, a missing transcript, a crash, its time budget spent) it
exits 0 and prints nothing it should not: it can never break Claude Code.

`compaction-guard install claude-code [--project DIR]` adds these hook entries to the user's (or
the project's `.claude/settings.json`) idempotently, keeping every other setting and hook, and
`uninstall claude-code` takes them out again.
"""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from ...errors import GuardError
from .layout import ClaudeLayout, resolve

EVENTS = ("PreCompact", "PostCompact", "UserPromptSubmit", "PostToolUse")
MARK = "hook claude-code"           # how the guard's own entries are known in settings.json
HOOK_TIMEOUT = 30                   # seconds Claude Code gives the command (settings.json `timeout`)
BUDGET = 20.0                       # the command's own limit, under Claude Code's
MAX_STDIN = 4 << 20


# ------------------------------------------------------------------ the hook
def hook_main(stdin=None, stdout=None, env=None, settings=None) -> int:
    """One hook call. Always 0; the answer, if any, on stdout."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    old = None
    try:
        if hasattr(signal, "SIGALRM"):
            def out_of_time(*_):
                raise TimeoutError
            old = signal.signal(signal.SIGALRM, out_of_time)
            signal.setitimer(signal.ITIMER_REAL, BUDGET)
        raw = stdin.read(MAX_STDIN)
        data = json.loads(raw) if raw.strip() else {}
        if not isinstance(data, dict):
            return 0
        text = handle(data, env, settings)
        if text:
            stdout.write(text)
            stdout.flush()
    except BaseException as exc:      # noqa: BLE001 - a hook never breaks the agent it runs in
        _log_problem(env, f"{type(exc).__name__}: {exc}"[:300])
    finally:
        if old is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return 0


def _log_problem(env, line: str) -> None:
    """A problem inside the hook, kept where the operator looks (never raised)."""
    try:
        layout = resolve(env)
        layout.guard_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(layout.guard_dir / "hook.log", "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {line}\n")
    except Exception:                 # noqa: BLE001
        pass


def _settings(layout: ClaudeLayout, env=None):
    """The operator's settings for Claude Code (<config>/compaction-guard/config.yaml), or the
    defaults when that file cannot be read (the hook still runs)."""
    from ... import config
    from ...settings import DEFAULT
    try:
        return config.load(layout, env).settings
    except GuardError as exc:
        _log_problem(env, f"settings: {exc}"[:300])
        return DEFAULT


def handle(data: dict, env=None, settings=None) -> str:
    event = data.get("hook_event_name")
    session = str(data.get("session_id") or "")
    transcript = data.get("transcript_path")
    layout = resolve(env)
    if event in ("UserPromptSubmit", "PostToolUse"):
        # the ordinary path, on every prompt and tool call: one stat() of the session's
        # pending mark, nothing imported, no settings read, unless a warning is due
        if not pending_mark(layout, session).exists():
            return ""
        return _warn_once(layout, session, event, settings or _settings(layout, env))
    settings = settings or _settings(layout, env)
    if event == "PreCompact" and isinstance(transcript, str):
        from . import store
        history, _ = store.history_since_boundary(Path(transcript), settings.max_input_chars)
        keep = identifiers_of(history, 20)
        return f"Keep these identifiers verbatim in the summary: {', '.join(keep)}.\n" if keep else ""
    if event == "PostCompact":
        return _post_compact(layout, session, data, transcript, settings)
    return ""


_UNSAFE_RE = re.compile(r"[^A-Za-z0-9_.-]")


def pending_mark(layout: ClaudeLayout, session: str) -> Path:
    """The file whose presence says a warning is due in this session (made by a failed
    PostCompact, removed when the warning is given)."""
    return layout.guard_dir / "pending" / (_UNSAFE_RE.sub("_", session)[:120] or "_")


def identifiers_of(text: str, most: int) -> list:
    """The text's identifiers (paths, ids, versions, figures with units): those the user's own
    messages name first, in their order, then the rest, most frequent first."""
    from collections import Counter
    from ...detectors.identifiers import scan
    said = [i for m in _USER_RE.finditer(text) for i, _ in scan(m.group(1)[:4000])]
    c = Counter(i for i, _ in scan(text))
    out = list(dict.fromkeys(said))
    out += [i for i, _ in c.most_common(most * 2) if i not in out]
    return out[:most]


def _post_compact(layout, session: str, data: dict, transcript, settings) -> str:
    from ...check import check_record
    from ...records import SummaryRecord
    from ...state import StateStore, now_iso, state_path
    from . import store
    raw = data.get("compact_summary")
    if not isinstance(raw, str):
        return ""
    summary = store.strip_analysis(raw)
    history, previous = ("", None)
    if isinstance(transcript, str) and Path(transcript).is_file():
        history, previous = store.history_since_boundary(Path(transcript), settings.max_input_chars)
    rec = SummaryRecord(f"postcompact@{now_iso()}", summary, store.KIND, input_text=history or None,
                        previous=previous, stale_scope=None)
    result = check_record(rec, settings)
    # ids and figures only: the reason, the dropped identifiers and the user's request are
    # read again from the transcript when the warning is given, never kept in the state
    entry = {"id": rec.id, "failures": list(result.failures), "at": now_iso(), "trigger": data.get("trigger"),
             "transcript": transcript if isinstance(transcript, str) else None}
    if result.failures:
        entry["pending"] = True
    # the session's verdict (what the next prompt's warning reads); the stored summary itself
    # is counted once, by a check of the transcripts (--agent claude-code --check), not here
    with StateStore(state_path(layout), settings).update() as state:
        state["sessions"][f"{store.KIND}:{session}"] = entry
    mark = pending_mark(layout, session)
    if result.failures:
        mark.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        mark.touch()
    elif mark.exists():
        mark.unlink()           # a good compaction since: the old warning is no longer due
    return ""


_USER_RE = re.compile(r"^user: (.+)$", re.M)


def _last_request(history: str) -> str:
    asks = [m.group(1).strip() for m in _USER_RE.finditer(history)]
    return asks[-1][:300] if asks else ""


def _warn_once(layout, session: str, event: str, settings) -> str:
    from ...state import StateStore, now_iso, state_path
    from . import store
    where = state_path(layout)
    pending_mark(layout, session).unlink(missing_ok=True)
    if not where.exists():
        return ""
    key = f"{store.KIND}:{session}"
    with StateStore(where, settings).update() as state:
        entry = state["sessions"].get(key)
        if not isinstance(entry, dict) or not entry.get("pending"):
            return ""
        entry["pending"] = False
        entry["warned_at"] = now_iso()
    reason, lost, ask = "", [], ""
    transcript = entry.get("transcript")
    if isinstance(transcript, str) and Path(transcript).is_file():
        reason, lost, ask = _what_was_lost(Path(transcript), settings)
    lines = [f"compaction-resilience-guard: the last compaction of this session failed its check "
             f"({', '.join(entry.get('failures') or [])}): {reason}".strip().rstrip(":"),
             "The summary you were given does not carry the earlier conversation."]
    if lost:
        lines.append(f"Identifiers from before the compaction that the summary dropped: {', '.join(lost)}.")
    if ask:
        lines.append(f"The user's last request before it: {ask}")
    lines.append("If you need more, read the full transcript: "
                 f"{entry.get('transcript') or 'its path is in the summary'}.")
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": "\n".join(lines)}})


def _what_was_lost(path: Path, settings) -> tuple:
    """(the reason, the identifiers dropped, the user's last request) of the transcript's last
    compaction, read from the transcript itself."""
    from ...check import check_record
    from . import store
    recs = list(store.TranscriptSource(path).records(None))
    if not recs:
        return "", [], ""
    last = recs[-1]
    result = check_record(last, settings)
    history = last.input_text or ""
    lost = [i for i in identifiers_of(history, 40) if i not in last.content][:12]
    return next(iter(result.reasons.values()), "")[:400], lost, _last_request(history)


# ------------------------------------------------------------------ install
def command() -> str:
    """The command the hook entries run: this Python and this guard, wherever they are (from a
    source checkout, its guard.py; installed, the package)."""
    import shlex
    checkout = Path(__file__).resolve().parents[3] / "guard.py"
    if checkout.is_file():
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(checkout))} {MARK}"
    return f"{shlex.quote(sys.executable)} -m compaction_guard {MARK}"


def settings_file(layout: ClaudeLayout, project: str | None) -> Path:
    return (Path(project) / ".claude" / "settings.json") if project else layout.settings_path


def _read_settings(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise GuardError(f"{path}: not readable as JSON ({exc}); fix it by hand, then run this again") from None
    if not isinstance(data, dict):
        raise GuardError(f"{path}: not a JSON object; fix it by hand, then run this again")
    return data


def _ours(h) -> bool:
    return isinstance(h, dict) and MARK in str(h.get("command", ""))


def install(layout: ClaudeLayout, project: str | None = None, cmd: str | None = None) -> dict:
    path = settings_file(layout, project)
    data = _read_settings(path)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    if "hooks" in data and not isinstance(data["hooks"], dict):
        raise GuardError(f"{path}: `hooks` is not an object; fix it by hand, then run this again")
    cmd = cmd or command()
    added = []
    for ev in EVENTS:
        groups = hooks.get(ev) if isinstance(hooks.get(ev), list) else []
        have = [h for g in groups if isinstance(g, dict) for h in g.get("hooks", []) if _ours(h)]
        if have and all(h.get("command") == cmd for h in have):
            continue
        groups = [dict(g, hooks=[h for h in g.get("hooks", []) if not _ours(h)]) if isinstance(g, dict) else g
                  for g in groups]
        groups = [g for g in groups if not (isinstance(g, dict) and not g.get("hooks"))]
        groups.append({"matcher": "", "hooks": [{"type": "command", "command": cmd, "timeout": HOOK_TIMEOUT}]})
        hooks[ev] = groups
        added.append(ev)
    if added:
        data["hooks"] = hooks
        _write(path, data)
    return {"settings": str(path), "added": added, "command": cmd, "state": str(layout.guard_dir / "state.yaml")}


def uninstall(layout: ClaudeLayout, project: str | None = None) -> dict:
    path = settings_file(layout, project)
    data = _read_settings(path)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    removed = []
    for ev, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        kept = []
        for g in groups:
            if isinstance(g, dict) and any(_ours(h) for h in g.get("hooks", [])):
                rest = [h for h in g.get("hooks", []) if not _ours(h)]
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
        _write(path, data)
    return {"settings": str(path), "removed": sorted(set(removed))}


def _write(path: Path, data: dict) -> None:
    import tempfile
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except OSError as exc:
        raise GuardError(f"{path}: cannot be written ({exc.strerror}); check its permissions") from None
