"""repetition: a summarizer that looped, measured as information rather than matched.

A model that loops writes what it has just written, again and again, until
max_tokens: a sentence, a line, a chat-log entry whose timestamp changes, a
numbered line whose counter changes, a two-line cycle, a token with no spaces
(`1:1:1:1`, `-gemma-gemma-`), a CJK character, a separator. Whatever the unit,
script or spacing, such text carries no new information. Two measurements:

1. Novelty (where). The text, every run of digits set to "0" (a loop through a
   counter or a clock is still a loop) and whitespace collapsed, goes through a
   streaming compressor (zstd level -1: literals stored as they are, no entropy
   coding; 32 KB window) in blocks of `loop_block_bytes`, each block flushed. What
   a block adds to the compressed stream, over its size, is its novelty: a block
   that only copies recent text adds little more than the block's own framing
   (median 0.04 at 256-byte blocks at the end of the real model loops); prose
   measures 0.73 (median; 1% of its blocks under 0.18) in the 32 languages of the
   real human text. zstd level 1 (literals entropy-coded: prose 0.62, the same low
   tail) gave the same verdicts on every labelled set at 2.2 times the cost of
   level -1, DEFLATE (zlib level 6, Whisper's gzip ratio) at about 5 times. Stretches
   of low-novelty blocks are
   candidates: the longest, and the one that reaches the end of the text; so is
   the text's last `loop_tail_bytes`, where a loop that ran to max_tokens ends.
2. Period (what). In a candidate, the unit is the shortest distance back to an
   earlier occurrence of its first bytes at which the text repeats back to back,
   and its copies are counted with byte comparisons (C-level, bounded).

The decision, each rule a Settings field:
- A loop stops only at max_tokens: a stretch that runs to the end of the text is a
  loop when its unit stands `loop_min_copies` times word for word (the seed's
  "20+ character phrase 3 times": `loop_min_unit_bytes`), `loop_min_copies_masked`
  times with only its digits changing (`[21:24] ines: ...`, `1. DBA: <time>`), or
  `loop_min_copies_short` times when the unit is shorter (a word, a character), or
  `loop_min_copies` times with digits changing when max_tokens cut the text inside a
  copy (detectors/cutoff.py). Three whole lines that differ only in a version
  number (`ps2pdf12`, `ps2pdf13`, `ps2pdf14`: a real manual page) are a list.
  The unit is read where the text ends when copies of it reach the end (a loop may
  change its unit on the way: 17 full dates, then 12 shorter ones).
- Repeats that stop by themselves inside the summary are a loop at
  `loop_min_share` of it with `loop_min_copies_inside` copies, or `loop_min_copies`
  word for word of a unit of `loop_min_unit_bytes` or more (a function pasted three
  times, then varied until max_tokens); less, or whole lines
  repeated inside a code block that closes after them (a quoted retry log), is a
  warning (`repetitive`).
- A summary that repeats what its input itself repeats (a model copying a log of
  identical lines), or whose lines differing only in digits are each a line of the
  input (what an extractive summary picks), gets a warning, not a failure.
- One template repeated with a word changing up to a cut (no exact unit) is a
  warning: on the real model outputs that signal was right once and wrong twice.
Cost: one pass of zstd over the text and a few bounded searches; linear whatever
the content.
"""
from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass
from typing import Callable, Optional

import zstandard

from ..findings import Finding
from ..tokens import OTHER_DIGIT_LEADS, pieces
from . import cutoff

_DIGITS_RE = re.compile(r"\d+")
_ALNUM_RE = re.compile(r"[^\W_]")
_WS_RE = re.compile(r"\s+")


