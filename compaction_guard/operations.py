"""The guard's operations, one function per command; the CLI is a thin layer over them.

    check(home=..., file=None)        -> CheckReport, recorded in the state
    simulate(text, summarizer=None)   -> ChainResult, counted in level_usage (chain runs by level)
    compact(text, ...)                -> ChainResult for compactors (same chain as simulate)
    report(home)                      -> dict: level mix, L3 warning, recent failures, breaker
    status(home)                      -> dict: the last check at a glance
"""
from __future__ import annotations

import contextlib
import sqlite3
from datetime import date, datetime, timedelta, timezone
from collections import Counter
from pathlib import Path
from typing import Callable, Optional

from . import agents, breaker, providers
from .faults import FaultySummarizer
from .providers import ProviderChoice
from .check import CheckReport, auto_workers, iter_results
from .errors import GuardError
from .settings import DEFAULT, Settings
from .ledger import digest as ledger_digest
from .state import (LEVEL_KEYS, STORED_KEYS, StateStore, affected_sessions, apply_counts, keep_verdict, record_check,
                    state_path)
from .check import degraded_doc
from .own_answers import Matcher
from .verdicts import FailureLog
from . import stores, telemetry


def _store(home, settings: Settings) -> StateStore:
    return StateStore(state_path(home), settings, agent=getattr(home, "agent", None))


layout_of = agents.layout_of


def check(home=None, file=None, settings: Settings = DEFAULT, input_text: Optional[str] = None,
          input_tokens: Optional[int] = None, save: bool = True, recheck_all: bool = False,
          on_result: Optional[Callable] = None, collect: bool = True,
          on_progress: Optional[Callable] = None, on_start: Optional[Callable] = None) -> CheckReport:
    """Check the stores of one agent (`home`: its layout, or OpenClaw's state directory, or
    None for the OpenClaw installation the environment names), or one `file`, and record the
    outcome in that agent's state. `check_machine` checks every agent.

    Stores under the home are checked incrementally: only summaries added since the
    last check (a watermark per store in the state), or all of them with
    `recheck_all`. A file named with `file` is always checked whole. Results stream:
    `on_result(result)` sees each one as it is known; `collect=False` keeps memory flat
    (the report then holds counts, not results). `on_progress(done, total, source)`
    reports progress; `on_start(report)` sees the report once the stores are known (its
    `layout` line and `sources_found`). A store that cannot be read goes into report.errors
    and the others are still checked. Finding no store at all is status NO_STORE, never
    HEALTHY: the report says where it looked and what to set."""
    home = layout_of(home)
    store = _store(home, settings)
    with store.exclusive("check") if save else contextlib.nullcontext():
        # one check at a time per home: two at once would both count the same new summaries
        return _check(home, store, file, settings, input_text, input_tokens, save, recheck_all, on_result, collect,
                      on_progress, on_start)


def layouts(names=None, env=None, home: Optional[str] = None) -> list:
    """(agent, layout) of the agents named (`names`), or of every registered one; `home` (the
    --home flag) names the directory of the first (one agent only)."""
    chosen = [agents.get(n) for n in names] if names else agents.every()
    if home is not None and len(chosen) != 1:
        raise GuardError("--home names one agent's directory: add --agent NAME")
    return [(a, a.resolve(env, home)) for a in chosen]


