"""Codex CLI's rollouts: `<home>/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl` and, once
archived, `<home>/archived_sessions/`, `<home>` being `$CODEX_HOME` or `~/.codex`.

One JSON object per line, `{"timestamp", "ordinal", "type", "payload"}`, appended; the first is
`session_meta` (its `payload.id` is the thread). A compaction is one `compacted` line:

    {"type": "compacted", "payload": {"message": "<Codex's fixed prefix>\\n<the summary>",
     "replacement_history": [...], "window_id": ..., "compaction_response_id": ...,
     "latest_token_usage_record": {"response_id": <the compaction call's>, ...}, ...}}

Each compaction is one record: id = its `window_id` (else `line@<offset>`), the summary without
Codex's prefix, its input what Codex summarized: the messages the previous compaction carried
past it (its `replacement_history`: every user message so far) and the conversation since (the
`response_item` lines: the user's messages, the assistant's, tool calls and their output;
developer messages and the environment context left out), `previous` the summary before it,
and Codex's own
counts: `context_before` the `last_token_usage.total_tokens` of the last model call before the
compaction that was not the compaction call itself, `context_after` Codex's estimate of the new
context (the first `token_count` after the line). Read from the byte offset where the last check
stopped, the current window (since its `compacted` line) read again for its text and counts; a
line that is not JSON, or a last line still being written, is skipped. Nothing is written.

Observed in Codex 0.171.0 (tests/recordings/codex/FINDINGS.md): an empty compaction answer is
dropped after a turn (no line at all: only the hook can see it), and stored before a turn or
when asked for (`thread/compact/start`) as the thread's last assistant reply, the empty answer
kept just before it as a `response_item` marked `compaction_output`: that answer is the record's
`answer`, and a blank one under the stored reply is an `empty` failure whatever the reply says.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Optional

from ...stores.source import SessionFileSource, json_lines, keep_tail, open_store

KIND = "codex"
PREFIX = ("Another language model started to solve this problem and produced a summary of its thinking process. "
          "You also have access to the state of the tools that were used by that language model. Use this to build "
          "on the work that has already been done and avoid duplicating work. Here is the summary produced by the "
          "other language model, use the information in this summary to assist with your own analysis:")
COUNTS = "Codex's token_count events (the last call before, its estimate after)"


def rollout_files(layout) -> list:
    """Every rollout of a Codex home (live sessions, then archived ones), in a stable order."""
    out = []
    if layout.sessions.is_dir():
        out += sorted(p for p in layout.sessions.glob("*/*/*/rollout-*.jsonl") if p.is_file())
    if layout.archived.is_dir():
        out += sorted(p for p in layout.archived.glob("rollout-*.jsonl") if p.is_file())
    return out


def discover(layout) -> tuple:
    """(sources, errors): every rollout under a Codex home."""
    return [RolloutSource(f) for f in rollout_files(layout)], []


def summary_of(message) -> str:
    """The summary in a `compacted` line's message, Codex's fixed prefix taken away."""
    if not isinstance(message, str):
        return ""
    if message.startswith(PREFIX):
        return message[len(PREFIX):].lstrip("\n")
    return message


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)) \
        if isinstance(content, list) else ""


def item_text(d: dict) -> str:
    """What a conversation `response_item` says, rendered `user: ...` / `assistant: ...` (tool
    calls as `[tool NAME] args`, their output as `tool: ...`), or '' for anything else
    (developer messages, the environment context, a compaction call's own output)."""
    if d.get("type") != "response_item":
        return ""
    p = d.get("payload")
    if not isinstance(p, dict) or (isinstance(d.get("metadata"), dict) and d["metadata"].get("compaction_output")):
        return ""
    kind = p.get("type")
    if kind == "message":
        role = p.get("role")
        meta = p.get("internal_chat_message_metadata_passthrough")
        kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
        kinds = kinds if isinstance(kinds, list) else []
        if role not in ("user", "assistant") or any(k != "user.text" and k != "unknown" for k in kinds):
            return ""
        text = _text(p.get("content"))
        if not text or (role == "user" and text.startswith("<environment_context>")):
            return ""
        return f"{role}: {text}"
    if kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = p.get("arguments") or p.get("input") or p.get("action") or ""
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return f"[tool {p.get('name') or kind}] {args[:2000]}"
    if kind in ("function_call_output", "custom_tool_call_output"):
        out = p.get("output")
        if isinstance(out, dict):
            out = out.get("content") if isinstance(out.get("content"), str) else json.dumps(out, ensure_ascii=False)
        return f"tool: {out[:4000]}" if isinstance(out, str) and out else ""
    return ""


def _token_total(d: dict) -> Optional[int]:
    """`last_token_usage.total_tokens` of a `token_count` event, or None for any other line."""
    if d.get("type") != "event_msg":
        return None
    p = d.get("payload")
    if not isinstance(p, dict) or p.get("type") != "token_count" or not isinstance(p.get("info"), dict):
        return None
    last = p["info"].get("last_token_usage")
    total = last.get("total_tokens") if isinstance(last, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


class _Window:
    """What a rollout holds since its last compaction: the conversation's text, and the
    token counts of the model calls (response id, total) in order."""

    def __init__(self):
        self.parts = []
        self.calls = []           # (response id or None, last_token_usage.total_tokens)
        self.response = None      # the response id of the last token_usage_record seen
        self.answer = None        # the compaction call's own output item, when Codex recorded it

    def read(self, d: dict) -> None:
        if d.get("type") == "response_item" and isinstance(d.get("metadata"), dict) \
                and d["metadata"].get("compaction_output") and isinstance(d.get("payload"), dict):
            self.answer = _text(d["payload"].get("content"))
            return
        t = item_text(d)
        if t:
            self.parts.append(t)
            return
        if d.get("type") == "token_usage_record":
            p = d.get("payload")
            self.response = p.get("response_id") if isinstance(p, dict) else None
            return
        total = _token_total(d)
        if total is not None and self.response is not None:
            self.calls.append((self.response, total))
            self.response = None

    def before(self, compaction_response) -> Optional[int]:
        """The last model call's count that was not the compaction call itself."""
        for rid, total in reversed(self.calls):
            if rid != compaction_response and total:
                return total
        return None


def _window_after(p: dict) -> "_Window":
    """The window a `compacted` line opens: what Codex carries past it (`replacement_history`:
    every user message so far, which its next compaction request summarizes again), the
    summary item aside (it is `previous`)."""
    window = _Window()
    for item in p.get("replacement_history") if isinstance(p.get("replacement_history"), list) else []:
        if isinstance(item, dict):
            window.read({"type": "response_item", "payload": item})
    return window


def history_now(path: Path, max_chars: int = 200_000) -> tuple:
    """(the conversation since the last compaction, the last stored summary or None, Codex's
    count before) of a rollout as it is now."""
    window, previous = _Window(), None
    with open_store(path) as fh:
        for _, _, d in json_lines(fh, 0):
            if not d:
                continue
            if d.get("type") == "compacted":
                p = d.get("payload") if isinstance(d.get("payload"), dict) else {}
                previous, window = summary_of(p.get("message")), _window_after(p)
            else:
                window.read(d)
    return keep_tail(window.parts, max_chars), previous, window.before(None)


class RolloutSource(SessionFileSource):
    """One Codex rollout (one thread)."""

    kind = KIND
    session_meta = "thread"

    def __init__(self, path: Path):
        super().__init__(path)
        name = path.name[:-len(".jsonl")] if path.name.endswith(".jsonl") else path.name
        self.thread = name[-36:] if len(name) >= 36 else name
        self._window = 0

    def records(self, watermark) -> Iterator:
        wm = watermark or {}
        offset = self._start(wm)
        window = wm.get("window") if offset else 0
        pos = window if isinstance(window, int) and 0 <= window <= offset else 0
        if isinstance(wm.get("thread"), str) and offset:
            self.thread = wm["thread"]
        previous = None
        current = _Window()
        pending = None          # a record waiting for Codex's count after it
        self._window = pos
        with open_store(self.path) as fh:
            for start, pos, d in json_lines(fh, pos):
                if d is None:
                    self.bad_lines += 0 if start < offset else 1
                    continue
                if not d:
                    continue
                kind = d.get("type")
                if kind == "session_meta" and isinstance(d.get("payload"), dict) and isinstance(d["payload"].get("id"), str):
                    self.thread = d["payload"]["id"]
                    continue
                if pending is not None:
                    after = _token_total(d)
                    if after is not None or kind == "compacted":
                        yield self._yielded(_record(self, *pending, after))
                        pending = None
                if kind == "compacted":
                    p = d.get("payload") if isinstance(d.get("payload"), dict) else {}
                    content = summary_of(p.get("message"))
                    usage = p.get("latest_token_usage_record")
                    rid = usage.get("response_id") if isinstance(usage, dict) else None
                    if start >= offset:
                        pending = (d, p, content, keep_tail(current.parts, self.input_chars), previous,
                                   current.before(rid), start, current.answer)
                    previous = content
                    current = _window_after(p)
                    self._window = start
                    continue
                current.read(d)
        if pending is not None:
            yield self._yielded(_record(self, *pending, None))
        self._finish(pos)

    def new_watermark(self) -> Optional[dict]:
        # the current window is read again from its compacted line: its summary is `previous` again
        return dict(super().new_watermark(), window=self._window, thread=self.thread)


def _record(src, d: dict, p: dict, content: str, replaced: str, previous, before, offset: int, answer, after):
    from ...records import SummaryRecord
    window_id = p.get("window_id")
    rid = str(window_id) if isinstance(window_id, str) and window_id else f"line@{offset}"
    return SummaryRecord(
        rid, content, KIND, input_text=replaced or None, input_tokens=None if replaced else before,
        previous=previous, stale_scope=f"{KIND}:{src.thread}", context_before=before, context_after=after,
        context_source=COUNTS if after is not None else "Codex's token_count events (the last call before)",
        answer=answer,
        meta={"thread": src.thread, "offset": offset, "timestamp": d.get("timestamp"),
              "window": p.get("window_number"), "tokens_before": before, "tokens_after": after})
