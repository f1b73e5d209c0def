"""Write compaction_guard/data/scripts.bin: which script each character of the Basic Multilingual
Plane is written in, as garbled's script mixing reads them (detectors/garbled.py, _ScriptTable).

A letter or mark (category L* or M*) is coded by the first word of its Unicode name (LATIN,
CYRILLIC, ARABIC, ...; Han, hiragana, katakana and their marks as one, CJK); anything else is 0.
Python's own unicodedata is the source: the file names the Unicode version it was made from, and
the guard reads it only under that version (it computes the pages itself under any other). The
table spares each check ~0.2 ms of unicodedata.name calls per 256-character page its text meets
(~150 pages, ~30 ms, on a mixed file of 20,000 summaries).

    python3 scripts/make_script_table.py            # rewrite it
    python3 scripts/make_script_table.py --check    # exit 1 if it differs from what it would write
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compaction_guard.detectors.garbled import SCRIPT_TABLE_PATH, build_script_table  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether the file is up to date")
    args = ap.parse_args()
    data = build_script_table()
    if args.check:
        same = SCRIPT_TABLE_PATH.exists() and SCRIPT_TABLE_PATH.read_bytes() == data
        print(f"{SCRIPT_TABLE_PATH}: {'up to date' if same else 'differs; run scripts/make_script_table.py'}")
        return 0 if same else 1
    SCRIPT_TABLE_PATH.write_bytes(data)
    print(f"wrote {SCRIPT_TABLE_PATH} ({len(data):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