def check_machine(pairs: list, settings_of: Callable, recheck_all: bool = False, on_result: Optional[Callable] = None,
                  collect: bool = True, on_progress: Optional[Callable] = None,
                  on_start: Optional[Callable] = None, save: bool = True) -> CheckReport:
    """Check every agent of `pairs` ((agent, layout), as `layouts` gives them) that is on this
    machine, each in its own state (`settings_of(layout)`: its settings), and return one
    report over all of them: its `agents` says what each one's check found, its `errors` hold
    each agent's unreadable stores (the other agents are still checked). Nothing found for
    any agent is NO_STORE, with where each one was looked for."""
    total = CheckReport()
    looked = []             # (title, where it looked) of each agent with nothing to check
    dirs = []               # (title, directory) of each agent with nothing to check
    for agent, layout in pairs:
        entry = {"agent": agent.name, "title": agent.title, "layout": layout.describe(), "paths": layout.to_dict()}
        total.agents.append(entry)
        if len(pairs) > 1 and not agent.present(layout):
            entry.update(status="ABSENT", summaries_checked=0, failures_found=0)
            looked.append((agent.title, f"{layout.describe()}: not there; {layout.hint}"))
            dirs.append((agent.title, str(layout.state_dir)))
            continue
        try:
            rep = check(layout, settings=settings_of(layout), save=save, recheck_all=recheck_all,
                        on_result=on_result, collect=collect, on_progress=on_progress, on_start=on_start)
        except GuardError as exc:       # this agent's state or config: said, and the others still checked
            entry.update(status="ERROR", summaries_checked=0, failures_found=0, errors=[str(exc)])
            total.errors.append(str(exc))
            continue
        entry.update(status=rep.status, summaries_checked=rep.checked, failures_found=rep.failing,
                     stores=len(rep.sources), nothing_found=rep.nothing_found, errors=rep.errors)
        if rep.nothing_found:
            looked.append((agent.title, rep.nothing_found))
            dirs.append((agent.title, str(layout.state_dir)))
        total.absorb(rep)
    if any(a["status"] not in ("ABSENT", "NO_STORE") for a in total.agents) or total.errors:
        total.notes.extend(f"{a['title']}: {a['nothing_found']}" for a in total.agents
                           if len(pairs) > 1 and a["status"] == "NO_STORE")
    elif len(pairs) == 1:
        total.nothing_found = looked[0][1] if looked else None
    elif sum(a["status"] == "NO_STORE" for a in total.agents) == 1:
        # the one agent on this machine, with nothing to check: where it looked, and what to set
        total.nothing_found = next(a["nothing_found"] for a in total.agents if a["status"] == "NO_STORE")
    else:           # each agent's line says what it found; this one, once, where each was looked for
        total.nothing_found = ("no compaction store of any agent found: looked for "
                               + ", ".join(f"{title} in {d}" for title, d in dirs)
                               + "; set the variable of the directory an agent keeps its files in (OPENCLAW_STATE_DIR, "
                               "CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME, XDG_DATA_HOME) or pass --agent NAME "
                               "--home DIR")
    return total


def _check(home, store, file, settings, input_text, input_tokens, save, recheck_all, on_result, collect, on_progress,
           on_start=None):
    report = CheckReport()
    before = store.read() if save else {}
    marks = before.get("watermarks", {})
    if file is not None:
        sources = [stores.load_file(file, input_text=input_text, input_tokens=input_tokens, layout=home,
                                    max_bytes=settings.max_file_bytes)]
    else:
        report.layout = home.describe()
        report.paths = home.to_dict()
        if home.config_problem:
            report.notes.append(home.config_problem)
        agent = agents.of_layout(home)
        sources, report.errors = agent.discover(home)
        made = agent.checked_as_made(home, before or store.read()) if not sources and not report.errors else None
        if made is not None and made[0]:
            report.notes.append(made[1])          # checked as they were made: nothing to read again
        elif made is not None:
            report.nothing_found = f"{made[1]}; {home.hint}"
        elif not sources and not report.errors:
            report.nothing_found = (f"no compaction store found in {home.describe()}: looked for "
                                    f"{', '.join(home.looked())}; {home.hint}")
    report.sources_found = [{"name": s.kind, "path": str(s.path)} for s in sources]
    if on_start:
        on_start(report)
    for src in sources:
        src.input_chars = settings.max_input_chars
    new_marks = {}
    # each new summary's verdict event, for a team's telemetry when one is configured (bounded)
    log = FailureLog(settings.max_failures_kept, getattr(home, "agent", None), "check",
                     events=settings.telemetry_max_events if telemetry.wanted(settings) else 0)
    # Each stored summary is counted once, ever (ledger.py). `fresh`: summaries new to
    # the ledger whose result this check has; `known`: summaries a guard older than the
    # ledger counted (below its watermark), added to the ledger uncounted.
    last_by_session = {}       # session (its scope) -> its last compaction's verdict in this check
    own = Matcher(before)      # the guard's own L3 answers (serve), known again where stored
    ledger, ledger_error = None, None
    if save:
        try:
            ledger = _open_ledger(store)
        except GuardError as exc:       # the check still runs; its outcome cannot be recorded
            ledger_error = str(exc)
    fresh, known = set(), set()
    try:
        for src in sources:
            # a file named with --file is read whole; its summaries still count once
            mark = marks.get(src.key) if file is None else None
            try:
                read_mark = None if recheck_all else mark
                if ledger is not None and isinstance(src, stores.ListSource):
                    known.update(ledger_digest(src.count_key(_Id(i))) for i in (mark or {}).get("ids", []))
                    if file is None and not recheck_all:
                        read_mark = dict(mark or {}, counted=lambda r, src=src: ledger.has(ledger_digest(src.count_key(r))))
                total = src.count(read_mark)
                workers = auto_workers(total)
                done = 0
                records = _keyed(src, src.records(read_mark), ledger, marks.get(src.key), known, own)
                if isinstance(src, stores.ListSource):
                    records = list(records)        # already in memory: workers share it (check.iter_results)
                for result in iter_results(records, settings, source=src, workers=workers):
                    if result.new:
                        d = ledger_digest(result.key)
                        result.new = d not in fresh
                        fresh.add(d)
                    report.add(result, collect)
                    log.add(result, report.checked_at)
                    if result.session_key:
                        last_by_session[result.session_key] = {
                            "id": result.id, "failures": result.failures, "fallback": bool(result.fallback),
                            "at": report.checked_at, "store": str(src.path),
                            **({"guard_l3": True} if result.own_answer else {})}
                    done += 1
                    if on_result:
                        on_result(result)
                    if on_progress and done % 500 == 0:
                        on_progress(done, total, src.kind)
                new_marks[src.key] = src.new_watermark()
            except (GuardError, sqlite3.Error, OSError) as exc:
                report.errors.append(str(exc) if isinstance(exc, GuardError)
                                     else f"{src.path}: could not be read to the end ({exc}); the rest was checked")
            finally:
                src.close()
            report.sources.append(src.describe())
            report.notes.extend(src.notes)
        if on_progress:
            on_progress(report.checked, report.checked, "done")
        if file is None:
            # compactions the agent's hook saw dropped since the last check: the store holds
            # nothing of them, so they are the hook's to report
            report.dropped = [{"session": k, "id": v.get("id"), "at": v.get("at"),
                               "compaction_output_tokens": v.get("compaction_output_tokens")}
                              for k, v in before.get("sessions", {}).items()
                              if isinstance(v, dict) and v.get("dropped")
                              and str(v.get("at") or "") > str(before.get("last_check_at") or "")]
            verdicts = {**before.get("sessions", {}), **last_by_session}
            usages = agents.of_layout(home).usages(home, sources, report.notes)
            report.session_warnings = context_pressure(usages, verdicts, settings)
        if ledger_error:
            report.errors.append(ledger_error)
        elif save:
            _record(store, ledger, report, settings, log, fresh | known, new_marks if file is None else None,
                    last_by_session, home.agent)
    finally:
        if ledger is not None:
            ledger.close()
    return report


