"""garbled: text that is not language: noise, bytes read as text, mojibake.

The seed's signal (character entropy > 5.0) flags nearly every Chinese or Japanese
sentence and misses mojibake, so it is reported, not trusted. Instead each kind of
noise is a named pattern that marks "junk" spans (ftfy's badness.py is the model);
a summary is garbled when junk covers `garbled_min_share` of it, when one junk
region is `garbled_min_run_chars` long (a good start with a garbage tail), or when
it holds `mojibake_min_sequences` mojibake sequences. Every pattern runs as one
C-level regex over the text; Python only looks at the few candidates it returns.
Cheaper gates first say which patterns can match at all (counts of ASCII bytes with
bytes.translate, one character class within 16 bits for the non-Latin-1 suspects, the
UTF-8's byte kinds for two Latin-1 characters in a row): most text runs none of them.
Where a pattern would test a character class at every position of ordinary text (inner
symbols, base64 runs), its matches are read off the text's bytes instead (translations,
substring searches, big-integer masks): a regex engine that tests a class at every
character mispredicts its branches, and costs more than its instructions say.
"""
from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from typing import Optional

from ..findings import Finding
from ..tokens import OTHER_DIGIT_LEADS, pieces, seed_entropy, shannon_entropy
from .unicode_data import script_name as _script_name, scripts as _read_script_table

# --- named junk patterns ----------------------------------------------------------

# U+FFFD: bytes that failed to decode, replaced. Runs of it, or words holding it.
REPLACEMENT_RE = re.compile("\ufffd")

# C0/C1 control characters (not tab/newline/CR): raw bytes decoded as latin-1.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# Runs of Latin-1 Supplement characters with no ASCII letter between them ("¡¢£¤¥",
# "ÀÁÂÃ"): bytes read as latin-1. Accented letters in real words sit next to ASCII ones.
LATIN1_RUN_RE = re.compile("[\u00a0-\u00ff]{4,}")

# Byte-level BPE pieces printed raw (GPT-2/Llama-3 'Ġ' for space, 'Ċ' for newline,
# 'ĉ' for tab, SentencePiece '▁'): a tokenizer's vocabulary leaking instead of
# decoded text. The same letters are Maltese (Ġimgħa, Ċensu) and Esperanto (ĉiuj), so
# what counts is density: a leak puts a piece before most words (see _piece_spans).
TOKENIZER_RE = re.compile(r"[\u0120\u010a\u0109\u2581][a-zA-Z0-9]|[a-zA-Z][\u0120\u010a\u2581]")

# Runs of integers: token ids dumped instead of decoded.
def _counting(run: str) -> bool:
    """Integers that count (12, 13, 14, ...: most steps equal) are a loop through a
    counter, not token ids, which jump about."""
    nums = [int(x) for x in _DIGITS_RE.findall(run)]
    steps = [b - a for a, b in zip(nums, nums[1:])]
    return bool(steps) and Counter(steps).most_common(1)[0][1] >= 0.8 * len(steps)


def _token_id_re(n: int):
    # starts with \d so the engine skips to digits; the char before is checked after
    return re.compile(r"\d{1,6}(?:[ ,\t]+\d{1,6}){%d,}(?![\w.])" % (n - 1))

# Mojibake: a UTF-8 lead byte followed by continuation bytes, each read as cp1252 or
# latin-1. Lead bytes 0xC2-0xF4 read as 'Â'..'ô'; continuation bytes 0x80-0xBF read
# as cp1252 punctuation ('€', '™', '“', ...), latin-1 C1 controls, or U+00A0-U+00BF.
_CONT = "\u0080-\u00bf\u20ac\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u017d" \
        "\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u017e\u0178"
MOJIBAKE_RE = re.compile(
    f"[\u00c2-\u00df][{_CONT}]|[\u00e0-\u00ef][{_CONT}]{{2}}|[\u00f0-\u00f4][{_CONT}]{{3}}"
)
# Every match starts so (one character class: the regex engine skips to it in C): a gate.
_MOJIBAKE_START_RE = re.compile(f"[\u00c2-\u00f4][{_CONT}]")
# The same bytes as a byte-level BPE vocabulary prints them: 'ãĥ¦' for one Japanese
# character. GPT-2's byte map keeps 0xA1-0xAC and 0xAE-0xBF as themselves and puts the
# other continuation bytes, 0x80-0xA0 and 0xAD, at U+0122-U+0143 (U+0100-U+0121 are
# bytes 0x00-0x20 and 0x7F, never inside a character); a lead byte takes exactly its
# count of them. Turkish `çığ` or Polish `ąę` are letters, not bytes: `ğ` is byte 0x1F.
_BPE_CONT = "\u00a1-\u00ac\u00ae-\u00bf\u0122-\u0143"
BPE_BYTES_RE = re.compile(
    f"[\u00c2-\u00df][{_BPE_CONT}]|[\u00e0-\u00ef][{_BPE_CONT}]{{2}}|[\u00f0-\u00f4][{_BPE_CONT}]{{3}}")
# a match kept: one holding a piece of U+0100-U+0143
_BPE_PIECE_RE = re.compile("[\u0100-\u0143]")
# The same on the text's UTF-8: a lead U+00C2-U+00F4 is C3 82-B4; a continuation U+00A1-U+00AC or
# U+00AE-U+00BF is C2 A1-AC or C2 AE-BF, U+0122-U+0143 is C4 A2-BF or C5 80-83 (a match holding
# U+0100-U+0143, the ones kept, holds a C4 or C5 byte)
_BPE_CONT_UTF8 = rb"(?:\xc2[\xa1-\xac\xae-\xbf]|\xc4[\xa2-\xbf]|\xc5[\x80-\x83])"
BPE_BYTES_UTF8_RE = re.compile(rb"\xc3(?:[\x82-\x9f]%s|[\xa0-\xaf]%s{2}|[\xb0-\xb4]%s{3})"
                               % (_BPE_CONT_UTF8, _BPE_CONT_UTF8, _BPE_CONT_UTF8))

# Long base64-alphabet tokens with mixed case and digits: encoded blobs, random
# keys. Hex-only strings (SHAs, UUIDs, hashes) never match: they lack mixed case.
BASE64_CANDIDATE_RE = re.compile(r"[A-Za-z0-9+/=_-](?<![A-Za-z0-9+/=_-][A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{39,}")

# Symbols interleaved with short letter/digit runs: random printable characters.
# Path, version and JSON punctuation (/ . - _ : quotes commas) is not counted here.
RANDOM_CANDIDATE_RE = re.compile(
    r"[!@#$%^&*()+={}\[\]|\\;<>?~`][A-Za-z0-9]{1,3}[!@#$%^&*()+={}\[\]|\\;<>?~`][A-Za-z0-9]{0,3}"
    r"[!@#$%^&*()+={}\[\]|\\;<>?~`]"
)

