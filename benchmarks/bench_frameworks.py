"""What the framework integrations cost: their import beyond the framework's own, and the check's
time beside a compaction's with the project's local model.

    python3 benchmarks/bench_frameworks.py            # both, printed
    python3 benchmarks/bench_frameworks.py --write    # also benchmarks/results/frameworks.json

Import: in a fresh process, the framework's module a user imports anyway (LangChain's
summarization middleware, pydantic_ai with its ProcessHistory, ADK's apps), then the guard's
integration, timed alone: what importing the integration adds. Median of `--runs` processes.

Check: the local model (SmolLM2-135M through xllamacpp, compaction_guard.llm.LocalSummarizer, real
HTTP on 127.0.0.1) answers the chain's L1 request for a 5-turn working conversation; the check of
that answer (compaction_guard.api.check_summary, warm) is timed beside the model's call, each the
median of `--runs`. The first check in a process also loads the detectors' data (fastText's model,
the word lists): reported apart, once per process.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

FRAMEWORKS = {
    "langchain": ("import langchain.agents.middleware.summarization, langchain_core.runnables",
                  "import compaction_guard.integrations.langchain"),
    "pydantic-ai": ("import pydantic_ai, pydantic_ai.capabilities, pydantic_ai.direct",
                    "import compaction_guard.integrations.pydantic_ai"),
    "google-adk": ("import google.adk.apps, google.adk.apps.llm_event_summarizer",
                   "import compaction_guard.integrations.google_adk"),
}


def import_cost(runs: int) -> dict:
    out = {}
    for name, (framework, ours) in FRAMEWORKS.items():
        code = (f"import time; t0 = time.perf_counter(); {framework}; t1 = time.perf_counter(); {ours}; "
                "t2 = time.perf_counter(); print(t1 - t0, t2 - t1)")
        fw, us = [], []
        for _ in range(runs):
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                               env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
            a, b = map(float, p.stdout.split())
            fw.append(a)
            us.append(b)
        out[name] = {"framework_ms": round(statistics.median(fw) * 1000, 1),
                     "integration_ms": round(statistics.median(us) * 1000, 2)}
    return out


def check_cost(runs: int) -> dict:
    from compaction_guard.api import check_summary, render_history
    from compaction_guard.chain import level_requests
    from compaction_guard.llm import LocalSummarizer
    from compaction_guard.settings import DEFAULT
    from frameworks_kit import TURNS
    history = [t for turn in TURNS for t in (("user", turn), ("assistant", "Noted. I will keep that in mind."))]
    text = render_history(history)
    t0 = time.perf_counter()
    check_summary("warm-up: the deploy of v2.3.1 passed", history)
    first = time.perf_counter() - t0
    local = LocalSummarizer(DEFAULT, timeout=300)
    try:
        request = level_requests(len(text) // 4, DEFAULT)[0]
        local.summarize(text, request)             # the server starts and loads the model: not counted
        model, check, answers = [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            try:
                reply = local.summarize(text, request)
                answer = getattr(reply, "text", reply)
            except Exception as exc:               # noqa: BLE001 - a failed level is a compaction's time too
                answer = str(exc)
            model.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            verdict = check_summary(answer, history)
            check.append(time.perf_counter() - t0)
            answers.append(verdict.failures)
    finally:
        local.close()
    m, c = statistics.median(model), statistics.median(check)
    return {"history_tokens": len(text) // 4, "model_call_ms": round(m * 1000, 1), "check_ms": round(c * 1000, 2),
            "check_share": round(c / (m + c), 4), "first_check_in_process_ms": round(first * 1000, 1),
            "verdicts": [list(v) for v in answers], "runs": runs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    doc = {"imports": import_cost(args.runs), "check": check_cost(max(3, args.runs // 2))}
    for name, r in doc["imports"].items():
        print(f"{name:<12} framework import {r['framework_ms']:>8.1f} ms; the integration adds {r['integration_ms']:.2f} ms")
    c = doc["check"]
    print(f"local model L1 call {c['model_call_ms']:.0f} ms; the check {c['check_ms']:.1f} ms "
          f"({c['check_share']:.1%} of the compaction); first check in a process {c['first_check_in_process_ms']:.0f} ms")
    if args.write:
        (ROOT / "benchmarks" / "results" / "frameworks.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
