"""Write compaction_guard/data/compaction_vocabulary.txt: the words compactors themselves write.

A summary carries information when it says something about the work. The words of the
request that asked for it (its headings, its instructions, "conversation", "summary",
"preserve") and of the texts compactors store when they have no summary ("No prior
history.", "Summary unavailable due to context limits.") say nothing about any one
conversation: a summary made only of them, of negations and of the most frequent words of
its language is information-free (detectors/empty.py, `information_left`).

The words are read from the real texts, not chosen:
- OpenClaw's (npm `openclaw`, the installed test package): the system prompt and the three
  prompts its own `compact()` sends (normal, update with a previous summary, a split turn's
  prefix), captured by running it (tests/openclaw/compact_empty.mjs, nothing asked of a
  model), its safeguard's structure instructions and fallback skeleton (tests/openclaw/
  audit.mjs), and the fallback texts its bundle writes;
- the fallback texts of OpenClaw's older releases and lossless-claw that REFERENCE.md lists;
- the turns OpenClaw writes into a session itself (its heartbeat prompt, its silent reply);
- the guard's own prompts (compaction_guard/prompts.py).
It also writes compaction_guard/data/compaction_prompts.txt: the prompts themselves (OpenClaw's and
the guard's above, and the compaction prompts Claude Code 2.1.328, Codex 0.171.0, Gemini CLI 0.61.0
and opencode 1.18.33 really sent: their recorded requests, tests/data/claude-code/ and
tests/recordings/{codex,gemini,opencode}/data/, the conversation left out), one a block: a summary
whose phrases are mostly a prompt's is the prompt sent back (detectors/empty.py, `echoed_prompt`).
Each text is cut into the guard's word units (detectors/overlap.py); a unit among the most
frequent words of a language (data/common_words.txt) or shorter than 3 bytes is left out,
as the check leaves it out anyway, and so is a word that real English text about work uses
often (WORK_WORD_MIN_SHARE: "file", "update", "version", "user") is written apart: it is
both the template's and the work's, and weighs nothing either way. A request known at run time (`serve`, the chain) adds
its own words to these.

    python3 scripts/make_compaction_vocabulary.py [OPENCLAW_INSTALL_DIR]

The install defaults to the test install (scripts/setup_openclaw.sh; GUARD_OPENCLAW).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
OUT = ROOT / "compaction_guard" / "data" / "compaction_vocabulary.txt"
PROMPTS = ROOT / "compaction_guard" / "data" / "compaction_prompts.txt"

# Fallback texts of releases and plugins the installed package does not hold (REFERENCE.md
# sections 2 and 8), with the shapes the markers detector names.
OTHER_FALLBACKS = [
    "Summary unavailable due to context limits. Older messages were truncated.",     # OpenClaw before 2026.2
    "[Truncated from 12000 tokens]", "[LCM fallback summary; truncated for context management]",
    "[Capped from 9000 tokens to ~2000]", "[Truncated for context management]",     # lossless-claw
]
_BLOCK_RE = re.compile(r"<(conversation|previous-summary|previous-compaction-summary)>.*?</\1>", re.S)


def openclaw_texts(where: Path) -> tuple:
    from openclaw_real import node, package
    pkg = package(where)
    version = json.loads((pkg / "package.json").read_text())["version"]
    hi = [{"role": "user", "content": "hi"}]
    cases = [{"messages": hi, "tokensBefore": 100, "temperature": 0, "max_tokens": 100, "seed": 1},
             {"messages": hi, "previousSummary": "PREVIOUS", "tokensBefore": 100, "temperature": 0, "max_tokens": 100,
              "seed": 1},
             {"messages": hi, "turnPrefix": hi, "tokensBefore": 100, "temperature": 0, "max_tokens": 100, "seed": 1}]
    run = subprocess.run([str(node(where)), str(ROOT / "tests/openclaw/compact_empty.mjs"), str(pkg), "-"],
                         input=json.dumps(cases), capture_output=True, text=True, timeout=120, check=True)
    texts = []
    for got in json.loads(run.stdout):
        for req in got["requests"]:
            texts += [req["system"], _BLOCK_RE.sub(" ", req["prompt"])]
        texts.append(got["summary"].replace("ok", " "))
    ops = [{"op": "instructions", "custom": None, "latest": None}, {"op": "instructions", "custom": None, "latest": "x"},
           {"op": "fallback", "previous": None}]
    run = subprocess.run([str(node(where)), str(ROOT / "tests/openclaw/audit.mjs"), str(pkg)], input=json.dumps(ops),
                         capture_output=True, text=True, timeout=120, check=True)
    texts += json.loads(run.stdout)
    bundle = "\n".join(p.read_text(encoding="utf-8") for p in sorted((pkg / "dist").glob("*.mjs"))
                       if "SUMMARY_TRUNCATED_MARKER" in p.read_text(encoding="utf-8")
                       or "DEFAULT_SUMMARY_FALLBACK" in p.read_text(encoding="utf-8"))
    for name in ("SUMMARY_TRUNCATED_MARKER", "DEFAULT_SUMMARY_FALLBACK", "OMISSION_OVERFLOW", "TURN_CONTEXT_PREFIX"):
        texts += [json.loads(m) for m in re.findall(rf'const {name} = ("(?:[^"\\]|\\.)*");', bundle)]
    texts += re.findall(r"\[(?:Partial summary|Earlier compaction context|Compaction summary)[^\]`$]*\]", bundle)
    # the turns OpenClaw writes into a session itself: its heartbeat prompt (a session whose only
    # new turn is its monitor's is summarized as that prompt) and its silent reply
    everything = "\n".join(p.read_text(encoding="utf-8") for p in sorted((pkg / "dist").glob("*.mjs")))
    for name in ("HEARTBEAT_CONTEXT_PROMPT",):
        texts += re.findall(rf'const {name} = [`"]([^`"$]*)[`"];', everything)[:1]
    texts += re.findall(r'const SILENT_REPLY_TOKEN = "([A-Z_]+)";', everything)[:1]
    return version, texts


# A word of the prompts that real English text about work uses often ("file", "update", "add",
# "version", "error", "user") is a word of the work, not only of the template: a summary using
# it may say something. Measured on the project's real English text (Debian's manual pages,
# reference pages and documents: tests/corpus/real/human.jsonl, docs.jsonl, grounding.jsonl):
# a word in at least this share of its texts is written apart (neither template nor content).
WORK_WORD_MIN_SHARE = 0.05


def work_words() -> frozenset:
    from compaction_guard.detectors.overlap import units
    real = ROOT / "tests" / "corpus" / "real"
    docs = []
    for name in ("human.jsonl", "docs.jsonl", "grounding.jsonl"):
        for line in open(real / name, encoding="utf-8"):
            r = json.loads(line)
            if r.get("lang") == "en":
                docs.append(set(units(" ".join(v for k, v in r.items() if k in ("text", "summary", "input")
                                               and isinstance(v, str)))))
    df = {}
    for d in docs:
        for u in d:
            df[u] = df.get(u, 0) + 1
    return frozenset(u for u, n in df.items() if n >= WORK_WORD_MIN_SHARE * len(docs))


def agent_texts() -> list:
    """The compaction instructions the four agents really sent (their recorded requests), without the
    conversation: Claude Code's appended to its last user message, Codex's last input item, Gemini CLI's
    system instruction and its last user text, opencode's system prompt and what follows </conversation>."""
    def text(c) -> str:
        if isinstance(c, str):
            return c
        return "\n".join(b.get("text", "") for b in c or [] if isinstance(b, dict) and isinstance(b.get("text"), str))
    out = []
    cc = json.loads((ROOT / "tests/data/claude-code/request-good.json").read_text(encoding="utf-8"))["body"]
    last = cc["messages"][-1]["content"]
    out.append(text(last[-1:] if isinstance(last, list) else last))
    cx = json.loads((ROOT / "tests/recordings/codex/data/request-good-auto.json").read_text(encoding="utf-8"))
    cx = cx[0] if isinstance(cx, list) else cx
    out.append(text(cx["body"]["input"][-1].get("content")))
    gm = json.loads((ROOT / "tests/recordings/gemini/data/request-good-long.json").read_text(encoding="utf-8"))
    gm = gm[0] if isinstance(gm, list) else gm
    out.append(text((gm["body"].get("systemInstruction") or {}).get("parts")))
    out.append(text(gm["body"]["contents"][-1].get("parts")))
    oc = json.loads((ROOT / "tests/recordings/opencode/data/request-good-long.json").read_text(encoding="utf-8"))["body"]
    out.append(text(oc["messages"][0]["content"]))
    out.append(text(oc["messages"][-1]["content"]).split("</conversation>", 1)[-1])
    return [t for t in out if t.strip()]


