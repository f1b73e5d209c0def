"""The one small interface every agent package implements (`AGENT = MyAgent()`).

A layout is whatever `resolve` returns: a plain object that says where the agent keeps
things. The rest of the guard reads only these of it:

    agent         the agent's name (agents.REGISTRY)
    state_dir     the agent's own directory (its home, state or configuration directory)
    origin        why that directory: the flag or variable that named it, or the default
    guard_dir     where the guard keeps its state and config.yaml for this agent
    hint          what to set when nothing is found there
    notes, config_problem   things a person should know about the layout
    describe()    one line: which directory and why
    looked()      the places a check looked, for a check that found nothing
    to_dict()     the paths, for JSON

Everything an agent does is a method below; the defaults are "this agent has none".
"""
from __future__ import annotations

from collections import namedtuple
from pathlib import Path

from ..errors import GuardError


class RequestShape(namedtuple("RequestShape", "history previous instructions rejected fallback",
                              defaults=(None, None))):
    """A compaction request read by the agent that sends it: the conversation to summarize
    (history), the summary it replaces (previous, or None), what the prompt asks with the
    history taken out (instructions), the reasons the agent's own audit rejected the
    previous answer, when it says them (rejected, or None), and an answer the prompt itself
    accepts when nothing better comes (fallback, or None: Gemini CLI's verify call asks the
    model to improve the answer it quotes, or to repeat it; the guard's L3 repeats it when
    it passes the check). (A named tuple, not a dataclass: this module is imported by every
    hook, and dataclasses costs a hook 15 ms.)"""
    __slots__ = ()


class RelaySpec(namedtuple("RelaySpec", "protocol upstream variable marker read")):
    """How `serve --agent NAME` stands in front of an agent that compacts on the endpoint of
    every turn: the wire protocol it speaks (serve/<protocol>.py), its default upstream (the
    API the agent talks to without the guard), the variable that points the agent at the
    guard, the bytes every compaction request of the agent holds (a byte search on each
    request; only a request holding them is parsed), and `read(body)`: the compaction
    request read (a RequestShape), or None when the body holds the bytes but is no compaction
    (a user who pasted the prompt). Every other request is relayed as it came."""
    __slots__ = ()


class Agent:
    name = ""          # on the command line: --agent NAME, hook NAME, install NAME
    title = ""         # for people
    # serve asks the agents to read a request in this order (then the registry's): an agent whose
    # requests carry marks more specific than another's reads them first
    request_order = 100
    # the module of the agent's hook command and its install (`hook_main()`, `install(layout,
    # args)`, `uninstall(layout, args)`), imported only when one is asked for; None: it has none
    hook_module: str | None = None

    # ------------------------------------------------------------------ where it keeps things
    def resolve(self, env=None, home: str | None = None):
        """The agent's layout, as the agent itself finds its directories from `env` (os.environ
        when None); `home` (the --home flag) names the agent's own directory."""
        raise NotImplementedError

    def present(self, layout) -> bool:
        """Whether the agent has left anything on this machine (its directory exists)."""
        return Path(layout.state_dir).is_dir()

    # ------------------------------------------------------------------ its stores
    def discover(self, layout) -> tuple:
        """(sources, errors): every store in the layout; a store that cannot be opened is an
        error line and the others are still read."""
        return [], []

    def sniff(self, probe, layout=None):
        """The Source reading `probe`'s file (a stores.probe.Probe) when it is one of this agent's
        stores, else None."""
        return None

    def checked_as_made(self, layout, state: dict):
        """For an agent the guard runs inside (a library in the agent's own process, with no store
        the guard can read), (anything recorded, one line): what its state holds of the summaries
        checked as they were made, or where nothing was; None for an agent with stores."""
        return None

    def usages(self, layout, sources: list, notes: list) -> list:
        """The sessions' context use (SessionUsage) the agent keeps, for context_pressure."""
        return [u for src in sources for u in getattr(src, "usages", [])]

    # ------------------------------------------------------------------ its hook
    def _hooks(self):
        import importlib
        return importlib.import_module(self.hook_module) if self.hook_module else None

    def hook(self, argv: list) -> int:
        """`compaction-guard hook NAME ...`: what the agent runs on its hook events."""
        if self.hook_module is None:
            raise GuardError(f"{self.title} runs no `hook {self.name}` command; `compaction-guard install "
                             f"{self.name}` sets up what it runs")
        return self._hooks().hook_main()

    def install_arguments(self, parser) -> None:
        """The flags `install NAME` / `uninstall NAME` take beyond --home and --format."""

    def install(self, layout, args) -> dict:
        if self.hook_module is None:
            raise GuardError(f"the guard has no hook to install for {self.title}")
        return self._hooks().install(layout, args)

    def uninstall(self, layout, args) -> dict:
        if self.hook_module is None:
            raise GuardError(f"the guard has no hook to uninstall for {self.title}")
        return self._hooks().uninstall(layout, args)

    def install_text(self, action: str, doc: dict) -> str:
        """What `install`/`uninstall` did, for a person."""
        return "".join(f"{k}: {v}\n" for k, v in doc.items())

    # ------------------------------------------------------------------ serve and the chain
    def read_request(self, text: str, last_user: str) -> RequestShape | None:
        """A compaction request this agent sends, read, when `text` (the request's non-system
        messages, joined) is one; `last_user` is its last user message. Else None."""
        return None

    def relay(self) -> RelaySpec | None:
        """How serve stands in front of this agent's own API (see RelaySpec), for an agent whose
        compaction goes to the endpoint of every turn; None for one that sends it to a model of
        its own (serve is then that model)."""
        return None

    def compaction_model(self, layout, env):
        """The agent's own compaction model as a providers.ProviderChoice, when its
        configuration names one (the chain's default summarizer); else None."""
        return None
