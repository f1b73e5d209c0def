"""Detector cost on one core, whatever the content, side by side with the seed's literal rules.

    python3 benchmarks/bench_detectors.py           # 10 MB single summaries, a 20,000-summary file
    python3 benchmarks/bench_detectors.py --quick   # 2 MB summaries, 5,000 summaries

Every measurement runs in a fresh interpreter pinned to one core (sched_setaffinity);
wall seconds and peak RSS (VmHWM) are read there. Inputs are real text: human text
(tests/corpus/real/human.jsonl, the one mojibake page left out) and real model
outputs, plus the hand-written corpus's summaries for the mixed file.

A third file holds text the project has never used, from the machine itself (its programs' message
catalogues in ~100 languages and ~30 scripts, Debian changelogs, the Python library's docstrings, the
packages' descriptions: unseen_texts), without histories; and each kind of it alone, where the cost
depends on the content (non-Latin scripts cost the guard more per character than the literal rules),
and by length: the literal rules' cost grows with a summary's length, the guard's has a floor.

One summary of each shape: good summaries concatenated (their digits varied, so it
does not repeat itself), Chinese and Japanese text, random printable characters, a
loop; random characters and good text each with an input as large (the good input is
the same texts in another order: language, grounding and identifiers all run). Targets: at most 0.5 s per MB and under 150 MB peak for a 10 MB
summary; on the mixed files, no more than the literal rules' time (without the inputs, which
the literal rules never read: the median of three interleaved runs each). The literal rules are
compaction_guard/seed_rules.py in their plain fast form: the 20-character windows counted by
Counter from a generator (in C), not in the seed's Python loop, which took twice as long and made
the guard look twice as fast as it is. Then where the guard's time goes on that file without its
inputs, detector by detector.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "corpus" / "real"
RESULTS = ROOT / "benchmarks" / "results" / "detectors.json"

ONE_SUMMARY = r"""
import os, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, sys.argv[3])
text = open(sys.argv[2], encoding="utf-8").read()
source = open(sys.argv[4], encoding="utf-8").read() if len(sys.argv) > 4 and sys.argv[4] else None
t = time.perf_counter()
if sys.argv[1] == "guard":
    from compaction_guard import validate
    verdict = validate(text, input=source).failures
else:
    from compaction_guard.seed_rules import validate_summary
    verdict = validate_summary(text, 0)
seconds = time.perf_counter() - t
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(seconds, int(peak) / 1024, ",".join(verdict))
"""

MANY = r"""
import json, os, sys, time
if sys.argv[1] != "guard-all-cores":
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, sys.argv[3])
t = time.perf_counter()
if sys.argv[1].startswith("guard"):
    from compaction_guard.check import auto_workers, iter_results
    from compaction_guard.stores import load_file
    path = sys.argv[2]
    if sys.argv[1] == "guard-text-only":       # the same summaries without their inputs
        recs = json.load(open(path, encoding="utf-8"))
        for r in recs:
            r.pop("input", None)
        path = path + ".text-only.json"
        json.dump(recs, open(path, "w", encoding="utf-8"), ensure_ascii=False)
        t = time.perf_counter()
    source = load_file(path)
    workers = auto_workers(source.count(None)) if sys.argv[1] == "guard-all-cores" else 1
    records = list(source.records(None))     # as operations.check does for a file read whole
    failing = sum(1 for r in iter_results(records, workers=workers) if not r.valid)
