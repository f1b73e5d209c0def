"""Renderers: the same documents as text for people or JSON for machines."""
from __future__ import annotations

import json

LEVEL_NAMES = {"l1_normal": "L1 normal", "l2_aggressive": "L2 aggressive", "l3_deterministic": "L3 deterministic"}


def _short(name: str, most: int = 48) -> str:
    return name if len(name) <= most else f"{name[:18]}…{name[-(most - 19):]}"


def affected_text(doc: dict, names: int = 3) -> str:
    """"2 sessions whose last compaction failed, since <time>: a (empty), b (repetition)", from
    a document with sessions_affected (check.degraded_doc); '' when none is."""
    n = doc.get("sessions_affected") or 0
    if not n:
        return ""
    listed = doc.get("affected_sessions") or []
    shown = ", ".join(f"{_short(a['session'])} ({', '.join(a['failures'])})" for a in listed[:names])
    more = f" and {n - min(names, len(listed))} more" if n > min(names, len(listed)) else ""
    return (f"{n} session{'s' if n != 1 else ''} whose last compaction failed, since {doc.get('degraded_since')}: "
            f"{shown}{more}")


def to_json(doc: dict, pretty: bool = True) -> str:
    """One JSON document. Indented for a person; compact (the C encoder, ~5x faster)
    when it goes to a pipe or file."""
    return json.dumps(doc, ensure_ascii=False, indent=2 if pretty else None)


class JsonCheckStream:
    """`--check --format json`, written as results arrive: one JSON document whose
    `results` come first and whose counts (known only at the end) follow them. The
    document is always whole: an error part-way closes it with an `errors` entry."""

    def __init__(self, out):
        self.out = out
        self.first = True
        self.closed = False
        self.encode = json.JSONEncoder(ensure_ascii=False).encode   # one encoder, not one per result

    def start(self, report=None) -> None:
        pass   # nothing is written until there is something to write: an early error leaves stdout empty

    def _text(self, obj) -> str:
        text = self.encode(obj)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:      # a lone surrogate (valid JSON "\ud800" in a store): escape it
            text = json.dumps(obj, ensure_ascii=True)
        return text

    def result(self, r) -> None:
        self.out.write(('{"results": [\n' if self.first else ",\n") + self._text(r.to_dict()))
        self.first = False

    def finish(self, report) -> None:
        tail = self._text(report.header())
        self.out.write(('{"results": [' if self.first else "\n") + "], " + tail[1:] + "\n")
        self.out.flush()
        self.closed = True

    def abort(self, message: str) -> None:
        """Close a document that was started, after an error part-way (nothing if none was)."""
        if self.first or self.closed:
            return
        self.out.write("\n], " + self._text({"status": "ERROR", "errors": [message]})[1:] + "\n")
        self.out.flush()
        self.closed = True


