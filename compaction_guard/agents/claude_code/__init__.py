"""Claude Code (npm `@anthropic-ai/claude-code`): its transcripts (store.py), where it keeps
them (layout.py), and the hook the guard runs on its events (hook.py)."""
from __future__ import annotations

from ..base import Agent


class ClaudeCode(Agent):
    name = "claude-code"
    title = "Claude Code"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def discover(self, layout) -> tuple:
        from . import store
        return store.discover(layout.projects)

    def sniff(self, probe, layout=None):
        from . import store
        if not probe.is_sqlite and store.looks_like_transcript(probe.head):
            return store.TranscriptSource(probe.path)
        return None

    def hook(self, argv: list) -> int:
        from .hook import hook_main
        return hook_main()

    def install_arguments(self, parser) -> None:
        parser.add_argument("--project", metavar="DIR", help="the project's .claude/settings.json instead of the "
                            "user's")

    def install(self, layout, args) -> dict:
        from .hook import install
        return install(layout, args.project)

    def uninstall(self, layout, args) -> dict:
        from .hook import uninstall
        return uninstall(layout, args.project)

    def install_text(self, action: str, doc: dict) -> str:
        if action == "install":
            what = f"added on {', '.join(doc['added'])}" if doc["added"] else "already there, nothing changed"
            return (f"{doc['settings']}: hook entries {what}\n  they run: {doc['command']}\n"
                    f"  verdicts go to {doc['state']} (compaction-guard --agent claude-code --status / --report)\n")
        what = f"removed from {', '.join(doc['removed'])}" if doc["removed"] else "none were there, nothing changed"
        return f"{doc['settings']}: hook entries {what}\n"


AGENT = ClaudeCode()
