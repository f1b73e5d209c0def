"""Write compaction_guard/data/lexicon.bin: which words are words, in 39 languages.

`ungrounded`'s word-salad rule (detectors/grounding.py) asks of a summary's words whether
they are words of its language at all. The answer comes from wordfreq (Robyn Speer et al.,
data CC BY-SA 4.0: Wikipedia, subtitles, news, books, web text, ...): every word it lists
at Zipf 2 or more (used at least once in 10 million words) in each of its languages but
Chinese, Japanese and Korean (their words need a segmenter), normalized as
detectors/lexicon.py normalizes what it looks up, stored as one Bloom filter per language
(BITS bits a word, HASHES hashes). Not a list anyone here wrote, and not tuned to a sample.

Run once with wordfreq installed (it is not a dependency: 57 MB of lists for a few MB of
filters):

    pip install wordfreq && python3 scripts/make_lexicon.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compaction_guard.detectors.lexicon import MAGIC, normalize, positions  # noqa: E402

MIN_ZIPF = 2.0
BITS = 8
HASHES = 5
SKIP = {"zh", "ja", "ko"}


def build(words: set) -> tuple:
    m = max(64, BITS * len(words))
    bits = bytearray((m + 7) // 8)
    for w in words:
        for p in positions(w, m, HASHES):
            bits[p >> 3] |= 1 << (p & 7)
    return m, bytes(bits)


def main() -> int:
    import wordfreq
    large = set(wordfreq.available_languages("large"))
    from importlib.metadata import version
    header = {"source": f"wordfreq {version('wordfreq')}, Zipf >= {MIN_ZIPF}; "
                        "data by Robyn Speer et al., CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/); "
                        "this derived file is under the same licence (scripts/make_lexicon.py)",
              "languages": {}}
    blobs = []
    offset = 0
    for lang in sorted(set(wordfreq.available_languages()) - SKIP):
        freqs = wordfreq.get_frequency_dict(lang, "large" if lang in large else "small")
        floor = 10 ** (MIN_ZIPF - 9)
        words = {normalize(w, lang) for w, f in freqs.items() if f >= floor}
        m, blob = build(words)
        header["languages"][lang] = {"offset": offset, "bits": m, "hashes": HASHES, "words": len(words)}
        blobs.append(blob)
        offset += len(blob)
        print(f"{lang}: {len(words)} words, {len(blob)} bytes", file=sys.stderr)
    out = ROOT / "compaction_guard" / "data" / "lexicon.bin"
    with open(out, "wb") as f:
        f.write(MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n")
        for b in blobs:
            f.write(b)
    print(f"wrote {out} ({out.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
