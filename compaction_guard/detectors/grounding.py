"""ungrounded: a summary that shares almost nothing with the history it condenses.

A small model that does not read its input writes about something else: given a
billing-support chat, "a lovely girl" and `@gemma_cressida`; given a French code review,
French sentences about nothing in it. The text is well-formed, so no other detector
sees it; the agent would resume on an invented past.

Support: of the summary's content units (words of 3+ bytes and CJK bigrams that are not
among the most frequent words of any of 42 languages: data/common_words.txt, from
wordfreq; see scripts/make_common_words.py) and its identifiers (detectors/identifiers.py),
the share found in the input (detectors/overlap.py cuts both sides the same way). A
summary paraphrases, but it names what the history names: the command, the file, the
service, the ticket.

Failure at `ungrounded_max_support` or less (`ungrounded_max_support_cjk` when most of
the content units are CJK character pairs, which unrelated texts share more often than
words) with `ungrounded_min_units` content units or more (a short summary is not judged), only when the summary is in the input's
language (shared function words above `language_same_overlap`, or fastText says so):
a summary in another language shares no words with its input whatever it says, and
language_drift speaks for it. Measured on real text (tests/corpus/evaluate.py, set
`grounding`: Debian manual pages' overviews against their own page and another page in
the same language; set `model`: SmolLM2's outputs read by hand at low support).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

from ..findings import Finding
from ..tokens import CJK_RE
from . import identifiers as ids
from .overlap import InputView


@lru_cache(maxsize=1)
def common_units() -> frozenset:
    """The units of data/common_words.txt (bytes for words, str for CJK bigrams, as overlap.units cuts),
    read once per process."""
    from importlib.resources import files
    out = set()
    text = files("compaction_guard").joinpath("data/common_words.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            out.add(line if len(line) == 2 and CJK_RE.search(line) else line.encode("utf-8"))
    return frozenset(out)


def _content_share(mine, have, common) -> tuple:
    """(found, judged, a few not found, how many are CJK pairs) over the summary's content units."""
    n = found = pairs = 0
    shown = []
    for u, c in mine.items():
        if u in common or (isinstance(u, bytes) and len(u) < 3):
            continue
        n += c
        if not isinstance(u, bytes):
            pairs += c
        if u in have:
            found += c
        elif len(shown) < 5:
            shown.append(u.decode("utf-8", "replace") if isinstance(u, bytes) else u)
    return found, n, shown, pairs


def support(mine, content: str, view: InputView, searches: int = 64, summary_view: Optional[InputView] = None,
            recheck_at: float = -1.0) -> tuple:
    """(support, content units judged, a few content units not found, share of them that are
    CJK character pairs). `mine`: the summary's unit counts (overlap.unit_counts). At
    `recheck_at` or under, the summary's words are looked for again among the input's words
    and the parts of its camelCase names (`authMiddleware`: `auth`, `middleware`), and the
    better support is kept: a prose summary of code says "middleware". The summary's own
    camelCase names stay whole: a junk `libSessions` is not grounded by a `lib/` in the input."""
    common = common_units()
    found, n_units, shown, pairs = _content_share(mine, view.unit_set, common)
    idents = list((summary_view or InputView(content)).identifiers(ids.scan))
    in_input = ids.Finder(view, searches)
    found_ids = sum(1 for i in idents if in_input(i)) if idents else 0
    n = n_units + len(idents)
    if not n:
        return 1.0, 0, [], 0.0
    share = (found + found_ids) / n
    if share <= recheck_at:
        found2, _, shown2, _ = _content_share(mine, view.camel_unit_set, common)
        if found2 > found:
            share, shown = (found2 + found_ids) / n, shown2
    return share, n_units, shown, pairs / n_units if n_units else 0.0


def detect(content: str, settings, view: Optional[InputView], mine, same_language: Optional[bool],
           measures: Optional[dict] = None, summary_view: Optional[InputView] = None) -> list:
    if view is None or not same_language:
        return []
    # CJK text is cut into character pairs, and unrelated texts of one language share more
    # pairs than words: its own threshold (measured: own-page overviews 0.20 at the lowest)
    limit = max(settings.ungrounded_max_support, settings.ungrounded_max_support_cjk)
    share, n, missing, cjk = support(mine, content, view, settings.identifiers_max_searches, summary_view, limit)
    if measures is not None:
        measures["grounding"] = round(share, 3)
        measures["content_words"] = n
    limit = settings.ungrounded_max_support_cjk if cjk >= 0.5 else settings.ungrounded_max_support
    if n < settings.ungrounded_min_units or share > limit:
        return []
    return [Finding("ungrounded", f"only {share:.0%} of the summary's {n} content words occur in the history (not "
                    f"in it: {', '.join(repr(m) for m in missing[:4])}, ...): it is about something else; re-run "
                    "compaction", figures={"support": round(share, 3), "content_units": n, "not_in_input": missing})]
