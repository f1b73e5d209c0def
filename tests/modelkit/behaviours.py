"""A model that misbehaves on script, as the upstream of the guard's own client (L1, L2): FakeLLM answers
POST /v1/chat/completions (OpenAI Chat Completions) and POST /v1/messages (Anthropic Messages), not
streamed, from a script of behaviours (one per request, the last one repeating), and keeps every request
(path, headers, JSON body), so tests assert what L1 and L2 actually sent.
"""
from __future__ import annotations

import socket
import time

from . import anthropic, openai_chat
from .base import ScriptedModel

GOOD = ("The user moved CI to GitHub Actions (.github/workflows/ci.yml, Python 3.10-3.13). "
        "Publish job pending; it must run only on tags v*. Latest request: add the coverage badge.")

# What a summary looks like when UTF-8 bytes were read as latin-1 somewhere on the way.
_GARBAGE = ("Пользователь перенёс CI на GitHub Actions; публикация ждёт тегов v*. 用户要求添加覆盖率徽章。"
            "Der Nutzer möchte eine Übersicht.").encode("utf-8").decode("latin-1")


def _last_user(body) -> str:
    """The conversation the guard sent (echoing it is how a summary ends up larger than its input)."""
    try:
        content = body["messages"][-1]["content"]
    except (KeyError, IndexError, TypeError):
        return ""
    return openai_chat.text_of(content)         # content parts, as OpenAI's SDKs send them (OpenClaw does)


class Behaviour(dict):
    """{'kind': ..., plus options}. Kinds: ok, empty, loop, inflation, garbage, reasoning_only,
    think_then_ok, refusal, status (code, retry_after), slow (seconds), cut_off, drop."""


def ok(text=GOOD):
    return Behaviour(kind="ok", text=text)


def B(kind, **kw):
    return Behaviour(kind=kind, **kw)


class FakeLLM(ScriptedModel):
    def __init__(self, script=None):
        super().__init__()
        self.script = list(script or [ok()])
        self.listen()

    def next_behaviour(self) -> Behaviour:
        return self.next_of(self.script)

    def on_post(self, h) -> None:
        body = h.read_json()
        self.keep({"path": h.path, "headers": {k.lower(): v for k, v in h.headers.items()}, "body": body})
        b = self.next_behaviour()
        kind = b["kind"]
        if kind == "status":
            headers = {"Retry-After": str(b["retry_after"])} if b.get("retry_after") is not None else {}
            return h.send_json(b["code"], {"error": {"message": b.get("message", "scripted failure"),
                                                     "type": "server_error"}}, headers)
        if kind == "slow":
            time.sleep(b["seconds"])
            return self.reply(h, GOOD, body)
        if kind == "drop":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "5000")
            h.end_headers()
            h.wfile.write(b'{"choices": [{"message": {"content": "The user')
            h.wfile.flush()
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        text = {"ok": b.get("text", GOOD), "empty": "", "loop": " ".join(["The user asked about CI."] * 60),
                "garbage": _GARBAGE,
                "inflation": "Full record of the conversation:\n" + _last_user(body) + "\nEnd of record.",
                "reasoning_only": "", "think_then_ok": "<think>Let me plan the summary first.</think>\n" + GOOD,
                "refusal": "", "cut_off": GOOD[:60]}.get(kind)
        if text is None:
            return h.send_json(500, {"error": {"message": f"unknown scripted behaviour {kind}"}})
        return self.reply(h, text, body, kind)

    @staticmethod
    def reply(h, text, body, kind="ok"):
        model = (body or {}).get("model")
        if h.path.endswith("/v1/messages"):
            content = []
            if kind == "reasoning_only":
                content.append({"type": "thinking", "thinking": "I should summarize... " * 20, "signature": "x"})
            if text:
                content.append({"type": "text", "text": text})
            stop = {"cut_off": "max_tokens", "refusal": "refusal"}.get(kind, "end_turn")
            return h.send_json(200, anthropic.message(content, model, {"input_tokens": 10, "output_tokens": 10}, stop))
        msg = {"role": "assistant", "content": text}
        if kind == "reasoning_only":
            msg["content"] = None
            msg["reasoning_content"] = "I should summarize the conversation... " * 20
        if kind == "refusal":
            msg["content"] = None
            msg["refusal"] = "I can't help with that."
        return h.send_json(200, openai_chat.completion(msg, model, "length" if kind == "cut_off" else "stop"))
