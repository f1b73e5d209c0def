"""What a compaction request asks the answer to be: its contract.

A compactor's prompt says what shape the summary must take, and the agent may reject one
that does not have it: OpenClaw's safeguard audits every summary before storing it and
cancels the compaction when the last attempt fails (nothing is written). So the shape is
part of what a good answer is, and every level of the chain must meet it.

`of_request(conversation, instructions)` reads, from the request's own text:
- `sections`: the headings asked for, in order. A list of heading lines the prompt gives
  (OpenClaw's safeguard: "these exact section headings:", then `## Decisions` ...), or a
  template of headings with bracketed hints (pi's "Use this EXACT format:", a split turn's
  `## Original Request` ...); the top level of them (a template's `### Done` is part of
  its `## Progress`). Headings inside an untrusted-data block are data, not asked for;
- `wrapper`: `summary` when the prompt asks for the summary inside `<summary>` tags;
  `state_snapshot` when it gives an XML template of that root (Gemini CLI: "The structure
  MUST be as follows: <state_snapshot> <overall_goal> ..."), whose child tags are then its
  outline (and the prompt's own markdown headings, `### GOAL`, are not asked of the answer);
- `outline`: the numbered sections a prompt says the summary should include (Claude Code's
  "Your summary should include the following sections:" then `1. Primary Request and
  Intent: ...`), or the items of an "Include:" list (Codex's "- Current progress and key
  decisions made", written `## Current progress and key decisions made`): the shape L3 is
  written in, not checked (a model may write them as it likes);
- `footer`: the start of a closing line the prompt asks every summary to end with (lossless-claw:
  `End with exactly: "Expand for details about: <comma-separated list ...>"` gives
  `Expand for details about:`);
- for a prompt that asks for exact identifiers and unresolved asks to be kept (OpenClaw's
  safeguard), what its audit then demands: `identifiers` (the opaque identifiers of the
  conversation's last ten messages, as OpenClaw extracts them), `latest_ask` (the last user
  message: the summary must share its keywords), `first_ask` (a request the prompt says must
  be the first item of `## Pending user asks`).

`audit(summary, contract)` is OpenClaw's `auditSummaryQuality` (compaction-safeguard-quality.ts,
2026.9.6) on the guard's side: the same checks, the same reason codes (`missing_section:<h>`,
`missing_identifiers:<a,b,c>`, `latest_user_ask_not_foregrounded`, `latest_user_ask_not_reflected`),
its keyword extractor's stop words shipped in data/openclaw_audit.json
(scripts/make_openclaw_audit_data.py reads them from the package). tests/test_openclaw_audit.py
compares it with OpenClaw's own function on the same inputs.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

DATA = Path(__file__).resolve().parent / "data" / "openclaw_audit.json"

_HEADING_RE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(\S.*?)[ \t]*$", re.M)
_UNTRUSTED_RE = re.compile(r"<untrusted-text>.*?</untrusted-text>|<<<BEGIN[A-Z_]*>>>.*?<<<END[A-Z_]*>>>", re.S)
_FENCES_RE = re.compile(r"<(conversation|previous-summary|previous-compaction-summary)>.*?</\1>", re.S)
_SUMMARY_TAG_RE = re.compile(r"<summary>", re.I)
# `End with exactly: "<label>: <what goes there>"`: the label is the closing line's required start
_FOOTER_RE = re.compile(r'End with exactly: "([^"<>\n]{3,80}?:)\s*<[^<>"\n]*>"')
# "... include the following sections:" then `1. Name: what goes there` lines
_OUTLINE_RE = re.compile(r"^[^\n]*\bsections\b[^\n]*:[ \t]*$", re.M | re.I)
_OUTLINE_ITEM_RE = re.compile(r"(\d{1,2})\.[ \t]+([^:\n]{3,60}):")
# "Include:" on a line of its own, then `- item` lines (Codex's handoff prompt)
_INCLUDE_RE = re.compile(r"^[ \t]*Include:[ \t]*\n((?:[ \t]*- [^\n]{3,120}\n?){2,})", re.M)
# XML templates whose root the guard knows a prompt to ask for, and their child tags
_XML_ROOTS = ("state_snapshot",)
_XML_CHILD_RE = re.compile(r"^[ \t]*<([a-z][a-z0-9_]*)>[ \t]*$", re.M)
_EXACT_IDS_RE = re.compile(r"preserve (?:all )?(?:opaque )?(?:identifiers|literal values) exactly", re.I)
_UNRESOLVED_RE = re.compile(r"unresolved (?:asks|user requests)", re.I)
_FIRST_ASK_RE = re.compile(r"Make the exact request below the first item in ## Pending user asks\..*?"
                           r"<untrusted-text>\n?(.*?)\n?</untrusted-text>", re.S)
# OpenClaw's serialized conversation: `[User]: ...`, `[Assistant]: ...`, `[Assistant tool calls]: ...`,
# `[Tool result]: ...`; a user's label may carry its sender (`[User sender={...}]:`)
_TURN_RE = re.compile(r"^\[(User|Assistant|Assistant tool calls|Tool result|Tool|System)(?:[^\]\n]*)\]: ?", re.M)


@dataclass(frozen=True)
class Contract:
    sections: tuple = ()
    wrapper: Optional[str] = None
    identifiers: tuple = ()
    latest_ask: Optional[str] = None
    first_ask: Optional[str] = None
    audited: bool = False           # OpenClaw's safeguard audit applies (its exact headings were asked for)
    footer: Optional[str] = None    # the closing line's required start
    outline: tuple = ()             # the numbered sections the prompt lists: L3's shape, not checked

    @property
    def structured(self) -> bool:
        return bool(self.sections or self.wrapper or self.footer or self.outline)

    def to_dict(self) -> dict:
        return {"sections": list(self.sections), "wrapper": self.wrapper, "identifiers": list(self.identifiers),
                "latest_ask": self.latest_ask, "first_ask": self.first_ask, "audited": self.audited,
                "footer": self.footer, "outline": list(self.outline)}


NONE = Contract()


@lru_cache(maxsize=1)
def _data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def instructions_of(request_text: str) -> str:
    """The request's instructions: its text with the fenced conversation and previous summary taken out."""
    return _FENCES_RE.sub(" ", request_text)