# No keyboard-mash rule. Consonant-run and vowel-less word rules flagged German
# compounds (selbstständig), tool names (xzgrep, zstd, lzop) and needed a whitelist;
# no real model output in tests/corpus/real shows mash. Random letters still count
# when they come with symbols, bytes or foreign scripts (the patterns below).


# Characters from blocks that ordinary text in any language rarely uses
# (private use, runic, Glagolitic, Vai, Braille, supplementary planes below the
# emoji, CJK extension B+): two or more in one word is random Unicode.
_RARE_BMP = "\ue000-\uf8ff\u16a0-\u16ff\u1d00-\u1dbf\u2c00-\u2c5f\ua500-\ua69f\ua720-\ua7ff\u2800-\u28ff" \
    "\u2b00-\u2bff\u2900-\u2aff"
_RARE_ASTRAL = "\U00010000-\U0001efff\U00020000-\U0002fa1f"
RARE_CHAR_RE = re.compile(f"[{_RARE_BMP}{_RARE_ASTRAL}]")

# Random printable ASCII: symbols inside words. Counted per window of
# garbled_window_chars; a window is junk when symbols sit inside its words (at least
# garbled_window_min_inner of its characters) and the character entropy of its ASCII
# characters (the seed's signal, measured locally) is at least
# garbled_window_min_entropy: English windows measure 4.0-4.6, code and identifiers up
# to 5.3, noise 5.6+. Only ASCII counts: CJK text with bold prefixes (`**问题：**`) has
# symbols beside its characters and a high entropy of its own, and is not noise.
# Inline `code` is left out first: quoted commands and regexes are not noise.
INNER_SYMBOL_RE = re.compile(r"[!#$%^&*()+={}\[\]|\\;\"<>,?~`](?<=[!-~][!#$%^&*()+={}\[\]|\\;\"<>,?~`])(?=[!-~])")
_INLINE_CODE_RE = re.compile(r"`[^`\n]{1,60}`")


# ASCII characters as their class (digit, upper, lower, other), for runs of one class to be found in C
_CLASS_TABLE = str.maketrans({chr(b): "0" if chr(b).isdigit() else "1" if chr(b).isupper() else "2"
                              if chr(b).islower() else "3" for b in range(128)})
_RUN_RE = re.compile(r"(.)\1*", re.S)


def _class_switch_rate(tok: str) -> float:
    """How often the character class (digit, upper, lower, other) changes from one
    character to the next, per pair."""
    if tok.isascii():       # switches are the runs of one class, less one
        return max(0, len(_RUN_RE.findall(tok.translate(_CLASS_TABLE))) - 1) / max(1, len(tok) - 1)
    return _class_switch_rate_slow(tok)


def _class_switch_rate_slow(tok: str) -> float:
    def cls(c):
        if c.isdigit():
            return 0
        if c.isupper():
            return 1
        if c.islower():
            return 2
        return 3
    classes = [cls(c) for c in tok]
    switches = sum(1 for a, b in zip(classes, classes[1:]) if a != b)
    return switches / max(1, len(tok) - 1)


_UPPER_RE = re.compile(r"[A-Z]")
_LOWER_RE = re.compile(r"[a-z]")
_ASCII_DIGIT_RE = re.compile(r"[0-9]")


def _is_base64_noise(text: str, start: int, end: int) -> bool:
    """A long base64-alphabet run with case chaos, not part of a URL or path."""
    tok_start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start)) + 1
    # URLs and home/relative paths; a blob may start with "/" (a base64 digit), so that alone proves nothing
    if "://" in text[tok_start:end] or text[tok_start:start + 1][:1] in "~.":
        return False
    core = text[start:end].strip("=")
    if not (_UPPER_RE.search(core) and _LOWER_RE.search(core) and _ASCII_DIGIT_RE.search(core)):
        return False
    # the case chaos is measured inside the pieces a hyphen or an underscore joins: words
    # joined into a name (`0001-Use-g_strjoinv-instead-of-g_strjoin.patch`,
    # `Compile_with_FILE_OFFSET_BITS_64_on_32-bit_Linux`: real changelogs) switch class at
    # their joints only; base64 (URL-safe too: `-` and `_` are 2 of its 64 digits) switches
    # about twice in three characters wherever it is cut
    return _class_switch_rate(core.replace("-", "").replace("_", "")) >= 0.3


_NONSPACE_RE = re.compile(r"\S*")
_PIECE_CHAR_RE = re.compile("[\u0120\u010a\u0109\u2581]")
# Symbols prose hardly uses; random printable text is full of them. The gate for the
# symbol patterns leaves out the two Markdown writes most (`|` tables, `**bold**`).
_GATE_SYMBOLS = "#$%^&+={}[]\\;<>~`"
# The gates count ASCII bytes of the text's UTF-8 (no multi-byte character holds one):
# one C-level pass each, bytes.translate deleting every other byte.
_ALL_BUT_DIGITS = bytes(b for b in range(256) if not 0x30 <= b <= 0x39)
_ALL_BUT_GATE_SYMBOLS = bytes(b for b in range(256) if chr(b) not in _GATE_SYMBOLS)
# CONTROL_RE's ASCII characters (the C1 ones are not ASCII): an ASCII text's bytes less all others
_ALL_BUT_ASCII_CONTROL = bytes(b for b in range(256) if not (b < 0x80 and CONTROL_RE.match(chr(b))))
# A run of n integers has n - 1 digits followed by a separator (space, comma, tab). On the text's
# UTF-8, each character made one byte (continuation bytes deleted): a digit as "0" (0-9, and the
# lead byte of every other script's digit, tokens.OTHER_DIGIT_LEADS), a separator as " ", the rest
# as "a": the "0 " pairs counted are at least that many. (A Cyrillic or Chinese word is "aaaa":
# made "0000" byte for byte, every word of such text ended on a "0", and the gate let it through.)
_NUMBER_ENDS_MAP = bytes(0x30 if 0x30 <= b <= 0x39 or b in OTHER_DIGIT_LEADS else 0x20 if b in b" ,\t" else 0x61
                         for b in range(256))
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _number_ends(raw: bytes) -> bytes:
    """The text's UTF-8 one byte a character, as _NUMBER_ENDS_MAP reads it."""
    return raw.translate(_NUMBER_ENDS_MAP, _CONTINUATION_BYTES)


# A run of n integers on those bytes: digits (any script's), then n - 1 times separators and
# digits again. The pattern starts with a literal: the engine skips to it in C, where
# _token_id_re on the text reads every character
def _numbers_run_re(n: int):
    return re.compile(rb"0(?: +0+){%d}" % (n - 1))


def _token_at(text: str, i: int) -> tuple:
    """(start, end) of the whitespace-delimited token holding the character at `i`."""
    return (max(text.rfind(" ", 0, i), text.rfind("\n", 0, i), text.rfind("\t", 0, i)) + 1,
            max(i + 1, _NONSPACE_RE.match(text, i).end()))