else:
    from compaction_guard.seed_rules import validate_summary
    # timed from here: the import (the package's, ~0.1 s) is left out, as the guard's is
    t = time.perf_counter()
    recs = json.load(open(sys.argv[2], encoding="utf-8"))
    failing = sum(1 for r in recs if validate_summary(r["content"], len(r.get("input") or "") // 4))
seconds = time.perf_counter() - t
peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(seconds, int(peak) / 1024, failing)
"""

# Where the time goes without the inputs: each detector's own time, measured by wrapping it
# (wall seconds, one core, the same file; a detector another one calls is counted in both).
BREAKDOWN = r"""
import collections, json, os, sys, time
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
sys.path.insert(0, sys.argv[2])
import compaction_guard.check as C
import compaction_guard.detectors as D
from compaction_guard.detectors import empty, garbled, markers, repetition
from compaction_guard.stores import load_file
spent = collections.Counter()
def timed(mod, name, key):
    f = getattr(mod, name)
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spent[key] += time.perf_counter() - t
    setattr(mod, name, g)
timed(empty, "detect", "empty"); timed(empty, "unfilled_template", "empty (unfilled template)")
timed(empty, "information_free", "empty (information-free)")
timed(garbled, "detect", "garbled"); timed(repetition, "detect", "repetition")
timed(repetition, "normalize", "  repetition: normalize"); timed(repetition, "measure", "  repetition: zstd novelty")
timed(D.cutoff, "detect", "cut_off (also inside repetition)"); timed(markers, "detect", "markers")
timed(C, "detect_many", "all detectors")
t = time.perf_counter()
records = list(load_file(sys.argv[1]).records(None))
spent["loading"] = time.perf_counter() - t
t = time.perf_counter()
failing = sum(1 for r in C.iter_results(records, workers=1) if not r.valid)
spent["checking, in all"] = time.perf_counter() - t
print(json.dumps(spent))
"""


def run(script: str, *args, source=None) -> tuple:
    extra = [str(source)] if source else []
    p = subprocess.run([sys.executable, "-c", script, *map(str, args), str(ROOT), *extra], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"benchmark run failed: {p.stderr.strip()[-400:]}")
    seconds, peak, verdict = p.stdout.split(maxsplit=2) if len(p.stdout.split()) > 2 else (*p.stdout.split(), "")
    return float(seconds), float(peak), verdict.strip()


def summaries(mb: float, rng: random.Random) -> dict:
    human = [r for r in map(json.loads, open(REAL / "human.jsonl", encoding="utf-8")) if r["id"] != "man-es-fakeroot-sysv.1"]
    size = int(mb * 1e6)

    def fill(texts, sep, vary=True):
        parts, n, i = [], 0, 0
        while n < size:
            t = re.sub(r"\d", lambda m: str(rng.randrange(10)), texts[i % len(texts)]) if vary else texts[i % len(texts)]
            parts.append(t)
            n += len(t.encode()) + len(sep)
            i += 1
        return sep.join(parts)

    cjk = [r["text"] for r in human if r["lang"] in ("zh", "ja", "zh-tw")]
    alphabet = [chr(c) for c in range(33, 127)] + [" "] * 12 + ["\n"]
    return {
        "good summaries concatenated": fill([r["text"] for r in human], "\n\n"),
        "Chinese and Japanese text": fill(cjk, "\n", vary=False),
        "random printable characters": "".join(rng.choice(alphabet) for _ in range(size)),
        "a loop until max_tokens": "The user asked about the build. " + "It failed again at step 3, so we retried it. " * (size // 46),
        "random, with a random input": "".join(rng.choice(alphabet) for _ in range(size)),
        # its texts as they are (figures kept, so its identifiers are the input's)
        "good text, with a good input": fill([r["text"] for r in human], "\n\n", vary=False),
    }


def mixed_file(n: int, rng: random.Random, path: Path, broken: float = 0.1) -> None:
    """`n` summaries with their inputs, a share `broken` of them broken: a store as users have
    it (one in ten) or one where compaction is failing (about half)."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests" / "corpus"))
    from evaluate import EMPTY_SETS, all_items   # noqa: E402  (the evaluation's sets: real data, hand-written corpus)
    items = all_items()
    # the information-free sets are broken by construction (their labels are the set's)
    free = [it for it in items if it.set in EMPTY_SETS and not it.set.endswith("/tokens")]
    items = [it for it in items if it.set not in EMPTY_SETS]
    good = [it for it in items if not any(v for k, v in it.truth.items() if k != "cut_off")]
    bad = [it for it in items if any(v for k, v in it.truth.items() if k != "cut_off")] + free
    recs = []
    for i in range(n):
        it = rng.choice(bad) if rng.random() < broken else rng.choice(good)
        recs.append({"id": f"{it.set}/{it.id}#{i}", "content": it.content, "input": it.input_text})
    path.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")