def required_sections(instructions: str) -> tuple:
    """The top-level headings the instructions ask for (two or more), in order."""
    text = _UNTRUSTED_RE.sub(" ", instructions)
    found = [(len(m.group(1)), m.group(0).strip()) for m in _HEADING_RE.finditer(text)]
    if len(found) < 2:
        return ()
    top = min(level for level, _ in found)
    out = []
    for level, line in found:
        if level == top and line not in out:
            out.append(line)
    return tuple(out) if len(out) >= 2 else ()


def turns(conversation: str) -> list:
    """(speaker, text) of a serialized conversation's messages, in order."""
    marks = list(_TURN_RE.finditer(conversation))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(conversation)
        out.append((m.group(1), conversation[m.end():end].strip()))
    return out


def xml_template(instructions: str) -> Optional[tuple]:
    """(root, child tags) of an XML template the instructions give for the answer (a root of
    _XML_ROOTS holding two or more child tags, each opened on a line of its own), else None."""
    text = _UNTRUSTED_RE.sub(" ", instructions)
    for root in _XML_ROOTS:
        for m in re.finditer(rf"<{root}>(.*?)</{root}>", text, re.S):
            children = tuple(dict.fromkeys(c for c in _XML_CHILD_RE.findall(m.group(1)) if c != root))
            if len(children) >= 2:
                return root, tuple(f"<{c}>" for c in children)
    return None


def of_request(conversation: str, instructions: str) -> Contract:
    """The contract of one compaction request (see the module doc)."""
    template = xml_template(instructions)
    if template is not None:
        return Contract(wrapper=template[0], outline=template[1])
    sections = required_sections(instructions)
    wrapper = "summary" if _SUMMARY_TAG_RE.search(_UNTRUSTED_RE.sub(" ", instructions)) else None
    audited = sections == tuple(_data()["required_sections"])
    identifiers, latest, first = (), None, None
    if audited or (sections and _EXACT_IDS_RE.search(instructions)):
        msgs = turns(conversation)
        recent = "\n".join(t for _, t in msgs[-10:] if t)
        # identifierPolicy "off" says so; "strict" (the default) and "custom" keep them exact
        strict = _EXACT_IDS_RE.search(instructions) and "do not enforce literal-preservation" not in instructions
        identifiers = tuple(extract_identifiers(recent)) if strict else ()
        latest = next((t for who, t in reversed(msgs) if who == "User" and t), None)
        m = _FIRST_ASK_RE.search(instructions)
        first = m.group(1).strip() if m else None
    m = _FOOTER_RE.search(_UNTRUSTED_RE.sub(" ", instructions))
    return Contract(sections, wrapper, identifiers, latest, first, audited, m.group(1) if m else None,
                    () if sections else outline_of(instructions))


def outline_of(instructions: str) -> tuple:
    """The numbered sections the instructions list (see the module doc), in order."""
    text = _UNTRUSTED_RE.sub(" ", instructions)
    m = _OUTLINE_RE.search(text)
    if not m:
        listed = _INCLUDE_RE.search(text)
        return tuple(f"## {line.strip()[2:].strip()}" for line in listed.group(1).splitlines()
                     if line.strip()) if listed else ()
    out = []
    for line in text[m.end():].split("\n")[1:]:
        item = _OUTLINE_ITEM_RE.match(line)
        if item:
            out.append(f"{item.group(1)}. {item.group(2).strip()}:")
        elif line.strip() and not line[:1].isspace():
            break                   # the list has ended (blank and indented lines continue an item)
    return tuple(out) if len(out) >= 2 else ()


