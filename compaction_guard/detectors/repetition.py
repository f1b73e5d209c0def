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
from ..tokens import CJK_CLASS

_WORD_RE = re.compile(f"[{CJK_CLASS}]|[^\\s{CJK_CLASS}]+")
_CJK_RE = re.compile(f"[{CJK_CLASS}]")
_ALNUM_RE = re.compile(r"[^\W_]")
# Lines that legitimately repeat: log lines, table rows, code.
_LOG_LINE_RE = re.compile(
    r"^\s*(?:[-*>]\s*)?(?:\d{4}-\d\d-\d\d|\d\d:\d\d|\[[^\]]{1,40}\]|"
    r"(?:(?:error|err|warn(?:ing)?|info|debug|trace|fatal|attempt|retry|retrying|try|e\d{3,})\b|npm err!|"
    r"(?:tool|user|assistant|system|human|ai)\s*:)|"
    r"[\w.-]+\.(?:py|js|ts|go|rs|java|c|h|sh):\d+)",
    re.I,
)
# Words only logs write: upper-case levels, errno names, HTTP statuses, tracebacks.
_LOG_WORDS_RE = re.compile(r"\b(?:ERR!?|ERROR|WARN(?:ING)?|FATAL|DEBUG|Traceback|E[A-Z]{4,}|[45]\d\d [A-Z][a-z]+)\b")
_SENTENCES_RE = re.compile(r"[.!?]\s+[A-Z]")
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


_CHUNK_SPLIT_RE = re.compile(r"[.!?。！？\n]+")


def _may_loop(chunks: list) -> bool:
    """Cheap gate (C-level string work) before the word-level search: a chunk
    between sentence ends that occurs 3+ times, or a chunk whose first or last few
    characters occur 3+ times inside it (a loop with no full stop runs to
    max_tokens, so its tail is one of its repeats)."""
    if len(set(chunks)) < len(chunks):
        counts = Counter(c for c in chunks if len(c) >= 5)
        if counts and counts.most_common(1)[0][1] >= 3:
            return True
    return any(c.count(c[-8:]) >= 3 or c.count(c[:8]) >= 3 if c.isascii() else
               c.count(c[-4:]) >= 3 or c.count(c[:4]) >= 3 for c in chunks if len(c) >= 12)


def _candidate_periods(words: list, settings) -> list:
    """Periods worth testing: 1..max_period_words, plus every distance between a
    word and its previous occurrence that recurs often enough to be a loop."""
    periods = list(range(1, settings.max_period_words + 1))
    if len(words) < 3 * (settings.max_period_words + 1):
        return periods
    last = {}
    dist = Counter()
    for i, w in enumerate(words):
        j = last.get(w)
        if j is not None and settings.max_period_words < i - j <= settings.max_loop_words:
            dist[i - j] += 1
        last[w] = i
    # a p-word unit repeated k >= 3 times gives at least 2 distances of p per word
    periods += sorted(d for d, n in dist.items() if n >= 2 * min(d, 8))
    return periods


def _unit_size(text: str) -> int:
    """Characters, a CJK character counting four: as many tokens as four ASCII
    characters (tokens.estimate_tokens), so the seed's 20 characters ~ 5 CJK."""
    return len(text) + (3 * len(_CJK_RE.findall(text)) if not text.isascii() else 0)


def _structured(line: str, in_code: bool) -> bool:
    """Log lines, code and short fragments repeat legitimately (retries); a whole
    table row or a line of prose does not."""
    if in_code:
        return True
    if (_LOG_LINE_RE.match(line) or _LOG_WORDS_RE.search(line)) and not (len(line) > 160 and _SENTENCES_RE.search(line)):
        return True   # a log line; a paragraph that mentions errors is still prose
    n = len(_ALNUM_RE.findall(line))
    return not (n >= 8 or n + 3 * len(_CJK_RE.findall(line)) >= 8)


def _lines(content: str):
    """Non-blank lines, whitespace-normalized, each with whether it sits in a code fence."""
    lines = [" ".join(raw.split()) for raw in content.splitlines()]
    lines = [x for x in lines if x]
    if "```" not in content and "~~~" not in content:
        return lines, [False] * len(lines)
    in_code_flags = []
    in_code = False
    for line in lines:
        if _FENCE_RE.match(line):
            in_code = not in_code
            in_code_flags.append(True)   # a looping fence is still a loop
        else:
            in_code_flags.append(in_code)
    return lines, in_code_flags


