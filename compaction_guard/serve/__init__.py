"""`compaction-guard serve`: the endpoint compaction goes through.

Two ways to stand in the compaction path:

- **a compaction model** (OpenClaw, lossless-claw, opencode send compaction, and only
  compaction, to a model of its own): every request is a compaction, answered by levels
  through the configured model;
- **a relay** in front of an agent that compacts on the endpoint of every turn (Claude Code,
  Codex, Gemini CLI):
  every request goes to the agent's upstream as it came, its answer streamed back as it comes;
  only a request the agent's own package recognizes as its compaction is held, checked and
  escalated.

The flow, one module a room:

    server.py    checks before it starts, uvicorn, shutdown  ──► app.py (routes, admission,
    requests.py  a body read and type-checked; the compaction  answers in the client's mode)
                 request's history, previous summary, contract       │
    relay.py     pass-through to the agent's upstream; its            ▼
                 compactions handed to the core               core.py (Proxy: L1 → L2 → L3,
    wire.py      the pass-through's HTTP/1.1 on asyncio's     checked, recorded in the state)
                 transports (httptools), pooled
    upstream.py  the configured model (OpenClaw's path)
    openai_chat.py, anthropic.py, responses.py, gemini.py   one wire protocol each: parse,
                 render, stream
"""
from __future__ import annotations

from .app import build_app
from .core import Outcome, Proxy
from .requests import BadRequest, conversation, parse_body, prepare, read_request, translate
from .server import check_upstream_is_not_us, serve
from .upstream import Upstream, UpstreamFailure

__all__ = ["BadRequest", "Outcome", "Proxy", "Upstream", "UpstreamFailure", "build_app", "check_upstream_is_not_us",
           "conversation", "parse_body", "prepare", "read_request", "serve", "translate"]