def _token_spans(text: str, matches, min_hits: int = 1) -> list:
    """The whitespace-delimited tokens around regex matches, merged; tokens with fewer
    than `min_hits` matches are left out. Linear: each token once."""
    out = []
    hits = 0
    end = -1
    for m in matches:
        i = m.start()
        if i < end:
            hits += 1
            continue
        if out and hits < min_hits:
            out.pop()
        out.append(_token_at(text, i))
        hits = 1
        end = out[-1][1]
    if out and hits < min_hits:
        out.pop()
    return out


def _char_token_spans(text: str, pattern, min_hits: int = 1) -> list:
    """_token_spans for a pattern of one character (U+FFFD, a control or a rare character),
    `min_hits` 1 or 2: each token is found by one search, and whether it holds a second
    match by one more inside it; noise with thousands of matches is not read a match at a time."""
    out = []
    search = pattern.search
    m = search(text)
    while m is not None:
        i = m.start()
        s, e = _token_at(text, i)
        if min_hits < 2 or search(text, i + 1, e) is not None:
            out.append((s, e))
        m = search(text, e)
    return out


def _piece_spans(text: str, settings) -> list:
    """Tokens holding BPE piece characters, when a leak is what put them there: pieces
    inside tokens (`ĠtheĠcat`), or before at least tokenizer_min_density of the words.
    A Maltese or Esperanto text has a few such letters at word starts, among spaces."""
    spans = _token_spans(text, TOKENIZER_RE.finditer(text))
    if not spans:
        return []
    inner = sum(1 for s, e in spans if _PIECE_CHAR_RE.search(text, s + 1, e))
    words = max(1, len(text.split()))
    if inner >= 3 or len(spans) >= settings.tokenizer_min_density * words:
        return spans
    return []


# Every non-ASCII pattern above needs one of these characters; text without any of
# them (most Chinese, Japanese, Korean, Cyrillic, Arabic, Hebrew prose) skips them all.
# (Each of these classes is searched for without its astral characters, the rare ones of the
# supplementary planes: a class that reaches past U+FFFF is a list of ranges the regex engine
# walks for every character, one within it a table it reads once. Those rare astral characters
# are looked for apart, only in text that holds an astral character at all: _rare_astral.)
_SUSPECT_RE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\u0143\u2581\ufffd{_RARE_BMP}]")


# The suspects split in two: characters beyond Latin-1's letters (controls, U+0100-U+0143,
# U+2581, U+FFFD, the rare blocks: every replacement, piece, BPE-byte, rare and control
# pattern needs one), and two Latin-1 characters in a row (every mojibake sequence and
# latin-1 run starts so; accented letters in real words stand between ASCII ones)
_ODD_CHAR_RE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u0100-\u0143\u2581\ufffd{_RARE_BMP}]")
_LATIN1_PAIR_RE = re.compile(f"[\u00a0-\u00ff][\u00a0-\u00ff{_CONT}]")
# The text's UTF-8 bytes by kind: C2 or C3 (a character of U+0080-U+00FF begins) "A", another
# lead byte "B", a continuation byte "c", ASCII " "
_WIDE_KIND_MAP = bytes(0x41 if b in (0xC2, 0xC3) else 0x42 if b >= 0xC4 else 0x63 if b >= 0x80 else 0x20
                       for b in range(256))


def _latin1_then_wide(raw: bytes) -> bool:
    """Whether a character of U+0080-U+00FF stands right before another non-ASCII character:
    what every match of _LATIN1_PAIR_RE needs (its second character is Latin-1 or a cp1252
    continuation, all non-ASCII)."""
    return _LATIN1_THEN_WIDE_RE.search(raw.translate(_WIDE_KIND_MAP)) is not None


# (a pattern that starts with a literal: one pass, where two three-byte searches read it twice)
_LATIN1_THEN_WIDE_RE = re.compile(rb"Ac[AB]")


# the characters of the replacement, piece, rare and control patterns (an odd text holding none
# of them can match none of the four)
_NOISE_CHAR_RE = re.compile("[" + CONTROL_RE.pattern[1:-1] + _RARE_BMP + _PIECE_CHAR_RE.pattern[1:-1] + "\ufffd]")
_RARE_ASTRAL_RE = re.compile(f"[{_RARE_ASTRAL}]")
# every byte but the lead bytes of 4-byte UTF-8 (astral characters), for bytes.translate to delete
_ALL_BUT_ASTRAL_LEADS = bytes(b for b in range(256) if b < 0xF0)


def _rare_astral(text: str, raw: bytes) -> bool:
    """Whether the text holds a rare character of the supplementary planes (RARE_CHAR_RE's
    astral part), looked for only when its UTF-8 holds a 4-byte character at all."""
    return bool(raw.translate(None, _ALL_BUT_ASTRAL_LEADS)) and _RARE_ASTRAL_RE.search(text) is not None


# The base64 alphabet's bytes as "a", every other byte as " ": a candidate is 40 of them
# in a row (two C-level passes: a translation, a substring search)
_BASE64_BYTES = bytes(range(0x30, 0x3a)) + bytes(range(0x41, 0x5b)) + bytes(range(0x61, 0x7b)) + b"+/=_-"
_BASE64_MAP = bytes(0x61 if b in _BASE64_BYTES else 0x20 for b in range(256))
_BASE64_RUN = b"a" * 40


def _base64_runs(mapped: bytes) -> list:
    """BASE64_CANDIDATE_RE's matches read off _BASE64_MAP's bytes: (start, end) of each whole
    run of 40 or more "a". The first 40 in a row found is where a run starts (one "a" earlier
    would have been found first); the run ends at the next space."""
    out = []
    i = mapped.find(_BASE64_RUN)
    while i >= 0:
        e = mapped.find(b" ", i + 40)
        e = len(mapped) if e < 0 else e
        out.append((i, e))
        i = mapped.find(_BASE64_RUN, e)
    return out


