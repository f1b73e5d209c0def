"""Real OpenClaw stores for the tests: an lcm.db in lossless-claw's schema, session
JSONL transcripts and a per-agent openclaw-agent.sqlite with zstd-compressed events.

The schema follows lossless-claw's migrations (columns, CHECKs, keys, indexes) and
OpenClaw's transcript entry shapes (REFERENCE.md section 1).
"""
from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path

LCM_SCHEMA = """
CREATE TABLE conversations (
  conversation_id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, session_key TEXT,
  active INTEGER NOT NULL DEFAULT 1, archived_at TEXT, archive_cause TEXT, title TEXT, bootstrapped_at TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), updated_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE messages (
  message_id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL, role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  content TEXT NOT NULL, token_count INTEGER NOT NULL, identity_hash TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), UNIQUE (conversation_id, seq));
CREATE TABLE summaries (
  summary_id TEXT PRIMARY KEY,
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('leaf', 'condensed')), depth INTEGER NOT NULL DEFAULT 0,
  content TEXT NOT NULL, token_count INTEGER NOT NULL, earliest_at TEXT, latest_at TEXT,
  descendant_count INTEGER NOT NULL DEFAULT 0, descendant_token_count INTEGER NOT NULL DEFAULT 0,
  source_message_token_count INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL DEFAULT (datetime('now')),
  file_ids TEXT NOT NULL DEFAULT '[]', model TEXT NOT NULL DEFAULT 'unknown');
CREATE TABLE summary_messages (
  summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
  message_id INTEGER NOT NULL REFERENCES messages(message_id) ON DELETE RESTRICT,
  ordinal INTEGER NOT NULL, PRIMARY KEY (summary_id, message_id));
CREATE TABLE summary_parents (
  summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE CASCADE,
  parent_summary_id TEXT NOT NULL REFERENCES summaries(summary_id) ON DELETE RESTRICT,
  ordinal INTEGER NOT NULL, PRIMARY KEY (summary_id, parent_summary_id));
CREATE TABLE context_items (
  conversation_id INTEGER NOT NULL REFERENCES conversations(conversation_id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL, item_type TEXT NOT NULL CHECK (item_type IN ('message', 'summary')),
  message_id INTEGER REFERENCES messages(message_id) ON DELETE RESTRICT,
  summary_id TEXT REFERENCES summaries(summary_id) ON DELETE RESTRICT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')), PRIMARY KEY (conversation_id, ordinal));
CREATE INDEX messages_conv_seq_idx ON messages (conversation_id, seq);
CREATE INDEX summaries_conv_created_idx ON summaries (conversation_id, created_at);
CREATE INDEX context_items_conv_idx ON context_items (conversation_id, ordinal);
"""

_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def lcm_tokens(text: str) -> int:
    """lossless-claw's estimate: CJK 1.5, astral 2, else 0.25 per code point, rounded up."""
    cjk = len(_CJK.findall(text))
    astral = sum(1 for c in text if ord(c) > 0xFFFF)
    return math.ceil(cjk * 1.5 + astral * 2 + (len(text) - cjk - astral) * 0.25)