class _Id:
    """A record known only by its id (an older watermark's list of DAG node ids)."""

    def __init__(self, rid):
        self.id = str(rid)
        self.meta = {}


def _open_ledger(store):
    from .ledger import Ledger, ledger_path
    return Ledger(ledger_path(store.path))


def _keyed(src, records, ledger, old_mark, known, own=None):
    """Give each record its identity and say whether it is new: not in the ledger, and
    not below the watermark of a guard older than the ledger (those are `known`); and whether
    it is the guard's own L3 answer (`own`: own_answers.Matcher)."""
    covered = None
    for rec in records:
        rec.key = src.count_key(rec)
        if own:
            rec.own_answer = own(rec.content)
        if ledger is not None:
            d = ledger_digest(rec.key)
            if d in known or ledger.has(d):
                rec.new = False
            elif any(ledger.has(ledger_digest(a)) for a in (rec.meta or {}).get("aliases") or ()):
                rec.new = False         # counted by the agent's hook under another identity
                known.add(d)
            else:
                if covered is None:      # asked after the source started reading (it knows the file then)
                    covered = src.covered(old_mark) if old_mark else (lambda r: False)
                rec.new = not covered(rec)
                if not rec.new:
                    known.add(d)
        yield rec


def context_pressure(usages: list, last: dict, settings: Settings) -> list:
    """Sessions near their context window (their total of their context at least
    context_pressure_share, as the agent keeps it: Agent.usages) whose last compaction failed
    or was written by a fallback: the next compaction is the one that must work. One warning
    per session."""
    out = []
    for u in usages:
        prev = last.get(getattr(u, "scope", None)) or last.get(u.session_id)
        if u.share < settings.context_pressure_share or not prev or not (prev.get("failures") or prev.get("fallback")):
            continue
        what = ", ".join(prev.get("failures") or []) or "written by a fallback"
        stale = "" if u.fresh is not False else " (OpenClaw marks that total as not fresh)"
        out.append({"kind": "context_pressure", "agent": u.agent, "session_key": u.key, "session_id": u.session_id,
                    "total_tokens": u.total_tokens, "context_tokens": u.context_tokens,
                    "context_share": round(u.share, 3), "compactions": u.compactions,
                    "last_compaction": prev.get("id"),
                    "last_compaction_failures": prev.get("failures") or [], "fallback": bool(prev.get("fallback")),
                    "reason": f"session {u.key} holds {u.total_tokens:,} of its {u.context_tokens:,}-token context "
                              f"({u.share:.0%}){stale} and its last compaction {prev.get('id')} failed ({what}): the "
                              "next compaction is the one that must work; fix the summarizer now, or run it "
                              "through compaction-guard serve"})
    return out


