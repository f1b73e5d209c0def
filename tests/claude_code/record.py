"""Record what the real Claude Code writes and sends when it compacts, as fixtures for the
tests that run without the binary (tests/test_claude_code_store.py):

    .venv/bin/python tests/claude_code/record.py

For each case (a good summary, a tool call's preamble, a summary cut off, a loop), the pinned
Claude Code (scripts/setup_claude_code.sh) runs two turns headless against the scripted
Anthropic server, then `/compact`; the session's transcript is kept as
tests/data/claude-code/<case>.jsonl and the compaction request it sent as
tests/data/claude-code/request-<case>.json.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from claude_code_real import binary, env_for, run, transcript  # noqa: E402
from modelkit.anthropic import ScriptedAnthropic, is_compaction  # noqa: E402
from test_claude_code_live import GOOD, PREAMBLE, incident_log  # noqa: E402

OUT = HERE.parent / "data" / "claude-code"
CASES = {
    "good": GOOD,
    "preamble": PREAMBLE,
    "cut-off": GOOD[:GOOD.index("2. Key")] + "2. Key Technical Concepts: gcloud edge-cloud networking sub",
    "loop": "<summary>\n" + "The user asked about the deploy ticket and I said I would check it. " * 60,
}


def main() -> int:
    b = binary()
    if b is None:
        raise SystemExit("the pinned Claude Code is not installed: run scripts/setup_claude_code.sh")
    OUT.mkdir(parents=True, exist_ok=True)
    for case, summary in CASES.items():
        tmp = Path(tempfile.mkdtemp(prefix=f"cc-{case}-"))
        cfg, work = tmp / "claude", tmp / "work"
        cfg.mkdir()
        work.mkdir()
        with ScriptedAnthropic(summaries=[summary], input_tokens=30000) as server:
            env = env_for(cfg, server.url)
            first = run(b, work, env, "Keep deploy ticket OPS-4411 and branch release/2.7 in mind. Here is the "
                        "incident log:\n" + incident_log())
            sid = first["session_id"]
            run(b, work, env, "Noted the log? Reply OK.", "--resume", sid)
            run(b, work, env, "/compact", "--resume", sid)
            asked = [r for r in server.requests if is_compaction(r["body"])]
        shutil.copy(transcript(cfg, sid), OUT / f"{case}.jsonl")
        kept = {k: v for k, v in asked[-1].items() if k not in ("key", "raw")}      # no credential, no bytes
        (OUT / f"request-{case}.json").write_text(json.dumps(kept, ensure_ascii=False, indent=1) + "\n",
                                                  encoding="utf-8")
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"{case}: {OUT / (case + '.jsonl')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
