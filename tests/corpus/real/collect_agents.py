"""Collect the real compactions of Claude Code, Codex CLI, Gemini CLI and opencode into one labelled
JSONL evaluation set (stdlib only, nothing written outside --out).

    python3 tests/corpus/real/collect_agents.py [--root REPO] [--out FILE] [--table]

Reads what the agents themselves stored when they compacted against a scripted model (the recipes are
beside the recordings: record.py / <agent>_real.py (the scripted model: tests/modelkit), and FINDINGS.md):

- Claude Code 2.1.328: tests/data/claude-code/<case>.jsonl. A compaction is a `system`/`compact_boundary`
  line (compactMetadata.preTokens/postTokens) followed by a user line with isCompactSummary; its text is
  Claude Code's wrapper around the summary (head sentence, <system-reminder>, "Summary:", the transcript
  path and "Continue the conversation..." tail), taken away as compaction_guard's own reader does.
- Codex CLI 0.171.0: tests/recordings/codex/data/<case>-<mode>.jsonl (rollouts). A compaction is a
  `compacted` line; its message is a fixed prefix ("Another language model started ... analysis:\\n") and
  the summary. Every compaction request Codex sent (data/request-<case>.json, matched to the `compacted`
  lines by turn id) that has no `compacted` line is a dropped compaction (stored=false).
- Gemini CLI 0.61.0: tests/recordings/gemini/data/session-<case>.jsonl (append-only, `$set`). A compression
  is a `$set` of messages holding a user message followed by the model's "Got it. Thanks for the additional
  context!" (a `--resume` `$set` has no such pair). A run that sent compression requests (data/manifest.json)
  without such a `$set` is a dropped compression (stored=false).
- opencode 1.18.33: tests/recordings/opencode/data/<case>/opencode.db (SQLite + WAL, copied to a temporary
  directory and opened read-only). The summary is the assistant message with `summary: true` (its text
  parts; none = ""), after a user message with a `compaction` part (auto true/false).

One row per compaction: id, agent, case, mode, label, lang, summary_lang, summary, history (the conversation
the compaction replaced: the user/assistant text since the previous compaction, tool calls as
"[tool NAME] args", tool results as their text), previous (the earlier summary of the same session, else
null), context_before / context_after (the agent's own counts, see counts_source), stored, source_file
(relative to the repository), note. Labels come from the recipe of each case and are checked against the
stored text (a mismatch is printed as a warning); see LABEL_OF_CASE and check_label.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

CLAUDE = "tests/data/claude-code"
CODEX = "tests/recordings/codex/data"
GEMINI = "tests/recordings/gemini/data"
OPENCODE = "tests/recordings/opencode/data"
AGENTS = ("claude-code", "codex", "gemini", "opencode")
LABELS = ("good", "preamble", "loop", "echo", "skeleton", "language", "empty", "whitespace", "inflated",
          "cut-off", "error", "other")

WARNINGS: list = []
SKIPPED: list = []


def warn(msg: str) -> None:
    WARNINGS.append(msg)


# ---------------------------------------------------------------- text helpers

TOOL_ARGS_MAX = 300
TOOL_RESULT_MAX = 2000


def tool_call(name, args) -> str:
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return f"[tool {name}] {args[:TOOL_ARGS_MAX]}".rstrip()


def tool_result(text) -> str:
    return str(text)[:TOOL_RESULT_MAX]


def render(items: list) -> str:
    """[(role, text)] -> "role: text" blocks, as compaction_guard renders a Claude Code history."""
    return "\n\n".join(f"{role}: {text}" for role, text in items if text)


_STOP = {
    "en": "the and of to is in that it for with you was on are be this have not what by we an at as or".split(),
    "es": "el la de que y en los las del se por un una para con no es al lo como más su sus está qué".split(),
    "de": "der die das und ist nicht ein eine zu mit den dem auf für von sich auch".split(),
    "fr": "le la les et est des une un du dans pour pas que qui sur au avec ce il".split(),
    "pt": "o a os as e de do da que em um uma para com não é no na".split(),
    "it": "il lo la gli le e di che un una per con non è del della nel".split(),
}


def detect_lang(text: str):
    """ISO 639-1 code of the text's language by stop-word counts (enough here: English or Spanish), or
    None for a text without words."""
    words = re.findall(r"[^\W\d_]+", (text or "").lower())
    if not words:
        return None
    counts = collections.Counter(words)
    score = {lang: sum(counts[w] for w in ws) for lang, ws in _STOP.items()}
    best = max(score, key=score.get)
    return best if score[best] else "und"


# ---------------------------------------------------------------- labels

# the label each recorded case was scripted to produce (record.py of each agent)
LABEL_OF_CASE = {
    "good": "good", "good-long": "good", "good-short": "good", "bad-then-good": "good",
    "preamble": "preamble", "preamble-long": "preamble", "preamble-short": "preamble", "good-then-bad": "preamble",
    "loop": "loop", "echo": "echo", "language": "language", "skeleton": "skeleton", "inflated": "inflated",
    "empty": "empty", "empty-short": "empty", "verify-empty": "empty", "nomessage": "empty",
    "whitespace": "whitespace", "empty-ws": "whitespace",
    "error": "error", "cut-off": "cut-off", "hook-inject": "good",
}
ECHO_MARKERS = ("CONTEXT CHECKPOINT COMPACTION", "distilling chat history into a structured XML",
                "anchored summary", "Create a new anchored summary")


def repeated(text: str, times: int = 5) -> bool:
    sents = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 20]
    return bool(sents) and collections.Counter(sents).most_common(1)[0][1] >= times


def skeleton_like(text: str) -> bool:
    """An XML or Markdown template whose sections hold no text."""
    body = re.sub(r"</?[A-Za-z_]+>", "", text)
    body = re.sub(r"^#+ .*$", "", body, flags=re.M)
    return "<" in text and not body.strip()


def check_label(label: str, summary: str, lang: str, summary_lang) -> bool:
    """Whether the stored text looks like its label (the eye check, written down)."""
    s = summary
    if label == "empty":
        return s == ""
    if label == "whitespace":
        return s != "" and not s.strip()
    if label == "preamble":
        return 0 < len(s) < 200 and bool(re.match(r"(Let me|I'll|I will|First,)", s.strip()))
    if label == "loop":
        return repeated(s)
    if label == "echo":
        return any(m in s for m in ECHO_MARKERS)
    if label == "skeleton":
        return skeleton_like(s)
    if label == "language":
        return bool(summary_lang) and summary_lang != lang
    if label == "cut-off":
        return bool(s.strip()) and not re.search(r"[.!?)\]`>]\s*\Z", s)
    if label == "good":
        return "OPS-4411" in s and len(s) > 200 and not repeated(s) and summary_lang == lang
    return True


def row(agent, case, mode, label, summary, history, previous, before, after, counts_source, stored, source,
        note, lang=None, n=None, ids=None) -> dict:
    rid = f"{agent}-{case}-{mode}" + (f"-{n}" if n else "")
    if ids is not None:
        if rid in ids:
            raise SystemExit(f"duplicate id {rid}")
        ids.add(rid)
    lang = lang or detect_lang(history)
    summary_lang = detect_lang(summary) if summary.strip() else None
    if stored and not check_label(label, summary, lang, summary_lang):
        warn(f"{rid}: stored text does not look like '{label}': {summary[:80]!r}")
    return {"id": rid, "agent": agent, "case": case, "mode": mode, "label": label, "lang": lang,
            "summary_lang": summary_lang, "summary": summary, "history": history, "previous": previous,
            "context_before": before, "context_after": after, "counts_source": counts_source, "stored": stored,
            "source_file": source, "note": note}


def size_note(summary: str, history: str, previous=None) -> str:
    given = len(history) + len(previous or "")
    if summary.strip() and len(summary) > given:
        what = "the conversation text it replaced" + (" plus the previous summary" if previous is not None else "")
        return (f" The summary ({len(summary)} chars) is longer than {what} ({given} chars): a short conversation "
                f"under a large system prompt; by the agent's own count it is far smaller than the context, so not "
                f"labelled inflated.")
    return ""


# ---------------------------------------------------------------- Claude Code

def cc_unwrap(text: str) -> str:
    """The summary inside Claude Code's wrapper, taken away by the guard's own reader."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from compaction_guard.agents.claude_code.store import unwrap
    return unwrap(text)


