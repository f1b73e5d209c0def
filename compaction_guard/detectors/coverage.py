"""coverage: a summary that carries the start of its history and nothing of its end.

A fluent summary of a session's first turns that never reaches the later ones passes every
check of the whole (it is grounded, in the history's language, names the history's things),
and the agent resumes the work it had already done (openai/codex #25686). So the history is
read turn by turn: each of its specifics (`atoms`: identifiers, code names, figures, dates,
versions, written in any script) and each of its rare words (word units no language uses every
day, not the compactors' own; CJK character pairs without kana) counts in the turn that first
holds it, and is kept when the summary holds it. A turn bringing `coverage_min_turn_features` or
more is counted. The summary fails when, from some counted turn on, `coverage_min_late_turns` or
more counted turns (the user speaking in one of them at least) bring `coverage_min_late` or more
features over at least `coverage_min_tail` of the history, and the summary keeps at most
`coverage_max_late_kept` of what each brings (one word by chance aside), while it carries
something of `coverage_min_early_turns` counted turns before and at least
`coverage_min_early_share` of what they bring: it covers the start and stops. The reason says
from which turn on the history is missing (its first line) and what was dropped. A history
shorter than `coverage_min_history_chars`, or of fewer turns, is not judged.

`atoms` also serve staleness (stale.py): what the history since the last compaction holds
that an unchanged summary lacks.
"""
from __future__ import annotations

import re
from typing import Optional

from ..findings import Finding
from .overlap import units

# A specific, in any script: a run of Latin letters, digits and the characters names are
# joined with, that holds a digit (a figure, a version, a date, a time, a ticket) or joins
# words (`MAX_ATTEMPTS`, `syncJob.timeoutSeconds`, `src/sync/retry.py`, `priya.raman@example.com`);
# a lone digit is no specific (`4` of "4 attempts" is in every text).
_ATOM_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:/@+-]*[A-Za-z0-9])?")
_JOINED_RE = re.compile(r"[A-Za-z0-9][._/@][A-Za-z0-9]|[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]")
_DIGITS_RE = re.compile(r"\d")


def _is_atom(a: str) -> bool:
    digits = len(_DIGITS_RE.findall(a))
    if digits:
        return digits >= 2 or any(c.isalpha() for c in a)
    return _JOINED_RE.search(a) is not None


def atoms(text: str) -> list:
    """(atom, offset) of each specific in `text`, in order (repeats included)."""
    out = []
    for m in _ATOM_RE.finditer(text):
        a = m.group(0)
        if len(a) >= 2 and _is_atom(a):
            out.append((a, m.start()))
    return out


def flat(text: str) -> str:
    """The text lowercased with its whitespace removed: where an atom is looked for."""
    return "".join(text.lower().split())


def kept(atom: str, flat_text: str) -> bool:
    return atom.lower() in flat_text


def said(history: str, settings) -> str:
    """What the user said in a conversation: the turns of its first speaker (a history's first turn
    is the user's), tool calls (`[tool name] {...}`) left out; the whole history when it has no speakers."""
    turns = _turns(history, settings)
    if not turns:
        return history
    first = _speaker(turns[1][1] if len(turns) > 1 and _speaker(turns[0][1]) is None else turns[0][1])
    return "\n".join(ln for _, t in turns if _speaker(t) == first for ln in t.splitlines()
                     if not ln.lstrip().startswith("[tool "))


def missing(history: str, summary: str, limit: int = 12) -> list:
    """The history's distinct atoms the summary does not hold, in order of first occurrence."""
    where = flat(summary)
    out, seen = [], set()
    for a, _ in atoms(history):
        k = a.lower()
        if k in seen:
            continue
        seen.add(k)
        if not kept(a, where):
            out.append(a)
            if len(out) >= limit:
                break
    return out


def _turns(history: str, settings) -> list:
    """(offset, text) of each turn of a conversation: a line opening with one of the history's
    speakers (transcript.speakers: `user:`, `assistant:`, `[10:35] ana:`) starts one, and it runs to the
    next; what comes before the first is a turn of its own. [] when the history has fewer than two
    speakers (a document, a log: not a conversation)."""
    from .transcript import _TURN_RE, speakers
    who = speakers(history, settings)
    if len(who) < 2:
        return []
    starts = [m.start() for m in _TURN_RE.finditer(history) if m.group(1).lower() in who]
    if not starts:
        return []
    if starts[0] > 0:
        starts.insert(0, 0)
    return [(a, history[a:b]) for a, b in zip(starts, starts[1:] + [len(history)])]


_HIRAGANA_RE = re.compile("[\u3040-\u309f]")


