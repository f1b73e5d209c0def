"""empty: a summary that carries nothing.

Blank or near-blank text (the seed's "under 10 characters"), and the real forms
that pass a length test: placeholders, OpenClaw's "No prior history." skeleton,
refusals, error text stored as the summary, and reasoning with no summary after
it. Each form is a named, commented pattern; reasoning blocks are found by
reasoning.strip_reasoning, which the LLM client shares.
"""
from __future__ import annotations

import itertools
import re
try:                                    # the regex parser, for a pattern's longest match
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python before 3.11
    import sre_parse as _sre_parse
from functools import lru_cache
from typing import Optional

from ..findings import Finding
from ..reasoning import Reasoning, strip_reasoning
from ..tokens import CJK_CLASS, CJK_RUN_RE, PIECE, count_matches, pieces
from .answer_words import error_text
from .identifiers import scan
from .overlap import SEPARATORS, WIDE_PUNCT_RE, units
from .vocabulary import _vocabulary, common_units, template_units  # noqa: F401 - template_units: read here too

# ---------------------------------------------------------------------------
# Placeholders: text a compactor stores when it had no summary.
# ---------------------------------------------------------------------------
PLACEHOLDER_PATTERNS = [
    # OpenClaw's old fallback that still cut history.
    ("openclaw-unavailable", r"summary unavailable\b[^\n]*"),
    # Codex CLI and friends.
    ("no-summary", r"\(?\s*no (?:summary|content|history|messages?)(?: (?:available|generated|produced|provided|yet))?\s*\)?\.?"),
    ("nothing-to-summarize", r"(?:there (?:is|was) )?nothing to summari[sz]e[^\n]*"),
    ("summary-pending", r"summary (?:pending|not available|not generated|failed|skipped)[^\n]*"),
    ("null-literal", r"(?:null|none|undefined|n/?a|nan|todo|tbd|placeholder|\[\]|\{\}|\"\"|'')\.?"),
    ("empty-tag", r"<summary>\s*</summary>"),
]
# A placeholder may be dressed with figures: "(no summary available) [0 messages, 1234 tokens]".
_FIGURES_TAIL = r"(?:\s*[(\[{][^)\]}\n]{0,80}[)\]}]|\s*[-:–—]\s*[^\n]{0,40}\d[^\n]{0,40})?"
PLACEHOLDER_RE = re.compile(
    r"\A\s*(?:summary\s*:\s*)?(?:" + "|".join(f"(?P<{n.replace('-', '_')}>{p})" for n, p in PLACEHOLDER_PATTERNS)
    + r")" + _FIGURES_TAIL + r"\s*\.?\s*\Z",
    re.I,
)
# "The conversation was empty" over a history that was not: a statement that there
# was nothing, stored as the summary.
EMPTY_STATEMENT_RE = re.compile(
    r"\A\s*(?:summary\s*:\s*)?(?:the )?(?:conversation|history|chat|session|transcript)(?: history)? "
    r"(?:is|was|appears to be|seems) (?:empty|blank)|"
    r"\A\s*(?:summary\s*:\s*)?no (?:conversation|messages|history|content) (?:was |were )?(?:provided|given|found|"
    r"to summari[sz]e)",
    re.I,
)

# OpenClaw's safeguard skeleton: headings whose every body line says "nothing".
_SKELETON_WORDS = (
    r"no prior history|none captured|none recorded|none yet|none|n/?a|"
    r"nothing(?: to report| yet)?|\(none\)|no (?:decisions|todos|constraints|identifiers|"
    r"pending (?:user )?asks)(?: yet| recorded| captured)?|—|-|"
    # "none" in the other languages the guard is tested on (a template filled with nothing)
    r"无|暂无|没有|なし|特になし|없음|нет|ничего|keine[rs]?|nichts|aucune?|rien|ninguno|ninguna|nada|"
    r"nenhum|nenhuma|brak|nessuno|nessuna|geen|لا يوجد|אין")
SKELETON_BODY_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:" + _SKELETON_WORDS + r")\s*[.。]?\s*$", re.I)
HEADING_RE = re.compile(r"^\s*(?:#{1,6}\s+\S.*|\*\*[^*]+\*\*:?)\s*$")

# ---------------------------------------------------------------------------
# Error text stored as the summary (LangChain's "Error generating summary: ...",
# SDK exception strings, HTTP error pages). Only at the very start.
# ---------------------------------------------------------------------------
# Unambiguous shapes of error text, at the very start (up to max_error_text_chars):
# the compactor's own failure message, a traceback, an error object, an HTML page,
# an SDK exception.
ERROR_START_RE = re.compile(
    r"\A\s*(?:"
    r"error generating summary|failed to (?:generate|create|produce|write) (?:a |the )?summary|"
    r"traceback \(most recent call last\)|"
    r"\{\s*\"(?:error|detail|message)\"\s*:|"
    r"error code: \d{3}\s*-|"
    r"api error:?\s*\d{3}\b|"
    r"<!doctype html|<html|"
    r"(?:openai|anthropic|litellm|httpx|requests)\.\w*(?:error|exception)|"
    r"\w*(?:apierror|apiconnectionerror|ratelimiterror|timeouterror|apitimeouterror)\s*:|"
    r"the model `?[\w./:-]+`? does not exist"
    r")",
    re.I,
)
# Generic error phrases are error text only as a label: the phrase, then nothing, or a
# colon, dash or bracket with its detail, or a full stop. "404 Not Found on /api/users
# was caused by ..." and "Compaction failed three times yesterday because ..." use
# the phrase as the subject of a sentence: a summary about an error.
GENERIC_ERROR_RE = re.compile(
    r"\A\s*(?:\[?(?:fatal )?error\]?|exception|"
    r"summari[sz]ation (?:failed|error)|compaction (?:failed|error)|"
    r"request failed with status(?: code)? \d{3}|"
    r"(?:http(?:/\d(?:\.\d)?)?\s+)?(?:4\d\d|5\d\d) (?:bad request|unauthorized|forbidden|not found|too many requests|"
    r"internal server error|bad gateway|service unavailable|gateway time-?out)|"
    r"rate limit (?:exceeded|reached)|context_length_exceeded)"
    r"(?:\s*\Z|\s*[:\-–—(\[{]|\s*\.(?:\s|\Z))",
    re.I,
)
# a generic error label is believed only in a short text (Settings.max_generic_error_chars)
# "Error: ..." or "Exception: ..." alone is error text only as one statement: a summary
# may open with "Error:" and go on to say what was done about it.
BARE_ERROR_RE = re.compile(r"\A\s*(?:\[?(?:fatal )?error\]?|exception)\s*:", re.I)
_NEXT_SENTENCE_RE = re.compile(r"[.!?]\s+[A-Z]|\n\s*\S")

