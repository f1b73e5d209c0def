"""cut_off (warning): a summary that stops where no writer would stop.

A summarizer that hits max_tokens leaves no marker; its text just stops. What the
stop leaves behind, each a named sign:
- `unclosed-wrapper`: a wrapper the summary opened and never closed: `<summary>`
  (or `<analysis>`, `<state_snapshot>`) without its closing tag; `unclosed-fence`: a code fence
  left open (a warning only: no compaction request asks for a fence);
- `dangling-punctuation`: the text ends on a comma, a colon, an opening bracket or
  quote, a dash or a conjunction sign (`&`, `+`, `=`, `→`), where a clause must go on;
- `mid-sentence`: the last line is prose (at least `cutoff_min_last_words` words,
  or as many CJK characters twice over) without the closing punctuation that the
  summary's other sentences have (at least `cutoff_min_closed_share` of them end so).
  Lists, headings, tables and identifiers end without a full stop and are left alone, and so
  does a `label-list` line: a label of a few words, a colon, then two or more short items
  separated by commas (lossless-claw ends every summary with `Expand for details about: a, b`), or
  one item when the line stands apart after a blank line (`Expand for details about: exact wording
  of each status update`);
- `short-item`: the last line starts like earlier lines (its first two words, or its
  one word, digits set aside: `[17:55] ana:`, `5.`, `SUP-85383:`) but is under half as
  long as the shortest of them, or it is the start of an earlier line: a list item or
  log line cut mid-way.
- `mid-sentence` also for a list item of prose (not a `label: value` item) that does not close,
  where nearly all the summary's other such items (`cutoff_min_item_closed_share`, three or more)
  close theirs;
- `unclosed-bracket`: the last line opened a bracket or a quotation it never closed.
A warning where what was written may be a good summary; a failure (`cut_off`) where it stopped
inside the structure it was asked for: inside a tag it opened on a line of its own and never
closed (`<summary>`, `<state_snapshot>` and the section tag within), or inside a section of a
summary written in sections (two headings or more: Markdown, numbered `1. Primary Request:`, bold
labels): what the sections after it would hold (decisions, next steps, pending asks) is not there.
The failure names where it stops and, when the request is known, the sections it asked for that
never came. A text that ends on a colon after its last section (`as follows:`) stays a warning.
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


def _label_list(line: str, apart=None) -> bool:
    """A label and a list of two or more short items; one item when the line stands apart (`apart()`: a
    blank line before it): a footer (`Expand for details about: exact wording of each status update`)."""
    m = _LABEL_RE.match(line)
    if m is None:
        return False
    items = _LIST_SEP_RE.split(line[m.end():])
    if not all(0 < len(i.split()) <= 8 and len(i) <= 80 and ":" not in i and "：" not in i for i in items):
        return False
    return len(items) >= 2 or (apart is not None and apart())


def _apart(text: str) -> bool:
    """Whether the text's (right-stripped) last line stands apart: a blank line before it."""
    body = text.rstrip()
    cut = body.rfind("\n")
    return cut > 0 and body[:cut].rstrip(" \t").endswith("\n")


_INNER_END_RE = re.compile(r"[.!?。！？][\s\"'”’»)]")


def _closes_sentences(lines: list, last: str) -> tuple:
    """Whether the writer closes sentences: at least cutoff_min_closed_share of the
    earlier prose lines end with closing punctuation, or (one line) the last line
    has a closed sentence inside it."""
    # (ten CJK characters need ten characters, none of them ASCII: the count is made only then)
    prose = [ln for ln in lines if not _LINE_OK_RE.match(ln) and (len(ln.split()) >= 4 or (
        len(ln) >= 10 and not ln.isascii() and count_matches(CJK_RUN_RE, ln) >= 10))]
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
            # (a last line without a digit starts a masked line only where it starts the line itself:
            # no digit stands in that many of its first characters)
            if any(ln.startswith(cut) for ln in alike) if cut == last and "0" not in last \
                    else any(_DIGIT_RE.sub("0", ln).startswith(cut) for ln in alike):
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


_ITEM_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(\S.*)$")
_NAME_END_RE = re.compile(r"[\d_/#@]|\w\.\w")
_TRAIL_RE = re.compile(r"[A-Za-z0-9_./#@:-]+$")
_LABEL_ITEM_RE = re.compile(r"^[^\s:：]{1,60}[:：]\s|^\*\*[^*]{1,60}\*\*|^`[^`]{1,80}`\s*[:：-]")
_PAIRS = (("(", ")"), ("[", "]"), ("（", "）"), ("「", "」"), ("『", "』"), ("«", "»"))


_OPENERS_RE = re.compile("[([（「『«“]")


def _unbalanced(line: str) -> bool:
    """Whether the line opened a bracket or a quotation it did not close (`“` opens only where no
    `„` does: German closes „ with “)."""
    if not _OPENERS_RE.search(line):
        return False
    if any(a in line and line.count(a) > line.count(b) for a, b in _PAIRS):
        return True
    return "“" in line and "„" not in line and line.count("“") > line.count("”")


