"""OpenAI Chat Completions as a scripted model speaks it, the protocol of OpenClaw, opencode, lossless-claw
and the Python frameworks' clients: POST /v1/chat/completions, whole or streamed (the text in chunks of 64
characters, a usage chunk when the client asks for one, then `data: [DONE]`), GET /v1/models.

How each of those clients marks its compaction request, and the scripted servers: ScriptedOpenAI
(OpenClaw, the frameworks) and its variants for opencode (ScriptedOpencode: a second port for compaction,
titles, a usage count reported once) and lossless-claw (ScriptedLosslessClaw: its summarization kinds,
one log for the agent's model and the summary model).

    server = ScriptedOpenAI(["## Decisions\\n..."], record="requests.jsonl")   # then `with server:`
"""
from __future__ import annotations

import json
import re
import time
import uuid

from .base import Answer, ScriptedModel, pieces, sse, tokens

REPLY = "Noted. I will keep that in mind."
PIECE = 64
# what the Python frameworks' summary requests say (LangChain's SummarizationMiddleware, Google ADK's
# LlmEventSummarizer, the guard's own L1 and L2 prompts, which the integrations send)
MARKS = ("Messages to summarize:", "The following is a conversation history between a user and an AI agent",
         "You compact conversation history", "Compress the conversation between the fence lines")


def text_of(content, sep: str = "\n") -> str:
    if isinstance(content, list):
        return sep.join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


# ------------------------------------------------------------------ the compaction marks

def is_compaction(body: dict) -> bool:
    """OpenClaw's compaction request (its summarizer system prompt, "You are a context summarization
    assistant", or a user message holding the conversation to condense) or a framework's (MARKS)."""
    msgs = body.get("messages") or []
    system = " ".join(str(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") in ("system", "developer"))
    last = str(msgs[-1].get("content")) if msgs and isinstance(msgs[-1], dict) else ""
    if "summarization assistant" in system.lower() or last.lstrip().startswith("<conversation>") \
            or "<conversation>\n" in last[:200]:
        return True
    said = " ".join(str(m.get("content")) for m in msgs if isinstance(m, dict))
    return any(mark in said for mark in MARKS)


def is_opencode_compaction(body: dict) -> bool:
    """opencode's compaction request: no tools, and its last user message holds the conversation in
    <conversation> tags with the "anchored summary" instructions (or a <prior-summary>)."""
    msgs = body.get("messages") or []
    if not msgs or body.get("tools"):
        return False
    last = text_of(msgs[-1].get("content")) if isinstance(msgs[-1], dict) else ""
    return "<conversation>" in last and ("anchored summary" in last or "<prior-summary>" in last)


def is_opencode_title(body: dict) -> bool:
    msgs = body.get("messages") or []
    system = " ".join(text_of(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") == "system")
    return "title generator" in system.lower()


LCM_SYSTEM = "context-compaction summarization engine"


def lossless_prompt(body: dict) -> str:
    msgs = body.get("messages") or []
    return text_of(msgs[-1].get("content"), "") if msgs else ""


def lossless_kind(body: dict) -> str:
    """lossless-claw's requests: turn | leaf-normal | leaf-aggressive | condensed-d1 | condensed-d2 |
    condensed-d3+ | summary-other."""
    msgs = body.get("messages") or []
    system = " ".join(text_of(m.get("content"), "") for m in msgs if m.get("role") in ("system", "developer"))
    user = lossless_prompt(body)
    if LCM_SYSTEM not in system and "You summarize a SEGMENT" not in user and "<conversation_to_condense>" not in user:
        return "turn"
    if user.startswith("You summarize a SEGMENT"):
        return "leaf-aggressive" if "Aggressive summary policy:" in user else "leaf-normal"
    if user.startswith("You are compacting leaf-level"):
        return "condensed-d1"
    if user.startswith("You are condensing multiple session-level"):
        return "condensed-d2"
    if user.startswith("You are creating a high-level memory node"):
        return "condensed-d3+"
    return "summary-other"


def lossless_inner(prompt: str) -> str:
    """The text lossless-claw asked to summarize (segment or summaries to condense)."""
    m = re.search(r"<conversation_segment>\n(.*)\n</conversation_segment>", prompt, re.S) or \
        re.search(r"<conversation_to_condense>\n(.*)\n</conversation_to_condense>", prompt, re.S)
    return m.group(1) if m else prompt


# ------------------------------------------------------------------ the answer, in the protocol

def usage(prompt: int, text: str) -> dict:
    completion = max(1, len(text) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_call(call: tuple, index=None) -> dict:
    out = {"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
           "function": {"name": call[0], "arguments": json.dumps(call[1])}}
    return out if index is None else {"index": index, **out}


def message(a: Answer) -> dict:
    if a.call:
        return {"role": "assistant", "content": None, "tool_calls": [_tool_call(a.call)]}
    return {"role": "assistant", "content": a.text}


def completion(msg: dict, model, finish: str = "stop", use: dict = None) -> dict:
    out = {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()), "model": model,
           "choices": [{"index": 0, "finish_reason": finish, "message": msg}]}
    if use is not None:
        out["usage"] = use
    return out


def stream(a: Answer, model, use: dict = None) -> bytes:
    """The answer as SSE chunks (a usage chunk when `use`), then [DONE]."""
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    chunks = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
    if a.call:
        chunks.append(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [_tool_call(a.call, 0)]}}]))
    else:
        chunks += [dict(base, choices=[{"index": 0, "delta": {"content": p}}]) for p in pieces(a.text, PIECE)]
    chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls" if a.call else "stop"}]))
    if use is not None:
        chunks.append(dict(base, choices=[], usage=use))
    return sse(chunks, done=True)