def _spans(text: str, settings) -> dict:
    """{pattern name: [(start, end), ...]} of junk in `text`."""
    spans = {}
    raw = text.encode("utf-8", "surrogatepass")
    if not text.isascii() and (_SUSPECT_RE.search(text) or _rare_astral(text, raw)):
        # most such text is Latin with accents: two gates say which patterns can match at all
        astral = None       # (measured once, if asked)
        odd = _ODD_CHAR_RE.search(text) is not None       # beyond Latin-1's letters
        if not odd:
            odd = astral = _rare_astral(text, raw)
        # two Latin-1 characters in a row: looked for only where the UTF-8 has a character of
        # U+0080-U+00FF (a C2 or C3 byte, then one more) right before another non-ASCII one
        pair = (b"\xc2" in raw or b"\xc3" in raw) and _latin1_then_wide(raw) \
            and _LATIN1_PAIR_RE.search(text) is not None
        # a character of the replacement, piece, rare or control patterns, looked for at once:
        # the letters of Polish, Czech or Turkish that make a text odd are none of them
        noisy = odd and (_NOISE_CHAR_RE.search(text) is not None
                         or (astral if astral is not None else _rare_astral(text, raw)))
        if noisy and "\ufffd" in text:
            spans["replacement_chars"] = _char_token_spans(text, REPLACEMENT_RE)
        if noisy and _PIECE_CHAR_RE.search(text):
            spans["tokenizer_pieces"] = _piece_spans(text, settings)
        if pair and _MOJIBAKE_START_RE.search(text):     # a lead byte then a continuation byte, at all
            spans["mojibake"] = [m.span() for m in MOJIBAKE_RE.finditer(text)]
        # (each match counted first on the UTF-8, where it starts at a C3 byte: the text is read
        # for where they stand only when there are three)
        if odd and b"\xc3" in raw and (b"\xc4" in raw or b"\xc5" in raw) \
                and sum(1 for m in BPE_BYTES_UTF8_RE.finditer(raw) if b"\xc4" in m.group() or b"\xc5" in m.group()) >= 3:
            bpe = [m.span() for m in BPE_BYTES_RE.finditer(text) if _BPE_PIECE_RE.search(m.group())]
            spans.setdefault("tokenizer_pieces", []).extend(bpe)
        if noisy:
            spans["random_unicode"] = _char_token_spans(text, RARE_CHAR_RE, min_hits=2)
        if pair:
            spans["latin1_bytes"] = [m.span() for m in LATIN1_RUN_RE.finditer(text)]
        if noisy:
            spans["control_chars"] = _char_token_spans(text, CONTROL_RE)
    elif text.isascii() and raw.translate(None, _ALL_BUT_ASCII_CONTROL):   # (other text without a suspect has none)
        spans["control_chars"] = _char_token_spans(text, CONTROL_RE)
    if len(raw.translate(None, _ALL_BUT_DIGITS)) >= settings.token_id_run \
            and (ends := _number_ends(raw)).count(b"0 ") >= settings.token_id_run - 1 \
            and _numbers_run_re(settings.token_id_run).search(ends):
        spans["token_ids"] = [m.span() for m in _token_id_re(settings.token_id_run).finditer(text)
                              if (m.start() == 0 or text[m.start() - 1] not in "._" and not text[m.start() - 1].isalnum())
                              and not _counting(m.group())]
    b64 = raw.translate(_BASE64_MAP)
    if _BASE64_RUN in b64:      # 40 base64 characters in a row at all
        # the candidates are those runs: in ASCII text read off the bytes, where they stand at
        # the same offsets (substring searches, in C)
        runs = _base64_runs(b64) if len(raw) == len(text) else [m.span() for m in BASE64_CANDIDATE_RE.finditer(text)]
        spans["base64_noise"] = [(s, e) for s, e in runs if _is_base64_noise(text, s, e)]
    if len(raw.translate(None, _ALL_BUT_GATE_SYMBOLS)) >= 4:
        spans["random_symbols"] = ([(s, e) for s, e in _token_spans(text, RANDOM_CANDIDATE_RE.finditer(text))
                                    if _class_switch_rate(text[s:e]) >= 0.45 and "://" not in text[s:e]
                                    and not _balanced_brackets(text[s:e]) and not _markup(text[s:e])]
                                   if _RANDOM_CANDIDATE_BYTES_RE.search(raw.translate(_RANDOM_CANDIDATE_MAP)) else []) \
            + _random_windows(text, settings, raw)
    if not _LETTER_RE.search(text):
        # numbers only: token ids if they are bare integers, most of the tokens, and vary
        # (a loop of "1.1.1.1" is a loop; "1. 16:10:11" lines are a list of times)
        tokens = text.replace(",", " ").split()
        numbers = [t for t in tokens if t.isdigit()]
        if len(numbers) >= 4 and len(numbers) >= 0.6 * len(tokens) and len(set(numbers)) >= max(4, 0.3 * len(numbers)):
            spans["token_ids"] = spans.get("token_ids", []) + [(0, len(text))]
    return {k: v for k, v in spans.items() if v}


_LETTER_RE = re.compile(r"[^\W\d_]")
_DIGITS_RE = re.compile(r"\d+")


# An HTML or XML tag (`<i>`, `</code>`, `<br/>`, `<a href="x">`): markup, the text's
# structure, written by models that learnt from the web (`<strong>`, `<code>` lists from
# Gemma), not random symbols. A token whose symbols are all in such tags is markup.
_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")


def _markup(tok: str) -> bool:
    """The token's symbols all stand in well-formed tags: `<i>i</i>`, `<code>/home</code>.`"""
    if "<" not in tok or not _TAG_RE.search(tok):
        return False
    rest = _TAG_RE.sub(" ", tok)
    return not any(c in _GATE_SYMBOLS for c in rest)


def _balanced_brackets(tok: str) -> bool:
    """Regexes, calls and templates pair their brackets; noise rarely does."""
    depth = {"(": 0, "[": 0, "{": 0}
    close = {")": "(", "]": "[", "}": "{"}
    pairs = 0
    for c in tok:
        if c in depth:
            depth[c] += 1
        elif c in close:
            if depth[close[c]] == 0:
                return False
            depth[close[c]] -= 1
            pairs += 1
    return pairs > 0 and not any(depth.values())


# RANDOM_CANDIDATE_RE's gate, on the text's bytes (every character it reads is ASCII, and
# every byte of a multi-byte character is none of its): one bytes.translate, then a regex over
# three letters, in C, where the pattern on the text costs 5-10 us a KB. A candidate's
# symbols as "S", ASCII letters and digits as "a", the rest as " ":
_RANDOM_SYMBOLS = b"!@#$%^&*()+={}[]|\\;<>?~`"
_RANDOM_CANDIDATE_MAP = bytes(0x53 if b in _RANDOM_SYMBOLS else 0x61 if chr(b).isascii() and chr(b).isalnum() else 0x20
                              for b in range(256))
_RANDOM_CANDIDATE_BYTES_RE = re.compile(rb"Sa{1,3}Sa{0,3}S")


# INNER_SYMBOL_RE's characters on an ASCII text's bytes: its symbols, and the printable
# characters ([!-~]) a symbol must stand between, each as a byte 1 (every other byte 0)
_INNER_SYMBOL_MAP = bytes(1 if INNER_SYMBOL_RE.match(chr(b) * 3, 1) else 0 for b in range(256))
_PRINTABLE_MAP = bytes(1 if 0x21 <= b <= 0x7E else 0 for b in range(256))
# a window is looked at when its two halves hold this many inner symbols
_WINDOW_MIN_INNER_SYMBOLS = 6


