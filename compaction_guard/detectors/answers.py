"""What a model answered instead of a summary, named by its form (all `empty` failures).

An operator who reads "information-free" does not know what to fix; the form says it:
- `reasoning`: a reasoning block, then at most a line or two that carry little (less than
  `answer_reasoning_max_share` of what the reasoning holds): the model spent its output budget
  thinking. Fix: raise its max_tokens or turn reasoning off;
- `tool_call`: a call or a data object stored as the summary (`<function_calls>…`,
  `{"name": "read", "arguments": …}`, `[tool_call: read_file …]`): text that is structured data
  once parsed (JSON, tags, one bracketed line), no string in it a sentence
  (`answer_call_max_words` words or fewer), carrying few content words
  (`answer_call_max_units`). Fix: the compaction request must not offer tools, or the model must
  follow the prompt;
- `echo`: the summarization prompt sent back: most of its phrases (`answer_echo_min_share` of
  its word 5-grams, `answer_echo_min_shingles` or more) are a compaction prompt's
  (data/compaction_prompts.txt: OpenClaw's, the guard's, and what Claude Code, Codex, Gemini CLI
  and opencode really send). Fix: the model (a small one does it) or the prompt's layout;
- short answers (`answer_max_chars` or less, two sentences at most) over a history rich in
  specifics (`answer_min_history_atoms` of them: identifiers, figures, code names) that carry at
  most `answer_max_kept_atoms` of them (and `answer_max_kept_share`): not a summary of it:
  - `refusal`, when a word of refusing or inability opens it (data/answer_words.txt, a closed
    class like the words of "nothing"). Fix: the prompt or the provider's policy;
  - `placeholder`, when its words are mostly the compactors' own (`answer_note_min_template`
    of its content words: "messages were removed to free context"): a note in place of a
    summary. Fix: the compactor (its summarizer was skipped or failed); or when its phrases are
    a compaction prompt's (`answer_prompt_phrase_min_share` of its word 3-grams,
    `answer_prompt_phrase_min` or more: "a detailed summary of the conversation, focusing on the
    user's explicit requests and intents"): the summary it was asked for described, not written.
    Fix: the model (a small one does it);
  - `preamble` otherwise: a statement of what the model was about to do, naming a file or two
    ("Let me read deploy/helm/values-prod.yaml first"). Fix: re-run with tools off / a model that
    follows the prompt.
Without the history a short answer is judged only by its words: a refusal word and a word of
the task (summary, summarize, ...) in its first sentence is a refusal.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Optional

from .. import data_files
from ..findings import Finding
from .answer_words import ERROR_TOKEN_RE, _first_sentence, _has, _refusal_words, _two, error_text
from .coverage import atoms, flat, kept
from .overlap import units


@lru_cache(maxsize=1)
def _prompt_shingles() -> frozenset:
    text = data_files.read_text("compaction_prompts.txt")
    out = set()
    for block in text.split("\n#@\n"):
        body = "\n".join(ln for ln in block.splitlines() if not ln.startswith("# "))
        out.update(_shingles(body))
    return frozenset(out)


@lru_cache(maxsize=1)
def _prompt_words() -> frozenset:
    """Every word of a known compaction prompt's 5-grams."""
    return frozenset(w for g in _prompt_shingles() for w in g)


def _shingles(text: str, n: int = 5) -> set:
    """The text's word n-grams, its words split at whitespace and lowercased (an echo repeats the prompt
    verbatim, its punctuation too; split and joined in C: an echo is looked for in every summary)."""
    w = text.lower().split()
    return set(zip(*(w[i:] for i in range(n))))


