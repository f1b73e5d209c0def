"""The one shape every store yields: a summary record."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class SummaryRecord:
    """One stored summary and what is known about what it replaced.

    id:            the store's own id (node id, summary_id, entry id, record id)
    content:       the summary text as stored
    source:        which store it came from (e.g. "memory-dag-compactor", "file:x.yaml")
    input_text:    the text it summarizes, when the store has it
    input_tokens:  the size of that text in tokens, when only the size is known
    previous:      the summary it replaced (a record's own "previous" field)
    stale_scope:   records sharing a scope are compared with each other for staleness
                   (one DAG, one conversation); None compares only with `previous`
    token_counter: how to count the summary's tokens so they compare with input_tokens:
                   "guard" (tokens.estimate_tokens) or "lcm" (lossless-claw's own estimate)
    context_before, context_after: the agent's own measure of its whole context just before
                   and just after the compaction (OpenClaw's tokensBefore/tokensAfter, Claude
                   Code's preTokens/postTokens), when it keeps one: a compaction that did not
                   shrink the context failed whatever its text; and one that is a small
                   fraction of what the agent said its context held did not grow it, whatever
                   the visible text's length (detectors/inflation.py)
    context_source: which numbers those are, for the reasons ("Claude Code's preTokens/postTokens")
    answer:        what the compaction model itself answered, when the agent keeps that apart from
                   what it stored (Codex records its compaction call's output item): a blank
                   answer under stored text means the agent put something else in its place
    contract:      what the request demanded of the answer (contract.Contract: sections, a
                   <summary> block, what an audit checks), when the summary is an answer to a
                   known request (the proxy, the chain); None for a stored summary
    new:           never counted before (ledger.py decides; set by the check)
    key:           its identity across checks (Source.count_key), set by the check
    own_answer:    the guard's own L3 answer as the agent stored it (own_answers.py; set by the
                   check, or a hook): its L3 note is the guard's, not a fallback's marker
    meta:          store facts: fallback (written with no model), session, timestamp, tokens_before...
    """

    id: str
    content: str
    source: str = "file"
    input_text: Optional[str] = None
    input_tokens: Optional[int] = None
    previous: Optional[str] = None
    stale_scope: Optional[str] = None
    token_counter: str = "guard"
    context_before: Optional[int] = None
    context_after: Optional[int] = None
    context_source: str = ""
    answer: Optional[str] = None
    contract: Optional[object] = None
    new: bool = True
    key: Optional[str] = None
    own_answer: bool = False
    meta: dict = field(default_factory=dict)
