"""What a client asked: its body read with every field of the type it must have (400 in the
request's protocol otherwise), and what a compaction request asks to be summarized (`Request`:
the history, the summary it replaces, the instructions, the contract), read by the agent that
sends it (agents/<name>/requests.py) or, failing that, as every non-system message's text."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Optional

from ..contract import Contract, of_request
from ..tokens import estimate_tokens


class BadRequest(ValueError):
    """A request the guard refuses (400, in the request's own protocol)."""


# ----------------------------------------------------------------- requests checked
_WHOLE_FIELDS = ("max_tokens", "max_completion_tokens", "top_k", "n", "seed")
_NUMBER_FIELDS = ("temperature", "top_p", "frequency_penalty", "presence_penalty", "repeat_penalty")
_MAX_TOKENS_LIMIT = 10_000_000


def _no_constant(name: str):
    raise BadRequest(f"{name} is not a JSON number (NaN and Infinity are not JSON)")


def parse_body(raw: bytes, settings) -> dict:
    """The request's JSON, every field of the type it must have: refused (BadRequest) when
    it is not UTF-8 or not JSON, nests deeper than serve_max_json_depth, holds a number that
    is not finite (`1e400`, `NaN`) or a string that is not Unicode (a lone surrogate such as
    `\\ud800`, valid JSON that no encoder can send on), or when a field the guard reads or
    forwards is of the wrong type (`max_tokens: "abc"`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not UTF-8") from None
    try:
        body = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequest(f"the request's JSON nests deeper than {settings.serve_max_json_depth} levels") from None
    except ValueError as exc:
        if isinstance(exc, BadRequest):
            raise
        raise BadRequest("the request body is not JSON") from None
    _walk(body, settings.serve_max_json_depth)
    if not isinstance(body, dict):
        raise BadRequest("the request body is not a JSON object")
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        raise BadRequest("the request has no messages list")
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise BadRequest(f"messages[{i}] is not an object")
        if not isinstance(m.get("role"), str):
            raise BadRequest(f"messages[{i}].role is not a string")
        c = m.get("content")
        if not (c is None or isinstance(c, str) or (isinstance(c, list) and all(isinstance(x, dict) for x in c))):
            raise BadRequest(f"messages[{i}].content is neither a string nor a list of parts")
    if body.get("model") is not None and not isinstance(body["model"], str):
        raise BadRequest("model is not a string")
    sys_ = body.get("system")
    if not (sys_ is None or isinstance(sys_, str) or (isinstance(sys_, list) and all(isinstance(x, dict) for x in sys_))):
        raise BadRequest("system is neither a string nor a list of blocks")
    for k in _WHOLE_FIELDS:
        v = body.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _MAX_TOKENS_LIMIT
                              or (k in ("max_tokens", "max_completion_tokens") and v < 1)):
            raise BadRequest(f"{k} must be a whole number from {1 if k.startswith('max') else 0} to "
                             f"{_MAX_TOKENS_LIMIT}")
    for k in _NUMBER_FIELDS:
        v = body.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise BadRequest(f"{k} must be a number")
    if body.get("stream") is not None and not isinstance(body["stream"], bool):
        raise BadRequest("stream must be true or false")
    for k in ("stop", "stop_sequences"):
        v = body.get(k)
        if not (v is None or isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))):
            raise BadRequest(f"{k} must be a string or a list of strings")
    for k in ("stream_options", "thinking", "metadata"):
        if body.get(k) is not None and not isinstance(body[k], dict):
            raise BadRequest(f"{k} must be an object")
    return body


def _walk(value, max_depth: int) -> None:
    """Depth, finite numbers, and Unicode strings, everywhere in the value (iteratively)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > max_depth:
                raise BadRequest(f"the request's JSON nests deeper than {max_depth} levels")
            if isinstance(v, dict):
                for k in v:
                    _unicode(k)
                v = v.values()
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, str):
            _unicode(v)
        elif isinstance(v, float) and not math.isfinite(v):
            raise BadRequest("a number in the request is not finite (1e400 and the like cannot be sent on)")


