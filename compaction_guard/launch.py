"""The command's entry point (`compaction-guard`, `python -m compaction_guard`, guard.py).

`hook NAME` goes straight to that agent's hook, before the command line and the detectors
are imported: an agent runs the hook on every tool call or model call, and its ordinary
path (nothing to report) must cost little more than starting Python
(benchmarks/bench_hook.py). Everything else is cli.main.
"""
import sys


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "hook" and argv[1] not in ("install", "remove") \
            and not argv[1].startswith("-") and "--help" not in argv and "-h" not in argv:
        from . import agents
        from .errors import GuardError
        try:
            agent = agents.get(argv[1])
        except GuardError:
            agent = None            # cli says what is wrong, in its words
        if agent is not None:
            try:
                return agent.hook(argv[2:])
            except GuardError as exc:   # an agent with no hook command: one line, as cli says it
                print(f"compaction-guard: {exc}", file=sys.stderr)
                return exc.exit_code
    try:
        from .cli import main as cli_main
    except ImportError as exc:      # a dependency is missing: say how to get it, no traceback
        print(f"compaction-guard: missing dependency ({exc.name}); run: pip install .", file=sys.stderr)
        return 2
    return cli_main(argv)
