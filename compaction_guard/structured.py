"""L3 in the shape the request asked for: every section, filled by extraction, no model.

When a request demands sections (contract.Contract), the deterministic last level must
meet them too, or the agent refuses it (OpenClaw's safeguard cancels the compaction and
stores nothing). `build` writes each heading asked for, in order, and under it what the
conversation holds of that kind, as lines copied from it (its words and its language):

- asks (`Pending user asks`, `Original Request`, a goal or intent): the request a prompt
  says must come first, as that prompt says to write it, then the latest user message;
- identifiers (`Exact identifiers`, critical context, files, references): every identifier
  the request's audit demands, then the conversation's own (contract.extract_identifiers and
  the guard's identifier shapes), one per line;
- decisions, open tasks, constraints: the sentences that say so (a decision taken, a next
  step or something still to do, a must / never / only), the latest first kept;
- anything else (progress, context, a template's own heading): the turns in order, shared
  between those sections (the first gets the earliest), each slice cut to its share by
  summarizers.truncate_l3 (its head and tail);
and `None.` where nothing was found. A previous summary with the same headings keeps its
lines, written first (the asks and identifiers whole; elsewhere as far as the share left after
the conversation's own lines goes: a repeated L3 says what is new). Within `budget` tokens: the asks and identifiers are kept whole (the audit needs
them), the rest shares what is left. One marker line says a fallback wrote it. With a
wrapper asked for (`<summary>`, Gemini CLI's `<state_snapshot>`), the whole goes inside it;
an XML template's child tags (`<overall_goal>`) are written as elements, each closed. With a closing line asked for
(`Expand for details about: ...`), it ends with that line, listing the identifiers the
conversation held that the answer left out (else "the rest of the conversation").
"""
from __future__ import annotations

import re
from typing import Optional

from .contract import Contract, first_ask_line, turns
from .summarizers import _cut_to_tokens, truncate_l3
from .tokens import estimate_tokens

_KINDS = [
    ("user_messages", re.compile(r"user messages", re.I)),
    ("ask", re.compile(r"pending user ask|original request|user request|primary request|request|goal|intent", re.I)),
    ("identifier", re.compile(r"identifier|critical context|files|artifact|\breference|technical concept", re.I)),
    ("progress", re.compile(r"(?<!in )progress", re.I)),        # the turns in order, as "other"
    ("decision", re.compile(r"decision", re.I)),
    ("todo", re.compile(r"todo|to-do|next step|pending task|open task|remaining|in progress|task state", re.I)),
    ("constraint", re.compile(r"constraint|rule|preference|requirement", re.I)),
]
_CUES = {
    "decision": re.compile(r"\b(?:decid\w*|agreed|chose|chosen|choose|go with|going with|settled|approved|selected|"
                           r"will use|we use|switch(?:ed)? to|instead of|picked|use \w+ for)\b", re.I),
    "todo": re.compile(r"\b(?:todo|to do|next|then|later|need to|needs to|should|still|pending|remaining|left to|"
                       r"will|plan to|open|follow[- ]up|tomorrow)\b", re.I),
    "constraint": re.compile(r"\b(?:must|never|always|only|do not|don't|without|at most|at least|no more than|"
                             r"required|require|avoid|keep|forbidden|not allowed)\b", re.I),
}
_SENT_RE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
NONE = "None."
_XML_HEAD_RE = re.compile(r"<[a-z][a-z0-9_]*>")
_QUANTITY_RE = re.compile(r"[\d.,]+ \S+")
MIN_SHARE = 32          # tokens a section gets at least: a line of the conversation, not a word
# the guard's own L3 marker (detectors/markers.py: skill-truncated, "compaction-resilience-guard" in it)
NOTE = "[TRUNCATED: written by compaction-resilience-guard L3 from the conversation's own lines, no model]"


def kind_of(heading: str) -> str:
    text = re.sub(r"^#+\s*", "", heading).replace("_", " ")
    for kind, rx in _KINDS:
        if rx.search(text):
            return kind
    return "other"


def _sections_of(summary: Optional[str], headings) -> dict:
    """A previous summary's lines under each of `headings` (those it has)."""
    if not summary:
        return {}
    out, cur = {}, None
    wanted = set(headings)
    for line in summary.splitlines():
        s = line.strip()
        if s in wanted:
            cur = s
            out.setdefault(cur, [])
            continue
        if s.startswith(("#", "</")):
            cur = None
            continue
        s = re.sub(r"^[-*][ \t]+", "", s)          # a bullet: written again by _bullet
        if cur is not None and s and s.lower().rstrip(".") not in ("none", "none captured", "(none)") \
                and s not in out[cur] and s != NOTE:
            out[cur].append(s)
    return out


def _sentences(text: str) -> list:
    return [s.strip() for s in _SENT_RE.split(text) if len(s.strip()) > 2]


def _identifiers(conversation: str, contract: Contract) -> list:
    from .contract import extract_identifiers
    from .detectors.identifiers import scan
    out = list(contract.identifiers)
    seen = {i.lower() for i in out}
    found = []
    for ident in extract_identifiers(conversation) + [i for i, _ in scan(conversation)]:
        if ident.lower() not in seen:
            seen.add(ident.lower())
            found.append(ident)
    # names before measurements ("342 ms", "38.2 GB"): a log's durations are many and say little
    found.sort(key=lambda i: bool(_QUANTITY_RE.fullmatch(i)))
    return (out + found)[:40]


