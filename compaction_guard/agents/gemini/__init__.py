"""Gemini CLI (npm `@google/gemini-cli`): its chat sessions (store.py) and where it keeps them
(layout.py). It has no hook yet: `install gemini` says so."""
from __future__ import annotations

from ..base import Agent


class Gemini(Agent):
    name = "gemini"
    title = "Gemini CLI"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def discover(self, layout) -> tuple:
        from . import store
        return store.discover(layout)

    def sniff(self, probe, layout=None):
        from . import store
        if not probe.is_sqlite and store.looks_like_session(probe.head):
            return store.SessionSource(probe.path)
        return None


AGENT = Gemini()
