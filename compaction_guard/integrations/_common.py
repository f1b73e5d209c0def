"""What the framework integrations share: the operator's settings, the outcome as the frameworks
report it (callbacks, logs), and the last resort when the guard itself fails."""
from __future__ import annotations

import logging

log = logging.getLogger("compaction_guard")

def settings(home=None):
    """The operator's settings for the frameworks (config.yaml in their state directory,
    `compaction-guard --agent frameworks --print-config`), else the defaults (said in the log)."""
    from .. import agents, config
    from ..errors import GuardError
    from ..settings import DEFAULT
    layout = agents.get("frameworks").resolve(home=None if home is None else str(home))
    try:
        return config.load(layout).settings
    except GuardError as exc:
        log.warning("compaction-guard: %s; the defaults are used", exc)
        return DEFAULT


class Guarded:
    """What every integration holds: its framework's name, where it records, its settings (read
    when first needed, once), and `on_compaction(report)`, called with what each compaction did
    (`outcome`: the level, what failed; ids and figures, no text)."""

    framework = ""

    def __init__(self, settings=None, record: bool = True, home=None, on_compaction=None):
        self._settings = settings
        self.record = record
        self.home = home
        self.on_compaction = on_compaction

    def tell(self, report: dict) -> None:
        """Hand what a compaction did (outcome) to the application's `on_compaction`, if any; its
        own error is logged, never raised into the agent."""
        if self.on_compaction is None:
            return
        try:
            self.on_compaction(report)
        except Exception as exc:       # noqa: BLE001
            log.warning("compaction-guard: on_compaction raised %s: %s", type(exc).__name__, exc)

    @property
    def settings(self):
        if self._settings is None:
            self._settings = settings(self.home)
        return self._settings

    def options(self) -> dict:
        """compaction_guard.api.compact's keywords for this integration."""
        return {"settings": self.settings, "record": self.framework if self.record else None, "home": self.home}


def outcome(framework: str, done) -> dict:
    """What one compaction did, for the framework's callbacks and logs: ids and figures, no text."""
    return {"framework": framework, "level": done.level, "valid": True, "failures": list(done.failures),
            "attempts": [{"level": a.level, "valid": a.valid, "failures": list(a.failures),
                          "reasons": dict(a.reasons), "seconds": round(a.seconds, 4), "skipped": a.skipped}
                         for a in done.attempts],
            "input_tokens": done.input_tokens, "output_tokens": done.output_tokens, "notes": list(done.notes)}


def said(framework: str, done) -> None:
    """One log line when the model's answer was not kept (what failed, which level answered)."""
    if done.level == 1:
        return
    tried = "; ".join(f"L{a.level} {','.join(a.failures) or ('skipped' if a.skipped else 'ok')}"
                      for a in done.attempts)
    first = next((r for a in done.attempts for r in a.reasons.values()), "")
    log.warning("compaction-guard: %s compaction answered at L%d (%s): %s", framework, done.level, tried,
                first[:300])


def last_resort(history: str, exc: BaseException) -> str:
    """The guard itself failed (a bug): the history's head and tail, never an exception."""
    from ..settings import DEFAULT
    from ..summarizers import truncate_l3
    log.error("compaction-guard: internal error (%s: %s); the history's head and tail were kept",
              type(exc).__name__, exc)
    return truncate_l3(history, DEFAULT).text