# ------------------------------------------------------------------ OpenClaw's audit, ported
_S = r"[^\s\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_OPAQUE_RE = re.compile(
    rf"(https?://{_S}+|(?<![A-Za-z0-9._-])/[A-Za-z0-9_.-]{{2,}}(?:/[A-Za-z0-9_.-]+)+|[A-Za-z]:\\[A-Za-z0-9_\\.-]+"
    r"|(?<![A-Za-z0-9._-])[A-Za-z0-9._-]+\.[A-Za-z0-9._/-]+:[0-9]{1,5})"
    r"|(?:(?:(?:[0-9]+\.[0-9]+|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+\.[eE][+-]?[0-9]+|[0-9]+\.?[eE][+-][0-9]+"
    r"|(?![A-Fa-f0-9]{8,}(?![A-Fa-f0-9]))[0-9]+\.?[eE][0-9]+)(?:(?=[A-Za-z]+(?![A-Za-z0-9]))(?=[A-Za-z]*[G-Zg-z])"
    r"[A-Za-z]+)?(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*(?:[A-Fa-f0-9]{8,}|[0-9]{6,}))([A-Za-z0-9_-]+))")
_HEX_RE = re.compile(r"[A-Fa-f0-9]{8,}")


def _sanitize(value: str) -> str:
    return re.sub(r"[)\]\"'`,;:.!?<>]+$", "", re.sub(r"^[(\"'`\[{<]+", "", value.strip()))


def extract_identifiers(text: str) -> list:
    """OpenClaw's extractOpaqueIdentifiers: URLs, paths, host:port, hex and long-digit tokens
    (pure hex upper-cased), 4 characters or more, unique, the first twelve."""
    out, seen = [], set()
    for m in _OPAQUE_RE.finditer(text):
        v = _sanitize(m.group(1) or m.group(2) or "")
        v = v.upper() if _HEX_RE.fullmatch(v) else v
        if len(v) >= 4 and v not in seen:
            seen.add(v)
            out.append(v)
    return out[:_data()["max_extracted_identifiers"]]


def includes_identifier(summary: str, ident: str) -> bool:
    if _HEX_RE.fullmatch(ident):
        return ident.upper() in summary.upper()
    return ident in summary


def _lines(summary: str) -> list:
    return [line.strip() for line in re.split(r"\r?\n", summary) if line.strip()]


def pending_ask_section(summary: str) -> str:
    parts = re.split(r"^## Pending user asks[ \t]*$", summary, maxsplit=1, flags=re.M)
    if len(parts) < 2:
        return ""
    return re.split(r"^##[ \t]+\S.*$", parts[1], maxsplit=1, flags=re.M)[0].strip()


@lru_cache(maxsize=1)
def _stop() -> tuple:
    d = _data()
    words = set()
    for v in d["stop_words"].values():
        words.update(v)
    return frozenset(words), frozenset(d["stop_words"]["ko"]), tuple(sorted(d["ko_trailing_particles"], key=len,
                                                                              reverse=True))


def _is_punct_or_symbol(token: str) -> bool:
    return all(unicodedata.category(c)[0] in "PS" for c in token)


def _split_segments(text: str) -> list:
    """`text.split(/[\\s\\p{P}]+/u)`: on whitespace and every Unicode punctuation character."""
    out, cur = [], []
    for c in text:
        if c.isspace() or unicodedata.category(c).startswith("P"):
            if cur:
                out.append("".join(cur))
                cur = []
        else:
            cur.append(c)
    if cur:
        out.append("".join(cur))
    return out


def _tokenize(text: str) -> list:
    """query-expansion.ts `tokenize` (no trigram): Latin words; CJK characters and their pairs;
    Japanese kana runs; Korean words and their stems without a trailing particle."""
    stop, stop_ko, particles = _stop()
    tokens = []
    for seg in _split_segments(text.strip().lower()):
        if re.search(r"[\u3040-\u30ff]", seg):
            for part in re.findall(r"[a-z0-9_]+|[\u30a0-\u30ffー]+|[\u4e00-\u9fff]+|[\u3040-\u309f]{2,}", seg):
                tokens.append(part)
                if re.fullmatch(r"[\u4e00-\u9fff]+", part):
                    tokens.extend(part[i:i + 2] for i in range(len(part) - 1))
        elif re.search(r"[\u4e00-\u9fff]", seg):
            chars = [c for c in seg if "\u4e00" <= c <= "\u9fff"]
            tokens.extend(chars)
            tokens.extend(chars[i] + chars[i + 1] for i in range(len(chars) - 1))
        elif re.search(r"[\uac00-\ud7af\u3131-\u3163]", seg):
            stem = next((seg[:-len(p)] for p in particles if len(seg) > len(p) and seg.endswith(p)), None)
            if seg not in stop_ko and not (stem is not None and stem in stop_ko):
                tokens.append(seg)
            if stem and stem not in stop_ko and (len(stem) >= 2 if re.search(r"[\uac00-\ud7af]", stem)
                                                  else re.fullmatch(r"[a-z0-9_]+", stem, re.I)):
                tokens.append(stem)
        else:
            tokens.append(seg)
    return tokens