def normalize(text: str, mask_digits: bool = True) -> bytes:
    """Digits set aside, whitespace collapsed, as UTF-8: what the novelty is measured on.
    A long text is done in pieces cut at whitespace: one pass over 10 MB would hold a
    list of every word (100 MB)."""
    if len(text) <= _PIECE:
        ascii_ = text.isascii()
        if not ascii_ and _OTHER_SPACE_RE.search(text):
            return _normalize_str(text, mask_digits)
        data = text.encode("utf-8", "surrogatepass")
        if not mask_digits:
            return _collapse_spaces(data.translate(_SPACES_TO_SPACE))
        # digits of other scripts (٣, ३, ３) are masked as a regex sees them (looked for only
        # where their lead bytes are)
        if not ascii_ and _may_hold_other_digits(data) and _OTHER_DIGIT_RE.search(text):
            return _normalize_str(text, mask_digits)
        return _zero_runs(_collapse_spaces(data.translate(_SPACES_AND_DIGITS)))
    out = []
    for _, piece in pieces(text, _PIECE):
        piece = normalize(piece, mask_digits)
        if piece:
            out.append(piece)
    return b" ".join(out)


def _normalize_str(text: str, mask_digits: bool) -> bytes:
    """normalize, read as Unicode: for text with a space or a digit outside ASCII."""
    text = " ".join(text.split())
    if mask_digits:
        text = _DIGITS_RE.sub("0", text)
    return text.encode("utf-8", "surrogatepass")


# What str.split() splits at, in bytes: the ASCII whitespace (\x1c-\x1f among it) and, outside
# ASCII, these characters (no Unicode version has whitespace past U+3000; tests check both
# lists against str.isspace). Text holding none of the latter is collapsed on its UTF-8, a
# byte table and a pattern of spaces, with no list of its words.
_ASCII_SPACES = bytes(b for b in range(128) if chr(b).isspace())
_OTHER_SPACE_RE = re.compile("[" + "".join(c for c in map(chr, range(0x80, 0x3001)) if c.isspace()) + "]")
_SPACES_TO_SPACE = bytes(0x20 if b in _ASCII_SPACES else b for b in range(256))
_SPACES_AND_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 if b in _ASCII_SPACES else b for b in range(256))
_SPACE_RUN_RE = re.compile(rb"  +")


def _collapse_spaces(data: bytes) -> bytes:
    """Runs of spaces made one, none at either end."""
    if b"  " in data:
        data = _SPACE_RUN_RE.sub(b" ", data)
    return data.strip(b" ")


_PIECE = 1 << 16
# Decimal digits other than 0-9 (Arabic-Indic, Devanagari, full-width, ...): \d without them
_OTHER_DIGIT_RE = re.compile(r"[^\D0-9]")


# every byte but the lead bytes of other scripts' digits (tokens.OTHER_DIGIT_LEADS), for
# bytes.translate to delete: what is left are those lead bytes (one C pass)
_ALL_BUT_OTHER_DIGIT_LEADS = bytes(b for b in range(256) if b not in OTHER_DIGIT_LEADS)
# The only such digits with the lead byte 0xEF are the full-width ones, U+FF10-U+FF19: EF BC 90-99
# (Chinese and Japanese text holds 0xEF for its full-width punctuation: ，！？（）)
_FULLWIDTH_DIGIT_RE = re.compile(rb"\xef\xbc[\x90-\x99]")


def _may_hold_other_digits(data: bytes) -> bool:
    """Whether UTF-8 `data` may hold a decimal digit other than 0-9: one of their lead bytes
    (or, when 0xEF is the only one, a full-width digit's three bytes) stands in it."""
    leads = data.translate(None, _ALL_BUT_OTHER_DIGIT_LEADS)
    return bool(leads) and (bool(leads.strip(b"\xef")) or _FULLWIDTH_DIGIT_RE.search(data) is not None)


_ZERO_PAIR_RE = re.compile(rb"00")


def _zero_runs(data: bytes) -> bytes:
    """Each run of "0" made one (every digit 0-9 already made "0"): the runs cut out and
    joined by one "0" again, in C."""
    if _ZERO_PAIR_RE.search(data) is None:      # (found sooner than by a two-byte substring search)
        return data         # no run of two digits or more: nothing to shorten
    body = b"0".join(filter(None, data.split(b"0")))
    if not body:
        return b"0"
    return (b"0" if data[:1] == b"0" else b"") + body + (b"0" if data[-1:] == b"0" else b"")


@dataclass
class Stretch:
    start: int
    length: int


@dataclass
class Novelty:
    """What the compressor saw."""

    size: int                   # normalized bytes
    ratio: float                # whole-text compression ratio (Whisper's signal), reported
    longest: Optional[Stretch]  # the longest stretch of low-novelty blocks
    final: Optional[Stretch]    # the stretch that reaches the end of the text, if any


