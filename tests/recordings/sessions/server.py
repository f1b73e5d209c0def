"""One scripted model server on 127.0.0.1 for long working sessions, speaking the four agents' APIs
(stdlib only):

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
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "proxy-authorization"}


# ------------------------------------------------------------------ each agent's compaction mark

def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for b in content:
            if isinstance(b, dict) and isinstance(b.get("text"), str):
                out.append(b["text"])
        return "\n".join(out)
    return ""


def claude_is_compaction(body: dict) -> bool:
    msgs = body.get("messages") or []
    last = _text(msgs[-1].get("content")) if msgs and isinstance(msgs[-1], dict) else ""
    low = last.lower()
    return "summary of the conversation" in low and ("<summary>" in low or "summary:" in low)


def codex_is_compaction(headers: dict) -> bool:
    raw = headers.get("x-codex-turn-metadata") or ""
    try:
        meta = json.loads(raw)
    except ValueError:
        return '"request_kind":"compaction"' in raw.replace(" ", "")
    return isinstance(meta, dict) and meta.get("request_kind") == "compaction"


def gemini_system(body: dict) -> str:
    si = body.get("systemInstruction") or (body.get("config") or {}).get("systemInstruction") or {}
    if isinstance(si, str):
        return si
    return "\n".join(p.get("text", "") for p in (si.get("parts") or []) if isinstance(p, dict))


def gemini_is_compression(body: dict) -> bool:
    s = gemini_system(body)
    return "<state_snapshot>" in s and "distilling chat history" in s


def gemini_is_verify(body: dict) -> bool:
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    return any(isinstance(p, dict) and str(p.get("text", "")).startswith("Critically evaluate the <state_snapshot>")
               for p in last.get("parts") or [])


def opencode_is_compaction(body: dict) -> bool:
    msgs = body.get("messages") or []
    if not msgs or body.get("tools"):
        return False
    last = _text(msgs[-1].get("content")) if isinstance(msgs[-1], dict) else ""
    return "<conversation>" in last and ("anchored summary" in last or "<prior-summary>" in last)


def opencode_is_title(body: dict) -> bool:
    msgs = body.get("messages") or []
    system = " ".join(_text(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") == "system")
    return "title generator" in system.lower()


def _json_for_schema(schema: dict):
    """A minimal answer for Gemini CLI's JSON helpers (next-speaker check, router, ...)."""
    out = {}
    for k, v in ((schema or {}).get("properties") or {}).items():
        t = (v or {}).get("type", "string")
        t = t.lower() if isinstance(t, str) else "string"
        if k == "next_speaker":
            out[k] = "user"
        elif (v or {}).get("enum"):
            out[k] = v["enum"][0]
        else:
            out[k] = {"string": "ok", "number": 0, "integer": 0, "boolean": False, "array": [], "object": {}}.get(t, "ok")
    return out


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

class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    block_on_close = False


