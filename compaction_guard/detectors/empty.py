"""empty: a summary that carries nothing.

Blank or near-blank text (the seed's "under 10 characters"), and the real forms
that pass a length test: placeholders, OpenClaw's "No prior history." skeleton,
refusals, error text stored as the summary, and reasoning with no summary after
it. Each form is a named, commented pattern; reasoning blocks are found by
reasoning.strip_reasoning, which the LLM client shares.
"""
from __future__ import annotations

import re
from typing import Optional

from ..findings import Finding
from ..reasoning import strip_reasoning
from ..tokens import CJK_CLASS

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
SKELETON_BODY_RE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:no prior history|none captured|none recorded|none yet|none|n/?a|"
    r"nothing(?: to report| yet)?|\(none\)|no (?:decisions|todos|constraints|identifiers|"
    r"pending (?:user )?asks)(?: yet| recorded| captured)?|—|-|"
    # "none" in the other languages the guard is tested on (a template filled with nothing)
    r"无|暂无|没有|なし|特になし|없음|нет|ничего|keine[rs]?|nichts|aucune?|rien|ninguno|ninguna|nada|"
    r"nenhum|nenhuma|brak|nessuno|nessuna|geen|لا يوجد|אין)\s*[.。]?\s*$",
    re.I,
)
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
_INFORMATIVE_RE = re.compile(r"[^\W_]", re.U)
_CJK_CHAR_RE = re.compile(f"[{CJK_CLASS}]")
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
            n += len(_INFORMATIVE_RE.findall(part))
            if n < enough:      # a CJK character counts twice more (certain already otherwise)
                n += 2 * len(_CJK_CHAR_RE.findall(part))
        if n >= enough:
            break
    return n


# a heading or a label: short, and not a sentence ("# 1. 2017-05-01 ... を実行。" is content)
_LABEL_LINE_RE = re.compile(r"^\s*(?:#{1,6}\s+[^\n]{1,60}(?<![.。!?！？])|\*\*[^*]+\*\*\s*:?|[^\W\d_][^:\n]{0,40}:)\s*$")


def _headings_only(text: str) -> bool:
    """Headings or labels ("## Decisions", "**Summary:**", "Open TODOs:") and nothing
    else: a summary cut off before its first line of content."""
    if len(text) > 400:
        return False
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    if not _LABEL_LINE_RE.match(first.strip()):        # the first line says already
        return False
    lines = [ln.strip() for ln in lines if ln.strip()]
    # distinct, digits aside: headings looping ("### 1.1.1", "### 1.1.1.1", ...) are a
    # loop (repetition), not an empty summary
    if not lines or not all(_LABEL_LINE_RE.match(ln) for ln in lines):
        return False
    return len({re.sub(r"\d+", "0", ln) for ln in lines}) == len(lines)


def _is_skeleton(text: str) -> bool:
    if len(text) > 3000 or ("#" not in text and "**" not in text):
        return False
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or len(lines) > 40:
        return False
    # every line a skeleton's body line ('None captured.') or else a heading; at least one of each
    headings = body = 0
    for ln in lines:
        if SKELETON_BODY_RE.match(ln):
            body += 1
        elif HEADING_RE.match(ln):
            headings += 1
        else:
            return False
    return headings > 0 and body > 0


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


def unfilled_template(text: str, settings, input_text: Optional[str] = None) -> list:
    """The `empty` finding for a summary that is the prompt's template with its placeholders
    left in (see above); placeholders the input also has (a conversation about a template)
    do not count."""
    if text.count("[") < settings.empty_min_placeholders:      # each placeholder line holds one
        return []
    placeholders, content, shown = 0, 0, []
    for ln in text.splitlines():
        if not _LETTER_RE.search(ln) or _LABEL_LINE_RE.match(ln) or HEADING_RE.match(ln) or _LONE_TAG_RE.match(ln):
            continue
        content += 1
        body = ln[_ITEM_MARK_RE.match(ln).end():].strip()
        m = _PLACEHOLDER_LINE_RE.fullmatch(body)
        if m and not _NOT_WORDS_RE.search(m.group(1)) and not (input_text and m.group(0).rstrip(".:;, ") in input_text):
            placeholders += 1
            if len(shown) < 3 and body not in shown:
                shown.append(body)
    if placeholders < settings.empty_min_placeholders or placeholders < settings.empty_placeholder_share * content:
        return []
    return [Finding("empty", f"an unfilled template: {placeholders} of its {content} lines are placeholders "
                    f"({', '.join(repr(x[:50]) for x in shown)}): the model wrote the prompt's format back instead of "
                    "filling it in; re-run compaction", figures={"placeholder_lines": placeholders,
                                                                 "content_lines": content})]


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


def detect(content: str, settings, input_tokens: Optional[int] = None, input_text: Optional[str] = None) -> list:
    findings = []
    reasoning = strip_reasoning(content)
    text = reasoning.text
    if reasoning.kind:
        if not text.strip() or informative_chars(text, settings.min_summary_chars) < settings.min_summary_chars:
            how = {"unclosed": "an unclosed reasoning block", "header": "plain-text reasoning ('Thinking Process:')",
                   "closed": "a reasoning block", "stray-close": "reasoning before a stray closing tag"}[reasoning.kind]
            return [Finding("empty", f"reasoning only: {how} ({reasoning.reasoning_chars} chars) with no summary after it; "
                            "raise the summarizer's max_tokens or turn its reasoning off",
                            figures={"reasoning_chars": reasoning.reasoning_chars})]
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
                                    f"{stripped[:60]!r}); the history it replaced is not in it, re-run compaction"))
            return findings
    if len(stripped) <= settings.max_error_text_chars:
        m = ERROR_START_RE.match(stripped) or (
            len(stripped) <= settings.max_generic_error_chars and GENERIC_ERROR_RE.match(stripped)
            and not (BARE_ERROR_RE.match(stripped) and _NEXT_SENTENCE_RE.search(stripped))
            and not grounded(stripped, input_text, settings))
        if m:
            findings.append(Finding("empty", f"error text stored as the summary ({stripped.splitlines()[0][:70]!r}); "
                                    "fix the summarizer's provider and re-run compaction"))
            return findings
    if len(stripped) <= settings.max_refusal_chars and REFUSAL_START_RE.match(stripped) \
            and not grounded(stripped, input_text, settings):
        findings.append(Finding("empty", f"the model refused instead of summarizing ({stripped[:60]!r}); "
                                "re-run with another model or the aggressive prompt"))
        return findings
    if len(stripped) <= settings.max_placeholder_chars and EMPTY_STATEMENT_RE.match(stripped) and (
            input_tokens is None or input_tokens >= settings.skeleton_min_input_tokens):
        size = f"{input_tokens} tokens of history" if input_tokens is not None else "history of unknown size"
        findings.append(Finding("empty", f"the summary says there was nothing ({stripped[:60]!r}) over {size}; "
                                "the summarizer got no messages, re-run compaction"))
        return findings
    if _headings_only(stripped):
        findings.append(Finding("empty", f"headings with nothing under them ({stripped[:60]!r}): the summary was cut "
                                "off before any content, re-run compaction with a larger max_tokens"))
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
