"""The words that are no history's specific content, in every language, shared by the
detectors that weigh what a summary carries (empty, grounding, coverage): the most frequent
words of 42 languages (data/common_words.txt), and the compactors' own words and the words of
"nothing" (data/compaction_vocabulary.txt, data/nothing_words.txt), as overlap.units cuts them
(bytes for words, str for CJK pairs), each read once per process."""
from __future__ import annotations

from functools import lru_cache

from .. import data_files
from ..tokens import CJK_RE
from .overlap import units


@lru_cache(maxsize=1)
def common_units() -> frozenset:
    """The units of data/common_words.txt (bytes for words, str for CJK bigrams, as overlap.units cuts),
    read once per process."""
    out = set()
    text = data_files.read_text("common_words.txt")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            out.add(line if len(line) == 2 and CJK_RE.search(line) else line.encode("utf-8"))
    return frozenset(out)


@lru_cache(maxsize=1)
def _vocabulary() -> tuple:
    """(the units that carry nothing, with their inflections; the units both the template and
    work text use: the vocabulary's `~` lines, which weigh nothing either way; the units that
    carry nothing as the files list them)."""
    out, shared, raw = set(), set(), set()
    for name in ("compaction_vocabulary.txt", "nothing_words.txt"):
        text = data_files.read_text(name)
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            if line.startswith("~"):
                shared.update(units(line[1:]))
                continue
            words = line.split()[1:] if name == "nothing_words.txt" else line.split()
            for w in words:
                for u in units(w):
                    raw.add(u)
                    out.update(_inflected(u))
    return frozenset(out), frozenset(shared - out), frozenset(raw)


def template_units() -> frozenset:
    """The compactors' own words and the words of "nothing" (data/compaction_vocabulary.txt,
    data/nothing_words.txt) as word units: no specific content of any history (grounding
    leaves them out of what a summary shares with its history), as the files list them."""
    return _vocabulary()[2]


_SUFFIXES = (b"ing", b"ed", b"es", b"s", b"d")


def _inflected(u) -> set:
    """A word and its English inflections, crudely (`reference`: `references`, `referenced`,
    `referencing`; `summarize`: `summarized`, `summarizing`): the compactors' words are English,
    and a model writes them inflected otherwise. Listed once, when the vocabulary is read, so
    a summary's words are looked up in one set."""
    out = {u}
    if isinstance(u, bytes) and len(u) > 3 and u.isalpha():
        stem = u
        for suf in _SUFFIXES:             # `decisions`, `needed`: from their stem
            if len(u) > len(suf) + 3 and u.endswith(suf):
                stem = u[:-len(suf)]
                break
        stem = stem.rstrip(b"e")
        out.add(stem)
        for base in (stem, stem + b"e"):
            out.add(base)
            for suf in _SUFFIXES + (b"er", b"ers"):
                out.add(base + suf)
        if u.endswith(b"y"):
            out.update((u[:-1] + b"ies", u[:-1] + b"ied"))
    return out