class SessionServer:
    """`script`: a script.Script (turns, tool calls); `agent`: which agent's tool names to use;
    `summarize(protocol, body, conversation) -> str`: the compaction answer."""

    def __init__(self, script, agent: str, summarize, record=None, usage_scale: float = 1.0):
        self.script, self.agent, self.summarize_fn = script, agent, summarize
        self.record = record
        self.usage_scale = usage_scale
        self.requests: list = []
        self.compactions: list = []          # (protocol, answer)
        self.unmatched: list = []            # user texts the script did not know
        self.errors: list = []               # the server's own exceptions (a bug here, not the agent's)
        # Gemini CLI runs `/compress` without waiting for it (its command starts the compression and returns) and
        # sends "/compress" to the model as a prompt at once; that turn is held until the compression's second
        # (verify) call was answered, or the process could exit before the compression is stored
        self.compressed = threading.Event()
        self._lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self):
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/models"):
                    return self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}],
                                            "models": []})
                return self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS}
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._json(400, {"error": {"message": "bad json"}})
                path = self.path.split("?")[0]
                try:
                    srv._route(self, path, headers, body, len(raw))
                except (BrokenPipeError, ConnectionResetError):
                    pass
                except Exception as e:  # noqa: BLE001 - kept, and answered as a server error
                    import traceback
                    with srv._lock:
                        srv.errors.append(traceback.format_exc()[-1500:])
                    try:
                        self._json(500, {"error": {"message": f"scripted server: {e!r}"}})
                    except OSError:
                        pass

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, chunks, named: bool = False, crlf: bool = False, done: bool = False):
                sep = "\r\n\r\n" if crlf else "\n\n"
                out = []
                for c in chunks:
                    if named:
                        out.append(f"event: {c['type']}\ndata: {json.dumps(c)}{sep}")
                    else:
                        out.append(f"data: {json.dumps(c)}{sep}")
                if done:
                    out.append("data: [DONE]\n\n")
                data = "".join(out).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.handle_error = lambda request, address: None
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- lifecycle
    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, suffix: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{suffix}"

    # -- what to say
    def keep(self, protocol, path, headers, body, kind) -> None:
        item = {"protocol": protocol, "path": path, "kind": kind, "time": time.time(), "headers": headers,
                "body": body}
        with self._lock:
            self.requests.append(item)
            if self.record:
                with open(self.record, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(item, ensure_ascii=False) + "\n")

    def next_step(self, protocol: str, body: dict):
        """("call", name, args) or ("text", reply) for an ordinary turn."""
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
            return ("text", self.script.ack)
        done = sum(1 for k, _ in ev[idx + 1:] if k == "result")
        if tools and done < len(turn.tools):
            name, args = self.script.call(self.agent, turn.tools[done], tools)
            if name:
                return ("call", name, args)
        # answered turns after this one in the request mean this request is a side call: reply anyway
        return ("text", turn.reply)

    def summary(self, protocol: str, body: dict) -> str:
        text = self.summarize_fn(protocol, body, conversation_text(protocol, body))
        with self._lock:
            self.compactions.append((protocol, text))
        return text

    def usage_tokens(self, raw_len: int) -> int:
        return max(1, int(raw_len / 4 * self.usage_scale))

    # -- routing
    def _route(self, h, path, headers, body, raw_len):
        if path.endswith("/messages/count_tokens"):
            self.keep("anthropic", path, headers, body, "count")
            return h._json(200, {"input_tokens": self.usage_tokens(raw_len)})
        if path.endswith("/messages"):
            return self._anthropic(h, path, headers, body, raw_len)
        if path.endswith("/responses"):
            return self._responses(h, path, headers, body, raw_len)
        if ":countTokens" in path:
            self.keep("gemini", path, headers, body, "count")
            return h._json(200, {"totalTokens": self.usage_tokens(raw_len)})
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return self._gemini(h, path, headers, body, raw_len)
        if path.endswith("/chat/completions"):
            return self._chat(h, path, headers, body, raw_len)
        self.keep("unknown", path, headers, body, "unknown")
        return h._json(404, {"error": {"message": f"not scripted: {path}"}})

    # Anthropic Messages
    def _anthropic(self, h, path, headers, body, raw_len):
        model = body.get("model") or "claude-sonnet-4-5"
        if claude_is_compaction(body):
            kind, step = "compaction", ("text", self.summary("anthropic", body))
        else:
            kind, step = "turn", self.next_step("anthropic", body)
        self.keep("anthropic", path, headers, body, kind)
        usage = {"input_tokens": self.usage_tokens(raw_len), "output_tokens": 40,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if step[0] == "call":
            block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": step[1], "input": step[2]}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": step[1]}
            stop = "end_turn"
        msg = {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model,
               "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return h._json(200, msg)
        start = dict(msg, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
        ev = [{"type": "message_start", "message": start}]
        if block["type"] == "text":
            ev.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            t = block["text"]
            for i in range(0, len(t), 200):
                ev.append({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t[i:i + 200]}})
        else:
            ev.append({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
            ev.append({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
        ev += [{"type": "content_block_stop", "index": 0},
               {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]}},
               {"type": "message_stop"}]
        h._sse(ev, named=True)

    # OpenAI Responses (Codex)
    def _responses(self, h, path, headers, body, raw_len):
        if codex_is_compaction(headers):
            kind, step = "compaction", ("text", self.summary("responses", body))
        else:
            kind, step = "turn", self.next_step("responses", body)
        self.keep("responses", path, headers, body, kind)
        rid, mid = "resp_" + uuid.uuid4().hex[:24], "msg_" + uuid.uuid4().hex[:24]
        inp = self.usage_tokens(raw_len)
        out_tokens = max(1, len(step[1] if step[0] == "text" else "") // 4)
        usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": out_tokens,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": inp + out_tokens}
        resp = {"id": rid, "object": "response", "created_at": int(time.time()), "model": body.get("model"),
                "status": "in_progress", "output": []}
        ev = [{"type": "response.created", "response": resp}]
        if step[0] == "call":
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24], "call_id": "call_" + uuid.uuid4().hex[:24],
                    "name": step[1], "arguments": json.dumps(step[2]), "status": "completed"}
            ev.append({"type": "response.output_item.added", "output_index": 0,
                       "item": dict(item, status="in_progress", arguments="")})
        else:
            t = step[1]
            item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": t, "annotations": []}]}
            ev.append({"type": "response.output_item.added", "output_index": 0,
                       "item": dict(item, status="in_progress", content=[])})
            for i in range(0, len(t), 200):
                ev.append({"type": "response.output_text.delta", "item_id": mid, "output_index": 0,
                           "content_index": 0, "delta": t[i:i + 200]})
        ev.append({"type": "response.output_item.done", "output_index": 0, "item": item})
        ev.append({"type": "response.completed", "response": dict(resp, status="completed", output=[item], usage=usage)})
        h._sse(ev, named=True)

    # Gemini
    def _gemini(self, h, path, headers, body, raw_len):
        model = path.rsplit("/", 1)[-1].split(":")[0]
        n = self.usage_tokens(raw_len)
        usage = {"promptTokenCount": n, "candidatesTokenCount": 12, "totalTokenCount": n + 12}

        def response(parts, final=True, with_usage=True):
            cand = {"content": {"role": "model", "parts": parts}, "index": 0}
            if final:
                cand["finishReason"] = "STOP"
            out = {"candidates": [cand], "modelVersion": model, "responseId": "scripted"}
            if with_usage:
                out["usageMetadata"] = usage
            return out

        if ":streamGenerateContent" in path:
            last = [t for k, t in events_of("gemini", body) if k == "user"]
            if last and last[-1].strip().startswith("/compress"):
                self.compressed.wait(60)
                time.sleep(1.5)
            step = self.next_step("gemini", body)
            self.keep("gemini", path, headers, body, "turn")
            if step[0] == "call":
                chunks = [response([{"functionCall": {"name": step[1], "args": step[2]}}])]
            else:
                t = step[1]
                pieces = [t[i:i + 200] for i in range(0, len(t), 200)] or [""]
                chunks = [response([{"text": p}], final=i == len(pieces) - 1, with_usage=i == len(pieces) - 1)
                          for i, p in enumerate(pieces)]
            return h._sse(chunks, crlf=True)
        if gemini_is_compression(body):
            if gemini_is_verify(body):
                # the verify call: the first answer again (Gemini CLI keeps the second when not empty)
                with self._lock:
                    text = self.compactions[-1][1] if self.compactions else ""
                kind = "compaction-verify"
            else:
                self.compressed.clear()
                text = self.summary("gemini", body)
                kind = "compaction"
            self.keep("gemini", path, headers, body, kind)
            h._json(200, response([{"text": text}]))
            if kind == "compaction-verify":
                self.compressed.set()
            return
        gc = body.get("generationConfig") or {}
        schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
        self.keep("gemini", path, headers, body, "helper")
        parts = [{"text": json.dumps(_json_for_schema(schema)) if schema else self.script.ack}]
        return h._json(200, response(parts))

    # OpenAI Chat Completions (opencode)
    def _chat(self, h, path, headers, body, raw_len):
        if opencode_is_compaction(body):
            kind, step = "compaction", ("text", self.summary("chat", body))
        elif opencode_is_title(body):
            kind, step = "title", ("text", self.script.title)
        else:
            kind, step = "turn", self.next_step("chat", body)
        self.keep("chat", path, headers, body, kind)
        text = step[1] if step[0] == "text" else ""
        inp = self.usage_tokens(raw_len)
        usage = {"prompt_tokens": inp, "completion_tokens": max(1, len(text) // 4),
                 "total_tokens": inp + max(1, len(text) // 4)}
        created = int(time.time())
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text}
            finish = "stop"
            if step[0] == "call":
                msg = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                    "function": {"name": step[1], "arguments": json.dumps(step[2])}}]}
                finish = "tool_calls"
            return h._json(200, {"id": "chatcmpl-scripted", "object": "chat.completion", "created": created,
                                 "model": body.get("model"), "choices": [{"index": 0, "finish_reason": finish,
                                                                          "message": msg}], "usage": usage})
        base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": created,
                "model": body.get("model")}
        chunks = [dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}])]
        if step[0] == "call":
            chunks.append(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [{
                "index": 0, "id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                "function": {"name": step[1], "arguments": json.dumps(step[2])}}]}}]))
            finish = "tool_calls"
        else:
            for i in range(0, len(text), 64):
                chunks.append(dict(base, choices=[{"index": 0, "delta": {"content": text[i:i + 64]}}]))
            finish = "stop"
        chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
        chunks.append(dict(base, choices=[], usage=usage))
        h._sse(chunks, done=True)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()
