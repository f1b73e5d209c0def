"""tainted_lineage (warning): a valid condensed summary built from a failed one.

lossless-claw condenses summaries into higher ones (`summary_parents`: a condensed
summary and the summaries it was made from); memory-dag-compactor condenses DAG nodes
into parents. When a source failed (an empty placeholder, a loop, garbage), what it
should have carried is missing from everything condensed above it, even if the
condensed text itself reads fine. The warning names the failed sources and their kind.

Sources are judged as the check judges them: those met earlier in this check by their
result; the others (an incremental check skipped them, or they were forgotten to bound
memory) are read from their store (`Source.summaries`) and judged on their text alone
by `judge` (check.py passes the per-summary detectors). At most `max_keys` verdicts are
kept, least recently used first out.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from ..findings import Finding


class LineageTracker:
    def __init__(self, judge: Callable, max_keys: int = 200_000):
        self._judge = judge            # (id, content) -> [failure kinds]
        self._verdicts = OrderedDict()  # id -> tuple of failure kinds
        self.max_keys = max_keys

    def remember(self, rid: str, failures) -> None:
        self._verdicts[rid] = tuple(failures)
        self._verdicts.move_to_end(rid)
        while len(self._verdicts) > self.max_keys:
            self._verdicts.popitem(last=False)

    def detect(self, record, own_failures, source=None) -> list:
        sources = [str(s) for s in ((record.meta or {}).get("sources") or [])]
        if not sources or own_failures:
            return []                  # only a valid summary is tainted: a failed one says more itself
        missing = [s for s in sources if s not in self._verdicts]
        if missing and source is not None:
            for sid, content in source.summaries(missing):
                self.remember(str(sid), self._judge(str(sid), content))
        bad = [(s, self._verdicts[s][0]) for s in sources if self._verdicts.get(s)]
        if not bad:
            return []
        shown = ", ".join(f"{s} ({k})" for s, k in bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        return [Finding("tainted_lineage", f"condensed from {len(bad)} of its {len(sources)} source summaries that "
                        f"failed: {shown}; what they lost is missing here too; re-compact those sources",
                        failure=False, figures={"failed_sources": [{"id": s, "kind": k} for s, k in bad[:20]],
                                                "sources": len(sources)})]
