"""cut_off (warning): a summary that stops where no writer would stop.

A summarizer that hits max_tokens leaves no marker; its text just stops. What the
stop leaves behind, each a named sign:
- `unclosed-wrapper`: a wrapper the summary opened and never closed: `<summary>`
  (or `<analysis>`, `<state_snapshot>`) without its closing tag, a code fence left open;
- `dangling-punctuation`: the text ends on a comma, a colon, an opening bracket or
  quote, a dash or a conjunction sign (`&`, `+`, `=`, `→`), where a clause must go on;
- `mid-sentence`: the last line is prose (at least `cutoff_min_last_words` words,
  or as many CJK characters twice over) without the closing punctuation that the
  summary's other sentences have (at least `cutoff_min_closed_share` of them end so).
  Lists, headings, tables and identifiers end without a full stop and are left alone, and so
  does a `label-list` line: a label of a few words, a colon, then two or more short items
  separated by commas (lossless-claw ends every summary with `Expand for details about: a, b`);
- `short-item`: the last line starts like earlier lines (its first two words, or its
  one word, digits set aside: `[17:55] ana:`, `5.`, `SUP-85383:`) but is under half as
  long as the shortest of them, or it is the start of an earlier line: a list item or
  log line cut mid-way.
A warning, not a failure: what was written before the stop may be a good summary.
"""
from __future__ import annotations

import re

from ..findings import Finding
from ..tokens import CJK_RUN_RE, count_matches

_WRAPPERS = ("summary", "analysis", "state_snapshot", "conversation_summary")
_OPEN_TAG_RE = re.compile(r"<(%s)>" % "|".join(_WRAPPERS), re.I)
_FENCE_RE = re.compile(r"^\s*(```|~~~)", re.M)


def _fences(text: str) -> int:
    """len(_FENCE_RE.findall(text)): the lines that open with a fence after whitespace (a match
    that starts on a blank line runs on to the fence it reaches, and counts once), found by
    substring searches instead of the pattern tried at every position."""
    n = 0
    for mark in ("```", "~~~"):
        i = text.find(mark)
        while i >= 0:
            start = text.rfind("\n", 0, i) + 1
            if start == i or text[start:i].isspace():
                n += 1
            i = text.find(mark, i + 1)
    return n


# where a clause must go on
_DANGLING = tuple(",:;([{\"'«“‘-–—&+=→/\\")
# sentence ends, in the scripts the guard is tested on (closing quotes and brackets may follow)
_CLOSING = tuple(".!?。！？…؟।")
_CLOSERS = "\"'”’»)]）」』*_`"


def _closed(line: str) -> bool:
    """Whether a stripped line closes its sentence: the closing quotes and brackets at its end
    taken away, it ends on a sentence end (none of those is a closer), read from the end
    (`[.!?…](?:[closers]*)$` would be tried at every mark of the line)."""
    return line.rstrip(_CLOSERS).endswith(_CLOSING)


_LINE_OK_RE = re.compile(r"^\s*(?:[-*+•>|#]|\d+[.)]\s|\w[\w .-]{0,30}:\s*\S{0,40}$)")


# `label-list`: a label of two to six words of letters (not a speaker's name, `user:`, nor a
# stamp, `COMMENT BY yuki (2026-05-13):`), a colon, then two or more items of at most eight words
# each, separated by commas (or the CJK list commas): a list written on one line, not a sentence.
# The label is one pattern with no choices to retry; the items are a split: linear in the line
_LABEL_RE = re.compile(r"[^\W\d_]+(?:[ \t][^\W\d_]+){1,5}[:：]")
_LIST_SEP_RE = re.compile(r"[,，、;]")


def _label_list(line: str) -> bool:
    m = _LABEL_RE.match(line)
    if m is None:
        return False
    items = _LIST_SEP_RE.split(line[m.end():])
    return len(items) >= 2 and all(0 < len(i.split()) <= 8 and len(i) <= 80 and ":" not in i and "：" not in i
                                   for i in items)


_INNER_END_RE = re.compile(r"[.!?。！？][\s\"'”’»)]")


def _closes_sentences(lines: list, last: str) -> tuple:
    """Whether the writer closes sentences: at least cutoff_min_closed_share of the
    earlier prose lines end with closing punctuation, or (one line) the last line
    has a closed sentence inside it."""
    prose = [ln for ln in lines if not _LINE_OK_RE.match(ln) and (len(ln.split()) >= 4 or count_matches(CJK_RUN_RE, ln) >= 10)]
    if not prose:
        return _INNER_END_RE.search(last) is not None, 1.0
    return True, sum(1 for ln in prose if _closed(ln)) / len(prose)


_DIGIT_RE = re.compile(r"\d+")
_ALNUM_RE = re.compile(r"[^\W_]")      # a character str.isalnum() says is one


def _head(line: str, words: int = 2) -> str:
    """The line's first `words` words, digits set aside (a run of digits never holds a space:
    the words are cut first, and only they are read for digits)."""
    return _DIGIT_RE.sub("0", " ".join(line.split(None, words)[:words]))


