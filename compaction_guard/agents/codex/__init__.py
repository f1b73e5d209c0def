"""Codex CLI (npm `@openai/codex`): its rollouts (store.py), where it keeps them (layout.py),
and the hook the guard runs on its events (hook.py)."""
from __future__ import annotations

from ..base import Agent


class Codex(Agent):
    name = "codex"
    title = "Codex"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def discover(self, layout) -> tuple:
        from . import store
        return store.discover(layout)

    def sniff(self, probe, layout=None):
        from . import store
        if not probe.is_sqlite and store.looks_like_rollout(probe.head):
            return store.RolloutSource(probe.path)
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
            return (f"{doc['hooks']}: hook entries {what}\n  they run: {doc['command']}\n"
                    f"  verdicts go to {doc['state']} (compaction-guard --agent codex --status / --report)\n"
                    "  Codex runs a hook only once it is trusted: open codex, type /hooks and trust the guard's "
                    "entries (codex exec: --dangerously-bypass-hook-trust runs them untrusted)\n")
        what = f"removed from {', '.join(doc['removed'])}" if doc["removed"] else "none were there, nothing changed"
        return f"{doc['hooks']}: hook entries {what}\n"


AGENT = Codex()
