"""What a summary shares with its input, measured once and read by several detectors.

A summary condenses a history: it reuses the history's words, and in the history's
language it reuses its function words too. `Overlap` measures the share of the
summary's word units that occur in the input (`shared`). language_drift reads it as
"same language" above `language_same_overlap` (a summary in another language shares
almost none of its input's words: 0.09 at the 95th percentile on 742 real
cross-language pairs, against a median of 1.0 for summaries of their own history) and
then skips identification, its costliest step.

Units are script-aware and cheap: the text lowercased, as UTF-8 bytes, punctuation,
digits and identifier characters mapped to spaces in one `bytes.translate`, split on
whitespace (~4x faster than a regex over the text); a run of Han, kana or Hangul
(written without spaces, or with particles glued to words) becomes its character
bigrams. Both sides are cut the same way, so what the cut misses it misses on both.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Optional

from ..tokens import CJK_RE, CJK_RUN_RE, pieces

_SEPARATORS = b".,;:!?()[]{}\"'`<>*|=+~^$&\\/-_#@%0123456789"
_TABLE = bytes.maketrans(_SEPARATORS, b" " * len(_SEPARATORS))

_NOT_CJK_RUN_RE = re.compile("[^" + CJK_RE.pattern[1:] + "+")
# punctuation outside ASCII: guillemets, curly quotes, dashes, ellipsis, CJK and
# full-width marks (`«terminé»` is the word `terminé`)
_WIDE_PUNCT_RE = re.compile("[\u00a0\u00ab\u00bb\u00bf\u00a1\u2010-\u206f\u3000-\u303f\uff01-\uff0f\uff1a-\uff20"
                            "\uff3b-\uff40\uff5b-\uff65\u0964\u0965\u060c\u061b\u061f\u06d4]")
# (what ends a word unit, for a cut between units: detectors/empty.py)
SEPARATORS, WIDE_PUNCT_RE = _SEPARATORS, _WIDE_PUNCT_RE


# a lowercase letter then an uppercase one: the seam of a camelCase name (`authMiddleware`
# is `auth` and `middleware`, words a prose summary of the code would use)
_CAMEL_RE = re.compile(r"(?<=[a-z])(?=[A-Z])")


def units(text: str, camel: bool = False) -> list:
    """The text's word units, in order: words (bytes), then the bigrams of its CJK runs (str);
    with `camel`, camelCase names cut at their seams (a regex pass: twice the cost)."""
    if camel:
        text = _CAMEL_RE.sub(" ", text)
    if text.isascii():
        return text.lower().encode().translate(_TABLE).split()
    text = _WIDE_PUNCT_RE.sub(" ", text)
    if not CJK_RE.search(text):
        return text.lower().encode("utf-8", "surrogatepass").translate(_TABLE).split()
    out = CJK_RUN_RE.sub(" ", text).lower().encode("utf-8", "surrogatepass").translate(_TABLE).split()
    cjk = _NOT_CJK_RUN_RE.sub(" ", text)
    # each character with the next, in C (a bigram across two runs holds the space that
    # parted them: the same on both sides)
    out.extend(map(str.__add__, cjk, cjk[1:]) if len(cjk) > 1 else [cjk])
    return out


def unit_counts(text: str) -> Counter:
    """The text's units and how often each occurs, in first-seen order; a long text piece by
    piece (memory: its vocabulary, not its length)."""
    out = Counter()
    for _, piece in pieces(text):
        out.update(units(piece))
    return out


class InputView:
    """A text's figures (the input's, or the summary's own), each computed on first use
    and kept for the other detectors of the same summary."""

    __slots__ = ("text", "_units", "_camel_units", "_norm", "_idents", "_ident_index", "_tokens")

    def __init__(self, text: str):
        self.text = text
        self._tokens: Optional[int] = None
        self._units: Optional[frozenset] = None
        self._camel_units: Optional[frozenset] = None
        self._norm: Optional[str] = None
        self._idents: Optional[dict] = None
        self._ident_index: Optional[frozenset] = None

    @property
    def tokens(self) -> int:
        """The text's size in tokens (tokens.estimate_tokens)."""
        if self._tokens is None:
            from ..tokens import estimate_tokens
            self._tokens = estimate_tokens(self.text)
        return self._tokens

    @property
    def norm(self) -> str:
        """The text lowercased, whitespace removed (where identifiers are looked for)."""
        if self._norm is None:
            self._norm = "".join("".join(p.lower().split()) for _, p in pieces(self.text))
        return self._norm

    @property
    def unit_set(self) -> frozenset:
        if self._units is None:
            have = set()
            for _, piece in pieces(self.text):
                have.update(units(piece))
            self._units = frozenset(have)
        return self._units

    @property
    def camel_unit_set(self) -> frozenset:
        """The unit set and the parts of its camelCase names (`authMiddleware` also as `auth`
        and `middleware`); asked for only when the plain words leave a summary nearly
        unsupported: code names what a prose summary of it says in words."""
        if self._camel_units is None:
            have = set(self.unit_set)
            for _, piece in pieces(self.text):
                have.update(units(piece, camel=True))
            self._camel_units = frozenset(have)
        return self._camel_units

    def identifiers(self, scan) -> dict:
        """{identifier: [uses weighted 1 to 2 by how late they come, uses, last position]} of
        the text, by `scan` (detectors/identifiers.py): one pass, memory by distinct identifiers."""
        if self._idents is None:
            out = {}
            for ident, pos in scan(self.text):
                st = out.get(ident)
                if st is None:
                    out[ident] = [1.0 + pos, 1, pos]
                else:
                    st[0] += 1.0 + pos
                    st[1] += 1
                    st[2] = pos
            self._idents = out
        return self._idents

    def identifier_index(self, scan, variants) -> frozenset:
        """The text's identifiers as `variants` writes them (normalized, and the other ways
        of writing the same one), each path also by every tail at a `/` (`src/app.ts` is
        found in `/repo/src/app.ts`): an identifier is looked up in this set, not searched
        for in the whole text."""
        if self._ident_index is None:
            out = set()
            for ident in self.identifiers(scan):
                for key in variants(ident):
                    out.add(key)
                    k = key.find("/")
                    while k >= 0:
                        if key[k + 1:]:
                            out.add(key[k + 1:])
                        out.add(key[k:])
                        k = key.find("/", k + 1)
            self._ident_index = frozenset(out)
        return self._ident_index


def shared(mine: Counter, view: InputView) -> float:
    """The share of the summary's units (`unit_counts(summary)`) found in the input."""
    total = sum(mine.values())
    if not total:
        return 0.0
    have = view.unit_set
    return sum(c for u, c in mine.items() if u in have) / total


class Background:
    """How many of a store's inputs use each word unit (document frequency), from a sample
    of them: the words most inputs share are the store's genre (an agent's vocabulary of
    options, files and commands), the ones few use are what one conversation is about."""

    __slots__ = ("counts", "n")

    def __init__(self, counts: dict, n: int):
        self.counts = counts
        self.n = n

    @classmethod
    def of(cls, texts, min_inputs: int) -> Optional["Background"]:
        """The background of `texts` (input texts), or None under `min_inputs` of them."""
        counts = Counter()
        n = 0
        for t in texts:
            if t:
                counts.update(InputView(t).unit_set)
                n += 1
        return cls(dict(counts), n) if n >= min_inputs else None

    def weight(self, unit) -> float:
        """The unit's inverse document frequency: rare in the store, heavy."""
        return math.log((self.n + 1) / (self.counts.get(unit, 0) + 0.5))
