"""lossless-claw as it really runs: the lcm.db the real plugin (1.0.0-beta.4, built from its source at the
pinned commit) wrote inside the real OpenClaw 2026.9.6 gateway, and the summary requests it sent
(tests/recordings/lossless-claw: recorded by record.py, FINDINGS.md says how). No binary needed.

- good: two leaves and a condensed node from its background worker, a leaf from a forced
  compaction: every one valid, with no warning (each ends with its footer, `Expand for details
  about: ...`, which is no sentence cut off);
- loop, oversized: the worker stores the reply as is, the forced path escalates to its
  `[Truncated from N tokens]` fallback; preamble: stored on both paths;
- empty (an empty reply) and empty500 (HTTP 500): both fallbacks, the worker's `[LCM fallback
  summary; ...]` and `[Truncated from N tokens]`, each larger than what it replaced."""
import json
import sqlite3
from pathlib import Path

import pytest

from compaction_guard import serve
from compaction_guard.agents.openclaw.lcm import LcmSource
from compaction_guard.check import check_record
from compaction_guard.settings import DEFAULT
from compaction_guard.structured import build

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "tests" / "recordings" / "lossless-claw" / "data"
FOOTER = "Expand for details about:"


def judged(case: str) -> list:
    src = LcmSource(REC / case / "lcm.db")
    try:
        return [(r, check_record(r, DEFAULT)) for r in src.records(None)]
    finally:
        src.close()


def rows(case: str) -> dict:
    with sqlite3.connect(f"file:{REC / case / 'lcm.db'}?mode=ro&immutable=1", uri=True) as con:
        return {sid: (kind, tokens, desc) for sid, kind, tokens, desc in con.execute(
            "SELECT summary_id, kind, token_count, descendant_token_count FROM summaries")}


def test_good_summaries_are_valid_with_no_warning_their_footer_is_no_cut_off():
    got = judged("good")
    assert len(got) == 4 and {r.meta["kind"] for r, _ in got} == {"leaf", "condensed"}
    for rec, v in got:
        assert rec.content.splitlines()[-1].startswith(FOOTER)
        assert v.valid and v.failures == [] and v.warnings == [], (rec.id, v.warnings)


def test_a_condensed_node_is_judged_against_its_source_summaries():
    (cond, v), = [(r, v) for r, v in judged("good") if r.meta["kind"] == "condensed"]
    kinds = rows("good")
    # its sources are the leaves it condensed (summary_parents read the other way round), and its
    # input is their size: lossless-claw's own descendant_token_count, not the messages below them
    assert cond.meta["sources"] and all(kinds[s][0] == "leaf" for s in cond.meta["sources"])
    assert cond.input_tokens == kinds[cond.id][2] == sum(kinds[s][1] for s in cond.meta["sources"])
    leaves = [r for r, _ in judged("good") if r.id in cond.meta["sources"]]
    assert all(leaf.content in cond.input_text for leaf in leaves)


@pytest.mark.parametrize("case, stored, fallback", [
    ("loop", ["inflation", "repetition"], ["inflation", "truncation_marker"]),
    ("oversized", ["inflation"], ["inflation", "truncation_marker"]),
    ("preamble", ["empty"], None),
    ("empty", None, ["inflation", "truncation_marker"]),
    ("empty500", None, ["inflation", "truncation_marker"]),
])
def test_every_degenerate_summary_and_every_fallback_is_a_failure(case, stored, fallback):
    got = judged(case)
    assert got and all(not v.valid for _, v in got)
    for rec, v in got:
        if "[Truncated from" in rec.content or "[LCM fallback summary;" in rec.content:
            # a fallback wrote it (lossless-claw's model column still names the summarizer), and
            # it is larger than the input it replaced: both said
            assert v.failures == fallback, (rec.id, v.failures)
            assert "larger than the" in v.reasons["inflation"]
        else:
            assert v.failures == stored, (rec.id, v.failures)
    if case.startswith("empty"):
        texts = " ".join(r.content for r, _ in got)
        assert "[LCM fallback summary; truncated for context management]" in texts and "[Truncated from" in texts


def _requests(case: str, kind: str) -> list:
    return [r for r in json.loads((REC / f"{case}-requests.json").read_text()) if r["kind"] == kind]


@pytest.mark.parametrize("case, kind", [("good", "leaf-normal"), ("good", "condensed-d1"), ("loop", "leaf-aggressive")])
def test_serve_reads_lossless_claws_requests_and_keeps_their_footer_at_every_level(case, kind):
    (req, *_) = _requests(case, kind)
    body = req["body"]
    r = serve.read_request("openai", body)
    user = body["messages"][-1]["content"]
    tag = "conversation_to_condense" if kind.startswith("condensed") else "conversation_segment"
    inner = user[user.index(f"<{tag}>") + len(tag) + 2:user.index(f"</{tag}>")].strip()
    assert r.history == inner and r.contract.footer == FOOTER and r.contract.sections == ()
    # what the scripted model answered: the good ones pass as they are, the loop fails
    answer = req["answer"]
    verdict = check_record(_serve_record(answer, r), DEFAULT)
    assert verdict.failures == ([] if case == "good" else verdict.failures) and (case == "good" or not verdict.valid)
    # without the closing line the request asked for, an answer is a format failure
    bare = "\n".join(answer.splitlines()[:-1]) if answer.splitlines()[-1].startswith(FOOTER) else answer
    assert "format" in check_record(_serve_record(bare or "x", r), DEFAULT).failures
    # L3: the segment's own lines, then the closing line lossless-claw asked for
    l3 = build(r.history, r.previous, r.contract, DEFAULT, 300)
    assert l3.splitlines()[-1].startswith(FOOTER) and "format" not in check_record(
        _serve_record(l3, r, own_l3=True), DEFAULT).failures


def _serve_record(text, r, own_l3=False):
    from compaction_guard.records import SummaryRecord
    return SummaryRecord("serve", text, "serve", input_text=r.text, previous=r.previous, contract=r.contract)