def echoed_prompt(text: str, settings) -> Optional[float]:
    """The share of the word 5-grams of the text's head (answer_echo_max_chars: a prompt sent back is
    sent back from its start; the cost stays that of a page) that are a known compaction prompt's, when
    it is at least answer_echo_min_share over answer_echo_min_shingles or more; else None."""
    # a prompt sent back starts within the first words (after a line of preamble at most): none of the
    # first answer_echo_head_words words' 5-grams a prompt's, none is sent back (most summaries end here)
    head = text[:settings.answer_echo_head_words * 10].lower().split()[:settings.answer_echo_head_words]
    # (a prompt's 5-gram is five of the prompts' words in a row: without such a run, none is; the
    # words looked up in C, the run found by a byte search)
    if bytes(map(_prompt_words().__contains__, head)).find(b"\1\1\1\1\1") < 0 \
            or not _prompt_shingles().intersection(zip(head, head[1:], head[2:], head[3:], head[4:])):
        return None
    mine = _shingles(text[:settings.answer_echo_max_chars])
    if len(mine) < settings.answer_echo_min_shingles:
        return None
    share = len(_prompt_shingles().intersection(mine)) / len(mine)
    return share if share >= settings.answer_echo_min_share else None


def refuses(text: str) -> bool:
    """A word of refusing or inability in the text's first sentence."""
    return _has(_refusal_words()[0], _first_sentence(text))


def announces(text: str) -> bool:
    """A word announcing what the writer is about to do in the text's first sentence."""
    return _has(_refusal_words()[2], _first_sentence(text))


def about_the_task(text: str) -> bool:
    """A word of the task (summary, summarize, compaction, ...) in the text's first sentence."""
    return _has(_refusal_words()[1], _first_sentence(text))


_FENCE_RE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.S)
# a bracketed line that is a call opens with a name and a colon (`[tool_call: read_file ...]`); one that
# is a sentence (`[Old tool output cleared to save context space]`) is a note (markers, placeholders)
_CALL_HEAD_RE = re.compile(r"\s*[A-Za-z_][\w.-]*\s*:")
_TAGS_RE = re.compile(r"<[^<>\n]{1,200}>")
_XMLISH_RE = re.compile(r"\A<[A-Za-z_][\w:-]*[^<>]*>.*</[A-Za-z_][\w:-]*>\Z", re.S)


def _strings(obj, out: list) -> list:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.append(str(k))
            _strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out)
    return out


# The fields a tool call is written with in the APIs and agents' formats (OpenAI's function_call and
# tool_calls, Anthropic's tool_use, Gemini's functionCall, MCP, shell tools): a closed class of names, the
# call's own structure, like a tag's. A JSON summary (`{"task": ..., "done": [...]}`) has none of them.
_CALL_NAME_KEYS = frozenset(("name", "tool", "tool_name", "function", "recipient_name"))
_CALL_ARGS_KEYS = frozenset(("arguments", "args", "input", "parameters", "params"))
_CALL_COMMAND_KEYS = frozenset(("command", "cmd"))
# a call in tags: an element with a name= attribute (`<invoke name="Bash">`), or one named as a call
_CALL_TAG_RE = re.compile(r"<[A-Za-z_][\w:-]*\s[^<>]*\bname\s*=|<\s*(?:tool_call|tool_use|function_call|function_calls|invoke)\b")


def _names_a_call(data) -> bool:
    """A JSON value that is a call: an object naming a tool (a name field) with its arguments, or holding a
    command; or a list of such objects."""
    if isinstance(data, list):
        return bool(data) and all(_names_a_call(x) for x in data)
    if not isinstance(data, dict):
        return False
    keys = {str(k).lower() for k in data}
    if keys & _CALL_COMMAND_KEYS:
        return True
    named = any(isinstance(data.get(k), str) and " " not in data[k] for k in data if str(k).lower() in _CALL_NAME_KEYS)
    if named and keys & _CALL_ARGS_KEYS:
        return True
    fn = data.get("function") or data.get("functionCall")
    return isinstance(fn, dict) and _names_a_call(fn)


