"""Command line: `python3 guard.py` / `compaction-guard`. Each command is a few
lines over compaction_guard.operations; output goes through compaction_guard.render.

Exit status: 0 fine (a check found no failure and no session's latest compaction failed), 1 a
check found failures or the status is DEGRADED (a session's latest compaction failed, found by
this check or an earlier one, and nothing newer passed),
2 could not run, could not read a store, or found no store at all (one line on stderr
saying which file or directory and what to do).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from . import agents, config, faults, operations, providers, render
from .errors import GuardError
from .stores import owner_of, read_text


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"{self.prog}: {message}; see --help\n")


class _OneLine(argparse.RawDescriptionHelpFormatter):
    """Each option and its help on one line (argparse would wrap them at the terminal's width)."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=34, width=200)

    def _split_lines(self, text, width):
        return [text]


COMMANDS = f"""Checks the summaries AI agents store when they compact their history, and runs the 3-level
compaction chain (normal prompt, aggressive prompt, deterministic truncation).

commands (each takes --help):
  install NAME        add the guard's hook where the agent reads its hooks (NAME: {', '.join(agents.NAMES)})
  uninstall NAME      take the guard's hook out again (only the guard's own entries)
  hook NAME           what an agent's hook entry runs: the event's JSON on stdin, always exit 0
  hook install|remove OpenClaw's hook: the same as install openclaw / uninstall openclaw
  serve               the validating proxy a compactor calls (the same as --serve)
  (none)              the actions below; --status when none is given"""

USAGE = ("compaction-guard [--check | --status | --report | --simulate TEXT | --compact | --print-config] "
         "[options]\n       compaction-guard install|uninstall NAME [options]\n       compaction-guard hook NAME"
         "\n       compaction-guard serve [options]")


def _serve_options(p) -> None:
    srv = p.add_argument_group("serve (the proxy)")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other "
                     "needs a client token)")
    srv.add_argument("--port", type=_port, default=8742, help="port (default 8742)")
    srv.add_argument("--token-env", default="GUARD_SERVE_TOKEN", metavar="VAR",
                     help="variable holding the token clients must send (Authorization: Bearer)")
    srv.add_argument("--observe", action="store_true", help="check and record every reply, return it unchanged")


def _summarizer_options(p) -> None:
    llm = p.add_argument_group("summarizer for L1/L2 (default: GUARD_* variables, then the agent's config, "
                               "then extractive)")
    llm.add_argument("--provider", choices=["openai", "anthropic", "local", "extractive"], metavar="NAME",
                     help="openai, anthropic, local or extractive ($GUARD_PROVIDER)")
    llm.add_argument("--base-url", metavar="URL", help="openai: including /v1; anthropic: the host ($GUARD_BASE_URL); "
                     "serve relaying an agent: its upstream")
    llm.add_argument("--model", metavar="NAME", help="$GUARD_MODEL")
    llm.add_argument("--api-key-env", metavar="VAR", help="variable holding the key (OPENAI_API_KEY, "
                     "ANTHROPIC_API_KEY)")
    llm.add_argument("--timeout", metavar="SECONDS", type=float, help="per call ($GUARD_TIMEOUT, default 60)")


def _common_options(p, serve: bool = False) -> None:
    """--home, --agent, --set, --debug: the main parser's, or serve's (`serve`) in its words."""
    names = ", ".join(agents.NAMES)
    p.add_argument("--home", "--state-dir", dest="home", metavar="DIR",
                   help="the directory of the agent --agent names (" + ("its state is where serve records)" if serve
                                                                        else "without --agent: OpenClaw's state directory)"))
    p.add_argument("--agent", choices=agents.NAMES, metavar="NAME",
                   help=f"whose compactions it answers, and records ({names}; default {agents.DEFAULT})" if serve else
                   f"only this agent ({names}); without it: every agent found, or {agents.DEFAULT}'s for serve and "
                   "--compact")
    p.add_argument("--set", metavar="NAME=VALUE", action="append", default=[],
                   help="override one setting (repeatable; their names: compaction-guard --print-config)")
    p.add_argument("--debug", action="store_true", help="on an internal error, print the traceback (also "
                   "GUARD_DEBUG=1)")


