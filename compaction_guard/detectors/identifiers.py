"""invented_identifiers and lost_identifiers (warnings): the exact strings an agent acts on.

OpenClaw's safeguard prompt asks the model to keep exact identifiers; nothing checks it.
An identifier here is a string whose every character matters and that a reader cannot
rebuild from the gist: a URL, an e-mail address, a path (two or more segments), a
ticket or record id (`SUP-77410`, `sum_3f9a…`, `PR #1893`), a hash (hex with letters and
digits), a version (`v2.3.1`), a figure with a unit (`38.2 GB`, `140 ms`, `12%`).

- invented_identifiers: identifiers in the summary found nowhere in the input (case and
  spacing aside; a path is found when the input holds it or a longer path ending in it).
  A small model that does not read the history writes `@gemma_cressida` and ticket
  numbers of its own. The reason lists a few.
- lost_identifiers: the share of the input's key identifiers (used twice or more, or in
  its last quarter) the summary kept, each weighted by how often and how late it occurs
  (the latest state matters most); a warning under `identifiers_min_retention`, naming a
  few that were dropped.
A figure a summary can compute from its history is not invented: a total, a sum per week or an
average of figures the history gives in that unit (two or more of them), a rate as a percentage
of what the history counts (two or more numbers). A trading journal's summary holding its week's
total and win rate names what the history implies, not what it never had.
A summary's structure names nothing: identifiers written only in its headings (`##
Constraints/Rules` is a heading, not a path) or in the file lists a compactor appends as
bookkeeping (`<read-files>` / `<modified-files>` blocks: OpenClaw carries them across
compactions from tool calls the history may no longer hold) are not its claims.
Both only where the input text is known. invented_identifiers is a failure when the
summary invents `identifiers_fail_invented` or more and they are at least
`identifiers_fail_invented_share` of its identifiers: real overviews of their own manual
page invent 2 at most (a file the rest of the page does not name), real small-model
summaries 6 to 21 (`SOP-82729`, `0.1.2.0`, `106ms`). lost_identifiers stays a warning: a
short summary may rightly keep few of a long history's identifiers.
"""
from __future__ import annotations

import bisect
import re
from typing import Optional

from ..findings import Finding
from ..tokens import pieces
from .overlap import InputView

# Tested token by token (whitespace-split, edge punctuation stripped), each shape
# anchored to the whole token: linear in the text, whatever its words look like. A
# bare number is a figure when a unit follows it (`38.2 GB`).
_SHAPES = re.compile(
    r"[a-z][a-z0-9+.-]*://\S+"                                     # URL (https://, s3://, ...)
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"                                # e-mail
    r"|(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*[^\W\d_][\w.-]*(?::\d+){0,2}"  # path (two segments or more, a letter
                                                                    # last), with its line and column
    r"|[A-Z][A-Z0-9]{1,9}-\d{1,7}"                                  # ticket: SUP-77410
    r"|[a-z]{2,}_[0-9a-f]{6,}"                                      # record id: sum_3f9a1c
    r"|#\d{2,}"                                                     # PR #1893, issue #42
    r"|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}"             # hash
    r"|v?\d+\.\d+\.\d+(?:[-.][\w.]+)?|v\d+\.\d+"                     # version
    r"|\d+(?:[.,]\d+)?(?:ms|s|min|h|KB|MB|GB|TB|KiB|MiB|GiB|%)"      # figure with its unit attached
)
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)?")
_EDGE = ".,;:!?)]}\"'`"
_LEAD = "([{\"'`<"


# a token holding one of the characters every shape needs
_SPECIAL_RE = re.compile(r"[/@#_%\d]")
_UNITS = frozenset(("ms", "s", "min", "h", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "%"))


