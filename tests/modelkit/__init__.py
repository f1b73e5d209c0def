"""The scripted-model kit: models on 127.0.0.1 that answer real agents, frameworks and the guard's own
client from a script, over real HTTP, in the same wire protocols `compaction-guard serve` speaks.

- base.py: the listeners, the request handler, the log of what the agent sent (no credentials kept with
  it), script items (text, tool call, HTTP error, no output), server-sent events;
- openai_chat.py (OpenClaw, opencode, lossless-claw, the Python frameworks), anthropic.py (Claude Code),
  responses.py (Codex), gemini.py (Gemini CLI): the answer whole or streamed in that protocol, each
  client's compaction mark, the scripted server;
- behaviours.py: FakeLLM, a model that misbehaves on script, for the guard's own client (L1, L2).

Standard library only: the recording recipes run it with the system `python3` in a network namespace
(they put tests/ on sys.path). By hand: `python3 tests/modelkit --help`.
"""
