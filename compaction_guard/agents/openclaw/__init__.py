"""OpenClaw (npm `openclaw`) and the plugins that keep their stores in its state directory
(lossless-claw's lcm.db, memory-dag-compactor's state.yaml): where it keeps things
(layout.py), its stores (stores.py and one module each), its compaction hook (hook.py), its
compaction requests as serve reads them (requests.py), and its own compaction model
(provider.py)."""
from __future__ import annotations

from ..base import Agent


class OpenClaw(Agent):
    name = "openclaw"
    title = "OpenClaw"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, state_dir=home)

    def present(self, layout) -> bool:
        return layout.state_dir.is_dir() or layout.lcm_db.is_file()

    def discover(self, layout) -> tuple:
        from .stores import discover
        return discover(layout)

    def sniff(self, probe, layout=None):
        from .sniff import might_be
        if not might_be(probe):
            return None
        from .stores import sniff
        return sniff(probe, layout)

    def usages(self, layout, sources, notes) -> list:
        from .stores import usages
        return usages(layout, sources, notes)

    def install_arguments(self, parser) -> None:
        parser.add_argument("--openclaw", metavar="CMD", help="OpenClaw's command, to enable/disable the hook with "
                            "(default $OPENCLAW_BIN, else `openclaw` on PATH)")
        parser.add_argument("--timeout", type=float, default=20.0, metavar="SECONDS",
                            help="the hook's check is killed after this")

    def install(self, layout, args) -> dict:
        from .hook import install
        return install(layout, args.openclaw, args.timeout)

    def uninstall(self, layout, args) -> dict:
        from .hook import remove
        return remove(layout, args.openclaw)

    def install_text(self, action: str, doc: dict) -> str:
        if action == "install":
            return (f"hook written: {doc['hook']} (on {doc['event']}; runs {' '.join(doc['command'])})\n"
                    f"  {doc['note'] if doc['enabled'] else 'NOT ENABLED YET: ' + doc['note']}\n")
        return f"hook {'removed' if doc['removed'] else 'not installed'}: {doc['hook']}\n  {doc['note']}\n"

    def read_request(self, text, last_user):
        from .requests import read
        return read(text, last_user)

    def compaction_model(self, layout, env):
        from .provider import from_openclaw
        return from_openclaw(layout, env)


AGENT = OpenClaw()