class TextCheckStream:
    """`--check` for people: failures as they are found (the first DETAIL in full),
    then counts by kind and source."""

    DETAIL = 50

    def __init__(self, out):
        self.out = out
        self.shown = 0
        self.warned = []
        self.by_source = {}

    def start(self, report=None) -> None:
        """A first line for each agent checked: which of its directories, and which stores were found in it."""
        if report is None or not getattr(report, "layout", None):
            return
        found = getattr(report, "sources_found", [])
        names = {}
        for s in found:
            names[s["name"]] = names.get(s["name"], 0) + 1
        stores = ", ".join(f"{n} {k}" if n > 1 else k for k, n in names.items()) or "no store"
        self.out.write(f"Checking {report.layout}: {stores}\n")
        self.out.flush()

    def result(self, r) -> None:
        src = self.by_source.setdefault(r.source, [0, 0])
        src[0] += 1
        if r.valid:
            if r.warnings and len(self.warned) < 20:
                self.warned.extend(f"  ! {r.id} [{r.source}]: {w}" for w in r.warnings[:2])
            return
        src[1] += 1
        self.shown += 1
        if self.shown > self.DETAIL:
            return
        if self.shown == 1:
            self.out.write("Failures:\n")
        size = f"{r.output_tokens} tok" + (f" / input {r.input_tokens} tok" if r.input_tokens is not None else "")
        lines = [f"  ✗ {r.id} [{r.source}] {', '.join(r.failures)} ({size})"]
        lines += [f"      {kind}: {reason}" for kind, reason in r.reasons.items()]
        self.out.write("\n".join(lines) + "\n")

    def finish(self, report) -> None:
        out = []
        if self.shown > self.DETAIL:
            out.append(f"  ... and {self.shown - self.DETAIL} more failing summaries (--format json lists every result)")
        if self.warned:
            out += ["", "Warnings (summaries still valid):"] + self.warned[:20]
        out += ["", f"Compaction Resilience Check — {report.checked_at}", "-" * 60]
        many = getattr(report, "agents", [])
        for a in many if len(many) > 1 else ():
            if a["status"] == "ABSENT":
                out.append(f"  {a['agent']}: not on this machine ({a['layout']})")
            else:
                out.append(f"  {a['agent']}: {a['status']}, {a['summaries_checked']} summaries checked, "
                           f"{a['failures_found']} failing ({a['layout']})")
        for s in report.sources:
            out.append(f"  source: {s['name']} ({s['path']}): {s['summaries']} summaries checked")
        for n in report.notes:
            out.append(f"  note: {n}")
        for w in getattr(report, "session_warnings", []):
            out.append(f"  WARNING context_pressure: {w['reason']}")
        for d in getattr(report, "dropped", []):
            n = d.get("compaction_output_tokens")
            said = (f"its compaction call answered {n} output token(s)" if isinstance(n, int)
                    else "no answer to its compaction call was recorded")
            out.append(f"  FAILURE dropped compaction: {d['session']} at {d['at']}: the agent stored no summary "
                       f"({said}; its hook saw the compaction start and none end)")
        for e in report.errors:
            out.append(f"  error: {e}")
        if report.by_kind:
            out.append("  failures by kind: " + ", ".join(f"{k} {v}" for k, v in report.by_kind.most_common()))
        if getattr(report, "warnings_by_kind", None):
            out.append("  warnings by kind (summaries): " + ", ".join(f"{k} {v}" for k, v in
                                                                  report.warnings_by_kind.most_common()))
        if len(self.by_source) > 1:
            out.append("  by source: " + ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in sorted(self.by_source.items())))
        if report.fallback:
            own = getattr(report, "own_l3", 0)
            out.append(f"  written by a fallback (L3): {report.fallback}"
                       + (f" ({own} of them the guard's own L3 answer, through serve: not a failure)" if own else ""))
        status = report.status
        why = affected_text(report.header()) if status == "DEGRADED" else ""
        if status == "NO_STORE":        # where it looked: the one line on stderr (cli), not twice
            why = "nothing was checked: no compaction store found"
        if not why and status == "HEALTHY" and report.failures_found:
            why = "each session's last compaction passed (the failures found came before a good one)"
        out += ["", f"  Summaries checked:  {report.checked}",
                f"  Failures found:     {report.failures_found}",
                f"  Escalations needed: {report.escalations}",
                f"  Status: {status}" + (f": {why}" if why else ""), ""]
        self.out.write("\n".join(out))
        self.out.flush()


class Progress:
    """A one-line progress bar on a terminal, shown once a check has run 2 seconds."""

    def __init__(self, err, delay: float = 2.0):
        import time
        self.err = err
        self.t0 = time.monotonic()
        self.delay = delay
        self.drawn = False
        self._time = time

    def update(self, done: int, total, source: str) -> None:
        elapsed = self._time.monotonic() - self.t0
        if elapsed < self.delay or source == "done":
            return
        rate = done / elapsed if elapsed else 0
        if total:
            frac = min(1.0, done / total)
            bar = "█" * int(frac * 30) + "·" * (30 - int(frac * 30))
            line = f"\r{source}: {bar} {done:,}/{total:,} ({frac:.0%}) {rate:,.0f}/s "
        else:
            line = f"\r{source}: {done:,} summaries {rate:,.0f}/s "
        self.err.write(line)
        self.err.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.err.write("\r" + " " * 79 + "\r")
            self.err.flush()


def check_text(report) -> str:
    """The whole text report of a collected CheckReport (library use)."""
    import io
    buf = io.StringIO()
    stream = TextCheckStream(buf)
    for r in report.results:
        stream.result(r)
    stream.finish(report)
    return buf.getvalue()


def simulate_text(result) -> str:
    out = ["Fallback Chain Simulation", "-" * 60,
           f"  Input:  {result.input_tokens} tokens", f"  Summarizer: {result.summarizer}"]
    for n in result.notes:
        out.append(f"  note: {n}")
    if result.breaker_open:
        out.append("  Circuit breaker OPEN: LLM levels skipped, straight to L3")
    for a in result.attempts:
        verdict = "skipped" if a.skipped else ("valid" if a.valid else "failed: " + ", ".join(a.failures))
        if a.retries:
            verdict += f" after {a.retries} retr{'y' if a.retries == 1 else 'ies'}"
        out.append(f"  L{a.level} {a.strategy:<13} {verdict} ({a.output_tokens} tok, {a.seconds * 1000:.1f} ms)")
        for kind, reason in a.reasons.items():
            out.append(f"      {kind}: {reason}")
        for w in a.warnings:
            out.append(f"      note: {w}")
    ratio = result.output_tokens / result.input_tokens if result.input_tokens else 0
    out += [f"  Level used: L{result.level_used} ({result.level_key})",
            f"  Output: {result.output_tokens} tokens ({ratio:.0%} of input)", "", "  Result:"]
    lines = result.summary.splitlines()
    out += [f"    {ln}" for ln in lines[:15]]
    if len(lines) > 15:
        out.append(f"    ... ({len(lines) - 15} more lines)")
    out.append("")
    return "\n".join(out)


