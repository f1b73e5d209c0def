"""A scripted OpenAI-compatible model server on 127.0.0.1, as a real agent's provider.

It speaks what OpenClaw's OpenAI SDK client sends: POST /v1/chat/completions, streamed
(SSE chunks, a usage chunk when `stream_options.include_usage`, then `[DONE]`) or not,
and GET /v1/models. Compaction requests (a system prompt about summarization) get the next
summary of `summaries` (the last one repeating); every other request a short reply. An answer
that is a dict `{"status": 500, "message": ...}` is that HTTP error instead. Every
request is recorded (path and JSON body) in `requests`, and appended to `record` when
given: what the agent really sent, kept as a fixture.

    python3 tests/scripted_openai.py --port 0 --summaries summaries.json --record requests.jsonl

prints `listening <port>` and serves until killed.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_llm import ServerThread  # noqa: E402

REPLY = "Noted. I will keep that in mind."


# what the Python frameworks' summary requests say (LangChain's SummarizationMiddleware, Google ADK's
# LlmEventSummarizer, the guard's own L1 and L2 prompts, which the integrations send)
MARKS = ("Messages to summarize:", "The following is a conversation history between a user and an AI agent",
         "You compact conversation history", "Compress the conversation between the fence lines")


def is_compaction(body: dict) -> bool:
    """A compaction request: OpenClaw's summarizer system prompt ("You are a context
    summarization assistant"), a user message holding the conversation to condense, or a
    framework's summary prompt (MARKS)."""
    msgs = body.get("messages") or []
    system = " ".join(str(m.get("content")) for m in msgs if isinstance(m, dict) and m.get("role") in ("system", "developer"))
    last = str(msgs[-1].get("content")) if msgs and isinstance(msgs[-1], dict) else ""
    if "summarization assistant" in system.lower() or last.lstrip().startswith("<conversation>") \
            or "<conversation>\n" in last[:200]:
        return True
    said = " ".join(str(m.get("content")) for m in msgs if isinstance(m, dict))
    return any(mark in said for mark in MARKS)


class ScriptedOpenAI(ServerThread):
    def __init__(self, summaries=None, reply: str = REPLY, record=None, prompt_tokens: int = 0, port: int = 0,
                 when=None):
        self.summaries = list(summaries or ["## Decisions\nNone.\n\n## Open TODOs\nNone."])
        # [(text the compaction request holds, summary to answer)]: checked first, in order
        self.when = list(when or [])
        self.reply = reply
        self.record = record
        self.prompt_tokens = prompt_tokens        # usage to report (0: a rough count of the prompt)
        self.requests = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._json(400, {"error": {"message": "bad json"}})
                text, kind = server._answer(body)
                server._keep(self.path, body, kind)
                if isinstance(text, dict):          # a scripted HTTP error
                    return self._json(int(text.get("status", 500)), {"error": {
                        "message": text.get("message", "scripted failure"), "type": "server_error"}})
                prompt = server.prompt_tokens or max(1, len(raw) // 4)
                usage = {"prompt_tokens": prompt, "completion_tokens": max(1, len(text) // 4),
                         "total_tokens": prompt + max(1, len(text) // 4)}
                if not body.get("stream"):
                    return self._json(200, {"id": "chatcmpl-scripted", "object": "chat.completion",
                                            "created": int(time.time()), "model": body.get("model"),
                                            "choices": [{"index": 0, "finish_reason": "stop",
                                                         "message": {"role": "assistant", "content": text}}],
                                            "usage": usage})
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": body.get("model")}
                chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
                for i in range(0, len(text), 64):
                    chunks.append({**base, "choices": [{"index": 0, "delta": {"content": text[i:i + 64]}}]})
                chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    chunks.append({**base, "choices": [], "usage": usage})
                try:
                    for c in chunks:
                        self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except OSError:
                    pass
                self.close_connection = True

            def _json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _answer(self, body: dict) -> tuple:
        if is_compaction(body):
            sent = json.dumps(body.get("messages") or [], ensure_ascii=False)
            for needle, text in self.when:
                if needle in sent:
                    return text, "compaction"
            with self._lock:
                text = self.summaries.pop(0) if len(self.summaries) > 1 else self.summaries[0]
            return text, "compaction"
        return self.reply, "turn"

    def _keep(self, path: str, body: dict, kind: str) -> None:
        item = {"path": path, "kind": kind, "body": body}
        with self._lock:
            self.requests.append(item)
            if self.record:
                with open(self.record, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(item, ensure_ascii=False) + "\n")



def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--summaries", help="a JSON list of the summaries to answer compaction requests with")
    ap.add_argument("--record", help="append every request (JSON lines) here")
    ap.add_argument("--prompt-tokens", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    summaries = json.load(open(args.summaries, encoding="utf-8")) if args.summaries else None
    srv = ScriptedOpenAI(summaries, record=args.record, prompt_tokens=args.prompt_tokens, port=args.port)
    srv.thread.start()
    print(f"listening {srv.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
