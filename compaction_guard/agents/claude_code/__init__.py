"""Claude Code (npm `@anthropic-ai/claude-code`): its transcripts (store.py), where it keeps
them (layout.py), and the hook the guard runs on its events (hook.py)."""
from __future__ import annotations

from ..base import Agent, RelaySpec


class ClaudeCode(Agent):
    name = "claude-code"
    title = "Claude Code"
    hook_module = f"{__name__}.hook"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def discover(self, layout) -> tuple:
        from . import store
        return store.discover(layout.projects)

    def sniff(self, probe, layout=None):
        from .sniff import looks_like_transcript
        if not probe.is_sqlite and looks_like_transcript(probe.head):
            from . import store
            return store.TranscriptSource(probe.path)
        return None

    def install_arguments(self, parser) -> None:
        parser.add_argument("--project", metavar="DIR", help="the project's .claude/settings.json instead of the "
                            "user's")

    def relay(self):
        from . import requests
        return RelaySpec("anthropic", "https://api.anthropic.com", "ANTHROPIC_BASE_URL", requests.MARKER,
                         requests.read)

    def install_text(self, action: str, doc: dict) -> str:
        from ..hookkit import entries_text
        return entries_text(action, doc, "settings", self.name)


AGENT = ClaudeCode()