# Refusals at the start, in the languages the guard is tested on.
REFUSAL_START_RE = re.compile(
    r"\A\s*(?:"
    r"i(?:'m| am) sorry,? (?:but )?i (?:can(?:'|no)t|am unable|won't)|"
    r"i(?:'m| am) (?:unable|not able) to (?:help|assist|summari[sz]e|provide|comply|complete|fulfil+|process|do (?:that|this))\b|"
    r"i can(?:'|no)t (?:help|assist|summari[sz]e|provide|comply)|"
    r"i apologi[sz]e,? but|sorry,? (?:but )?i can(?:'|no)t|as an ai(?: language model)?,? i|"
    r"i must decline|i won't be able to|"
    r"抱歉|对不起，我(?:无法|不能)|很抱歉|申し訳ありません|すみませんが|죄송합니다|"
    r"извините,? (?:но )?я не могу|к сожалению,? я не могу|"
    r"lo siento,? (?:pero )?no puedo|désolé,? (?:mais )?je ne peux pas|"
    r"es tut mir leid,? (?:aber )?ich kann|leider kann ich|"
    r"عذرا|آسف،? لا أستطيع|סליחה,? (?:אבל )?אני לא יכול|מצטער"
    r")",
    re.I,
)
# "I'm unable to reach the staging database, so ..." states a fact of the work; a
# refusal refuses the task (to help, to summarize, to comply). It is the whole
# summary only when it is short: Settings.max_refusal_chars.

# Replacement and control characters: short noise, for the garbled detector.
_BYTE_NOISE_RE = re.compile(r"[\ufffd\x00-\x08\x0e-\x1f\x7f-\x9f]")
_CJK_CHAR_RE = re.compile(f"[{CJK_CLASS}]")
# runs of letters and digits, for count_matches
_INFORMATIVE_RUN_RE = re.compile(r"[^\W_]+")
_ALL_BUT_ALNUM = bytes(b for b in range(256) if not chr(b).isascii() or not chr(b).isalnum())


def informative_chars(text: str, enough: int = 1 << 30) -> int:
    """Letters and digits; a CJK character counts 3 (it carries a word). Stops
    counting once `enough` is certain (a long summary is not read to the end)."""
    n = 0
    i = 0
    step = 64
    while i < len(text):
        part = text[i:i + step]
        i += step
        step = 512
        if part.isascii():      # ASCII letters and digits, counted in C
            n += len(part.encode("ascii").translate(None, _ALL_BUT_ALNUM))
        else:
            ascii_alnum = len(part.encode("utf-8", "surrogatepass").translate(None, _ALL_BUT_ALNUM))
            if n + ascii_alnum >= enough:        # its ASCII letters and digits alone make it certain
                n += ascii_alnum
                break
            n += count_matches(_INFORMATIVE_RUN_RE, part)
            if n < enough:      # a CJK character counts twice more (certain already otherwise)
                n += 2 * count_matches(CJK_RUN_RE, part)
        if n >= enough:
            break
    return n


# a heading or a label: short, and not a sentence ("# 1. 2017-05-01 ... を実行。" is content)
_LABEL_LINE_RE = re.compile(r"^\s*(?:#{1,6}\s+[^\n]{1,60}(?<![.。!?！？])|\*\*[^*]+\*\*\s*:?|[^\W\d_][^:\n]{0,40}:)\s*$")


def _may_be_label(line: str) -> bool:
    """What a stripped line needs for _LABEL_LINE_RE (or HEADING_RE) to match it: a heading's
    `#` or a bold label's `**` first, or a label's colon last. Tested before the pattern."""
    return line.startswith(("#", "**")) or line.endswith(":")


_DIGITS_RUN_RE = re.compile(r"\d+")


# A line as str.splitlines reads it: a run of characters none of which ends a line (a line of
# nothing but its break is left out: _is_skeleton skips blank lines)
_LINE_RUN_RE = re.compile("[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")


def _headings_only(text: str) -> bool:
    """Headings or labels ("## Decisions", "**Summary:**", "Open TODOs:") and nothing
    else: a summary cut off before its first line of content."""
    if len(text) > 400:
        return False
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "").strip()
    if not _may_be_label(first) or not _LABEL_LINE_RE.match(first):        # the first line says already
        return False
    lines = [ln.strip() for ln in lines if ln.strip()]
    # distinct, digits aside: headings looping ("### 1.1.1", "### 1.1.1.1", ...) are a
    # loop (repetition), not an empty summary
    if not lines or not all(_may_be_label(ln) and _LABEL_LINE_RE.match(ln) for ln in lines):
        return False
    return len({_DIGITS_RUN_RE.sub("0", ln) for ln in lines}) == len(lines)


# A tag on a line of its own, opening or closing (`<overall_goal>`, `</overall_goal>`)
_TAG_LINE_RE = re.compile(r"^\s*<(/?)([^\W\d][\w.-]{0,60})>\s*$")


def _tags_only(text: str) -> list:
    """The names of the tags of a summary that is an XML template with nothing inside its
    tags (Gemini CLI's `<state_snapshot>` with its seven sections empty): every line a lone
    tag, a heading or a label, at least one tag opened and closed; else []."""
    if len(text) > 3000 or not text.startswith("<"):
        return []
    names, closed = [], False
    for ln in text.splitlines():
        core = ln.strip()
        if not core:
            continue
        m = _TAG_LINE_RE.match(core)
        if m:
            closed |= bool(m.group(1))
            if not m.group(1):
                names.append(m.group(2))
        elif not (_may_be_label(core) and _LABEL_LINE_RE.match(core)):
            return []
    return names if closed else []


