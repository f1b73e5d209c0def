"""The guard behind Codex: its hook, and installing the hook.

Codex keeps everything under its home (`$CODEX_HOME`, else `~/.codex`, layout.py): rollouts
under `sessions/` (store.py), hooks in `hooks.json`. The guard keeps its state for Codex in
`<home>/compaction-guard/state.yaml` (`--agent codex --status` / `--report` read it).

`compaction-guard hook codex` is one command for every hook event, reading the hook's JSON on
stdin (`session_id`, `turn_id`, `transcript_path`, `hook_event_name`, `trigger`, ...; Codex
gives no hook the summary: it is the rollout's newest `compacted` line):
- PreCompact: leaves a mark for the session (the turn, the trigger, how many compactions the
  rollout held);
- PostCompact: checks the rollout's newest compaction against the conversation it replaced
  and Codex's own counts, with the same detectors as every store, and records the verdict for
  the session; a failed one leaves a warning due;
- SessionStart, UserPromptSubmit: a PreCompact mark still there (no PostCompact followed) is a
  compaction Codex dropped: after a turn, when its model answered nothing or the call failed,
  Codex keeps the history, prints one WARN line and exits 0; it is counted as an `empty`
  failure. Then, after a failed compaction, once, `additionalContext` (the reason, the
  identifiers the summary dropped, the user's last request), which Codex puts before the
  model as a developer message (SessionStart with source `compact` comes right after the
  summary). With no mark, the whole of the path is two stat() calls.
Whatever happens inside, it exits 0 and prints nothing it should not: it never breaks Codex.

Codex runs a hook only once the user trusted it: Codex 0.171 asks at its start ("Hooks need review",
"Trust all and continue"), `/hooks` in the TUI lists them; `codex exec --dangerously-bypass-hook-trust`
runs untrusted ones.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from .. import hookkit
from .layout import CodexLayout, resolve

EVENTS = ("PreCompact", "PostCompact", "SessionStart", "UserPromptSubmit")
MARK = "hook codex"                 # how the guard's own entries are known in hooks.json
HOOK_TIMEOUT = 30                   # seconds Codex gives the command (hooks.json `timeout`)
BUDGET = 20.0                       # the command's own limit, under Codex's
WARN_EVENTS = ("SessionStart", "UserPromptSubmit")


def hook_main(stdin=None, stdout=None, env=None, settings=None) -> int:
    """One hook call. Always 0; the answer, if any, on stdout."""
    return hookkit.main(handle, resolve, BUDGET, stdin, stdout, env, settings)


def _settings(layout: CodexLayout, env=None):
    return hookkit.load_settings(layout, env)


def pending_mark(layout: CodexLayout, session: str) -> Path:
    """Present while a warning is due in this session (a failed PostCompact made it)."""
    return hookkit.mark(layout.guard_dir, "pending", session)


def compacting_mark(layout: CodexLayout, session: str) -> Path:
    """Present from PreCompact until its PostCompact: still there later, the compaction was
    dropped."""
    return hookkit.mark(layout.guard_dir, "compacting", session)


def handle(data: dict, env=None, settings=None) -> str:
    event = data.get("hook_event_name")
    session = str(data.get("session_id") or "")
    layout = resolve(env)
    if event in WARN_EVENTS:
        # the ordinary path, on every prompt and session start: two stat() calls
        compacting, pending = compacting_mark(layout, session), pending_mark(layout, session)
        if not compacting.exists() and not pending.exists():
            return ""
        settings = settings or _settings(layout, env)
        if compacting.exists():
            _dropped(layout, session, compacting, settings)
        if not pending.exists():
            return ""
        return _warn_once(layout, session, event, settings)
    if event == "PreCompact":
        transcript = data.get("transcript_path")
        held = _compactions_in(Path(transcript)) if isinstance(transcript, str) else None
        hookkit.set_mark(compacting_mark(layout, session), True, json.dumps(
            {"turn_id": data.get("turn_id"), "trigger": data.get("trigger"), "transcript": transcript,
             "compactions": held, "at": _now()}))
        return ""
    if event == "PostCompact":
        compacting_mark(layout, session).unlink(missing_ok=True)
        return _post_compact(layout, session, data, settings or _settings(layout, env))
    return ""


def _now() -> str:
    from ...state import now_iso
    return now_iso()


def _compactions_in(path: Path):
    """How many `compacted` lines a rollout holds now (None when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return sum(1 for line in fh if b'"type":"compacted"' in line[:120].replace(b" ", b""))
    except OSError:
        return None


def _post_compact(layout, session: str, data: dict, settings) -> str:
    from ...check import check_record
    from ...state import now_iso
    from . import store
    transcript = data.get("transcript_path")
    if not isinstance(transcript, str) or not Path(transcript).is_file():
        return ""
    src = store.RolloutSource(Path(transcript))
    last = hookkit.newest_record(src, settings)
    if last is None:
        return ""
    last.key = src.count_key(last)
    result = check_record(last, settings)
    # ids and figures only: the reason and what was lost are read again from the rollout
    # when the warning is given, never kept in the state
    entry = {"id": last.id, "failures": list(result.failures), "at": now_iso(), "trigger": data.get("trigger"),
             "transcript": transcript}
    if result.failures:
        entry["pending"] = True
    # the session's verdict, and the stored summary counted once (a check of the rollouts
    # does not count it again)
    hookkit.record_verdict(layout, settings, f"{store.KIND}:{session}", entry, last, result)
    hookkit.set_mark(pending_mark(layout, session), bool(result.failures))
    return ""


def _dropped(layout, session: str, mark: Path, settings) -> None:
    """A PreCompact with no PostCompact after it: if the rollout holds no new compaction, Codex
    dropped it. Counted as an `empty` failure (no summary was stored: the stored-summary
    counts do not move), once: the mark goes."""
    from ...state import StateStore, apply_counts, keep_verdict, now_iso, state_path
    from . import store
    try:
        info = json.loads(mark.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = {}
    mark.unlink(missing_ok=True)
    info = info if isinstance(info, dict) else {}
    transcript = info.get("transcript")
    before = info.get("compactions")
    now_held = _compactions_in(Path(transcript)) if isinstance(transcript, str) else None
    if isinstance(before, int) and isinstance(now_held, int) and now_held > before:
        return                  # stored after all (its PostCompact did not run): a check reads it
    when = now_iso()
    turn = info.get("turn_id") if isinstance(info.get("turn_id"), str) else "?"
    answered = _compaction_answer(Path(transcript), turn) if isinstance(transcript, str) else None
    with StateStore(state_path(layout), settings, agent=layout.agent).update() as state:
        # its event for a team's telemetry: a verdict with no summary behind it
        state["_verdicts"] = [{"at_ns": time.time_ns(), "agent": layout.agent, "via": "hook", "source": store.KIND,
                               "summary_id": f"dropped@{turn}", "session": session, "valid": False,
                               "failures": ["empty"], "warnings": [], "level": None, "fallback": False,
                               "tokens_before": None, "tokens_after": answered, "trigger": info.get("trigger")}]
        apply_counts(state, {"day": when[:10], "stored": {}, "failures": [[store.KIND, "empty", 1]],
                             "entries": [{"summary_id": f"dropped@{turn}", "failure_type": "empty", "level_used": None,
                                          "input_tokens": None, "output_tokens": None, "detected_at": when,
                                          "source": store.KIND}]})
        keep_verdict(state, f"{store.KIND}:{session}", {
            "id": f"dropped@{turn}", "failures": ["empty"], "at": when, "trigger": info.get("trigger"),
            "transcript": transcript if isinstance(transcript, str) else None, "dropped": True,
            "compaction_output_tokens": answered})


def _compaction_answer(path: Path, turn: str):
    """Codex's own count of what its compaction call for `turn` answered: the output tokens of
    the turn's last `token_usage_record` when no conversation item follows it (the call that
    came after the turn's reply); None when Codex recorded no such call (it failed)."""
    last, since = None, False
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if turn.encode() not in raw:
                    continue
                try:
                    d = json.loads(raw)
                except ValueError:
                    continue
                p = d.get("payload") if isinstance(d, dict) else None
                if not isinstance(p, dict):
                    continue
                if d.get("type") == "token_usage_record" and p.get("turn_id") == turn:
                    usage = p.get("usage") if isinstance(p.get("usage"), dict) else {}
                    last, since = usage.get("output_tokens"), False
                elif d.get("type") == "response_item":
                    since = True
    except OSError:
        return None
    return last if isinstance(last, int) and not since else None


def _warn_once(layout, session: str, event: str, settings) -> str:
    from . import store
    return hookkit.warn_once(layout, f"{store.KIND}:{session}", pending_mark(layout, session), event, settings,
                             store.RolloutSource)


# ------------------------------------------------------------------ install
def install(layout: CodexLayout, args=None) -> dict:
    return hookkit.install_entries(layout.hooks_path, EVENTS, MARK, HOOK_TIMEOUT, layout.guard_dir, "hooks",
                                   matcher=False)


def uninstall(layout: CodexLayout, args=None) -> dict:
    return hookkit.uninstall_entries(layout.hooks_path, MARK, "hooks")