def call_shape(text: str, settings) -> Optional[str]:
    """What kind of data the text is when it is a call or an object and no prose: "JSON", "tags",
    "a bracketed line"; else None."""
    t = text.strip()
    m = _FENCE_RE.match(t)
    if m:
        t = m.group(1).strip()
    inner = _TAGS_RE.sub(" ", t).strip() if t.startswith("<") else None
    kind, strings = None, None
    for candidate in (t, inner):
        if candidate and candidate[:1] in "{[":
            try:
                data = json.loads(candidate)
            except ValueError:
                continue
            if _names_a_call(data):
                strings, kind = _strings(data, []), "JSON"
            break
    if kind is None and t.startswith("<") and _XMLISH_RE.match(t) and _CALL_TAG_RE.search(t):
        kind = "tags"
        strings = [s for s in re.split(r"<[^<>]*>", t) if s.strip()] + re.findall(r'"([^"]*)"', t)
    if kind is None and t.startswith("[") and t.endswith("]") and "\n" not in t and len(t) <= 400 \
            and _CALL_HEAD_RE.match(t[1:]):
        kind, strings = "a bracketed call", [t[1:-1]]
    if kind is None:
        return None
    if any(len(s.split()) > settings.answer_call_max_words for s in strings):
        return None             # a sentence in it: a summary written as data
    from .empty import information_left
    _, _, n, _ = information_left(text, settings, enough=settings.answer_call_max_units + 1)
    return kind if n <= settings.answer_call_max_units else None


def echo(text: str, settings) -> list:
    """The `empty` finding for the summarization prompt sent back (also when it loops: it is read before
    the loop, which says less), or []."""
    share = echoed_prompt(text.strip(), settings)
    if share is None:
        return []
    return [Finding("empty", f"the summarization prompt sent back: {share:.0%} of its phrases are a compaction "
                    f"prompt's ({' '.join(text.split())[:60]!r}); the model repeated its instructions instead of "
                    "following them (a small model does), re-run compaction with another model",
                    figures={"form": "echo", "prompt_share": round(share, 3)})]


@lru_cache(maxsize=1)
def _prompt_phrases() -> frozenset:
    """The word-unit 3-grams (overlap.units) of the known compaction prompts (data/compaction_prompts.txt)."""
    text = data_files.read_text("compaction_prompts.txt")
    out = set()
    for block in text.split("\n#@\n"):
        u = units("\n".join(ln for ln in block.splitlines() if not ln.startswith("# ")))
        out.update(zip(u, u[1:], u[2:]))
    return frozenset(out)


def prompt_phrases(text: str) -> tuple:
    """(how many of the text's word 3-grams are a compaction prompt's, how many it has): its words
    as overlap.units cuts them, so a paraphrase's punctuation and case do not hide the prompt's phrases."""
    u = units(text)
    grams = list(zip(u, u[1:], u[2:]))
    known = _prompt_phrases()
    return sum(1 for g in grams if g in known), len(grams)


def _short(text: str, settings) -> bool:
    """answer_max_chars or less, two sentences at most."""
    if len(text) > settings.answer_max_chars:
        return False
    return _two(text)