def scan(text: str):
    """(identifier, relative position 0..1) for each identifier in `text`, in order: its
    whitespace-separated tokens (a long text piece by piece), each holding a shape's
    character tested whole."""
    size = len(text) or 1
    shape, number, special = _SHAPES.fullmatch, _NUMBER_RE.fullmatch, _SPECIAL_RE.search
    for offset, piece in pieces(text):
        toks = piece.split()
        n = len(toks) or 1
        scale = len(piece) / n
        for i, raw in enumerate(toks):
            if raw.isalpha() or not special(raw):
                continue
            t = raw.strip(_LEAD).rstrip(_EDGE)
            if len(t) < 2:
                continue
            if not t.isdigit() and shape(t):
                if len(t) >= 3:
                    yield t, (offset + i * scale) / size
            elif (t.isdigit() or number(t)) and raw.endswith(t) and i + 1 < n \
                    and toks[i + 1].rstrip(_EDGE) in _UNITS:
                yield f"{t} {toks[i + 1].rstrip(_EDGE)}", (offset + i * scale) / size        # "38.2 GB"


def _norm(s: str) -> str:
    return "".join(s.lower().split())


# Ways one identifier is written that name the same thing: a path with a line (and
# column) or a GitHub line anchor, a version with or without its `v`, an issue number
# with or without its `#` (`#1893` is `pull/1893` in a URL).
_LOCATION_RE = re.compile(r"(?::\d+){1,2}$|#l\d+(?:-l\d+)?$")


def _variants(ident: str) -> list:
    """The identifier normalized (case and spacing aside), then its other spellings."""
    key = _norm(ident)
    out = [key]
    bare = _LOCATION_RE.sub("", key)
    if bare != key and bare:
        out.append(bare)
    if len(key) > 1 and key[0] == "v" and key[1].isdigit():
        out.append(key[1:])
    if key.startswith("#") and key[1:].isdigit():
        out.append("/" + key[1:])
    return out


_HASH_RE = re.compile(r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}")
_NUMBER_NAMES = ("pr", "pr#", "pullrequest", "pullrequest#", "issue", "issue#", "mr", "mr!", "!")


class Finder:
    """Whether an identifier occurs in a text, case and spacing aside (a path also as the
    tail of a longer one, a path:line as its path, a version with or without `v`, `#N` as
    `/N` in a URL): looked up in the text's identifier index; what the index does not hold
    is searched for in the whole text, at most `searches` times (an identifier written
    inside a longer token): linear in the text whatever the number of identifiers."""

    def __init__(self, view, searches: int):
        self.view = view
        self.index = view.identifier_index(scan, _variants)
        self.searches = searches

    def __call__(self, ident: str) -> bool:
        keys = _variants(ident)
        if any(k in self.index for k in keys):
            return True
        key = keys[0]
        if len(key) > 7 and _HASH_RE.fullmatch(key):
            # git's short form of a hash, its first 7 to 12 characters (`9f8e7d6` of `9f8e7d6a…`)
            short = [key[:n] for n in range(7, min(13, len(key)))]
            if any(k in self.index for k in short):
                return True
        elif key[:1] == "#" and key[1:].isdigit():
            # an issue or pull request number written out (`PR 4512`, `pull request 4512`,
            # `issue #4512`, GitLab's `!4512`): spacing is gone from both sides
            keys = keys + [p + key[1:] for p in _NUMBER_NAMES]
        if self.searches <= 0:
            return False
        self.searches -= 1
        hay = self.view.norm
        return any(k in hay for k in keys)


# headings, and the tagged file lists compactors append (`<read-files>`...`</read-files>`)
_STRUCTURE_RE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t][^\n]*$|<([a-z]+-files)>.*?</\1>", re.M | re.S)


_FIGURE_RE = re.compile(r"([-+\u2212]?\d+(?:[.,]\d+)?)\s?(ms|s|min|h|KB|MB|GB|TB|KiB|MiB|GiB|%)")
_NUM_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")


_LIST_BEFORE_RE = re.compile(r"((?:\d+(?:[.,]\d+)?\s*(?:,|、|\s[^\W\d]{1,5})\s*){1,12})$")


