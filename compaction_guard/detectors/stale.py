"""stale: a summary that did not change when it should have.

A record whose `previous` (the summary it replaced) equals its content while what the user said
since that compaction (coverage.said: the first speaker's turns; a history without speakers whole)
holds what it lacks (its specifics, coverage.atoms: identifiers, figures, versions, times, code
names, in any script), named; tool output kept verbatim from before the compaction (Gemini CLI keeps
the last turns) is not news; or, where that history is not known, any
record whose `previous` equals its content; or a record whose content equals an earlier record's
in the same scope (one DAG, later one conversation or session), all after whitespace
normalization. A summary stored again unchanged after turns that added nothing it lacks (they
restated what it holds) is the summary still: not stale.
"""
from __future__ import annotations

from collections import OrderedDict

from ..findings import Finding
from ..tokens import content_key, normalize_ws
from .coverage import missing, said


class StaleTracker:
    """Remembers normalized contents per scope, in input order, within a memory bound.

    At most `max_keys` contents are kept; past that the least recently used scopes
    are forgotten and, if met again, primed again from their store (Source.history),
    so a store of any size is checked in bounded memory without missing a match."""

    def __init__(self, max_keys: int = 200_000, settings=None):
        self._scopes = OrderedDict()     # scope -> {content key: first id}
        self.settings = settings
        self._count = 0
        self.max_keys = max_keys

    def needs_history(self, scope) -> bool:
        """True when a scope's earlier summaries may need priming: first met, or forgotten."""
        return scope is not None and scope not in self._scopes

    def prime(self, scope: str, items) -> None:
        """Earlier summaries of `scope` that this check does not yield: (id, content key)."""
        keys = self._scopes.setdefault(scope, {})
        for sid, key in items:
            if key not in keys:
                keys[key] = sid
                self._count += 1

    def _evict(self, keep) -> None:
        while self._count > self.max_keys and len(self._scopes) > 1:
            scope, keys = next(iter(self._scopes.items()))
            if scope == keep:
                self._scopes.move_to_end(scope)
                continue
            del self._scopes[scope]
            self._count -= len(keys)

    def detect(self, record) -> list:
        content = record.content or ""
        if not content.strip():
            return []
        if record.previous is not None and normalize_ws(record.previous) == normalize_ws(content):
            if self.settings is None:
                from ..settings import DEFAULT
                self.settings = DEFAULT
            history = record.input_text if isinstance(record.input_text, str) else None
            # the history since that compaction: what the input holds besides the previous summary (a store
            # whose input is that summary alone, OpenClaw's session files, says nothing of the turns since)
            since = normalize_ws(history).replace(normalize_ws(record.previous), " ") if history else ""
            if len(since.split()) < self.settings.stale_min_since_words:
                return [Finding("stale", "summary is unchanged from the one it replaced; the compactor re-stored the "
                                "old summary instead of summarizing the new history")]
            lacks = missing(said(history, self.settings), content)
            if not lacks:
                return []        # the turns since added nothing it lacks
            shown = ", ".join(repr(x) for x in lacks[:6]) + (" and more" if len(lacks) > 6 else "")
            return [Finding("stale", f"summary is unchanged from the one it replaced, and what was said since then holds "
                            f"what it lacks ({shown}); the compactor re-stored the old summary instead of summarizing "
                            "the new history, re-run compaction", figures={"lacks": lacks})]
        scope = record.stale_scope
        if scope is None:
            return []
        keys = self._scopes.get(scope)
        if keys is None:
            keys = self._scopes[scope] = {}
        else:
            self._scopes.move_to_end(scope)
        key = content_key(content)
        earlier = keys.get(key)
        if earlier is not None:
            return [Finding("stale", f"same content as earlier summary {earlier!r}; the compactor produced no new "
                            "summary for new input", figures={"same_as": earlier})]
        keys[key] = record.id
        self._count += 1
        if self._count > self.max_keys:
            self._evict(scope)
        return []
