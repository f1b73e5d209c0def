"""Token estimates and text figures shared by the detectors.

`estimate_tokens` is script-aware: ASCII characters count 1/4 token, CJK characters
one token, other non-ASCII characters half a token, emoji and other astral
characters one. Against cl100k it lands within 0.93-1.12x for English, Chinese,
Japanese, Korean and Russian (REFERENCE.md section 5), where the seed's chars/4
undercounts Chinese by ~70%. Both sides of the inflation ratio use it.
"""
from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import Counter
from typing import Optional

# Han (incl. extension A and compatibility), kana, Hangul syllables, half-width kana.
CJK_CLASS = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
CJK_RE = re.compile(f"[{CJK_CLASS}]")
# Runs, for count_matches (it deletes a run at a time; a character at a time costs ~30 ns each):
# of CJK characters, of astral ones, and of both (CJK and astral characters, emoji, both count
# one token: one pass counts both)
CJK_RUN_RE = re.compile(f"[{CJK_CLASS}]+")
ASTRAL_RUN_RE = re.compile("[\U00010000-\U0010ffff]+")
ONE_TOKEN_RUN_RE = re.compile(f"[{CJK_CLASS}\U00010000-\U0010ffff]+")
# The text's UTF-8 bytes by what they say of its characters: an ASCII character "a"; the lead
# byte of a character of U+3000-U+FFFF, where every CJK character is (and others), "c"; the lead
# byte of a 4-byte (astral) character "e"; any other byte "x"
_BYTE_KINDS = bytes(0x61 if b < 0x80 else 0x63 if 0xE3 <= b <= 0xEF else 0x65 if b >= 0xF0 else 0x78
                    for b in range(256))


# The lead bytes of the UTF-8 of every decimal digit other than 0-9 (٣ 0xD9, ३ 0xE0, ３ 0xEF,
# ...; Python 3.11's `\d`, Unicode 14) and of every 4-byte character (later versions add their
# digits there): text without any of them has no such digit. Not 0xE2-0xE9 (punctuation, CJK)
# nor 0xEB-0xEE (Hangul), which most non-Latin text is made of. tests check it against `\d`.
OTHER_DIGIT_LEADS = bytes([0xD9, 0xDB, 0xDF, 0xE0, 0xE1, 0xEA, 0xEF, 0xF0, 0xF1, 0xF2, 0xF3, 0xF4])


def count_matches(pattern, text: str) -> int:
    """How many characters `pattern`'s matches cover in `text`, without a list of them
    (findall on 10 MB of Chinese makes 3 million one-character strings: 250 MB). Give it a
    pattern of runs (`[...]+`): the same characters as its class, a run deleted at a time."""
    return len(text) - len(pattern.sub("", text))


# The same count on the text's UTF-16 (count_matches' regex reads every character, ~30 ns each):
# the code units' high bytes (pages) and low bytes apart. Pages whose every character is in
# CJK_CLASS are counted by deleting every other page's byte; the few pages partly in it each have
# a bit, set in a low byte that is in it there, the two ANDed as big integers; an astral character
# is one high surrogate (pages D8-DB). A text with a lone surrogate is counted by the regex.
def _class_pages(cls: str) -> tuple:
    """(pages wholly in the class, pages partly in it) of a character class written as ranges."""
    spans = [(ord(cls[i]), ord(cls[i + 2])) for i in range(0, len(cls), 3)]
    inside = [sum(max(0, min(b, p << 8 | 0xFF) - max(a, p << 8) + 1) for a, b in spans) for p in range(256)]
    return [p for p in range(256) if inside[p] == 256], [p for p in range(256) if 0 < inside[p] < 256]


@functools.lru_cache(maxsize=1)
def _utf16_tables() -> Optional[tuple]:
    """(every page byte but the whole pages', every one but the high surrogates', the part pages'
    bits, the low bytes' bits), made on first use; None if the part pages are more than 8."""
    whole, part = _class_pages(CJK_CLASS)
    if len(part) > 8:
        return None
    return (bytes(b for b in range(256) if b not in whole), bytes(b for b in range(256) if not 0xD8 <= b <= 0xDB),
            bytes(1 << part.index(b) if b in part else 0 for b in range(256)),
            bytes(sum(1 << k for k, p in enumerate(part) if CJK_RE.match(chr(p << 8 | lo))) for lo in range(256)))


_UTF16_MAX_CHARS = 1 << 20