def _inner_symbols(text: str, half: int, raw: bytes, least: int) -> list:
    """How many INNER_SYMBOL_RE matches start in each `half` characters of the text, or [] when
    there are fewer than `least` in all. Without the regex: one byte per character (the text's
    UTF-8 without its continuation bytes: an ASCII character as itself, any other as its lead
    byte, which is neither a symbol nor printable ASCII), the symbols' bytes ANDed with the
    printable ones' shifted one byte either way (a symbol with a printable character on both
    sides) as big integers, and the 1 bytes of each half counted (C-level passes, no character
    class read at every position). `raw`: the text's UTF-8."""
    one = raw if len(raw) == len(text) else raw.translate(None, _CONTINUATION_BYTES)
    symbols = int.from_bytes(one.translate(_INNER_SYMBOL_MAP), "big")
    printable = int.from_bytes(one.translate(_PRINTABLE_MAP), "big")
    inner = symbols & (printable << 8) & (printable >> 8)
    if inner.bit_count() < least:       # one bit a match
        return []
    marks = inner.to_bytes(len(text), "big")
    return [marks.count(1, s, s + half) for s in range(0, len(text), half)]


def _random_windows(text: str, settings, raw: bytes) -> list:
    """Windows of random printable characters (see INNER_SYMBOL_RE above). Windows
    overlap by half, so a noise tail is seen whatever its offset. `raw`: the text's UTF-8."""
    window = settings.garbled_window_chars
    half = window // 2
    hits = _inner_symbols(text, half, raw, _WINDOW_MIN_INNER_SYMBOLS) + [0]
    out = []
    for b, k in enumerate(hits):
        if not k:
            continue
        n = k + hits[b + 1]
        if n < _WINDOW_MIN_INNER_SYMBOLS:
            continue
        start = b * half
        raw = text[start:start + window]
        chunk = _INLINE_CODE_RE.sub(" ", raw)   # quoted commands and regexes are not noise
        if not chunk.isascii():
            chunk = chunk.encode("ascii", "ignore").decode()
        visible = len(chunk) - chunk.count(" ") - chunk.count("\n")
        # a short window cannot reach the entropy of a long one: log2(length) caps it
        need = min(settings.garbled_window_min_entropy, math.log2(max(len(chunk), 2)) - 0.75)
        if visible >= 48 and n >= visible * settings.garbled_window_min_inner and shannon_entropy(chunk) >= need:
            out.append((start, start + len(raw)))
    return out


def _merge(spans: list, gap: int = 3) -> list:
    merged = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1] + gap:
            if e > merged[-1][1]:
                merged[-1][1] = e
        else:
            merged.append([s, e])
    return merged


def _longest_region(merged: list, text: str, gap_words: int = 2) -> int:
    """Longest stretch of junk, bridging gaps of at most `gap_words` clean words."""
    best = cur_start = cur_end = 0
    started = False
    for s, e in merged:
        if started and len(text[cur_end:s].split()) <= gap_words:
            cur_end = e
        else:
            cur_start, cur_end, started = s, e, True
        best = max(best, cur_end - cur_start)
    return best


# Patterns that judge whole tokens (a random string, a symbol soup).
# One such token is an identifier, a key, a compound or a name, not garbling: they
# count in tokens, and garbling is many of them (see detect). The others (bytes
# read as text, mojibake, U+FFFD, control characters, BPE pieces, rare Unicode,
# token ids) damage characters and count in characters.
TOKEN_PATTERNS = ("base64_noise", "random_symbols")
_TOKEN_RE = re.compile(r"\S+")


def _visible(text: str, s: int = 0, e: Optional[int] = None) -> int:
    part = text[s:e]
    return len(part) - sum(map(part.count, " \n\t\r"))


_TOKEN_EDGES = ".,;:()[]{}\"'`"


def _input_tokens(input_text: Optional[str], cache: dict) -> set:
    """The input's whole tokens, built once per summary (whatever its number of pieces)."""
    if "known" not in cache:
        known = set()
        for _, piece in pieces(input_text or ""):     # memory: the vocabulary, not a list of every token
            known.update(t.strip(_TOKEN_EDGES) for t in piece.split())
        cache["known"] = known
    return cache["known"]


def _token_junk(text: str, spans: dict, known: set) -> tuple:
    """(junk token indices, token count, token starts) for the token-level patterns;
    a token that also occurs in the input (an identifier the summary kept) is not junk."""
    starts, ends = [], []
    for m in _TOKEN_RE.finditer(text):
        starts.append(m.start())
        ends.append(m.end())
    junk = set()
    for kind in TOKEN_PATTERNS:
        for s, e in spans.get(kind, ()):
            i = bisect.bisect_right(starts, s) - 1
            j = bisect.bisect_left(starts, e)
            for t in range(max(i, 0), max(j, i + 1)):
                if t < len(starts) and starts[t] < e and ends[t] > s:
                    junk.add(t)
    if known and junk:
        # whole tokens of the input (a substring search per token would cost tokens x input)
        junk = {t for t in junk if text[starts[t]:ends[t]].strip(_TOKEN_EDGES) not in known}
    return junk, len(starts), starts


def _longest_token_run(junk: set, gap: int = 1) -> int:
    """Junk tokens in the longest stretch of them, bridging `gap` clean tokens."""
    best = cur = 0
    last = None
    for t in sorted(junk):
        cur = cur + 1 if last is not None and t - last <= gap + 1 else 1
        best = max(best, cur)
        last = t
    return best


_CHUNK = 1 << 18


def _measure(text: str, settings, input_text: Optional[str], cache: Optional[dict] = None) -> Optional[dict]:
    """Junk in one piece of text, in characters and in tokens (see detect)."""
    spans = _spans(text, settings)
    if not spans:
        return None
    moji = spans.pop("mojibake", [])
    out = {"mojibake": len(moji), "moji_chars": sum(e - s for s, e in moji),
           "non_ascii": len(text) - len(text.encode("ascii", "ignore")) if moji else 0,
           "moji_sample": moji and text[moji[0][0]:moji[0][1]]}
    # an encoded blob is not an identifier: a random token longer than
    # garbled_identifier_max_chars, or random tokens back to back (a blob wrapped at
    # 76 columns), count in characters
    b64 = spans.get("base64_noise", [])

    def wrapped(x, y):     # two random lines of one blob: only a line break between them
        gap = text[x[1]:y[0]]
        return 0 < len(gap) <= 2 and gap.isspace()

    blob_spans = [(s, e) for i, (s, e) in enumerate(b64)
                  if e - s > settings.garbled_identifier_max_chars
                  or (i and wrapped(b64[i - 1], (s, e))) or (i + 1 < len(b64) and wrapped((s, e), b64[i + 1]))]
    if blob_spans:
        spans["base64_noise"] = [sp for sp in b64 if sp not in blob_spans]
        spans["encoded_blob"] = blob_spans
    # characters: damage measured in the characters it covers
    merged = _merge([sp for k, v in spans.items() if k not in TOKEN_PATTERNS for sp in v])
    # tokens: random strings measured in the tokens they are
    if any(spans.get(k) for k in TOKEN_PATTERNS):
        junk_tokens, n_tokens, starts = _token_junk(text, spans, _input_tokens(input_text, {} if cache is None else cache))
    else:
        junk_tokens, n_tokens, starts = set(), 0, []
    firsts = [s for s, e in merged] + [starts[t] for t in junk_tokens]
    ends = [e for s, e in merged] + [starts[t] for t in junk_tokens]
    out.update(char_junk=sum(_visible(text, s, e) for s, e in merged), char_run=_longest_region(merged, text),
               junk_tokens=len(junk_tokens), tok_run=_longest_token_run(junk_tokens), tokens=n_tokens,
               first=min(firsts, default=0), last=max(ends, default=0),
               kinds={k: sum(e - s for s, e in v) for k, v in spans.items() if v and (k not in TOKEN_PATTERNS or junk_tokens)})
    return out