# A skeleton's body line is one of SKELETON_BODY_RE's words, at most this long (the regex
# parser's own reading of the longest), once a list mark and the full stop are taken away:
# the pattern is tried only on such lines
_SKELETON_BODY_MAX_CHARS = _sre_parse.parse(_SKELETON_WORDS).getwidth()[1]


def _may_be_skeleton_body(core: str) -> bool:
    if core[:1] in ("-", "*"):
        core = core[1:].lstrip()
    return len(core.rstrip(".。").rstrip()) <= _SKELETON_BODY_MAX_CHARS


def _is_skeleton(text: str) -> bool:
    if len(text) > 3000 or ("#" not in text and ("*" not in text or "**" not in text)):
        return False
    # every line a skeleton's body line ('None captured.') or else a heading, at least one of each,
    # at most 40 lines (read until one is neither)
    headings = body = 0
    for m in _LINE_RUN_RE.finditer(text):        # (lines one at a time: most texts stop at the second)
        ln = m.group()
        core = ln.strip()
        if not core:
            continue
        if _may_be_skeleton_body(core) and SKELETON_BODY_RE.match(ln):
            body += 1
        elif _may_be_label(core) and HEADING_RE.match(ln):
            headings += 1
        else:
            return False
    return headings > 0 and body > 0 and headings + body <= 40


# An unfilled template: the prompt's format written back with its placeholders, not filled
# in (`## Goal` / `[what the user is trying to do]`, `- [ ] [current work]`,
# `- **[decision]**: [why]`): real small models of both families tried do it, in any
# language of the history, since the template is the prompt's. A placeholder line is one
# whose whole body, after a list mark, a checkbox or a bold label, is one bracketed phrase
# (not a link: `[text](url)`) that describes in words what belongs there: no digit, no
# code character, no option, no dotted name (`[pip install mongo -U]`, `[1.x code]`, `[13]`
# are content in brackets, not a template's slot); a content line is any line with a letter
# that is not a heading, a label or a lone tag (`<conversation>`).
_ITEM_MARK_RE = re.compile(r"^\s*(?:[-*+•]\s+|\d+[.)]\s+)?(?:\[[ xX]\]\s+)?(?:\*\*\[[^\]\n]*\]\*\*\s*:?\s*)?")
_PLACEHOLDER_LINE_RE = re.compile(r"\[([^\[\]\n]*[^\W\d_][^\[\]\n]*)\](?!\()\s*[.:;,]?")
_LONE_TAG_RE = re.compile(r"^\s*</?[\w-]+>\s*$")
_NOT_WORDS_RE = re.compile(r"[\d_/=$\\@#<>{}|`~^*+]|(?:^|\s)--?\w|\w\.\w")
_LETTER_RE = re.compile(r"[^\W\d_]")


def _content_line(ln: str) -> bool:
    """A line with a letter that is not a heading, a label or a lone tag."""
    return bool(_LETTER_RE.search(ln)) and not (_LABEL_LINE_RE.match(ln) or HEADING_RE.match(ln) or _LONE_TAG_RE.match(ln))


def _ends_bracketed(ln: str) -> bool:
    """Whether a line ends as a placeholder line does (_PLACEHOLDER_LINE_RE, whole): on `]`,
    or on `]`, spacing and one of `.:;,`. Tested before the line's regexes."""
    end = ln.rstrip()
    if end[-1:] in (".", ":", ";", ","):
        end = end[:-1].rstrip()
    return end[-1:] == "]"


def unfilled_template(text: str, settings, input_text: Optional[str] = None) -> list:
    """The `empty` finding for a summary that is the prompt's template with its placeholders
    left in (see above); placeholders the input also has (a conversation about a template)
    do not count."""
    if text.count("[") < settings.empty_min_placeholders:      # each placeholder line holds one
        return []
    lines = text.splitlines()

    def placeholder(ln: str):          # the line's body if it is a placeholder line, else None
        body = ln[_ITEM_MARK_RE.match(ln).end():].strip()
        m = _PLACEHOLDER_LINE_RE.fullmatch(body)
        if m and not _NOT_WORDS_RE.search(m.group(1)) and not (input_text and m.group(0).rstrip(".:;, ") in input_text):
            return body
        return None

    # the placeholder lines first (each ends on a `]`, or on `]` and one of `.:;,`); then the
    # content lines, counted until they are too many for the placeholders to be
    # empty_placeholder_share of them
    bodies = [b for ln in lines if _ends_bracketed(ln) and _content_line(ln) and (b := placeholder(ln)) is not None]
    placeholders = len(bodies)
    if placeholders < settings.empty_min_placeholders:
        return []
    content = 0
    for ln in lines:
        if _content_line(ln):
            content += 1
            if placeholders < settings.empty_placeholder_share * content:
                return []
    shown = []
    for body in bodies:
        if len(shown) < 3 and body not in shown:
            shown.append(body)
    return [Finding("empty", f"an unfilled template: {placeholders} of its {content} lines are placeholders "
                    f"({', '.join(repr(x[:50]) for x in shown)}): the model wrote the prompt's format back instead of "
                    "filling it in; re-run compaction", figures={"placeholder_lines": placeholders,
                                                                 "content_lines": content, "form": "echo"})]


_CONTENT_WORD_RE = re.compile(f"[{CJK_CLASS}]{{2}}|[^\\W\\d_]{{4,}}|\\w*\\d\\w*[-_./]?\\w+")


def grounded(text: str, input_text: Optional[str], settings) -> bool:
    """Whether a short text is about its input: at least empty_grounded_share of its
    content words (4+ letters, CJK character pairs, identifiers with digits) occur in
    the input. An error label or a refusal that is about the conversation ("Rate limit
    exceeded: the key hit 429s, we switched keys") is a summary; one that shares
    nothing with it is what the summarizer said instead of a summary."""
    if not input_text:
        return False
    words = {w.lower() for w in _CONTENT_WORD_RE.findall(text)}
    if len(words) < settings.empty_grounded_min_words:
        return False
    source = input_text.lower()
    return sum(1 for w in words if w in source) >= settings.empty_grounded_share * len(words)


