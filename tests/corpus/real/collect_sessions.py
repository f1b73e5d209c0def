"""Collect what the real agents stored when they compacted long working sessions into one labelled JSONL
evaluation set (stdlib only, nothing written outside --out).

    python3 tests/corpus/real/collect_sessions.py [--root REPO] [--out FILE] [--table]

Reads tests/recordings/sessions/data/ (recorded by tests/recordings/sessions/record.py: Claude Code
2.1.328, Codex 0.171.0, Gemini CLI 0.61.0 and opencode 1.18.33, each through a six-turn session with
real tool calls in English, German and Japanese, then compacting; the stores xz-compressed) with the
same readers as collect_agents.py (each agent's store laid out as those readers expect, in a temporary
directory), one row per compaction, in the shape of real/agents.jsonl, plus `form` (the answer the
model gave, record.py's FORMS) and `session_lang`.

Labels come from the form (script.FORMS), checked against the stored text: `good`, `cut-off`,
`newest-dropped`, `preamble`, `tool-call`, `reasoning`, `echo`, `error`, `refusal`, `placeholder`,
`invented-ask`, `stale`; the first of two compactions (forms stale-same and stale-news) is the good
summary; the second is `good` when the turn between them restated what the summary holds
(stale-same) and `stale` when it added what the summary lacks (stale-news). SmolLM2's answers
(`model`) are labelled by hand in real/sessions_review.yaml, read before the guard judged them.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import lzma
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = "tests/recordings/sessions/data"
AGENTS = ("claude-code", "codex", "gemini", "opencode")


def _collect_agents():
    spec = importlib.util.spec_from_file_location("collect_agents", HERE / "collect_agents.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def unxz(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(lzma.decompress(src.read_bytes()))


def check(label: str, summary: str, lang: str) -> bool:
    """Whether the stored text looks like its label (the eye check, written down)."""
    s = summary.strip()
    if label == "good":
        return "LED-2291" in s and len(s) > 300
    if label == "cut-off":
        return bool(s) and not s.endswith((".", "。", ">", "`"))
    if label == "newest-dropped":
        return "LED-2291" in s and "Priya" not in s and "CHANGELOG" not in s
    if label == "preamble":
        return len(s) < 300 and ("deploy/helm/values-prod.yaml" in s)
    if label == "tool-call":
        return s.startswith(("{", "<", "[")) and len(s) < 400
    if label == "reasoning":
        return s.startswith("<think>") and "</think>" in s
    if label == "echo":
        return len(s) > 200
    if label == "error":
        return s.startswith("Error")
    if label == "refusal":
        return len(s) < 400
    if label == "placeholder":
        return "removed to free context" in s
    if label == "invented-ask":
        return "90" in s and "main" in s
    if label == "stale":
        return "LED-2291" in s
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=HERE.parents[2])
    ap.add_argument("--out", type=Path, default=HERE / "sessions.jsonl")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    data = root / DATA
    manifest = json.loads((data / "manifest.json").read_text(encoding="utf-8"))
    sys.path.insert(0, str(root / "tests" / "recordings" / "sessions"))
    import script as S
    ca = _collect_agents()
    rows, problems = [], []
    for agent in AGENTS:
        for lang in S.LANGS:
            entry = (manifest.get(agent) or {}).get(lang) or {}
            for form, info in entry.items():
                if form.startswith("_") or info.get("stored") is not True:
                    continue
                got = _read(ca, root, data, agent, lang, form)
                if not got:
                    problems.append(f"{agent} {lang} {form}: no compaction in the store")
                    continue
                twice = form in S.TWICE
                for n, r in enumerate(got, 1):
                    label = S.FORMS[form]
                    if twice and n == 1:
                        label = "good"
                    elif twice:
                        label = "good" if S.TWICE[form] == "same" else "stale"
                    rid = f"{agent}-{lang}-{form}" + (f"-{n}" if len(got) > 1 else "")
                    ext = ".db" if agent == "opencode" else ".jsonl"
                    note = f"{r['note']} Session of script.py in {lang}; the model answered: {S.manifest_note(form)}."
                    if twice:
                        note += (f" Compaction {n} of 2" + (": the first summary stored again unchanged after the "
                                                             "follow-up turn." if n == 2 else "."))
                    row = dict(r, id=rid, agent=agent, case=form, form=form, mode="manual", label=label, lang=lang,
                               session_lang=lang, source_file=f"{DATA}/{agent}/{lang}/{form}{ext}.xz", note=note)
                    if label != "model" and not check(label, r["summary"], lang):
                        problems.append(f"{rid}: stored text does not look like '{label}': {r['summary'][:80]!r}")
                    rows.append(row)
    with open(args.out, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows -> {args.out}", file=sys.stderr)
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    if args.table:
        counts = collections.Counter((r["agent"], r["label"]) for r in rows)
        labels = sorted({r["label"] for r in rows})
        print("agent".ljust(13) + "".join(lb[:10].rjust(11) for lb in labels))
        for a in AGENTS:
            print(a.ljust(13) + "".join(str(counts[(a, lb)]).rjust(11) for lb in labels))
    return 0


def _read(ca, root: Path, data: Path, agent: str, lang: str, form: str) -> list:
    """The compactions of one recorded form, read by collect_agents.py's reader of that agent from the
    store laid out as it expects (a temporary directory)."""
    src = data / agent / lang
    ids: set = set()
    ca.WARNINGS.clear()
    with tempfile.TemporaryDirectory(prefix="collect-sessions-") as tmp:
        t = Path(tmp)
        if agent == "claude-code":
            unxz(src / f"{form}.jsonl.xz", t / ca.CLAUDE / f"{form}.jsonl")
            return ca.claude_code(t, ids)
        if agent == "codex":
            name = f"{form}-manual"
            unxz(src / f"{form}.jsonl.xz", t / ca.CODEX / f"{name}.jsonl")
            unxz(src / f"request-{form}.json.xz", t / ca.CODEX / f"request-{name}.json")
            return ca.codex_file(t, t / ca.CODEX / f"{name}.jsonl", ids)
        if agent == "gemini":
            unxz(src / f"{form}.jsonl.xz", t / ca.GEMINI / f"session-{form}.jsonl")
            return ca.gemini_case(t, form, {"mode": "manual"}, ids)
        unxz(src / f"{form}.db.xz", t / ca.OPENCODE / form / "opencode.db")
        return ca.opencode(t, ids)


if __name__ == "__main__":
    sys.exit(main())