def cc_entry(d: dict):
    """(role, text) of a conversation line, or None."""
    if d.get("type") not in ("user", "assistant") or d.get("isMeta") or d.get("isCompactSummary"):
        return None
    msg = d.get("message")
    if not isinstance(msg, dict):
        return None
    role = msg.get("role") or d["type"]
    content = msg.get("content")
    if isinstance(content, str):
        return role, content
    parts = []
    for b in content if isinstance(content, list) else []:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif b.get("type") == "tool_use":
            parts.append(tool_call(b.get("name"), b.get("input")))
        elif b.get("type") == "tool_result":
            c = b.get("content")
            if isinstance(c, list):
                c = "\n".join(x.get("text", "") for x in c if isinstance(x, dict) and isinstance(x.get("text"), str))
            parts.append(tool_result(c) if isinstance(c, str) and c else "[tool result]")
    return (role, "\n".join(parts)) if parts else None


def claude_code(root: Path, ids: set) -> list:
    out = []
    for path in sorted((root / CLAUDE).glob("*.jsonl")):
        case = path.stem
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        hist, previous, found = [], None, []
        for i, d in enumerate(lines):
            if d.get("type") == "system" and d.get("subtype") == "compact_boundary":
                summ = next((x for x in lines[i + 1:i + 4] if x.get("isCompactSummary")), None)
                if summ is None:
                    warn(f"claude-code {case}: boundary at line {i + 1} without a summary line")
                    continue
                c = summ["message"]["content"]
                if isinstance(c, list):
                    c = "\n".join(b.get("text", "") for b in c if isinstance(b, dict))
                found.append((d.get("compactMetadata") or {}, cc_unwrap(c), list(hist), previous, i))
                previous = found[-1][1]
                hist = []
            elif (e := cc_entry(d)):
                hist.append(e)
        for k, (meta, summary, h, prev, line) in enumerate(found, 1):
            label = LABEL_OF_CASE.get(case, "other")
            history = render(h)
            note = (f"Claude Code 2.1.328, /compact ({meta.get('trigger')}), boundary at line {line + 1}; the summary "
                    f"is the isCompactSummary text without Claude Code's wrapper.")
            if summary.startswith("<summary>"):
                note += (" The model's answer had no closing </summary>, so Claude Code kept the opening tag in "
                         "the stored text.")
            if label == "loop" and not re.search(r"[.!?]\s*\Z", summary):
                note += " The repetition is itself cut off (the answer hit its length limit)."
            out.append(row("claude-code", case, meta.get("trigger") or "auto", label, summary, history, prev,
                           meta.get("preTokens"), meta.get("postTokens"),
                           "Claude Code's compactMetadata.preTokens/postTokens", True,
                           f"{CLAUDE}/{path.name}", note, n=k if len(found) > 1 else None, ids=ids))
    return out