class LcmBuilder:
    """Writes an lcm.db the way lossless-claw does (WAL mode)."""

    def __init__(self, path: Path, wal: bool = True):
        self.path = Path(path)
        self.con = sqlite3.connect(self.path)
        if wal:
            self.con.execute("PRAGMA journal_mode=WAL")
        self.con.executescript(LCM_SCHEMA)
        self.n = 0

    def conversation(self, session_id: str) -> int:
        cur = self.con.execute("INSERT INTO conversations (session_id, session_key) VALUES (?, ?)",
                               (session_id, f"agent:main:{session_id}"))
        return cur.lastrowid

    def messages(self, conv: int, texts: list) -> list:
        ids = []
        seq = self.con.execute("SELECT coalesce(max(seq), 0) FROM messages WHERE conversation_id = ?", (conv,)).fetchone()[0]
        for i, t in enumerate(texts):
            cur = self.con.execute("INSERT INTO messages (conversation_id, seq, role, content, token_count) "
                                   "VALUES (?, ?, ?, ?, ?)", (conv, seq + i + 1, "user" if i % 2 == 0 else "assistant",
                                                              t, lcm_tokens(t)))
            ids.append(cur.lastrowid)
        return ids

    def summary(self, conv: int, content: str, messages=(), parents=(), model: str = "gpt-4o-mini",
                sid: str = None, depth: int = None) -> str:
        self.n += 1
        sid = sid or f"sum_{self.n:016x}"
        kind = "condensed" if parents else "leaf"
        self.con.execute("INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, model) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (sid, conv, kind, depth if depth is not None else (1 if parents else 0), content,
                          lcm_tokens(content), model))
        for i, m in enumerate(messages):
            self.con.execute("INSERT INTO summary_messages VALUES (?, ?, ?)", (sid, m, i))
        for i, p in enumerate(parents):
            self.con.execute("INSERT INTO summary_parents VALUES (?, ?, ?)", (sid, p, i))
        return sid

    def commit(self):
        self.con.commit()

    def close(self):
        self.con.commit()
        self.con.close()


def chain(entries: list) -> list:
    """Entries linked as OpenClaw links them: each one's parentId the entry before it
    (an entry that names another parent keeps it)."""
    prev = None
    for e in entries:
        if isinstance(e, dict):
            if e.get("parentId") is None and prev is not None:
                e["parentId"] = prev
            prev = e.get("id", prev)
    return entries


def session_jsonl(path: Path, session_id: str, entries: list) -> None:
    """A session transcript: the header line, then the entries (linked, see chain), one
    JSON per line. Only for what OpenClaw's own code cannot write (tests/openclaw_real.py
    writes stores with it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = chain([dict(e) if isinstance(e, dict) else e for e in entries])
    lines = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-11-28T09:00:00.000Z",
                         "cwd": "/home/user/project"})]
    lines += [json.dumps(e, ensure_ascii=False) for e in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def message(i: int, text: str, ts: str = "2026-11-28T09:00:00.000Z", parent: str = None) -> dict:
    """A message entry; its parent is `parent`, else the entry before it (session_jsonl, agent_db)."""
    return {"type": "message", "id": f"m{i:04d}", "parentId": parent, "timestamp": ts,
            "message": {"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": text}]}}


def compaction(cid: str, summary: str, tokens_before: int, ts: str, first_kept: str = "m0000",
               parent: str = None) -> dict:
    return {"type": "compaction", "id": cid, "parentId": parent, "timestamp": ts, "summary": summary,
            "firstKeptEntryId": first_kept, "tokensBefore": tokens_before,
            "details": {"readFiles": ["src/app.ts"], "modifiedFiles": []}}


def agent_db(path: Path, events: list, compress_from: int = 0) -> None:
    """openclaw-agent.sqlite with transcript_events; events from index `compress_from` on are zstd."""
    import zstandard
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT, "
                "event_json TEXT, event_zstd BLOB, created_at TEXT NOT NULL DEFAULT (datetime('now')), "
                "PRIMARY KEY (session_id, seq))")
    cctx = zstandard.ZstdCompressor()
    by_session = {}
    for session, _, event in events:
        by_session.setdefault(session, []).append(event)
    for evs in by_session.values():
        chain(evs)
    for i, (session, seq, event) in enumerate(events):
        raw = json.dumps(event, ensure_ascii=False)
        if i >= compress_from:
            con.execute("INSERT INTO transcript_events (session_id, seq, event_type, event_zstd) VALUES (?, ?, ?, ?)",
                        (session, seq, event.get("type"), cctx.compress(raw.encode())))
        else:
            con.execute("INSERT INTO transcript_events (session_id, seq, event_type, event_json) VALUES (?, ?, ?, ?)",
                        (session, seq, event.get("type"), raw))
    con.commit()
    con.close()
