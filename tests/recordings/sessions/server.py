"""One scripted model server on 127.0.0.1 for long working sessions, speaking the four agents' APIs
(stdlib only; the kit of tests/modelkit speaks each protocol):

  POST /v1/messages                                  Anthropic Messages (Claude Code), streamed or not
  POST /v1/messages/count_tokens                     {"input_tokens": n}
  POST /v1/responses                                 OpenAI Responses, SSE (Codex; compaction marked by the
                                                     x-codex-turn-metadata header, request_kind "compaction")
  POST /v1beta/models/<m>:streamGenerateContent      Gemini, SSE (Gemini CLI's main turns)
  POST /v1beta/models/<m>:generateContent            Gemini, not streamed (compression, JSON helpers)
  POST /v1beta/models/<m>:countTokens
  POST /v1/chat/completions                          OpenAI Chat Completions, SSE (opencode)

What it answers is the session's script (`Script`, see script.py), the same whatever the protocol:
each scripted user turn is found in the request by its text (the last user message holding it); while
the turn's tool calls are not all answered by tool results, the next one is asked for (in the agent's
own tool names, read from the tools the request declares: `Script.call(agent, tool, tools)`), then the
turn's reply. A request without tools never gets a tool call. A compaction request (each agent's own
mark) gets `summarize(agent, body, conversation_text)`: the next scripted summary, the agent's own
prompt sent back, or a real model's answer. Every request is kept in `requests` (headers without keys)
and appended to `record` (JSON lines) when given.
"""
from __future__ import annotations

import json
import re
import sys
import threading
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))          # tests/, for the kit

from modelkit import anthropic, gemini, openai_chat, responses  # noqa: E402
from modelkit.base import Answer, ScriptedModel  # noqa: E402

_text = anthropic.text_of


# ------------------------------------------------------------------ the conversation, protocol-free

def events_of(protocol: str, body: dict) -> list:
    """[(kind, text)] in order, kind one of user / assistant / call / result."""
    ev = []
    if protocol == "anthropic":
        for m in body.get("messages") or []:
            c = m.get("content")
            blocks = [{"type": "text", "text": c}] if isinstance(c, str) else (c or [])
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                t = b.get("type")
                if t == "text":
                    ev.append(("user" if m.get("role") == "user" else "assistant", b.get("text") or ""))
                elif t == "tool_use":
                    ev.append(("call", json.dumps(b.get("input"))))
                elif t == "tool_result":
                    ev.append(("result", _text(b.get("content")) if not isinstance(b.get("content"), str)
                               else b["content"]))
    elif protocol == "responses":
        for i in body.get("input") or []:
            if not isinstance(i, dict):
                continue
            t = i.get("type")
            if t == "message":
                ev.append(("user" if i.get("role") == "user" else "assistant" if i.get("role") == "assistant"
                           else "other", _text(i.get("content"))))
            elif t in ("function_call", "custom_tool_call", "local_shell_call"):
                ev.append(("call", str(i.get("arguments") or i.get("input") or "")))
            elif t in ("function_call_output", "custom_tool_call_output"):
                out = i.get("output")
                ev.append(("result", out if isinstance(out, str) else json.dumps(out)))
    elif protocol == "gemini":
        for c in body.get("contents") or []:
            for p in c.get("parts") or []:
                if not isinstance(p, dict):
                    continue
                if "text" in p:
                    ev.append(("user" if c.get("role") == "user" else "assistant", p.get("text") or ""))
                elif "functionCall" in p:
                    ev.append(("call", json.dumps(p["functionCall"].get("args"))))
                elif "functionResponse" in p:
                    ev.append(("result", json.dumps(p["functionResponse"].get("response"))))
    elif protocol == "chat":
        for m in body.get("messages") or []:
            role = m.get("role")
            if role == "tool":
                ev.append(("result", _text(m.get("content"))))
                continue
            if role in ("user", "assistant"):
                t = _text(m.get("content"))
                if t:
                    ev.append((role, t))
            for tc in m.get("tool_calls") or []:
                ev.append(("call", (tc.get("function") or {}).get("arguments") or ""))
    return ev


def conversation_text(protocol: str, body: dict) -> str:
    """The request's conversation as plain text (for a real model asked to summarize it)."""
    names = {"user": "User", "assistant": "Assistant", "call": "Tool call", "result": "Tool result"}
    return "\n\n".join(f"{names[k]}: {t.strip()}" for k, t in events_of(protocol, body)
                       if k in names and t and t.strip())


def tool_names(protocol: str, body: dict) -> list:
    tools = body.get("tools") or []
    out = []
    for t in tools if isinstance(tools, list) else []:
        if not isinstance(t, dict):
            continue
        if protocol == "gemini":
            out += [f.get("name") for f in t.get("functionDeclarations") or [] if isinstance(f, dict)]
        elif protocol == "chat":
            out.append((t.get("function") or {}).get("name"))
        else:
            out.append(t.get("name"))
    return [n for n in out if n]


# ------------------------------------------------------------------ the server