def detect(content: str, settings, input_tokens: Optional[int] = None, input_text: Optional[str] = None,
           reasoning: Optional[Reasoning] = None) -> list:
    """`reasoning`: strip_reasoning(content), when the caller has it."""
    findings = []
    reasoning = reasoning or strip_reasoning(content)
    text = reasoning.text
    if reasoning.kind:
        if not text.strip() or informative_chars(text, settings.min_summary_chars) < settings.min_summary_chars:
            how = {"unclosed": "an unclosed reasoning block", "header": "plain-text reasoning ('Thinking Process:')",
                   "closed": "a reasoning block", "stray-close": "reasoning before a stray closing tag"}[reasoning.kind]
            return [Finding("empty", f"reasoning only: {how} ({reasoning.reasoning_chars} chars) with no summary after it; "
                            "raise the summarizer's max_tokens or turn its reasoning off",
                            figures={"reasoning_chars": reasoning.reasoning_chars, "form": "reasoning"})]
        findings.append(Finding("reasoning_leak", f"{reasoning.reasoning_chars} chars of model reasoning stored with the summary "
                                "(enable the server's reasoning parser or strip it)", failure=False,
                                figures={"reasoning_chars": reasoning.reasoning_chars}))
    stripped = text.strip()
    n = informative_chars(stripped, settings.min_summary_chars)
    if n < settings.min_summary_chars and not (len(stripped) >= settings.min_summary_chars and _BYTE_NOISE_RE.search(stripped)):
        what = "blank" if not stripped else f"only {n} informative characters ({stripped[:40]!r})"
        findings.append(Finding("empty", f"summary is {what}; the compactor stored no summary, re-run compaction",
                                figures={"informative_chars": n}))
        return findings
    if len(stripped) <= settings.max_placeholder_chars:
        m = PLACEHOLDER_RE.match(stripped)
        if m:
            findings.append(Finding("empty", f"placeholder stored as the summary ({m.lastgroup.replace('_', '-')}: "
                                    f"{stripped[:60]!r}); the history it replaced is not in it, re-run compaction",
                                    figures={"form": "placeholder"}))
            return findings
    if len(stripped) <= settings.max_error_text_chars:
        m = ERROR_START_RE.match(stripped) or (
            len(stripped) <= settings.max_generic_error_chars
            and (GENERIC_ERROR_RE.match(stripped) or error_text(stripped))
            and not (BARE_ERROR_RE.match(stripped) and _NEXT_SENTENCE_RE.search(stripped))
            and not grounded(stripped, input_text, settings))
        if m:
            findings.append(Finding("empty", f"error text stored as the summary ({stripped.splitlines()[0][:70]!r}); "
                                    "fix the summarizer's provider and re-run compaction", figures={"form": "error"}))
            return findings
    if len(stripped) <= settings.max_refusal_chars and REFUSAL_START_RE.match(stripped) \
            and not grounded(stripped, input_text, settings):
        findings.append(Finding("empty", f"the model refused instead of summarizing ({stripped[:60]!r}); the prompt "
                                "or the provider's content policy stopped it: re-run with another model or the aggressive "
                                "prompt", figures={"form": "refusal"}))
        return findings
    if len(stripped) <= settings.max_placeholder_chars and EMPTY_STATEMENT_RE.match(stripped) and (
            input_tokens is None or input_tokens >= settings.skeleton_min_input_tokens):
        size = f"{input_tokens} tokens of history" if input_tokens is not None else "history of unknown size"
        findings.append(Finding("empty", f"the summary says there was nothing ({stripped[:60]!r}) over {size}; "
                                "the summarizer got no messages, re-run compaction", figures={"form": "placeholder"}))
        return findings
    if _headings_only(stripped):
        findings.append(Finding("empty", f"headings with nothing under them ({stripped[:60]!r}): the summary was cut "
                                "off before any content, re-run compaction with a larger max_tokens"))
        return findings
    tags = _tags_only(stripped)
    if tags:
        shown = ", ".join(f"<{t}>" for t in tags[:4]) + (f" and {len(tags) - 4} more" if len(tags) > 4 else "")
        findings.append(Finding("empty", f"only the template's tags, with nothing inside them ({shown}): the "
                                "summarizer filled in nothing, re-run compaction"))
        return findings
    if _is_skeleton(stripped):
        if input_tokens is not None and input_tokens < settings.skeleton_min_input_tokens:
            findings.append(Finding("empty_skeleton", f"skeleton summary ('No prior history.') over a {input_tokens}-token input",
                                    failure=False))
        else:
            size = f"{input_tokens} tokens of history" if input_tokens is not None else "history of unknown size"
            findings.append(Finding("empty", f"OpenClaw's empty skeleton ('No prior history.' / 'None captured.') stored over "
                                    f"{size}; the summarizer got no messages, re-run compaction"))
    return findings


# ---------------------------------------------------------------------------
# Information left after the structure: a summary well formed and carrying nothing.
# ---------------------------------------------------------------------------
def _words_that_carry_nothing() -> frozenset:
    """The units no summary's information is in (bytes, CJK pairs as str): the words
    compactors write themselves (data/compaction_vocabulary.txt: their prompts' headings and
    instructions, their fallback texts, read from the real texts) and the words that say there
    is nothing (data/nothing_words.txt, in the 32 languages the guard is tested on)."""
    return _vocabulary()[0]


@lru_cache(maxsize=1)
def _skip_units() -> tuple:
    """(the units that are never content: the most frequent words of every language and the
    words both the template and work text use; the template's units; the two together)."""
    import string
    # the ASCII units under 3 bytes, never content: left out by the set operations themselves
    short = {(a + b).encode() for a in string.ascii_lowercase for b in [""] + list(string.ascii_lowercase)}
    common = common_units() | _vocabulary()[1] | short
    nothing = _words_that_carry_nothing()
    return common, nothing, common | nothing


