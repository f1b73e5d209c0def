"""Write compaction_guard/data/lexicon.bin: which words are words, in 39 languages.

`ungrounded`'s word-salad rule (detectors/grounding.py) asks of a summary's words whether
they are words of its language at all. The answer comes from wordfreq (Robyn Speer et al.,
data CC BY-SA 4.0: Wikipedia, subtitles, news, books, web text, ...): every word it lists
at Zipf 2 or more (used at least once in 10 million words) in each of its languages but
Chinese, Japanese and Korean (their words need a segmenter), normalized as
detectors/lexicon.py normalizes what it looks up, stored as one Bloom filter per language
(BITS bits a word, HASHES hashes). Not a list anyone here wrote, and not tuned to a sample.

The same script writes data/everyday.bin, the words used at least once in 10,000 (Zipf 4,
about the 7,000 to 11,000 most frequent words of each language): a word a summary shares
with its history that is among them says nothing of which history it is (`ungrounded`'s
rule on text that shares none of a long history's specific content).

Run once with wordfreq installed (it is not a dependency: 57 MB of lists for a few MB of
filters):

    pip install wordfreq && python3 scripts/make_lexicon.py
    python3 scripts/make_lexicon.py --min-zipf 4 --bits 10 --hashes 7 --out everyday.bin
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


def build(words: set, bits_per_word: int = BITS, hashes: int = HASHES) -> tuple:
    m = max(64, bits_per_word * len(words))
    bits = bytearray((m + 7) // 8)
    for w in words:
        for p in positions(w, m, hashes):
            bits[p >> 3] |= 1 << (p & 7)
    return m, bytes(bits)


def main() -> int:
    import argparse
    import wordfreq
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-zipf", type=float, default=MIN_ZIPF)
    ap.add_argument("--bits", type=int, default=BITS)
    ap.add_argument("--hashes", type=int, default=HASHES)
    ap.add_argument("--out", default="lexicon.bin", help="file name under compaction_guard/data")
    args = ap.parse_args()
    large = set(wordfreq.available_languages("large"))
    from importlib.metadata import version
    header = {"source": f"wordfreq {version('wordfreq')}, Zipf >= {args.min_zipf}; "
                        "data by Robyn Speer et al., CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/); "
                        "this derived file is under the same licence (scripts/make_lexicon.py)",
              "languages": {}}
    blobs = []
    offset = 0
    for lang in sorted(set(wordfreq.available_languages()) - SKIP):
        freqs = wordfreq.get_frequency_dict(lang, "large" if lang in large else "small")
        floor = 10 ** (args.min_zipf - 9)
        words = {normalize(w, lang) for w, f in freqs.items() if f >= floor}
        m, blob = build(words, args.bits, args.hashes)
        header["languages"][lang] = {"offset": offset, "bits": m, "hashes": args.hashes, "words": len(words)}
        blobs.append(blob)
        offset += len(blob)
        print(f"{lang}: {len(words)} words, {len(blob)} bytes", file=sys.stderr)
    out = ROOT / "compaction_guard" / "data" / args.out
    with open(out, "wb") as f:
        f.write(MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n")
        for b in blobs:
            f.write(b)
    print(f"wrote {out} ({out.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
