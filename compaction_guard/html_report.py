"""`--report --html FILE`: one self-contained HTML page with inline SVG charts.

Nothing is loaded from the network (no scripts, fonts or images from elsewhere), and
every value that came from a store (ids, sources, kinds) is HTML-escaped: summaries
and their ids are untrusted text.
"""
from __future__ import annotations

from html import escape

COLORS = {"l1_normal": "#2e9e5b", "l2_aggressive": "#e0a21b", "l3_deterministic": "#d0453b"}
NAMES = {"l1_normal": "L1 normal", "l2_aggressive": "L2 aggressive", "l3_deterministic": "L3 deterministic"}
KIND_COLORS = ["#6a5acd", "#d0453b", "#e0a21b", "#2e9e5b", "#3b82c4", "#8c564b", "#7f7f7f", "#17becf"]


def _daily_svg(daily: list) -> str:
    w, h, pad_l, pad_b, pad_t = 860, 260, 44, 46, 16
    n = max(1, len(daily))
    peak = max((sum(d[k] for k in COLORS) for d in daily), default=0) or 1
    slot = (w - pad_l - 10) / n
    bar = max(2.0, slot * 0.7)
    plot_h = h - pad_b - pad_t
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
             f'aria-label="Compactions per day by level">']
    for i in range(5):   # grid and scale
        y = pad_t + plot_h * i / 4
        value = round(peak * (4 - i) / 4)
        parts.append(f'<line x1="{pad_l}" y1="{y:.1f}" x2="{w - 10}" y2="{y:.1f}" stroke="#e5e7eb"/>')
        parts.append(f'<text x="{pad_l - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="#555">{value}</text>')
    for i, d in enumerate(daily):
        x = pad_l + i * slot + (slot - bar) / 2
        y = pad_t + plot_h
        for k in COLORS:
            v = d[k]
            if not v:
                continue
            bh = plot_h * v / peak
            y -= bh
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{bh:.1f}" fill="{COLORS[k]}">'
                         f'<title>{escape(d["date"])}: {escape(NAMES[k])} {v}</title></rect>')
        if n <= 31 and (i % max(1, n // 10) == 0 or i == n - 1):
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{h - pad_b + 16}" font-size="10" text-anchor="middle" '
                         f'fill="#555">{escape(d["date"][5:])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _share_svg(usage: dict) -> str:
    total = sum(usage.values()) or 1
    w, h = 860, 34
    x = 0.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
             f'aria-label="Level mix">']
    for k in COLORS:
        bw = w * usage.get(k, 0) / total
        if bw > 0:
            parts.append(f'<rect x="{x:.1f}" y="0" width="{bw:.1f}" height="{h}" fill="{COLORS[k]}">'
                         f'<title>{escape(NAMES[k])}: {usage.get(k, 0)}</title></rect>')
            if bw > 70:
                parts.append(f'<text x="{x + 8:.1f}" y="22" font-size="13" fill="#fff">{escape(NAMES[k])} '
                             f'{usage.get(k, 0) / total:.0%}</text>')
        x += bw
    parts.append("</svg>")
    return "".join(parts)


def _sources_svg(by_source: dict) -> str:
    rows = sorted(by_source.items())
    if not rows:
        return "<p>No failures recorded.</p>"
    kinds = sorted({k for _, ks in rows for k in ks})
    color = {k: KIND_COLORS[i % len(KIND_COLORS)] for i, k in enumerate(kinds)}
    peak = max(sum(ks.values()) for _, ks in rows) or 1
    w, row_h, label_w = 860, 28, 190
    h = row_h * len(rows) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
             f'aria-label="Failure kinds by source">']
    for i, (src, ks) in enumerate(rows):
        y = i * row_h + 4
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" font-size="12" text-anchor="end" fill="#222">'
                     f'{escape(str(src))}</text>')
        x = float(label_w)
        for k in kinds:
            v = ks.get(k, 0)
            if not v:
                continue
            bw = (w - label_w - 60) * v / peak
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{bw:.1f}" height="20" fill="{color[k]}">'
                         f'<title>{escape(str(src))}: {escape(str(k))} {v}</title></rect>')
            x += bw
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 15}" font-size="11" fill="#555">{sum(ks.values())}</text>')
    legend_y = h - 8
    lx = float(label_w)
    for k in kinds:
        parts.append(f'<rect x="{lx:.1f}" y="{legend_y - 10}" width="10" height="10" fill="{color[k]}"/>')
        parts.append(f'<text x="{lx + 14:.1f}" y="{legend_y}" font-size="11" fill="#333">{escape(str(k))}</text>')
        lx += 20 + 7 * len(str(k))
    parts.append("</svg>")
    return "".join(parts)


