"""Facts of Unicode the detectors read for every summary, made once from Python's unicodedata and
shipped as data/unicode.bin (scripts/make_unicode_table.py): each Basic Multilingual Plane
character's script (garbled's script mixing) and the combining marks (lexicon's words). Read only
under the Unicode version the file names; under any other they are computed from unicodedata (the
same answers, ~15 ms more per process)."""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

from .. import data_files

TABLE_PATH = data_files.path("unicode.bin")
_MAGIC = b"compaction-guard unicode 1"


def script_name(first: str) -> str:
    """The script a letter's name's first word names (Han, hiragana, katakana and their marks: CJK)."""
    return "CJK" if any(k in first for k in ("HIRAGANA", "KATAKANA", "CJK", "IDEOGRAPH", "KANGXI")) else first


def _marks_computed() -> tuple:
    """(nonspacing marks, spacing marks) of U+0300-U+FFFF, in code point order, from unicodedata."""
    import unicodedata
    mn, mc = [], []
    for c in range(0x300, 0x10000):
        if 0xD800 <= c < 0xE000:
            continue
        cat = unicodedata.category(chr(c))
        if cat == "Mn":
            mn.append(chr(c))
        elif cat == "Mc":
            mc.append(chr(c))
    return "".join(mn), "".join(mc)


def runs(chars: str) -> list:
    """(first, last) of each run of consecutive code points in `chars` (in code point order)."""
    out = []
    for c in map(ord, chars):
        if out and c == out[-1][1] + 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [tuple(r) for r in out]


def _ranges(chars: str) -> str:
    return " ".join(f"{a:04X}" if a == b else f"{a:04X}-{b:04X}" for a, b in runs(chars))


def _chars(ranges: str) -> str:
    out = []
    for r in ranges.split():
        a, _, b = r.partition("-")
        out.extend(map(chr, range(int(a, 16), int(b or a, 16) + 1)))
    return "".join(out)


def build() -> bytes:
    """data/unicode.bin's bytes: lines naming the format, the Unicode version, the scripts' names
    (code 1 is the first), the nonspacing and the spacing marks (code point ranges), then the BMP's
    characters one byte each (0: not a letter or a mark; else its script's code), zlib-compressed."""
    import unicodedata
    import zlib
    names, out = {}, bytearray(0x10000)
    for cp in range(0x10000):
        ch = chr(cp)
        if unicodedata.category(ch)[0] in "LM":
            name = script_name(unicodedata.name(ch, "?").partition(" ")[0])
            out[cp] = names.setdefault(name, len(names) + 1)
    if len(names) > 254:
        raise ValueError(f"{len(names)} scripts do not fit a byte each")
    mn, mc = _marks_computed()
    return b"\n".join((_MAGIC, unicodedata.unidata_version.encode(), ",".join(names).encode(),
                       _ranges(mn).encode(), _ranges(mc).encode(), zlib.compress(bytes(out), 9)))


@lru_cache(maxsize=1)
def _table() -> Optional[tuple]:
    """(bmp, names, mn, mc) from data/unicode.bin if it was made under this Python's Unicode
    version and reads whole, else None."""
    import unicodedata
    import zlib
    try:
        magic, version, names, mn, mc, packed = TABLE_PATH.read_bytes().split(b"\n", 5)
        if magic != _MAGIC or version.decode() != unicodedata.unidata_version:
            return None
        bmp = zlib.decompress(packed)
        if len(bmp) != 0x10000:
            return None
        return bmp, names.decode().split(","), _chars(mn.decode()), _chars(mc.decode())
    except (OSError, ValueError, zlib.error):
        return None


def scripts() -> Optional[tuple]:
    """(bmp, names): each BMP character's script code (0: not a letter or a mark; n: names[n - 1]),
    or None where the shipped table does not hold for this Python (the caller computes its pages)."""
    t = _table()
    return None if t is None else (t[0], t[1])


def marks() -> tuple:
    """(nonspacing marks, spacing marks) of U+0300-U+FFFF, in code point order."""
    t = _table()
    return (t[2], t[3]) if t is not None else _marks_computed()
