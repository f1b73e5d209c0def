"""The guard behind Gemini CLI: its hook, and installing it in settings.json.

Gemini CLI has no event after a compression. PreCompress fires before every model call of the
main chat, whether or not it then compresses, so a mark there says nothing. What does show a
compression is the session file: Gemini CLI writes the new history (`$set`, store.py) before the
model call that carries it, and BeforeModel, which fires before every model call, names that
file (`transcript_path`). So the guard runs on BeforeModel only:

- the ordinary path (every model call): the event's first bytes read for the session and the
  file (the rest of the request is not read), the file's size compared with where the guard
  last looked (`<guard dir>/seen/<session>`), and only what was appended since searched for
  Gemini CLI's fixed acknowledgement of a summary. No detector is imported.
- after a compression (the acknowledgement appended): the session file's newest compression is
  judged with the same detectors as every store, against the messages it replaced and Gemini
  CLI's own count before; the verdict goes to the state (`--agent gemini --status`). A resume,
  which rewrites the history with the acknowledgement in it, is no new compression.
- after a failed one: the warning goes to the model in the request it is about to send (the
  event's `llm_request`, its text rewritten), appended to the summary message itself: the
  reason, the identifiers the summary dropped, the user's last request, where the full
  transcript is. Gemini CLI does not store a rewritten request, so later requests that still
  carry that summary get a short note beside it (the failure and the transcript's path; no
  text of the conversation is kept by the guard) until a new compression replaces it.
  Context from BeforeAgent or SessionStart would be stored in the session instead, and
  Gemini CLI drops such messages on `--resume` when they start with `<hook_context>`.
Whatever happens inside, it exits 0 and prints nothing it should not: it never breaks Gemini CLI.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from .. import hookkit
from .layout import GeminiLayout, resolve

EVENTS = ("BeforeModel",)
MARK = "hook gemini"                # how the guard's own entries are known in settings.json
HOOK_TIMEOUT = 30000                # milliseconds Gemini CLI gives the command (settings.json `timeout`)
BUDGET = 20.0                       # the command's own limit, in seconds, under Gemini CLI's
ACK = b"Got it. Thanks for the additional context!"      # store.ACK, without importing the store
HEAD = 1 << 16                      # how much of the event is read on the ordinary path

# Gemini CLI writes the event as JSON.stringify of {session_id, transcript_path, cwd,
# hook_event_name, timestamp, ...}: its first keys are read from the first bytes
_STR = r'"((?:[^"\\]|\\.)*)"'
_HEAD_RE = re.compile(r'\{\s*"session_id"\s*:\s*' + _STR + r'\s*,\s*"transcript_path"\s*:\s*' + _STR
                      + r'\s*,\s*"cwd"\s*:\s*' + _STR + r'\s*,\s*"hook_event_name"\s*:\s*' + _STR)


def read_event(stdin) -> dict:
    """The event's first keys from its first bytes; `whole()` reads and parses the rest when a
    hook needs the request itself. An event in another shape is read whole."""
    head = stdin.read(HEAD)
    m = _HEAD_RE.match(head)
    if m is None:
        data = json.loads(head + stdin.read(hookkit.MAX_STDIN)) if head.strip() else {}
        if isinstance(data, dict):
            data["whole"] = lambda: data
        return data
    sid, transcript, cwd, event = (json.loads(f'"{g}"') for g in m.groups())
    data = {"session_id": sid, "transcript_path": transcript, "cwd": cwd, "hook_event_name": event}
    data["whole"] = lambda: json.loads(head + stdin.read())
    return data


def hook_main(stdin=None, stdout=None, env=None, settings=None) -> int:
    """One hook call. Always 0; the answer, if any, on stdout."""
    return hookkit.main(handle, resolve, BUDGET, stdin, stdout, env, settings, read=read_event)


def seen_mark(layout: GeminiLayout, session: str) -> Path:
    """How far into the session file the guard has looked (its size then, and its inode)."""
    return hookkit.mark(layout.guard_dir, "seen", session)


def warn_mark(layout: GeminiLayout, session: str) -> Path:
    """Present while the session's newest summary failed its check: the summary's id, the
    failures, the transcript, and whether the full warning was given."""
    return hookkit.mark(layout.guard_dir, "failed", session)


def handle(data: dict, env=None, settings=None) -> str:
    if data.get("hook_event_name") != "BeforeModel":
        return ""
    session = str(data.get("session_id") or "")
    transcript = data.get("transcript_path")
    if not session or not isinstance(transcript, str) or not transcript:
        return ""
    layout = resolve(env)
    warning = ""
    if _compressed_since(layout, session, Path(transcript)):
        warning = _judge(layout, session, transcript, settings or hookkit.load_settings(layout, env))
    failed = warn_mark(layout, session)
    if not warning and not failed.exists():
        return ""
    return _annotate(data, layout, failed, warning, env, settings)


def _compressed_since(layout, session: str, path: Path) -> bool:
    """Whether Gemini CLI appended a summary's acknowledgement to the session file since the
    guard last looked (the first look reads the file from its start); where it looked is moved
    to the file's end."""
    mark = seen_mark(layout, session)
    try:
        st = path.stat()
    except OSError:
        return False
    offset, inode = 0, None
    try:
        offset, inode = (int(x) for x in mark.read_text(encoding="ascii").split())
    except (OSError, ValueError):
        pass
    if inode != st.st_ino or offset > st.st_size:
        offset = 0
    if offset == st.st_size:
        return False
    found = False
    with open(path, "rb") as fh:
        fh.seek(max(0, offset - len(ACK)))
        tail = b""
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            if ACK in tail + chunk:
                found = True
                break
            tail = chunk[-len(ACK):]
    hookkit.set_mark(mark, True, f"{st.st_size} {st.st_ino}")
    return found