# zstd level -1 with a 32 KB window: a loop repeats what it has just written; what is new
# is measured by its bytes, not its letters' frequencies (no entropy coding). A compressor
# costs ~17 us to set up and may not be shared between threads: one per thread, reused.
_PARAMS = zstandard.ZstdCompressionParameters.from_level(-1, window_log=15)
_LOCAL = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    c = getattr(_LOCAL, "compressor", None)
    if c is None:
        c = _LOCAL.compressor = zstandard.ZstdCompressor(compression_params=_PARAMS)
    return c


def compressed_size(data: bytes) -> int:
    """The bytes zstd (as `measure` runs it) makes of `data` at once."""
    return len(_compressor().compress(data))


def measure(data: bytes, settings, block: Optional[int] = None, max_novelty: Optional[float] = None) -> Novelty:
    """Novelty profile of normalized bytes (see module doc); one zstd pass."""
    block = block or settings.loop_block_bytes
    limit = (max_novelty or settings.loop_block_max_novelty) * block
    n = len(data)
    comp = _compressor().compressobj()
    compress, flush, sync = comp.compress, comp.flush, zstandard.COMPRESSOBJ_FLUSH_BLOCK
    # what each block adds, all blocks first (the stream's calls in one comprehension)
    sizes = [len(compress(data[i:i + block])) + len(flush(sync)) for i in range(0, n, block)]
    total = sum(sizes)
    longest = None      # (start, length)
    run_start = -1
    run_end = 0
    last = len(sizes) - 1
    for k, added in enumerate(sizes):
        if added <= limit:
            i = k * block
            if run_start < 0:
                run_start = i
            run_end = min(n, i + block)
            if longest is None or run_end - run_start > longest[1]:
                longest = (run_start, run_end - run_start)
        elif k < last:      # the last, partial block is too small to judge
            run_start = -1
    final = Stretch(run_start, run_end - run_start) if run_start >= 0 and run_end >= n - block else None
    return Novelty(n, round(n / total, 2) if total else 0.0, longest and Stretch(*longest), final)