def _bullet(line: str) -> str:
    line = line.strip()
    return line if line.startswith(("- ", "* ", "1.")) else f"- {line}"


def build(conversation: str, previous: Optional[str], contract: Contract, settings, budget: int) -> str:
    """The L3 answer to a request with this contract (see the module doc)."""
    msgs = turns(conversation) or [("User", conversation)]
    heads = contract.sections or contract.outline
    if not heads:
        cut = truncate_l3(conversation, settings, budget).text
        return _wrapped(_with_footer(cut, conversation, contract), contract)
    kept = _sections_of(previous, heads)
    by_kind = {}
    user_sentences = [s for who, t in msgs if who == "User" for s in _sentences(t)]
    all_sentences = [s for _, t in msgs for s in _sentences(t)]
    for kind in ("decision", "todo"):
        by_kind[kind] = [s for s in reversed(all_sentences) if _CUES[kind].search(s)]
    by_kind["constraint"] = [s for s in reversed(user_sentences) if _CUES["constraint"].search(s)]
    asks = []
    if contract.first_ask:
        asks.append(first_ask_line(contract.first_ask))
    latest = contract.latest_ask or next((t for who, t in reversed(msgs) if who == "User" and t), None)
    if latest:
        asks.append(" ".join(latest.split())[:600])
    by_kind["ask"] = asks
    if latest and not by_kind["todo"]:       # an unanswered latest request is what is left to do
        by_kind["todo"] = [asks[-1]]
    by_kind["identifier"] = _identifiers(conversation, contract)
    by_kind["user_messages"] = [" ".join(t.split())[:600] for who, t in msgs if who == "User" and t]
    protected = {"ask", "identifier"}
    fixed = estimate_tokens("\n\n".join(heads)) + estimate_tokens(NOTE) + 4 * len(heads)
    blocks = {}
    for h in heads:
        k = kind_of(h)
        lines = list(kept.get(h, []))
        if k in protected:
            lines += [x for x in by_kind[k] if x not in lines]
            blocks[h] = lines
    used = fixed + sum(estimate_tokens("\n".join(v)) for v in blocks.values())
    others = [h for h in heads if h not in blocks]
    share = max(MIN_SHARE, max(0, budget - used) // max(1, len(others))) if others else 0
    # the sections of no known kind share the turns in order (progress first, context last),
    # each its slice of the turns' own text, no speaker labels
    texts = [" ".join(t.split()) for _, t in msgs if t]
    plain_kinds = [h for h in others if kind_of(h) not in _CUES and kind_of(h) != "user_messages"]
    slices = {}
    for n, h in enumerate(plain_kinds):
        lo, hi = n * len(texts) // len(plain_kinds), (n + 1) * len(texts) // len(plain_kinds)
        slices[h] = "\n".join(texts[lo:max(hi, lo + 1)])
    for h in others:
        k = kind_of(h)
        lines = list(kept.get(h, []))
        if k in _CUES or k == "user_messages":
            cands = by_kind[k]
        else:
            cut = truncate_l3(slices.get(h, ""), settings, share).text
            cands = [x for x in cut.splitlines() if x.strip() and not x.startswith("[TRUNCATED")]
        # the conversation's own lines are chosen first, then the previous summary's fill what is
        # left (a summary that kept only the old lines would say nothing of the new turns); they
        # are written in that summary's order, the previous summary's first
        fresh = [c for c in cands if c not in lines]
        chosen, cost = {}, 0
        for n, x in sorted(enumerate(lines + fresh), key=lambda p: p[0] < len(lines)):
            t = estimate_tokens(x) + 1
            if cost + t > share and chosen:
                break
            if cost + t > share:              # the first line alone is over the share: its head
                x = _cut_to_tokens(x, max(8, share - cost - 1))
                t = estimate_tokens(x) + 1
            if x not in chosen.values():
                chosen[n] = x
                cost += t
        blocks[h] = [chosen[n] for n in sorted(chosen)]
    parts = []
    for h in heads:
        lines = blocks.get(h) or []
        body = "\n".join(x if i == 0 and contract.first_ask and kind_of(h) == "ask" else _bullet(x)
                         for i, x in enumerate(lines)) if lines else NONE
        parts.append(f"{h}\n{body}" + (f"\n</{h[1:]}" if _XML_HEAD_RE.fullmatch(h) else ""))
    return _wrapped(_with_footer("\n\n".join(parts) + f"\n\n{NOTE}", conversation, contract), contract)


def _wrapped(text: str, contract: Contract) -> str:
    return f"<{contract.wrapper}>\n{text}\n</{contract.wrapper}>" if contract.wrapper else text


def _with_footer(text: str, conversation: str, contract: Contract) -> str:
    """The text ending with the closing line the request asked for, when it asked for one."""
    if not contract.footer:
        return text
    from .detectors.identifiers import scan
    left = list(dict.fromkeys(i for i, _ in scan(conversation) if i not in text))[:12]
    return f"{text}\n\n{contract.footer} {', '.join(left) if left else 'the rest of the conversation'}"
