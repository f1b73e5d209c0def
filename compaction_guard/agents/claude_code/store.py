"""Claude Code's transcripts: `<config>/projects/<cwd, every non-alphanumeric as "-">/<session>.jsonl`
(subagents' under `<session>/subagents/`), `<config>` being `$CLAUDE_CONFIG_DIR` or `~/.claude`.

One JSON entry per line, appended. A compaction is a `type: "system"`, `subtype:
"compact_boundary"` entry (`compactMetadata`: trigger, preTokens, postTokens, ...) followed by
a `type: "user"` entry with `isCompactSummary: true` whose message wraps the summary:

    This session is being continued from a previous conversation ... of the conversation.
    [<system-reminder>...</system-reminder>]
    [Summary:] <the summary>
    If you need specific details from before compaction ..., read the full transcript at: <path>
    Continue the conversation from where it left off ...

Each compaction is one record: id = the summary entry's uuid, the wrapper taken away, its
input the conversation's text since the previous boundary (the history it replaced, which
the file still holds before the boundary), `context_before`/`context_after` Claude Code's
preTokens/postTokens, `previous` the summary before it. Read from the byte offset where the
last check stopped, the current segment (since its last boundary) read again for its text
only; a line that is not JSON, or a last line still being written, is skipped. Nothing is
written.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator, Optional

from ...stores.source import SessionFileSource, json_lines, keep_tail, open_store

KIND = "claude-code"


def project_dir_name(cwd: str) -> str:
    """The folder Claude Code keeps a working directory's sessions in."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def transcript_files(projects: Path) -> list:
    """Every session transcript under `projects` (subagents' too), in a stable order."""
    if not projects.is_dir():
        return []
    out = []
    for p in sorted(projects.glob("*/*.jsonl")) + sorted(projects.glob("*/*/subagents/*.jsonl")):
        if p.is_file():
            out.append(p)
    return out


def discover(projects: Path) -> tuple:
    """(sources, errors): every transcript under a Claude Code `projects` directory."""
    return [TranscriptSource(f) for f in transcript_files(projects)], []


_HEAD_RE = re.compile(r"\AThis session is being continued from a previous conversation[^\n]*\n+")
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)
_TAIL_RE = re.compile(r"\n+(?:If you need specific details from before compaction[^\n]*|[^\n]*read the full transcript "
                      r"at: [^\n]*)(?:\n.*)?\Z", re.S)
_CONTINUE_RE = re.compile(r"\n+(?:Please continue the conversation|Continue the conversation from where it left off)"
                          r".*\Z", re.S)


def unwrap(text: str) -> str:
    """The summary inside Claude Code's wrapper (the model's text as it was stored)."""
    t = _HEAD_RE.sub("", text.lstrip())
    t = _REMINDER_RE.sub("", t)
    t = _TAIL_RE.sub("", t)
    t = _CONTINUE_RE.sub("", t)
    t = t.strip()
    if t.startswith("Summary:"):
        t = t[len("Summary:"):].lstrip("\n ")
    return t.strip()


def strip_analysis(text: str) -> str:
    """A raw compaction answer (the PostCompact hook's compact_summary) as Claude Code keeps
    it: `<analysis>` dropped, `<summary>` unwrapped."""
    t = re.sub(r"<analysis>.*?</analysis>\s*", "", text or "", flags=re.S)
    m = re.search(r"<summary>(.*?)(?:</summary>|\Z)", t, re.S)
    return (m.group(1) if m else t).strip()


def entry_text(d: dict) -> str:
    """What a conversation entry says (its message's text, tool calls and results), or ''."""
    if d.get("type") not in ("user", "assistant") or d.get("isMeta") or d.get("isCompactSummary"):
        return ""
    msg = d.get("message")
    if not isinstance(msg, dict):
        return ""
    content = msg.get("content")
    role = msg.get("role") or d.get("type")
    if isinstance(content, str):
        return f"{role}: {content}"
    parts = []
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif b.get("type") == "tool_use":
            parts.append(f"[tool {b.get('name')}] {json.dumps(b.get('input'), ensure_ascii=False)[:2000]}")
        elif b.get("type") == "tool_result":
            c = b.get("content")
            if isinstance(c, list):
                c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict) and isinstance(x.get("text"), str))
            if isinstance(c, str):
                parts.append(c[:4000])
    return f"{role}: " + "\n".join(parts) if parts else ""