def _port(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 < n < 65536:
        raise argparse.ArgumentTypeError(f"{text} is not a port: give one from 1 to 65535")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="compaction-guard", usage=USAGE, description=COMMANDS, formatter_class=_OneLine)
    act = p.add_mutually_exclusive_group()
    act.add_argument("--check", action="store_true", help="check the summaries every agent stored (or --file)")
    act.add_argument("--status", action="store_true", help="the state at a glance (the default)")
    act.add_argument("--report", action="store_true", help="what failed, when, by kind and store; which level answered")
    act.add_argument("--simulate", metavar="TEXT", help="run the 3-level chain on TEXT ('-' reads stdin)")
    act.add_argument("--compact", action="store_true",
                     help="for compactors: summarize --input FILE (or stdin) through the chain, print the summary")
    act.add_argument("--serve", action="store_true", help="run the validating proxy (also: compaction-guard serve; "
                     "with --agent claude-code, codex or gemini, a relay in front of its API)")
    act.add_argument("--print-config", action="store_true",
                     help="every effective setting and where it came from")
    p.add_argument("--file", metavar="PATH", help="with --check: one summaries file, summary, transcript or database")
    p.add_argument("--input", metavar="FILE", help="with --compact: the text to summarize; with --check --file: "
                   "the text the summary replaced")
    p.add_argument("--previous", metavar="FILE", help="with --compact/--simulate: the summary this one replaces")
    p.add_argument("--input-tokens", metavar="N", type=int, help="with --check --file: the source's size in tokens")
    p.add_argument("--all", action="store_true", help="with --check: every summary again, not only the new ones")
    p.add_argument("--format", choices=["text", "json", "prometheus"], default="text", metavar="FORMAT",
                   help="text for people, json for machines, prometheus (with --report) for scrapers")
    p.add_argument("--push", metavar="URL", help="with --check: then push each agent's counters to this Pushgateway "
                   "(docs/team.md)")
    p.add_argument("--textfile", metavar="DIR", help="with --check: then write each agent's counters to DIR for "
                   "node_exporter's textfile collector")
    p.add_argument("--since", metavar="DATE", help="with --report: only from DATE (YYYY-MM-DD)")
    p.add_argument("--html", metavar="FILE", help="with --report: also a self-contained HTML report in FILE")
    _common_options(p)
    _serve_options(p)
    _summarizer_options(p)
    p.add_argument("--fault", metavar="L1=KIND,L2=KIND", help="with --simulate/--compact: inject failures "
                   "(empty, repetition, garbled, error, timeout, ...)")
    return p


def serve_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="compaction-guard serve", formatter_class=_OneLine,
                description="The validating proxy: an OpenAI- or Anthropic-compatible endpoint a compactor calls "
                "(docs/serve.md).\nEach reply of the upstream model is checked against the conversation in the "
                "request;\na failed one is redone with the aggressive prompt, then built by deterministic "
                "truncation.\nWith --agent claude-code, codex or gemini: a relay in front of that agent's API "
                "(only its compactions checked).")
    _common_options(p, serve=True)
    _serve_options(p)
    _summarizer_options(p)
    return p


def install_parser(action: str) -> argparse.ArgumentParser:
    """`install --help` / `uninstall --help`: which agents, and how."""
    what = "Add the guard's hook where the agent reads its hooks" if action == "install" else \
        "Take the guard's hook out of the agent's settings (only the guard's own entries)"
    p = _Parser(prog=f"compaction-guard {action}", formatter_class=_OneLine,
                usage=f"compaction-guard {action} NAME [options]",
                description=f"{what}.\n\nagents (NAME):\n" + "\n".join(
                    f"  {a.name:<12} {a.title}" for a in agents.every())
                + f"\n\none agent's options alone: compaction-guard {action} NAME --help", conflict_handler="resolve")
    p.add_argument("name", metavar="NAME", choices=agents.NAMES, help="the agent")
    p.add_argument("--home", "--state-dir", dest="home", metavar="DIR",
                   help="the agent's directory (default: as the agent finds it)")
    p.add_argument("--format", choices=["text", "json"], default="text", metavar="FORMAT",
                   help="text for people, json for machines")
    for a in agents.every():
        before = len(p._actions)
        group = p.add_argument_group(f"{a.name} only")
        a.install_arguments(group)
        if len(p._actions) == before:
            p._action_groups.remove(group)
    return p