def error_body(a: Answer) -> dict:
    return {"error": dict({"message": "scripted failure", "type": "server_error"}, **(a.error or {}))}


def answer(h, a: Answer, body: dict, use: dict, stream_usage=None) -> None:
    """Send `a` to the request `body` (streamed when it asks; the usage chunk when it asks, or always
    when `stream_usage`)."""
    if a.status != 200:
        return h.send_json(a.status, error_body(a))
    if not body.get("stream"):
        return h.send_json(200, completion(message(a), body.get("model"), "tool_calls" if a.call else "stop", use))
    asked = stream_usage or (body.get("stream_options") or {}).get("include_usage")
    h.send_sse(stream(a, body.get("model"), use if asked else None))


# ------------------------------------------------------------------ the servers

class ScriptedOpenAI(ScriptedModel):
    """Compaction requests (`is_compaction`) get the next of `summaries` (the last one repeating), after
    `when`: [(text the request holds, summary)], checked first, in order; every other request `reply`.
    `prompt_tokens`: the usage reported (0: a rough count of the request). Every request is kept in
    `requests` ({path, kind, body}) and appended to `record` when given."""
    stream_usage = None          # True: a usage chunk ends every stream, asked for or not

    def __init__(self, summaries=None, reply: str = REPLY, record=None, prompt_tokens: int = 0, port: int = 0,
                 when=None, roles=("main",)):
        super().__init__(record)
        self.summaries = list(summaries or ["## Decisions\nNone.\n\n## Open TODOs\nNone."])
        self.when = list(when or [])
        self.reply = reply
        self.prompt_tokens = prompt_tokens
        for i, role in enumerate(roles):
            self.listen(role=role, port=port if i == 0 else 0)

    @property
    def url(self) -> str:
        return f"{super().url}/v1"

    def url_of(self, role: str = "main") -> str:
        return f"http://127.0.0.1:{self.port_of(role)}/v1"

    # -- what to answer (the variants change these)
    def kind(self, role: str, body: dict) -> str:
        return "compaction" if is_compaction(body) else "turn"

    def respond(self, kind: str, body: dict):
        if kind != "compaction":
            return self.reply
        sent = json.dumps(body.get("messages") or [], ensure_ascii=False)
        for needle, text in self.when:
            if needle in sent:
                return text
        return self.next_of(self.summaries)

    def usage_for(self, kind: str, raw_len: int, text: str) -> dict:
        return usage(self.prompt_tokens or tokens(raw_len), text)

    def entry(self, h, kind: str, body: dict, use: dict, a: Answer) -> dict:
        return {"path": h.path, "kind": kind, "body": body}

    # -- serving
    def on_post(self, h) -> None:
        body = h.read_json()
        if body is None:
            return h.send_json(400, {"error": {"message": "bad json"}})
        if not h.route.rstrip("/").endswith("/chat/completions"):
            self.keep(self.entry(h, "unknown", body, None, Answer(status=404)))
            return h.send_json(404, {"error": {"message": "not found"}})
        kind = self.kind(h.role, body)
        a = Answer.of(self.respond(kind, body))
        use = self.usage_for(kind, len(h.raw()), a.text)
        self.keep(self.entry(h, kind, body, use, a))
        answer(h, a, body, use, self.stream_usage)