def _record(store, ledger, report, settings, log, keys, new_marks, last_by_session=None, agent=None) -> None:
    """Count the check's new summaries (the ledger's two phases) and record the check: each
    session's latest verdict, and the status they make."""
    try:
        with store.update() as state:
            state["counted_batch"] = ledger.settle(state["counted_batch"], lambda c: apply_counts(state, c))
            batch = state["counted_batch"] + 1
            counts = log.counts(report.checked_at)
            ledger.stage(keys, counts, batch)
            _keep_verdicts(state, last_by_session or {}, settings, whole=new_marks is not None)
            report.affected = affected_sessions(state, agent)
            record_check(state, report, settings, counts)
            state["counted_batch"] = batch
            if log.events:
                state["_verdicts"] = list(log.events)
            if new_marks is not None:
                wm = state.setdefault("watermarks", {})
                for k, v in new_marks.items():
                    if v is None:
                        wm.pop(k, None)          # read whole each time: the ledger says what was counted
                    else:
                        wm[k] = v
                for k in [k for k in wm if not _store_exists(k)]:
                    del wm[k]                    # a store that is gone keeps no watermark
        ledger.done(batch)
    except GuardError as exc:   # the check ran; say that its outcome could not be recorded
        report.errors.append(str(exc))
    except sqlite3.Error as exc:
        report.errors.append(f"{ledger.path}: the guard's count ledger could not be written ({exc}); this check's "
                             "summaries were not counted (the next check counts them)")


def _keep_verdicts(state: dict, verdicts: dict, settings: Settings, whole: bool) -> None:
    """Each session's latest compaction verdict (at most max_sessions_kept sessions). On a check
    of the agent's stores (`whole`), a session whose file is gone (a transcript deleted, an
    older guard's key) is forgotten: nothing newer can come for it."""
    for key, entry in verdicts.items():
        keep_verdict(state, key, entry)
    if whole:
        for key in [k for k, v in state["sessions"].items() if ":" not in k or _gone(v)]:
            del state["sessions"][key]
    if len(state["sessions"]) > settings.max_sessions_kept:
        newest = sorted(state["sessions"].items(), key=lambda kv: str(kv[1].get("at")))
        state["sessions"] = dict(newest[-settings.max_sessions_kept:])


def _gone(entry: dict) -> bool:
    where = entry.get("store") or entry.get("transcript")
    return isinstance(where, str) and bool(where) and not Path(where).exists()


def _store_exists(mark_key: str) -> bool:
    """Watermark keys are `<kind>:<path>`."""
    _, _, path = mark_key.partition(":")
    return bool(path) and Path(path).exists()


def compact(text: str, home: Optional[Path] = None, summarizer=None, settings: Settings = DEFAULT,
            choice: Optional[ProviderChoice] = None, faults: Optional[dict] = None, previous: Optional[str] = None,
            save: bool = True):
    """Run the 3-level chain on `text` and return the ChainResult (always a valid summary):
    compaction_guard.api.compact, recorded in `home`'s state as a `chain` run.

    The summarizer is `summarizer`, else the provider `choice`, else the configured one
    (flags/env/openclaw.json, see providers.resolve). `faults` ({level: kind}) injects
    failures. When the circuit breaker is open the LLM levels are skipped. The run counts
    in level_usage and updates the breaker; a state that cannot be written is an error."""
    from . import api
    home = layout_of(home)
    notes = []
    if summarizer is None:
        choice = choice or providers.resolve({}, home)
        if choice.note:
            notes.append(choice.note)
        summarizer = providers.build(choice, settings)
    if faults:
        summarizer = FaultySummarizer(summarizer, faults, previous or "")
    done = api.compact(text, summarizer, previous=previous, settings=settings, record="chain" if save else None,
                       home=home, on_state_error="raise")
    done.chain.notes = notes + list(done.notes)
    return done.chain


