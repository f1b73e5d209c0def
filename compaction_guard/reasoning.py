"""Reasoning blocks in model output: found and stripped.

Shared by the LLM client (llm.py strips a closed block from a reply) and the empty
detector (reasoning with no summary after it is an empty summary), so it lives below
both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

# ---------------------------------------------------------------------------
# Reasoning blocks
# ---------------------------------------------------------------------------
# <think>...</think> (DeepSeek-R1, Qwen3, vLLM without a reasoning parser),
# <thinking>, <reasoning>, Kimi's ◁think▷...◁/think▷, and gpt-oss's harmony
# analysis channel. A closed block is stripped; an unclosed one runs to the end.
_OPEN_TAGS = r"<think>|<thinking>|<reasoning>|◁think▷|<\|channel\|>analysis(?:<\|message\|>)?"
_CLOSE_TAGS = r"</think>|</thinking>|</reasoning>|◁/think▷|<\|end\|>"
REASONING_BLOCK_RE = re.compile(rf"(?:{_OPEN_TAGS})(.*?)(?:{_CLOSE_TAGS})", re.S | re.I)
REASONING_OPEN_RE = re.compile(rf"(?:{_OPEN_TAGS})", re.I)
# A stray closing tag with no opening one: vLLM's reasoning parsers drop the
# opening tag, so everything before the close is reasoning.
REASONING_STRAY_CLOSE_RE = re.compile(rf"^(.*?)(?:{_CLOSE_TAGS})", re.S | re.I)
# Plain-text reasoning headers at the very start (Qwen3.x "Thinking Process:"), on a
# line of their own, or (the named process headers only, with a colon) followed by
# the reasoning on the same line: "Thinking Process: the user wants a summary; ...".
THINKING_HEADER_RE = re.compile(
    r"\A\s*(?:\*\*|#+\s*)?(?:(?:thinking process|thinking|thought process|reasoning|"
    r"internal reasoning|chain of thought)(?:\*\*)?\s*:?(?:\*\*)?\s*\n|"
    r"(?:thinking process|thought process|chain of thought)(?:\*\*)?\s*:)",
    re.I,
)
# Where an answer starts after plain-text reasoning.
ANSWER_START_RE = re.compile(
    r"^\s*(?:#+\s*|\*\*)?(?:final answer|final summary|summary|answer|output|"
    r"zusammenfassung|résumé|resumen|摘要|总结|要約|요약|итог|резюме)\b[^\n]*$",
    re.I | re.M,
)


@dataclass
class Reasoning:
    """What strip_reasoning found."""

    text: str          # the text with reasoning removed
    kind: Optional[str]  # None, "closed", "unclosed", "stray-close", "header"
    reasoning_chars: int


_ANY_TAG_RE = re.compile(rf"{_OPEN_TAGS}|{_CLOSE_TAGS}", re.I)
# Every tag above opens with "◁", or with "<" then "t", "r", "|" or "/" (no other character
# matches those under re.I): a text holding none of these pairs holds no tag. Looked for with
# a pattern that starts with a literal (the engine skips from one "<" to the next in C), where
# the case-blind pattern reads every character and six substring searches read the text six times
_TAG_START_RE = re.compile(r"<[tTrR|/]")


def _may_hold_tag(text: str) -> bool:
    return "◁" in text or ("<" in text and _TAG_START_RE.search(text) is not None)


def strip_reasoning(text: str) -> Reasoning:
    """Remove reasoning blocks; report what was removed."""
    if (not _may_hold_tag(text) or not _ANY_TAG_RE.search(text)) and not THINKING_HEADER_RE.match(text):
        return Reasoning(text, None, 0)
    removed = 0
    kind = None
    out, n = REASONING_BLOCK_RE.subn("", text)
    if n:
        kind = "closed"
        removed += len(text) - len(out)
    m = REASONING_OPEN_RE.search(out)
    if m:
        kind = "unclosed"
        removed += len(out) - m.start()
        out = out[: m.start()]
    else:
        m = REASONING_STRAY_CLOSE_RE.match(out)
        if m and kind is None:
            kind = "stray-close"
            removed += m.end()
            out = out[m.end():]
    if kind is None and THINKING_HEADER_RE.match(out):
        answer = ANSWER_START_RE.search(out)
        # "Summary" inside the reasoning's own numbered steps is not an answer:
        # take the last answer heading, and only if text follows it.
        last = None
        for last in ANSWER_START_RE.finditer(out):
            pass
        if answer and last and out[last.end():].strip():
            kind = "header"
            removed += last.start()
            out = out[last.start():]
        else:
            kind = "header"
            removed += len(out)
            out = ""
    return Reasoning(out, kind, removed)