def classify(content: str, settings, reasoning, history: Optional[str] = None) -> list:
    """The `empty` finding naming what the model answered instead of a summary, or []. `reasoning`:
    reasoning.strip_reasoning(content); `history`: the history it stands for, when known."""
    text = reasoning.text.strip()
    # reasoning, then a line or two that carry nothing of the history's end: the output budget went on thinking
    if reasoning.kind and text and history is not None and len(text) <= settings.answer_reasoning_max_chars and \
            len([ln for ln in text.splitlines() if ln.strip()]) <= 2 and \
            len(text) < settings.answer_reasoning_max_share * reasoning.reasoning_chars and \
            _carries_nothing_late(text, history, settings) is not None:
        return [Finding("empty", f"reasoning, then one line: {reasoning.reasoning_chars} chars of reasoning and only "
                        f"{text[:60]!r} after it; the model spent its output budget thinking: raise the summarizer's "
                        "max_tokens or turn its reasoning off, and re-run compaction",
                        figures={"form": "reasoning", "reasoning_chars": reasoning.reasoning_chars,
                                 "after_chars": len(text)})]
    if not text or (len(text) > settings.answer_max_chars and text[0] not in "{[<`"):
        return []       # longer than any short answer, and no call or data object: nothing below applies
    shape = call_shape(text, settings)
    if shape:
        return [Finding("empty", f"a tool call stored as the summary ({shape}: {' '.join(text.split())[:70]!r}): the "
                        "model answered the compaction request with a call instead of a summary; the compaction request "
                        "must offer no tools (or the model must follow it), re-run compaction",
                        figures={"form": "tool_call", "shape": shape})]
    if text.startswith("[") and text.endswith("]") and "\n" not in text and len(text) <= 200 and "[" not in text[1:-1]:
        # one bracketed line and nothing else: a compactor's note where the summary should be
        return [Finding("empty", f"a note in place of a summary ({text[:70]!r}): a compactor's bracketed marker and "
                        "nothing else; the compactor stored a note instead of a summary (its summarizer was skipped or "
                        "failed): check the compactor, re-run compaction", figures={"form": "placeholder"})]
    # (the prompt sent back is read before: detect_steps calls echo() first, loops or not)
    if history is None:
        # (the cheaper tests first: most texts stop at the first)
        if len(text) > settings.answer_max_chars:
            return []
        first = _first_sentence(text)
        if _has(_refusal_words()[1], first) and _has(_refusal_words()[0], first) and _short(text, settings):
            return [_refusal(text, None)]
        if len(text) <= settings.answer_bare_intent_max_chars and _has(_refusal_words()[2], text[:12]) \
                and _short(text, settings) and not atoms(text):
            return [Finding("empty", f"a preamble, not a summary: a statement of what the model was about to do "
                            f"({text[:60]!r}) and nothing else; re-run compaction (a request with no tools, a model "
                            "that follows it)", figures={"form": "preamble"})]
        return []
    if not _short(text, settings):
        return []
    got = _carries_nothing_late(text, history, settings)
    if got is None:
        # a statement of what the model is about to do is no summary whatever it names (`Let me read a.py and
        # b.py first`): judged by the history's end alone, where it opens so (within its first few words: a plan
        # inside a summary, `... and will rehearse it twice`, is stated in the same words)
        if not _has(_refusal_words()[2], text[:settings.answer_intent_head_chars]) \
                or (got := _carries_nothing_late(text, history, settings, few=False)) is None:
            return []
        return [_preamble(text, history, *got)]
    carried, specifics = got
    if refuses(text):
        return [_refusal(text, len(specifics))]
    from .empty import information_left
    words, idents, n, template = information_left(text, settings, enough=1 << 30)
    # a note counts what it stands for (`21 earlier messages`): a number the history does not hold
    known = {a.lower() for a, _ in atoms(history)}
    counts = [a for a, _ in atoms(text) if a.isdigit() and a not in known]
    if n and (counts or _has(_refusal_words()[3], text)) and template >= settings.answer_note_min_template * (template + n):
        return [Finding("empty", f"a note in place of a summary ({' '.join(text.split())[:70]!r}): it speaks of the "
                        f"compaction, not of the work, and carries {len(carried)} of the history's {len(specifics)} "
                        "specifics; the compactor stored a note instead of a summary (its summarizer was skipped or "
                        "failed): check the compactor, re-run compaction",
                        figures={"form": "placeholder", "carried": carried, "history_specifics": len(specifics)})]
    phrases, grams = prompt_phrases(text)
    if phrases >= settings.answer_prompt_phrase_min and phrases >= settings.answer_prompt_phrase_min_share * grams:
        named = f"names only {', '.join(repr(c) for c in carried)} of" if carried else "names none of"
        return [Finding("empty", f"a statement about the summary in place of one ({' '.join(text.split())[:70]!r}): "
                        f"{phrases} of its {grams} phrases are a compaction prompt's wording, and it {named} the "
                        f"{len(specifics)} specifics the history held ({_held(history, carried)}); the model described "
                        "the summary it was asked for instead of writing it (a small model does): re-run compaction "
                        "with another model", figures={"form": "placeholder", "prompt_phrases": phrases,
                                                       "phrases": grams, "carried": carried,
                                                       "history_specifics": len(specifics)})]
    if not announces(text):
        if ERROR_TOKEN_RE.search(_first_sentence(text)) or error_text(text):
            # an error's name (or an error's label), and nothing of the history: the message of a failed call
            return [Finding("empty", f"error text stored as the summary ({' '.join(text.split())[:70]!r}): it carries "
                            f"{len(carried)} of the history's {len(specifics)} specifics; the summarizer's call failed "
                            "and its message was stored: fix the summarizer's provider and re-run compaction",
                            figures={"form": "error", "carried": carried, "history_specifics": len(specifics)})]
        return []
    return [_preamble(text, history, carried, specifics)]