# Chat-template and special tokens printed as text: the server's template does not
# match the model (ChatML <|im_start|>, Llama-3 <|eot_id|>, Gemma <start_of_turn>, ...).
# Unambiguous; quoted in `inline code`, or found in the input too, they are talk about them.
SPECIAL_TOKEN_RE = re.compile(
    r"<\|(?:im_start|im_end|im_sep|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|end_of_text|"
    r"fim_prefix|fim_middle|fim_suffix|reserved_special_token_\d+)\|>|"
    r"<(?:start_of_turn|end_of_turn|start_of_image|end_of_image)>"
)


def _special_tokens(text: str, input_text: Optional[str]) -> list:
    if "<" not in text:
        return []
    out = []
    in_input = {}                             # each distinct token looked for once
    for m in SPECIAL_TOKEN_RE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text.count("`", line_start, m.start()) % 2 == 1:
            continue                          # inside inline code
        tok = m.group()
        if tok not in in_input:
            in_input[tok] = bool(input_text) and tok in input_text
        if not in_input[tok]:
            out.append(tok)
    return out


# --- random letters across scripts ------------------------------------------------

class _ScriptTable(dict):
    """str.translate's table from a character to one letter naming its script (the first
    word of its Unicode name: LATIN, CYRILLIC, ARABIC, ...; Han, hiragana, katakana and their
    marks are one, as Japanese writes them together); anything not a letter or a mark is a
    space. Filled as characters are met: translate runs in C for every one seen before."""

    def __init__(self, shipped: bool = True):
        super().__init__()
        self.codes = {}
        # the BMP's 65,536 characters coded as _page codes them, read from data/unicode.bin when
        # it was made under this Python's Unicode version (else None: pages computed as met)
        self.bmp = None
        read = _read_script_table() if shipped else None
        if read is not None:
            self.bmp, names = read
            for name in names:          # code 1 + i is the i-th name's
                self.codes[name] = chr(0x4E00 + len(self.codes))
        self.pages = {}     # page (a code point's high byte, in the BMP) -> its 256 characters' codes (_page)
        # a page whose 256 characters share one code: 1, and that code (read off the page alone)
        self.whole = bytearray(256)
        self.whole_code = bytearray(256)
        self.whole_pages = b""
        self.beyond = set()     # pages holding a script past the 254th met (not coded in one byte)
        self.masks = {}     # page -> the bytes.translate table marking it (0xFF) among the pages
        self.firsts = {}    # the first word of a character's name -> its code's byte (_page)

    def __missing__(self, cp):
        if cp < 0x10000 and self.bmp is not None:
            b = self.bmp[cp]
            code = self[cp] = chr(0x4E00 + b - 1) if b else " "
            return code
        import unicodedata
        ch = chr(cp)
        code = " "
        if unicodedata.category(ch)[0] in "LM":
            code = self._code(unicodedata.name(ch, "?").partition(" ")[0])
        self[cp] = code
        return code

    def _code(self, first: str) -> str:
        """The letter naming the script whose characters' names begin with `first`."""
        return self.codes.setdefault(_script_name(first), chr(0x4E00 + len(self.codes)))

    def _page(self, p: int) -> bytes:
        """The BMP page `p`'s 256 characters (U+pp00-U+ppFF) one byte each: 0 for a space, else 1 +
        the number of its script's code; the same classification as __missing__ (whose table is
        left as it is), each name's first word coded once (`firsts`)."""
        if self.bmp is not None:
            table = self.pages[p] = self.bmp[p << 8:(p + 1) << 8]
        else:
            import unicodedata
            name_of, firsts = unicodedata.name, self.firsts
            chars = [chr(p << 8 | lo) for lo in range(256)]
            out = bytearray(256)
            for lo, ch, cat in zip(range(256), chars, map(unicodedata.category, chars)):
                if cat[0] in "LM":
                    first = name_of(ch, "?").partition(" ")[0]
                    byte = firsts.get(first)
                    if byte is None:
                        byte = firsts[first] = min(255, ord(self._code(first)) - 0x4E00 + 1)
                    out[lo] = byte
            table = self.pages[p] = bytes(out)
        if 255 in table:
            self.beyond.add(p)
        elif table.count(table[0]) == 256:
            self.whole[p], self.whole_code[p] = 1, table[0]
            self.whole_pages += bytes((p,))
        return table

    def codes_of(self, text: str) -> Optional[bytes]:
        """`text`'s characters one byte each, as _page codes them, without a Python step per
        character (str.translate looks each one up in this dict): the text's UTF-16 cut into
        its characters' pages and low bytes, each read through a table (bytes.translate), the
        pages' codes joined as big integers. None for text beyond the BMP (a surrogate pair)."""
        u = text.encode("utf-16-be", "surrogatepass")
        n = len(text)
        if len(u) != 2 * n:
            return None
        hi, lo = u[0::2], u[1::2]
        rest = hi.translate(None, self.whole_pages)     # characters of pages coded character by character
        mixed = []
        while rest:
            p = rest[0]
            rest = rest.replace(bytes((p,)), b"")
            if p not in self.pages:
                self._page(p)
            if p in self.beyond:
                return None
            if not self.whole[p]:
                mixed.append(p)
        acc = int.from_bytes(hi.translate(self.whole_code), "big")
        for p in mixed:
            mask = self.masks.get(p)
            if mask is None:
                mask = self.masks[p] = bytes(0xFF if b == p else 0 for b in range(256))
            acc |= int.from_bytes(lo.translate(self.pages[p]), "big") & int.from_bytes(hi.translate(mask), "big")
        return acc.to_bytes(n, "big")


_SCRIPTS = _ScriptTable()
_NONZERO_ONE = bytes([0]) + bytes([1]) * 255     # bytes.translate: every byte but 0 to 1
_SCRIPT_BYTES_MIN_CHARS = 100
_SAME_RUN_RE = re.compile(r"(\S)\1*")
# A character that may be a letter of a script other than Latin: anything outside the
# Latin blocks (ASCII, Latin-1, Extended A/B, Extended Additional), general punctuation and symbols
# (U+2000-2BFF), CJK punctuation, fullwidth punctuation, variation selectors and emoji. Half
# of the non-ASCII summaries (European languages, English with typographic quotes or
# emoji) have none, and are passed over at the speed of one search.
_BEYOND_LATIN_RE = re.compile("[^\x00-\u024f\u1e00-\u1eff\u2000-\u2bff\u3000-\u303f\ufe00-\ufe0f"
                              "\uff00-\uff0f\U0001F000-\U0001FFFF]")


