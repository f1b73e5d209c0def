"""docs/measured.md and the README's figures, written from the evaluation's own results.

    python3 tests/corpus/evaluate.py --write-docs    # write both
    python3 tests/corpus/evaluate.py --check-docs    # exit 1 when either differs (CI)

No figure in either is typed by hand: every number below is read from `evaluate`'s cells
(the guard's and the seed's literal rules' verdicts on the same items) or from the
results file benchmarks/bench_detectors.py writes with --record.
"""
from __future__ import annotations

import json
from typing import Optional
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ROOT / "docs" / "measured.md"
README = ROOT / "README.md"
SPEED = ROOT / "benchmarks" / "results" / "detectors.json"
HOOK_SPEED = ROOT / "benchmarks" / "results" / "hook.json"
BEGIN, END = "<!-- figures: written by tests/corpus/evaluate.py --write-docs -->", "<!-- /figures -->"

# What each set is (words, not figures): where its texts come from, how they are labelled.
ABOUT = {
    "claude-code": "what Claude Code 2.1.328 stored when it compacted, run headless against a scripted model: "
                   "its transcripts' summaries with the history each replaced and its preTokens/postTokens",
    "codex": "what Codex CLI 0.171.0 stored (its rollouts' `compacted` lines, automatic, manual and before a "
             "turn), with its token_count events before and after",
    "gemini-cli": "what Gemini CLI 0.61.0 stored (its chat files' compressions, automatic and `/compress`), "
                  "with its own count before",
    "opencode": "what opencode 1.18.33 stored (its database's summary messages, automatic and manual, empty "
                "ones included), with its own count before",
    "claude-code/sessions": "what Claude Code 2.1.328 stored when it compacted a six-turn working session (real "
                            "tool calls, in English, German and Japanese): good summaries and every broken form",
    "codex/sessions": "the same session through Codex CLI 0.171.0 (manual compaction through its app-server)",
    "gemini-cli/sessions": "the same session through Gemini CLI 0.61.0 (`/compress`)",
    "opencode/sessions": "the same session through opencode 1.18.33 (its server's summarize)",
    "published-broken": "broken summaries people published in public issues (refusals, error text, notes, "
                        "preambles), each kept verbatim with its source",
    "model": "outputs of a real small model (SmolLM2-135M) run as a summarizer on real histories, labelled by "
             "rules fixed before the detectors saw them",
    "openclaw": "the same model given new histories and the prompts OpenClaw and Claude Code compact with, made "
                "after the detectors were fixed",
    "gemma": "another model family (Gemma 3 270M), made after the detectors were fixed",
    "swapped": "the model's sound outputs given another history in their language (the summary of another "
               "conversation)",
    "pages": "the model's summaries of real manual pages, against their page and against another page",
    "human": "real human text in 32 languages cut to summary size (Debian's translated manual pages, "
             "references, message catalogues): all good",
    "docs": "real READMEs, NEWS files and changelogs: good text in a summary's shape (headings, lists, paths, "
            "versions, ids)",
    "pairs": "one human excerpt as the summary of another, in the same language (about something else) or "
             "another (drift)",
    "grounding": "manual-page overviews as the summary of their own page (grounded) and of another page "
                 "(ungrounded)",
    "published-empty": "information-free summaries people published in public issues, each kept verbatim with "
                       "its source",
    "generated-empty": "information-free summaries written by the real OpenClaw's compaction code and local "
                       "models given an empty or nearly empty conversation, the history known",
    "generated-empty/tokens": "the same, with only the session's token count known",
    "generated-empty-2": "a second batch of those, made after the detectors were fixed, the history known",
    "generated-empty-2/tokens": "the same, with only the session's token count known",
    "development": "hand-written corpus (regression cases)",
    "held-out": "hand-written corpus, held out while the rules were written",
    "adversarial": "hand-written corpus: hard good cases and disguised failures",
    "fresh": "hand-written corpus, written after the rules",
}
REAL_LOOP_SETS = ("model", "openclaw", "gemma", "pages")


def _anchor(st: str) -> str:
    return "set-" + st.replace("/", "-")


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "-"


def _good(res: dict, st: str) -> tuple:
    n = sum(v[0] for (s, _l), v in res["good"].items() if s == st)
    a = sum(v[1] for (s, _l), v in res["good"].items() if s == st)
    return n, a


