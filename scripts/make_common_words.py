"""Write compaction_guard/data/common_words.txt: the most frequent words of 42 languages.

`ungrounded` (detectors/grounding.py) measures what a summary shares with its input
on content, not on the function words every text in a language shares. Which words
those are comes from wordfreq (Robyn Speer et al., data CC BY-SA 4.0: Wikipedia,
subtitles, news, books, web text, ...): the `--top` most frequent words of each
language it covers, as the guard cuts text into units (detectors/overlap.py: lowercased,
split at punctuation and digits; for Chinese, Japanese and Korean, two-character words,
the guard's CJK bigrams). Not a list anyone here wrote, and not tuned to a sample.

Run once with wordfreq installed (it is not a dependency: 57 MB for a 30 KB list):

    pip install wordfreq && python3 scripts/make_common_words.py
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compaction_guard.detectors.overlap import units  # noqa: E402

HEADER = """# The {top} most frequent words of each of wordfreq's {n} languages, cut into the guard's
# units (one per line). Derived from wordfreq {version} by scripts/make_common_words.py.
# wordfreq data: Robyn Speer, https://github.com/rspeer/wordfreq, licensed CC BY-SA 4.0
# (https://creativecommons.org/licenses/by-sa/4.0/); this derived list is under the same licence.
"""


def main() -> int:
    import wordfreq
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=100)
    args = ap.parse_args()
    langs = sorted(wordfreq.available_languages("best"))
    words = set()
    for lang in langs:
        for w in wordfreq.top_n_list(lang, args.top):
            if lang in ("zh", "ja", "ko"):
                if len(w) == 2:           # the guard's units of CJK text are bigrams
                    words.add(w)
                continue
            words.update(u.decode("utf-8") if isinstance(u, bytes) else u for u in units(w))
    out = ROOT / "compaction_guard" / "data" / "common_words.txt"
    from importlib.metadata import version as _v
    version = _v("wordfreq")
    out.write_text(HEADER.format(top=args.top, n=len(langs), version=version) + "\n".join(sorted(words)) + "\n",
                   encoding="utf-8")
    print(f"{out}: {len(words)} units from {len(langs)} languages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