# --simulate and --compact run the same chain; --compact is what compactors call.
simulate = compact


def report(home: Optional[Path] = None, settings: Settings = DEFAULT, recent: int = 10, since: Optional[str] = None,
           days: int = 30) -> dict:
    """Failure and escalation history: the level mix (overall and per day for the last
    `days` days, or from `since`, an ISO date), the L3 warning, failure kinds by source,
    the circuit breaker's history and the most recent failures."""
    home = layout_of(home)
    state = _store(home, settings).read()
    today = datetime.now(timezone.utc).date()
    if since:
        try:
            start = date.fromisoformat(since[:10])
        except ValueError:
            raise GuardError(f"--since {since!r}: give a date like 2026-11-01") from None
    else:
        start = today - timedelta(days=days - 1)
    daily = []
    d = start
    while d <= today:
        entry = state["daily"].get(d.isoformat(), {})
        daily.append({"date": d.isoformat(), **{k: int(entry.get(k, 0)) for k in LEVEL_KEYS},
                      **{f"stored_{k}": int(entry.get(f"stored_{k}", 0)) for k in STORED_KEYS},
                      "checked": int(entry.get("checked", 0)), "failures": dict(entry.get("failures", {}))})
        d += timedelta(days=1)
    if since:
        usage = {k: sum(x[k] for x in daily) for k in LEVEL_KEYS}
        stored = {k: sum(x[f"stored_{k}"] for x in daily) for k in STORED_KEYS}
        failures = [f for f in state["failures"] if str(f.get("detected_at", "")) >= start.isoformat()]
        by_source = {}
        for f in failures:
            src = by_source.setdefault(str(f.get("source")), {})
            src[f.get("failure_type")] = src.get(f.get("failure_type"), 0) + 1
    else:
        usage = state["level_usage"]
        stored = state["stored_summaries"]
        failures = state["failures"]
        by_source = state["totals"]["failures"]
    total = sum(usage.values())
    share = {k: (usage[k] / total if total else 0.0) for k in LEVEL_KEYS}
    stored_total = sum(stored.values())
    affected = affected_sessions(state)
    fallback_share = stored["by_fallback"] / stored_total if stored_total else 0.0
    return {
        "state_file": str(state_path(home)),
        "since": start.isoformat() if since else None,
        "last_check_at": state["last_check_at"],
        "level_usage": usage,
        "level_share": {k: round(v, 4) for k, v in share.items()},
        "total_compactions": total,
        "stored_summaries": stored,
        "stored_total": stored_total,
        "fallback_share": round(fallback_share, 4),
        "l3_warning": _l3_warning(stored_total, fallback_share, total, share["l3_deterministic"], settings),
        "failures_by_kind": dict(Counter(f.get("failure_type") for f in failures).most_common()),
        "failures_by_source": by_source,
        "failures_total": len(failures),
        "recent_failures": failures[-recent:][::-1],
        "daily": daily,
        "checks": len(state["check_history"]),
        "chain_runs": len(state["chain_history"]),
        "totals": state["totals"],
        "last_check": state["check_history"][0] if state["check_history"] else None,
        "circuit_breaker": _breaker_summary(state, settings),
        # sessions whose last compaction failed (a check's verdicts, and the agents' hooks'), each once
        "failed_sessions": sorted(affected, key=lambda x: str(x["at"]), reverse=True)[:recent],
        "sessions_affected": len(affected),
    }


def _l3_warning(stored_total: int, fallback_share: float, chain_runs: int, l3_share: float,
                settings: Settings) -> Optional[str]:
    """The systemic-LLM warning, over each population that is a compaction: the stored
    summaries (the agent's compactions, by who wrote them) and the guard's own chain
    runs (when it is the compactor), each over its own count."""
    out = []
    if stored_total and fallback_share > settings.l3_warning_share:
        out.append(f"a deterministic fallback wrote {fallback_share:.0%} of the {stored_total} stored summaries")
    if chain_runs and l3_share > settings.l3_warning_share:
        out.append(f"the guard's chain ended at L3 in {l3_share:.0%} of its {chain_runs} runs")
    if not out:
        return None
    return (f"{'; '.join(out)} (over {settings.l3_warning_share:.0%}): systemic LLM issue, check the summarizer's "
            "model and provider")