# ---------------------------------------------------------------- Codex

CODEX_PREFIX = ("Another language model started to solve this problem and produced a summary of its thinking "
                "process. You also have access to the state of the tools that were used by that language model. "
                "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
                "summary produced by the other language model, use the information in this summary to assist with "
                "your own analysis:\n")
CODEX_MODES = ("auto", "manual", "preturn")


def codex_item(d: dict):
    """(role, text) of a conversation response_item of a rollout, or None (developer/system items, the
    environment context, and the raw output of a compaction call are not conversation)."""
    if d.get("type") != "response_item":
        return None
    p = d.get("payload") or {}
    if (d.get("metadata") or {}).get("compaction_output"):
        return None
    if p.get("type") == "message":
        role = p.get("role")
        kinds = (p.get("internal_chat_message_metadata_passthrough") or {}).get("content_item_kinds") or []
        if role not in ("user", "assistant") or "environments.environment_context" in kinds \
                or "compaction.summary" in kinds:
            return None
        text = "\n".join(c.get("text", "") for c in p.get("content") or [] if isinstance(c, dict))
        if role == "user" and text.startswith("<environment_context>"):
            return None
        return role, text
    if p.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
        return "assistant", tool_call(p.get("name") or p.get("type"), p.get("arguments") or p.get("input") or "")
    if p.get("type") in ("function_call_output", "custom_tool_call_output"):
        out = p.get("output")
        if isinstance(out, dict):
            out = out.get("content") or json.dumps(out)
        return "tool", tool_result(out)
    return None