def _daily_chart(daily: list, width: int = 40) -> list:
    """One line per day: L1 █, L2 ▒, L3 ░ bars scaled to the busiest day, then the figures; a run
    of days with nothing on them is one line."""
    peak = max((d["l1_normal"] + d["l2_aggressive"] + d["l3_deterministic"] for d in daily), default=0)
    out = [f"  {'day':<10}  {'L1 █  L2 ▒  L3 ░':<{width}}  L1/L2/L3  stored(model/fallback)  failures"]
    quiet = []            # a run of days with nothing on them: one line when it ends

    def fold():
        if len(quiet) == 1:
            out.append(f"  {quiet[0]:<10}  {'':<{width}}  -         -")
        elif quiet:
            out.append(f"  {quiet[0]} to {quiet[-1]}: nothing ({len(quiet)} days)")
        quiet.clear()
    for d in daily:
        n1, n2, n3 = d["l1_normal"], d["l2_aggressive"], d["l3_deterministic"]
        if not (n1 or n2 or n3 or d.get("stored_by_model") or d.get("stored_by_fallback")
                or sum(d["failures"].values())):
            quiet.append(d["date"])
            continue
        fold()
        total = n1 + n2 + n3
        if peak:
            w1, w2, w3 = (round(n * width / peak) for n in (n1, n2, n3))
            w1, w2, w3 = max(w1, 1 if n1 else 0), max(w2, 1 if n2 else 0), max(w3, 1 if n3 else 0)
        else:
            w1 = w2 = w3 = 0
        bar = ("█" * w1 + "▒" * w2 + "░" * w3)[:width + 3]
        fails = sum(d["failures"].values())
        figures = f"{n1}/{n2}/{n3}" if total else "-"
        sm, sf = d.get("stored_by_model", 0), d.get("stored_by_fallback", 0)
        stored = f"{sm}/{sf}" if sm or sf else "-"
        out.append(f"  {d['date']:<10}  {bar:<{width}}  {figures:<8}  {stored:<22}  {fails or ''}".rstrip())
    fold()
    return out


def report_text(rep: dict) -> str:
    total = rep["total_compactions"]
    head = f"since {rep['since']}" if rep.get("since") else "all time"
    stored, stored_total = rep["stored_summaries"], rep["stored_total"]
    out = ["Compaction Resilience Report", "-" * 60, f"  State: {rep['state_file']}",
           f"  Last check: {rep['last_check_at'] or 'never'}",
           f"  Summaries found in the stores ({head}, each counted once): {stored_total}"]
    for k, name in (("by_model", "written by the model"), ("by_fallback", "written by a fallback")):
        share = stored[k] / stored_total if stored_total else 0.0
        out.append(f"    {name:<22} {stored[k]:>6} {share:>6.1%} {'█' * round(share * 30)}")
    served = (rep.get("totals") or {}).get("served", 0)
    abandoned = (rep.get("totals") or {}).get("abandoned", 0)
    line = f"  Compactions the guard answered ({head}): {total}"
    if not rep.get("since"):            # the totals are all time
        by_via = dict((rep.get("totals") or {}).get("via") or {})
        others = {k: n for k, n in by_via.items() if k not in ("serve", "chain")}
        line += f" (through serve: {served}, --compact/--simulate: {total - served - sum(others.values())}"
        line += "".join(f", {k}: {n}" for k, n in sorted(others.items()))
        line += f"; {abandoned} abandoned by their client, not counted)" if abandoned else ")"
    out.append(line)
    for k, name in LEVEL_NAMES.items():
        n = rep["level_usage"][k]
        share = rep["level_share"][k]
        bar = "█" * round(share * 30)
        out.append(f"    {name:<22} {n:>6} {share:>6.1%} {bar}")
    if rep["l3_warning"]:
        out += ["", f"  WARNING: {rep['l3_warning']}"]
    days = rep.get("daily") or []
    if days:
        out += ["", f"  Level mix per day ({days[0]['date']} to {days[-1]['date']}):"] + _daily_chart(days)
    cb = rep.get("circuit_breaker") or {}
    if cb:
        state = f"OPEN until {cb['open_until']}" if cb.get("open_until") else "closed"
        out += ["", f"  Circuit breaker: {state}; {cb['consecutive_l3']} chain(s) in a row ended at L3 "
                    f"(opens at {cb['threshold']}); opened {cb['opened']} time(s), {cb['skipped_chains']} chain(s) "
                    "skipped the LLM"]
        for e in cb.get("recent_events", []):
            out.append(f"    {e.get('at')}  {e.get('event')}" + (f" until {e['open_until']}" if e.get("open_until") else ""))
    by_source = rep.get("failures_by_source") or {}
    if by_source:
        out += ["", "  Failure kinds by source:"]
        for src, kinds in sorted(by_source.items()):
            out.append(f"    {src:<24} " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda x: -x[1])))
    out += ["", f"  Failures recorded: {rep['failures_total']}"]
    for kind, n in rep["failures_by_kind"].items():
        out.append(f"    {kind:<18} {n}")
    if rep.get("failed_sessions"):
        out += ["", "  Sessions whose last compaction failed:"]
        for x in rep["failed_sessions"]:
            out.append(f"    {x['at']}  {x['session']}: {', '.join(map(str, x['failures']))}"
                       + ("" if x["warned"] else " (the agent not told yet)"))
    if rep["recent_failures"]:
        out += ["", "  Recent failures:"]
        for f in rep["recent_failures"]:
            level = f.get("level_used")
            out.append(f"    {f.get('detected_at', '?')}  {f.get('summary_id', '?')} [{f.get('source', '?')}]: "
                       f"{f.get('failure_type', '?')} "
                       + (f"(L{level})" if level is not None else "(no summary stored: the compaction was dropped)"))
    out.append("")
    return "\n".join(out)


