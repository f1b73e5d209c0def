"""Collect real grounded and off-topic summary pairs for `ungrounded` (issue #12).

Nobody on this project wrote these texts. Each Debian manual page (manpages-l10n and
the other packages collect_human.py lists; English from the pages installed) gives a
human-written overview and what it condenses:

- summary: the NAME line and the DESCRIPTION's first paragraphs (120-700 characters),
- input: the rest of the page after them (DESCRIPTION, OPTIONS, EXAMPLES, ...), cut to
  4,000 characters, the overview's own text not in it.

evaluate.py pairs each overview with its own page (grounded: it paraphrases, it is
short, it names the command once) and with another page in the same language
(off-topic: same genre, same vocabulary of files and options, another subject).

    python3 tests/corpus/real/collect_grounding.py > tests/corpus/real/grounding.jsonl
"""
from __future__ import annotations

import json
import random
import re
import sys

from collect_human import _SKIP_SECTIONS, man_pages, owner, render_man

PER_LANG = 16


def split_page(text: str):
    """(overview, rest) of a rendered page, or None."""
    sections, cur = [], None
    for line in text.splitlines():
        if line and not line[0].isspace():
            cur = [line.strip(), []]
            sections.append(cur)
        elif cur is not None:
            cur[1].append(" ".join(line.split()))
    # the page's header and footer lines (`LS(1)  User Commands  LS(1)`) are not sections
    sections = [s for s in sections if not re.search(r"\(\d\w*\)$", s[0])]
    if len(sections) < 3:
        return None
    paras = lambda lines: [p for p in "\n".join(lines).split("\n\n") if p.strip()]   # noqa: E731
    name = " ".join(" ".join(sections[0][1]).split())
    desc_i = next((i for i, s in enumerate(sections) if i >= 2 and len(" ".join(s[1])) > 200), None)
    if not name or desc_i is None:
        return None
    desc = [p.replace("\n", " ") for p in paras(sections[desc_i][1])]
    overview, k = name, 0
    while k < len(desc) and len(overview) < 120:
        overview += "\n" + desc[k]
        k += 1
    if not 120 <= len(overview) <= 700:
        return None
    rest = desc[k:]
    for title, lines in sections[desc_i + 1:]:
        if _SKIP_SECTIONS.match(title):
            continue
        rest.append(title)
        rest.extend(p.replace("\n", " ") for p in paras(lines))
    body = "\n".join(rest)[:4000]
    if len(body) < 800:
        return None
    return overview, body


def main() -> None:
    rng = random.Random(20261202)
    for lang, files in man_pages(rng):
        got = 0
        for path in files:
            if got >= PER_LANG:
                break
            if "gcloud" in path:         # thousands of near-identical generated pages
                continue
            parts = split_page(render_man(path))
            if not parts:
                continue
            name = path.rsplit("/", 1)[1][:-3]
            print(json.dumps({"id": f"gr-{lang}-{name}", "lang": lang, "source": f"{owner(path)}: {path}",
                              "summary": parts[0], "input": parts[1]}, ensure_ascii=False))
            got += 1
        print(f"{lang}: {got}", file=sys.stderr)


if __name__ == "__main__":
    main()
