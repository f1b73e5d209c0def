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
words) with `ungrounded_min_units` content units or more (a short summary is not judged);
or when one can be sure (`ungrounded_confidence_z`, 99%) that under
`ungrounded_confident_below` (`_cjk`) of the summary's distinct content units come from the
input: the Wilson upper bound of the share found weighs how many were judged (1 of 12 may
be a short paraphrase, 1 of 49 hardly); or, in a check of a store, when at most
`ungrounded_max_weighted_support` of its distinct content units, each weighted by how
rarely the store's inputs use it (overlap.Background), occur in the input: the words every
input of an agent shares are its genre, not a subject. Only when the summary is in the input's
language (shared function words above `language_same_overlap`, or fastText says so):
a summary in another language shares no words with its input whatever it says, and
language_drift speaks for it. Word salad (`Pogodzki, użyła, zaloguły, wierzeć`: a small model
writing the history's letters in no words of its language) shares a few of the history's
words and passes those rules; at a support up to `ungrounded_salad_max_support` it is
ungrounded when one can be sure (`ungrounded_confidence_z`) that over
`ungrounded_salad_min_unknown` of its words are neither in the input nor words of its
language, its input's or English (detectors/lexicon.py: real text stays under 0.25).
Measured on real text (tests/corpus/evaluate.py, set
`grounding`: Debian manual pages' overviews against their own page and another page in
the same language; set `model`: SmolLM2's outputs read by hand at low support).
"""
from __future__ import annotations

import itertools
import math
from functools import lru_cache
from typing import NamedTuple, Optional

from ..findings import Finding
from ..tokens import CJK_RE
from . import identifiers as ids
from .language import _name, identify
from .overlap import InputView, units
from .vocabulary import common_units, template_units


@lru_cache(maxsize=1)
def _never_specific() -> frozenset:
    """The units that are no history's specific content: the most frequent words of every
    language and the template's words (vocabulary.template_units), made once."""
    return common_units() | template_units()


def is_content(unit, common) -> bool:
    """A content unit: not among the most frequent words of any language, and (a word) of
    3 bytes or more; every CJK pair counts."""
    return unit not in common and not (isinstance(unit, bytes) and len(unit) < 3)


def _content_share(mine, have, common) -> tuple:
    """(found, judged, a few not found, how many are CJK pairs, distinct found, distinct judged)
    over the summary's content units."""
    n = found = pairs = types = types_found = 0
    shown = []
    for u, c in mine.items():
        if not is_content(u, common):
            continue
        n += c
        types += 1
        if not isinstance(u, bytes):
            pairs += c
        if u in have:
            found += c
            types_found += 1
        elif len(shown) < 5:
            shown.append(u.decode("utf-8", "replace") if isinstance(u, bytes) else u)
    return found, n, shown, pairs, types_found, types


def upper_bound(share: float, n: int, z: float) -> float:
    """The Wilson score upper bound of a share measured on n items: how high the true share
    can be, at the confidence z stands for, given what was seen."""
    if n <= 0:
        return 1.0
    z2 = z * z
    centre = share + z2 / (2 * n)
    spread = z * math.sqrt(max(share * (1 - share), 0.0) / n + z2 / (4 * n * n))
    return (centre + spread) / (1 + z2 / n)


class Support(NamedTuple):
    share: float          # content units (with repeats) and identifiers found in the input
    units: int            # content units judged
    missing: list         # a few content units not found
    cjk: float            # share of the content units that are CJK character pairs
    distinct: float       # share of the distinct content units and identifiers found
    distinct_n: int       # how many distinct ones were judged


def support(mine, content: str, view: InputView, searches: int = 64, summary_view: Optional[InputView] = None,
            recheck_at: float = -1.0) -> Support:
    """What of the summary the input supports (see Support). `mine`: the summary's unit counts
    (overlap.unit_counts). At `recheck_at` or under, the summary's words are looked for again
    among the input's words and the parts of its camelCase names (`authMiddleware`: `auth`,
    `middleware`), and the better support is kept: a prose summary of code says "middleware".
    The summary's own camelCase names stay whole: a junk `libSessions` is not grounded by a
    `lib/` in the input."""
    common = _never_specific()
    found, n_units, shown, pairs, t_found, t_n = _content_share(mine, view.unit_set, common)
    idents = set((summary_view or InputView(content)).identifiers(ids.scan))
    in_input = ids.Finder(view, searches)
    found_ids = sum(1 for i in idents if in_input(i)) if idents else 0
    n = n_units + len(idents)
    if not n:
        return Support(1.0, 0, [], 0.0, 1.0, 0)
    t_total = t_n + len(idents)
    share, distinct = (found + found_ids) / n, (t_found + found_ids) / t_total
    if min(share, distinct) <= recheck_at:
        found2, _, shown2, _, t_found2, _ = _content_share(mine, view.camel_unit_set, common)
        if found2 > found:
            share, shown, distinct = (found2 + found_ids) / n, shown2, (t_found2 + found_ids) / t_total
    return Support(share, n_units, shown, pairs / n_units if n_units else 0.0, distinct, t_total)


def salad(content: str, view: InputView, settings) -> Optional[tuple]:
    """(words in no dictionary, words judged, a few of them, the language) of the summary,
    or None when the summary's language has no word list (Chinese, Japanese, Korean, a
    language wordfreq lacks) or the summary has too few words. A word counts when it is
    neither in the input nor a word of the summary's language, of the input's or of English
    (technical English runs through every language's summaries): detectors/lexicon.py. Names in code
    (`SessionControllerImpl`, `lib/session.go`, `--user`, `-Iglobal`) are not words and
    are not judged."""
    from . import lexicon      # its word lists are opened on first use
    words = list(itertools.islice(lexicon.plain_words(content), settings.ungrounded_salad_max_words))
    if len(words) < settings.ungrounded_min_units:
        return None
    # the summary's words in the summary's language, and in its input's (a page whose body
    # was left in English under a translated overview reads as English)
    lang = identify(content)[0]
    flags = lexicon.in_no_list(words, (lang, identify(view.text)[0] if view.text else lang, "en"), view.unit_set)
    if flags is None:
        return None
    shown = list(dict.fromkeys(w for w, odd in zip(words, flags) if odd))[:5]
    return sum(flags), len(words), shown, lang


def weighted_share(mine, have, common, background) -> Optional[float]:
    """The share of the summary's distinct content units found in the input, each weighted
    by its rarity among the store's inputs (overlap.Background); None without a background."""
    if background is None:
        return None
    total = found = 0.0
    for u in mine:
        if not is_content(u, common):
            continue
        w = background.weight(u)
        total += w
        if u in have:
            found += w
    return found / total if total else None


def detect(content: str, settings, view: Optional[InputView], mine, same_language: Optional[bool],
           measures: Optional[dict] = None, summary_view: Optional[InputView] = None, background=None) -> list:
    """`background`: the store's overlap.Background, in a check of a store (None for a lone summary)."""
    if view is None or not same_language:
        return []
    # CJK text is cut into character pairs, and unrelated texts of one language share more
    # pairs than words: its own threshold (measured: own-page overviews 0.20 at the lowest)
    recheck = max(settings.ungrounded_max_support, settings.ungrounded_max_support_cjk,
                  settings.ungrounded_confident_below, settings.ungrounded_confident_below_cjk)
    sup = support(mine, content, view, settings.identifiers_max_searches, summary_view, recheck)
    share, n, missing = sup.share, sup.units, sup.missing
    if measures is not None:
        measures["grounding"] = round(share, 3)
        measures["content_words"] = n
    if n < settings.ungrounded_min_units:
        return []
    cjk = sup.cjk >= 0.5
    limit = settings.ungrounded_max_support_cjk if cjk else settings.ungrounded_max_support
    bound = upper_bound(sup.distinct, sup.distinct_n, settings.ungrounded_confidence_z)
    below = settings.ungrounded_confident_below_cjk if cjk else settings.ungrounded_confident_below
    figures = {"support": round(share, 3), "content_units": n, "distinct_support": round(sup.distinct, 3),
               "distinct_units": sup.distinct_n, "upper_bound": round(bound, 3), "not_in_input": missing}
    # measured only when the other two rules do not settle it
    weighted = weighted_share(mine, view.unit_set, common_units(), background) \
        if share > limit and bound > below else None
    if weighted is not None:
        figures["weighted_support"] = round(weighted, 3)
    odd = salad(content, view, settings) if share <= settings.ungrounded_salad_max_support \
        and share > limit and bound > below and not (weighted is not None
                                                    and weighted <= settings.ungrounded_max_weighted_support) else None
    odd_low = 1 - upper_bound(1 - odd[0] / odd[1], odd[1], settings.ungrounded_confidence_z) if odd else 0.0
    if odd:
        figures.update(salad_words=odd[1], salad_unknown=odd[0], salad_lower_bound=round(odd_low, 3), language=odd[3])
    if share <= limit:
        why = f"only {share:.0%} of the summary's {n} content words occur in the history"
    elif bound <= below:
        why = (f"only {sup.distinct:.0%} of the summary's {sup.distinct_n} distinct content words occur in the history "
               f"(at most {bound:.0%}, at the confidence ungrounded_confidence_z sets)")
    elif weighted is not None and weighted <= settings.ungrounded_max_weighted_support:
        why = (f"only {weighted:.0%} of the summary's content words occur in the history, each weighed by how rarely "
               f"this store's inputs use them ({share:.0%} unweighted: the words they share are the genre's)")
    elif odd and odd_low >= settings.ungrounded_salad_min_unknown:
        return [Finding("ungrounded", f"{odd[0]} of the summary's {odd[1]} words are neither in the history nor words of "
                        f"{_name(odd[3])} or English (like {', '.join(repr(w) for w in odd[2][:4])}), and "
                        f"{share:.0%} of its content words occur in the history: word salad, or names the history "
                        "never mentions; it is about nothing in the history; re-run compaction", figures=figures)]
    else:
        return []
    return [Finding("ungrounded", f"{why} (not in it: {', '.join(repr(m) for m in missing[:4])}, ...): it is about "
                    "something else; re-run compaction", figures=figures)]


def names_other_things(findings: list, share: Optional[float], settings) -> list:
    """`ungrounded` for a summary that names things of its own and none of its history's:
    every one of its identifiers (ungrounded_other_min_identifiers or more) occurs nowhere in
    the history, it keeps none of the history's key identifiers (ungrounded_other_min_key or
    more), and at most ungrounded_other_max_support of its content words occur there. The
    summary of another conversation, or a prompt stored with its examples (Gemini CLI's own
    compression prompt, `src/auth.ts` and `/home/user/project/src`, over a history of
    tickets and files). `findings`: identifiers.detect's, which measured both."""
    invented = next((f for f in findings if f.kind == "invented_identifiers"), None)
    lost = next((f for f in findings if f.kind == "lost_identifiers"), None)
    if invented is None or lost is None or share is None or share > settings.ungrounded_other_max_support:
        return []
    mine, own = invented.figures["identifiers"], invented.figures.get("invented_count", 0)
    key = lost.figures["key_identifiers"]
    if own < mine or mine < settings.ungrounded_other_min_identifiers or lost.figures["retention"] > 0 \
            or key < settings.ungrounded_other_min_key:
        return []
    return [Finding("ungrounded", f"none of the summary's {mine} identifiers occurs in the history (like "
                    f"{', '.join(repr(i) for i in invented.figures['invented'][:3])}), it keeps none of the history's "
                    f"{key} ({', '.join(repr(d) for d in lost.figures['dropped'][:3])}, ...), and {share:.0%} of its "
                    "content words occur there: it is about something else; re-run compaction",
                    figures={"identifiers": mine, "key_identifiers": key, "support": round(share, 3)})]


def nothing_specific(content: str, settings, view: InputView, mine, summary_view: InputView,
                     input_tokens: Optional[int] = None, previous: Optional[str] = None) -> list:
    """A long history (ungrounded_specific_min_history_tokens or more, the summary in its
    language) summarized by text that shares none of its specific content: of the summary's
    distinct content units (ungrounded_specific_min_units or more), none that occurs in the
    history (or the summary it replaced) is a rare word (not among its language's or
    English's everyday words, Zipf 4: data/everyday.bin), a CJK character pair, or one of its
    identifiers. A summary of thousands of tokens of work names something of that work (a
    file, a command, a name, a number); text that shares only everyday words ("help",
    "clear", "format", "user") with it is about something else, or about nothing: a reply to
    an empty request, the request's own instructions. Judged only when the text seen is at
    least empty_info_min_seen_share of the tokens the store says were condensed. Measured:
    real overviews of their own manual page share at least one rare word with it over 1,200
    tokens and more (evaluate.py, set grounding); the generated information-free sets."""
    from . import lexicon
    seen = view.tokens
    if seen < settings.ungrounded_specific_min_history_tokens:
        return []
    if input_tokens and seen < settings.empty_info_min_seen_share * input_tokens:
        return []
    common = _never_specific()
    distinct = [u for u in mine if is_content(u, common)]
    if len(distinct) < settings.ungrounded_specific_min_units:
        return []
    filters = [(x, f) for x in dict.fromkeys(("en", identify(content)[0])) if (f := lexicon.everyday(x))]
    if len(filters) < 2 and any(isinstance(u, str) for u in distinct):
        return []                       # CJK with no everyday list: its pairs cannot be told apart
    have = view.unit_set
    before = frozenset(units(previous)) if previous else frozenset()
    shared = [u for u in distinct if u in have or u in before]
    for u in shared:
        if isinstance(u, str):
            return []                   # a CJK pair of the history
        word = u.decode("utf-8", "surrogatepass")
        if not any(f.has(word) for _, f in filters):
            return []                   # a rare word of the history
    idents = summary_view.identifiers(ids.scan)
    if idents:
        found = ids.Finder(view, settings.identifiers_max_searches)
        if any(found(i) or (previous and i in previous) for i in idents):
            return []
    everyday = sorted(w.decode("utf-8", "surrogatepass") for w in shared)[:5]
    size = f"{input_tokens}-token" if input_tokens else f"about {seen}-token"
    what = (f"the words it shares with it are everyday words ({', '.join(repr(w) for w in everyday)})" if shared
            else "none of its words occurs in it")
    return [Finding("ungrounded", f"shares nothing specific with the {size} history it stands for: no name, "
                    f"identifier, number or rare word of it in its {len(distinct)} content words; {what}: it is "
                    "not a summary of that history (a reply to an empty request, or text about something "
                    "else); re-run compaction",
                    figures={"content_units": len(distinct), "shared_units": len(shared), "shared_rare": 0,
                             "history_tokens": seen})]