def _preamble(text: str, history: str, carried: list, specifics: dict) -> Finding:
    named = (f"names {', '.join(repr(c) for c in carried)} of" if carried else "names none of")
    return Finding("empty", f"a preamble, not a summary: one statement ({' '.join(text.split())[:70]!r}) that {named} "
                   f"the {len(specifics)} specifics the history held ({_held(history, carried)}) and nothing else: what the "
                   "model was about to do, not what was done; re-run compaction (a request with no tools, a model "
                   "that follows it)", figures={"form": "preamble", "carried": carried,
                                                 "history_specifics": len(specifics)})


def _held(history: str, carried: list, most: int = 5) -> str:
    """The history's specifics the answer dropped, for the reason: names (ids, paths, versions)
    before bare numbers (a line number tells the operator little), the most used first."""
    counts, first = {}, {}
    for n, (a, _) in enumerate(atoms(history)):
        if a not in carried:
            counts[a] = counts.get(a, 0) + 1
            first.setdefault(a, n)
    ranked = sorted(counts, key=lambda a: (a.isdigit(), -counts[a], first[a]))
    return ", ".join(repr(a) for a in ranked[:most]) + (", ..." if len(ranked) > most else "")


def _carries_nothing_late(text: str, history: str, settings, few: bool = True):
    """(the history's specifics the text names, the history's specifics) when the history is rich in
    specifics (answer_min_history_atoms), the text names few of them (answer_max_kept_atoms, and
    answer_max_kept_share; any number of them unless `few`) and nothing its last part (answer_late_share of it)
    brings first: its latest state is not in it; else None. A sentence that is a summary says where things stand."""
    specifics = {}
    for a, at in atoms(history):
        specifics.setdefault(a.lower(), (a, at))
    if len(specifics) < settings.answer_min_history_atoms:
        return None
    where = flat(text)
    carried = [a for a, _ in specifics.values() if kept(a, where)]
    # a name counted once: `retry.py` inside `src/sync/retry.py` is the same file
    carried = [a for a in carried if not any(a != b and a.lower() in b.lower() for b in carried)]
    if few and (len(carried) > settings.answer_max_kept_atoms or len(carried) > settings.answer_max_kept_share * len(specifics)):
        return None
    # what the history's last part brings first: its atoms and rare words, none of them in the text
    late_at = int(len(history) * (1 - settings.answer_late_share))
    if any(at >= late_at for a, at in specifics.values() if a in carried):
        return None
    from .coverage import _rare_word
    rare = _rare_word(settings, history)
    early = set(units(history[:late_at]))
    mine = set(units(text))
    shared = {u for u in units(history[late_at:]) if u not in early and rare(u)} & mine
    # (one word by chance: a word, or the two or three character pairs of one CJK word)
    if sum(1 for u in shared if isinstance(u, bytes)) > 1 or sum(1 for u in shared if isinstance(u, str)) > 3:
        return None
    return carried, specifics


def _refusal(text: str, specifics: Optional[int]) -> Finding:
    over = f" over a history of {specifics} specifics" if specifics else ""
    return Finding("empty", f"the model refused instead of summarizing ({' '.join(text.split())[:70]!r}){over}: "
                   "nothing of the history is in it; the prompt or the provider's content policy stopped it: change "
                   "the prompt or the model, re-run compaction", figures={"form": "refusal"})
