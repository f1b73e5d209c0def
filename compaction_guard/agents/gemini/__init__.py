"""Gemini CLI (npm `@google/gemini-cli`): its chat sessions (store.py), where it keeps them
(layout.py), and the hook the guard runs before its model calls (hook.py)."""
from __future__ import annotations

from ..base import Agent, RelaySpec


class Gemini(Agent):
    name = "gemini"
    title = "Gemini CLI"
    hook_module = f"{__name__}.hook"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def discover(self, layout) -> tuple:
        from . import store
        return store.discover(layout)

    def sniff(self, probe, layout=None):
        from .sniff import looks_like_session
        if not probe.is_sqlite and looks_like_session(probe.head):
            from . import store
            return store.SessionSource(probe.path)
        return None

    def relay(self):
        from . import requests
        return RelaySpec("gemini", "https://generativelanguage.googleapis.com", "GOOGLE_GEMINI_BASE_URL",
                         requests.MARKER, requests.read)

    def install_text(self, action: str, doc: dict) -> str:
        from ..hookkit import entries_text
        return entries_text(action, doc, "settings", self.name,
                            "  Gemini CLI reads hooks from settings.json when it starts: restart a running gemini\n")


AGENT = Gemini()