HOOK_HELP = f"""usage: compaction-guard hook NAME
       compaction-guard hook install|remove

What an agent's hook entry runs (written there by `compaction-guard install NAME`): it reads the
event's JSON on stdin, checks the compaction the event is about, records the verdict and answers
the agent (a warning for its model after a failed compaction). It always exits 0 and never breaks
the agent. NAME: {', '.join(a.name for a in agents.every() if a.hook_module and a.name != 'openclaw')}.

`hook install` and `hook remove` are OpenClaw's hook (install openclaw / uninstall openclaw).
"""


def write_text_atomic(path: Path, text: str) -> None:
    """Write a report file whole or not at all (temp file + rename)."""
    import tempfile
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".report-", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise GuardError(f"{path}: cannot write the report ({exc.strerror}); choose a writable path") from None


def _read_input(path) -> str:
    if path in (None, "-"):
        if sys.stdin is None or sys.stdin.isatty():
            raise GuardError("--compact reads the text to summarize from --input FILE or standard input; give one")
        return sys.stdin.read()
    return read_text(Path(path), "input file")[0]


def _out(args, doc: dict, text) -> None:
    """The document as JSON, or `text` (a string, or a function making it: rendered only
    when asked for)."""
    if args.format == "json":
        sys.stdout.write(render.to_json(doc, pretty=sys.stdout.isatty()) + "\n")
    else:
        sys.stdout.write(text() if callable(text) else text)


def run_install(action: str, name: str, argv: list, prog: Optional[str] = None) -> int:
    """`compaction-guard install|uninstall NAME`: the guard's hook for one agent, written (or
    taken out) where that agent reads its hooks."""
    agent = agents.get(name)
    p = _Parser(prog=prog or f"compaction-guard {action} {name}", formatter_class=_OneLine,
                description=f"{'Install' if action == 'install' else 'Remove'} the guard's hook for {agent.title}.")
    p.add_argument("--home", "--state-dir", dest="home", metavar="DIR",
                   help=f"{agent.title}'s directory (default: as {agent.title} finds it)")
    agent.install_arguments(p)
    p.add_argument("--format", choices=["text", "json"], default="text", metavar="FORMAT",
                   help="text for people, json for machines")
    args = p.parse_args(argv)
    layout = agent.resolve(home=args.home)
    doc = agent.install(layout, args) if action == "install" else agent.uninstall(layout, args)
    if args.format == "json":
        sys.stdout.write(render.to_json(doc, pretty=sys.stdout.isatty()) + "\n")
    else:
        sys.stdout.write(agent.install_text(action, doc))
    return 0


def _settings_of(args):
    """Each agent's effective settings (its config.yaml, GUARD_*, --set), read once."""
    cache = {}

    def of(layout):
        key = (layout.agent, str(layout.guard_dir))
        if key not in cache:
            cache[key] = config.load(layout, overrides=args.set).settings
        return cache[key]
    return of


