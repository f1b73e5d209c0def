"""Gemini CLI (npm `@google/gemini-cli`): its chat sessions (store.py), where it keeps them
(layout.py), and the hook the guard runs before its model calls (hook.py)."""
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

    def hook(self, argv: list) -> int:
        from .hook import hook_main
        return hook_main()

    def install(self, layout, args) -> dict:
        from .hook import install
        return install(layout)

    def uninstall(self, layout, args) -> dict:
        from .hook import uninstall
        return uninstall(layout)

    def install_text(self, action: str, doc: dict) -> str:
        if action == "install":
            what = f"added on {', '.join(doc['added'])}" if doc["added"] else "already there, nothing changed"
            return (f"{doc['settings']}: hook entries {what}\n  they run: {doc['command']}\n"
                    f"  verdicts go to {doc['state']} (compaction-guard --agent gemini --status / --report)\n"
                    "  Gemini CLI reads hooks from settings.json when it starts: restart a running gemini\n")
        what = f"removed from {', '.join(doc['removed'])}" if doc["removed"] else "none were there, nothing changed"
        return f"{doc['settings']}: hook entries {what}\n"


AGENT = Gemini()
