"""Secrets out of every text the guard shows: error messages, replies, logs, /healthz.

A key reaches a text whole, cut (an upstream's 401 that ends with the first 20 of its
characters, a message the guard cut at 200), split (wrapped across a line, quoted in
pieces) or encoded (URL-encoded, base64 as in a Basic header, hex). A Redactor replaces
every copy of the key, and of any prefix of it of `min_prefix` characters or more, in
each of those forms, with `***`; a key shorter than that only where it stands whole.
Scrub first, cut after: a cut text keeps no more of a key than the text it came from.

Split copies (separators such as spaces, line breaks, quotes, `+`, `,` or backslashes
between its characters) are looked for in texts up to SPLIT_MAX_CHARS; longer texts (a
summary) are searched for the key's contiguous forms only.
"""
from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Iterable, Optional

MIN_PREFIX = 8
SPLIT_MAX_CHARS = 1 << 16
_SEP = frozenset(" \t\r\n\"'+,\\")
_DROP_SEP = {ord(c): None for c in _SEP}
MASK = "***"


def _forms(key: str) -> list:
    """The key as it may be written: as it is, URL-encoded, JSON-escaped, base64 at each of
    the three alignments it can have inside a longer encoded string (`user:key`), hex."""
    raw = key.encode("utf-8", "surrogatepass")
    out = [key, urllib.parse.quote(key, safe=""), json.dumps(key)[1:-1], raw.hex()]
    out.append(base64.b64encode(raw).decode().rstrip("="))
    out.append(base64.b64encode(b"\0" + raw).decode()[2:].rstrip("="))
    out.append(base64.b64encode(b"\0\0" + raw).decode()[3:].rstrip("="))
    out.append(base64.urlsafe_b64encode(raw).decode().rstrip("="))
    seen = []
    for f in out:
        if f and f not in seen:
            seen.append(f)
    return seen


class Redactor:
    """`redactor(text)`: the text with every copy of the secrets (see the module) masked."""

    def __init__(self, secrets: Iterable[Optional[str]], min_prefix: int = MIN_PREFIX):
        self.min = min_prefix
        self.forms, self.whole = [], []
        for s in secrets:
            if not s:
                continue
            if len(s) < min_prefix:
                self.whole.append(s)
                continue
            for f in _forms(s):
                if len(f) >= min_prefix and f not in self.forms:
                    self.forms.append(f)

    def __bool__(self) -> bool:
        return bool(self.forms or self.whole)

    def __call__(self, text):
        if not isinstance(text, str) or not text or not self:
            return text
        spans = []
        for f in self.forms:
            spans += self._find(text, f)
        if len(text) <= SPLIT_MAX_CHARS:
            squeezed = text.translate(_DROP_SEP)             # in C: most texts hold no split copy
            if len(squeezed) < len(text):
                found = [span for f in self.forms for span in self._find(squeezed, f)]
                if found:
                    kept = [i for i, c in enumerate(text) if c not in _SEP]
                    spans += [(kept[a], kept[b - 1] + 1) for a, b in found]
        for w in self.whole:
            i = text.find(w)
            while i >= 0:
                spans.append((i, i + len(w)))
                i = text.find(w, i + len(w))
        if not spans:
            return text
        spans.sort()
        merged = [list(spans[0])]
        for a, b in spans[1:]:
            if a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        out, at = [], 0
        for a, b in merged:
            out += [text[at:a], MASK]
            at = b
        out.append(text[at:])
        return "".join(out)

    def _find(self, text: str, form: str) -> list:
        """The spans of `text` that are `form` or a prefix of it of min_prefix characters or more."""
        head, out = form[:self.min], []
        i = text.find(head)
        while i >= 0:
            n = self.min
            while n < len(form) and i + n < len(text) and text[i + n] == form[n]:
                n += 1
            out.append((i, i + n))
            i = text.find(head, i + n)
        return out


def safe_url(url: str) -> str:
    """A URL fit to print: no user or password, every query value masked (`?key=...`)."""
    try:
        u = urllib.parse.urlsplit(url)
    except ValueError:
        return "(an unreadable URL)"
    host = u.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = u.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port else "")
    query = "&".join(f"{k}={MASK}" for k, _ in urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((u.scheme, netloc, u.path, query, ""))


def url_secrets(url: str) -> list:
    """The secrets written into a URL (its password, user and query values): masked too."""
    try:
        u = urllib.parse.urlsplit(url)
        return [x for x in (u.password, u.username, *(v for _, v in urllib.parse.parse_qsl(u.query))) if x]
    except ValueError:
        return []
