"""Which words are words: one Bloom filter per language, shipped as package data.

A small model that cannot write a language still writes its letters: `Sinacek to to
ustalowana wspóelowa`, `Perturbation-Ausgabein - Unzichtige Schnittzeilung`, `मांच दिया
अनुप्रयोगपै मांचैका` (real outputs of a 135M model). The script, the function words and fastText's verdict are right; the words
are not words. Whether a word is one is looked up in wordfreq's word lists (Robyn Speer
et al., CC BY-SA 4.0: Wikipedia, subtitles, news, books, web text), the words used at least
once in 10 million (Zipf 2) in each of its languages but Chinese, Japanese and Korean (whose
words need a segmenter), stored as one Bloom filter per language in
data/lexicon.bin (scripts/make_lexicon.py; 8 bits a word, 5 hashes: about 2% of non-words
read as words, which only lowers a share of non-words a little). Lookups go through
`normalize`, the same steps the build applied to each word. data/everyday.bin holds, the
same way, each language's everyday words (Zipf 4 or more; 10 bits a word, 7 hashes: about
1% of other words read as everyday).
"""
from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from functools import lru_cache
from typing import Optional

from .. import data_files
from .unicode_data import marks, runs

MAGIC = b"CRG-LEXICON-1\n"
# fastText's codes (detectors/language.py) where wordfreq names the language otherwise
CODES = {"no": "nb", "sr": "sh", "hr": "sh", "bs": "sh", "tl": "fil", "zh-tw": "zh"}
_ABJAD = {"ar", "fa", "he", "ur"}       # wordfreq drops their vowel marks
# letters with their combining marks (Devanagari's vowel signs, Hebrew points): a word is
# a run of them; digits and underscores end it


def _char_class(chars: str) -> str:
    """A regex character class's body for `chars` (in code point order), as ranges: ~200 of them
    compile in a millisecond where 1,300 characters one by one take a few."""
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs(chars))


# combining marks of U+0300-U+FFFF (unicode_data: shipped, or read off unicodedata)
_MN, _MC = marks()
WORD_RE = re.compile(r"(?:[^\W\d_]|[%s])+" % _char_class("".join(sorted(_MN + _MC))))
_MARK_RE = re.compile("[%s\u0640]" % _char_class(_MN))


# a token that names something in code, not a word: a path, a flag, a variable, a file,
# a camelCase or dotted name, anything with a digit
_CODE_TOKEN_RE = re.compile(r"[/\\_#@=<>{}\[\]`$%^&*|~\d]|^[-+]|[^\W\d_]\.[^\W\d_]|[a-z][A-Z]")


_TOKEN_RE = re.compile(r"\S+")


def plain_words(text: str):
    """The words of 3 or more letters of the text's tokens that are not names in code, one
    at a time (a caller that wants the first 512 reads no further)."""
    for match in _TOKEN_RE.finditer(text):
        token = match.group()
        if _CODE_TOKEN_RE.search(token):
            continue
        for word in WORD_RE.findall(token):
            if len(word) >= 3:
                yield word


def normalize(word: str, lang: str) -> str:
    """A word as wordfreq lists it: NFC, case-folded (Turkish dotted and dotless i kept
    apart), vowel marks dropped in Arabic, Persian, Hebrew and Urdu, and Romanian and
    Turkish cedillas and commas below each language's own."""
    word = unicodedata.normalize("NFC", word)
    if lang in ("tr", "az"):
        word = word.replace("İ", "i").replace("I", "ı")
    word = word.casefold()
    if lang in _ABJAD:
        word = _MARK_RE.sub("", word)
    if lang == "ro":
        word = word.replace("ş", "ș").replace("ţ", "ț")
    elif lang == "tr":
        word = word.replace("ș", "ş").replace("ț", "ţ")
    return word


def positions(word: str, m: int, k: int) -> list:
    """The filter's k bit positions for a normalized word (double hashing on BLAKE2b)."""
    d = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    h1 = int.from_bytes(d[:8], "little")
    h2 = int.from_bytes(d[8:], "little") | 1
    return [(h1 + i * h2) % m for i in range(k)]


class Filter:
    __slots__ = ("bits", "m", "k", "lang", "_seen")

    def __init__(self, bits, m: int, k: int, lang: str = ""):
        self.bits, self.m, self.k, self.lang = bits, m, k, lang
        self._seen = {}

    def __contains__(self, word: str) -> bool:
        """Whether a normalized word is in the filter."""
        bits = self.bits
        return all(bits[p >> 3] >> (p & 7) & 1 for p in positions(word, self.m, self.k))

    def has(self, word: str) -> bool:
        """Whether a word as written is in the list (normalized as this language's list was).
        A check reads the same words summary after summary: each answer is kept (normalizing
        and hashing cost ~5 us a word, a dict read a tenth of that), at most _SEEN_MAX of them."""
        seen = self._seen.get(word)
        if seen is None:
            seen = normalize(word, self.lang) in self
            if len(self._seen) >= _SEEN_MAX:
                self._seen.clear()
            self._seen[word] = seen
        return seen


_SEEN_MAX = 1 << 15


@lru_cache(maxsize=2)
def _index(name: str = "lexicon.bin") -> tuple:
    """(header, the filters' bytes) of data/<name>, opened once per process. The file is mapped,
    not read: a lookup touches a few of its pages, and the pages are the operating system's to
    share between the workers of a check (3.6 MB read by each would be 3.6 MB more each)."""
    import mmap
    with open(data_files.path(name), "rb") as f:
        try:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):     # not mappable (empty, or a file system without mmap): read it
            data = f.read()
    if data[:len(MAGIC)] != MAGIC:
        raise ValueError(f"compaction_guard/data/{name} is not a lexicon file; reinstall the package")
    end = data.find(b"\n", len(MAGIC))
    return json.loads(bytes(data[len(MAGIC):end])), memoryview(data)[end + 1:]


def lexicon(lang: str) -> Optional[Filter]:
    """The language's filter (fastText's code or wordfreq's), or None when there is none."""
    return _filter(CODES.get(lang, lang))


def everyday(lang: str) -> Optional[Filter]:
    """The language's everyday words (Zipf 4 or more: data/everyday.bin), or None."""
    return _filter(CODES.get(lang, lang), "everyday.bin")


@lru_cache(maxsize=128)
def _filter(lang: str, name: str = "lexicon.bin") -> Optional[Filter]:
    header, body = _index(name)
    entry = header["languages"].get(lang)
    if entry is None:
        return None
    start, m, k = entry["offset"], entry["bits"], entry["hashes"]
    # (normalize treats wordfreq's codes as fastText's: none of CODES is a language it changes)
    return Filter(body[start:start + (m + 7) // 8], m, k, lang)


def in_no_list(words: list, langs: tuple, have=frozenset()) -> Optional[list]:
    """For each of `words`, whether it is in none of the word lists of `langs` (those that
    have one) and not among `have` (the units of a text that vouches for it: the input); None
    when the first language has no word list (its words cannot be judged)."""
    filters = [(x, f) for x in dict.fromkeys(langs) if (f := lexicon(x)) is not None]
    if not filters or filters[0][0] != langs[0]:
        return None
    verdict = {}
    out = []
    for w in words:
        odd = verdict.get(w)
        if odd is None:
            odd = verdict[w] = w.lower().encode("utf-8", "surrogatepass") not in have \
                and not any(f.has(w) for _, f in filters)
        out.append(odd)
    return out