def summary_text(d: dict) -> str:
    msg = d.get("message") if isinstance(d.get("message"), dict) else {}
    c = msg.get("content")
    if isinstance(c, list):
        c = "\n".join(b.get("text", "") for b in c if isinstance(b, dict) and isinstance(b.get("text"), str))
    return unwrap(c if isinstance(c, str) else "")


def _is_boundary(d: dict) -> bool:
    return d.get("type") == "system" and d.get("subtype") == "compact_boundary"


def history_since_boundary(path: Path, max_chars: int = 200_000, with_context: bool = False) -> tuple:
    """(text of the conversation since the last compaction boundary, the last stored
    summary or None) of a transcript as it is now: what a compaction happening now replaces;
    `with_context`: and Claude Code's own count of its context on its last turn (or None)."""
    parts, previous, used = [], None, None
    with open_store(path) as fh:
        for _, _, d in json_lines(fh, 0):
            if d is None:
                continue
            if _is_boundary(d):
                parts = []
            elif d.get("isCompactSummary"):
                previous = summary_text(d)
            elif (t := entry_text(d)):
                parts.append(t)
                if with_context and d.get("type") == "assistant":
                    used = context_of(d) or used
    return (keep_tail(parts, max_chars), previous) + ((used,) if with_context else ())


def context_of(d: dict):
    """The tokens of context an assistant entry's API call reported (its usage: input, cache
    written and cache read): Claude Code's own count, system prompt and tools included."""
    msg = d.get("message") if isinstance(d.get("message"), dict) else {}
    usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else {}
    n = sum(v for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            if isinstance(v := usage.get(k), int) and not isinstance(v, bool))
    return n or None


class TranscriptSource(SessionFileSource):
    """One Claude Code session transcript."""

    kind = KIND

    def __init__(self, path: Path):
        super().__init__(path)
        self.session = path.name[:-len(".jsonl")] if path.name.endswith(".jsonl") else path.name
        self._window = 0

    def records(self, watermark) -> Iterator:
        wm = watermark or {}
        offset = self._start(wm)
        window = wm.get("window") if offset else 0
        pos = window if isinstance(window, int) and 0 <= window <= offset else 0
        previous = None
        parts, boundary = [], None
        self._window = pos
        with open_store(self.path) as fh:
            for start, pos, d in json_lines(fh, pos):
                if d is None:
                    self.bad_lines += 0 if start < offset else 1
                    continue
                if _is_boundary(d):
                    meta = d.get("compactMetadata") if isinstance(d.get("compactMetadata"), dict) else {}
                    boundary = (meta, parts)
                    parts = []
                    self._window = start
                    continue
                if d.get("isCompactSummary") and boundary is not None:
                    meta, replaced = boundary
                    boundary = None
                    content = summary_text(d)
                    if start >= offset:
                        pre, post = meta.get("preTokens"), meta.get("postTokens")
                        yield self._yielded(_record(self, d, content, keep_tail(replaced, self.input_chars), previous,
                                                    pre if isinstance(pre, int) else None,
                                                    post if isinstance(post, int) else None, meta, start))
                    previous = content
                    continue
                t = entry_text(d)
                if t:
                    parts.append(t)
        self._finish(pos)

    def new_watermark(self) -> Optional[dict]:
        # the current segment is read again from its boundary: its summary is `previous` again
        return dict(super().new_watermark(), window=self._window)


def _record(src, d: dict, content: str, replaced: str, previous, pre, post, meta: dict, offset: int):
    from ...records import SummaryRecord
    session = d.get("sessionId") or src.session
    return SummaryRecord(
        str(d.get("uuid") or f"line@{offset}"), content, KIND, input_text=replaced or None,
        input_tokens=None if replaced else pre, previous=previous, stale_scope=f"{KIND}:{session}",
        context_before=pre, context_after=post,
        context_source="Claude Code's compactMetadata.preTokens/postTokens" if post is not None
        else "Claude Code's compactMetadata.preTokens",
        meta={"session": session, "offset": offset, "timestamp": d.get("timestamp"), "trigger": meta.get("trigger"),
              "tokens_before": pre, "tokens_after": post, "aliases": [hook_key(session, content)]})


def hook_key(session, content: str) -> str:
    """The identity the PostCompact hook counts a summary under (it runs before Claude Code
    stores the summary, so its entry's uuid is not known yet): the session and the text."""
    from ...tokens import content_key
    return f"{KIND}\x1f{session}\x1fsummary\x1f{content_key(content)}"