class _Derivable:
    """Which figures a summary could have computed from its input (see the module doc): a
    figure equal, to its printed precision, to the sum or the mean of a run of the input's
    figures in its unit (a total, a week's sum, an average), to the difference of two of them or of
    such sums (how far a budget overshoots: `62 s` and `45 s` give `17 s`), or a percentage equal
    to the ratio of two of the input's numbers (a win rate: 7 of 12). A list whose last number
    carries the unit (`2, 4, 8 and 16 s`) gives its unit to every number of it. The input's figures
    are read once and only when asked; at most `limit` of each kind are used (the sums of runs are
    O(n^2))."""

    def __init__(self, input_text: str, limit: int = 400):
        self.text = input_text
        self.limit = limit
        self._units = None

    def _read(self) -> None:
        self._units = {}
        for m in _FIGURE_RE.finditer(self.text):
            value, unit = m.group(1), m.group(2)
            vals = self._units.setdefault(unit, [])
            if len(vals) >= self.limit:
                continue
            before = _LIST_BEFORE_RE.search(self.text, max(0, m.start() - 80), m.start())
            if before:
                vals += [float(x.replace(",", ".")) for x in _NUM_RE.findall(before.group(1))]
            vals.append(float(value.replace(",", ".").replace("\u2212", "-")))
        self._numbers = []
        for m in _NUM_RE.finditer(self.text):
            if len(self._numbers) >= self.limit // 2:
                break
            self._numbers.append(float(m.group(0).replace(",", ".")))
        # per unit: its figures and the sums of their runs (up to 10 long), for the differences
        self._bases = {}
        for unit, vals in self._units.items():
            base = set(vals)
            for i in range(len(vals)):
                total = 0.0
                for j in range(i, min(len(vals), i + 10)):
                    total += vals[j]
                    base.add(round(total, 6))
            self._bases[unit] = sorted(base)

    def __call__(self, ident: str) -> bool:
        m = _FIGURE_RE.fullmatch(ident)
        if not m:
            return False
        if self._units is None:
            self._read()
        raw, unit = m.group(1).lstrip("+-\u2212"), m.group(2)
        value = float(raw.replace(",", "."))
        tol = 0.5 * 10 ** -(len(raw) - raw.replace(",", ".").index(".") - 1) if ("." in raw or "," in raw) else 0.5
        vals = self._units.get(unit, [])
        for i in range(len(vals)):
            total = 0.0
            for j in range(i, len(vals)):
                total += vals[j]
                if j > i and (abs(abs(total) - value) <= tol or abs(abs(total) / (j - i + 1) - value) <= tol):
                    return True
        base = self._bases.get(unit)
        if base and value > 0:
            for a in base:          # the difference of two of them: b - a == value, b looked up sorted
                k = bisect.bisect_left(base, a + value - tol)
                if k < len(base) and base[k] <= a + value + tol:
                    return True
        if unit == "%":
            nums = self._numbers
            for a in nums:
                for b in nums:
                    if b > 0 and a <= b and abs(100.0 * a / b - value) <= tol:
                        return True
        return False