class SessionServer(ScriptedModel):
    """`script`: a script.Script (turns, tool calls); `agent`: which agent's tool names to use;
    `summarize(protocol, body, conversation) -> str`: the compaction answer."""

    def __init__(self, script, agent: str, summarize, record=None, usage_scale: float = 1.0):
        super().__init__(record)
        self.script, self.agent, self.summarize_fn = script, agent, summarize
        self.usage_scale = usage_scale
        self.compactions: list = []          # (protocol, answer)
        self.unmatched: list = []            # user texts the script did not know
        # Gemini CLI runs `/compress` without waiting for it (its command starts the compression and returns) and
        # sends "/compress" to the model as a prompt at once; that turn is held until the compression's second
        # (verify) call was answered, or the process could exit before the compression is stored
        self.compressed = threading.Event()
        self.listen()

    def url(self, suffix: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{suffix}"

    # -- what to say
    def keep_request(self, h, protocol: str, body: dict, kind: str) -> None:
        self.keep({"protocol": protocol, "path": h.route, "kind": kind, "time": time.time(),
                   "headers": h.public_headers(), "body": body})

    def next_step(self, protocol: str, body: dict) -> Answer:
        """A tool call or the reply, for an ordinary turn."""
        ev = events_of(protocol, body)
        tools = tool_names(protocol, body)
        # the user's last message decides (text the agent adds to it, such as Claude Code's
        # <system-reminder> blocks or an environment context, set aside)
        turn, idx = None, None
        for i in range(len(ev) - 1, -1, -1):
            if ev[i][0] == "user" and not ev[i][1].lstrip().startswith(("<system-reminder>", "<environment_context>")):
                turn, idx = self.script.turn_for(ev[i][1]), i
                break
        if turn is None:
            last_user = next((t for k, t in reversed(ev) if k == "user"), "")
            with self._lock:
                self.unmatched.append(last_user[:200])
            return Answer(text=self.script.ack)
        done = sum(1 for k, _ in ev[idx + 1:] if k == "result")
        if tools and done < len(turn.tools):
            name, args = self.script.call(self.agent, turn.tools[done], tools)
            if name:
                return Answer(call=(name, args))
        # answered turns after this one in the request mean this request is a side call: reply anyway
        return Answer(text=turn.reply)

    def summary(self, protocol: str, body: dict) -> Answer:
        text = self.summarize_fn(protocol, body, conversation_text(protocol, body))
        with self._lock:
            self.compactions.append((protocol, text))
        return Answer(text=text)

    def usage_tokens(self, raw_len: int) -> int:
        return max(1, int(raw_len / 4 * self.usage_scale))

    # -- routing
    def on_post(self, h) -> None:
        body = h.read_json()
        if body is None:
            return h.send_json(400, {"error": {"message": "bad json"}})
        path, n = h.route, self.usage_tokens(len(h.raw()))
        if path.endswith("/messages/count_tokens"):
            self.keep_request(h, "anthropic", body, "count")
            return h.send_json(200, {"input_tokens": n})
        if path.endswith("/messages"):
            return self._anthropic(h, body, n)
        if path.endswith("/responses"):
            return self._responses(h, body, n)
        if ":countTokens" in path:
            self.keep_request(h, "gemini", body, "count")
            return h.send_json(200, {"totalTokens": n})
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return self._gemini(h, body, n)
        if path.endswith("/chat/completions"):
            return self._chat(h, body, n)
        self.keep_request(h, "unknown", body, "unknown")
        h.send_json(404, {"error": {"message": f"not scripted: {path}"}})

    # Anthropic Messages (Claude Code)
    def _anthropic(self, h, body, n):
        if anthropic.is_compaction(body):
            kind, a = "compaction", self.summary("anthropic", body)
        else:
            kind, a = "turn", self.next_step("anthropic", body)
        self.keep_request(h, "anthropic", body, kind)
        anthropic.answer(h, a, body, anthropic.usage(n))

    # OpenAI Responses (Codex)
    def _responses(self, h, body, n):
        if responses.request_kind(h.public_headers()) == "compaction":
            kind, a = "compaction", self.summary("responses", body)
        else:
            kind, a = "turn", self.next_step("responses", body)
        self.keep_request(h, "responses", body, kind)
        responses.answer(h, a, body, responses.usage(n, max(1, len(a.text) // 4)))

    # Gemini (Gemini CLI)
    def _gemini(self, h, body, n):
        use = gemini.usage(n)
        if ":streamGenerateContent" in h.route:
            last = [t for k, t in events_of("gemini", body) if k == "user"]
            if last and last[-1].strip().startswith("/compress"):
                self.compressed.wait(60)
                time.sleep(1.5)
            a = self.next_step("gemini", body)
            self.keep_request(h, "gemini", body, "turn")
            return gemini.answer(h, a, use)
        if gemini.is_compression(body):
            if gemini.is_verify(body):
                # the verify call: the first answer again (Gemini CLI keeps the second when not empty)
                with self._lock:
                    text = self.compactions[-1][1] if self.compactions else ""
                kind, a = "compaction-verify", Answer(text=text)
            else:
                self.compressed.clear()
                kind, a = "compaction", self.summary("gemini", body)
            self.keep_request(h, "gemini", body, kind)
            gemini.answer(h, a, use)
            if kind == "compaction-verify":
                self.compressed.set()
            return
        gc = body.get("generationConfig") or {}
        schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
        self.keep_request(h, "gemini", body, "helper")
        gemini.answer(h, Answer(text=json.dumps(gemini.json_for_schema(schema)) if schema else self.script.ack), use)

    # OpenAI Chat Completions (opencode)
    def _chat(self, h, body, n):
        if openai_chat.is_opencode_compaction(body):
            kind, a = "compaction", self.summary("chat", body)
        elif openai_chat.is_opencode_title(body):
            kind, a = "title", Answer(text=self.script.title)
        else:
            kind, a = "turn", self.next_step("chat", body)
        self.keep_request(h, "chat", body, kind)
        openai_chat.answer(h, a, body, openai_chat.usage(n, a.text), stream_usage=True)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()
