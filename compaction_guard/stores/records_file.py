"""Summaries files: plain text or Markdown (one summary), JSON, YAML or JSONL records.

A records file is a list of records or {"summaries": [records]}; a record is
{"id", "content" (or "summary"), "input", "input_tokens", "previous"}. The format is
read from the content as well as the name: a file named .txt that holds JSON
records is read as records; a .md summary that happens to parse as YAML stays text.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import yaml

from ..errors import GuardError
from ..records import SummaryRecord

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_YAML_ALIASES = 1000


class _CountingLoader(yaml.SafeLoader):
    """The safe loader, refusing documents with more than MAX_YAML_ALIASES aliases:
    an alias bomb ("billion laughs") is a few lines that expand to gigabytes."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases = getattr(self, "_aliases", 0) + 1
            if self._aliases > MAX_YAML_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} aliases (an alias bomb?)")
        return super().compose_node(parent, index)


_ALIAS_RE = re.compile(r"(?:^|[\s\[{,:-])\*[^\s,\[\]{}]+")


MAX_EXPANDED_NODES = 2_000_000


def expanded_size(obj, cap: int = MAX_EXPANDED_NODES) -> int:
    """How many values `obj` holds once shared (aliased) parts are counted every time
    they appear, computed once per distinct object; stops counting above `cap`."""
    memo = {}

    def size(o) -> int:
        if not isinstance(o, (list, dict)):
            return 1
        key = id(o)
        if key in memo:
            return memo[key]
        memo[key] = cap + 1          # a cycle counts as too big
        items = o.values() if isinstance(o, dict) else o
        total = 1
        for v in items:
            total += size(v)
            if total > cap:
                break
        memo[key] = total
        return total

    return size(obj)


def safe_yaml(text: str):
    """yaml.safe_load, fast (C) unless the text uses aliases: then alias count and
    expanded size are bounded (alias bombs). Tags that would construct Python
    objects are refused (ConstructorError); nothing in the file runs."""
    if not _ALIAS_RE.search(text):
        return yaml.load(text, Loader=_YAML_LOADER)
    data = yaml.load(text, Loader=_CountingLoader)
    if expanded_size(data) > MAX_EXPANDED_NODES:
        raise yaml.YAMLError(f"aliases expand to more than {MAX_EXPANDED_NODES:,} values (an alias bomb?)")
    return data


def _json(text: str):
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".text", ""}
RECORD_KEYS = {"content", "summary"}


def _record(path: Path, i: int, raw, source: str) -> SummaryRecord:
    if isinstance(raw, str):
        raw = {"content": raw}
    if not isinstance(raw, dict):
        raise GuardError(f"{path}: record {i + 1} is a {type(raw).__name__}, not a mapping; "
                         "each record needs at least a 'content' (or 'summary') field")
    get = raw.get
    content = get("content") if "content" in raw else get("summary")
    if content is None:
        content = ""
    elif not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False) if isinstance(content, (dict, list)) else str(content)
    tokens = get("input_tokens")
    if tokens is not None:
        if isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or tokens < 0:
            raise GuardError(f"{path}: record {i + 1} has input_tokens={tokens!r}; give a whole number of tokens or leave it out")
        tokens = int(tokens)
    inp = get("input")
    previous = get("previous")
    rid = get("id") if "id" in raw else get("summary_id")
    return SummaryRecord(str(rid) if rid is not None else f"#{i + 1}", content, source,
                         inp if isinstance(inp, str) else None, tokens,
                         previous if isinstance(previous, str) else None)


def _records_from(path: Path, data, source: str) -> Optional[list]:
    """Records if `data` has a records file's shape, else None."""
    if isinstance(data, dict) and isinstance(data.get("summaries"), list):
        items = data["summaries"]
    elif isinstance(data, list) and data and all(isinstance(x, dict) for x in data) \
            and any(RECORD_KEYS & set(x) for x in data):
        items = data
    elif isinstance(data, list) and not data:
        items = []
    elif isinstance(data, dict) and RECORD_KEYS & set(data) and all(
            k in {"id", "content", "summary", "input", "input_tokens", "previous", "summary_id"} for k in data):
        items = [data]
    else:
        return None
    return [_record(path, i, r, source) for i, r in enumerate(items)]


def _try_jsonl(text: str):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 1:
        return None
    out = []
    for ln in lines:
        try:
            out.append(_json(ln))
        except ValueError:
            return None
    return out


_NOT_STRUCTURED = object()


def load_data(path: Path, text: str):
    """Parse `text` as JSON, JSONL or YAML when its content or name says so;
    `_NOT_STRUCTURED` when it is plain text. Raises GuardError on a broken file
    whose name promises a format."""
    suffix = path.suffix.lower()
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "[") or suffix in (".json", ".jsonl", ".ndjson"):
        try:
            return _json(stripped)
        except ValueError as exc:
            data = _try_jsonl(stripped)
            if data is not None:
                return data
            if suffix in (".json", ".jsonl", ".ndjson"):
                raise GuardError(f"{path}: not valid JSON ({exc}); fix the file or give a .txt/.md summary") from None
    if suffix in (".yaml", ".yml") or (suffix not in TEXT_SUFFIXES and ":" in stripped[:200]):
        try:
            return safe_yaml(stripped)
        except RecursionError:
            raise GuardError(f"{path}: YAML nested too deeply; this is not a summaries file") from None
        except yaml.constructor.ConstructorError as exc:
            if suffix not in (".yaml", ".yml"):
                return _NOT_STRUCTURED
            tag = re.search(r"tag '([^']{1,80})", str(getattr(exc, "problem", "")))
            raise GuardError(f"{path}: YAML tag {tag.group(1) if tag else ''} is not allowed (plain YAML only; nothing "
                             "in the file was run); remove the tag") from None
        except yaml.YAMLError as exc:
            if suffix not in (".yaml", ".yml"):
                return _NOT_STRUCTURED
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else f" ({exc})" if "alias" in str(exc) else ""
            raise GuardError(f"{path}: not valid YAML{where}; fix the file, or name it .txt/.md to check it as one summary") from None
    return _NOT_STRUCTURED


def parse(path: Path, text: str, data, source: str, input_text: Optional[str] = None,
          input_tokens: Optional[int] = None) -> list:
    """Records in `text` (the contents of `path`, parsed as `data` by load_data)."""
    suffix = path.suffix.lower()
    if data is not _NOT_STRUCTURED:
        recs = _records_from(path, data, source)
        if recs is not None:
            return recs
        if suffix in (".json", ".jsonl", ".ndjson"):
            raise GuardError(f"{path}: JSON, but not a summaries file; expected a list of records or "
                             "{\"summaries\": [...]} with 'content' in each")
        if suffix in (".yaml", ".yml"):
            raise GuardError(f"{path}: YAML, but neither a summaries file nor a memory-dag-compactor state; expected "
                             "a list of records, {summaries: [...]} or dag_nodes")
    # One plain-text / Markdown summary.
    return [SummaryRecord(id=path.name, content=text.lstrip("\ufeff"), source=source,
                          input_text=input_text, input_tokens=input_tokens)]
