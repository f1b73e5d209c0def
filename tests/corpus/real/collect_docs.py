"""Collect real structured documents as *good* text in the shape of a compaction summary.

Good summaries are rarely flowing prose: Markdown headings, bullet lists, file paths,
versions, ticket and commit ids, code blocks, links, a list of identifiers at the end
(OpenClaw's safeguard summary closes on `## Exact identifiers`). The human set
(collect_human.py) is prose and catalogues; this one is what people write in that other
shape: the READMEs, NEWS files, changelogs and package descriptions Debian installs
(/usr/share/doc, and the METADATA of Debian's Python modules), none written here.

Each document gives two excerpts of at most MAX_CHARS, cut only between paragraphs (a
code fence is never split): its head, which ends where a paragraph ends, and its tail,
which ends where the document ends. A writer stopped there, so neither is cut off:
`cut_off` warnings on them are false, and so is any failure (the evaluation reads
them as the set `docs`). Each keeps the package and file it came from (licences in
/usr/share/doc/<package>/copyright). A language is given when two identifiers that are
not the guard's (lingua, CLD2) agree on the excerpt's prose (label_language.py's rule);
"und" otherwise.

    pip install lingua-language-detector pycld2      # the labellers
    python3 tests/corpus/real/collect_docs.py > tests/corpus/real/docs.jsonl
"""
from __future__ import annotations

import email
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MAX_CHARS = 2500
MIN_CHARS = 300
SAMPLE = 500
SEED = 12
_FENCE = re.compile(r"^\s*(```|~~~)")
PATTERNS = ("/usr/share/doc/*/README*", "/usr/share/doc/*/NEWS*", "/usr/share/doc/*/*.md",
            "/usr/share/doc/*/*.md.gz", "/usr/share/doc/*/changelog.Debian.gz", "/usr/share/doc/*/TODO*",
            "/usr/share/doc/*/*.rst", "/usr/lib/python3/dist-packages/*.dist-info/METADATA")


def owner(path: str) -> str:
    try:
        out = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True, text=True,
                             timeout=20).stdout
        return out.split(":")[0].strip()
    except Exception:
        return ""


def read(path: str) -> str:
    """The document's text, or "" (HTML, binary, not UTF-8)."""
    if re.search(r"\.(html?|pdf|png|svg)(\.gz)?$", path):
        return ""
    try:
        if path.endswith(".gz"):
            text = gzip.open(path, "rt", encoding="utf-8", errors="strict").read()
        else:
            text = open(path, encoding="utf-8", errors="strict").read()
    except (OSError, UnicodeDecodeError, EOFError):
        return ""
    if path.endswith("METADATA"):
        text = email.message_from_string(text).get_payload() or ""
    if "\x00" in text or "\ufffd" in text:
        return ""
    return text


def paragraphs(text: str) -> list:
    """Paragraphs separated by blank lines, a code fence kept whole."""
    out, cur, fence = [], [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fence = not fence
        if not line.strip() and not fence:
            if cur:
                out.append("\n".join(cur).rstrip())
                cur = []
        else:
            cur.append(line)
    if cur:
        out.append("\n".join(cur).rstrip())
    return out


def excerpt(paras: list, tail: bool = False) -> str:
    """The first paragraphs (the last ones, with `tail`) that fit in MAX_CHARS."""
    out, size = [], 0
    for p in (reversed(paras) if tail else paras):
        if size + len(p) + 2 > MAX_CHARS:
            break
        out.append(p)
        size += len(p) + 2
    text = "\n\n".join(reversed(out) if tail else out).strip()
    return text if len(text) >= MIN_CHARS else ""


def language(text: str, lingua_detector) -> str:
    """The excerpt's language when lingua and CLD2 agree on its prose (label_language.py), else "und"."""
    from label_language import both_languages
    lingua, cld = both_languages(text, lingua_detector)
    return lingua if lingua and lingua == cld else "und"


def main() -> int:
    from lingua import LanguageDetectorBuilder
    detector = LanguageDetectorBuilder.from_all_languages().build()
    paths = sorted({p for pat in PATTERNS for p in glob.glob(pat) if os.path.isfile(p)})
    seen, rows = set(), []
    for path in paths:
        paras = paragraphs(read(path))
        if len(paras) < 2:
            continue
        for part, text in (("head", excerpt(paras)), ("tail", excerpt(paras, tail=True))):
            if not text or text in seen:
                continue
            seen.add(text)
            rows.append({"path": path, "part": part, "text": text})
    random.Random(SEED).shuffle(rows)
    out = []
    for r in rows:
        if len(out) >= SAMPLE:
            break
        pkg = owner(r["path"])
        if not pkg:
            continue        # only what a Debian package installed (its copyright file says the licence)
        name = re.sub(r"[^A-Za-z0-9.+-]+", "_", r["path"].split("/usr/", 1)[-1])
        out.append({"id": f"doc-{name}-{r['part']}", "lang": language(r["text"], detector), "part": r["part"],
                    "source": f"{pkg}: {r['path']}", "text": r["text"]})
    for r in sorted(out, key=lambda r: r["id"]):
        print(json.dumps(r, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