def _languages(res: dict, st: str) -> list:
    return sorted({lang for (s, lang, _k) in res["cells"] if s == st})


def measured_page(ev, res: dict, seed: dict, counts: dict, sp: Optional[dict] = None) -> str:
    """docs/measured.md: every set x language x kind, the guard beside the seed's rules."""
    out = ["# Measured", "",
           "Written by `python3 tests/corpus/evaluate.py --write-docs` from the evaluation itself; CI fails "
           "when this page differs from what the evaluation prints. Real data first (nobody on the project "
           "wrote those texts), then the hand-written corpus, kept as regression tests.", "",
           "A **false alarm** is a failure of a kind reported on an item labelled free of it; **recall** is the "
           "share of the items labelled with a kind that are reported with it. `cut_off` is a warning: shown, "
           "not held to a target. The *original rules* are the seed guard's literal rules "
           "(`compaction_guard/seed_rules.py`) on the same items.", "",
           "| set | what it is | items | languages | good items with a failure: guard | original rules |",
           "|---|---|---|---|---|---|"]
    for st in ev.SETS:
        if st in ev.EMPTY_SETS or not counts.get(st):
            continue
        n, a = _good(res, st)
        sn, sa = _good(seed, st)
        out.append(f"| [`{st}`](#{_anchor(st)}) | {ABOUT.get(st, '')} | {counts[st]} | {len(_languages(res, st))} | "
                   f"{a} of {n} ({_pct(a, n)}) | {sa} of {sn} ({_pct(sa, sn)}) |")
    out += ["", "Information-free summaries (each must raise a failure of some kind): see "
                "[below](#information-free).", "",
            "Not held to the false-alarm target, with the reason:", ""]
    out += [f"- `{st}` / `{kind}`: {why}." for (st, kind), why in ev.NOT_HELD.items()]
    out.append("")
    for st in ev.SETS:
        if st in ev.EMPTY_SETS or not counts.get(st):
            continue
        langs = _languages(res, st)
        out += [f'<a id="{_anchor(st)}"></a>', "", f"## `{st}`", "", ABOUT.get(st, "") + ".", "",
                "| language | kind | false alarms | recall | original rules: false alarms | original rules: recall |",
                "|---|---|---|---|---|---|"]
        for kind in ev.KINDS:
            c = ev._sum(res["cells"], lambda s, lang, k: s == st and k == kind)
            if not (c["neg"] + c["pos"]):
                continue
            sc = ev._sum(seed["cells"], lambda s, lang, k: s == st and k == kind)
            out.append(f"| **all** | `{kind}` | {_fa(c)} | {_rc(c)} | {_fa(sc)} | {_rc(sc)} |")
        for lang in langs:
            for kind in ev.KINDS:
                c = res["cells"].get((st, lang, kind))
                if not c or not (c["fa"] or c["pos"]):
                    continue         # nothing to say: no positives, no false alarm
                sc = seed["cells"].get((st, lang, kind)) or {"neg": 0, "fa": 0, "pos": 0, "hit": 0}
                out.append(f"| {lang} | `{kind}` | {_fa(c)} | {_rc(c)} | {_fa(sc)} | {_rc(sc)} |")
        broken = sorted((label, r) for (s, label), r in (res.get("must_fail") or {}).items() if s == st)
        if broken:
            out += ["", "Each broken summary it stored must raise a failure (any kind) that names it (its kind, or the "
                        "form its reason names: `preamble`, `tool_call`, `echo`, `refusal`, ...); a request nobody "
                        "made, at least its warning:", "",
                    "| what it stored | summaries | raised a failure | named | kinds reported | original rules |",
                    "|---|---|---|---|---|---|"]
            for label, r in broken:
                kinds = ", ".join(f"`{k}` {v}" for k, v in sorted(r[3].items(), key=lambda kv: (-kv[1], kv[0])))
                sr = (seed.get("must_fail") or {}).get((st, label)) or [r[0], 0]
                out.append(f"| {label} | {r[0]} | {r[1]} ({_pct(r[1], r[0])}) | {r[4]} ({_pct(r[4], r[0])}) | {kinds} "
                           f"| {sr[1]} ({_pct(sr[1], r[0])}) |")
        out.append("")
    out += ['<a id="information-free"></a>', "", "## Information-free summaries", "",
            "Summaries that carry nothing: each must raise a failure (any kind). Held at "
            f"{ev.TARGET_EMPTY_RECALL:.0%}: " + ", ".join(f"`{s}`" for s in ev.EMPTY_HELD) + "; the `/tokens` "
            "variants (only the session's token count known) are reported, not held.", "",
            "| set | what it is | language | raised a failure | kinds reported |", "|---|---|---|---|---|"]
    rows = res.get("info_free") or {}
    for st in ev.EMPTY_SETS:
        per = sorted((lang, r) for (s, lang), r in rows.items() if s == st)
        if not per:
            continue
        n = sum(r[0] for _l, r in per)
        f = sum(r[1] for _l, r in per)
        out.append(f"| `{st}` | {ABOUT.get(st, '')} | **all** | {f} of {n} ({_pct(f, n)}) | |")
        for lang, r in per:
            kinds = ", ".join(f"`{k}` {v}" for k, v in sorted(r[2].items(), key=lambda kv: (-kv[1], kv[0])))
            out.append(f"| `{st}` | | {lang} | {r[1]} of {r[0]} ({_pct(r[1], r[0])}) | {kinds} |")
    out.append("")
    out += speed_section(sp)
    return "\n".join(out) + "\n"


