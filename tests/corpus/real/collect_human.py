"""Collect real human text in many languages as *good* text for the evaluation.

Nobody on this project wrote these texts: they are short excerpts of Debian's
translated manual pages (manpages-l10n, manpages-ja, manpages-zh), of the Debian
Reference (debian-reference-*) and of translated message catalogues (GLib, GTK,
APT, PackageKit, ...), cut to the size of a compaction summary. Each excerpt keeps
the package and file it came from; their licences (GPL and other free licences)
are in /usr/share/doc/<package>/copyright on a Debian system.

Run on a Debian machine with the packages installed (see PACKAGES) to rebuild
human.jsonl; the evaluation reads the committed human.jsonl, not the packages.

    apt-get install $(python3 tests/corpus/real/collect_human.py --packages)
    python3 tests/corpus/real/collect_human.py > tests/corpus/real/human.jsonl
"""
from __future__ import annotations

import gettext
import glob
import html.parser
import json
import os
import random
import re
import subprocess
import sys

PACKAGES = ("manpages-de manpages-fr manpages-ja manpages-zh manpages-ru manpages-es manpages-pl manpages-uk "
            "manpages-vi manpages-tr manpages-el manpages-cs manpages-it manpages-pt-br manpages-nl manpages-sv "
            "manpages-fi manpages-hu manpages-ro manpages-id debian-reference-zh-cn debian-reference-ja "
            "debian-reference-de debian-reference-fr")
PER_LANG = 24
# man page directory -> language tag
MAN_LANGS = {"man1": "en", "de": "de", "fr": "fr", "es": "es", "it": "it", "pt_BR": "pt", "nl": "nl", "pl": "pl",
             "cs": "cs", "ru": "ru", "uk": "uk", "el": "el", "tr": "tr", "vi": "vi", "hu": "hu", "ro": "ro",
             "fi": "fi", "sv": "sv", "id": "id", "ja": "ja", "zh_CN": "zh", "zh_TW": "zh-tw", "ko": "ko"}
# message catalogues for scripts no man page covers here
MO_LANGS = {"ar": "ar", "he": "he", "hi": "hi", "th": "th", "fa": "fa", "ka": "ka", "bn": "bn", "ta": "ta",
            "ko": "ko", "am": "am", "hy": "hy"}
REF_LANGS = {"zh-cn": "zh", "ja": "ja", "de": "de", "fr": "fr"}


def owner(path: str) -> str:
    try:
        out = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, timeout=20).stdout
        return out.split(":")[0].strip() or "unknown"
    except Exception:
        return "unknown"


def render_man(path: str) -> str:
    env = dict(os.environ, LANG="C.UTF-8", MANWIDTH="4000")
    try:
        out = subprocess.run(["man", "--nh", "--nj", "-l", path], capture_output=True, text=True, env=env,
                             timeout=30).stdout
    except Exception:
        return ""
    return re.sub(r".\x08", "", out)


_SKIP_SECTIONS = re.compile(r"^(?:ÜBERSETZUNG|TRADUCTION|TRADUZIONE|TRADUCCIÓN|ПЕРЕВОД|VERTALING|TŁUMACZENIE|PŘEKLAD|"
                            r"ПЕРЕКЛАД|ΜΕΤΆΦΡΑΣΗ|ÇEVİRİ|BẢN DỊCH|FORDÍTÁS|TRADUCERE|KÄÄNNÖS|ÖVERSÄTTNING|"
                            r"PENERJEMAH|TRANSLATION|COPYRIGHT|AUTHOR|AUTOR|AUTEUR|翻訳|译者|COLOPHON|KOLOFON)", re.I)


def man_excerpts(text: str) -> list:
    """Paragraphs of prose sections, joined to summary size (200-2500 chars)."""
    paras, skip = [], False
    for line in text.splitlines():
        if line and not line[0].isspace():          # a section heading
            skip = bool(_SKIP_SECTIONS.match(line.strip())) or "SYNOPSIS" in line or "ÜBERSICHT" in line
            paras.append(None)
            continue
        s = " ".join(line.split())
        if skip or not s:
            continue
        paras.append(s)
    out, cur = [], []
    for p in paras + [None]:
        if p is None or sum(map(len, cur)) > 1800:
            body = "\n".join(cur)
            if len(body) >= 200:
                out.append(body[:2500])
            cur = []
            if p is None:
                continue
        cur.append(p)
    return out


