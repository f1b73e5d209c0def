"""The guard's port of OpenClaw's compaction audit (compaction_guard/contract.py) against OpenClaw's
own functions, taken from its installed bundle (tests/openclaw/audit.mjs), on text nobody here
wrote: Debian's package documents for the identifiers, human text in 32 languages for the ask
overlap, and every level's answer to OpenClaw's real requests."""
from __future__ import annotations

import json
import random
import subprocess

from compaction_guard import contract
from conftest import ROOT
from openclaw_real import node, package, require

REAL = ROOT / "tests" / "corpus" / "real"


def openclaw_audit(cases: list) -> list:
    where = require()
    p = subprocess.run([str(node(where)), str(ROOT / "tests" / "openclaw" / "audit.mjs"), str(package(where))],
                       input=json.dumps(cases), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _rows(name):
    return [json.loads(line) for line in (REAL / name).read_text().splitlines()]


def test_identifiers_and_ask_overlap_are_openclaws():
    docs, human = _rows("docs.jsonl"), _rows("human.jsonl")
    rng = random.Random(20261202)
    cases, mine = [], []
    for d in docs:
        text = d["text"][:3000]
        cases.append({"op": "identifiers", "text": text})
        mine.append(contract.extract_identifiers(text))
    for _ in range(800):
        a, b = rng.choice(human), rng.choice(human)
        ask, summary = a["text"][:300], (a if rng.random() < 0.5 else b)["text"][:800]
        cases.append({"op": "overlap", "summary": summary, "ask": ask})
        mine.append(contract.ask_reflected(summary, ask))
    theirs = openclaw_audit(cases)
    differ = [(c, m, t) for c, m, t in zip(cases, mine, theirs) if m != t]
    assert not differ, differ[:3]
    langs = {r["lang"] for r in human}
    assert len(langs) >= 30 and sum(1 for t in theirs if t is True) > 100 and sum(1 for t in theirs if t is False) > 100


def test_the_audit_reasons_are_openclaws():
    """The same summaries, the same contract: the same reason codes."""
    human = _rows("human.jsonl")
    rng = random.Random(5)
    heads = contract._data()["required_sections"]
    cases, mine = [], []
    for i in range(150):
        conv = "\n\n".join(f"[{'User' if j % 2 == 0 else 'Assistant'}]: {rng.choice(human)['text'][:400]}"
                           for j in range(rng.randint(2, 12)))
        instr = openclaw_audit([{"op": "instructions", "custom": "", "latest": None}])[0] if i == 0 else instr
        c = contract.of_request(conv, instr)
        parts = rng.sample(heads, rng.randint(0, 5))
        body = "\n\n".join(f"{h}\n{rng.choice(human)['text'][:200]}" for h in heads if h in parts)
        if rng.random() < 0.5:
            body += "\n" + " ".join(c.identifiers[:rng.randint(0, len(c.identifiers))])
        if rng.random() < 0.5 and c.latest_ask:
            body += "\n" + c.latest_ask[:120]
        cases.append({"op": "audit", "params": {"summary": body, "structuralSummary": body,
                                                "identifiers": list(c.identifiers), "latestAsk": c.latest_ask}})
        mine.append(contract.audit(body, c))
    theirs = openclaw_audit(cases)
    assert [t["reasons"] for t in theirs] == mine
    assert sum(1 for t in theirs if t["ok"]) >= 5 and sum(1 for t in theirs if not t["ok"]) >= 100