# ----------------------------------------------------------------------------- Prometheus
# the names, help and labels live in exposition.py (shared with the Pushgateway push, the
# textfile and serve's /metrics)


def report_prometheus(reports) -> str:
    """The Prometheus text exposition format (for node_exporter's textfile collector or
    a Pushgateway): counters per level, per failure kind and source; gauges for the
    last check and the L3 share. `reports`: one report, or a list of them (one per agent,
    each sample then labelled with its `agent`)."""
    from . import exposition
    families = {}           # name -> [kind, help, samples], each family written once
    for rep in [reports] if isinstance(reports, dict) else reports:
        exposition.samples(rep, {"agent": rep["agent"]} if rep.get("agent") else {}, families)
    return exposition.text(families)


def status_text(st: dict) -> str:
    usage = st["level_usage"]
    total = sum(usage.values())
    line2 = (f"  Last check: {st['summaries_checked']} summaries, {st['failures_found']} failing"
             + (f" ({', '.join(f'{k} {v}' for k, v in st['failures_by_kind'].items())})" if st["failures_by_kind"] else ""))
    why = affected_text(st)
    return "\n".join([
        f"Compaction Resilience Guard — {st['status']} — last check: {st['last_check_at'] or 'never'}",
        f"  {st.get('layout') or ''}",
        *([f"  {why}"] if why else []),
        *([f"  {st['nothing_found']}"] if st.get("nothing_found") else []),
        line2,
        *[f"  Since then, a hook: {x['session']} {', '.join(x['failures'])} at {x['at']}"
          for x in st.get("failed_since_check") or []],
        f"  Stored: {sum(st['stored_summaries'].values())} summaries, {st['stored_summaries']['by_fallback']} by a "
        f"fallback ({st['fallback_share']:.0%})",
        f"  Chain: {total} runs | L1 {usage['l1_normal']} · L2 {usage['l2_aggressive']} · "
        f"L3 {usage['l3_deterministic']} ({st['l3_share']:.0%} L3)"
        + (f" | circuit breaker OPEN until {st['circuit_open_until']}" if st.get("circuit_open_until") else ""),
        "",
    ])


def config_text(doc: dict) -> str:
    out = ["Effective configuration", "-" * 60]
    for k, v in doc["paths"].items():
        out.append(f"  {k:<24} {v}")
    w = max([28] + [len(n) + 1 for n in doc["settings"]])     # the longest setting's name sets the column
    out += ["", f"  {'setting':<{w}} {'value':<18} origin"]
    for name, item in doc["settings"].items():
        out.append(f"  {name:<{w}} {str(item['value']):<18} {item['origin']}")
        if item.get("note"):
            out.append(f"    note: {item['note']}")
    out += ["", "  provider (L1/L2 summarizer)"]
    for name, item in doc["provider"].items():
        if name == "note":
            out.append(f"  note: {item}")
        else:
            out.append(f"  {name:<{w}} {str(item['value']):<18} {item['origin']}")
    out.append("")
    return "\n".join(out)
