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
    r"(?:(?:error|err|warn(?:ing)?|info|debug|trace|fatal|attempt|retry|retrying|try|e\d{3,})\b|npm err!|"
    r"(?:tool|user|assistant|system|human|ai)\s*:)|"
    r"[\w.-]+\.(?:py|js|ts|go|rs|java|c|h|sh):\d+)",
    re.I,
)
# Words only logs write: upper-case levels, errno names, HTTP statuses, tracebacks.
_LOG_WORDS_RE = re.compile(r"\b(?:ERR!?|ERROR|WARN(?:ING)?|FATAL|DEBUG|Traceback|E[A-Z]{4,}|[45]\d\d [A-Z][a-z]+)\b")
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


def _prose_like(line: str) -> bool:
    """Prose, or a table row: a whole row repeated is a loop, repeated cells are not."""
    if _LOG_LINE_RE.match(line) or _LOG_WORDS_RE.search(line):
        return False
    n = len(_ALNUM_RE.findall(line))
    return n >= 8 or n + 3 * len(_CJK_RE.findall(line)) >= 8


def _lines(content: str):
    """Non-blank lines, whitespace-normalized, each tagged structured or not."""
    out, structured = [], []
    in_code = False
    for raw in content.splitlines():
        line = normalize_ws(raw)
        if _FENCE_RE.match(raw):
            in_code = not in_code
            out.append(line)          # a looping fence is still a loop
            structured.append(True)
            continue
        if not line:
            continue
        out.append(line)
        structured.append(in_code or not _prose_like(line))
    return out, structured


def _best(findings: list) -> list:
    return findings[:1]


def _word_loop(words: list, need_long: int, settings):
    """A Finding for the first back-to-back loop of words, or None."""
    minlen = settings.repetition_min_length
    for p in _candidate_periods(words, settings):
        for start, k in _tandem_runs(words, p, min(need_long, settings.word_loop_repeats)):
            block = words[start:start + p]
            if not any(_ALNUM_RE.search(w) for w in block):
                continue
            size = sum(_unit_size(w) for w in block) + p - 1
            phrase = " ".join(block)
            long_unit = size >= minlen
            need = settings.structured_loop_repeats if (_LOG_LINE_RE.match(phrase) or _LOG_WORDS_RE.search(phrase)) else need_long
            if (long_unit and k >= need) or (k >= settings.word_loop_repeats and (size + 1) * k >= settings.word_loop_min_chars):
                what = "a phrase" if long_unit else "a word"
                return Finding("repetition", f"{what} repeated {k} times back to back ({phrase[:50]!r}): "
                               "the summarizer looped; retry at a lower temperature or a smaller max_tokens",
                               figures={"grain": "words", "period": p, "repeats": k, "unit_chars": size})
    return None


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
            if not any(_ALNUM_RE.search(x) for x in block) and (k < k_struct or size * k < settings.word_loop_min_chars):
                continue  # rules and separators repeat; only a long run of them is a loop
            if k >= k_struct or (k >= k_prose and not is_struct and size >= minlen):
                unit = "line" if p == 1 else f"block of {p} lines"
                found.append(Finding("repetition", f"a {unit} repeated {k} times back to back ({block[0][:50]!r}): "
                                     "the summarizer looped; retry at a lower temperature or a smaller max_tokens",
                                     figures={"grain": "lines", "period": p, "repeats": k, "unit_chars": size}))
            elif k == 2 and not is_struct and size >= 200:
                warnings.append(Finding("repeated_block", f"a {size}-char block appears twice back to back", failure=False))
        if found:
            return _best(found)

    # 2. Words and CJK characters: a sentence, phrase or word looping inside a
    # paragraph ("User: User: ...", 的的的的, a sentence with no full stop). A unit
    # that reads as a log line needs as many repeats as a repeated log line.
    prose = [x for x, st in zip(lines, structured) if not st and not _TABLE_LINE_RE.match(x)]
    # prose lines run together; a long log or code line is searched on its own
    streams = [(_WORD_RE.findall("\n".join(prose)), k_prose)]
    streams += [(_WORD_RE.findall(x), k_struct) for x, st in zip(lines, structured) if st and len(x) > 200]
    for words, need in streams:
        hit = _word_loop(words, need, settings)
        if hit:
            return [hit]

    sentences = [normalize_ws(x) for x in _SENTENCE_SPLIT_RE.split("\n".join(prose)) if x.strip()]
    # Incidental: one long sentence several times, not back to back.
    long_sentences = [s for s in sentences if len(s) >= 60]
    if long_sentences:
        sent, count = Counter(long_sentences).most_common(1)[0]
        if count >= k_prose:
            warnings.append(Finding("repeated_sentence", f"one sentence appears {count} times ({sent[:40]!r})", failure=False))
    return warnings[:1]
