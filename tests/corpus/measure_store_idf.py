"""The measurement behind `ungrounded`'s third rule (issue #12), in a check of a store.

Every off-topic set here is "another text of the same genre": it shares the genre's
vocabulary (options, files, commands) as much as a paraphrase shares its own page's.
A store knows its genre: the words most of its inputs share. This weighs each of a
summary's content units by its inverse document frequency over the inputs of its "store"
(here: every input of the same evaluation set and language; in a real check, the
inputs of the database or transcript being checked) and prints, at 0, 1 and 3 false
alarms on the real overviews of their own page, the recall each measure reaches on the
off-topic overviews (`grounding`) and excerpt pairs (`pairs`), and the union of a
weighted-share threshold with the shipped distinct-share bound.

    .venv/bin/python tests/corpus/measure_store_idf.py
"""
from __future__ import annotations

import collections
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from evaluate import grounding_items, pair_items  # noqa: E402

from compaction_guard.detectors import grounding, language, overlap  # noqa: E402
from compaction_guard.detectors.grounding import upper_bound  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402


def main() -> int:
    common = grounding.common_units()
    items = [it for it in grounding_items() + pair_items() if it.truth.get("ungrounded") is not None]
    stores = collections.defaultdict(set)
    for it in items:
        stores[(it.set, it.lang)].add(it.input_text)
    df = {}
    for key, texts in stores.items():
        counts = collections.Counter()
        for t in texts:
            counts.update(set(overlap.units(t)))
        df[key] = (counts, len(texts))
    rows = []
    for it in items:
        view = overlap.InputView(it.input_text)
        mine = overlap.unit_counts(it.content)
        _, same = language.judge(it.content, DEFAULT, it.input_text, overlap=overlap.shared(mine, view))
        units = [u for u in mine if grounding.is_content(u, common)]
        if not same or len(units) < DEFAULT.ungrounded_min_units:
            continue
        counts, n = df[(it.set, it.lang)]
        have = view.unit_set
        w = {u: math.log((n + 1) / (counts.get(u, 0) + 0.5)) for u in units}
        total = sum(w.values())
        weighted = sum(w[u] for u in units if u in have) / total if total else 1.0
        plain = sum(1 for u in units if u in have) / len(units)
        rows.append({"set": it.set, "off": it.truth["ungrounded"], "plain": plain, "idf": weighted,
                     "bound": upper_bound(plain, len(units), DEFAULT.ungrounded_confidence_z)})
    for key in ("plain", "idf", "bound"):
        good = sorted(r[key] for r in rows if not r["off"])
        for fa in (0, 1, 3):
            limit = good[fa] - 1e-9
            rec = {st: f"{sum(1 for r in rows if r['off'] and r['set'] == st and r[key] <= limit)}/"
                       f"{sum(1 for r in rows if r['off'] and r['set'] == st)}" for st in ("grounding", "pairs")}
            print(f"{key:6} at {fa} false alarms (<= {limit:.3f}): {rec}")
    shipped = lambda r: r["plain"] <= DEFAULT.ungrounded_max_support \
        or r["bound"] <= DEFAULT.ungrounded_confident_below  # noqa: E731
    print("the shipped rules on these units (identifiers and the CJK thresholds left out): found "
          f"{ {st: sum(1 for r in rows if r['off'] and r['set'] == st and shipped(r)) for st in ('grounding', 'pairs')} }, "
          f"{sum(1 for r in rows if not r['off'] and shipped(r))} false alarms")
    print("union of a weighted-share threshold and the shipped bound (<= ungrounded_confident_below):")
    for t in (0.02, 0.03, 0.035, 0.04):
        hit = lambda r: r["idf"] <= t or r["bound"] <= DEFAULT.ungrounded_confident_below  # noqa: E731
        fa = sum(1 for r in rows if not r["off"] and hit(r))
        rec = {st: sum(1 for r in rows if r["off"] and r["set"] == st and hit(r)) for st in ("grounding", "pairs")}
        print(f"  weighted share <= {t}: {fa} false alarms, found {rec}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
