"""Command line: `python3 guard.py` / `compaction-guard`. Each command is a few
lines over compaction_guard.operations; output goes through compaction_guard.render.

Exit status: 0 fine (a check found no failure), 1 a check found failures,
2 could not run, could not read a store, or found no store at all (one line on stderr
saying which file or directory and what to do).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import config, faults, layout as layouts, operations, providers, render
from .errors import GuardError
from .stores import read_text


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"compaction-guard: {message}; see --help\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="compaction-guard", description="Checks compaction summaries and runs the 3-level compaction chain.")
    act = p.add_mutually_exclusive_group()
    act.add_argument("--check", action="store_true", help="validate the compaction outputs it can find (or --file)")
    act.add_argument("--simulate", metavar="TEXT", help="run the 3-level chain on TEXT ('-' reads stdin)")
    act.add_argument("--compact", action="store_true",
                     help="for compactors: summarize --input FILE (or stdin) through the chain, print the summary")
    act.add_argument("--report", action="store_true", help="failure and escalation history")
    act.add_argument("--status", action="store_true", help="last check summary (the default)")
    act.add_argument("--serve", action="store_true",
                     help="run the validating proxy OpenClaw compacts through (also: compaction-guard serve)")
    act.add_argument("--print-config", action="store_true",
                     help="every effective setting and where it came from (default, file, environment, flag)")
    p.add_argument("--file", metavar="PATH", help="with --check: check one summaries file, summary or DAG state")
    p.add_argument("--input", metavar="FILE", help="with --compact: the text to summarize ('-' or none: stdin); "
                   "with --check --file TEXT: the source text the summary replaced")
    p.add_argument("--previous", metavar="FILE", help="with --compact/--simulate: the summary this one replaces")
    p.add_argument("--input-tokens", metavar="N", type=int, help="with --check --file TEXT: the source's size in tokens")
    p.add_argument("--all", action="store_true", help="with --check: re-check every summary, not only those added "
                   "since the last check")
    p.add_argument("--format", choices=["text", "json", "prometheus"], default="text",
                   help="text for people, json for machines, prometheus (with --report) for scrapers")
    p.add_argument("--since", metavar="DATE", help="with --report: only what happened from DATE (YYYY-MM-DD)")
    p.add_argument("--html", metavar="FILE", help="with --report: also write a self-contained HTML report to FILE")
    p.add_argument("--home", "--state-dir", dest="home", metavar="DIR",
                   help="OpenClaw's state directory (default: as OpenClaw finds it: $OPENCLAW_STATE_DIR, else "
                   "$OPENCLAW_HOME/.openclaw, else ~/.openclaw)")
    p.add_argument("--agent", choices=["openclaw", "claude-code"], default="openclaw",
                   help="whose stores and state: OpenClaw's (default) or Claude Code's ($CLAUDE_CONFIG_DIR, else "
                   "~/.claude; --home names its configuration directory)")
    p.add_argument("--set", metavar="NAME=VALUE", action="append", default=[],
                   help="override one setting (repeatable); names: --print-config")
    p.add_argument("--debug", action="store_true", help="on an internal error, print the traceback (also GUARD_DEBUG=1)")
    srv = p.add_argument_group("serve (the proxy)")
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; any other needs "
                     "a client token)")
    srv.add_argument("--port", type=int, default=8742, help="port (default 8742)")
    srv.add_argument("--token-env", default="GUARD_SERVE_TOKEN", metavar="VAR",
                     help="variable holding the token clients must send (Authorization: Bearer)")
    srv.add_argument("--observe", action="store_true", help="check and record every reply, return it unchanged")
    llm = p.add_argument_group("summarizer for L1/L2 (default: GUARD_* variables, then openclaw.json, then extractive)")
    llm.add_argument("--provider", choices=["openai", "anthropic", "local", "extractive"], help="$GUARD_PROVIDER")
    llm.add_argument("--base-url", metavar="URL", help="openai: including /v1; anthropic: the host ($GUARD_BASE_URL)")
    llm.add_argument("--model", metavar="NAME", help="$GUARD_MODEL")
    llm.add_argument("--api-key-env", metavar="VAR", help="variable holding the key (OPENAI_API_KEY / ANTHROPIC_API_KEY)")
    llm.add_argument("--timeout", metavar="SECONDS", type=float, help="per call ($GUARD_TIMEOUT, default 60)")
    llm.add_argument("--fault", metavar="L1=KIND,L2=KIND", help="inject failures to watch escalation "
                     "(empty, inflation, garbled, repetition, truncation_marker, stale, error, timeout, refusal, ...)")
    return p


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


def run_hook(argv: list) -> int:
    """`compaction-guard hook install|remove`: the OpenClaw hook that checks each compaction."""
    from . import hooks
    p = _Parser(prog="compaction-guard hook", description="Install or remove the OpenClaw hook that checks each "
                "compaction seconds after it is written (event session:compact:after).")
    p.add_argument("action", choices=["install", "remove"])
    p.add_argument("--home", "--state-dir", dest="home", metavar="DIR", help="OpenClaw's state directory (default: "
                   "as OpenClaw finds it)")
    p.add_argument("--openclaw", metavar="CMD", help="OpenClaw's command, to enable/disable the hook with "
                   "(default $OPENCLAW_BIN, else `openclaw` on PATH)")
    p.add_argument("--timeout", type=float, default=20.0, metavar="SECONDS", help="the hook's check is killed after this")
    p.add_argument("--format", choices=["text", "json"], default="text")
    args = p.parse_args(argv)
    layout = layouts.resolve(state_dir=args.home)
    doc = hooks.install(layout, args.openclaw, args.timeout) if args.action == "install" else \
        hooks.remove(layout, args.openclaw)
    if args.format == "json":
        sys.stdout.write(render.to_json(doc, pretty=sys.stdout.isatty()) + "\n")
    elif args.action == "install":
        sys.stdout.write(f"hook written: {doc['hook']} (on {doc['event']}; runs {' '.join(doc['command'])})\n"
                         f"  {doc['note'] if doc['enabled'] else 'NOT ENABLED YET: ' + doc['note']}\n")
    else:
        sys.stdout.write(f"hook {'removed' if doc['removed'] else 'not installed'}: {doc['hook']}\n  {doc['note']}\n")
    return 0


def run_claude_install(action: str, argv: list) -> int:
    """`compaction-guard install|uninstall claude-code`: the hook entries in Claude Code's settings.json."""
    from . import claude_code
    p = _Parser(prog=f"compaction-guard {action} claude-code",
                description=f"{'Add' if action == 'install' else 'Remove'} the guard's hook entries "
                            f"({', '.join(claude_code.EVENTS)}) in Claude Code's settings.json.")
    p.add_argument("--project", metavar="DIR", help="the project's .claude/settings.json instead of the user's")
    p.add_argument("--home", metavar="DIR", help="Claude Code's configuration directory (default $CLAUDE_CONFIG_DIR, "
                   "else ~/.claude)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    args = p.parse_args(argv)
    layout = claude_code.resolve(home=args.home)
    doc = claude_code.install(layout, args.project) if action == "install" else claude_code.uninstall(layout, args.project)
    if args.format == "json":
        sys.stdout.write(render.to_json(doc, pretty=sys.stdout.isatty()) + "\n")
    elif action == "install":
        what = f"added on {', '.join(doc['added'])}" if doc["added"] else "already there, nothing changed"
        sys.stdout.write(f"{doc['settings']}: hook entries {what}\n  they run: {doc['command']}\n"
                         f"  verdicts go to {doc['state']} (compaction-guard --agent claude-code --status / --report)\n")
    else:
        what = f"removed from {', '.join(doc['removed'])}" if doc["removed"] else "none were there, nothing changed"
        sys.stdout.write(f"{doc['settings']}: hook entries {what}\n")
    return 0


def run(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["hook", "claude-code"]:
        from .claude_code import hook_main
        return hook_main()
    if argv[:1] in (["install"], ["uninstall"]):
        if argv[1:2] != ["claude-code"]:
            raise GuardError(f"{argv[0]} takes the agent: {argv[0]} claude-code (for OpenClaw: compaction-guard hook "
                             "install)")
        return run_claude_install(argv[0], argv[2:])
    if argv[:1] == ["hook"]:
        return run_hook(argv[1:])
    if argv[:1] == ["serve"]:           # `compaction-guard serve ...` = `--serve ...`
        argv[0] = "--serve"
    args = build_parser().parse_args(argv)
    if args.agent == "claude-code":
        from . import claude_code
        home = claude_code.resolve(home=args.home)
    else:
        home = layouts.resolve(state_dir=args.home)
    eff = config.load(home, overrides=args.set)
    settings = eff.settings
    flags = {"provider": args.provider, "base_url": args.base_url, "model": args.model,
             "api_key_env": args.api_key_env, "timeout": args.timeout}
    if args.print_config:
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
        choice = providers.resolve(flags, home, file_values=eff.provider_values)
        return serve(home, choice, settings, host=args.host, port=args.port, token_env=args.token_env,
                     observe=args.observe)
    if args.all and not args.check:
        raise GuardError("--all goes with --check")
    if (args.since or args.html) and not args.report:
        raise GuardError("--since and --html go with --report")
    if args.format == "prometheus" and not args.report:
        raise GuardError("--format prometheus goes with --report")
    if args.check:
        input_text = read_text(Path(args.input), "input file")[0] if args.input else None
        out = render.JsonCheckStream(sys.stdout) if args.format == "json" else render.TextCheckStream(sys.stdout)
        progress = (render.Progress(sys.stderr, float(os.environ.get("GUARD_PROGRESS_DELAY", "2")))
                    if args.format != "json" and sys.stderr.isatty() else None)
        try:
            rep = operations.check(home, args.file, settings, input_text=input_text, input_tokens=args.input_tokens,
                                   recheck_all=args.all, on_result=out.result, collect=False,
                                   on_progress=progress.update if progress else None, on_start=out.start)
        except BaseException as exc:
            if isinstance(out, render.JsonCheckStream):     # stdout stays one whole JSON document
                out.abort(str(exc) if isinstance(exc, GuardError) else f"internal error ({type(exc).__name__}: {exc})")
            raise
        if progress:
            progress.close()
        out.finish(rep)
        for err in rep.errors:
            print(f"compaction-guard: {err}", file=sys.stderr)
        if rep.nothing_found:
            print(f"compaction-guard: {rep.nothing_found}", file=sys.stderr)
            return 2
        return 2 if rep.errors else (1 if rep.failures_found else 0)
    if args.simulate is not None or args.compact:
        if args.compact:
            text = _read_input(args.input)
        else:
            text = sys.stdin.read() if args.simulate == "-" else args.simulate
        previous = read_text(Path(args.previous), "previous summary")[0] if args.previous else None
        choice = providers.resolve(flags, home, file_values=eff.provider_values)
        if choice.provider in ("openai", "anthropic") and providers.points_at_guard(choice.base_url):
            where = "OpenClaw's compaction model" if choice.origin.get("base_url") == "openclaw.json" else "--base-url"
            raise GuardError(f"{where} ({choice.base_url}) is compaction-guard serve itself: the chain would compact "
                             "through its own proxy; give the model it forwards to (--provider, --base-url, --model, "
                             "or config.yaml's provider: section)")
        result = operations.compact(text, home, settings=settings, choice=choice, faults=faults.parse(args.fault),
                                    previous=previous)
        if args.compact and args.format != "json":
            sys.stdout.write(result.summary + ("" if result.summary.endswith("\n") else "\n"))
        else:
            _out(args, result.to_dict(), lambda: render.simulate_text(result))
        return 0
    if args.report:
        rep = operations.report(home, settings, since=args.since)
        if args.html:
            from .html_report import render as render_html
            write_text_atomic(Path(args.html), render_html(rep, operations.status(home, settings)))
        if args.format == "prometheus":
            sys.stdout.write(render.report_prometheus(rep))
        else:
            _out(args, rep, lambda: render.report_text(rep)
                 + (f"  HTML report written to {args.html}\n" if args.html else ""))
        return 0
    st = operations.status(home, settings)
    _out(args, st, lambda: render.status_text(st))
    return 0


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
