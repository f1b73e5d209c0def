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

from pathlib import Path

from .. import hookkit
from .layout import ClaudeLayout, resolve

EVENTS = ("PreCompact", "PostCompact", "UserPromptSubmit", "PostToolUse")
MARK = "hook claude-code"           # how the guard's own entries are known in settings.json
HOOK_TIMEOUT = 30                   # seconds Claude Code gives the command (settings.json `timeout`)
BUDGET = 20.0                       # the command's own limit, under Claude Code's


# ------------------------------------------------------------------ the hook
def hook_main(stdin=None, stdout=None, env=None, settings=None) -> int:
    """One hook call. Always 0; the answer, if any, on stdout."""
    return hookkit.main(handle, resolve, BUDGET, stdin, stdout, env, settings)


def _settings(layout: ClaudeLayout, env=None):
    return hookkit.load_settings(layout, env)


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
        keep = hookkit.identifiers_of(history, 20)
        return f"Keep these identifiers verbatim in the summary: {', '.join(keep)}.\n" if keep else ""
    if event == "PostCompact":
        return _post_compact(layout, session, data, transcript, settings)
    return ""


def pending_mark(layout: ClaudeLayout, session: str) -> Path:
    """The file whose presence says a warning is due in this session (made by a failed
    PostCompact, removed when the warning is given)."""
    return hookkit.mark(layout.guard_dir, "pending", session)


def _post_compact(layout, session: str, data: dict, transcript, settings) -> str:
    from ...check import check_record
    from ...records import SummaryRecord
    from ...state import now_iso
    from . import store
    raw = data.get("compact_summary")
    if not isinstance(raw, str):
        return ""
    summary = store.strip_analysis(raw)
    history, previous, used = ("", None, None)
    if isinstance(transcript, str) and Path(transcript).is_file():
        history, previous, used = store.history_since_boundary(Path(transcript), settings.max_input_chars, True)
    # sized against Claude Code's own count of its context (system prompt and tools included, as
    # its preTokens are), not the visible history alone: a summary of a short history may still
    # shrink a context of thousands of tokens
    rec = SummaryRecord(f"postcompact@{now_iso()}", summary, store.KIND, input_text=history or None,
                        previous=previous, stale_scope=None, context_before=used,
                        context_source="Claude Code's own count of its context on its last turn" if used else "",
                        meta={"session": session, "trigger": data.get("trigger")})
    # counted once under the identity a check of the transcript knows it by too (its entry's
    # uuid is not written yet): the session and the text
    rec.key = store.hook_key(session, summary)
    hookkit.know_own_answer(layout, settings, rec)     # serve (the relay) wrote it: not warned about
    result = check_record(rec, settings)
    # ids and figures only: the reason, the dropped identifiers and the user's request are
    # read again from the transcript when the warning is given, never kept in the state
    entry = {"id": rec.id, "failures": list(result.failures), "at": now_iso(), "trigger": data.get("trigger"),
             "transcript": transcript if isinstance(transcript, str) else None}
    if result.failures:
        entry["pending"] = True
    # the session's verdict (what the next prompt's warning reads), and the summary counted once
    hookkit.record_verdict(layout, settings, f"{store.KIND}:{session}", entry, rec, result)
    # a good compaction since: the old warning is no longer due
    hookkit.set_mark(pending_mark(layout, session), bool(result.failures))
    return ""


def _warn_once(layout, session: str, event: str, settings) -> str:
    from . import store
    return hookkit.warn_once(layout, f"{store.KIND}:{session}", pending_mark(layout, session), event, settings,
                             store.TranscriptSource)


# ------------------------------------------------------------------ install
def settings_file(layout: ClaudeLayout, project: str | None) -> Path:
    return (Path(project) / ".claude" / "settings.json") if project else layout.settings_path


def install(layout: ClaudeLayout, args=None) -> dict:
    path = settings_file(layout, getattr(args, "project", None))
    return hookkit.install_entries(path, EVENTS, MARK, HOOK_TIMEOUT, layout.guard_dir, "settings")


def uninstall(layout: ClaudeLayout, args=None) -> dict:
    return hookkit.uninstall_entries(settings_file(layout, getattr(args, "project", None)), MARK, "settings")