def render(rep: dict, status: dict) -> str:
    usage = rep["level_usage"]
    total = rep["total_compactions"]
    cb = rep.get("circuit_breaker") or {}
    warn = f'<div class="warn">⚠ {escape(rep["l3_warning"])}</div>' if rep.get("l3_warning") else ""
    breaker = ("OPEN until " + escape(cb["open_until"])) if cb.get("open_until") else "closed"
    events = "".join(f"<tr><td>{escape(str(e.get('at')))}</td><td>{escape(str(e.get('event')))}</td>"
                     f"<td>{escape(str(e.get('open_until') or ''))}</td></tr>" for e in cb.get("recent_events", []))
    failures = "".join(
        f"<tr><td>{escape(str(f.get('detected_at', '')))}</td><td><code>{escape(str(f.get('summary_id', '')))}</code></td>"
        f"<td>{escape(str(f.get('source', '')))}</td><td>{escape(str(f.get('failure_type', '')))}</td>"
        f"<td>{escape(_level(f.get('level_used')))}</td></tr>" for f in rep.get("recent_failures", []))
    days = rep.get("daily") or []
    period = f"{escape(days[0]['date'])} – {escape(days[-1]['date'])}" if days else ""
    legend = "".join(f'<span class="key"><i style="background:{COLORS[k]}"></i>{escape(NAMES[k])} {usage.get(k, 0)}</span>'
                     for k in COLORS)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>Compaction Resilience Report</title>
<style>
body {{ font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 900px; color: #1f2328; }}
h1 {{ font-size: 22px; margin: 0 0 4px; }} h2 {{ font-size: 16px; margin: 28px 0 8px; }}
.muted {{ color: #666; }} .status {{ font-weight: 600; }}
.HEALTHY {{ color: #2e9e5b; }} .DEGRADED {{ color: #d0453b; }} .NEVER_CHECKED {{ color: #666; }}
.warn {{ background: #fdecea; border: 1px solid #f5c2bd; color: #8a1f17; padding: 10px 12px; border-radius: 6px; margin: 12px 0; }}
.key {{ margin-right: 16px; }} .key i {{ display: inline-block; width: 10px; height: 10px; margin-right: 5px; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ border-bottom: 1px solid #eee; padding: 4px 6px; text-align: left; }}
.cards {{ display: flex; gap: 12px; }} .card {{ flex: 1; border: 1px solid #e5e7eb; border-radius: 6px; padding: 10px; }}
.card b {{ display: block; font-size: 20px; }}
</style></head><body>
<h1>Compaction Resilience Report</h1>
<div class="muted">State: {escape(rep['state_file'])} · last check {escape(str(rep.get('last_check_at') or 'never'))}</div>
<p class="status {escape(status['status'])}">Status: {escape(status['status'])}{escape(_affected(status))}</p>
<div class="cards">
<div class="card"><b>{rep['stored_total']}</b>stored summaries (each counted once)</div>
<div class="card"><b>{rep['fallback_share']:.0%}</b>of them written by a fallback</div>
<div class="card"><b>{total}</b>chain runs ({rep['level_share']['l3_deterministic']:.0%} at L3)</div>
<div class="card"><b>{status['summaries_checked']}</b>summaries in the last check</div>
<div class="card"><b>{status['failures_found']}</b>failing in the last check</div>
</div>
{warn}
<h2>Level mix of the guard's chain runs</h2>
{_share_svg(usage)}
<div>{legend}</div>
<h2>Per day {period}</h2>
{_daily_svg(days)}
<h2>Failure kinds by source</h2>
{_sources_svg(rep.get('failures_by_source') or {})}
<h2>Circuit breaker: {breaker}</h2>
<p class="muted">{cb.get('consecutive_l3', 0)} chain(s) in a row ended at L3 (opens at {cb.get('threshold', '')});
opened {cb.get('opened', 0)} time(s); {cb.get('skipped_chains', 0)} chain(s) skipped the LLM.</p>
<table><tr><th>at</th><th>event</th><th>open until</th></tr>{events or '<tr><td colspan="3" class="muted">no events</td></tr>'}</table>
<h2>Recent failures</h2>
<table><tr><th>detected</th><th>summary</th><th>source</th><th>kind</th><th>level</th></tr>{failures or '<tr><td colspan="5" class="muted">none</td></tr>'}</table>
<p class="muted">compaction-resilience-guard · generated from the guard's state; nothing on this page comes from the network.</p>
</body></html>
"""


def _affected(status: dict) -> str:
    from .render import affected_text
    why = affected_text(status)
    return f": {why}" if why else ""


def _level(level) -> str:
    return f"L{level}" if level is not None else "none stored (dropped)"
