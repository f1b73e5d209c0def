"""A scripted model by hand: `python3 tests/modelkit PROTOCOL [--summaries FILE] [--record FILE] [--port N]
[--tokens N]` prints `listening <port> ...` and serves until interrupted."""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from modelkit import anthropic, gemini, openai_chat, responses  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="modelkit")
    ap.add_argument("protocol", choices=("openai", "opencode", "anthropic", "responses", "gemini"))
    ap.add_argument("--summaries", help="a JSON list of the summaries to answer compaction requests with")
    ap.add_argument("--record", help="append every request (JSON lines) here")
    ap.add_argument("--port", type=int, default=0, help="(openai, responses) the port; 0: any free one")
    ap.add_argument("--tokens", type=int, default=None, help="the prompt tokens to report")
    args = ap.parse_args(argv)
    summaries = json.load(open(args.summaries, encoding="utf-8")) if args.summaries else None
    tokens = {} if args.tokens is None else {
        "openai": {"prompt_tokens": args.tokens}, "opencode": {"main_prompt_tokens": args.tokens},
        "anthropic": {"input_tokens": args.tokens}, "responses": {"input_tokens": args.tokens},
        "gemini": {"prompt_tokens": args.tokens}}[args.protocol]
    port = {"port": args.port} if args.protocol in ("openai", "responses") else {}
    server = {"openai": openai_chat.ScriptedOpenAI, "opencode": openai_chat.ScriptedOpencode,
              "anthropic": anthropic.ScriptedAnthropic, "responses": responses.ScriptedResponses,
              "gemini": gemini.ScriptedGemini}[args.protocol](summaries, record=args.record, **tokens, **port)
    with server:
        print("listening", *(server.port_of(r) for r in server.servers), flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