def codex_file(root: Path, path: Path, ids: set) -> list:
    name = path.stem
    case, mode = name.rsplit("-", 1)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    req_path = path.parent / f"request-{name}.json"
    reqs = json.loads(req_path.read_text(encoding="utf-8")) if req_path.exists() else []
    reqs = [reqs] if isinstance(reqs, dict) else reqs
    attempts = []
    for q in reqs:
        md = json.loads((q.get("headers") or {}).get("x-codex-turn-metadata") or "{}")
        attempts.append({"turn_id": md.get("turn_id"), "phase": (md.get("compaction") or {}).get("phase"),
                         "input": (q.get("body") or {}).get("input") or []})
    compacted = [i for i, d in enumerate(lines) if d.get("type") == "compacted"]
    comp_resp = {((lines[i]["payload"].get("latest_token_usage_record") or {}).get("response_id")) for i in compacted}

    # which token_usage_records are compaction calls: the compacted line's own, or a call that produced no
    # conversation item (empty / no-message output of a dropped compaction)
    is_comp_record, since_item = {}, False
    for i, d in enumerate(lines):
        if d.get("type") == "response_item" and not (d.get("metadata") or {}).get("compaction_output"):
            since_item = True
        elif d.get("type") == "token_usage_record":
            is_comp_record[i] = d["payload"].get("response_id") in comp_resp or not since_item
            since_item = False
    turn_counts = []          # (line, total_tokens) of token_count events after an ordinary turn call
    last_rec = None
    for i, d in enumerate(lines):
        if d.get("type") == "token_usage_record":
            last_rec = i
        elif d.get("type") == "event_msg" and (d.get("payload") or {}).get("type") == "token_count":
            info = d["payload"].get("info") or {}
            last = info.get("last_token_usage") or {}
            if last_rec is not None and not is_comp_record[last_rec] and last.get("input_tokens"):
                turn_counts.append((i, last.get("total_tokens")))

    def count_before(end):
        c = [t for ln, t in turn_counts if ln < end]
        return c[-1] if c else None

    def count_after(start):
        for d in lines[start + 1:]:
            if d.get("type") == "event_msg" and (d.get("payload") or {}).get("type") == "token_count":
                return ((d["payload"].get("info") or {}).get("last_token_usage") or {}).get("total_tokens")
            if d.get("type") == "compacted":
                return None
        return None

    def history(start, end):
        return [e for d in lines[start:end] if (e := codex_item(d))]

    # each request is stored (a compacted line of its turn) or dropped
    events = []               # (end line, kind, payload)
    used = set()
    for k, a in enumerate(attempts):
        hit = next((i for i in compacted if i not in used and
                    (lines[i]["payload"].get("latest_token_usage_record") or {}).get("turn_id") == a["turn_id"]), None)
        if hit is not None:
            used.add(hit)
            events.append((hit, "stored", a))
            continue
        # dropped: the compaction came right after the last conversation item its request carried
        conv = [m for m in a["input"] if m.get("type") == "message" and m.get("role") in ("user", "assistant")]
        last = conv[-2] if len(conv) >= 2 else None      # conv[-1] is Codex's summarization prompt
        last_text = "\n".join(c.get("text", "") for c in (last or {}).get("content") or [])
        pos = None
        for i, d in enumerate(lines):
            e = codex_item(d)
            if e and e[1] == last_text:
                pos = i
        if pos is None:
            warn(f"codex {name}: dropped compaction {k + 1}: cannot place it in the rollout")
            continue
        end = next((i for i in range(pos + 1, len(lines)) if (e := codex_item(lines[i])) and e[0] == "user"),
                   len(lines))
        events.append((end, "dropped", a))
    for i in compacted:
        if i not in used:
            events.append((i, "stored", None))
            warn(f"codex {name}: compacted line {i + 1} without a recorded request")
    events.sort(key=lambda x: x[0])

    out, start, previous = [], 0, None
    multi = len(events) > 1
    man_path = path.parent / "manifest.json"
    manifest = json.loads(man_path.read_text(encoding="utf-8")).get("cases", {}) if man_path.exists() else {}
    stderr = (path.parent / f"stderr-{name}.txt")
    stderr_text = stderr.read_text(encoding="utf-8", errors="replace") if stderr.exists() else ""
    for n, (end, kind, a) in enumerate(events, 1):
        h = history(start, end)
        hist_text = render(h)
        phase = (a or {}).get("phase") or ""
        label = LABEL_OF_CASE.get(case, "preamble" if case == "inject" else "other")
        if kind == "stored":
            msg = lines[end]["payload"].get("message") or ""
            summary = msg[len(CODEX_PREFIX):] if msg.startswith(CODEX_PREFIX) else msg
            note = f"Codex CLI 0.171.0, {phase or mode} compaction, `compacted` line {end + 1}."
            if not msg.startswith(CODEX_PREFIX):
                note += " The message has no fixed prefix (kept whole)."
            raw = [lines[i] for i in range(start, end) if lines[i].get("type") == "response_item"
                   and (lines[i].get("metadata") or {}).get("compaction_output")]
            raw_text = "\n".join(c.get("text", "") for c in (raw[-1]["payload"].get("content") or [])) if raw else None
            replies = [t for r, t in h if r == "assistant" and not t.startswith("[tool ")]
            if summary.strip() and replies and summary.strip() == replies[-1].strip() and label in (
                    "empty", "whitespace"):
                got = {"empty": 'an empty answer ""', "whitespace": 'a whitespace answer "   \\n"'}[label]
                scripted = label
                if case == "nomessage":
                    got, scripted = "no output item at all", "no message (empty)"
                note += (f" The model returned {got} (raw compaction output: {raw_text!r}); Codex did not drop it "
                         f"but stored its previous assistant reply, the last one of the history, as the summary: a "
                         f"stale copy of an acknowledgement that carries nothing of the conversation (FINDINGS.md "
                         f"section 7). Labelled other (stale previous reply); the scripted answer was {scripted}.")
                label = "other"
            elif case == "inject":
                note += (" Hook-injection case: the scripted summary is the tool-call preamble; the hooks' "
                         "developer messages (GUARD-CTX-...) are not part of the history.")
            context_after = count_after(end)
            stored = True
            previous_out = previous
            previous = summary
            start = end + 1
        else:
            summary = ""
            context_after = None
            stored = False
            previous_out = previous
            why = {"empty": 'the model gave an empty answer ""', "whitespace": 'the model gave a whitespace answer "   \\n"',
                   "error": "the server answered HTTP 500"}.get(label, label)
            if case == "nomessage":
                why = "the model's response held no output item at all"
            note = (f"Codex CLI 0.171.0, {phase} compaction dropped: {why}; no `compacted` line, the history is "
                    f"kept whole and nothing is stored as the summary.")
            m = re.search(r"WARN[^\n]*Post-turn compaction failed[^\n]*", stderr_text)
            if m and phase == "post_turn":
                note += f" stderr: {m.group(0)[:220]}"
            if case == "error" and phase == "pre_turn":
                note += (" This is Codex's retry before the next turn (usage still over the limit); it failed again "
                         "and that turn failed (exit 1).")
            if phase == "standalone_turn":
                errs = ((manifest.get(name) or {}).get("manual") or {}).get("errors") or []
                if errs:
                    e = (errs[0].get("params") or {}).get("error") or {}
                    note += (f" app-server sent an `error` notification ({e.get('codexErrorInfo')}: "
                             f"{(e.get('message') or '')[:80]}); no PostCompact.")
        note += size_note(summary, hist_text)
        out.append(row("codex", case, mode, label, summary, hist_text, previous_out, count_before(end),
                       context_after, "Codex's token_count events (last_token_usage.total_tokens: the last turn "
                       "call before the compaction; after: Codex's own estimate of the new context)",
                       stored, f"{CODEX}/{path.name}", note, n=n if multi else None, ids=ids))
    if not events:
        SKIPPED.append(f"codex {name}: no compaction request and no `compacted` line")
    return out


