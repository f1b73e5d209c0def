"""A Codex hook command for the recordings: appends {event, stdin} (one JSON line) to LOG.

    python3 hook_recorder.py <EventName> <log.jsonl> [inject]

With `inject` (third argument), SessionStart / UserPromptSubmit / PostToolUse print a Claude-style
`hookSpecificOutput.additionalContext` holding the marker `GUARD-CTX-<Event>` (to see whether the model
receives it); every other event prints nothing. Always exits 0.
"""
import json
import sys

event = sys.argv[1] if len(sys.argv) > 1 else "?"
log = sys.argv[2] if len(sys.argv) > 2 else "/dev/null"
inject = len(sys.argv) > 3 and sys.argv[3] == "inject"
raw = sys.stdin.read()
try:
    data = json.loads(raw)
except ValueError:
    data = raw
seen = None     # how many `compacted` lines the transcript holds while this hook runs (observation, not stdin)
if isinstance(data, dict) and data.get("transcript_path"):
    try:
        with open(data["transcript_path"], encoding="utf-8") as t:
            seen = sum(1 for line in t if '"type":"compacted"' in line.replace(" ", "")[:120])
    except OSError:
        seen = None
with open(log, "a", encoding="utf-8") as fh:
    fh.write(json.dumps({"event": event, "stdin": data, "compacted_lines_seen": seen}, ensure_ascii=False) + "\n")
if inject and event in ("SessionStart", "UserPromptSubmit", "PostToolUse"):
    src = data.get("source", "") if isinstance(data, dict) else ""
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": event,
        "additionalContext": f"GUARD-CTX-{event}{'-' + src if src else ''}: the guard says the last compaction "
                             f"summary was checked (marker for the recording)."}}))
sys.exit(0)