def information_left(text: str, settings, extra: frozenset = frozenset(), enough: Optional[int] = None,
                     could_fire=None) -> tuple:
    """(content words, identifiers, count, template words): what `text` says once its structure
    is taken away. Its markup (headings' and lists' marks, labels' colons, fences, brackets) is
    punctuation, which the guard's word units drop; every unit among the most frequent words of
    a language (data/common_words.txt) or shorter than 3 bytes is left out too. Of the rest, a
    word compactors write themselves or a word saying there is nothing (above; `extra`: the
    words of the request, when known), or a word of a heading, label or tag (_label_units) is
    a template word; what remains is the distinct content words, and the identifiers
    (identifiers.scan: paths, ids, versions, figures with units; and dates, times, file and
    code names). `count` weighs content words and identifiers together; past `enough` the
    lists are not complete, nor the template count. `could_fire(count, template)`, if given,
    says whether a verdict could still need the identifiers (more of them only raise the
    count): when not, they are not looked for.

    Most summaries say plenty: the distinct units of their first characters less the never-content
    and template ones and those of their headings, labels and tags (set operations) number
    `enough` or more, and the text is read no further."""
    common, nothing, skip = _skip_units()
    enough = enough or (settings.empty_info_max_units + 1)
    labels = None
    # the distinct content units of a prefix are fewer than the whole text's: enough of them
    # there settles it without reading on (most summaries)
    # (units of other scripts cost more to make, and a shorter prefix holds enough of them in
    # most such texts: 77% at 160 characters against 36% of English; CJK units are character
    # pairs, many in a few characters: shorter prefixes first. Each prefix ends between units,
    # so every unit it holds is one of the text's: the first to hold enough decides as the
    # whole text would)
    gates = _GATES if text.isascii() else _CJK_GATES if _CJK_CHAR_RE.search(text, 0, _CJK_LOOK) else _OTHER_GATES
    for g in gates + (None,):
        if g is None:       # the whole text
            part = text
            seen = set(units(text)) if len(text) <= PIECE else {u for _, piece in pieces(text) for u in units(piece)}
        else:
            cut = _between_units(text, g) if len(text) > g else 0
            if not cut:
                continue
            part = text[:cut]
            seen = set(units(part))
        cand = seen.difference(skip)
        if extra:
            cand -= extra
        if len(cand) > enough:
            # what the labels take, read exactly (their lines found by a membership test each)
            if labels is None:
                labels = _label_units(text)
            left = cand - labels if labels else cand
            # (units of ASCII letters alone, as most are: those under 3 bytes are all in `skip`)
            if len(left) > enough - 1 if _letters_only(part) else _more_than(left, enough - 1):
                return [], [], enough, 0      # enough content units, whatever the rest holds
    # what remains, by set operations: the template's units present, the content ones
    if labels is None:
        labels = _label_units(text)
    template = seen.intersection(nothing)
    for more in (extra, labels):
        if more:
            template |= seen.intersection(more)
    template -= common
    content = {u for u in (cand - labels if labels else cand) if not isinstance(u, bytes) or len(u) > 2}
    template = {u for u in template if not isinstance(u, bytes) or len(u) > 2}
    # a script written without spaces (Thai, Lao, Khmer, Myanmar) makes a phrase one unit: it
    # counts as a word per _CHARS_PER_WORD characters
    weight = len(content)
    if content and max(map(len, content)) > _CHARS_PER_WORD:
        weight += sum(max(1, len(u.decode("utf-8", "replace")) // _CHARS_PER_WORD) - 1
                      for u in content if isinstance(u, bytes) and len(u) > _CHARS_PER_WORD)
    if weight >= enough or (could_fire is not None and not could_fire(weight, len(template))):
        return [], [], weight, len(template)
    words = _in_order(text, content, enough)
    idents = []
    found = [i for i, _ in scan(text)] + _MORE_NAMES_RE.findall(text)
    for ident in found:
        parts = units(ident)
        # an identifier made of the template's words ("Constraints/Rules") names nothing
        if ident not in idents and not (parts and all(u in nothing or u in extra for u in parts)):
            idents.append(ident)
            if weight + len(idents) >= enough:
                break
    return words, idents, weight + len(idents), len(template)


def _in_order(text: str, content: set, most: int) -> list:
    """The content units as words, in the order the text first uses them (at most `most`)."""
    out, done = [], set()
    for _, piece in pieces(text):
        for u in units(piece):
            if u in content and u not in done:
                done.add(u)
                out.append(u.decode("utf-8", "replace") if isinstance(u, bytes) else u)
                if len(out) >= most:
                    return out
    return out


_GATES = (320,)
_OTHER_GATES = (160, 320)
_CJK_GATES = (64, 160, 320)
_CJK_LOOK = 96      # (a text with CJK in its first characters)
# what ends a word unit (overlap.units): ASCII separators, digits and whitespace; CJK and wide
# punctuation outside ASCII
_ASCII_BREAKS = frozenset(SEPARATORS.decode() + " \t\n\x0b\x0c\r")
_BREAK_CLASS = "[" + re.escape("".join(sorted(_ASCII_BREAKS))) + CJK_CLASS + WIDE_PUNCT_RE.pattern[1:-1] + "]"
# the last such character of a piece of text: `.*` takes the whole piece, then gives it back a
# character at a time until one is a break (the piece read from its end, in C)
_LAST_BREAK_RE = re.compile("(?s:.*)" + _BREAK_CLASS)


def _between_units(text: str, g: int) -> int:
    """The greatest cut at most `g` characters into `text` where no word unit goes on across it
    (a character on either side ends units), looked for over 64 characters; 0 if none. With k the
    last break among text[g - 64:g + 1], that is k + 1 (a break before the cut), or g when k is g."""
    lo = max(0, g - 64)
    m = _LAST_BREAK_RE.match(text, lo, g + 1)
    return 0 if m is None else min(g, m.end())


# The ASCII bytes a word unit can hold besides lowercase letters (overlap.units lowers the text and
# makes separators and digits spaces; bytes.split leaves these controls in): all others, to delete
_ALL_BUT_UNIT_CONTROLS = bytes(b for b in range(256) if not (b < 0x09 or 0x0e <= b <= 0x1f or b == 0x7f))


def _letters_only(text: str) -> bool:
    """Whether every word unit of `text` is ASCII letters: then each unit under 3 bytes is one
    of the short ones _skip_units leaves out."""
    return text.isascii() and not text.encode("ascii").translate(None, _ALL_BUT_UNIT_CONTROLS)


def _more_than(cand: set, n: int) -> bool:
    """Whether more than `n` of the units are 3 bytes or more (or CJK pairs): counted until known."""
    if len(cand) <= n:
        return False
    k = 0
    for u in itertools.islice(cand, 4 * (n + 1)):     # most units count: a few looked at settle it
        if not isinstance(u, bytes) or len(u) > 2:
            k += 1
            if k > n:
                return True
    if sum(map((2).__lt__, map(len, cand))) > n:     # 3 units or characters or more, counted in C
        return True
    k = 0
    for u in cand:
        if not isinstance(u, bytes) or len(u) > 2:
            k += 1
            if k > n:
                return True
    return False


# A heading, a bold label or a field label ("Goal:") alone on its line, of at most _LABEL_WORDS
# words and no digit: the template's structure, in whatever language it is written ("## Offene
# Punkte", "**Цель**:"); a longer one ("## Migrate billing to Stripe"), one with a figure or an
# id ("SUP-38920:", "# 1. 2017-05-01 ...") or a label before its value ("Sprint board: 12
# done") says something.
_LABEL_RE = re.compile(r"^[ \t]*(?:[-*+>][ \t]+|\d+[.)][ \t]+)?(?:#{1,6}[ \t]+([^\n]{1,60}?)[ \t]*#*"
                       r"|\*\*([^*\n]{1,60})\*\*[ \t]*:?|([^\W\d_][^:\n]{0,40}?)[ \t]*:)[ \t]*$", re.M)
_DIGIT_RE = re.compile(r"\d")
_LABEL_WORDS = 3
_COLON_END_RE = re.compile(r":[ \t]*$", re.M)


# the name of a markup tag (`<conversation>`, `</summary>`, `<answer-date>`): structure
_TAG_NAME_RE = re.compile(r"</?([A-Za-z][\w:.-]{0,40})(?:\s[^<>\n]{0,200})?/?>")


def _label_units(text: str) -> frozenset:
    out = set()
    if "<" in text:
        for m in _TAG_NAME_RE.finditer(text):
            out.update(units(m.group(1)))
    # a label is a whole line (_LABEL_RE matches within one): only a line holding a `#`, or
    # ending on a colon or `**`, can be one (a membership test and an endswith per line); a
    # text with no `#`, no `**` and no line ending on a colon has none
    # ("*" first: a search for one character is found in C a word at a time)
    if "#" not in text and ("*" not in text or "**" not in text) and not _COLON_END_RE.search(text):
        return frozenset(out)
    for line in text.split("\n"):
        if "#" not in line and not line.rstrip(" \t").endswith((":", "**")):
            continue
        m = _LABEL_RE.match(line)
        if m is None:
            continue
        label = m.group(1) or m.group(2) or m.group(3)
        if label and len(label.split()) <= _LABEL_WORDS and not _DIGIT_RE.search(label):
            out.update(units(label))
    return frozenset(out)


# a date or a time of day (names a moment of the history), a bare file name (`a.py`,
# `config.yaml`; not `e.g.`), a snake_case or camelCase name (`updated_at`, `authMiddleware`):
# identifiers.scan wants a path or a longer name. Each starts where no word character stands
# before it: said once, up front, the other branches are not tried inside a word (1.4x faster)
_MORE_NAMES_RE = re.compile(r"(?<!\w)(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?\b|\d{1,2}:\d{2}(?::\d{2})?\b"
                            r"|(?<![\w.])[\w-]+\.[A-Za-z][A-Za-z0-9]{1,5}(?![\w.])"
                            r"|[A-Za-z][a-z0-9]*(?:_[A-Za-z0-9]+)+\b|[a-z]+[A-Z][A-Za-z0-9]*\b)")


_CHARS_PER_WORD = 12
_FENCE_OPEN_RE = re.compile(r"^\s*(```|~~~)", re.M)


# a word mixing letters with digits or underscores (MAX_RETRIES, h264, build42), or a
# number of two digits or more: what a short history names that a summary must carry
_CODE_WORD_RE = re.compile(r"(?<![\w.])(?=[\w.]*[^\W\d_])(?=[\w.]*[\d_])[^\W_][\w.]*\w|(?<![\w.])\d[\d.,:]*\d(?![\w])")


def specifics_of(history: str, settings) -> tuple:
    """(specifics, content words) of a history: its identifiers (identifiers.scan), dates,
    times, file and code names (information_left), words mixing letters with digits or
    underscores, numbers of two digits or more (not those inside a specific listed before
    them); and its content words (words no language uses often, not the compactors' own)."""
    words, idents, _, _ = information_left(history, settings, enough=1 << 30)
    specifics = []
    for x in dict.fromkeys(idents + [m.group(0) for m in _CODE_WORD_RE.finditer(history)]):
        if not any(x in y for y in specifics):
            specifics.append(x)
    return specifics, words


def _kept(specific: str, flat: str) -> bool:
    return "".join(specific.lower().split()) in flat


def dropped_of_short_history(content: str, view, settings) -> tuple:
    """(the specifics a history held that `content` does not carry, when they number
    empty_info_short_min_dropped or more, else []; the history's content words when `content`
    shares none of them and they number empty_info_short_min_words or more, else []): what
    makes an information-free text over a short history a failure, not a warning."""
    if view is None:
        return [], []
    specifics, words = specifics_of(view.text, settings)
    flat = "".join(content.lower().split())
    dropped = [x for x in specifics if not _kept(x, flat)]
    if len(dropped) < settings.empty_info_short_min_dropped:
        dropped = []
    unheard = []
    if len(words) >= settings.empty_info_short_min_words:
        mine = set(units(content))
        if not any(u in mine for w in words for u in units(w)):
            unheard = words
    return dropped, unheard


def carries_nothing(content: str, settings, view, input_tokens: Optional[int] = None,
                    extra: frozenset = frozenset(), previous: Optional[str] = None) -> list:
    """`empty` for a few words (at most empty_info_echo_max_units content words and
    identifiers) that carry nothing of a known history that held specifics: none of its
    specifics, and not one of its content words (nor the previous summary's). A statement of
    intent ("I'll start by checking the configuration."), a preamble in another language
    ("让我继续分析"), an acknowledgement: in any language and at any history size, as it
    compares words and names, it does not read them. Judged only when the text seen is at
    least empty_info_min_seen_share of what the store says was condensed."""
    content = strip_reasoning(content).text
    if not content.strip() or carried_forward(content, previous):
        return []
    words, idents, n, template = information_left(content, settings, extra,
                                                  enough=settings.empty_info_echo_max_units + 1)
    if n > settings.empty_info_echo_max_units:
        return []
    if input_tokens and view.tokens < settings.empty_info_min_seen_share * input_tokens:
        return []
    specifics, _ = specifics_of(view.text, settings)
    flat = "".join(content.lower().split())
    if not specifics or any(_kept(x, flat) for x in specifics):
        return []
    mine = set(units(content))
    have = view.unit_set | (frozenset(units(previous)) if previous else frozenset())
    if any(u in have for u in mine if u in _content_units(content, settings, extra)):
        return []
    size = f"{input_tokens}-token history" if input_tokens else f"{view.tokens}-token history"
    figures = {"content_units": n, "history_specifics": len(specifics), "shared_words": 0}
    share = template / (template + n) if template + n else 1.0
    if idents or (n > settings.empty_info_max_units and share <= settings.empty_info_min_template_share):
        # names and words of its own: about something else, not nothing
        said = ", ".join(repr(w) for w in (idents[:3] + words[:4]))
        return [Finding("ungrounded", f"none of its words ({said}) occurs in the {size} it stands for, and it keeps "
                        f"none of the {len(specifics)} specific(s) the history held "
                        f"({', '.join(repr(x) for x in specifics[:5])}): it is about something else; re-run "
                        "compaction", figures=figures)]
    return [Finding("empty", f"carries nothing of the {size} it stands for: not one of its words occurs there, and "
                    f"it keeps none of the {len(specifics)} specific(s) the history held "
                    f"({', '.join(repr(x) for x in specifics[:5])}): a reply, a statement of intent or a tool call's "
                    "preamble stored as the summary; re-run compaction", figures=figures)]


def _content_units(content: str, settings, extra: frozenset) -> frozenset:
    """The units of `content` that are content (not common in any language, not the
    compactors' own words): the ones whose presence in a history means something."""
    common, nothing, skip = _skip_units()
    return frozenset(u for u in units(content) if u not in skip and u not in extra)


def _short_history_failure(what: str, input_tokens: int, dropped: list, unheard: list, figures: dict) -> Finding:
    held = []
    if dropped:
        held.append(f"{len(dropped)} specific(s) ({', '.join(repr(x) for x in dropped[:5])})")
    if unheard:
        held.append(f"{len(unheard)} content words ({', '.join(repr(x) for x in unheard[:5])})")
    figures = dict(figures, history_tokens=input_tokens, dropped_specifics=len(dropped), unshared_words=len(unheard),
                   form="preamble")
    return Finding("empty", f"information-free ({what}) over a {input_tokens}-token history that held "
                   f"{' and '.join(held)}, none of which it carries: a reply or a tool call's preamble stored as "
                   "the summary, not a summary; re-run compaction", figures=figures)


def carried_forward(content: str, previous: Optional[str]) -> bool:
    """Whether `content` is what the previous summary already said (whitespace aside): carried
    forward, not judged against the history (staleness is stale's to say)."""
    if not previous:
        return False
    mine = " ".join(content.split())
    return bool(mine) and mine in " ".join(previous.split())


def information_free(content: str, settings, input_tokens: Optional[int] = None, extra: frozenset = frozenset(),
                     reasoning: Optional[Reasoning] = None, view=None, previous: Optional[str] = None) -> list:
    """`empty` for a summary that carries nothing once its structure is taken away (see
    information_left): a template whose every section says "none" in its own words, a sentence
    that the conversation was empty or that no task was given, a summary about summarizing, a
    heading or an opened fence and then nothing, wrappers nested around a line of bookkeeping,
    a fallback worded as a sentence with message counts. Over a history under
    empty_info_min_input_tokens it is a warning (a greeting summarized as a greeting). `reasoning`:
    strip_reasoning(content), when the caller has it."""
    content = (reasoning or strip_reasoning(content)).text       # reasoning before the summary is not the summary

    def fires(n: int, template: int) -> bool:
        # a few words of the work ("Es un error en el espacio de almacenamiento", "Set up the
        # repo and CI. Added the parser and 40 tests.") are a short summary; the same few among
        # more of the request's words and of "nothing" are text about the conversation, the
        # summary or the summarizer; a text made mostly of the request's words restates it
        share = template / (template + n) if template + n else 1.0
        return n <= 1 or (n <= settings.empty_info_max_units and share > settings.empty_info_min_template_share) \
            or (n <= settings.empty_info_echo_max_units and share >= settings.empty_info_echo_min_template_share)
    words, idents, n, template = information_left(content, settings, extra,
                                                  enough=max(settings.empty_info_max_units,
                                                             settings.empty_info_echo_max_units) + 1,
                                                  could_fire=fires)
    if not fires(n, template):
        return []
    share = template / (template + n) if template + n else 1.0
    said = [repr(w) for w in words[:6]] + [repr(i) for i in idents[:3]]
    what = f"says only {', '.join(said)}" if said else "says nothing at all"
    shape = _shape(content)
    figures = {"content_words": len(words), "identifiers": len(idents), "template_share": round(share, 3)}
    if input_tokens is not None and input_tokens < settings.empty_info_min_input_tokens:
        dropped, unheard = dropped_of_short_history(content, view, settings) \
            if not carried_forward(content, previous) else ([], [])
        if dropped or unheard:
            return [_short_history_failure(f"{shape}{what}", input_tokens, dropped, unheard, figures)]
        return [Finding("empty_info", f"information-free ({shape}{what}) over a {input_tokens}-token history: "
                        "fine if the history held nothing more", failure=False, figures=figures)]
    size = f"{input_tokens} tokens of history" if input_tokens is not None else "a history of unknown size"
    held = _held_identifiers(content, view)
    held = f"; the history held {', '.join(repr(i) for i in held)}, ..." if held else ""
    return [Finding("empty", f"information-free: once its headings, labels, negations and the words compactors "
                    f"write themselves are taken away, it {what} ({shape}{len(words)} content words, {len(idents)} "
                    f"identifiers) over {size}{held}; the summarizer was given no conversation or wrote about the "
                    "request instead of it, re-run compaction", figures=figures)]


def _held_identifiers(content: str, view, most: int = 5) -> list:
    """The history's identifiers a summary does not carry, most used first (for a reason: read
    only when a failure is reported)."""
    if view is None:
        return []
    from .identifiers import scan
    flat = "".join(content.lower().split())
    found = view.identifiers(scan)
    ranked = sorted(found, key=lambda i: -found[i][1])
    return [i for i in ranked if not _kept(i, flat)][:most]


_NEST_RE = re.compile(r"^(\s*)(?:[-*+]\s+)?([^\n]{3,60}?:)\s*$", re.M)


def _shape(content: str) -> str:
    """What the text's structure is, for the reason: nested wrappers (the same label line at
    growing indentation), a fence opened and never closed, or nothing to say."""
    labels = {}
    for m in _NEST_RE.finditer(content):
        labels.setdefault(m.group(2).strip().lower(), set()).add(len(m.group(1)))
    depth = max((len(v) for v in labels.values()), default=0)
    if depth >= 3:
        return f"a wrapper nested {depth} deep, "
    fences = len(_FENCE_OPEN_RE.findall(content))
    if fences % 2 == 1:
        return "a code fence opened and never closed, "
    return ""


def too_little(content: str, settings, view, input_tokens: Optional[int] = None, extra: frozenset = frozenset(),
               previous: Optional[str] = None) -> list:
    """`empty` for a few words and no name of anything (at most empty_info_max_units content
    words once the structure is taken away, no identifier) standing for a history of
    ungrounded_specific_min_history_tokens or more whose text is known (at least
    empty_info_min_seen_share of what the store says was condensed): a tool call's preamble
    ("Let me check the logs."), a reply, not a summary of thousands of tokens. In any
    language: it counts words, it does not read them. A summary the previous one already
    said is carried forward, not judged here."""
    content = strip_reasoning(content).text
    seen = view.tokens
    if seen < settings.ungrounded_specific_min_history_tokens or (
            input_tokens and seen < settings.empty_info_min_seen_share * input_tokens):
        return []
    if previous and content.strip() and content.strip() in previous:
        return []
    words, idents, n, _ = information_left(content, settings, extra, enough=settings.empty_info_max_units + 1)
    if n > settings.empty_info_max_units or idents:
        return []
    said = ", ".join(repr(w) for w in words) or "nothing"
    return [Finding("empty", f"information-free: it carries {n} content word(s) ({said}) and no identifier for the "
                    f"{input_tokens or seen}-token history it stands for: a reply or a tool call's preamble, not a "
                    "summary; re-run compaction", figures={"content_words": n, "identifiers": 0, "history_tokens": seen,
                                                         "form": "preamble"})]


def none_of_the_history(content: str, settings, view, input_tokens: Optional[int] = None,
                        extra: frozenset = frozenset(), previous: Optional[str] = None) -> list:
    """A summary that carries nothing of the history it stands for (the history's text known,
    of the summary's language: the caller checks). Once its structure, the compactors' words
    and the words of "nothing" are taken away (information_left):
    - a few content words and identifiers (under ungrounded_min_units), none of which occurs in
      the history: mostly the template's words, `empty` (text about the conversation or the
      request); otherwise `ungrounded` (a few words about something else);
    - or text mostly of the template's words (more than empty_info_min_template_share) of whose
      other words at most empty_info_max_history_share occur in the history: `empty` (a
      meta-statement: "The user's goal is to continue the conversation ...").
    What the previous summary said is the history too ("still blocked on OPS-12" carried
    forward). Judged only when the text seen is at least empty_info_min_seen_share of the
    tokens the store says were condensed. Over a history under empty_info_min_input_tokens,
    which may hold nothing more, a warning."""
    from .identifiers import Finder
    content = strip_reasoning(content).text
    words, idents, n, template = information_left(content, settings, extra, enough=1 << 30)
    if not n:
        return []
    share = template / (template + n)
    short = n < settings.ungrounded_min_units
    if not short and share <= settings.empty_info_min_template_share:
        return []
    have = view.unit_set
    before = frozenset(units(previous)) if previous else frozenset()
    allowed = 0 if short and share <= settings.empty_info_min_template_share \
        else int(settings.empty_info_max_history_share * n)
    found_in = Finder(view, settings.identifiers_max_searches)
    found = 0
    for w in words:
        if any(u in have or u in before for u in units(w)):
            found += 1
            if found > allowed:
                return []
    for i in idents:
        if found_in(i) or (previous and i in previous):
            found += 1
            if found > allowed:
                return []
    if input_tokens and view.tokens < settings.empty_info_min_seen_share * input_tokens:
        return []       # the text seen is a part of the history: what the rest held is unknown
    said = ", ".join(repr(w) for w in (words[:6] + idents[:3]))
    figures = {"content_words": len(words), "identifiers": len(idents), "template_share": round(share, 3),
               "shared_with_history": found}
    shared = "none of it occurs" if not found else f"only {found} of its {n} content words occur"
    if input_tokens is not None and input_tokens < settings.empty_info_min_input_tokens:
        if share > settings.empty_info_min_template_share:
            dropped, unheard = dropped_of_short_history(content, view, settings)
            if dropped or unheard:
                return [_short_history_failure(f"{said}: {shared} in it", input_tokens, dropped, unheard, figures)]
        return [Finding("empty_info", f"carries little of its {input_tokens}-token history ({said}: {shared} in "
                        "it): fine if the history held nothing more", failure=False, figures=figures)]
    size = f"{input_tokens}-token history" if input_tokens is not None else "history"
    if share > settings.empty_info_min_template_share:
        return [Finding("empty", f"carries nothing of the {size} it stands for: {share:.0%} of its words are headings, "
                        f"labels, negations and the words compactors write themselves; of the rest ({said}) {shared} in "
                        "the history: text about the conversation or the request, not a summary of it; the summarizer "
                        "was given no conversation or wrote about the request instead, re-run compaction",
                        figures=figures)]
    return [Finding("ungrounded", f"none of its few content words ({said}) occurs in the {size} it stands for: it is "
                    "about something else; re-run compaction", figures=figures)]


def answered_nothing(content: str) -> Finding:
    """`empty` for stored text over a blank answer: the agent kept the compaction model's own
    answer apart from what it stored (SummaryRecord.answer), the answer was blank, and the agent
    stored something else in its place (Codex 0.171 stores the thread's last reply)."""
    first = " ".join(content.split())[:60]
    return Finding("empty", f"the compaction model answered nothing (the agent kept its blank answer) and the agent "
                   f"stored other text in its place ({first!r}): not a summary of the history, re-run compaction",
                   figures={"answer_blank": True})
