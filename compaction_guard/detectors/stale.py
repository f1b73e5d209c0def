"""stale: a summary that did not change when it should have.

A record whose `previous` (the summary it replaced) equals its content, or a record
whose content equals an earlier record's in the same scope (one DAG, later one
conversation or session), both after whitespace normalization.
"""
from __future__ import annotations

import hashlib

from ..findings import Finding
from ..tokens import normalize_ws


def content_key(text: str) -> str:
    """A short hash of the whitespace-normalized text (what staleness compares)."""
    return hashlib.blake2b(normalize_ws(text).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class StaleTracker:
    """Remembers normalized contents per scope, in input order."""

    def __init__(self):
        self._seen = {}
        self._scopes = set()

    def needs_history(self, scope) -> bool:
        """True the first time a scope is met (its earlier summaries may need priming)."""
        if scope is None or scope in self._scopes:
            return False
        self._scopes.add(scope)
        return True

    def prime(self, scope: str, items) -> None:
        """Earlier summaries of `scope` that this check does not yield: (id, content key)."""
        for sid, key in items:
            self._seen.setdefault((scope, key), sid)

    def detect(self, record) -> list:
        content = record.content or ""
        if not content.strip():
            return []
        if record.previous is not None and normalize_ws(record.previous) == normalize_ws(content):
            return [Finding("stale", "summary is unchanged from the one it replaced; the compactor re-stored the old "
                            "summary instead of summarizing the new history")]
        if record.stale_scope is None:
            return []
        key = (record.stale_scope, content_key(content))
        earlier = self._seen.get(key)
        if earlier is not None:
            return [Finding("stale", f"same content as earlier summary {earlier!r}; the compactor produced no new "
                            "summary for new input", figures={"same_as": earlier})]
        self._seen[key] = record.id
        return []