def _unicode(s: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("a string in the request is not valid Unicode (a lone surrogate such as \\ud800)") from None


# ----------------------------------------------------------------- the two protocols
def _text_of(content) -> str:
    """A message's text: a string, or content parts/blocks of type text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


# a conversation fenced in the request (OpenClaw's shape): what is cut to fit a small upstream context
_CONVERSATION_RE = re.compile(r"<conversation>\s*(.*?)\s*</conversation>", re.S)


@dataclass
class Request:
    """A compaction request read: `history` (the conversation itself, fenced parts only when
    the client fences them), `previous` (the summary being replaced), `instructions` (what
    the prompt asks, the history taken out), `contract` (what the answer must be, see
    contract.py), and `text`, what the checks read as the input: the history and the previous
    summary."""
    history: str
    previous: Optional[str]
    instructions: str
    contract: Contract
    rejected: Optional[str] = None    # the agent's audit rejected the previous answer: its reasons
    # the whole context the request carries (system prompt, tools, messages), where the history
    # alone is not it: what a summary must be smaller than (the relay's agents count it so)
    context_tokens: Optional[int] = None
    context_source: str = ""
    # an answer the request's prompt itself accepts when nothing better comes (RequestShape.fallback)
    fallback: Optional[str] = None

    @property
    def text(self) -> str:
        prev = f"<previous-summary>\n{self.previous}\n</previous-summary>" if self.previous else ""
        return "\n\n".join(p for p in (self.history, prev) if p)

    @property
    def plain(self) -> str:
        """The previous summary and the history as plain text (what an unstructured L3 cuts)."""
        return "\n\n".join(p for p in (self.previous, self.history) if p)


def prepare(raw: bytes, proto: str, settings) -> tuple:
    """(body, request, input_tokens): parse_body, read_request and the history's token
    estimate in one call, which a worker process makes for a large body (json and the
    regexes over megabytes hold the interpreter lock while they run)."""
    body = parse_body(raw, settings)
    request = read_request(proto, body)
    return body, request, estimate_tokens(request.text)


def rough_size(body: dict) -> int:
    """About how many characters the body's messages hold (their string contents)."""
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    return sum(len(m["content"]) if isinstance(m.get("content"), str) else len(str(m.get("content")))
               for m in msgs if isinstance(m, dict))


def read_request(proto: str, body: dict) -> Request:
    """What the request asks to be summarized: every non-system message's text, the last user
    message taken for the instructions; unless an agent recognizes the request as its own
    (agents/<name>/requests.py: OpenClaw fences the history in `<conversation>`, so its English
    instructions are not taken for history, their language or their size, and hands over the
    summary it replaces)."""
    from ..agents import every
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    parts = [_text_of(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") != "system"]
    text = "\n\n".join(p for p in parts if p)
    last = next((_text_of(m.get("content")) for m in reversed(msgs) if isinstance(m, dict)
                 and m.get("role") == "user"), "")
    for agent in sorted(every(), key=lambda a: a.request_order):
        shape = agent.read_request(text, last)
        if shape is not None:
            return Request(shape.history, shape.previous, shape.instructions,
                           of_request(shape.history, shape.instructions), shape.rejected)
    return Request(text, None, last, of_request(text, last), None)


def conversation(proto: str, body: dict) -> str:
    """The text the checks read as a request's input (Request.text)."""
    return read_request(proto, body).text


def _system_of(proto: str, body: dict) -> str:
    if proto == "anthropic":
        return _text_of(body.get("system"))
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    return "\n\n".join(_text_of(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") == "system")


def translate(proto: str, body: dict, to: str) -> dict:
    """The client's request in the upstream's protocol (text content; other fields that
    mean the same thing kept)."""
    if proto == to:
        return dict(body)
    system = _system_of(proto, body)
    msgs = [{"role": m.get("role") if m.get("role") in ("user", "assistant") else "user",
             "content": _text_of(m.get("content"))}
            for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") != "system"]
    out = {k: body[k] for k in ("model", "temperature", "top_p", "stop") if k in body}
    if to == "anthropic":
        out["max_tokens"] = body.get("max_tokens") or body.get("max_completion_tokens") or 1024
        if "stop" in out:
            out["stop_sequences"] = out.pop("stop") if isinstance(out["stop"], list) else [out.pop("stop")]
        if system:
            out["system"] = system
        out["messages"] = msgs
    else:
        out["max_tokens"] = body.get("max_tokens") or 1024
        if "stop_sequences" in body:
            out["stop"] = body["stop_sequences"]
        out["messages"] = ([{"role": "system", "content": system}] if system else []) + msgs
    return out


def _add_instruction(proto: str, body: dict, text: str) -> dict:
    """The client's prompt kept, an instruction added to its system prompt."""
    b = dict(body)
    if proto == "anthropic":
        sys_ = b.get("system")
        if isinstance(sys_, list):
            b["system"] = list(sys_) + [{"type": "text", "text": text}]
        else:
            b["system"] = f"{sys_}\n\n{text}" if sys_ else text
    else:
        msgs = list(b.get("messages") or [])
        if msgs and isinstance(msgs[0], dict) and msgs[0].get("role") == "system":
            msgs[0] = dict(msgs[0], content=f"{_text_of(msgs[0].get('content'))}\n\n{text}")
        else:
            msgs.insert(0, {"role": "system", "content": text})
        b["messages"] = msgs
    return b

