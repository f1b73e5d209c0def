"""opencode (npm `opencode-ai`): its database (store.py), where it keeps things (layout.py), the
plugin the guard installs and the hook it runs (hook.py, plugin.js), and its compaction requests
as `serve` reads them (requests.py)."""
from __future__ import annotations

from pathlib import Path

from ..base import Agent


class Opencode(Agent):
    name = "opencode"
    title = "opencode"
    # its requests carry marks more specific than a `<conversation>` fence (its template, its
    # prior summary): read before agents whose requests are only fenced
    request_order = 10
    hook_module = f"{__name__}.hook"

    def resolve(self, env=None, home=None):
        from .layout import resolve
        return resolve(env, home)

    def present(self, layout) -> bool:
        from . import store
        return bool(store.databases(layout)) or layout.state_dir.is_dir()

    def discover(self, layout) -> tuple:
        from . import store
        return store.discover(layout)

    def sniff(self, probe, layout=None):
        if not probe.is_sqlite:
            return None
        from . import store
        if store.looks_like(probe.tables()):
            return store.OpencodeDbSource(probe.path, probe.take_connection())
        return None

    def install_arguments(self, parser) -> None:
        parser.add_argument("--offline", action="store_true",
                            help="for a machine without npm's registry: mark opencode's plugin SDK installed, so "
                            "its start does not wait ~70 s for npm")

    def install_text(self, action: str, doc: dict) -> str:
        if action == "install":
            from .hook import SDK
            what = "written" if doc["written"] else "already there, nothing changed"
            config = str(Path(doc["plugin"]).parent.parent)
            sdk = {"ready": "",
                   "marked": f"  {config}: marked {SDK} installed (--offline): opencode starts without npm; "
                             "uninstall opencode takes the mark away\n",
                   "npm": f"  at its next start opencode installs {SDK} into {config} from npm (offline it waits "
                          "~70 s at each start): without npm's registry, run: compaction-guard install opencode --offline\n",
                   "theirs": f"  {config} holds your own npm files: run `npm install {SDK}` there once online (or "
                             "opencode waits ~70 s at each start offline)\n"}.get(doc.get("sdk"), "")
            return (f"{doc['plugin']}: the guard's plugin {what}\n"
                    f"  verdicts go to {doc['state']} (compaction-guard --agent opencode --status / --report)\n"
                    "  opencode loads plugins when it starts: restart a running opencode\n" + sdk)
        what = "removed" if doc["removed"] else "not there, nothing changed"
        return f"{doc['plugin']}: the guard's plugin {what}\n" + (
            "  and the --offline mark of its plugin SDK\n" if doc.get("offline_lock_removed") else "")

    def read_request(self, text: str, last_user: str):
        from .requests import read
        return read(text, last_user)


AGENT = Opencode()
