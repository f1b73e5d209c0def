"""stale: a summary that did not change when it should have.

A record whose `previous` (the summary it replaced) equals its content, or a record
whose content equals an earlier record's in the same scope (one DAG, later one
conversation or session), both after whitespace normalization.
"""
from __future__ import annotations

from collections import OrderedDict

from ..findings import Finding
from ..tokens import content_key, normalize_ws


class StaleTracker:
    """Remembers normalized contents per scope, in input order, within a memory bound.

    At most `max_keys` contents are kept; past that the least recently used scopes
    are forgotten and, if met again, primed again from their store (Source.history),
    so a store of any size is checked in bounded memory without missing a match."""

    def __init__(self, max_keys: int = 200_000):
        self._scopes = OrderedDict()     # scope -> {content key: first id}
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
            return [Finding("stale", "summary is unchanged from the one it replaced; the compactor re-stored the old "
                            "summary instead of summarizing the new history")]
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