# Text the project has never used, from this machine (Debian and Python ship it): the translations of
# its programs' messages (gettext catalogs, /usr/share/locale: ~100 languages in ~30 scripts), Debian
# changelog entries, the Python standard library's docstrings, the installed packages' descriptions.
# Records without histories, as a check of a store of summaries from elsewhere reads them.
def _script_group(lang: str) -> str:
    base = lang.split("_")[0].split("@")[0]
    if base in ("ja", "zh", "ko"):
        return "CJK"
    if base in ("ru", "uk", "bg", "sr", "be", "mk", "kk", "ky", "tg", "mn", "tt", "ba", "cv", "ce", "os"):
        return "Cyrillic"
    if base in ("ar", "he", "fa", "ur", "ug", "ps", "ckb", "yi", "dv", "sd"):
        return "Arabic and Hebrew"
    if base in ("hi", "bn", "ta", "te", "kn", "ml", "mr", "gu", "pa", "or", "as", "ne", "si", "th", "lo", "km",
                "my", "ka", "hy", "el", "am", "ti", "bo", "dz", "sa", "mai", "brx", "kok", "doi", "mni", "sat"):
        return "other scripts"
    return "Latin"


def unseen_texts(rng: random.Random) -> list:
    """[(source or script group, text)] of the machine's text the project has not seen (see above)."""
    import ast
    import gettext
    import glob
    import gzip
    import sysconfig
    out = []
    for p in sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo")):
        try:
            with open(p, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
        except Exception:  # noqa: BLE001 - a catalogue gettext cannot read is left out
            continue
        msgs = [v for k, v in catalog.items() if k and isinstance(v, str) and v.strip() and v != k]
        i = 0
        while i < len(msgs):
            k = rng.randint(3, 30)
            out.append((_script_group(p.split("/")[4]), rng.choice(["\n", " ", "\n\n", "\n- "]).join(msgs[i:i + k])))
            i += k
    for p in sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz")):
        with gzip.open(p, "rt", encoding="utf-8", errors="replace") as f:
            out += [("changelogs", e.strip()) for e in f.read().split("\n\n -- ")[:40] if len(e) > 60]
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "test" in p.parts or "site-packages" in p.parts:
            continue
        try:
            tree = ast.parse(p.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        out += [("docstrings", d) for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and (d := ast.get_docstring(node, clean=True)) and len(d) >= 40]
    try:
        status = Path("/var/lib/dpkg/status").read_text(encoding="utf-8")
    except OSError:
        status = ""
    out += [("descriptions", b.split("\nDescription: ", 1)[1].split("\nHomepage:")[0])
            for b in status.split("\n\n") if "\nDescription: " in b]
    return out


def unseen_file(n: int, rng: random.Random, path: Path, texts: list, group: Optional[str] = None) -> None:
    pool = [t for t in texts if group is None or t[0] == group]
    recs = [{"id": f"{src}#{i}", "content": text} for i, (src, text) in enumerate(rng.choice(pool) for _ in range(n))]
    path.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")


def side_by_side(path: Path, n: int, label: str) -> dict:
    """The guard (without inputs) and the literal rules on one file of `n` records: three runs
    each, interleaved, the medians kept; printed after `label`, returned as the row recorded."""
    runs = [(run(MANY, "guard-text-only", path)[0], run(MANY, "seed", path)[0]) for _ in range(3)]
    g, s = sorted(r[0] for r in runs)[1], sorted(r[1] for r in runs)[1]
    row = {"summaries": n, "guard_seconds": round(g, 2), "seed_seconds": round(s, 2), "ratio": round(g / s, 2),
           "guard_us_per_summary": round(g / n * 1e6), "seed_us_per_summary": round(s / n * 1e6),
           "megabytes": round(path.stat().st_size / 1e6, 1), "guard_runs": [round(r[0], 2) for r in runs],
           "seed_runs": [round(r[1], 2) for r in runs]}
    print(f"  {label}  {row['megabytes']:5.1f} MB  guard {g:6.2f} s  seed {s:6.2f} s  ({row['guard_us_per_summary']} "
          f"and {row['seed_us_per_summary']} us a summary)  x{g / s:.2f}   (guard "
          f"{', '.join(f'{r[0]:.2f}' for r in runs)}; seed {', '.join(f'{r[1]:.2f}' for r in runs)})")
    return row


def by_content(tmp: Path, n: int, rng: random.Random, texts: list, record: Optional[list] = None) -> None:
    """The guard's time against the literal rules' on each kind of that text alone: where the cost
    depends on the content (one core; three runs each, interleaved, the median kept: a file of a
    second drifts by a tenth from one run to the next on a shared machine)."""
    print(f"\n{n} records of one kind each (text the project has not seen, no histories), one core, "
          "median of three interleaved runs:")
    rows = {}
    for group in sorted({g for g, _ in texts}):
        path = tmp / "unseen-one.json"
        unseen_file(n, rng, path, texts, group)
        rows[group] = side_by_side(path, n, f"{group:<20}")
    if record is not None and record:
        record[-1]["by_content"] = rows


# summary lengths, in characters: the literal rules' cost grows with the length (a window per
# character), the guard's has a floor (a dozen detectors each look at every summary)
LENGTHS = ((0, 100), (100, 250), (250, 500), (500, 1000), (1000, 4000), (4000, None))


def by_length(tmp: Path, n: int, rng: random.Random, texts: list, record: Optional[list] = None) -> None:
    """The guard's time against the literal rules' on that text by its length alone (every kind
    mixed, up to `n` records a length, about 4 MB at most: one core, the median of three
    interleaved runs each)."""
    print(f"\nthe same text by length (every kind, up to {n} records each, no histories), one core, "
          "median of three interleaved runs:")
    rows = {}
    for lo, hi in LENGTHS:
        pool = [t for t in texts if len(t[1]) >= lo and (hi is None or len(t[1]) < hi)]
        if not pool:
            continue
        mean = sum(len(t[1]) for t in pool) / len(pool)
        k = max(100, min(n, int(4e6 / mean)))
        path = tmp / "unseen-length.json"
        unseen_file(k, rng, path, pool)
        name = f"{lo:,}-{hi - 1:,}" if hi is not None else f"{lo:,} or more"
        rows[name] = side_by_side(path, k, f"{name:>16} chars, {k:5} records")
    if record is not None and record:
        record[-1]["by_length"] = rows


def mixed(path: Path, n: int, label: str, record: Optional[list] = None,
          what: str = "real model outputs, human text, hand-written corpus") -> None:
    """The mixed file's figures: the guard on one core and as it runs, and against the seed's rules."""
    t0 = time.perf_counter()
    g = run(MANY, "guard", path)
    g2 = run(MANY, "guard-all-cores", path)
    # the ratio the target is about: three runs each, interleaved, the median kept (a
    # shared virtual machine's speed drifts by a few percent from one run to the next)
    runs = [(run(MANY, "guard-text-only", path), run(MANY, "seed", path)) for _ in range(3)]
    g3 = sorted((r[0] for r in runs), key=lambda x: x[0])[1]
    s = sorted((r[1] for r in runs), key=lambda x: x[0])[1]
    print(f"\n{n} summaries, {label} ({what}; "
          f"{path.stat().st_size / 1e6:.1f} MB with their inputs), one core, loading included:")
    print(f"  guard, one core        {g[0]:.2f} s, peak {g[1]:.0f} MB, {g[2]} failing")
    print(f"  guard, as it runs ({os.cpu_count()} cores) {g2[0]:.2f} s, peak {g2[1]:.0f} MB, {g2[2]} failing")
    print(f"  guard without the inputs (no fidelity checks, as the seed reads it), one core {g3[0]:.2f} s "
          f"(median of {', '.join(f'{r[0][0]:.2f}' for r in runs)}), peak {g3[1]:.0f} MB, {g3[2]} failing")
    print(f"  seed's rules, one core {s[0]:.2f} s (median of {', '.join(f'{r[1][0]:.2f}' for r in runs)}), "
          f"peak {s[1]:.0f} MB, {s[2]} failing")
    print(f"  guard / seed time: {g[0] / s[0]:.2f} on one core, {g2[0] / s[0]:.2f} as it runs, {g3[0] / s[0]:.2f} "
          "without the inputs (target <= 1)"
          f"   [{time.perf_counter() - t0:.0f} s]")
    entry = {"label": label, "summaries": n, "guard_seconds": round(g3[0], 2),
             "seed_seconds": round(s[0], 2), "ratio": round(g3[0] / s[0], 2),
             "guard_runs": [round(r[0][0], 2) for r in runs], "seed_runs": [round(r[1][0], 2) for r in runs],
             "with_inputs_one_core_seconds": round(g[0], 2), "with_inputs_as_it_runs_seconds": round(g2[0], 2),
             "cores": os.cpu_count(), "megabytes_with_inputs": round(path.stat().st_size / 1e6, 1)}
    if record is not None:
        record.append(entry)
    p = subprocess.run([sys.executable, "-c", BREAKDOWN, str(path) + ".text-only.json", str(ROOT)],
                       capture_output=True, text=True)
    if p.returncode == 0:
        spent = json.loads(p.stdout)
        entry["detectors_seconds"] = {k.strip(): round(v, 2) for k, v in spent.items()}
        print("\nwhere the guard's time goes without the inputs (each detector wrapped and timed, one core; "
              f"the seed's rules took {s[0]:.2f} s in all):")
        for name in ("loading", "checking, in all", "all detectors", "repetition", "  repetition: normalize",
                     "  repetition: zstd novelty", "garbled", "empty", "empty (unfilled template)",
                     "empty (information-free)",
                     "cut_off (also inside repetition)", "markers"):
            print(f"  {name:<34}{spent.get(name, 0.0):6.2f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--mixed-only", action="store_true", help="only the two mixed files")
    ap.add_argument("--record", action="store_true",
                    help=f"write the mixed files' figures to {RESULTS.relative_to(ROOT)} (the README's speed row)")
    args = ap.parse_args()
    record = [] if args.record and not args.quick else None
    mb, n = (2, 5000) if args.quick else (10, 20000)
    rng = random.Random(9)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if not args.mixed_only:
            single(tmp, mb, rng)
        for broken, label in ((0.1, "one in ten broken"), (0.5, "about half broken")):
            path = tmp / f"mixed-{broken}.json"
            mixed_file(n, rng, path, broken)
            mixed(path, n, label, record)
        texts = unseen_texts(random.Random(7))
        if texts:
            path = tmp / "unseen.json"
            unseen_file(n, rng, path, texts)
            mixed(path, n, "text the project has not seen", record,
                  "message catalogues of ~100 languages, changelogs, docstrings, package descriptions, no histories")
            by_content(tmp, n // 4, rng, texts, record)
            by_length(tmp, n // 4, rng, texts, record)
    if record:
        import datetime
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({"command": "python3 benchmarks/bench_detectors.py --mixed-only --record",
                                       "measured_on": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
                                       "what": "the summaries without their inputs, one core, loading included (imports left out, the guard's and the seed's): "
                                               "the median of three interleaved runs each",
                                       "mixes": record}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


def single(tmp: Path, mb: float, rng: random.Random) -> None:
    """One summary of each shape, ~`mb` MB, guard and seed."""
    print(f"one summary of ~{mb} MB, one core (fresh interpreter each)")
    print(f"{'shape':<30}{'MB':>6}  {'guard s':>8}{'s/MB':>7}{'peak MB':>9}  {'seed s':>8}{'s/MB':>7}{'peak MB':>9}  guard verdict")
    worst = 0.0
    for name, text in summaries(mb, rng).items():
        p = tmp / "summary.txt"
        p.write_text(text, encoding="utf-8")
        size = p.stat().st_size / 1e6
        source = None
        if "input" in name:       # the input, as large again, is read too (grounding, copies)
            source = tmp / "input.txt"
            if name.startswith("good"):       # the same human texts in another order: language,
                # grounding and identifiers all run
                rows = [r["text"] for r in map(json.loads, open(REAL / "human.jsonl", encoding="utf-8"))]
                rng.shuffle(rows)
                body = "\n\n".join(rows)
                source.write_text((body * (int(mb * 1e6) // max(1, len(body.encode())) + 1))[:int(mb * 1e6)],
                                  encoding="utf-8")
            else:
                source.write_text("".join(rng.choice("abcdefghij #$%{}<>!?0123456789\n")
                                          for _ in range(int(mb * 1e6))), encoding="utf-8")
        g = run(ONE_SUMMARY, "guard", p, source=source)
        s = run(ONE_SUMMARY, "seed", p)
        worst = max(worst, g[0] / size)
        print(f"{name:<30}{size:>6.1f}  {g[0]:>8.2f}{g[0] / size:>7.3f}{g[1]:>9.0f}  {s[0]:>8.2f}{s[0] / size:>7.3f}"
              f"{s[1]:>9.0f}  {g[2] or 'valid'}")
    print(f"worst guard cost: {worst:.3f} s/MB (target <= 0.5)")


if __name__ == "__main__":
    sys.exit(main())