def codex(root: Path, ids: set) -> list:
    out = []
    for path in sorted((root / CODEX).glob("*.jsonl")):
        if path.stem.rsplit("-", 1)[-1] not in CODEX_MODES:
            continue
        out += codex_file(root, path, ids)
    return out


# ---------------------------------------------------------------- Gemini CLI

GOT_IT = "Got it. Thanks for the additional context!"


def gem_parts(content) -> list:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    return [p for p in content or [] if isinstance(p, dict)]


def gem_text(msg: dict) -> str:
    return "\n".join(p["text"] for p in gem_parts(msg.get("content")) if isinstance(p.get("text"), str))


def gem_render(messages: list) -> str:
    items, seen_results = [], set()
    for m in messages:
        role = "user" if m.get("type") == "user" else "assistant" if m.get("type") == "gemini" else None
        if role is None:
            continue
        texts = []
        for p in gem_parts(m.get("content")):
            if isinstance(p.get("text"), str):
                if p["text"].startswith("<session_context>"):
                    continue
                texts.append(p["text"])
            elif "functionCall" in p:
                f = p["functionCall"]
                texts.append(tool_call(f.get("name"), f.get("args")))
            elif "functionResponse" in p:
                f = p["functionResponse"]
                if f.get("id") in seen_results:
                    continue
                seen_results.add(f.get("id"))
                resp = f.get("response") or {}
                texts.append(tool_result(resp.get("output", json.dumps(resp, ensure_ascii=False))))
        if role == "assistant" and not any("functionCall" in p for p in gem_parts(m.get("content"))):
            for t in m.get("toolCalls") or []:
                texts.append(tool_call(t.get("name"), t.get("args")))
        text = "\n".join(x for x in texts if x)
        if text:
            items.append(("tool" if role == "user" and all("functionResponse" in p for p in
                                                            gem_parts(m.get("content"))) else role, text))
    return render(items)


def gem_compression(messages: list):
    """Index of the summary message if this `$set` is a compression, else None."""
    for i in range(len(messages) - 1):
        if messages[i].get("type") == "user" and messages[i + 1].get("type") == "gemini" \
                and gem_text(messages[i + 1]).strip() == GOT_IT:
            return i
    return None