def run(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] in (["hook", "install"], ["hook", "remove"]):     # OpenClaw's, as before: install openclaw
        return run_install("install" if argv[1] == "install" else "uninstall", "openclaw", argv[2:],
                           prog=f"compaction-guard hook {argv[1]}")
    if argv[:1] in (["hook"], ["install"], ["uninstall"]):
        if argv[0] == "hook" and ({"-h", "--help"} & set(argv[1:3])):
            sys.stdout.write(HOOK_HELP)
            return 0
        if len(argv) < 2 or argv[1].startswith("-"):
            if {"-h", "--help"} & set(argv[1:]):
                install_parser(argv[0]).print_help()
                return 0
            raise GuardError(f"{argv[0]} takes the agent: {argv[0]} NAME, one of {', '.join(agents.NAMES)} "
                             f"(compaction-guard {argv[0]} --help)")
        if argv[0] == "hook":
            return agents.get(argv[1]).hook(argv[2:])
        return run_install(argv[0], argv[1], argv[2:])
    if argv[:1] == ["serve"]:           # `compaction-guard serve ...` = `--serve ...`, with serve's own options
        args = build_parser().parse_args(["--serve"])
        vars(args).update(vars(serve_parser().parse_args(argv[1:])))
    else:
        args = build_parser().parse_args(argv)
    settings_of = _settings_of(args)
    if (args.check or args.status or args.report or not any((args.serve, args.simulate is not None, args.compact,
                                                              args.print_config))) and not args.file:
        # every agent on this machine, unless one is named (--home alone names OpenClaw's directory)
        names = [args.agent] if args.agent else ([agents.DEFAULT] if args.home else None)
        pairs = operations.layouts(names, home=args.home)
    else:
        name = args.agent or (owner_of(args.file) if args.file and not args.home else None)
        pairs = operations.layouts([name or agents.DEFAULT], home=args.home)
    home = pairs[0][1]
    flags = {"provider": args.provider, "base_url": args.base_url, "model": args.model,
             "api_key_env": args.api_key_env, "timeout": args.timeout}
    if args.print_config:
        eff = config.load(home, overrides=args.set)
        doc = config.describe(eff, providers.resolve(flags, home, file_values=eff.provider_values), home)
        _out(args, doc, render.config_text(doc))
        return 0
    if (args.file or args.input_tokens is not None) and not args.check:
        raise GuardError("--file and --input-tokens go with --check; add --check")
    if args.input and not (args.check or args.compact):
        raise GuardError("--input goes with --compact (the text to summarize) or --check --file (the source)")
    if args.input_tokens is not None and args.input_tokens < 0:
        raise GuardError("--input-tokens must be 0 or more")
    if (args.provider or args.base_url or args.model or args.api_key_env or args.timeout is not None or args.fault) \
            and not (args.simulate is not None or args.compact or args.print_config or args.serve):
        raise GuardError("--provider, --base-url, --model, --api-key-env, --timeout and --fault go with "
                         "--simulate, --compact or --serve")
    if args.serve:
        if args.fault:
            raise GuardError("--fault goes with --simulate or --compact")
        from .serve import serve
        eff = config.load(home, overrides=args.set)
        agent = agents.get(args.agent) if args.agent else None
        spec = agent.relay() if agent is not None else None
        if spec is not None:        # an agent that compacts on the endpoint of every turn: serve relays it
            if args.provider or args.model or args.api_key_env or args.timeout is not None:
                raise GuardError(f"serve --agent {args.agent} relays {agent.title}'s own requests, with its own model "
                                 "and credentials: --provider, --model, --api-key-env and --timeout do not apply "
                                 f"(--base-url names its upstream, default {spec.upstream})")
            return serve(home, None, eff.settings, host=args.host, port=args.port, token_env=args.token_env,
                         observe=args.observe, relay_to=(agent, args.base_url or spec.upstream))
        choice = providers.resolve(flags, home, file_values=eff.provider_values)
        return serve(home, choice, eff.settings, host=args.host, port=args.port, token_env=args.token_env,
                     observe=args.observe)
    if args.all and not args.check:
        raise GuardError("--all goes with --check")
    if (args.push or args.textfile) and not args.check:
        raise GuardError("--push and --textfile go with --check")
    if args.push and not args.push.lower().startswith(("http://", "https://")):
        raise GuardError(f"--push {args.push!r}: give the Pushgateway's URL, e.g. http://pushgateway:9091")
    if args.textfile and not Path(args.textfile).is_dir():
        raise GuardError(f"--textfile {args.textfile}: not a directory; give node_exporter's "
                         "--collector.textfile.directory")
    if (args.since or args.html) and not args.report:
        raise GuardError("--since and --html go with --report")
    if args.format == "prometheus" and not args.report:
        raise GuardError("--format prometheus goes with --report")
    if args.check:
        return _check(args, pairs, settings_of)
    if args.simulate is not None or args.compact:
        if args.compact:
            text = _read_input(args.input)
        else:
            text = sys.stdin.read() if args.simulate == "-" else args.simulate
        previous = read_text(Path(args.previous), "previous summary")[0] if args.previous else None
        eff = config.load(home, overrides=args.set)
        choice = providers.resolve(flags, home, file_values=eff.provider_values)
        if choice.provider in ("openai", "anthropic") and providers.points_at_guard(choice.base_url):
            where = "the agent's compaction model" if choice.origin.get("base_url") == "openclaw.json" else "--base-url"
            raise GuardError(f"{where} ({choice.base_url}) is compaction-guard serve itself: the chain would compact "
                             "through its own proxy; give the model it forwards to (--provider, --base-url, --model, "
                             "or config.yaml's provider: section)")
        result = operations.compact(text, home, settings=eff.settings, choice=choice, faults=faults.parse(args.fault),
                                    previous=previous)
        if args.compact and args.format != "json":
            sys.stdout.write(result.summary + ("" if result.summary.endswith("\n") else "\n"))
        else:
            _out(args, result.to_dict(), lambda: render.simulate_text(result))
        return 0
    if args.report:
        reps = operations.report_machine(pairs, settings_of, since=args.since)
        if args.html:
            from .html_report import render as render_html
            pages = [render_html(rep, operations.status(lay, settings_of(lay)))
                     for rep, (_, lay) in zip(reps, operations.with_state(pairs))]
            write_text_atomic(Path(args.html), _one_page(pages))
        if args.format == "prometheus":
            sys.stdout.write(render.report_prometheus(reps))
        else:
            doc = reps[0] if len(reps) == 1 else {"agents": reps}
            _out(args, doc, lambda: "".join(render.report_text(rep) for rep in reps)
                 + (f"  HTML report written to {args.html}\n" if args.html else ""))
        return 0
    st = operations.status_machine(pairs, settings_of)
    _out(args, st, lambda: "".join(render.status_text(d) for d in st.get("agents", [st])))
    return 0