def _unit_at(data: bytes, start: int, settings) -> tuple:
    """(p, start): the shortest distance p back (or forward, when `start` is inside the
    unit's first copy) to another occurrence of the bytes at `start` such that the p
    bytes on either side are equal; (0, start) if there is none."""
    probe = data[start:start + 8]
    if len(probe) < 8:
        return 0, start
    n = len(data)
    most = settings.loop_max_unit_bytes
    # a copy d bytes long needs d bytes after `start` (or after `pos`, forward): occurrences
    # further away cannot be one. They are the last the searches reach, so leaving them out
    # changes no answer, only what is looked at before there is none.
    lo = max(0, start - most, 2 * start - n)
    end = min(start + most, (n + start) // 2) + len(probe)
    pos = data.rfind(probe, lo, start + len(probe) - 1)
    if pos < 0 and data.find(probe, start + 1, end) < 0:
        return 0, start         # the bytes occur nowhere else within reach (most calls)
    for _ in range(64):
        if pos < 0:
            break
        d = start - pos
        if data[pos:start] == data[start:start + d]:
            return d, start
        pos = data.rfind(probe, lo, pos + len(probe) - 1)
    pos = start
    for _ in range(64):
        pos = data.find(probe, pos + 1, end)
        if pos < 0:
            break
        d = pos - start
        if data[start:pos] == data[pos:pos + d]:
            return d, pos
    return 0, start


def _copies(data: bytes, p: int, at: int) -> tuple:
    """(begin, end) of the back-to-back copies of the p bytes before `at`."""
    unit = data[at - p:at]
    j = at - p - p * _copies_from(data, unit, at - p, -1)
    # the copies may start inside the unit as found (a rotation of it): extend back
    begin = j - _common_prefix(data[max(0, j - p):j][::-1], unit[::-1])
    j = at + p * _copies_from(data, unit, at, 1)
    end = j + _common_prefix(data[j:j + p], unit)   # cut by max_tokens inside a copy
    return begin, end


def _copies_from(data: bytes, unit: bytes, j: int, way: int) -> int:
    """How many whole copies of `unit` stand back to back from j, forward (way 1) or
    backward (way -1): a galloping search over C-level slice comparisons, so a loop of
    thousands of copies costs a few dozen of them."""
    p = len(unit)
    most = len(data) // p

    def fits(m: int, k: int) -> bool:       # the k copies after the first m
        if m + k > most:
            return False
        if way > 0:
            return data[j + m * p:j + (m + k) * p] == unit * k
        return j - (m + k) * p >= 0 and data[j - (m + k) * p:j - m * p] == unit * k
    m, step = 0, 1
    while fits(m, step):
        m += step
        step *= 2
    while step > 1:
        step //= 2
        if fits(m, step):
            m += step
    return m


def _common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes a and b share: a binary search over C-level slice
    comparisons (os.path.commonprefix compares them one by one in Python)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def period(data: bytes, start: int, length: int, settings, to_end: bool = False) -> tuple:
    """(unit, copies, end): the exact unit a stretch repeats, how many times it stands
    back to back (the copy before the stretch included), and where the copies end.
    A few points of the stretch are tried (its first block may hold the text before
    the loop; a sentence may repeat inside the unit), and the unit whose copies cover
    the most is kept; with `to_end`, the one whose copies reach the end of the text
    first, when one does (a loop that changed its unit on the way, `2018-02-14 : ` then
    `2022-17 : `, ends in the last one: a loop stops only at max_tokens)."""
    best = (0, 0, 0, 0)        # covered, p, at, end
    last = (0, 0, 0, 0)        # the same, of units whose copies reach the end
    offsets = {0, 8, 16, 32, 64, 128, length // 2, max(0, length - 48)}
    runs = []          # (p, begin, end) of the copies found so far
    for off in sorted(o for o in offsets if o + 8 <= length and start + o + 8 <= len(data)):
        p, at = _unit_at(data, start + off, settings)
        if p:
            if any(q == p and b <= at - p and at <= e for q, b, e in runs):
                # a copy inside copies already counted with the same unit length: they are the
                # same maximal run (its ends are where p-periodicity breaks), covered no more
                continue
            begin, end = _copies(data, p, at)
            runs.append((p, begin, end))
            if end - begin > best[0]:
                best = (end - begin, p, at, end)
            if to_end and end >= len(data) and end - begin > last[0]:
                last = (end - begin, p, at, end)
    if last[1] and last[1] != best[1] and _enough((last[0] + 2) // last[1], _rotate(data[last[2] - last[1]:last[2]]),
                                                  True, settings):
        best = last
    covered, p, at, end = best
    if not p:
        return b"", 0, start
    # whole copies (a space stripped at the end forgiven); partial ones at either end
    # only say where the copies run
    return _rotate(data[at - p:at]), (covered + 2) // p, end


def _rotate(unit: bytes) -> bytes:
    """The same unit, starting at a word (after a space) or at least at a character:
    a loop's copies can be read from any point, a person reads them from a word."""
    i = unit.find(b" ") + 1
    if not 0 < i < len(unit):
        i = next((k for k, b in enumerate(unit) if not 0x80 <= b < 0xC0), 0)
    return unit[i:] + unit[:i]


def _enough(copies: int, unit: bytes, masked: bool, settings) -> bool:
    """Enough copies for a loop. A unit of the seed's 20+ characters: loop_min_copies
    word for word, or loop_min_copies_masked with only digits changing. A shorter unit
    (a word, a character, a separator, a counter line): loop_min_copies_short and
    loop_min_bytes in all; with only digits changing it must be at least
    loop_min_unit_bytes_masked long (`prjer_2382`, `- [17:54] 14.`), or a count that
    runs on loop_min_copies_numbers times: a list of bare numbers (`22, 80, 443, ...`)
    is data."""
    if not _ALNUM_RE.search(unit.decode("utf-8", "ignore")) and copies * len(unit) < settings.loop_min_bytes_symbols:
        return False        # a rule, a separator line, U+FFFD: formatting or noise, unless it runs on
    if len(unit) >= settings.loop_min_unit_bytes:
        return copies >= (settings.loop_min_copies_masked if masked else settings.loop_min_copies)
    if copies < settings.loop_min_copies_short or copies * len(unit) < settings.loop_min_bytes:
        return False
    return not masked or len(unit) >= settings.loop_min_unit_bytes_masked or copies >= settings.loop_min_copies_numbers


def _explained_by_input(unit: bytes, copies: int, input_text: Optional[str]) -> bool:
    """The input itself repeats the unit back to back (twice, and over at least 64
    bytes for a short unit): the summary copied a repetitive input (a log of identical
    lines); it did not loop."""
    if not input_text or not unit:
        return False
    reps = max(2, min(copies, -(-64 // len(unit))))
    return unit * reps in normalize(input_text)


def _word_for_word(content: str, settings) -> bool:
    """Whether the text ends in a loop with its digits kept."""
    raw = normalize(content, mask_digits=False)
    tail = min(len(raw), settings.loop_tail_bytes)
    for stretch in (Stretch(len(raw) - tail, tail), measure(raw, settings).final):
        if stretch is not None:
            unit, copies, end = period(raw, stretch.start, stretch.length, settings)
            if end >= len(raw) and _enough(copies, unit, False, settings):
                return True
    return False


def _verbatim(content: str, unit: bytes, copies: int, begin: int, masked_size: int) -> bool:
    """Whether the unit (digits set aside), whose copies start at `begin` in the masked
    text of `masked_size` bytes, stands `copies` times back to back with its digits
    unchanged too: word for word. Looked for in the text with its digits only where the
    copies can be (masking shortens, so they start at `begin` or up to the bytes it removed
    later)."""
    raw = normalize(content, mask_digits=False)
    grown = len(raw) - masked_size          # what the digits' runs add back, at most
    window = begin + 2 * grown + (copies + 1) * len(unit)
    pattern = re.compile(re.escape(unit).replace(b"0", rb"\d+"))
    for m in itertools.islice(pattern.finditer(raw, begin, window), 16):      # each one a count of copies
        first, last = _copies(raw, len(m.group()), m.end())
        if (last - first + 2) // len(m.group()) >= copies:
            return True
    return False


_ITEM_MARK_RE = re.compile(r"^\s*(?:[-*+•]\s*|\d+[.)]\s*|#+\s*)*")


def _lines_from_input(content: str, share: float, input_text: Optional[str], settings) -> bool:
    """Copies that differ only in their digits, whose lines are lines of the input
    (list marks aside), are what the summarizer picked from the history (a list of
    services with their latencies): not a loop. A looping model writes lines of its
    own in the shape of the history's (`17:33:17 - web-5: - No error.`), not its lines."""
    if not input_text:
        return False
    def cells(text: str) -> str:        # table pipes and spacing aside
        return _WS_RE.sub(" ", text.replace("|", " ")).strip()

    tail = content[-max(1, int(len(content) * share)):]
    # at most 64 lines, from the end: each is looked for in the whole input
    lines = [cells(_ITEM_MARK_RE.sub("", ln)) for ln in tail.splitlines()[-64:]]
    lines = [ln for ln in lines if len(ln) >= 8]
    if len(lines) < 2:
        return False
    source = cells(input_text)
    # distinct lines: one input sentence repeated with a counter is still a loop
    return len({ln for ln in lines if ln in source}) >= settings.loop_lines_from_input * len(lines)


def _copied_from_input(data: bytes, stretch: Stretch, input_text: Optional[str]) -> bool:
    """Most of a stretch's 32-byte pieces stand in the input: the summary copied it."""
    if not input_text:
        return False
    source = normalize(input_text)
    step = max(64, stretch.length // 32)          # at most ~32 probes, each looked for in the input
    probes = [data[i:i + 32] for i in range(stretch.start, stretch.start + stretch.length - 32, step)]
    return bool(probes) and sum(1 for p in probes if p in source) >= 0.5 * len(probes)


def _names_list(content: str, unit: bytes, copies: int, begin: int, masked_size: int, settings) -> bool:
    """Whether copies of a one-word unit (digits set aside) are a list of names: each
    copy's numbers new (none repeats) and not a count (the steps between one and the next
    mostly differ): `rfc1321.txt rfc1939.txt rfc2104.txt ...` (a real README), a summary's
    `SUP-77410, SUP-77415, SUP-77422, ...`. A loop through a counter or a clock steps
    evenly (`-xwininfo(14)`, `(15)`, ...) or comes back to its numbers; a loop that writes
    new numbers does it in longer units (`**web-9** **17:49**`, dates with a counter),
    which this leaves alone."""
    word = unit.strip()
    if len(word) >= settings.loop_min_unit_bytes or copies >= settings.loop_min_copies_numbers \
            or b" " in word or b"0" not in word:
        return False
    numbers = _copy_numbers(content, unit, copies, begin, masked_size)
    if len(numbers) < 3 or len(set(numbers)) < len(numbers):
        return False
    return _steps_vary([int(b"".join(n)) for n in numbers], settings, 1.0)


def _copy_numbers(content: str, unit: bytes, most: int, begin: int, masked_size: int) -> list:
    """The numbers of each of the first `most` copies of the unit (digits set aside), as
    tuples of digit runs: looked for in the text with its digits only where the copies can
    be (masking shortens, so they start at `begin` or up to the bytes it removed later)."""
    raw = normalize(content, mask_digits=False)
    grown = len(raw) - masked_size
    pattern = re.compile(re.escape(unit.strip()).replace(b"0", rb"(\d+)"))
    window = begin + 2 * grown + (most + 1) * len(unit)
    return [m.groups() for m in itertools.islice(pattern.finditer(raw, begin, window), most)]


def _steps_vary(values: list, settings, distinct: float) -> bool:
    """The numbers differ (`distinct` of them) and the steps between them mostly do too
    (loop_list_min_distinct_steps): not a count, a clock that ticks evenly, or a value
    that comes back."""
    if len(set(values)) < distinct * len(values):
        return False
    steps = [b - a for a, b in zip(values, values[1:])]
    return len(set(steps)) >= settings.loop_list_min_distinct_steps * len(steps)


def _table(content: str, unit: bytes, copies: int, begin: int, masked_size: int, settings) -> bool:
    """Whether the copies of a unit (digits set aside) are rows of data, the text ending on a
    whole row (its last line the line before it, digits aside): at least one of the
    unit's numbers is new in every copy and not a count (`| web-1 | ok | 112 ms |`, `| web-2
    | ok | 98 ms |`, …: the latencies). A looping model counts (`1. This is a very good
    document.`, `## 1.4.0`), comes back to its numbers (`exit 0 (692 ms)` twice) or, when it
    writes new ones, runs on to max_tokens and is cut inside a row, or past a table's length
    (callers ask only of text that ends on a whole row, _ends_on_row, and is not cut off, under
    loop_min_copies_numbers copies)."""
    rows = _copy_numbers(content, unit, copies + 1, begin, masked_size)
    if len(rows) < 3 or len({len(r) for r in rows}) != 1:
        return False
    # a long table's column may hold a value twice: loop_table_min_distinct of them new
    return any(_steps_vary([int(r[j]) for r in rows], settings, settings.loop_table_min_distinct)
               for j in range(len(rows[0])))


def _ends_on_row(content: str) -> bool:
    """Whether the text's last line is the line before it, digits aside: it ends on a whole row."""
    last = content.rstrip()[-4096:].splitlines()[-2:]
    return len(last) == 2 and _DIGITS_RE.sub("0", last[0]).strip() == _DIGITS_RE.sub("0", last[1]).strip()


def _describe(unit: bytes) -> str:
    return unit[:200].decode("utf-8", "ignore").strip()[:50]


def _quoted(unit: bytes, content: str) -> str:
    """The unit as the summary first writes it, its digits and spacing its own (`DATA-771`, where
    the unit reads `DATA-0`): what a reason quotes. The unit itself when it is not found."""
    shown = _describe(unit)
    if not any(c.isdigit() or c.isspace() for c in shown):
        return shown
    pattern = "".join(r"\d+" if c == "0" else r"\s+" if c.isspace() else re.escape(c)
                      for c in re.sub(r"\s+", " ", shown))
    m = re.search(pattern, content)
    return m.group(0)[:80] if m else shown


def _line_run(content: str) -> int:
    """The longest run of identical consecutive lines (digits set aside, spacing stripped)."""
    best = run = 0
    prev = None
    for line in content.splitlines():
        key = _DIGITS_RE.sub("0", line).strip()
        if not key:
            continue
        run = run + 1 if key == prev else 1
        prev = key
        best = max(best, run)
    return best


def _verdict(content: str, data: bytes, stretch: Stretch, settings, input_text: Optional[str], cut_off):
    """(loop?, unit, copies, at_end, share, finding-or-None) for one candidate stretch;
    `cut_off()`: cutoff.detect's findings on the text."""
    unit, copies, end = period(data, stretch.start, stretch.length, settings,
                               to_end=stretch.start + stretch.length >= len(data))
    if not copies:
        return False, unit, 0, False, 0.0, None
    at_end = end >= len(data)
    share = copies * len(unit) / len(data)
    word_for_word = None          # measured once, when needed
    if at_end:
        loop = masked = _enough(copies, unit, True, settings)
        if not loop and _enough(copies, unit, False, settings):
            # enough copies only if they are word for word, or if max_tokens cut the text
            # inside one: three lines that differ in a version number, whole, are a list
            loop = word_for_word = _word_for_word(content, settings)
            if not loop and cut_off():
                loop = masked = True
    else:
        loop = masked = share >= settings.loop_min_share and copies >= settings.loop_min_copies_inside \
            and _enough(copies, unit, True, settings)
        if not loop and share >= settings.loop_min_share and _enough(copies, unit, False, settings) \
                and len(unit) >= settings.loop_min_unit_bytes \
                and _verbatim(content, unit, copies, max(0, end - copies * len(unit) - len(unit)), len(data)):
            # the seed's phrase three times word for word, back to back, over loop_min_share of
            # the summary: a loop that went on with variants (a function pasted three times,
            # then again with its body changing, until max_tokens)
            loop, masked = True, False
        begin = end - copies * len(unit)
        if loop and data.count(b"```", 0, begin) % 2 and data.find(b"```", end) >= 0 \
                and _line_run(content) >= max(2, copies - 1):
            # whole lines repeated inside a code block that closes after them: quoted output
            # (a log of identical retries). A fragment repeated inside a line (`-f "a.yml"`
            # 22 times in one command, a real model loop) is no quotation.
            return False, unit, copies, at_end, share, Finding(
                "repetitive", f"{_describe(unit)!r} repeated {copies} times inside a code block that closes after "
                "them: quoted output", failure=False,
                figures={"unit": _describe(unit), "copies": copies, "loop_share": round(share, 3)})
    if loop and masked and _names_list(content, unit, copies, max(0, end - copies * len(unit) - len(unit)),
                                       len(data), settings):
        return False, unit, copies, at_end, share, None
    if loop and masked and at_end and copies < settings.loop_min_copies_numbers and _ends_on_row(content) \
            and not cut_off() \
            and _table(content, unit, copies, max(0, end - copies * len(unit) - len(unit)), len(data), settings):
        # rows of data (`| web-1 | ok | 112 ms |` …): each says something new
        return False, unit, copies, at_end, share, None
    if loop and masked and _lines_from_input(content, share, input_text, settings) \
            and not (word_for_word if word_for_word is not None else _word_for_word(content, settings)):
        return False, unit, copies, at_end, share, Finding(
            "repetitive", f"{_quoted(unit, content)!r} repeated {copies} times with only its numbers changing, each a line "
            "of the input: picked from the history", failure=False,
            figures={"unit": _describe(unit), "copies": copies, "loop_share": round(share, 3)})
    return loop, unit, copies, at_end, share, None


def detect(content: str, settings, input_text: Optional[str] = None, cut_off: Optional[Callable[[], list]] = None) -> list:
    """`cut_off`: cutoff.detect's findings on `content`, measured once for whoever asks first
    (detectors.detect_all asks too); measured here when not given."""
    if cut_off is None:
        def cut_off():
            return cutoff.detect(content, settings)
    data = normalize(content)
    n = len(data)
    if n < settings.loop_min_bytes:
        return []
    short = n < 2 * settings.loop_block_bytes
    if not short:
        nov = measure(data, settings)
    else:       # one block: the end is read below; the ratio is for the reason line
        nov = Novelty(n, 0.0, None, None)
    # Candidates. The end first: a loop stops only at max_tokens, so its unit is read
    # right there; a loop's last bytes stand one unit earlier too, so if they do not,
    # no loop ends here. Then a long stretch inside the text.
    ends_repeating = 0 <= data.find(data[-12:], max(0, n - 12 - settings.loop_max_unit_bytes), n - 1) < n - 12
    candidates = []
    if ends_repeating:
        tail = min(n, settings.loop_tail_bytes)
        candidates.append(Stretch(n - tail, tail))
        if nov.final is not None:
            candidates.append(nov.final)
    if nov.longest is not None and not (ends_repeating and nov.longest == nov.final) \
            and nov.longest.length >= settings.loop_min_share * n:
        # (the final stretch again is read once: the same stretch gives the same verdict)
        candidates.append(nov.longest)
    whole = None
    if short and not candidates and content.count("\n") >= settings.loop_min_copies_short:
        # under two blocks, the whole text is the one stretch left to read: a line repeated
        # loop_min_copies_short times or more back to back, then a heading (`- ook-l, ook-l`
        # 18 times) is a loop; fewer (four log lines that differ in their times, a wrapped
        # event quoted three times) are what a short summary quotes, and are not looked at
        whole = Stretch(0, n)
        candidates.append(whole)
    warn = None
    for stretch in candidates:
        loop, unit, copies, at_end, share, note = _verdict(content, data, stretch, settings, input_text, cut_off)
        if stretch is whole and not at_end and copies < settings.loop_min_copies_short:
            continue
        if note is not None:
            return [note]
        looped = copies * len(unit)
        if not loop and not (warn is None and copies >= 2 and looped >= settings.loop_warn_bytes):
            continue        # nothing to report of this stretch (its figures are not made)
        figures = {"unit": _describe(unit), "unit_bytes": len(unit), "copies": copies, "loop_bytes": looped,
                   "loop_share": round(share, 3), "runs_to_end": at_end,
                   "compression_ratio": nov.ratio or round(n / max(1, compressed_size(data)), 2)}
        what = f"{_quoted(unit, content)!r} repeated {copies} times"
        if loop and _explained_by_input(unit, copies, input_text):
            return [Finding("repetitive", f"{what}, as in its input", failure=False, figures=figures)]
        if loop:
            where = "to the end (the model looped until max_tokens)" if at_end else "back to back"
            return [Finding("repetition", f"{what} {where} (digits set aside), {share:.0%} of the summary; "
                            "the summarizer looped, retry with a repetition penalty or a smaller max_tokens",
                            figures=figures)]
        if warn is None and copies >= 2 and looped >= settings.loop_warn_bytes:
            warn = Finding("repetitive", f"{what} back to back ({share:.0%} of the summary)", failure=False,
                           figures=figures)
    # one template over and over with a word changing: no exact unit, nothing new for
    # most of the text up to a cut. On the real model outputs this was right once and
    # wrong twice (prose restating itself), so it is a warning, not a failure; looked
    # for only when nothing else was found and the text ends in a low-novelty stretch.
    final = nov.final if warn is None else None
    if final is not None and not cut_off():
        final = None
    if final is not None and final.length < settings.loop_template_min_share * n <= 4 * settings.loop_template_min_bytes:
        # in a short text the coarse blocks may miss the start of the stretch: measure finely
        fine = measure(data, settings, settings.loop_fine_block_bytes, settings.loop_fine_max_novelty).final
        final = fine if fine is not None and fine.length > final.length else final
    if final is not None \
            and final.length >= max(settings.loop_template_min_bytes, settings.loop_template_min_share * n) \
            and not _copied_from_input(data, final, input_text):
        unit = data[final.start:final.start + 48]
        warn = Finding("repetitive", f"text like {_quoted(unit, content)!r} repeated with only a few words changing, "
                       f"{final.length / n:.0%} of the summary, up to a cut", failure=False,
                       figures={"unit": _describe(unit), "loop_bytes": final.length,
                                "loop_share": round(final.length / n, 3), "runs_to_end": True})
    return [warn] if warn else []