class ScriptedOpencode(ScriptedOpenAI):
    """For opencode: two listeners, `main` for the main turns (and titles) and `compaction` for what opencode
    routes through `agent.compaction.model` (every request there a compaction). A title request gets TITLE.
    Usage: `main_prompt_tokens` for main turns, `next_turn_prompt_tokens` for the next main turn only (a
    count over the limit on every turn makes opencode compact after every turn, forever),
    `compaction_prompt_tokens` for compactions (0: a rough count); a usage chunk ends every stream (opencode
    counts from it). Each request is kept with its port role, time, headers and the usage reported."""
    stream_usage = True
    TITLE = "Deploy ticket OPS-4411 notes"

    def __init__(self, summaries=None, reply: str = REPLY, record=None, main_prompt_tokens: int = 1200,
                 compaction_prompt_tokens: int = 0, when=None):
        super().__init__(summaries if summaries is not None else ["## Objective\n- (none)"], reply, record,
                         when=when, roles=("main", "compaction"))
        self.main_prompt_tokens = main_prompt_tokens
        self.compaction_prompt_tokens = compaction_prompt_tokens
        self.next_turn_prompt_tokens = None

    @property
    def main_port(self) -> int:
        return self.port_of("main")

    @property
    def compaction_port(self) -> int:
        return self.port_of("compaction")

    def kind(self, role: str, body: dict) -> str:
        if role == "compaction" or is_opencode_compaction(body):
            return "compaction"
        return "title" if is_opencode_title(body) else "turn"

    def respond(self, kind: str, body: dict):
        return self.TITLE if kind == "title" else super().respond(kind, body)

    def usage_for(self, kind: str, raw_len: int, text: str) -> dict:
        if kind == "turn":
            with self._lock:
                once, self.next_turn_prompt_tokens = self.next_turn_prompt_tokens, None
            return usage(once or self.main_prompt_tokens or tokens(raw_len), text)
        if kind == "compaction":
            return usage(self.compaction_prompt_tokens or tokens(raw_len), text)
        return usage(tokens(raw_len), text)

    def entry(self, h, kind: str, body: dict, use: dict, a: Answer) -> dict:
        return {"port": h.role, "path": h.path, "kind": kind, "time": time.time(), "headers": h.public_headers(),
                "usage_reported": use, "body": body}


class ScriptedLosslessClaw(ScriptedOpenAI):
    """One of the two servers of a lossless-claw case: `main` (the agent's model) or `summ` (lossless-claw's
    summaryModel); both answer lossless-claw's summarization requests (lossless_kind) with
    `responder(kind, prompt) -> (status, text)`, because its forced path falls back to the agent's own
    model when the summary provider fails, and turns with `turn_reply(body)`. Both keep what they got in
    one `log` (under `lock`): a summarization request whole (body, what was answered, HTTP status,
    `phase`), a turn without its body (OpenClaw's ~50 KB agent prompt); no headers. Serving from the start
    until close()."""
    models = ("scripted", "summarizer")

    def __init__(self, name: str, responder, log: list, lock, turn_reply):
        super().__init__()
        self.name, self.responder, self.turn_reply = name, responder, turn_reply
        self.requests, self._lock = log, lock
        self.phase = "setup"
        self.start()

    def kind(self, role: str, body: dict) -> str:
        return lossless_kind(body)

    def respond(self, kind: str, body: dict):
        if kind == "turn":
            return self.turn_reply(body)
        status, text = self.responder(kind, lossless_prompt(body))
        return text if status == 200 else {"status": status, "message": "scripted upstream failure",
                                           "code": "internal_error"}

    def entry(self, h, kind: str, body: dict, use: dict, a: Answer) -> dict:
        item = {"server": self.name, "phase": self.phase, "t": round(time.time(), 3), "path": h.path,
                "kind": kind, "model": body.get("model"), "status": a.status}
        if kind == "turn":
            item["messages"] = len(body.get("messages") or [])
        else:
            item["body"] = body
            item["answer"] = a.text
        return item
