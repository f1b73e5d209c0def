"""repetition: degenerate loops, not the incidental repeats of good summaries.

A model that loops writes the same unit back to back until max_tokens: a sentence,
a line, a block of lines, a paragraph, a word or a CJK phrase. Good summaries repeat
too, but not back to back: bold bullet prefixes, table cells, one path mentioned
often. Retry logs do repeat a line back to back, a few times: lines that look like
logs, code or tables need `structured_loop_repeats` repeats.

Units are compared at three grains (lines, sentences, words/CJK characters). For
a grain and a period p, `_tandem_runs` finds where unit[i] == unit[i+p] holds for a
stretch; it works on a byte mask with one C-level regex, so cost is linear.
"""
from __future__ import annotations

import operator
import re
from collections import Counter

from ..findings import Finding
from ..tokens import CJK_CLASS, normalize_ws

_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_WORD_RE = re.compile(f"[{CJK_CLASS}]|[^\\s{CJK_CLASS}]+")
_CJK_RE = re.compile(f"[{CJK_CLASS}]")
_ALNUM_RE = re.compile(r"[^\W_]")
# Lines that legitimately repeat: log lines, table rows, code.
_LOG_LINE_RE = re.compile(
    r"^\s*(?:[-*>]\s*)?(?:\d{4}-\d\d-\d\d|\d\d:\d\d|\[[^\]]{1,40}\]|"
    r"(?:error|err!?|warn(?:ing)?|info|debug|trace|fatal|npm err!|e\d{3,}|attempt|retry|retrying|try)\b|"
    r"[\w.-]+\.(?:py|js|ts|go|rs|java|c|h|sh):\d+)",
    re.I,
)
_TABLE_LINE_RE = re.compile(r"^\s*\|")
_FENCE_RE = re.compile(r"^\s*(?:```|~~~)")


def _tandem_runs(units: list, p: int, min_repeats: int):
    """Yield (start, repeats) of stretches where a p-unit block repeats back to back."""
    if len(units) < p * min_repeats:
        return
    mask = bytes(map(operator.eq, units, units[p:]))
    need = (min_repeats - 1) * p
    for m in re.finditer(b"\x01{%d,}" % need, mask):
        length = m.end() - m.start()
        yield m.start(), (length + p) // p


def _unit_size(text: str) -> int:
    """Characters, a CJK character counting two (it carries more)."""
    return len(text) + (len(_CJK_RE.findall(text)) if not text.isascii() else 0)


def _prose_like(line: str) -> bool:
    return not _LOG_LINE_RE.match(line) and not _TABLE_LINE_RE.match(line) and len(_ALNUM_RE.findall(line)) >= 8


def _lines(content: str):
    """Non-blank lines, whitespace-normalized, each tagged structured or not."""
    out, structured = [], []
    in_code = False
    for raw in content.splitlines():
        if _FENCE_RE.match(raw):
            in_code = not in_code
            continue
        line = normalize_ws(raw)
        if not line:
            continue
        out.append(line)
        structured.append(in_code or not _prose_like(line))
    return out, structured


def _best(findings: list) -> list:
    return findings[:1]


def detect(content: str, settings) -> list:
    if len(content) < 40:
        return []
    minlen = settings.repetition_min_length
    k_prose = settings.repetition_threshold
    k_struct = settings.structured_loop_repeats
    found = []
    warnings = []

    # 1. Lines and blocks of lines (paragraphs, list blocks, role labels).
    lines, structured = _lines(content)
    for p in range(1, settings.max_period_lines + 1):
        for start, k in _tandem_runs(lines, p, 2):
            block = lines[start:start + p]
            size = sum(_unit_size(x) for x in block)
            is_struct = all(structured[start:start + p])
            has_words = any(_ALNUM_RE.search(x) for x in block)
            if not has_words:
                continue
            if k >= k_struct or (k >= k_prose and not is_struct and size >= minlen):
                unit = "line" if p == 1 else f"block of {p} lines"
                found.append(Finding("repetition", f"a {unit} repeated {k} times back to back ({block[0][:50]!r}): "
                                     "the summarizer looped; retry at a lower temperature or a smaller max_tokens",
                                     figures={"grain": "lines", "period": p, "repeats": k, "unit_chars": size}))
            elif k == 2 and not is_struct and size >= 200:
                warnings.append(Finding("repeated_block", f"a {size}-char block appears twice back to back", failure=False))
        if found:
            return _best(found)

    # 2. Sentences inside paragraphs (a loop that never breaks the line).
    prose = "\n".join(x for x, s in zip(lines, structured) if not s)
    sentences = [normalize_ws(s) for s in _SENTENCE_SPLIT_RE.split(prose) if s.strip()]
    for p in range(1, settings.max_period_sentences + 1):
        for start, k in _tandem_runs(sentences, p, k_prose):
            block = sentences[start:start + p]
            size = sum(_unit_size(x) for x in block)
            if size >= minlen:
                found.append(Finding("repetition", f"a sentence repeated {k} times back to back ({block[0][:50]!r}): "
                                     "the summarizer looped; retry at a lower temperature or a smaller max_tokens",
                                     figures={"grain": "sentences", "period": p, "repeats": k, "unit_chars": size}))
                return _best(found)

    # 3. Words and CJK characters (word loops, "User: User: ...", 的的的的).
    text_words = "\n".join(x for x in lines if not _TABLE_LINE_RE.match(x))
    words = _WORD_RE.findall(text_words)
    for p in range(1, settings.max_period_words + 1):
        for start, k in _tandem_runs(words, p, settings.word_loop_repeats):
            block = words[start:start + p]
            if not any(_ALNUM_RE.search(w) for w in block):
                continue
            span = sum(_unit_size(w) + 1 for w in block) * k
            if span >= settings.word_loop_min_chars:
                phrase = " ".join(block)
                found.append(Finding("repetition", f"{phrase[:40]!r} repeated {k} times back to back: a degenerate "
                                     "word loop; retry at a lower temperature",
                                     figures={"grain": "words", "period": p, "repeats": k, "unit_chars": span // k}))
                return _best(found)

    # Incidental: one long sentence several times, not back to back.
    long_sentences = [s for s in sentences if len(s) >= 60]
    if long_sentences:
        sent, count = Counter(long_sentences).most_common(1)[0]
        if count >= k_prose:
            warnings.append(Finding("repeated_sentence", f"one sentence appears {count} times ({sent[:40]!r})", failure=False))
    return warnings[:1]