# what each timed detector is, in the order the speed table lists them
_TIMED = (("loading", "reading the file"), ("checking, in all", "checking, in all"),
          ("repetition", "repetition"), ("repetition: normalize", "of which normalizing"),
          ("repetition: zstd novelty", "of which the zstd novelty"), ("garbled", "garbled"),
          ("empty (information-free)", "information-free"), ("empty", "empty's other checks"),
          ("empty (unfilled template)", "unfilled template"), ("cut_off (also inside repetition)", "cut_off"),
          ("markers", "markers"))


def _speed() -> Optional[dict]:
    """The recorded benchmark of the mixed files (not re-measured here: a shared machine's speed
    drifts from one run to the next), or None when there is none."""
    return json.loads(SPEED.read_text(encoding="utf-8")) if SPEED.exists() else None


def speed_section(sp: Optional[dict]) -> list:
    """docs/measured.md's Speed section, from the recorded benchmark."""
    if sp is None:
        return []
    out = ['<a id="speed"></a>', "", "## Speed", "",
           f"Recorded by `{sp['command']}` on {sp['measured_on']} ({sp['cpus']} cores): {sp['what']}. "
           "The original rules are timed in their plain fast form (the 20-character windows counted by "
           "`Counter` from a generator, in C; the seed's own Python loop took about twice as long). "
           "Target: no more than the original rules' time on every file.", "",
           "| file | guard, one core | original rules, one core | guard / rules | with the inputs (fidelity "
           "checks too): one core, as it runs |", "|---|---|---|---|---|"]
    mixes = sp.get("mixes", [])
    for m in mixes:
        inputs = (f"{m['with_inputs_one_core_seconds']:.2f} s, {m['with_inputs_as_it_runs_seconds']:.2f} s "
                  f"({m['megabytes_with_inputs']} MB)") if "with_inputs_one_core_seconds" in m else "-"
        out.append(f"| {m['summaries']:,} summaries, {m['label']} | {m['guard_seconds']:.2f} s (runs "
                   f"{', '.join(f'{x:.2f}' for x in m['guard_runs'])}) | {m['seed_seconds']:.2f} s (runs "
                   f"{', '.join(f'{x:.2f}' for x in m['seed_runs'])}) | ×{m['ratio']:.2f} | {inputs} |")
    for m in mixes:
        if m.get("by_content"):
            out += ["", f"Where the cost depends on the content: {m['label']}, each kind alone "
                    f"({next(iter(m['by_content'].values())).get('summaries', m['summaries'] // 4):,} records, one core, "
                    + ("the median of three interleaved runs each):" if "guard_runs" in next(iter(m["by_content"].values()))
                       else "one run each):"),
                    "", "| kind | MB | guard | original rules | guard / rules |", "|---|---|---|---|---|"]
            for kind, r in m["by_content"].items():
                out.append(f"| {kind} | {r['megabytes']} | {r['guard_seconds']:.2f} s | {r['seed_seconds']:.2f} s | "
                           f"×{r['ratio']:.2f} |")
    for m in mixes:
        if m.get("by_length"):
            out += ["", f"And by length: {m['label']}, every kind mixed, in bins of the summary's length in "
                    "characters (one core, the median of three interleaved runs each). The original rules' cost "
                    "grows with the length (one 20-character window a character); the guard's has a floor "
                    "(a dozen detectors look at every summary), and grows less:",
                    "", "| characters | records | guard, a summary | original rules, a summary | guard / rules |",
                    "|---|---|---|---|---|"]
            for name, r in m["by_length"].items():
                out.append(f"| {name} | {r['summaries']:,} | {r['guard_us_per_summary']} µs | "
                           f"{r['seed_us_per_summary']} µs | ×{r['ratio']:.2f} |")
    timed = [m for m in mixes if m.get("detectors_seconds")]
    if timed:
        out += ["", "Where the guard's time goes without the inputs (each detector wrapped and timed, one core; "
                "a detector another one calls is counted in both):", "",
                "| | " + " | ".join(m["label"] for m in timed) + " |", "|---" * (len(timed) + 1) + "|"]
        for key, what in _TIMED:
            if any(key in m["detectors_seconds"] for m in timed):
                out.append(f"| {what} | " + " | ".join(f"{m['detectors_seconds'].get(key, 0.0):.2f} s"
                                                       for m in timed) + " |")
    out.append("")
    hook = json.loads(HOOK_SPEED.read_text(encoding="utf-8")) if HOOK_SPEED.exists() else None
    if hook:
        out += ['<a id="hook-speed"></a>', "", "### The hook's ordinary path", "",
                f"Recorded by `{hook['command']}` on {hook['measured_on']} ({hook['cpus']} cores, Python "
                f"{hook['python']}): {hook['runs']} whole-process runs of each row, interleaved, started as the agent "
                "starts the hook (this Python, guard.py, the event's JSON on stdin) with a state and nothing pending. "
                f"Target: the hook's median at most {hook['target_times_bare']:g} times a bare start's.", "",
                "| run | median | p90 | × bare start |", "|---|---|---|---|"]
        for name, r in hook["rows"].items():
            out.append(f"| {name} | {r['median_ms']:.1f} ms | {r['p90_ms']:.1f} ms | ×{r['times_bare']:.2f} |")
        out.append("")
    return out


