"""Renderers: the same documents as text for people or JSON for machines."""
from __future__ import annotations

import json

LEVEL_NAMES = {"l1_normal": "L1 normal", "l2_aggressive": "L2 aggressive", "l3_deterministic": "L3 deterministic"}


def to_json(doc: dict, pretty: bool = True) -> str:
    """One JSON document. Indented for a person; compact (the C encoder, ~5x faster)
    when it goes to a pipe or file."""
    return json.dumps(doc, ensure_ascii=False, indent=2 if pretty else None)


def check_text(report) -> str:
    out = [f"Compaction Resilience Check — {report.checked_at}", "-" * 60]
    for s in report.sources:
        out.append(f"  source: {s['name']} ({s['path']}): {s['summaries']} summaries")
    for n in report.notes:
        out.append(f"  note: {n}")
    bad = [r for r in report.results if not r.valid]
    warned = [r for r in report.results if r.valid and r.warnings]
    if bad:
        out.append("")
        out.append("Failures:")
        for r in bad:
            size = f"{r.output_tokens} tok" + (f" / input {r.input_tokens} tok" if r.input_tokens is not None else "")
            out.append(f"  ✗ {r.id} [{r.source}] {', '.join(r.failures)} ({size})")
            for kind, reason in r.reasons.items():
                out.append(f"      {kind}: {reason}")
    if warned:
        out.append("")
        out.append("Warnings (summary still valid):")
        for r in warned[:20]:
            for w in r.warnings:
                out.append(f"  ! {r.id}: {w}")
        if len(warned) > 20:
            out.append(f"  ... and {len(warned) - 20} more")
    out += ["", f"  Summaries checked:  {len(report.results)}",
            f"  Failures found:     {report.failures_found}",
            f"  Escalations needed: {report.escalations}",
            f"  Status: {report.status}", ""]
    return "\n".join(out)


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


def report_text(rep: dict) -> str:
    total = rep["total_compactions"]
    out = ["Compaction Resilience Report", "-" * 60, f"  State: {rep['state_file']}",
           f"  Last check: {rep['last_check_at'] or 'never'}", f"  Compactions tracked: {total}"]
    for k, name in LEVEL_NAMES.items():
        n = rep["level_usage"][k]
        share = rep["level_share"][k]
        bar = "█" * round(share * 30)
        out.append(f"    {name:<17} {n:>6} {share:>6.1%} {bar}")
    if rep["l3_warning"]:
        out += ["", f"  WARNING: {rep['l3_warning']}"]
    cb = rep.get("circuit_breaker") or {}
    if cb:
        state = f"OPEN until {cb['open_until']}" if cb.get("open_until") else "closed"
        out += ["", f"  Circuit breaker: {state}; {cb['consecutive_l3']} chain(s) in a row ended at L3 "
                    f"(opens at {cb['threshold']}); opened {cb['opened']} time(s), {cb['skipped_chains']} chain(s) "
                    "skipped the LLM"]
        for e in cb.get("recent_events", []):
            out.append(f"    {e.get('at')}  {e.get('event')}" + (f" until {e['open_until']}" if e.get("open_until") else ""))
    out += ["", f"  Failures recorded: {rep['failures_total']}"]
    for kind, n in rep["failures_by_kind"].items():
        out.append(f"    {kind:<18} {n}")
    if rep["recent_failures"]:
        out += ["", "  Recent failures:"]
        for f in rep["recent_failures"]:
            out.append(f"    {f.get('detected_at', '?')}  {f.get('summary_id', '?')} [{f.get('source', '?')}]: "
                       f"{f.get('failure_type', '?')} (L{f.get('level_used', '?')})")
    out.append("")
    return "\n".join(out)


def status_text(st: dict) -> str:
    usage = st["level_usage"]
    total = sum(usage.values())
    line2 = (f"  Last check: {st['summaries_checked']} summaries, {st['failures_found']} failing"
             + (f" ({', '.join(f'{k} {v}' for k, v in st['failures_by_kind'].items())})" if st["failures_by_kind"] else ""))
    return "\n".join([
        f"Compaction Resilience Guard — {st['status']} — last check: {st['last_check_at'] or 'never'}",
        line2,
        f"  Chain: {total} compactions | L1 {usage['l1_normal']} · L2 {usage['l2_aggressive']} · "
        f"L3 {usage['l3_deterministic']} ({st['l3_share']:.0%} L3)"
        + (f" | circuit breaker OPEN until {st['circuit_open_until']}" if st.get("circuit_open_until") else ""),
        "",
    ])
