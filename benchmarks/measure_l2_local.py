"""Does the failure-aware L2 loop less? Measured on the real local model.

    python3 benchmarks/measure_l2_local.py          # 40 histories
    python3 benchmarks/measure_l2_local.py --n 10

For each history of tests/corpus/real/histories.jsonl (18 languages, 5 styles), the
chain's L2 request is sent to SmolLM2-135M-Instruct (xllamacpp on 127.0.0.1, the
guard's own LocalSummarizer payload) twice, in the same run:
- cold: L2 as it was, temperature 0.1 and no penalty;
- after a loop: what chain.adjust_l2 asks after L1 looped (L1's temperature 0.3,
  frequency_penalty 0.8, presence_penalty 0.4, repeat_penalty 1.3).
Loops are labelled by tests/corpus/real/label_model.py's rule (written before the
detectors ran on model output), not by the guard; "stopped cleanly" is a reply that
ended by itself (finish_reason stop) and is not a loop; "valid" is the guard's verdict.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "corpus" / "real"))

from compaction_guard import validate  # noqa: E402
from compaction_guard.chain import adjust_l2, level_requests  # noqa: E402
from compaction_guard.httpjson import post_json  # noqa: E402
from compaction_guard.llm import LocalSummarizer  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402
from compaction_guard.tokens import estimate_tokens  # noqa: E402
from label_model import label  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--max-tokens", type=int, default=512,
                    help="room for a loop to show (the chain's own L2 cap cuts most replies first)")
    args = ap.parse_args()
    hist = [json.loads(ln) for ln in open(ROOT / "tests" / "corpus" / "real" / "histories.jsonl", encoding="utf-8")]
    hist = hist[:: max(1, len(hist) // args.n)][:args.n]       # spread over languages and styles
    local = LocalSummarizer(DEFAULT, timeout=300)
    local.start()
    counts = {"cold": [0, 0, 0, 0], "after a loop": [0, 0, 0, 0]}     # looped, cut off, stopped cleanly, valid
    try:
        for h in hist:
            base = level_requests(estimate_tokens(h["text"]), DEFAULT)[1]
            base = dataclasses.replace(base, max_tokens=args.max_tokens)
            configs = {"cold": dataclasses.replace(base, temperature=0.1, penalties=False),
                       "after a loop": dataclasses.replace(adjust_l2(base, ["repetition"], DEFAULT)[0],
                                                           max_tokens=args.max_tokens)}
            for name, req in configs.items():
                text, _ = local._fit(h["text"], req)
                data = post_json(f"{local.base_url}/chat/completions", local.payload(text, req), {}, 300)
                choice = data["choices"][0]
                out = choice["message"].get("content") or ""
                finish = choice.get("finish_reason")
                lab = label({"id": h["id"], "lang": h["lang"], "style": h["style"], "output": out,
                             "finish_reason": finish, "input_tokens": 1, "output_tokens": 0}, h["text"])["labels"]
                c = counts[name]
                c[0] += lab["repetition"] is True
                c[1] += finish == "length"
                c[2] += finish == "stop" and lab["repetition"] is not True
                c[3] += finish == "stop" and validate(out, input=h["text"]).valid
    finally:
        local.close()
    n = len(hist)
    print(f"{n} histories, SmolLM2-135M-Instruct, the chain's L2 prompt and target, max_tokens {args.max_tokens}")
    print(f"{'L2':<14}{'looped':>10}{'cut off':>10}{'stopped cleanly':>17}{'valid (guard)':>15}")
    for name, (loop, cut, clean, valid) in counts.items():
        print(f"{name:<14}{loop:>6}/{n:<3}{cut:>6}/{n:<3}{clean:>13}/{n:<3}{valid:>11}/{n:<3}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