def _fa(c: dict) -> str:
    return f"{c['fa']} of {c['neg']}" if c["neg"] else "-"


def _rc(c: dict) -> str:
    return f"{c['hit']} of {c['pos']} ({_pct(c['hit'], c['pos'])})" if c["pos"] else "-"


def headline(ev, res: dict, seed: dict, sp: Optional[dict] = None) -> str:
    """The README's small table: false alarms and recall on real data, speed against the
    original rules, each row linked to its full table."""
    def good(sets):
        n = sum(_good(res, s)[0] for s in sets)
        a = sum(_good(res, s)[1] for s in sets)
        sn = sum(_good(seed, s)[0] for s in sets)
        sa = sum(_good(seed, s)[1] for s in sets)
        return n, a, sn, sa
    rows = ["| measured on (real data) | guard | original rules |", "|---|---|---|"]
    n, a, sn, sa = good(("human",))
    langs = len(_languages(res, "human"))
    rows.append(f"| [{n} excerpts of human text in {langs} languages](docs/measured.md#{_anchor('human')}): "
                f"false alarms | {a} ({_pct(a, n)}) | {sa} ({_pct(sa, sn)}) |")
    n, a, sn, sa = good(("docs",))
    rows.append(f"| [{n} real READMEs and changelogs](docs/measured.md#{_anchor('docs')}): false alarms "
                f"| {a} ({_pct(a, n)}) | {sa} ({_pct(sa, sn)}) |")
    loops = ev._sum(res["cells"], lambda s, lang, k: s in REAL_LOOP_SETS and k == "repetition")
    sloops = ev._sum(seed["cells"], lambda s, lang, k: s in REAL_LOOP_SETS and k == "repetition")
    rows.append(f"| [{loops['pos']} loops written by two real model families](docs/measured.md#{_anchor('model')}): "
                f"caught | {loops['hit']} ({_pct(loops['hit'], loops['pos'])}) "
                f"| {sloops['hit']} ({_pct(sloops['hit'], sloops['pos'])}) |")
    rows.append(f"| [the same models' {loops['neg']} outputs that do not loop](docs/measured.md#{_anchor('openclaw')}): "
                "false alarms (repetition) "
                f"| {loops['fa']} ({_pct(loops['fa'], loops['neg'])}) "
                f"| {sloops['fa']} ({_pct(sloops['fa'], sloops['neg'])}) |")
    n, a, sn, sa = good(REAL_LOOP_SETS)
    kinds = sorted({k for s in REAL_LOOP_SETS for k in res["alarm_kinds"].get(s, {})})
    which = f", all {' and '.join(f'`{k}`' for k in kinds)}" if a and len(kinds) <= 2 else ""
    rows.append(f"| [the same models' {n} good outputs](docs/measured.md#{_anchor('gemma')}): false alarms (any kind) "
                f"| {a} ({_pct(a, n)}{which}) "
                f"| {sa} ({_pct(sa, sn)}) |")
    agents = [st for st in ev.AGENT_SETS + ev.SESSION_SETS if _good(res, st)[0] or ev.agents_caught(res, st)[0]]
    if agents:
        n, a, sn, sa = good(agents)
        kinds = sorted({k for s in agents for k in res["alarm_kinds"].get(s, {})})
        which = f", all {' and '.join(f'`{k}`' for k in kinds)}" if a and len(kinds) <= 2 else ""
        rows.append(f"| [{n} good summaries four real agents stored](docs/measured.md#{_anchor(agents[0])}) (Claude "
                    f"Code, Codex, Gemini CLI, opencode): false alarms | {a} ({_pct(a, n)}{which}) "
                    f"| {sa} ({_pct(sa, sn)}) |")
        bad = [ev.agents_caught(res, st) for st in agents + [ev.PUBLISHED_SET]]
        sbad = [ev.agents_caught(seed, st) for st in agents + [ev.PUBLISHED_SET]]
        n, f, sf = sum(b[0] for b in bad), sum(b[1] for b in bad), sum(b[1] for b in sbad)
        rows.append(f"| [{n} broken ones they stored or people published](docs/measured.md#{_anchor(agents[0])}): "
                    f"caught | {f} ({_pct(f, n)}) | {sf} ({_pct(sf, n)}) |")
    for st, what in (("published-empty", "information-free summaries people published"),
                     ("generated-empty", "information-free summaries the real OpenClaw and local models wrote")):
        got = [r for (s, _l), r in (res.get("info_free") or {}).items() if s == st]
        sgot = [r for (s, _l), r in (seed.get("info_free") or {}).items() if s == st]
        n, f = sum(r[0] for r in got), sum(r[1] for r in got)
        sf = sum(r[1] for r in sgot)
        rows.append(f"| [{n} {what}](docs/measured.md#information-free): caught | {f} ({_pct(f, n)}) "
                    f"| {sf} ({_pct(sf, n)}) |")
    drift = ev._sum(res["cells"], lambda s, lang, k: s in ("pairs", "grounding", "human") and k in
                    ("language_drift", "ungrounded"))
    rows.append(f"| [same-language and own-page pairs](docs/measured.md#{_anchor('pairs')}): wrong language or "
                f"subject reported | {drift['fa']} of {drift['neg']} | (not checked) |")
    if sp is not None:
        for mix in sp.get("mixes", []):
            rows.append(f"| [{mix['summaries']:,} summaries, {mix['label']}](docs/measured.md#speed): time on one "
                        f"core | {mix['guard_seconds']:.2f} s (×{mix['ratio']:.2f}) | {mix['seed_seconds']:.2f} s |")
    return "\n".join(rows)


def pages(ev, res: dict, seed: dict, counts: dict) -> dict:
    """{path: text} of every page the evaluation writes."""
    readme = README.read_text(encoding="utf-8")
    head, sep, rest = readme.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"{README}: the figures' markers are missing ({BEGIN} ... {END}); put them back")
    sp = _speed()
    return {MEASURED: measured_page(ev, res, seed, counts, sp),
            README: f"{head}{BEGIN}\n{headline(ev, res, seed, sp)}\n{END}{tail}"}