def _one_token_chars(text: str) -> int:
    """count_matches(ONE_TOKEN_RUN_RE, text): its CJK and astral characters (see above)."""
    tables = _utf16_tables()
    if tables is None or len(text) > _UTF16_MAX_CHARS:
        return count_matches(ONE_TOKEN_RUN_RE, text)
    all_but_whole, all_but_high, part_bits, low_bits = tables
    u = text.encode("utf-16-be", "surrogatepass")
    hi, lo = u[0::2], u[1::2]
    astral = len(hi.translate(None, all_but_high))
    if len(hi) != len(text) + astral:       # a lone high surrogate
        return count_matches(ONE_TOKEN_RUN_RE, text)
    n = len(hi.translate(None, all_but_whole)) + astral
    marks = hi.translate(part_bits)
    if marks.count(0) != len(marks):
        n += (int.from_bytes(marks, "big") & int.from_bytes(lo.translate(low_bits), "big")).bit_count()
    return n


def estimate_tokens(text: str) -> int:
    """Estimated model tokens in `text` (script-aware, see module doc)."""
    if not text:
        return 0
    n = len(text)
    if text.isascii():
        return math.ceil(n / 4)
    kinds = text.encode("utf-8", "surrogatepass").translate(_BYTE_KINDS)
    ascii_n = kinds.count(b"a")
    # without a lead byte of U+3000-U+FFFF no CJK character: the astral ones counted by their lead bytes
    whole = kinds.count(b"e") if b"c" not in kinds else _one_token_chars(text)
    other = n - ascii_n - whole
    return math.ceil(ascii_n / 4 + whole + other * 0.5)


def seed_tokens(text: str) -> int:
    """The seed's estimate: characters // 4."""
    return len(text) // 4


# Entropy of a huge summary is measured on a prefix: the figure is descriptive.
ENTROPY_SAMPLE = 1 << 20


def shannon_entropy(text: str) -> float:
    """Character Shannon entropy in bits (the seed's garbled signal), 2 decimals:
    log2(n) - sum(c log2 c) / n over the characters' counts c."""
    if not text:
        return 0.0
    total = len(text)
    # the counts in C: a Counter of the bytes (small ints) for ASCII, 1.6-2.5x one of the
    # characters, and 1.4-2.3x counting each distinct byte with bytes.count (a pass each)
    counts = Counter(text.encode() if text.isascii() else text).values()
    if total < len(_CLOG2):       # c log2 c from a table, summed in C
        s = sum(map(_CLOG2.__getitem__, counts))
    else:
        log2 = math.log2
        s = sum(c * log2(c) for c in counts)
    return round(math.log2(total) - s / total, 2) + 0.0


def seed_entropy(text: str) -> float:
    """The seed's garbled figure as the guard reports it: the entropy of the text's first
    ENTROPY_SAMPLE characters (a huge summary's figure is descriptive)."""
    return shannon_entropy(text[:ENTROPY_SAMPLE])


_CLOG2 = [0.0] + [c * math.log2(c) for c in range(1, 1 << 14)]


_WS_RE = re.compile(r"\s+")

PIECE = 1 << 16


def pieces(text: str, size: int = PIECE):
    """(offset, piece) of about `size` characters, cut after a space or newline: a long
    text's words one piece at a time, never a list of all of them (10 MB of text split at
    once is 1.5 million strings, ~100 MB)."""
    n = len(text)
    if n <= size:
        yield 0, text
        return
    i = 0
    while i < n:
        j = min(n, i + size)
        if j < n:
            k = max(text.rfind(" ", i, j), text.rfind("\n", i, j))
            j = k + 1 if k > i else j
        yield i, text[i:j]
        i = j


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends."""
    return _WS_RE.sub(" ", text).strip()


def content_key(text: str) -> str:
    """A short hash of the whitespace-normalized text (what staleness compares; stores
    keep it instead of the text to prime staleness in bounded memory)."""
    return hashlib.blake2b(normalize_ws(text).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# lossless-claw's own estimate, per code point: CJK 1.5, astral (emoji) 2, else 0.25,
# rounded up. Its rows carry token_count in this unit; a summary read from lcm.db is
# measured the same way as its sources, so the inflation ratio compares like with like.
def lcm_estimate(text: str) -> int:
    if not text:
        return 0
    if text.isascii():
        return math.ceil(len(text) * 0.25)
    cjk = count_matches(CJK_RUN_RE, text)
    astral = count_matches(ASTRAL_RUN_RE, text)
    return math.ceil(cjk * 1.5 + astral * 2 + (len(text) - cjk - astral) * 0.25)


COUNTERS = {"guard": estimate_tokens, "lcm": lcm_estimate}