def _valid_keyword(token: str) -> bool:
    if not token:
        return False
    if re.fullmatch(r"[a-zA-Z]+", token) and len(token) < 3:
        return False
    if re.fullmatch(r"[0-9]+", token):
        return False
    return not _is_punct_or_symbol(token)


def keywords(text: str) -> list:
    stop = _stop()[0]
    out, seen = [], set()
    for t in _tokenize(text):
        if t in stop or not _valid_keyword(t) or t in seen:
            continue
        seen.add(t)
        out.append(t)
    return out


def _unique(items) -> list:
    seen, out = set(), []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def _ask_tokens(text: str, fallback: bool = False) -> list:
    norm = unicodedata.normalize("NFKC", text).lower().strip()
    if not norm:
        return []
    kw = keywords(norm)
    if kw and not fallback:
        return kw
    parts = [t for t in re.split(r"[^\w]+|_+", norm) if t]
    return _unique(kw + parts)


def ask_reflected(summary: str, ask: Optional[str]) -> bool:
    """OpenClaw's hasAskOverlap: the summary holds one of the ask's keywords (two when it has three or more)."""
    if not ask:
        return True
    d = _data()
    stop = _stop()[0]
    tokens = _unique(_ask_tokens(ask))[:d["max_ask_overlap_tokens"]]
    if not tokens:
        return True
    meaningful = [t for t in tokens if len(t) > 1 and t not in stop]
    check = meaningful or tokens
    need = 2 if len(check) >= d["min_ask_overlap_tokens_for_double_match"] else 1
    have = set(_ask_tokens(summary, True))
    return sum(1 for t in check if t in have) >= need


def minimum_tokens(contract: Contract) -> int:
    """What the structure alone costs (its headings, what its audit needs whole, a line under
    each and a marker): an answer's budget, at any level, is at least this, and an answer is not
    larger than its input for what its structure demanded."""
    if not contract.sections:
        return 0
    from .tokens import estimate_tokens
    need = estimate_tokens("\n\n".join(contract.sections)) + 12 * len(contract.sections) + 32
    need += sum(estimate_tokens(i) + 2 for i in contract.identifiers)
    need += estimate_tokens(contract.latest_ask or "") + estimate_tokens(contract.first_ask or "") * 2
    return need


def first_ask_line(ask: str) -> str:
    """How OpenClaw wants a request it must resume written as the first pending ask."""
    return f"{_data()['latest_user_request_context_label']} {json.dumps(ask, ensure_ascii=False)}"


def audit(summary: str, contract: Contract) -> list:
    """The reasons OpenClaw's audit would reject `summary` for ([] when it would accept it)."""
    reasons = []
    lines = set(_lines(summary))
    for section in contract.sections:
        if section not in lines:
            reasons.append(f"missing_section:{section}")
    missing = [i for i in contract.identifiers if not includes_identifier(summary, i)]
    if missing:
        reasons.append(f"missing_identifiers:{','.join(missing[:3])}")
    leading = (_lines(pending_ask_section(summary)) or [""])[0]
    if contract.first_ask:
        if leading != first_ask_line(contract.first_ask):
            reasons.append("latest_user_ask_not_foregrounded")
    elif not ask_reflected(summary, contract.latest_ask):
        reasons.append("latest_user_ask_not_reflected")
    return reasons


def has_footer(summary: str, contract: Contract) -> bool:
    """Whether the summary's last line starts with the closing line's label (case and spacing aside)."""
    if not contract.footer:
        return True
    last = next((ln.strip() for ln in reversed(summary.splitlines()) if ln.strip()), "")
    return " ".join(last.split()).lower().startswith(" ".join(contract.footer.split()).lower())


def missing_sections(summary: str, contract: Contract) -> list:
    """The sections asked for that the summary lacks: a line that is the heading (its `#`s
    and case aside for a template; exactly for an audited request)."""
    if not contract.sections:
        return []
    lines = _lines(summary)
    exact = set(lines)
    loose = {re.sub(r"^#+\s*", "", line).strip().lower() for line in lines if line.startswith("#")}
    out = []
    for h in contract.sections:
        if h in exact:
            continue
        if not contract.audited and re.sub(r"^#+\s*", "", h).strip().lower() in loose:
            continue
        out.append(h)
    return out
