"""The closed classes of words of what a model answers instead of a summary (data/answer_words.txt:
refusing, the task, announcing, a compactor's note, errors, a failed call's names), matched in a text's
first sentence; and `error_text`: the message of a failed call stored as the summary, in any words.
Read by empty.py (error text, before anything else) and answers.py (what the model answered instead)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from .. import data_files

_ENDS = (".", "!", "?", "。", "！", "？", "\n")


@lru_cache(maxsize=1)
def _refusal_words() -> tuple:
    """(refusal words, task words, announcing words, removal words, error words, call words), lowercased:
    data/answer_words.txt."""
    classes = {"refuse": [], "task": [], "intent": [], "note": [], "error": [], "call": []}
    for line in data_files.read_text("answer_words.txt").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) < 3 or parts[1] not in classes:
            continue
        classes[parts[1]].extend(w.lower() for w in parts[2].split("|") if w.strip())
    return tuple(classes["refuse"]), tuple(classes["task"]), tuple(classes["intent"]), tuple(classes["note"]), \
        tuple(classes["error"]), tuple(classes["call"])


_SENTENCE_END_RE = re.compile(r"(?<=[.!?。！？])\s+|\n")


def _first_sentence(text: str) -> str:
    return _SENTENCE_END_RE.split(text.strip(), 1)[0][:240]


def _trie(words: list) -> str:
    """One pattern matching any of the words, their common starts factored (`can(?:'t|not| not)`): the
    regex engine tries one branch per character instead of every word at every place."""
    tree: dict = {}
    for w in words:
        node = tree
        for c in w:
            node = node.setdefault(c, {})
        node[""] = {}

    def walk(node: dict) -> str:
        branches = [re.escape(c) + walk(sub) for c, sub in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body
    return walk(tree)


@lru_cache(maxsize=8)
def _matcher(words: tuple):
    """(one pattern of the single words, the combinations `a+b` whose parts must all occur)."""
    singles = [w for w in words if "+" not in w]
    return (re.compile(_trie(singles)) if singles else None,
            tuple(tuple(w.split("+")) for w in words if "+" in w))


def _has(words: tuple, text: str) -> bool:
    low = text.lower()
    pattern, combos = _matcher(words)
    if pattern is not None and pattern.search(low):
        return True
    return any(all(p in low for p in c) for c in combos)


@lru_cache(maxsize=4)
def _word_starts(words: tuple):
    """One pattern matching any of the words where a word starts (`error`, not inside `TypeError`); those
    of scripts written without spaces (kana, CJK) anywhere."""
    bounded = [w for w in words if ord(w[0]) < 0x3000]
    free = [w for w in words if ord(w[0]) >= 0x3000]
    parts = ([r"(?<!\w)" + _trie(bounded)] if bounded else []) + ([_trie(free)] if free else [])
    return re.compile("|".join(parts))


@lru_cache(maxsize=4)
def _starts_index(words: tuple) -> tuple:
    """(the words of scripts written with spaces by their first two characters, one pattern of the others)."""
    index: dict = {}
    for w in words:
        if ord(w[0]) < 0x3000:
            index.setdefault(w[:2], []).append(w)
    free = [w for w in words if ord(w[0]) >= 0x3000]
    return {k: tuple(v) for k, v in index.items()}, (re.compile(_trie(free)) if free else None)


def _opens_word(words: list, index: dict, free) -> bool:
    """Whether one of `words` (lowercased, in order: a phrase may run over two) starts with an entry of
    `index, free` (_starts_index: _word_starts' matches where a word starts, looked up by the word's first two
    characters instead of a pattern tried at every character: read for every short summary)."""
    line = " ".join(words)
    at = 0
    for w in words:
        i = at + len(w) - len(w.lstrip("[(\"'«“‘`*<{"))
        got = index.get(line[i:i + 2])
        if got and line.startswith(got, i):
            return True
        at += len(w) + 1
    return free is not None and not line.isascii() and free.search(line) is not None


# What software names its errors with, in any language: an exception's or error type's name (`TypeError`,
# `AI_APICallError`), an error code (`ERR_INCOMPLETE_CHUNKED_ENCODING`, `INTERNAL_ERROR`,
# `context_length_exceeded`, `ECONNRESET`), an HTTP status with its reason phrase or named as a status
# (`503 Service Unavailable`, `status 401`): the machine's words, not a writer's.
_REASONS = ("Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Method Not Allowed|Request Time-?out|"
            "Conflict|Gone|Payload Too Large|Unprocessable Entity|Too Many Requests|Internal Server Error|"
            "Not Implemented|Bad Gateway|Service Unavailable|Gateway Time-?out|Overloaded")
ERROR_TOKEN_RE = re.compile(
    r"\b[A-Za-z_]\w*?(?:Error|Exception)\b"
    r"|\bERR_[A-Z0-9_]+\b|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:ERROR|EXCEEDED|FAILED|FAILURE|TIMEOUT|UNAVAILABLE|REFUSED|ABORTED)\b"
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:error|exceeded|failed|failure|timeout|unavailable)\b"
    r"|\bE(?:CONNRESET|CONNREFUSED|CONNABORTED|TIMEDOUT|NOTFOUND|PIPE|HOSTUNREACH|NETUNREACH|AI_AGAIN)\b"
    rf"|\b(?:(?:status(?: code)?|HTTP(?:/\d(?:\.\d)?)?)[ :=]*[45]\d\d\b(?:[ \t]+(?:{_REASONS}))?|[45]\d\d[ \t]+(?:{_REASONS})\b)")
# what every match of ERROR_TOKEN_RE holds one of
_TOKEN_HINT_RE = re.compile(r"rror|RROR|xception|_|[45]|E(?:CONN|TIMEDOUT|NOTFOUND|PIPE|HOST|NETUN)")
# what a label may name without being longer: a URL, a path, a dotted name
_NAMES_RE = re.compile(r"\S*[/.]\S*")
# a label ends at a colon (its detail follows, `task:Stream disconnected` too), a dash between spaces, or the
# line's end
_LABEL_END_RE = re.compile(r"[:：](?=\s|$|[A-Z])| [-–—] ")


def error_text(text: str) -> Optional[str]:
    """The label of the text when it is the message of a failed call rather than a summary, else None.
    A text of two sentences at most, its label (its first line up to a colon, or its first sentence; 60 bytes
    and eight words at most, the URLs and paths it names aside: a label, not a sentence) is:
    - an error's name and nothing else but error words (`TypeError:`, `unexpected status 401 Unauthorized:`);
    - or holds an error word (data/answer_words.txt, `error`: a closed class per language, where a word
      starts) in its first two words or its last two, while its first sentence names the call or the task
      (`call`, `task`: request, stream, connection, model, summary...: `Error during compaction: ...`,
      `Fehler beim Erstellen der Zusammenfassung: ...`), or its detail holds an error's name (`stream
      error: ... INTERNAL_ERROR`).
    An error word alone is a summary's subject as often (`CI build failed: pinned numpy`)."""
    # (the label first, and an error word or name in it: most texts have neither, and are read no further)
    line = text[:400].lstrip()
    line = line[:line.find("\n")] if "\n" in line else line
    m = _LABEL_END_RE.search(line, 0, 160)
    head = _first_sentence(line[:m.start()] if m else line)
    words = head.lower().split()
    if len(words) > 8:
        return None
    classes = _refusal_words()
    # (an error's name holds one of a few strings: most heads hold none, and are not searched)
    named = ERROR_TOKEN_RE.search(head) if _TOKEN_HINT_RE.search(head) else None
    # (the error word heads the label or ends it, `stream error`, `Error during compaction`, `stream
    # disconnected`: within its first two words or its last two; in a sentence it stands anywhere)
    index, free = _starts_index(classes[4])
    worded = words and (_opens_word(words[:2], index, free) or _opens_word(words[-2:], index, free))
    if not (named or worded) or len(_NAMES_RE.sub("", head).encode()) > 60 \
            or not _two(text):
        return None     # a sentence, not a label; a text that goes on (a cause, a fix) after the error it quotes
    if named and not _word_starts(classes[4]).sub(" ", ERROR_TOKEN_RE.sub(" ", head).lower()).strip(" \t[](){}<>.,;!'\"`*#-"):
        return head.strip()
    if worded and (_word_starts(classes[1] + classes[5]).search(_first_sentence(text).lower())
                   or ERROR_TOKEN_RE.search(text.lstrip(), len(head))):
        return head.strip()
    return None


def _two(text: str) -> bool:
    """Two sentences at most (one sentence end at most says so without reading them)."""
    if sum(map(text.count, _ENDS)) <= 1:
        return True
    n = 0
    for part in _SENTENCE_END_RE.split(text.strip()):
        if part.strip():
            n += 1
            if n > 2:
                return False
    return True