def script_mixing(text: str, settings) -> list:
    """`garbled` for letters that change script inside words, as random characters do
    ('JЩңわまB嵩ثमご'): words are written in one script, and where two meet inside a word
    (Chinese and Japanese around a Latin name, 'dig命令', 'xz는') they change a few times, not
    at every other letter. ASCII text is one script: not read."""
    if text.isascii():
        return []
    sample = text[:settings.garbled_script_sample_chars]
    if not _BEYOND_LATIN_RE.search(sample):     # its letters are all Latin: one script
        return []
    # (a short text costs less through str.translate: the bytes' passes cost ~5 us whatever its length)
    codes = _SCRIPTS.codes_of(sample) if len(sample) >= _SCRIPT_BYTES_MIN_CHARS else None
    if codes is not None:
        # the same counts on one byte a character (0 a space), in C: a word is a run of non-zero
        # bytes; a switch, two non-zero bytes in a row that differ (the codes as a big integer
        # XORed with itself shifted by a byte)
        letters = codes.translate(_NONZERO_ONE)
        words = (b"\0" + letters).count(b"\0\1")
        count = len(codes) - codes.count(0)
        pairs = count - words
        if pairs < settings.garbled_script_min_pairs:
            return []
        # a switch has a letter of another script than the commonest on one side at least, and
        # such a letter is in two pairs at most: most text is done here
        most = max((codes.count(c) for c in set(codes[:64]) if c), default=0)
        if 2 * (count - most) / pairs < settings.garbled_script_min_switch_share:
            return []
        x, m = int.from_bytes(codes, "big"), int.from_bytes(letters, "big")
        differ = int.from_bytes((x ^ (x >> 8)).to_bytes(len(codes), "big").translate(_NONZERO_ONE), "big")
        if (m & (m >> 8) & differ).bit_count() / pairs < settings.garbled_script_min_switch_share:
            return []
    mapped = sample.translate(_SCRIPTS)
    words = mapped.split()
    pairs = len(mapped) - mapped.count(" ") - len(words)
    if pairs < settings.garbled_script_min_pairs:
        return []
    switches = len(_SAME_RUN_RE.findall(mapped)) - len(words)
    share = switches / pairs
    if share < settings.garbled_script_min_switch_share:
        return []
    names = {v: "Han/kana" if k == "CJK" else k.title() for k, v in _SCRIPTS.codes.items()}
    scripts = Counter(names.get(c, "?") for c in mapped if c != " ")
    shown = [t for t in sample.split()[:200] if len(_SAME_RUN_RE.findall(t.translate(_SCRIPTS))) >= 3][:3]
    like = f" (like {', '.join(repr(w[:16]) for w in shown)})" if shown else ""
    return [Finding("garbled", f"no language: its letters change script at {share:.0%} of the {pairs} places two "
                    f"meet inside a word, across {len(scripts)} scripts ({', '.join(k for k, _ in scripts.most_common(4))})"
                    f"{like}: random characters, not a summary; re-run compaction, check the model and decoding",
                    figures={"script_switch_share": round(share, 3), "letter_pairs": pairs, "scripts": len(scripts),
                             "no_language": True})]


def detect(content: str, settings, input_text: Optional[str] = None) -> list:
    text = content
    if len(text) < 8:
        return []
    leaked = _special_tokens(text, input_text)
    if leaked:
        return [Finding("garbled", f"{len(leaked)} chat-template tokens printed as text (like {leaked[0]!r}): the "
                        "server's chat template does not match the model; fix the template and re-run compaction",
                        figures={"special_tokens": len(leaked), "entropy": seed_entropy(text)})]
    mixed = script_mixing(text, settings)
    if mixed:
        return mixed
    cache = {}
    if len(text) <= _CHUNK:
        first = _measure(text, settings, input_text, cache)     # most summaries: nothing at all
        if first is None:
            return []
    else:
        first = None
    visible = max(1, _visible(text))
    tokens = max(1, len(text.split()) if len(text) <= _CHUNK else text.count(" ") + text.count("\n") + 1)
    tot = {"mojibake": 0, "moji_chars": 0, "non_ascii": 0, "char_junk": 0, "char_run": 0, "junk_tokens": 0,
           "tok_run": 0, "first": None, "last": 0, "kinds": Counter(), "moji_sample": ""}
    examined = 0
    for off, piece in pieces(text, _CHUNK):     # about _CHUNK characters, cut at whitespace
        m = first if first is not None else _measure(piece, settings, input_text, cache)
        examined = off + len(piece)
        if m is None:
            continue
        for k in ("mojibake", "moji_chars", "non_ascii", "char_junk", "junk_tokens"):
            tot[k] += m[k]
        tot["char_run"] = max(tot["char_run"], m["char_run"])
        tot["tok_run"] = max(tot["tok_run"], m["tok_run"])
        tot["kinds"].update(m["kinds"])
        tot["moji_sample"] = tot["moji_sample"] or m["moji_sample"]
        if m["kinds"]:
            tot["first"] = off + m["first"] if tot["first"] is None else tot["first"]
            tot["last"] = off + m["last"]
        # a long text is read only until the verdict is certain (cost stays linear, and
        # random text does not pay for all of itself)
        if tot["char_junk"] >= settings.garbled_min_share * visible or tot["char_run"] >= settings.garbled_min_run_chars \
                or tot["tok_run"] >= settings.garbled_min_run_tokens:
            break
    if not tot["kinds"] and not tot["mojibake"]:
        return []
    findings = []
    lost = text.count("\ufffd") if "replacement_chars" in tot["kinds"] else 0
    if lost >= settings.garbled_min_replacement_chars and not (input_text and "\ufffd" in input_text):
        i = text.find("\ufffd")
        return [Finding("garbled", f"{lost} U+FFFD replacement characters (like {text[max(0, i - 12):i + 4]!r}): bytes "
                        "that were not valid UTF-8 were lost when the summary was decoded; re-run compaction, check "
                        "the model's output decoding", figures={"replacement_chars": lost, "entropy": seed_entropy(text)})]
    # Mojibake makes nearly every non-ASCII character part of a sequence; a summary
    # that quotes one ("MÃ¼nchen" instead of "München") keeps its own good ones.
    if tot["mojibake"] >= settings.mojibake_min_sequences and tot["moji_chars"] >= 0.5 * tot["non_ascii"]:
        fixed = _ftfy_fix(text[:2000])
        hint = f"; it reads as {fixed[:40]!r} re-decoded" if fixed else ""
        findings.append(Finding("garbled", f"mojibake: {tot['mojibake']} sequences like {tot['moji_sample']!r} "
                                f"(UTF-8 read as cp1252/latin-1){hint}; decode the source as UTF-8 and re-run compaction",
                                figures={"mojibake_sequences": tot["mojibake"], "entropy": seed_entropy(text)}))
        return findings
    char_junk, char_run, junk_n, tok_run = tot["char_junk"], tot["char_run"], tot["junk_tokens"], tot["tok_run"]
    char_share = char_junk / visible
    tok_share = junk_n / tokens
    blob = junk_n == 1 and tokens <= 3 and visible >= settings.garbled_warn_chars
    kinds = [k for k, _ in tot["kinds"].most_common()]
    share = min(1.0, max(char_share, tok_share))
    figures = {"junk_share": round(share, 3), "junk_chars": char_junk, "junk_tokens": junk_n, "tokens": tokens,
               "longest_junk_run": char_run, "longest_junk_tokens": tok_run, "patterns": kinds, "entropy": seed_entropy(text)}
    if examined < len(text):
        figures["examined_chars"] = examined
    by_chars = (char_junk >= settings.garbled_warn_chars or (char_junk >= 8 and char_share >= settings.garbled_min_share)) \
        and (char_share >= settings.garbled_min_share or char_run >= settings.garbled_min_run_chars)
    by_tokens = (junk_n >= settings.garbled_min_tokens and tok_share >= settings.garbled_min_share) \
        or tok_run >= settings.garbled_min_run_tokens or blob
    if by_chars or by_tokens:
        tail = tot["last"] >= len(text.rstrip()) - 200 and (tot["first"] or 0) > len(text) * 0.2
        where = "a garbage tail" if tail else "noise"
        how = f"longest run {char_run} chars" if by_chars else f"{junk_n} of {tokens} tokens"
        least = "at least " if examined < len(text) else ""
        findings.append(Finding("garbled", f"{least}{share:.0%} of the text is {where} "
                                f"({', '.join(k.replace('_', ' ') for k in kinds[:3])}; {how}): not language; "
                                "re-run compaction, check the model and decoding", figures=figures))
    elif char_junk >= settings.garbled_warn_chars or junk_n >= 2:
        findings.append(Finding("noise", f"{char_junk} chars and {junk_n} tokens look like noise "
                                f"({', '.join(kinds[:2]) or 'mojibake'}), {share:.1%} of the text", failure=False,
                                figures=figures))
    elif tot["mojibake"] and _ftfy_fix(tot["moji_sample"]):
        # fewer mojibake sequences than a failure needs: a warning, when ftfy reads one as
        # mojibake too (`Ã©` is `é`; `ß’`, a real text's quoted `‘ß’`, is left as it is)
        figures["mojibake_sequences"] = tot["mojibake"]
        findings.append(Finding("noise", f"{tot['mojibake']} mojibake sequence(s) like {tot['moji_sample']!r} (reads as "
                                f"{_ftfy_fix(tot['moji_sample'])!r}): part of the text was decoded with the wrong "
                                "encoding", failure=False, figures=figures))
    return findings