def _one_page(pages: list) -> str:
    """Several agents' HTML reports as one page: the first page's head, every page's body."""
    if len(pages) == 1:
        return pages[0]
    bodies = [p[p.index("<body>") + 6:p.rindex("</body>")] for p in pages]
    return pages[0][:pages[0].index("<body>") + 6] + "<hr>".join(bodies) + "</body></html>\n"


def _check(args, pairs, settings_of) -> int:
    """--check: every agent of `pairs` (or the one --file's store belongs to), as results come."""
    input_text = read_text(Path(args.input), "input file")[0] if args.input else None
    out = render.JsonCheckStream(sys.stdout) if args.format == "json" else render.TextCheckStream(sys.stdout)
    progress = (render.Progress(sys.stderr, float(os.environ.get("GUARD_PROGRESS_DELAY", "2")))
                if args.format != "json" and sys.stderr.isatty() else None)
    try:
        if args.file:
            home = pairs[0][1]
            rep = operations.check(home, args.file, settings_of(home), input_text=input_text,
                                   input_tokens=args.input_tokens, recheck_all=args.all, on_result=out.result,
                                   collect=False, on_progress=progress.update if progress else None,
                                   on_start=out.start)
        else:
            rep = operations.check_machine(pairs, settings_of, recheck_all=args.all, on_result=out.result,
                                           collect=False, on_progress=progress.update if progress else None,
                                           on_start=out.start)
    except BaseException as exc:
        if isinstance(out, render.JsonCheckStream):     # stdout stays one whole JSON document
            out.abort(str(exc) if isinstance(exc, GuardError) else f"internal error ({type(exc).__name__}: {exc})")
        raise
    if progress:
        progress.close()
    out.finish(rep)
    for err in rep.errors:
        print(f"compaction-guard: {err}", file=sys.stderr)
    if args.push or args.textfile:
        from . import telemetry
        for problem in telemetry.push_now(pairs, settings_of, args.push, args.textfile):
            print(f"compaction-guard: {problem}", file=sys.stderr)
    if rep.nothing_found:
        print(f"compaction-guard: {rep.nothing_found}", file=sys.stderr)
        return 2
    # 1 while the status is DEGRADED (a session's latest compaction failed, found now or before:
    # a cron job running the check sees it every time), and when this check found a failure
    return 2 if rep.errors else (1 if rep.failures_found or rep.dropped or rep.status == "DEGRADED" else 0)


def main(argv=None) -> int:
    try:
        return run(argv)
    except GuardError as exc:
        print(f"compaction-guard: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("compaction-guard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # one line, and how to report it; the traceback only when asked for
        if "--debug" in (sys.argv[1:] if argv is None else argv) or os.environ.get("GUARD_DEBUG") == "1":
            import traceback
            traceback.print_exc()
        print(f"compaction-guard: internal error ({type(exc).__name__}: {exc}); please report it with the command "
              "you ran (--debug shows where it happened)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
