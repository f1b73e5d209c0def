"""Gemini CLI's chat sessions: `<.gemini>/tmp/<project>/chats/session-<time>-<id>.jsonl`.

Append-only JSON lines (Gemini CLI 0.61.0, tests/recordings/gemini/FINDINGS.md): a metadata line
(`sessionId`, `kind`), message records (`{id, type: "user" | "gemini", content, tokens?,
toolCalls?}`; a message written again under the same id replaces it), and `$set` lines. A
`$set` of `messages` replaces the whole history: every `--resume` writes one (the loaded
history), and so does a compression, whose new history is the session context, then the summary
as a user message, then the model's fixed "Got it. Thanks for the additional context!", then the
kept tail (the newest ~30%, under new ids).

Each compression is one record: id = the summary message's id, its session the file's
`sessionId`; the summary; its input the messages it replaced (the history before the `$set`
less the kept tail); `previous` the summary of the compression before it in the session;
`context_before` Gemini CLI's own count before (`tokens.input` of the last reply before it: the
prompt the model last saw, system prompt and tools included). Gemini CLI stores no count after.
A resume's `$set` is no compression: it reloads the history under the ids it had, so a summary
it carries is one already read (ids seen earlier in the file); nor is a compression Gemini CLI
refused (nothing is written). The file is read whole each time it grew (a `$set`
needs the history before it); compressions before the last offset are not yielded again.
Nothing is written.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Optional

from ...stores.source import SessionFileSource, json_lines, keep_tail, open_store

KIND = "gemini"
ACK = "Got it. Thanks for the additional context!"
COUNTS = "Gemini CLI's tokens.input (of the last reply before the compression)"


def session_files(layout) -> list:
    if not layout.projects.is_dir():
        return []
    return sorted(p for p in layout.projects.glob("*/chats/session-*.jsonl") if p.is_file())


def discover(layout) -> tuple:
    return [SessionSource(f) for f in session_files(layout)], []


def _parts_text(content) -> list:
    """What a message's content says, rendered: text parts, tool calls, tool results."""
    if isinstance(content, str):
        return [content] if content else []
    out = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str) and part["text"]:
            out.append(part["text"])
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            out.append(f"[tool {call.get('name')}] {json.dumps(call.get('args'), ensure_ascii=False)[:2000]}")
        elif isinstance(part.get("functionResponse"), dict):
            resp = part["functionResponse"].get("response")
            text = resp.get("output") if isinstance(resp, dict) and isinstance(resp.get("output"), str) \
                else json.dumps(resp, ensure_ascii=False)
            out.append(f"tool: {text[:4000]}")
    return out


def message_text(m: dict) -> str:
    """One message rendered `user: ...` / `gemini: ...` ('' for the session context)."""
    parts = _parts_text(m.get("content"))
    for call in m.get("toolCalls") if isinstance(m.get("toolCalls"), list) else []:
        if isinstance(call, dict):
            parts.append(f"[tool {call.get('name')}] {json.dumps(call.get('args'), ensure_ascii=False)[:2000]}")
    text = "\n".join(parts)
    if not text or text.startswith("<session_context>"):
        return ""
    if m.get("type") == "user" and all(p.startswith("tool: ") for p in parts):
        return text             # tool results Gemini CLI sends back as a user turn: not the user's words
    return f"{m.get('type')}: {text}"


def _is_message(d: dict) -> bool:
    return isinstance(d.get("id"), str) and d.get("type") in ("user", "gemini", "info", "error", "warning")


def _compression_at(messages: list) -> Optional[int]:
    """The index of the summary in a `$set` history that is a compression's: a user message
    followed by the model's fixed acknowledgement; else None."""
    for i in range(len(messages) - 1):
        a, b = messages[i], messages[i + 1]
        if isinstance(a, dict) and isinstance(b, dict) and a.get("type") == "user" and b.get("type") == "gemini" \
                and "".join(_parts_text(b.get("content"))).strip() == ACK:
            return i
    return None


class SessionSource(SessionFileSource):
    """One Gemini CLI chat session file."""

    kind = KIND

    def __init__(self, path: Path):
        super().__init__(path)
        self.session = path.stem

    def records(self, watermark) -> Iterator:
        offset = self._start(watermark)
        messages, previous, last_input = [], None, None
        seen = set()            # every message id the file held so far: a resume reloads them
        pos = 0
        with open_store(self.path) as fh:
            for start, pos, d in json_lines(fh, 0):
                if d is None:
                    self.bad_lines += 0 if start < offset else 1
                    continue
                if isinstance(d.get("sessionId"), str) and "$set" not in d:
                    self.session = d["sessionId"]
                    continue
                if _is_message(d):
                    seen.add(d["id"])
                    for i, m in enumerate(messages):
                        if m.get("id") == d["id"]:
                            messages[i] = d
                            break
                    else:
                        messages.append(d)
                    tokens = d.get("tokens")
                    if d.get("type") == "gemini" and isinstance(tokens, dict) and isinstance(tokens.get("input"), int):
                        last_input = tokens["input"]
                    continue
                new = d.get("$set", {}).get("messages") if isinstance(d.get("$set"), dict) else None
                if not isinstance(new, list):
                    continue
                at = _compression_at(new)
                if at is not None and new[at].get("id") in seen:
                    at = None           # a resume reloading an earlier compression's summary
                seen.update(m["id"] for m in new if isinstance(m, dict) and isinstance(m.get("id"), str))
                if at is not None:
                    summary_msg = new[at]
                    summary = "\n".join(_parts_text(summary_msg.get("content")))
                    kept = len(new) - at - 2
                    replaced = messages[:max(0, len(messages) - kept)]
                    if start >= offset:
                        yield self._yielded(self._record(summary_msg, summary, replaced, previous, last_input, start))
                    previous = summary
                messages = [m for m in new if isinstance(m, dict)]
        self._finish(pos)

    def _record(self, msg: dict, summary: str, replaced: list, previous, before, offset: int):
        from ...records import SummaryRecord
        parts = [t for m in replaced if (t := message_text(m))]
        text = keep_tail(parts, self.input_chars)
        return SummaryRecord(
            str(msg.get("id") or f"line@{offset}"), summary, KIND, input_text=text or None,
            input_tokens=None if text else before, previous=previous, stale_scope=f"{KIND}:{self.session}",
            context_before=before, context_after=None, context_source=COUNTS if before else "",
            meta={"session": self.session, "offset": offset, "timestamp": msg.get("timestamp"),
                  "tokens_before": before})
