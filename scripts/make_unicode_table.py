"""Write compaction_guard/data/unicode.bin: the facts of Unicode the detectors read for every
summary (detectors/unicode_data.py): which script each character of the Basic Multilingual Plane is
written in, as garbled's script mixing reads them, and the combining marks, as lexicon's words hold
them.

A letter or mark (category L* or M*) is coded by the first word of its Unicode name (LATIN,
CYRILLIC, ARABIC, ...; Han, hiragana, katakana and their marks as one, CJK); anything else is 0.
Python's own unicodedata is the source: the file names the Unicode version it was made from, and
the guard reads it only under that version (it computes the same from unicodedata under any other).
It spares each check ~0.2 ms of unicodedata.name calls per 256-character page its text meets (~150
pages on a mixed file of 20,000 summaries) and ~10 ms of category calls for the marks.

    python3 scripts/make_unicode_table.py            # rewrite it
    python3 scripts/make_unicode_table.py --check    # exit 1 if it differs from what it would write
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compaction_guard.detectors.unicode_data import TABLE_PATH, build  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether the file is up to date")
    args = ap.parse_args()
    data = build()
    if args.check:
        same = TABLE_PATH.exists() and TABLE_PATH.read_bytes() == data
        print(f"{TABLE_PATH}: {'up to date' if same else 'differs; run scripts/make_unicode_table.py'}")
        return 0 if same else 1
    TABLE_PATH.write_bytes(data)
    print(f"wrote {TABLE_PATH} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