def _rare_word(settings, history: str):
    """A test of a word unit: a content word no language uses every day (not among the most frequent
    words of any language, not the compactors' own, not an everyday word of English or the history's
    language: data/everyday.bin), or a CJK character pair with no hiragana (kana pairs are grammar)."""
    from . import lexicon
    from .vocabulary import common_units, template_units
    from .language import identify
    skip = common_units() | template_units()
    filters = [f for x in dict.fromkeys(("en", identify(history[:2000])[0])) if (f := lexicon.everyday(x))]

    def rare(u) -> bool:
        if u in skip:
            return False
        if isinstance(u, str):
            return " " not in u and not _HIRAGANA_RE.search(u)
        if len(u) < 4 or not u.isalpha():
            return False
        word = u.decode("utf-8", "surrogatepass")
        return not any(f.has(word) for f in filters)
    return rare


def _new_features(turns: list, rare) -> list:
    """For each turn, the atoms and rare words it is the first to hold: [(atoms, words)]."""
    seen_atoms, seen_words, out = set(), set(), []
    for _, text in turns:
        atoms_here, words_here = [], []
        for a, _ in atoms(text):
            k = a.lower()
            if k not in seen_atoms:
                seen_atoms.add(k)
                atoms_here.append(a)
        for u in units(text):
            if u in seen_words:
                continue
            seen_words.add(u)
            if rare(u):
                words_here.append(u)
        out.append((atoms_here, words_here))
    return out


def detect(content: str, settings, view, previous: Optional[str] = None) -> list:
    """`view`: the history's overlap.InputView (the history since the last compaction)."""
    history = view.text
    if len(history) < settings.coverage_min_history_chars or len(content) < 40:
        return []
    turns = _turns(history, settings)
    if len(turns) < settings.coverage_min_late_turns + settings.coverage_min_early_turns:
        return []
    where = flat(content)
    mine = frozenset(units(content))
    # per turn: its new features, and how many of them the summary keeps
    per = []
    for a, w in _new_features(turns, _rare_word(settings, history)):
        n = len(a) + len(w)
        k = sum(1 for x in a if kept(x, where)) + sum(1 for u in w if u in mine)
        per.append((n, k))
    counted = [i for i, (n, _) in enumerate(per) if n >= settings.coverage_min_turn_features]
    first = _speaker(turns[1][1] if len(turns) > 1 and _speaker(turns[0][1]) is None else turns[0][1])
    # the earliest counted turn from which no counted turn is carried (none keeps more than
    # coverage_max_late_kept of what it brings) and the first speaker (the user) speaks at least once,
    # with coverage_min_early_turns carried before it
    for j, i in enumerate(counted):
        late = counted[j:]
        if len(late) < settings.coverage_min_late_turns:
            break
        # (one word a turn may match by chance: a CJK pair, a name)
        if any(per[x][1] >= 2 and per[x][1] > settings.coverage_max_late_kept * per[x][0] for x in late):
            continue
        if first is not None and not any(_speaker(turns[x][1]) == first for x in late):
            continue
        early_carried = sum(1 for x in counted[:j] if per[x][1] > 0)
        if early_carried < settings.coverage_min_early_turns:
            continue
        # what it carries of the start, it carries well (a gist of a long pasted log carries little of it)
        n_early = sum(per[x][0] for x in counted[:j])
        if sum(per[x][1] for x in counted[:j]) < settings.coverage_min_early_share * n_early:
            continue
        n_late = sum(per[x][0] for x in late)
        k_late = sum(per[x][1] for x in late)
        at = turns[i][0]
        if n_late < settings.coverage_min_late or (len(history) - at) < settings.coverage_min_tail * len(history):
            continue
        # named by the first of the user's turns it lost (the first speaker's), else its first turn
        after = counted[j - 1] + 1 if j else 0
        named = next((x for x in range(after, len(turns)) if first is not None and _speaker(turns[x][1]) == first
                      and not (x in late and per[x][1] >= 2)), i)
        line = " ".join(turns[named][1][:200].split())[:70]
        dropped = []
        for x in late:
            dropped += [d for d in per_atoms(turns[x][1], where) if d not in dropped]
        dropped = dropped[:6]
        dropped_s = ", ".join(repr(d) for d in dropped)
        share = at / len(history)
        return [Finding("coverage", f"the summary carries the history up to about {share:.0%} and nothing after it: "
                        f"from the turn {line!r} on ({len(late)} turns, {n_late - k_late} of their {n_late} new "
                        f"specifics and content words missing" + (f": {dropped_s}" if dropped else "") + "); the "
                        "latest work is lost, re-run compaction",
                        figures={"from": round(share, 3), "turn": i, "turns": len(turns), "late_turns": len(late),
                                 "late": n_late, "late_kept": k_late, "dropped": dropped})]
    return []


def _speaker(turn: str):
    """The label a turn opens with (lowercased), or None."""
    from .transcript import _TURN_RE
    m = _TURN_RE.match(turn)
    return m.group(1).lower() if m else None


def per_atoms(text: str, where: str) -> list:
    """The atoms of a text the summary (flattened: `where`) does not hold."""
    return [a for a, _ in atoms(text) if not kept(a, where)]