def gemini_case(root: Path, case: str, spec: dict, ids: set) -> list:
    path = root / GEMINI / f"session-{case}.jsonl"
    if not path.exists() and (root / GEMINI / f"{case}.jsonl").exists():
        path = root / GEMINI / f"{case}.jsonl"
    rel = f"{GEMINI}/{path.name}"
    mode = spec.get("mode") or "auto"
    name = case[len("manual-"):] if case.startswith("manual-") else case
    runs = spec.get("runs") or []
    attempts = [r for r in runs if any(str(q).startswith("compress") for q in r.get("requests") or [])]
    if not path.exists():
        if attempts:
            SKIPPED.append(f"gemini {case}: compression requests were recorded but no session file was kept "
                           f"(only requests/hook inputs), so the stored summary cannot be read")
        else:
            SKIPPED.append(f"gemini {case}: no compression happened (no compression request) and no session file")
        return []
    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    state, found, last_tokens = [], [], None
    snapshots = []            # state after each record: (record index, list copy, last tokens)
    seen_ids = set()
    for i, d in enumerate(recs):
        if "$set" in d:
            msgs = d["$set"].get("messages")
            if isinstance(msgs, list):
                k = gem_compression(msgs)
                # a --resume after a compression loads the summary pair again, under the ids it already had:
                # only a pair with a new id is a compression
                if k is not None and msgs[k].get("id") not in seen_ids:
                    found.append((i, gem_text(msgs[k]), list(state), last_tokens))
                state = list(msgs)
                seen_ids.update(m.get("id") for m in msgs)
        elif d.get("type") in ("user", "gemini"):
            seen_ids.add(d.get("id"))
            j = next((n for n, m in enumerate(state) if m.get("id") == d.get("id")), None)
            if j is None:
                state.append(d)
            else:
                state[j] = d
            if d.get("type") == "gemini" and isinstance(d.get("tokens"), dict):
                last_tokens = d["tokens"].get("input")
        snapshots.append((i, list(state), last_tokens))
    label = LABEL_OF_CASE.get(name, "other")
    out, previous = [], None
    for n, (i, summary, before_state, tokens) in enumerate(found, 1):
        # a previous compression's summary pair is not conversation
        k = gem_compression(before_state)
        hist_state = before_state[k + 2:] if k is not None else before_state
        history = gem_render(hist_state)
        answers = spec.get("server_compression_answers") or []
        note = f"Gemini CLI 0.61.0, {mode} compression, `$set` at line {i + 1}; the stored text is the 2nd (verify) answer, trimmed."
        if name == "bad-then-good":
            note += " The 1st answer was the preamble \"Let me read the notes file first.\"; the good 2nd answer was stored."
        elif name == "good-then-bad":
            note += (" The 1st answer was a good <scratchpad> + <state_snapshot>; the 2nd (verify) answer, a "
                     "tool-call preamble, replaced it and was stored.")
        elif label == "loop":
            note += " Trailing space trimmed by Gemini CLI."
        elif label == "echo":
            note += " The model sent back Gemini CLI's own compression system instruction verbatim."
        elif label == "skeleton":
            note += " The <state_snapshot> template with its 7 sections left empty."
        if name == "hook-inject":
            note += (" Hook-injection case: BeforeAgent added <hook_context> to the user prompt (stored, so in the "
                     "history) and BeforeModel rewrote the request (not stored).")
        if mode == "manual":
            note += " Triggered by `/compress` (which Gemini CLI then also sends to the model as a prompt)."
        note += " Gemini CLI keeps the last ~30% of the history verbatim after the summary."
        note += size_note(summary, history)
        out.append(row("gemini", name, mode, label, summary, history, previous, tokens, None,
                       "Gemini CLI's tokens.input (of the last gemini message before the compression)", True, rel,
                       note, n=n if len(found) > 1 else None, ids=ids))
        previous = summary
    if len(found) < len(attempts):
        if found:
            warn(f"gemini {case}: {len(attempts)} compression runs but {len(found)} stored; the rest not placed")
            return out
        for n, r in enumerate(attempts, 1):
            argv = r.get("argv") or []
            prompt = argv[argv.index("-p") + 1] if "-p" in argv else ""
            prompt = prompt[:-3] if prompt.endswith("...") else prompt
            reqs = r.get("requests") or []
            main_before = 0
            for q in reqs:
                if str(q).startswith("compress"):
                    break
                main_before += 1
            start = next((i for i, d in enumerate(recs) if d.get("type") == "user" and prompt
                          and gem_text(d).startswith(prompt)), None)
            if start is None:
                warn(f"gemini {case}: run with prompt {prompt[:40]!r} not found in the store")
                continue
            # the compression came before main call main_before + 1 of the run: after the records of the
            # run's main_before-th gemini message (its bare and its toolCalls record share an id)
            if main_before:
                gids = []
                for i in range(start + 1, len(recs)):
                    d = recs[i]
                    if d.get("type") == "gemini" and d.get("id") not in gids:
                        gids.append(d.get("id"))
                target = gids[main_before - 1] if len(gids) >= main_before else None
                end = max((i for i in range(start + 1, len(recs)) if recs[i].get("id") == target), default=None)
                if end is None:
                    warn(f"gemini {case}: main call {main_before} of the run not found in the store")
                    continue
            else:
                end = start - 1
            _, st, tokens = snapshots[end]
            history = gem_render(st)
            answers = [a for a in spec.get("server_compression_answers") or []]
            if name == "inflated":
                why = ("a <state_snapshot> holding 3 copies of the 6,000-token incident log (about 72k chars, "
                       "record.py INFLATED), larger than everything the model last saw")
                result = ("refused as COMPRESSION_FAILED_INFLATED_TOKEN_COUNT: nothing stored, nothing printed, "
                          f"rc {r.get('rc')}; the turn went on with the full history")
            else:
                what = {"empty": 'an empty answer ""', "whitespace": 'a whitespace answer "   \\n"'}[label]
                why = what if name != "verify-empty" else f"a good 1st answer, then {what} to the verify call"
                result = (f"the empty call was retried ({len(reqs) - main_before} compression requests in all), then the "
                          f"turn failed (rc {r.get('rc')}, \"Retry attempts exhausted\"); nothing stored")
            note = f"Gemini CLI 0.61.0, {mode} compression dropped: the model gave {why}; {result}."
            out.append(row("gemini", name, mode, label, "", history, previous, tokens, None,
                           "Gemini CLI's tokens.input (of the last gemini message before the compression)", False,
                           rel, note, n=n if len(attempts) > 1 else None, ids=ids))
    elif not found:
        SKIPPED.append(f"gemini {case}: no compression (no compression request, no compression `$set`): "
                       f"{'a --resume `$set` only' if case == 'resume-only' else 'nothing to read'}")
    return out


