"""The OpenAI Responses API as a scripted model speaks it, the protocol of Codex CLI (0.171, `wire_api =
"responses"`): POST /v1/responses, answered as SSE events (response.created, output_item.added, the text
in output_text.delta pieces, output_item.done, response.completed with the usage), whatever the request's
`stream`; GET /v1/models. Codex marks its compaction request itself: the header `x-codex-turn-metadata`
holding `"request_kind":"compaction"` (JSON).

    with ScriptedResponses([summary], input_tokens=0) as server:    # the provider's base_url = server.url
"""
from __future__ import annotations

import json
import time
import uuid

from .base import Answer, ScriptedModel, pieces, sse, tokens

REPLY = "Noted. I will keep that in mind."
PIECE = 200


def request_kind(headers: dict) -> str:
    """Codex's own mark: x-codex-turn-metadata {"request_kind": "compaction" | ...}."""
    raw = headers.get("x-codex-turn-metadata") or ""
    try:
        meta = json.loads(raw)
    except ValueError:
        return "compaction" if '"request_kind":"compaction"' in raw.replace(" ", "") else ""
    return str(meta.get("request_kind") or "") if isinstance(meta, dict) else ""


def is_compaction(item: dict) -> bool:
    """For a kept request ({path, headers, body})."""
    return request_kind(item.get("headers") or {}) == "compaction"


def usage(input_tokens: int, output_tokens: int) -> dict:
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": input_tokens + output_tokens}


def stream(a: Answer, model, use: dict) -> bytes:
    """The answer's events: a message (its text in pieces), a function call, or (silent) no output item."""
    resp = {"id": "resp_" + uuid.uuid4().hex[:24], "object": "response", "created_at": int(time.time()),
            "model": model, "status": "in_progress", "output": []}
    events = [{"type": "response.created", "response": resp}]
    item = None
    if a.call:
        item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24], "call_id": "call_" + uuid.uuid4().hex[:24],
                "name": a.call[0], "arguments": json.dumps(a.call[1]), "status": "completed"}
        events.append({"type": "response.output_item.added", "output_index": 0,
                       "item": dict(item, status="in_progress", arguments="")})
    elif not a.silent:
        mid = "msg_" + uuid.uuid4().hex[:24]
        item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": a.text, "annotations": []}]}
        events.append({"type": "response.output_item.added", "output_index": 0,
                       "item": dict(item, status="in_progress", content=[])})
        events += [{"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0,
                    "delta": p} for p in pieces(a.text, PIECE)]
    if item is not None:
        events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    events.append({"type": "response.completed",
                   "response": dict(resp, status="completed", output=[item] if item else [], usage=use)})
    return sse(events, named=True)


def error_body(a: Answer) -> dict:
    return {"error": dict({"message": "scripted failure", "type": "server_error"}, **(a.error or {}))}


def answer(h, a: Answer, body: dict, use: dict) -> None:
    if a.status != 200:
        return h.send_json(a.status, error_body(a))
    h.send_sse(stream(a, body.get("model"), use))


class ScriptedResponses(ScriptedModel):
    """A compaction request gets the next of `summaries` (the last one repeating; HTTP_500 an HTTP 500,
    NO_MESSAGE no output item), after `compaction_delay` seconds (a slow model); any other request a
    numbered reply (so a reply that resurfaces later, e.g. as a summary, can be traced to its turn), or,
    when the last user message holds `tool_trigger` and no tool output follows it, the function call
    `tool_call` = (name, arguments). Usage: `input_tokens` (0: a rough count of the request, bytes/4), so
    Codex can be pushed over its compaction threshold; `compaction_input_tokens` for the compaction call
    itself (None: the same rule as any request; 0: bytes/4). Every request is kept in `requests` (method,
    path, kind, headers without any key, JSON body) and appended to `record` when given; `keys[i]`: the
    credential (Authorization) `requests[i]` came with."""

    def __init__(self, summaries=None, reply: str = REPLY, record=None, input_tokens: int = 0, port: int = 0,
                 compaction_input_tokens: int = None, tool_trigger: str = "RUN_TOOL",
                 tool_call: tuple = ("exec_command", {"cmd": "cat notes.txt"})):
        super().__init__(record)
        self.summaries = list(summaries if summaries is not None else ["Summary: nothing yet."])
        self.reply = reply
        self.input_tokens = input_tokens
        self.compaction_input_tokens = compaction_input_tokens
        self.tool_trigger = tool_trigger
        self.tool_call = tool_call
        self.turns = 0
        self.compaction_delay = 0.0
        self.listen(port=port)

    @property
    def url(self) -> str:
        return f"{super().url}/v1"

    def compactions(self) -> list:
        return [r for r in self.requests if r["kind"] == "compaction"]

    def wants_tool(self, body: dict):
        """The last user message holds tool_trigger and no tool output follows it."""
        items = [i for i in (body.get("input") or []) if isinstance(i, dict)]
        users = [n for n, i in enumerate(items) if i.get("type") == "message" and i.get("role") == "user"]
        if not self.tool_trigger or not users or self.tool_trigger not in json.dumps(items[users[-1]].get("content")):
            return None
        if any(i.get("type", "").endswith("_call_output") for i in items[users[-1] + 1:]):
            return None
        return self.tool_call

    def _keep(self, h, body, kind: str) -> None:
        self.keep({"method": h.command, "path": h.path, "kind": kind, "headers": h.public_headers(), "body": body},
                  h.credential("authorization") if h.command == "POST" else None)

    def on_get(self, h) -> None:
        self._keep(h, None, "get")
        super().on_get(h)

    def on_post(self, h) -> None:
        body = h.read_json()
        if body is None:
            self._keep(h, {"_raw": h.raw()[:2000].decode("utf-8", "replace")}, "bad")
            return h.send_json(400, {"error": {"message": "bad json"}})
        kind = "compaction" if request_kind(h.public_headers()) == "compaction" else "turn"
        self._keep(h, body, kind)
        if not h.route.rstrip("/").endswith("/responses"):
            return h.send_json(404, {"error": {"message": f"not scripted: {h.path}"}})
        if kind == "compaction":
            time.sleep(self.compaction_delay)
            a = Answer.of(self.next_of(self.summaries))
        else:
            call = self.wants_tool(body)
            with self._lock:
                self.turns += 1
                turn = self.turns
            a = Answer(call=call) if call else Answer(text=f"{self.reply} (reply {turn})")
        n = self.compaction_input_tokens if kind == "compaction" and self.compaction_input_tokens is not None \
            else self.input_tokens
        answer(h, a, body, usage(n or tokens(len(h.raw())), 0 if a.silent else max(1, len(a.text) // 4)))