# A name of the history given a value: a code name (`syncJob.timeoutSeconds`, `MAX_ATTEMPTS`,
# `replicaCount`; not a file, `store.py`, whose number is a line), then within a few characters with
# no digit, bracket or sentence end between (`: `, ` = `, ` to `, ` auf `, `を`), a number.
_NAME_RE = re.compile(r"(?<![A-Za-z0-9_./\\-])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CODE_NAME_RE = re.compile(r"_|[a-z][A-Z]|\.[A-Za-z]")
_FILE_NAME_RE = re.compile(r"\.[a-z0-9]{1,4}$")
_GAP_RE = re.compile(r"[^\d\n()\[\]{}（）［］「」.;!?。！？]*")
_VALUE_RE = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?(?![\d.])")


def named_values(text: str, gap: int = 12, names: bool = False) -> dict:
    """{code name (lowercased): the numbers the text gives it, at most `gap` characters after it} (with
    `names`: {code name lowercased: as the text first wrote it})."""
    out = {}
    for m in _NAME_RE.finditer(text):
        name = m.group(0)
        if not _CODE_NAME_RE.search(name) or _FILE_NAME_RE.search(name):
            continue
        g = _GAP_RE.match(text, m.end(), m.end() + gap)
        v = _VALUE_RE.match(text, g.end())
        if v:
            out.setdefault(name.lower(), (name, set()))[1].add(v.group(0))
    return {k: vals for k, (_, vals) in out.items()} if not names else {k: n for k, (n, _) in out.items()}


def changed_values(content: str, source: str, settings) -> list:
    """`invented_ask` (a warning): the summary gives a code name of the history a value the history never
    gives it (`raise syncJob.timeoutSeconds to 90` where the history only ever says 45): a request or a
    decision nobody made, which the agent would then carry out."""
    mine = named_values(content, settings.invented_ask_summary_gap)
    if not mine:
        return []
    theirs = named_values(source, settings.invented_ask_history_gap)   # it may say more between
    found = []
    for name, values in mine.items():
        known = theirs.get(name)
        if not known:
            continue
        for v in sorted(values - known):
            found.append((name, v, sorted(known)))
    if not found:
        return []
    written = named_values(content, settings.invented_ask_summary_gap, names=True)
    shown = "; ".join(f"{written.get(n, n)} {v} (the history only gives it {', '.join(k[:3])})" for n, v, k in found[:3])
    return [Finding("invented_ask", f"the summary gives the history's names values nobody gave them: {shown}: a request "
                    "or decision the history does not hold, which the agent would carry out; check it before going on",
                    failure=False, figures={"changed": [[n, v, k[:5]] for n, v, k in found[:10]]})]


def _claims(content: str, idents: list) -> list:
    """The identifiers that occur outside the summary's structure (see the module doc)."""
    if "#" not in content and "-files>" not in content:
        return idents
    body = _STRUCTURE_RE.sub(" ", content)
    if len(body) == len(content):
        return idents
    outside = {_norm(i) for i, _ in scan(body)}
    return [i for i in idents if _norm(i) in outside]


def _weights(view) -> dict:
    """The input's key identifiers and their weights: those used twice or more, or in the
    last quarter of the history (the latest state); each occurrence weighs 1 to 2 by
    how late it comes. An identifier mentioned once, early, is incidental."""
    return {k: w for k, (w, uses, last) in view.identifiers(scan).items() if uses >= 2 or last >= 0.75}


def detect(content: str, settings, input_text: Optional[str], view=None, measures: Optional[dict] = None,
           summary_view=None) -> list:
    """`view`: the input's overlap.InputView, when the caller has one (its figures are shared).
    `measures`, when given, receives the retention figure (None: the input has no key identifiers)."""
    if not input_text or len(content) < 8:
        return []
    out = []
    view = view if view is not None else InputView(input_text)
    in_input = Finder(view, settings.identifiers_max_searches)
    summary_view = summary_view if summary_view is not None else InputView(content)
    mine = list(summary_view.identifiers(scan))
    derivable = _Derivable(input_text)
    invented = [i for i in _claims(content, mine) if not in_input(i) and not derivable(i)]
    if len(invented) >= settings.identifiers_min_invented:
        shown = ", ".join(repr(i) for i in invented[:5]) + (f" and {len(invented) - 5} more" if len(invented) > 5 else "")
        # a failure when the summary invents many and most of what it names: the agent
        # would act on ids, paths and figures of a past that never was
        fail = len(invented) >= settings.identifiers_fail_invented \
            and len(invented) >= settings.identifiers_fail_invented_share * len(mine)
        out.append(Finding("invented_identifiers", f"{len(invented)} of the summary's {len(mine)} identifiers occur "
                           f"nowhere in the history: {shown}" + ("; re-run compaction" if fail else ""), failure=fail,
                           figures={"invented": invented[:20], "invented_count": len(invented),
                                    "identifiers": len(mine)}))
    out += changed_values(content, input_text, settings)
    weights = _weights(view)
    if measures is not None:
        measures["key_identifiers"] = len(weights)
        measures["identifier_retention"] = None
    if weights:
        in_summary = Finder(summary_view, settings.identifiers_max_searches)
        total = sum(weights.values()) or 1.0
        kept_keys = {k for k in weights if in_summary(k)}
        kept = sum(v for k, v in weights.items() if k in kept_keys)
        retention = kept / total
        if measures is not None:
            measures["identifier_retention"] = round(retention, 3)
        if len(weights) >= settings.identifiers_min_input and retention < settings.identifiers_min_retention:
            dropped = sorted((k for k in weights if k not in kept_keys), key=lambda k: -weights[k])
            out.append(Finding("lost_identifiers", f"the summary keeps {retention:.0%} of the history's identifiers "
                               f"(weighted by use and recency); dropped: {', '.join(repr(d) for d in dropped[:5])}",
                               failure=False, figures={"retention": round(retention, 3), "key_identifiers": len(weights),
                                                       "dropped": dropped[:20]}))
    return out
