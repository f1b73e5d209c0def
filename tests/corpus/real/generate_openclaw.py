"""A second real-model set, made after the detectors were fixed: the prompts agents use.

generate_model.py's outputs were read while the detectors were written. This set was
generated afterwards, to measure them on model output they were not tuned on: the same
local model (SmolLM2-135M via xllamacpp on 127.0.0.1, generate_model.Server) given new
histories (the same real sentence pools, another seed and other ids) and the two prompt
shapes compactors actually send (paraphrased here, not copied):

- `checkpoint`: OpenClaw's compaction through pi: the history fenced in
  <conversation>, then a request for a structured checkpoint with the sections
  Goal, Constraints & Preferences, Progress (Done / In Progress / Blocked), Key
  Decisions, Next Steps, Critical Context;
- `analysis-summary`: Claude Code's /compact shape: reasoning in <analysis> first,
  then the summary in <summary> with nine numbered sections.

Temperatures 0 to 1.0, max_tokens 256 to 1,024. Labelled by label_model.py's fixed
rules (openclaw_labels.jsonl) and label_language.py; evaluate.py reports it as the set
`openclaw`.

    .venv/bin/python tests/corpus/real/generate_openclaw.py [--batch 2] [--out model_openclaw.jsonl]
    .venv/bin/python tests/corpus/real/generate_openclaw.py --batch 3 --n 150 --histories 75

The second batch (--batch 2) was generated after the rules found wanting on the first were
changed, with three history shapes no set had (JSON log lines, an e-mail thread, Markdown
notes): its figures as first measured are in the commit that added it.

The third batch (--batch 3), made after the gemma set's fixes, decodes with a repetition
penalty (1.1-1.3, top_p 0.9): the setting the guard's own advice ("retry with a repetition
penalty") and loop-wary deployments use, under which loops vary more from copy to copy.

Resumable: runs already in the output file are skipped.
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from generate_model import STYLES, generate, plan, save_histories, with_penalty  # noqa: E402

PROMPTS = {
    "checkpoint": (
        "You are a context summarization assistant. Read the conversation between a user and an AI "
        "assistant and write a structured summary in the format asked for. Do not continue the "
        "conversation and do not answer questions in it: write only the summary.",
        "<conversation>\n{h}\n</conversation>\n\n"
        "The messages above are a conversation to summarize. Write a structured context checkpoint that "
        "another model will use to continue the work, in this format:\n\n"
        "## Goal\n[what the user is trying to do]\n\n"
        "## Constraints & Preferences\n- [constraints or preferences the user stated, or \"(none)\"]\n\n"
        "## Progress\n### Done\n- [x] [completed work]\n\n### In Progress\n- [ ] [current work]\n\n"
        "### Blocked\n- [what prevents progress, if anything]\n\n"
        "## Key Decisions\n- **[decision]**: [why]\n\n"
        "## Next Steps\n1. [what should happen next, in order]\n\n"
        "## Critical Context\n- [data, examples or references needed to continue, or \"(none)\"]\n\n"
        "Keep each section short. Keep exact file paths, function names and error messages."),
    "analysis-summary": (
        "You summarize a conversation so that the work can continue without it.",
        "Write a detailed summary of the conversation below. First think it through inside <analysis> "
        "tags, then write the summary inside <summary> tags with these sections: 1. Primary request and "
        "intent; 2. Key technical concepts; 3. Files and code; 4. Errors and fixes; 5. Problem solving; "
        "6. All user messages; 7. Pending tasks; 8. Current work; 9. Optional next step.\n\n{h}"),
}
TEMPERATURES = [0.0, 0.3, 0.7, 1.0]
MAX_TOKENS = [256, 256, 512, 1024]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=180)
    ap.add_argument("--histories", type=int, default=90)
    ap.add_argument("--out", default=str(HERE / "model_openclaw.jsonl"))
    ap.add_argument("--batch", type=int, default=1, help="2: another seed, ids `ocb...`, and three shapes of "
                    "history the detectors never saw (JSON log lines, an e-mail thread, Markdown notes); 3: ids "
                    "`ocbb...`, every shape, decoded with a repetition penalty (1.1-1.3) and top_p 0.9, as "
                    "deployments that fight loops run")
    args = ap.parse_args()
    styles, prefix = (STYLES, "oc") if args.batch == 1 else (["json-log", "email", "notes"], f"oc{'b' * (args.batch - 1)}")
    if args.batch >= 3:
        styles = STYLES + ["json-log", "email", "notes"]
    histories, runs = plan(random.Random(2026 if args.batch == 1 else 2026 + args.batch), args.histories, args.n,
                           styles, prefix, sorted(PROMPTS), TEMPERATURES, MAX_TOKENS, shift=2)
    if args.batch >= 3:
        with_penalty(runs, 3000 + args.batch)
    save_histories(HERE / "openclaw_histories.jsonl", histories)
    generate(runs, histories, args.out, lambda run, hist, tokens: [
        {"role": "system", "content": PROMPTS[run["prompt"]][0]},
        {"role": "user", "content": PROMPTS[run["prompt"]][1].format(h=hist)}])

if __name__ == "__main__":
    main()