def _ftfy_fix(sample: str):
    """ftfy's repair of a mojibake sample, for the reason line (None if it cannot)."""
    try:
        import ftfy
    except ImportError:  # pragma: no cover - ftfy is a declared dependency
        return None
    fixed = ftfy.fix_encoding(sample)
    return fixed if fixed != sample else None


def _longest_true_run(flags: list) -> tuple:
    """(length, start) of the longest run of true flags."""
    best = start = run = 0
    for i, o in enumerate(flags):
        run = run + 1 if o else 0
        if run > best:
            best, start = run, i - run + 1
    return best, start


def no_language(content: str, settings, view=None) -> list:
    """`garbled` for text that is no language: keyboard mash (`hjhklllljklllk dsfsaadsdghgdf`),
    whole or after real text. Its words (lexicon.plain_words: 3+ letters, not names in code)
    are looked up in the word lists of the language fastText reads in it, of English and of
    the input (`view`: its overlap.InputView; a word the history uses is a word); the text is no language when most of them
    are in none (the share's lower bound, at the confidence ungrounded_confidence_z sets, at
    least garbled_nonword_min_share) and fastText reads no language in its letters either
    (at most garbled_nonword_max_language_probability: a small model's pseudo-Polish reads
    as Polish, and is grounding's to judge). Or a run of garbled_nonword_min_run such words
    in a row that reads as no language. Called where another check would name a language
    or a subject: what the text is matters more. Languages with no word list (Chinese,
    Japanese, Korean, Thai) are not judged here."""
    import itertools
    from . import lexicon
    from .grounding import upper_bound
    from .language import identify
    words = list(itertools.islice(lexicon.plain_words(content), settings.garbled_nonword_max_words))
    if len(words) < settings.garbled_nonword_min_words:
        return []
    have = view.unit_set if view is not None else frozenset()
    # English's list first: the words in none of the lists are among those not in it, so if
    # even those are too few (and run too short) for a verdict, fastText is not asked
    some = lexicon.in_no_list(words, ("en",), have)
    if some is not None and 1 - upper_bound(1 - sum(some) / len(words), len(words), settings.ungrounded_confidence_z) \
            < settings.garbled_nonword_min_share and _longest_true_run(some)[0] < settings.garbled_nonword_min_run:
        return []
    lang, prob = identify(content)[:2]
    flags = lexicon.in_no_list(words, (lang or "en", "en"), have)
    if flags is None:
        return []
    unknown = sum(flags)
    low = 1 - upper_bound(1 - unknown / len(words), len(words), settings.ungrounded_confidence_z)
    shown = list(dict.fromkeys(w for w, o in zip(words, flags) if o))[:4]
    figures = {"nonwords": unknown, "words": len(words), "nonword_share_low": round(low, 3), "language": lang,
               "language_probability": round(prob, 3), "no_language": True}
    if low >= settings.garbled_nonword_min_share and prob <= settings.garbled_nonword_max_language_probability:
        return [Finding("garbled", f"no language: {unknown} of its {len(words)} words are in no word list (like "
                        f"{', '.join(repr(w) for w in shown)}) and its letters read as no language (at best "
                        f"{lang or 'none'}, {prob:.0%}): keyboard mash or noise, not a summary; re-run compaction",
                        figures=figures)]
    best, start = _longest_true_run(flags)
    if best >= settings.garbled_nonword_min_run:
        region = " ".join(words[start:start + best])
        rlang, rprob = identify(region)[:2]
        if rprob <= settings.garbled_nonword_max_language_probability:
            figures.update(nonword_run=best, run_language=rlang, run_language_probability=round(rprob, 3))
            return [Finding("garbled", f"no language in part of it: {best} words in a row are in no word list (like "
                            f"{', '.join(repr(w) for w in words[start:start + 4])}) and read as no language (at best "
                            f"{rlang or 'none'}, {rprob:.0%}): keyboard mash or noise; re-run compaction",
                            figures=figures)]
    return []
