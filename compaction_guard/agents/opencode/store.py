"""opencode's database: `<data>/opencode.db` (SQLite in WAL mode; opencode 1.18.33,
tests/recordings/opencode/FINDINGS.md), read without changing anything beside it.

Tables `message(id, session_id, time_created, data)` and `part(id, message_id, session_id,
time_created, data)`, `data` JSON. A compaction is a `user` message whose part is
`{"type": "compaction", "auto", "overflow"?, "tail_start_id"?}` (the marker), then the summary: an
`assistant` message with `"summary": true` (every user message has `"summary": {"diffs": []}`:
only `true` counts), `"mode": "compaction"`, `parentID` the marker, `finish` once done, its text in
`text` parts (none at all when the model answered nothing: opencode stores that too).

Each summary is one record: id = the summary message's id, its session opencode's; the summary
(its text parts); its input the messages it replaced: those in the model's context before the
marker (after a compaction: the tail it kept, from its `tail_start_id`, then what came after its
summary), less the tail opencode keeps verbatim this time (from `tail_start_id` on), rendered as
the compaction request renders them; `previous` the session's previous summary; opencode's own
counts: before = `tokens.total` of the last ordinary assistant message before the marker (what
made it compact), after = the prompt of the first ordinary model call after the summary (`tokens`
input and cache of the next assistant message), when there is one. A summary still being written
(no `finish`, no `error`) is not read yet. Incremental by (time_created, id) of the summaries;
counted once by session and id.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Optional

from ... import sqlite_ro
from ...errors import GuardError
from ...stores.source import Source, keep_tail
from ...tokens import content_key

KIND = "opencode"
WHAT = "opencode database (opencode.db)"
COUNTS = "opencode's tokens (of the last reply before the compaction, and of the first call after it)"


def databases(layout) -> list:
    if layout.db is not None:
        return [layout.db] if layout.db.is_file() else []
    if not layout.state_dir.is_dir():
        return []
    return sorted(p for p in layout.state_dir.glob("opencode*.db") if p.is_file())


def discover(layout) -> tuple:
    sources, errors = [], []
    for path in databases(layout):
        try:
            sources.append(OpencodeDbSource(path))
        except GuardError as exc:
            errors.append(str(exc))
    return sources, errors


def looks_like(tables: dict) -> bool:
    return {"id", "session_id", "data"} <= tables.get("message", set()) and \
        {"message_id", "session_id", "data"} <= tables.get("part", set())


def _json(text) -> dict:
    try:
        d = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return {}
    return d if isinstance(d, dict) else {}


def is_summary(info: dict) -> bool:
    return info.get("role") == "assistant" and info.get("summary") is True


def _finished(info: dict) -> bool:
    return bool(info.get("finish") or info.get("error") or (info.get("time") or {}).get("completed"))


def _prompt_tokens(info: dict) -> Optional[int]:
    t = info.get("tokens")
    if not isinstance(t, dict) or not isinstance(t.get("input"), int):
        return None
    cache = t.get("cache") if isinstance(t.get("cache"), dict) else {}
    return t["input"] + sum(v for v in (cache.get("read"), cache.get("write")) if isinstance(v, int))


def summary_text(parts: list) -> str:
    return "\n".join(p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str)
                     and not p.get("synthetic") and not p.get("ignored"))


def render(info: dict, parts: list) -> list:
    """A message as opencode's compaction request renders it: `[User]:` / `[Assistant]:` text,
    tool calls and their results (here `user: ` / `assistant: ` / `tool: ` lines)."""
    role = "user" if info.get("role") == "user" else "assistant"
    out = []
    for p in parts:
        kind = p.get("type")
        if kind == "text" and isinstance(p.get("text"), str) and p["text"].strip() and not p.get("synthetic"):
            out.append(f"{role}: {p['text']}")
        elif kind == "tool":
            state = p.get("state") if isinstance(p.get("state"), dict) else {}
            args = json.dumps(state.get("input"), ensure_ascii=False)[:2000]
            out.append(f"assistant: [tool {p.get('tool')}] {args}")
            if isinstance(state.get("output"), str):
                out.append(f"tool: {state['output'][:2000]}")
    return out


class OpencodeDbSource(Source):
    """One opencode database: every session's compaction summaries."""

    kind = KIND

    def __init__(self, path: Path, con=None):
        super().__init__(path)
        self.con = con or sqlite_ro.connect_unchanged(path, WHAT)
        if not looks_like(sqlite_ro.tables(self.con)):
            self.con.close()
            raise GuardError(f"{self.path}: a SQLite database, but not opencode's (no message and part tables with "
                             "session_id and data); check the path")
        self._mark = None
        self._earlier = {}

    @staticmethod
    def _key(wm) -> tuple:
        wm = wm or {}
        return (int(wm.get("time") or 0), str(wm.get("id") or ""))

    def records(self, watermark) -> Iterator:
        start = self._key(watermark)
        self._mark = dict(watermark or {})
        rows = self.con.execute(
            "SELECT id, session_id, time_created, data FROM message WHERE (time_created > ? OR "
            "(time_created = ? AND id > ?)) AND (instr(data, '\"summary\":true') > 0 "
            "OR instr(data, '\"summary\": true') > 0) ORDER BY time_created, id", (start[0], start[0], start[1]))
        new = [(t, i, s, info) for i, s, t, d in rows if is_summary(info := _json(d))]
        blocked = next(((t, i) for t, i, _s, info in new if not _finished(info)), None)
        sessions = list(dict.fromkeys(s for _t, _i, s, _info in new))
        wanted = {i for t, i, _s, info in new if _finished(info)}
        for session in sessions:
            for rec in self._session(session, start, wanted):
                self.records_read += 1
                key = (rec.meta["time"], rec.id)
                if blocked is None or key < blocked:
                    if key > self._key(self._mark):
                        self._mark = {"time": key[0], "id": key[1]}
                yield rec

    def _session(self, session: str, start: tuple, wanted: set) -> Iterator:
        messages = self.con.execute("SELECT id, time_created, data FROM message WHERE session_id = ? "
                                    "ORDER BY time_created, id", (session,)).fetchall()
        parts = {}
        for mid, data in self.con.execute("SELECT message_id, data FROM part WHERE session_id = ? "
                                          "ORDER BY time_created, id", (session,)):
            parts.setdefault(mid, []).append(_json(data))
        infos = [(mid, t, _json(d)) for mid, t, d in messages]
        # what is in the model's context: after a compaction, the tail it kept (from its
        # tail_start_id up to its marker), then every message after its summary
        context, previous = [], None
        for n, (mid, t, info) in enumerate(infos):
            if not is_summary(info):
                context.append((mid, info))
                continue
            text = summary_text(parts.get(mid, []))
            marker_at = next((k for k, (m, _i) in enumerate(context) if m == info.get("parentID")), len(context))
            mark = next((p for p in parts.get(info.get("parentID"), []) if p.get("type") == "compaction"), {})
            tail = mark.get("tail_start_id")
            cut = next((k for k, (m, _i) in enumerate(context[:marker_at]) if m == tail), marker_at) \
                if tail else marker_at
            if mid in wanted:
                yield self._record(session, mid, t, info, text, context[:cut], context[:marker_at], mark, parts,
                                   previous, infos[n + 1:])
            elif (t, mid) <= start:
                self._earlier.setdefault(f"{KIND}:{session}", []).append((mid, content_key(text)))
            if _finished(info) and not info.get("error") and text.strip():
                previous = text
            context = context[cut:marker_at]

    def _record(self, session, mid, t, info, text, head, before_marker, mark, parts, previous, after):
        from ...records import SummaryRecord
        lines = [x for m, i in head for x in render(i, parts.get(m, []))]
        before = next((i.get("tokens", {}).get("total") for _m, i in reversed(before_marker)
                       if i.get("role") == "assistant" and isinstance(i.get("tokens"), dict)
                       and isinstance(i["tokens"].get("total"), int) and i["tokens"]["total"] > 0), None)
        after_tokens = next((_prompt_tokens(i) for _m, _t, i in after
                             if i.get("role") == "assistant" and not is_summary(i) and _prompt_tokens(i)), None)
        input_text = keep_tail(lines, self.input_chars)
        return SummaryRecord(
            mid, text, KIND, input_text=input_text or None, input_tokens=None if input_text else before,
            previous=previous, stale_scope=f"{KIND}:{session}", context_before=before, context_after=after_tokens,
            context_source=COUNTS if before else "",
            meta={"session": session, "time": t, "marker": info.get("parentID"), "auto": mark.get("auto"),
                  "overflow": mark.get("overflow"), "finish": info.get("finish"),
                  "error": (info.get("error") or {}).get("name") if isinstance(info.get("error"), dict) else None,
                  "tokens_before": before})

    def record_of(self, message_id: str):
        """The record of one summary message (the plugin's hook), or None."""
        row = self.con.execute("SELECT session_id FROM message WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            return None
        return next(iter(self._session(row[0], (0, ""), {message_id})), None)

    def new_watermark(self):
        return self._mark

    def count_key(self, record) -> str:
        return f"{KIND}\x1f{record.meta.get('session')}\x1f{record.id}"

    def covered(self, watermark):
        top = self._key(watermark)
        return lambda record: (record.meta.get("time", 0), record.id) <= top

    def history(self, scope, record=None):
        return list(self._earlier.get(scope, ()))

    def close(self):
        self.con.close()
