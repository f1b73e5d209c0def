"""Codex CLI (npm `@openai/codex`): its rollouts (store.py), where it keeps them (layout.py),
and the hook the guard runs on its events (hook.py)."""
from __future__ import annotations

from ..base import Agent, RelaySpec


class Codex(Agent):
    name = "codex"
    title = "Codex"
    hook_module = f"{__name__}.hook"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def discover(self, layout) -> tuple:
        from . import store
        return store.discover(layout)

    def sniff(self, probe, layout=None):
        from .sniff import looks_like_rollout
        if not probe.is_sqlite and looks_like_rollout(probe.head):
            from . import store
            return store.RolloutSource(probe.path)
        return None

    def relay(self):
        from . import requests
        return RelaySpec("responses", "https://api.openai.com/v1", "the base_url of your model provider in "
                         "config.toml", requests.MARKER, requests.read)

    def install_text(self, action: str, doc: dict) -> str:
        from ..hookkit import entries_text
        return entries_text(action, doc, "hooks", self.name,
                            "  Codex runs a hook only once it is trusted: at its next start Codex asks (\"Hooks need "
                            "review\"): choose \"Trust all and continue\" (or review them; /hooks later)\n"
                            if action == "install" else "")


AGENT = Codex()
