"""transcript (warning): the summary is the conversation itself, replayed or continued.

Asked to summarize a history, a model may instead go on with it: it writes more turns in
the history's own shape (`user: ...`, `assistant: running ...`, `[10:35] ana: ...`),
copies some of its lines, or answers the last message. The reported cases (opencode
#42363: a reasoning model continuing the serialized turn instead of filling the template;
agno #9480: a compaction chained to the previous response, "continuing in the
conversation's style") and the real local model here (SmolLM2 given OpenClaw's
checkpoint prompt or Claude Code's: 10 of the 39 outputs its labels call sound) do it in
every language. What is stored is a fragment of the conversation, not an account of it.

Measured on the shape, in any language: the speakers of the history are the labels that
open at least `transcript_min_label_lines` of its lines with a turn after them (a label,
with or without a `[time]` before it, followed by `transcript_min_turn_chars` characters
on average: `name: 10m` YAML keys are not speakers). The summary is a transcript when at
least `transcript_min_turns` of its lines, `transcript_min_share` of them, open with
those labels, and at least `transcript_min_speakers` different ones take turns. A
summary quoting one exchange, or a YAML block the history also holds, is not one (none
of the hand-written or real good summaries with a history is). Fallbacks that copy the
head of the history on purpose carry a truncation marker and are not judged.

A warning: its figure (`turn_share`) tells the operator; it was not labelled in the real
sets before it was written, so it does not decide validity.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional

from ..findings import Finding
from . import markers

# A turn: an optional list mark, an optional `[time]`, a label of 1-24 characters (no
# space, colon, bracket or markup), a colon, then text.
_TURN_RE = re.compile(r"^[ \t]*(?:[-*][ \t]+)?(?:\[[^\]\n]{1,24}\][ \t]*)?([^\s:\[\]`*#|]{1,24}):[ \t]+(\S.*)$", re.M)


def _labels(text: str) -> Counter:
    return Counter(m.group(1).lower() for m in _TURN_RE.finditer(text))


def speakers(text: str, settings) -> set:
    """The labels that open at least transcript_min_label_lines of the text's lines with a
    turn of transcript_min_turn_chars characters or more on average."""
    lines, chars = Counter(), Counter()
    for m in _TURN_RE.finditer(text):
        key = m.group(1).lower()
        lines[key] += 1
        chars[key] += len(m.group(2))
    return {k for k, n in lines.items()
            if n >= settings.transcript_min_label_lines and chars[k] / n >= settings.transcript_min_turn_chars}


def detect(content: str, settings, input_text: Optional[str]) -> list:
    if not input_text:
        return []
    mine = _labels(content)
    if sum(mine.values()) < settings.transcript_min_turns or markers.find_markers(content):
        return []             # no turns of its own (most summaries): the history is not read
    theirs = speakers(input_text, settings)
    turns = {k: n for k, n in mine.items() if k in theirs}
    n_turns = sum(turns.values())
    lines = sum(1 for ln in content.splitlines() if ln.strip())
    if n_turns < settings.transcript_min_turns or len(turns) < settings.transcript_min_speakers \
            or n_turns < settings.transcript_min_share * lines:
        return []
    shown = ", ".join(f"`{k}:`" for k, _ in Counter(turns).most_common(3))
    return [Finding("transcript", f"{n_turns} of the summary's {lines} lines are turns of the conversation ({shown}): "
                    "the summarizer replayed or continued the conversation instead of summarizing it; re-run "
                    "compaction (a prompt that ends with the instruction, not with the last turn)", failure=False,
                    figures={"turns": n_turns, "lines": lines, "turn_share": round(n_turns / lines, 3),
                             "speakers": sorted(turns)})]
