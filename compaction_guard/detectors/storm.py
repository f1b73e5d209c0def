"""Compaction storms (warnings, with their numbers), per session.

- more than `storm_max_compactions` compactions within `storm_window_minutes`;
- a run of `storm_run` compactions close together (each within the window of the
  first) whose context does not fall: what each left (tokensAfter) when the agent records
  it, else what each started from (tokensBefore): compaction is not shrinking the context
  (lossless-claw #1177, codex #36665: 74-211 compactions in one session).
A storm is a warning: each summary may still be valid.
"""
from __future__ import annotations

from datetime import datetime
from typing import Optional

from ..findings import Finding


def _ts(value) -> Optional[float]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


class StormTracker:
    def __init__(self, settings):
        self.s = settings
        self._recent = {}      # scope -> [(ts, ("after" | "before", tokens))]

    def prime(self, scope: str, items) -> None:
        """(timestamp, tokens_before[, tokens_after]) of the scope's compactions before this check."""
        hist = self._recent.setdefault(scope, [])
        for item in items:
            t, n = item[0], item[1]
            a = item[2] if len(item) > 2 else None
            hist.append((_ts(t), ("after", a) if isinstance(a, int) else ("before", n)))

    def recent(self, scope: str) -> list:
        return [(t, n) for t, n in self._recent.get(scope, [])][-self.s.storm_max_compactions - 1:]

    def detect(self, record) -> list:
        meta = record.meta or {}
        if "session" not in meta or record.stale_scope is None:
            return []
        ts = _ts(meta.get("timestamp"))
        after = meta.get("tokens_after")
        tokens = ("after", after) if isinstance(after, int) else ("before", meta.get("tokens_before"))
        hist = self._recent.setdefault(record.stale_scope, [])
        hist.append((ts, tokens))
        keep = max(self.s.storm_max_compactions, self.s.storm_run) + 1
        del hist[:-keep]
        if ts is None:
            return []
        window = self.s.storm_window_minutes * 60
        out = []
        recent = [(t, n) for t, n in hist if t is not None and ts - window <= t <= ts]
        if len(recent) > self.s.storm_max_compactions:
            out.append(Finding("compaction_storm", f"{len(recent)} compactions within {self.s.storm_window_minutes:g} "
                               f"minutes in session {meta['session']}", failure=False,
                               figures={"compactions": len(recent), "window_minutes": self.s.storm_window_minutes}))
        run = hist[-self.s.storm_run:]
        which = {w for _, (w, _n) in run}
        if (len(run) == self.s.storm_run and len(which) == 1 and all(t is not None and n for t, (_w, n) in run)
                and run[-1][0] - run[0][0] <= window
                and all(b[1][1] >= a[1][1] for a, b in zip(run, run[1:]))):
            name = "tokensAfter" if which == {"after"} else "tokensBefore"
            values = [n for _, (_w, n) in run]
            out.append(Finding("not_shrinking", f"{len(run)} compactions in a row in {(run[-1][0] - run[0][0]) / 60:.0f} "
                               f"min with {name} {', '.join(str(n) for n in values)}: compaction is not "
                               "shrinking the context", failure=False,
                               figures={"tokens_after" if which == {"after"} else "tokens_before": values}))
        return out