def _judge(layout, session: str, transcript: str, settings) -> str:
    """The session file's newest compression judged, its verdict recorded; the full warning
    for the model when it failed, else ''."""
    from ...check import check_record
    from ...state import StateStore, keep_verdict, now_iso, state_path
    from ...verdicts import count_once
    from . import store
    src = store.SessionSource(Path(transcript))
    last = hookkit.newest_record(src, settings)
    if last is None:
        return ""
    last.key = src.count_key(last)
    key = f"{store.KIND}:{session}"
    states = StateStore(state_path(layout), settings, agent=layout.agent)
    with states.update() as state:
        before = state["sessions"].get(key)
        if isinstance(before, dict) and before.get("id") == last.id and before.get("transcript"):
            return ""               # judged already by this hook (a resume reloaded it); a check's verdict
            #                         alone (no transcript) has told the model nothing yet
        result = check_record(last, settings)
        # counted once (the next check of the sessions does not count it again)
        count_once(states, state, last, result, settings, layout.agent)
        # ids and figures only: no text of the conversation is kept in the state
        entry = {"id": last.id, "failures": list(result.failures), "at": now_iso(), "transcript": transcript}
        if result.failures:
            entry["warned_at"] = now_iso()
        keep_verdict(state, key, entry)
    failed = warn_mark(layout, session)
    if not result.failures:
        failed.unlink(missing_ok=True)
        return ""
    hookkit.set_mark(failed, True, json.dumps({"id": last.id, "failures": list(result.failures),
                                               "transcript": transcript, "told": False}))
    reason, lost, ask = hookkit.lost_in(last, result)
    return hookkit.warning_text(list(result.failures), reason, lost, ask, transcript)


def note_text(failures: list, transcript) -> str:
    """What later requests carry beside a summary that failed its check."""
    return (f"compaction-resilience-guard: the summary above failed its check ({', '.join(failures)}) and does "
            f"not carry the earlier conversation; the full transcript is {transcript}.")


def _annotate(data: dict, layout, failed: Path, warning: str, env, settings) -> str:
    """The request with the warning appended to the summary message: the text of the first
    text-bearing messages up to it, which Gemini CLI puts back in order. The full warning goes
    to the first request that carries the summary (after `/compress`, Gemini CLI's next request
    may still be the history before it), the short note to every later one; '' when the
    request carries no summary."""
    try:
        info = json.loads(failed.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    whole = data.get("whole")
    request = whole().get("llm_request") if callable(whole) else data.get("llm_request")
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list):
        return ""
    at = next((i for i in range(len(messages) - 1)
               if isinstance(messages[i], dict) and isinstance(messages[i + 1], dict)
               and messages[i + 1].get("role") == "model"
               and str(messages[i + 1].get("content", "")).strip() == ACK.decode()), None)
    if at is None:
        return ""
    transcript = info.get("transcript")
    if not warning and not info.get("told") and isinstance(transcript, str) and Path(transcript).is_file():
        from . import store
        settings = settings or hookkit.load_settings(layout, env)
        reason, lost, ask = hookkit.what_was_lost(store.SessionSource(Path(transcript)), settings)
        warning = hookkit.warning_text(info.get("failures") or [], reason, lost, ask, transcript)
    if warning and not info.get("told"):
        hookkit.set_mark(failed, True, json.dumps(dict(info, told=True)))
    text = warning or note_text(info.get("failures") or [], transcript)
    out = [dict(m) for m in messages[:at + 1]]
    out[at]["content"] = f"{out[at].get('content', '')}\n\n{text}"
    return json.dumps({"hookSpecificOutput": {"hookEventName": "BeforeModel", "llm_request": {"messages": out}}},
                      ensure_ascii=False)


# ------------------------------------------------------------------ install
def install(layout: GeminiLayout, args=None) -> dict:
    return hookkit.install_entries(layout.settings_path, EVENTS, MARK, HOOK_TIMEOUT, layout.guard_dir, "settings",
                                   matcher=False)


def uninstall(layout: GeminiLayout, args=None) -> dict:
    return hookkit.uninstall_entries(layout.settings_path, MARK, "settings")