def _item_cut(lines: list, last: str, settings) -> bool:
    """The last line is a list item of prose (not a `label: value` item, not one ending on a name) that
    does not close its sentence, where the summary's other items of prose (at least three) close theirs,
    nearly all of them (cutoff_min_item_closed_share)."""
    m = _ITEM_RE.match(last)
    if not m:
        return False
    body = m.group(1).strip()

    def prose(b: str) -> bool:
        return len(b.split()) >= settings.cutoff_min_last_words \
            or (not b.isascii() and count_matches(CJK_RUN_RE, b) >= 2 * settings.cutoff_min_last_words)
    # an item ending on a name (`commit 3f9c2a1e`, `release/2.7`) ends where it ends
    end = _TRAIL_RE.search(body)
    if (end and _NAME_END_RE.search(end.group(0))) or not prose(body) or _closed(body) \
            or body.endswith(("|", "`", "*", ")", "]", "}", '"', "'", "）", "」", ">")):
        return False
    if _LABEL_ITEM_RE.match(body):
        # a `label: value` item (a reference list's `file: what it holds` need not close): cut where the
        # items of its own section before it all close theirs
        section = []
        for ln in reversed(lines[:-1]):
            if _SECTION_RE.match(ln):
                break
            mi = _ITEM_RE.match(ln)
            if mi:
                section.append(mi.group(1).strip())
        return bool(section) and all(_closed(b) for b in section)
    items = [mi.group(1).strip() for ln in lines[:-1] if (mi := _ITEM_RE.match(ln))]
    items = [b for b in items if prose(b)]
    if len(items) < 3:
        return False
    return sum(1 for b in items if _closed(b)) >= settings.cutoff_min_item_closed_share * len(items)


# a tag of the summary's structure: alone on its line (`<tab>` inside a sentence is a key's name)
_STRUCT_TAG_RE = re.compile(r"^[ \t]*<(/?)([A-Za-z][\w-]{0,40})>[ \t]*$", re.M)
_SECTION_RE = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]+\S[^\n]*|\d{1,2}\.[ \t]+[^\W\d_][^\n:]{0,60}:[^\n]*"
                         r"|\*\*[^*\n]{1,60}\*\*:?[ \t]*)$", re.M)


def _structure(text: str) -> tuple:
    """(the tags opened on a line of their own and never closed, in order; the summary's section
    headings, in order)."""
    opened, closed = {}, {}
    if "<" in text:
        for m in _STRUCT_TAG_RE.finditer(text):
            name = m.group(2).lower()
            (closed if m.group(1) else opened).setdefault(name, []).append(m.start())
        # a closing tag inside a line closes it too (`...</summary>` at the end of the last line)
        low = text.lower()
        for name in list(opened):
            n = low.count(f"</{name}>")
            if n > len(closed.get(name, [])):
                closed[name] = [0] * n
    unclosed = sorted((pos[0], name) for name, pos in opened.items() if len(pos) > len(closed.get(name, [])))
    sections = [m.group(0).strip() for m in _SECTION_RE.finditer(text)] if "\n" in text else []
    return [n for _, n in unclosed], sections


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _may_fence(text: str) -> bool:
    """Whether the text holds a fence's three backticks or tildes. A search for one character
    first: most text has none, and it is found in C a word at a time where a three-character
    search reads every character (a tenth of the time)."""
    return ("`" in text and "```" in text) or ("~" in text and "~~~" in text)


def detect(content: str, settings, required=None) -> list:
    """`required`: what the request asked for (contract.Contract), when it is known: the sections it
    asked for that never came are named."""
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
        sign = ("unclosed-fence", "a code fence is never closed")
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
            and not _label_list(last, lambda: _apart(text))
        closed = _closed(last)
        if long_prose and not closed:
            lines = [ln for ln in map(str.strip, text[-4000:].splitlines()) if ln]
            closes, share = _closes_sentences(lines[:-1], last)
            if closes and share >= settings.cutoff_min_closed_share:
                sign = ("mid-sentence", f"its last sentence stops mid-way ({last[-40:]!r})")
        elif not closed and _ITEM_RE.match(last):
            lines = [ln for ln in map(str.strip, text[-4000:].splitlines()) if ln]
            if _item_cut(lines, last, settings):
                sign = ("mid-sentence", f"its last list item stops mid-way ({last[-40:]!r})")
        if not sign and not closed and _unbalanced(last) and len(last.split()) >= 2:
            sign = ("unclosed-bracket", f"its last line opens a bracket it never closes ({last[-40:]!r})")
    if not sign:
        sign = _short_item(text)
    if not sign:
        return []
    name, what = sign
    tags, sections = _structure(text)
    inside = tags or (sections if len(sections) >= 2 and name != "short-item" else [])
    # (a fence is not a structure a compaction request asks for: a model may open one around it all)
    if not inside or name == "unclosed-fence" or (name == "dangling-punctuation" and text.endswith((":", "："))):
        return [Finding("cut_off", f"the summary looks cut off: {what}; the summarizer may have hit max_tokens, "
                        "raise it or lower the target", failure=False, figures={"sign": name})]
    where = []
    if tags:
        where.append(" > ".join(f"<{t}>" for t in tags) + " never closed")
    if len(sections) >= 2:
        where.append(f"in {sections[-1][:50]!r}, the {_ordinal(len(sections))} of its sections")
    asked = []
    if required is not None and getattr(required, "sections", None):
        from ..contract import missing_sections
        asked = missing_sections(content, required)
    lost = (f"the sections the request asked for after it never came: {', '.join(asked[:6])}" if asked else
            "what it would have written after that point (the rest of that section and any section after it: "
            "decisions, pending asks, next steps) is missing")
    said = "" if name == "unclosed-wrapper" and tags else f"{what}; "
    return [Finding("cut_off", f"the summary stops inside its structure ({'; '.join(where)}): {said}{lost}; the "
                    "summarizer hit its output limit: raise max_tokens or lower the target, and re-run compaction",
                    figures={"sign": name, "open_tags": tags, "last_section": sections[-1] if sections else None,
                             "sections": len(sections), "missing_sections": asked})]