def guard_texts() -> list:
    from compaction_guard import prompts
    # the fence's nonce is new at every call: not a word of the prompt
    fenced = re.sub(r"(CONVERSATION) [0-9a-f]+", r"\1", prompts.user_message("", 100))
    return [prompts.L1_SYSTEM, prompts.L2_SYSTEM, fenced]


def main() -> None:
    from openclaw_real import install
    from compaction_guard.detectors.grounding import common_units, is_content
    from compaction_guard.detectors.overlap import units
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else install()
    if where is None:
        sys.exit("no OpenClaw install: run scripts/setup_openclaw.sh or give its directory")
    version, texts = openclaw_texts(where)
    # the instructions only: OpenClaw's fallback skeleton and marker texts are what a compactor stores, not
    # what it asks (a summary that is the skeleton is judged as one: detectors/empty.py)
    prompts = [t for t in texts if len(t.split()) >= 20 and "No prior history" not in t and "None captured" not in t] \
        + guard_texts() + agent_texts()
    # not the four other agents' prompts (they go to the prompts file only): their examples and
    # instructions name work ("typescript", "oauth", "src", "endpoints", "errors"), and with their words
    # here good summaries lost their content words: tests/corpus/evaluate.py, the OpenClaw set's good
    # items with a failure 2/82 -> 8/82, the model set's empty false alarms 2/561 -> 6/561 (2026-12-07)
    texts += OTHER_FALLBACKS + guard_texts()
    common = common_units()
    work = work_words()
    found = {u for t in texts for u in units(t) if isinstance(u, bytes) and is_content(u, common) and not u.isdigit()}
    words = sorted(u.decode() for u in found if u not in work)
    shared = sorted(u.decode() for u in found if u in work)
    header = (f"# The words compactors write themselves: OpenClaw {version}'s compaction prompts, structure\n"
              "# instructions and fallback texts (MIT licence, (c) OpenClaw contributors), older OpenClaw and\n"
              "# lossless-claw fallbacks (REFERENCE.md), the guard's own prompts; cut into the guard's word units,\n"
              "# the most frequent words of any language left out. Written by scripts/make_compaction_vocabulary.py.\n")
    header += ("# Lines starting with ~: words of the prompts that real English text about work uses often\n"
               "# (WORK_WORD_MIN_SHARE): neither the template's nor content, they weigh nothing either way.\n")
    OUT.write_text(header + "\n".join(words) + "\n" + "\n".join("~" + w for w in shared) + "\n", encoding="utf-8")
    print(f"{len(words)} words, {len(shared)} shared with work text, from {len(texts)} texts -> {OUT}")
    blocks = []
    for t in prompts:
        t = "\n".join(ln.rstrip() for ln in t.strip().splitlines() if ln.strip() and not ln.startswith("#@"))
        if t and t not in blocks:
            blocks.append(t)
    PROMPTS.write_text(f"# The compaction prompts compactors really send: OpenClaw {version}'s (MIT licence, (c) OpenClaw\n"
                       "# contributors), the guard's own, and those Claude Code 2.1.328, Codex 0.171.0, Gemini CLI 0.61.0 and\n"
                       "# opencode 1.18.33 sent (their recorded requests), the conversation left out; one a block, blocks\n"
                       "# parted by a line `#@`. Written by scripts/make_compaction_vocabulary.py.\n"
                       + "\n#@\n".join(blocks) + "\n", encoding="utf-8")
    print(f"{len(blocks)} prompts -> {PROMPTS}")


if __name__ == "__main__":
    main()