def _line_loop(lines: list, in_code: list, settings):
    """(Finding or None, warnings) for lines or blocks of lines repeated back to back."""
    k_prose, k_struct = settings.repetition_threshold, settings.structured_loop_repeats
    warnings = []
    if len(set(lines)) == len(lines):
        return None, warnings
    for p in range(1, settings.max_period_lines + 1):
        for start, k in _tandem_runs(lines, p, 2):
            block = lines[start:start + p]
            size = sum(_unit_size(x) for x in block)
            if not any(_ALNUM_RE.search(x) for x in block) and (k < k_struct or size * k < settings.word_loop_min_chars):
                continue  # rules and separators repeat; only a long run of them is a loop
            is_struct = all(_structured(x, c) for x, c in zip(block, in_code[start:start + p]))
            if k >= k_struct or (k >= k_prose and not is_struct and size >= settings.repetition_min_length):
                unit = "line" if p == 1 else f"block of {p} lines"
                return Finding("repetition", f"a {unit} repeated {k} times back to back ({block[0][:50]!r}): "
                               "the summarizer looped; retry at a lower temperature or a smaller max_tokens",
                               figures={"grain": "lines", "period": p, "repeats": k, "unit_chars": size}), warnings
            if k == 2 and not is_struct and size >= 200:
                warnings.append(Finding("repeated_block", f"a {size}-char block appears twice back to back", failure=False))
    return None, warnings


# A leading counter: "3.", "(3)", "Step 3:", "Attempt 3 -", "#3".
_COUNTER_RE = re.compile(r"^\W{0,3}(?:(?:step|attempt|round|iteration|part|item|try|pass)\s*)?#?\d+\W{0,3}\s*", re.I)


def _counter_loop(lines: list, in_code: list, settings):
    """A prose line (or block) repeated back to back with only a leading counter
    changing ("Step 1: check the logs.", "Step 2: check the logs.", ...): a loop with a
    counter. An enumeration ("1. Restarted api-1", "2. Restarted api-2") changes more
    than its counter and is left alone, as are tables and logs; it takes
    `structured_loop_repeats` repeats."""
    k_need = settings.structured_loop_repeats
    if len(lines) < k_need:
        return None
    masked = [_COUNTER_RE.sub("#", x, count=1) if _COUNTER_RE.match(x) else None for x in lines]
    if sum(m is not None for m in masked) < k_need:
        return None
    keys = [m if (m is not None and not c and not _TABLE_LINE_RE.match(x)) else object()
            for m, x, c in zip(masked, lines, in_code)]
    for p in range(1, 4):
        for start, k in _tandem_runs(keys, p, k_need):
            block = lines[start:start + p]
            if any(_structured(_COUNTER_RE.sub("", x, count=1), False) for x in block):
                continue   # the text after the counter reads as a log line (retries)
            return Finding("repetition", f"a line repeated {k} times back to back with only its counter changing "
                           f"({block[0][:50]!r}): the summarizer looped with a counter; retry at a lower temperature",
                           figures={"grain": "lines-with-counter", "period": p, "repeats": k})
    return None


def _word_loop(words: list, settings):
    """A Finding for the first back-to-back loop of words, or None. Prose units
    loop from the third repeat; units that read as log lines need as many repeats
    as a repeated log line."""
    minlen = settings.repetition_min_length
    k_prose = settings.repetition_threshold
    for p in _candidate_periods(words, settings):
        for start, k in _tandem_runs(words, p, k_prose):
            block = words[start:start + p]
            if not any(_ALNUM_RE.search(w) for w in block):
                continue
            size = sum(_unit_size(w) for w in block) + p - 1
            phrase = " ".join(block)
            long_unit = size >= minlen
            need = settings.structured_loop_repeats if (_LOG_LINE_RE.match(phrase) or _LOG_WORDS_RE.search(phrase)) else k_prose
            if (long_unit and k >= need) or (k >= settings.word_loop_repeats and (size + 1) * k >= settings.word_loop_min_chars):
                what = "a phrase" if long_unit else "a word"
                return Finding("repetition", f"{what} repeated {k} times back to back ({phrase[:50]!r}): "
                               "the summarizer looped; retry at a lower temperature or a smaller max_tokens",
                               figures={"grain": "words", "period": p, "repeats": k, "unit_chars": size})
    return None


def detect(content: str, settings) -> list:
    if len(content) < 40:
        return []
    # 1. Lines and blocks of lines (paragraphs, list blocks, role labels).
    lines, in_code = _lines(content)
    hit, warnings = _line_loop(lines, in_code, settings)
    if hit:
        return [hit]
    hit = _counter_loop(lines, in_code, settings)
    if hit:
        return [hit]
    # 2. Words and CJK characters outside code and tables: a sentence, phrase or
    # word looping inside a paragraph ("User: User: ...", 的的的的, a sentence
    # with no full stop). Code lines are left to the line grain.
    if "|" in content or any(in_code):
        prose = "\n".join(x for x, c in zip(lines, in_code) if not c and not _TABLE_LINE_RE.match(x))
    else:
        prose = "\n".join(lines)
    chunks = [c.strip() for c in _CHUNK_SPLIT_RE.split(prose)]
    if _may_loop(chunks):
        hit = _word_loop(_WORD_RE.findall(prose), settings)
        if hit:
            return [hit]
    # Incidental: one long sentence several times, not back to back.
    counts = Counter(c for c in chunks if len(c) >= 60)
    if counts:
        sent, count = counts.most_common(1)[0]
        if count >= settings.repetition_threshold:
            warnings.append(Finding("repeated_sentence", f"one sentence appears {count} times ({sent[:40]!r})", failure=False))
    return warnings[:1]
