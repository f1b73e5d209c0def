"""The circuit breaker: when N chains in a row ended at L3, the LLM is broken; stop
paying for it for a while and go straight to L3.

State lives in the guard's state file under `circuit`:
  consecutive_l3  chains in a row that ended at L3 after trying the LLM levels
  open_until      ISO time until which the LLM levels are skipped (null: closed)
  events          bounded list of {at, event: opened|skipped|closed, ...}
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Optional


def _now() -> datetime:
    return datetime.now(timezone.utc)


def circuit(state: dict) -> dict:
    c = state.get("circuit")
    if not isinstance(c, dict):
        c = {}
    c.setdefault("consecutive_l3", 0)
    c.setdefault("open_until", None)
    if not isinstance(c.get("events"), list):
        c["events"] = []
    state["circuit"] = c
    return c


def open_until(state: dict, now: Optional[datetime] = None) -> Optional[str]:
    """The ISO time the breaker stays open until, or None when the LLM levels may run."""
    c = circuit(state)
    until = c.get("open_until")
    if not until:
        return None
    try:
        when = datetime.fromisoformat(str(until))
    except ValueError:
        return None
    return until if (now or _now()) < when else None


def record(state: dict, level_used: int, skipped: bool, settings, now: Optional[datetime] = None) -> Optional[str]:
    """Update the breaker after a chain; returns the event recorded, if any."""
    now = now or _now()
    c = circuit(state)
    event = None
    if skipped:
        event = {"at": now.isoformat(timespec="seconds"), "event": "skipped", "open_until": c.get("open_until")}
    elif level_used == 3:
        c["consecutive_l3"] = int(c.get("consecutive_l3") or 0) + 1
        if c["consecutive_l3"] >= settings.breaker_threshold:
            until = (now + timedelta(seconds=settings.breaker_cooldown_seconds)).isoformat(timespec="seconds")
            c["open_until"] = until
            event = {"at": now.isoformat(timespec="seconds"), "event": "opened", "open_until": until,
                     "consecutive_l3": c["consecutive_l3"]}
    else:
        if c.get("open_until") or c.get("consecutive_l3"):
            if c.get("open_until"):
                event = {"at": now.isoformat(timespec="seconds"), "event": "closed", "level_used": level_used}
            c["open_until"] = None
        c["consecutive_l3"] = 0
    if event:
        c["events"].append(event)
        c["events"] = c["events"][-settings.max_breaker_events:]
    return event["event"] if event else None