def gemini(root: Path, ids: set) -> list:
    manifest = json.loads((root / GEMINI / "manifest.json").read_text(encoding="utf-8"))["cases"]
    out = []
    for case, spec in manifest.items():
        out += gemini_case(root, case, spec, ids)
    known = {f"session-{c}.jsonl" for c in manifest} | {f"{c}.jsonl" for c in manifest}
    for p in sorted((root / GEMINI).glob("*.jsonl")):
        if p.name not in known:
            recs = [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
            if any(d.get("type") in ("user", "gemini") for d in recs):
                warn(f"gemini {p.name}: not a case of the manifest but holds messages")
    return out


# ---------------------------------------------------------------- opencode

def open_copy(db: Path, tmp: Path) -> sqlite3.Connection:
    """The store opened read-only from a copy (db + WAL + shm), so nothing in the repository is touched."""
    dst = tmp / db.parent.name
    dst.mkdir()
    for suffix in ("", "-wal", "-shm"):
        src = db.with_name(db.name + suffix)
        if src.exists():
            shutil.copy2(src, dst / src.name)
    return sqlite3.connect(f"file:{dst / db.name}?mode=ro", uri=True)


def oc_render(parts: list) -> str:
    texts = []
    for p in parts:
        if p.get("type") == "text" and isinstance(p.get("text"), str) and not p.get("synthetic"):
            texts.append(p["text"])
        elif p.get("type") == "tool":
            st = p.get("state") or {}
            texts.append(tool_call(p.get("tool"), st.get("input") or {}))
            if isinstance(st.get("output"), str):
                texts.append(tool_result(st["output"]))
    return "\n".join(t for t in texts if t)


def oc_tokens(t) -> int | None:
    if not isinstance(t, dict):
        return None
    if isinstance(t.get("total"), int) and t["total"]:
        return t["total"]
    cache = t.get("cache") or {}
    return (t.get("input") or 0) + (t.get("output") or 0) + (cache.get("read") or 0) + (cache.get("write") or 0)


def opencode(root: Path, ids: set) -> list:
    out = []
    base = root / OPENCODE
    with tempfile.TemporaryDirectory(prefix="collect-agents-") as tmp:
        for db in sorted(base.glob("*/opencode.db")):
            case_dir = db.parent.name
            rel = f"{OPENCODE}/{case_dir}/opencode.db"
            con = open_copy(db, Path(tmp))
            try:
                rows = con.execute("SELECT id, session_id, data FROM message ORDER BY session_id, time_created, id"
                                   ).fetchall()
                parts = collections.defaultdict(list)
                for mid, data in con.execute("SELECT message_id, data FROM part ORDER BY time_created, id"):
                    parts[mid].append(json.loads(data))
            finally:
                con.close()
            by_session = collections.defaultdict(list)
            for mid, sid, data in rows:
                by_session[sid].append((mid, json.loads(data)))
            found = []
            for sid, msgs in by_session.items():
                hist, last_tokens, previous, marker = [], None, None, None
                for mid, d in msgs:
                    ps = parts.get(mid, [])
                    comp = next((p for p in ps if p.get("type") == "compaction"), None)
                    if d.get("role") == "user" and comp is not None:
                        marker = comp
                        continue
                    if d.get("role") == "assistant" and d.get("summary") is True:
                        summary = "\n".join(p["text"] for p in ps if p.get("type") == "text"
                                            and isinstance(p.get("text"), str))
                        found.append({"summary": summary, "history": render(hist), "previous": previous,
                                      "before": last_tokens, "marker": marker or {}, "msg": d,
                                      "text_parts": sum(p.get("type") == "text" for p in ps)})
                        previous, hist, marker = summary, [], None
                        continue
                    text = oc_render(ps)
                    if text:
                        hist.append((d.get("role"), text))
                    if d.get("role") == "assistant":
                        last_tokens = oc_tokens(d.get("tokens"))
            if not found:
                SKIPPED.append(f"opencode {case_dir}: no summary message in the store")
            for n, f in enumerate(found, 1):
                mode = "auto" if f["marker"].get("auto", True) else "manual"
                name = case_dir[len("manual-"):] if case_dir.startswith("manual-") else case_dir
                base_case = name
                if name in ("prior", "prior-after-empty"):
                    base_case = ("empty" if n == 1 else "good") if name == "prior-after-empty" else "good"
                if name == "inject":
                    base_case = "empty"
                label = LABEL_OF_CASE.get(base_case, "other")
                s = f["summary"]
                m = f["msg"]
                note = (f"opencode 1.18.33, {mode} compaction (finish {m.get('finish')!r}, error "
                        f"{m.get('error')!r}, {f['text_parts']} text part(s)).")
                if label == "empty":
                    note += (" Stored as a summary message with no text part at all; the next request carries no "
                             "summary.")
                if label == "whitespace":
                    note += " Stored as a text part \"   \\n\" and sent as the assistant summary."
                if label == "echo":
                    note += " The model sent back opencode's own compaction instructions (the template request)."
                if label == "language":
                    note += " Spanish body under opencode's English section headings."
                if name == "inject":
                    note += " Plugin-injection case: the plugin saw the empty summary and put a note in front of the model."
                if name == "prior":
                    note += (" Second compaction of the session; opencode sent the first summary as <prior-summary>."
                             if n == 2 else " First of two compactions in the session.")
                if name == "prior-after-empty":
                    note += (" Second compaction: after the empty first one opencode sent no <prior-summary>, so what "
                             "the empty summary lost stays lost." if n == 2 else " First of two compactions.")
                    if n == 2:
                        label = "other"
                        note += (" Labelled other (stale, ungrounded): the scripted model replayed the summary written "
                                 "for the first compaction; its identifiers are right for the session but are neither "
                                 "in the conversation it replaced nor in a previous summary (there was none), it "
                                 "leaves out the rollback window the user gave in that conversation, and it names an "
                                 "old latest ask.")
                if f["marker"].get("tail_start_id"):
                    note += " opencode keeps the tail from tail_start_id verbatim after the summary."
                note += size_note(s, f["history"], f["previous"])
                out.append(row("opencode", name, mode, label, s, f["history"], f["previous"], f["before"], None,
                               "opencode's message tokens (total of the last assistant message before the "
                               "compaction; no count after is stored)", True, rel, note,
                               n=n if len(found) > 1 else None, ids=ids))
    return out


# ---------------------------------------------------------------- main

def table(rows: list) -> str:
    counts = collections.Counter((r["agent"], r["label"]) for r in rows)
    labels = [lb for lb in LABELS if any(k[1] == lb for k in counts)]
    w = max(len(a) for a in AGENTS) + 2
    lines = ["agent".ljust(w) + "".join(lb.rjust(max(len(lb), 3) + 2) for lb in labels) + "  total  stored=false"]
    for a in AGENTS:
        ar = [r for r in rows if r["agent"] == a]
        lines.append(a.ljust(w) + "".join(str(counts[(a, lb)]).rjust(max(len(lb), 3) + 2) for lb in labels)
                     + str(len(ar)).rjust(7) + str(sum(not r["stored"] for r in ar)).rjust(13))
    lines.append("total".ljust(w) + "".join(str(sum(counts[(a, lb)] for a in AGENTS)).rjust(max(len(lb), 3) + 2)
                                            for lb in labels) + str(len(rows)).rjust(7)
                 + str(sum(not r["stored"] for r in rows)).rjust(13))
    return "\n".join(lines)


def default_root() -> Path:
    return Path(__file__).resolve().parents[3]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=None,
                    help="the repository (default: three levels above tests/corpus/real/, where this script lives)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "agents.jsonl")
    ap.add_argument("--table", action="store_true", help="print the agent x label counts")
    args = ap.parse_args(argv)
    root = (args.root or default_root()).resolve()
    if not (root / CODEX).is_dir() or not (root / CLAUDE).is_dir():
        ap.error(f"{root} does not hold {CODEX} and {CLAUDE}: give the repository with --root")
    ids: set = set()
    rows = claude_code(root, ids) + codex(root, ids) + gemini(root, ids) + opencode(root, ids)
    for r in rows:
        assert r["label"] in LABELS, r["id"]
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows -> {args.out}", file=sys.stderr)
    if args.table:
        print(table(rows))
    for s in SKIPPED:
        print(f"skipped: {s}", file=sys.stderr)
    for w in WARNINGS:
        print(f"warning: {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