class _Paras(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.paras, self.cur, self.depth = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "p":
            self.depth, self.cur = 1, []

    def handle_endtag(self, tag):
        if tag == "p" and self.depth:
            self.depth = 0
            s = " ".join("".join(self.cur).split())
            if s:
                self.paras.append(s)

    def handle_data(self, data):
        if self.depth:
            self.cur.append(data)


def ref_excerpts(path: str) -> list:
    p = _Paras()
    with open(path, encoding="utf-8", errors="replace") as fh:
        p.feed(fh.read())
    out, cur = [], []
    for para in p.paras:
        cur.append(para)
        if sum(map(len, cur)) >= 500:
            out.append("\n\n".join(cur)[:2500])
            cur = []
    return out


def mo_messages(path: str) -> list:
    try:
        with open(path, "rb") as fh:
            cat = gettext.GNUTranslations(fh)._catalog
    except Exception:
        return []
    out = []
    for k, v in cat.items():
        if not isinstance(v, str) or not k or isinstance(k, tuple):
            continue
        if len(v) >= 30 and "%" not in v and "{" not in v and "\\" not in v and not v.isascii():
            out.append(" ".join(v.split()))
    return out


def man_pages(rng: random.Random):
    """(language, the section-1 manual pages of that language in a shuffled order)."""
    for d, lang in MAN_LANGS.items():
        base = "/usr/share/man/man1" if d == "man1" else f"/usr/share/man/{d}/man1"
        files = sorted(glob.glob(base + "/*.gz"))
        rng.shuffle(files)
        yield lang, files


def main() -> None:
    if "--packages" in sys.argv:
        print(PACKAGES)
        return
    rng = random.Random(20261201)
    rows = []
    for lang, files in man_pages(rng):
        got = 0
        for f in files:
            if got >= PER_LANG:
                break
            ex = man_excerpts(render_man(f))
            if not ex:
                continue
            text = rng.choice(ex)
            if lang != "en" and text.isascii():
                continue                 # an untranslated page
            rows.append({"id": f"man-{lang}-{os.path.basename(f)[:-3]}", "lang": lang, "set": "human-man",
                         "source": f"{owner(f)}: {f}", "text": text})
            got += 1
    for code, lang in REF_LANGS.items():
        files = sorted(glob.glob(f"/usr/share/doc/debian-reference-common/docs/*.{code}.html"))
        pool = [(f, e) for f in files for e in ref_excerpts(f)]
        rng.shuffle(pool)
        for i, (f, text) in enumerate(pool[:PER_LANG // 2]):
            rows.append({"id": f"ref-{lang}-{i}", "lang": lang, "set": "human-ref",
                         "source": f"debian-reference-{code}: {f}", "text": text})
    for code, lang in MO_LANGS.items():
        files = sorted(glob.glob(f"/usr/share/locale/{code}/LC_MESSAGES/*.mo"))
        files = [f for f in files if "iso_" not in f and "xkeyboard" not in f]
        msgs = [(f, m) for f in files for m in mo_messages(f)]
        if len(msgs) < 20:
            continue
        for i in range(PER_LANG if lang != "ko" else PER_LANG // 2):
            k = rng.randint(3, 14)
            start = rng.randrange(0, max(1, len(msgs) - k))
            chunk = msgs[start:start + k]      # neighbours in one catalogue read as one document
            sep = rng.choice(["\n", " ", "\n- "])
            text = ("- " if sep == "\n- " else "") + sep.join(m for _, m in chunk)
            srcs = sorted({f for f, _ in chunk})
            rows.append({"id": f"mo-{lang}-{i}", "lang": lang, "set": "human-catalog",
                         "source": "; ".join(f"{owner(f)}: {f}" for f in srcs), "text": text[:2500]})
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))


if __name__ == "__main__":
    main()