def _short_item(text: str):
    # the last 12 lines that hold something (blank lines between items are spacing)
    parts = text[-2000:].splitlines()
    lines = [ln for ln in map(str.strip, parts[-24:]) if ln]
    if len(lines) < 12 and len(parts) > 24:     # (blank lines among the last 24: all of them)
        lines = [ln for ln in map(str.strip, parts) if ln]
    lines = lines[-12:]
    if len(lines) < 3:
        return None
    last = lines[-1]
    longest = max(map(len, lines[:-1]))
    if len(last) >= longest:
        return None         # no longer line it could be the start of, none it is shorter than
    # what an earlier line needs for its digit-masked text to start like the last line's (a cheap
    # test before masking it): the same first character once digits are set aside (both digits, or
    # equal)
    first, digit, size = last[:1], last[:1].isdecimal(), len(last)
    if size >= 3 and _ALNUM_RE.search(last):
        alike = [ln for ln in lines[:-1] if len(ln) > size and (ln[:1] == first or digit and ln[:1].isdecimal())]
        if alike:
            cut = _DIGIT_RE.sub("0", last)
            if any(_DIGIT_RE.sub("0", ln).startswith(cut) for ln in alike):
                # the model began an earlier line again (digits set aside: `#4 - The most common`
                # where `#3 - The most common error ...` goes on) and was stopped inside it (a
                # closing fence or rule, no letter or digit, is not a line cut short)
                return ("short-item", f"its last line stops where an earlier line goes on ({last[-40:]!r})")
    if len(last) >= 0.5 * longest:
        return None          # not shorter than the lines before it: nothing cut
    # the first two words (one, if that is all the last line has: `[12:36]`, `user: ת`)
    k = min(2, len(last.split()))
    head = _head(last, k)
    peers = [len(ln) for ln in lines[:-1] if (ln[:1] == first or digit and ln[:1].isdecimal()) and _head(ln, k) == head] \
        if head else []
    if len(peers) >= 2 and len(last) < 0.5 * min(peers):
        return ("short-item", f"its last line stops where earlier lines like it go on ({last[-40:]!r})")
    return None


def _may_fence(text: str) -> bool:
    """Whether the text holds a fence's three backticks or tildes. A search for one character
    first: most text has none, and it is found in C a word at a time where a three-character
    search reads every character (a tenth of the time)."""
    return ("`" in text and "```" in text) or ("~" in text and "~~~" in text)


def detect(content: str, settings) -> list:
    text = content.rstrip()
    if len(text) < 40:
        return []
    if text.endswith(_CLOSING) and "<" not in text and not _may_fence(text) and len(text) - text.rfind("\n") > 24:
        return []     # a closed last sentence of some length, no wrapper, no fence: not cut
    sign = None
    opened = _OPEN_TAG_RE.search(text) if "<" in text else None
    if opened and f"</{opened.group(1).lower()}>" not in text.lower():
        sign = ("unclosed-wrapper", f"<{opened.group(1)}> is never closed")
    elif _may_fence(text) and _fences(text) % 2 == 1:
        sign = ("unclosed-wrapper", "a code fence is never closed")
    elif text.endswith(_DANGLING) and not text.endswith(("--", "==", "-->", ":)", "://")) \
            and not (text[-1] in "\"'" and text[text.rfind("\n") + 1:].count(text[-1]) % 2 == 0) \
            and not (text[-1] == "/" and text.rsplit(None, 1)[-1].count("/") >= 2):
        # a straight quote that closes one its line opened ("please continue") ends a quotation;
        # a rule (`-----`, `=====`) ends a section; a URL or a path that ends on a slash
        # (`https://www.gnu.org/software/tar/manual/`, `/var/log/`) is a whole name: the last
        # lines of real READMEs and changelogs end so (18 URLs or paths and 2 rules on a probe of 1,588:
        # tests/corpus/real/collect_docs.py)
        sign = ("dangling-punctuation", f"it ends on {text[-1]!r}")
    else:
        # the end is what matters: the last lines, and how the lines before them end (the last
        # line read off the last 256 characters when a line starts there)
        tail = text[-256:].splitlines()
        last = (tail[-1] if len(tail) > 1 else text[-4000:].splitlines()[-1]).strip()   # holds something
        long_prose = (len(last.split()) >= settings.cutoff_min_last_words
                      or (not last.isascii() and count_matches(CJK_RUN_RE, last) >= 2 * settings.cutoff_min_last_words)) \
            and not _LINE_OK_RE.match(last) and not last.endswith(("|", "`", "*", ")", "]", "}", '"', "'")) \
            and not _label_list(last)
        if long_prose and not _closed(last):
            lines = [ln for ln in map(str.strip, text[-4000:].splitlines()) if ln]
            closes, share = _closes_sentences(lines[:-1], last)
            if closes and share >= settings.cutoff_min_closed_share:
                sign = ("mid-sentence", f"its last sentence stops mid-way ({last[-40:]!r})")
    if not sign:
        sign = _short_item(text)
    if not sign:
        return []
    name, what = sign
    return [Finding("cut_off", f"the summary looks cut off: {what}; the summarizer may have hit max_tokens, "
                    "raise it or lower the target", failure=False, figures={"sign": name})]