def _breaker_summary(state: dict, settings: Settings) -> dict:
    c = breaker.circuit(state)
    return {"open_until": breaker.open_until(state), "consecutive_l3": c["consecutive_l3"],
            "threshold": settings.breaker_threshold, "cooldown_seconds": settings.breaker_cooldown_seconds,
            "opened": sum(1 for e in c["events"] if e.get("event") == "opened"),
            "skipped_chains": sum(1 for e in c["events"] if e.get("event") == "skipped"),
            "recent_events": c["events"][-5:][::-1]}


def status(home: Optional[Path] = None, settings: Settings = DEFAULT) -> dict:
    """The state of the agent's sessions and the last check at a glance: DEGRADED while any
    session's latest compaction failed (a check's verdict or its hook's) and nothing newer
    passed, or while the last check's failures belong to no session (a summaries file)."""
    home = layout_of(home)
    state = _store(home, settings).read()
    last = state["check_history"][0] if state["check_history"] else None
    usage = state["level_usage"]
    total = sum(usage.values())
    stored = state["stored_summaries"]
    stored_total = sum(stored.values())
    # compactions an agent's hook judged failed since the last check (a dropped one
    # included): the alarm does not wait for the next check
    since = sorted(({"session": k, "failures": v.get("failures", []), "at": v.get("at")}
                    for k, v in state["sessions"].items()
                    if v.get("failures") and str(v.get("at") or "") > str(state["last_check_at"] or "")),
                   key=lambda x: str(x["at"]), reverse=True)
    affected = affected_sessions(state)
    verdict = last["status"] if last else "NEVER_CHECKED"
    # a check older than session verdicts counted every failure it found as of no session
    unscoped = last.get("unscoped_failures", last.get("failures_found", 0)) if last else 0
    if affected or (verdict == "DEGRADED" and unscoped):
        verdict = "DEGRADED"
    elif verdict == "DEGRADED":         # the sessions it found failing have all passed since
        verdict = "HEALTHY"
    return {
        "state_file": str(state_path(home)),
        "last_check_at": state["last_check_at"],
        "status": verdict,
        "failed_since_check": since[:20],
        **degraded_doc(affected),
        "layout": (last or {}).get("layout") or home.describe(),
        "nothing_found": (last or {}).get("nothing_found"),
        "summaries_checked": last["summaries_checked"] if last else 0,
        "failures_found": last["failures_found"] if last else 0,
        "failures_by_kind": last.get("failures_by_kind", {}) if last else {},
        "level_usage": usage,
        "l3_share": round(usage["l3_deterministic"] / total, 4) if total else 0.0,
        "stored_summaries": stored,
        "fallback_share": round(stored["by_fallback"] / stored_total, 4) if stored_total else 0.0,
        "circuit_open_until": breaker.open_until(state),
    }


_WORST = ("DEGRADED", "ERROR", "HEALTHY", "NO_STORE", "NEVER_CHECKED")


def with_state(pairs: list) -> list:
    """The (agent, layout) pairs whose state exists, for --status and --report; when none has
    one, those on this machine; when none is, the first (it says NEVER_CHECKED where it looked)."""
    if len(pairs) == 1:
        return pairs
    kept = [(a, lay) for a, lay in pairs if state_path(lay).exists()] or [(a, lay) for a, lay in pairs
                                                                         if a.present(lay)]
    return kept or pairs[:1]


def status_machine(pairs: list, settings_of: Callable) -> dict:
    """`status` of each agent with a state (with_state), each doc naming its `agent`; one doc
    when one agent, else {"status": the worst, "agents": [...]}."""
    docs = [dict(status(lay, settings_of(lay)), agent=a.name) for a, lay in with_state(pairs)]
    if len(docs) == 1:
        return docs[0]
    worst = min((d["status"] for d in docs), key=lambda s: _WORST.index(s) if s in _WORST else 0)
    affected = sorted((dict(a, agent=d["agent"]) for d in docs for a in d["affected_sessions"]),
                      key=lambda a: (str(a["since"]), a["session"]))
    doc = degraded_doc(affected)
    doc["sessions_affected"] = sum(d["sessions_affected"] for d in docs)     # each agent's first 20 listed
    return {"status": worst, **doc, "agents": docs}


def report_machine(pairs: list, settings_of: Callable, since: Optional[str] = None) -> list:
    """`report` of each agent with a state (with_state), each naming its `agent`."""
    return [dict(report(lay, settings_of(lay), since=since), agent=a.name) for a, lay in with_state(pairs)]
