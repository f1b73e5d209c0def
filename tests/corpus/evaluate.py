"""False alarms and recall of the guard's detectors, per set x language x kind.

    python3 tests/corpus/evaluate.py             # the table; exit 1 if a target is missed
    python3 tests/corpus/evaluate.py --misses    # also every wrong verdict, with its reason
    python3 tests/corpus/evaluate.py --seed      # the seed's literal rules on the same sets
    python3 tests/corpus/evaluate.py --json      # the figures as JSON
    python3 tests/corpus/evaluate.py --ungrounded-review   # the model outputs reported ungrounded
    python3 tests/corpus/evaluate.py --write-docs  # write docs/measured.md and the README's figures
    python3 tests/corpus/evaluate.py --check-docs  # exit 1 when they differ from this evaluation (CI)

Sets, real data first (nobody on the project wrote their texts):
- claude-code, codex, gemini-cli, opencode: what each real agent stored when it compacted,
          run headless against a scripted model (real/agents.jsonl from the recordings in
          tests/recordings/ and tests/data/claude-code/, real/collect_agents.py): good
          summaries, loops, preambles, echoed prompts, skeletons, another language, empty
          ones, with the history each replaced and the agent's own counts; every good one
          valid, every broken one a failure;
- claude-code/sessions, codex/sessions, gemini-cli/sessions, opencode/sessions: the same
          agents through a six-turn working session with real tool calls, in English,
          German and Japanese (tests/recordings/sessions/, real/collect_sessions.py): good
          summaries long and short, with derived figures, stored again unchanged after a
          turn that added nothing; cut off inside their structure, the newest work dropped,
          preambles naming files, tool calls, reasoning then a line, the prompt echoed, error
          text, refusals, a note, a request nobody made, a summary stored again after a turn
          that added what it lacks; and SmolLM2's own answers through the agent. Every good
          one valid, every broken one a failure named by its kind or form;
- published-broken: broken summaries people published (real/published_broken.yaml),
          verbatim with their source, without their history: each a failure, named;
- model:  outputs of a real small model (SmolLM2-135M via xllamacpp) run as a
          summarizer (real/generate_model.py), labelled per kind by measured rules
          fixed before the detectors saw them (real/label_model.py);
- openclaw: the same model given new histories and the two prompt shapes compactors
          send (OpenClaw's structured checkpoint through pi, Claude Code's <analysis> then
          <summary>), generated after the detectors were fixed (real/generate_openclaw.py),
          labelled by the same rules: how the detectors hold on output they were not tuned on;
- gemma:  another model family (Gemma 3 270M, pretrained, not instruction-tuned) asked the
          same way, by raw completion and through a chat template it never learnt
          (real/generate_gemma.py), made after the detectors were fixed, labelled by the
          same rules;
- human:  real human text in 32 languages, cut to summary size (real/collect_human.py):
          Debian's translated man pages, reference and message catalogues; all good
          except what real/human_labels.yaml says (checked by hand);
- swapped: the model's sound outputs given another history in their language as input
          (the summary of another conversation: ungrounded, no drift);
- pages:  the model's summaries of real manual pages (real/generate_pages.py): against their
          page, labelled like the model set (loops, noise, emptiness, cut-offs); in the page's
          language, given another page as input (ungrounded, no drift);
- pairs:  one human excerpt as the "summary" of another, in the same language (not
          drift; about something else: ungrounded, unless the two share a source file or
          a copied passage: same_subject) or another (drift);
- grounding: Debian manual pages' overviews as the summary of the rest of their own
          page (grounded, no invented identifiers) and of another page in the same
          language (ungrounded) (real/collect_grounding.py);
then the hand-written corpus, kept as regression tests (build.py): development
(good.yaml), held-out, adversarial and fresh parts.

Each set and language is checked as one store (store_verdict): grounding weighs words by
how rarely that store's inputs use them, as a check of a real store does.

Per kind, an item is positive (has that failure), negative, or unlabelled (left
out). A false alarm is a failure of kind K reported on an item negative for K;
recall is the share of K-positive items reported as K. `cut_off` is a warning
kind: its figures are shown, not held to a target.

Targets: no false alarm on the human text in any language; at most 0.5%
false alarms per kind on every set; recall of at least 97% on the real model's loops (sets
model, openclaw, gemma and pages together);
100% on the core forms (the hand-written failures the seed's rules were meant to
catch); 90% on the hand-written real-world forms; not one false
language_drift, ungrounded or invented_identifiers failure on any good set; recall of
95% on drift and on off-topic summaries (printed as "not yet held" while below).
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
from functools import lru_cache
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from build import build  # noqa: E402

from compaction_guard import DEFAULT, FAILURE_KINDS  # noqa: E402
from compaction_guard import seed_rules  # noqa: E402
from compaction_guard.check import background_of, check_record  # noqa: E402
from compaction_guard.detectors import StaleTracker, grounding  # noqa: E402
from compaction_guard.records import SummaryRecord  # noqa: E402
from compaction_guard.tokens import seed_tokens  # noqa: E402

TARGET_FALSE_ALARMS = 0.005
# Reported but not held to the false-alarm target, with the reason printed each run.
NOT_HELD = {
    ("openclaw", "inflation"): "as for the set model",
    ("gemma", "inflation"): "labels count tokens with Gemma's own tokenizer, which spends 0.87-1.51x the guard's "
                            "estimate by language (1.27x on English: every digit a token) and 1.24x on the outputs; "
                            "the false alarms are within 15% of the ratio 1",
    ("model", "inflation"): "labels count tokens with SmolLM2's own tokenizer, which spends 1.4x the guard's "
                            "estimate on English and 1.5-2.4x on the other 17 languages; an English summary of a "
                            "non-English history is measured larger by the guard than by that tokenizer",
}
TARGET_MODEL_LOOP_RECALL = 0.97
TARGET_DRIFT_RECALL = 0.95
TARGET_UNGROUNDED_RECALL = 0.95
TARGET_CORE_RECALL = 1.0
TARGET_HAND_REAL_RECALL = 0.90
# `cut_off` is a warning, and a failure where a summary stops inside the structure it was asked for;
# `invented_ask` (a request the history does not hold, attributed to the user) a warning
WARNING_KINDS = ("cut_off", "invented_ask")
KINDS = FAILURE_KINDS + tuple(k for k in WARNING_KINDS if k not in FAILURE_KINDS)
# Warnings no set labels yet: how often each is raised, on all items and on the good ones
# (the hand-written and human sets' good summaries are written by people: a warning there
# is a false one).
NOTED_KINDS = ("transcript",)
REAL = HERE / "real"


@lru_cache(maxsize=1)
def _language_labels() -> dict:
    """real/language_labels.jsonl by id (label_language.py), read once."""
    path = REAL / "language_labels.jsonl"
    return {x["id"]: x for x in map(json.loads, open(path, encoding="utf-8"))} if path.exists() else {}


@lru_cache(maxsize=1)
def _review() -> dict:
    """real/model_review.yaml (the hand review's overrides), read once."""
    path = REAL / "model_review.yaml"
    return (yaml.safe_load(open(path, encoding="utf-8")) or {}) if path.exists() else {}


@dataclass
class Item:
    id: str
    set: str
    lang: str
    content: str
    truth: dict                              # kind -> True / False / None (unlabelled)
    input_text: Optional[str] = None
    input_tokens: Optional[int] = None
    previous: Optional[str] = None
    context: list = field(default_factory=list)
    form: str = ""                           # hand-written corpus: seed / real / good
    context_before: Optional[int] = None     # the agent's own counts of its context (agents' sets)
    context_after: Optional[int] = None
    context_source: str = ""
    label: str = ""                          # agents' sets: what the agent stored (good, preamble, loop, cut-off, ...)
    must_fail: bool = False                  # agents' sets: a broken summary, whatever kind names it


# Two texts about the same thing, whatever the guard measures: one source file (two excerpts
# of glib's catalogue), or a passage of 60 characters or more copied verbatim from one to the
# other (the GPL notice and "Written by" lines every coreutils page carries). Such a pair is
# not "about something else": left out of ungrounded's figures, never counted either way.
COPY_CHARS = 60


def _files(source: str) -> set:
    return {part.split(": ", 1)[-1].strip() for part in (source or "").split("; ") if part.strip()}


def same_subject(a: dict, b: dict, a_text: str, b_text: str) -> bool:
    if _files(a.get("source", "")) & _files(b.get("source", "")):
        return True
    x, y = " ".join(a_text.split()), " ".join(b_text.split())
    return any(x[i:i + COPY_CHARS] in y for i in range(0, max(1, len(x) - COPY_CHARS + 1), 8))


def names_page(overview: str, page_id: str) -> bool:
    """An overview whose NAME line lists the other page's command (at, batch, atq, atrm):
    one page under several names."""
    name = page_id.split("-", 2)[-1].rsplit(".", 1)[0]
    head = overview.split("\n", 1)[0].split(" - ", 1)[0].split(" \u2014 ", 1)[0]
    return name in {w.strip(" ,") for w in head.split()}


def _truth_all(value: bool) -> dict:
    return {k: value for k in KINDS}


def model_items(set_name: str = "model") -> list:
    """Real model outputs with their measured labels: the set `model` (generate_model.py)
    or `openclaw` (generate_openclaw.py, made after the detectors were fixed) or `gemma`
    (generate_gemma.py: another model family, made after them too)."""
    outs, labels, histories = {"model": ("model_outputs.jsonl", "model_labels.jsonl", "histories.jsonl"),
                               "openclaw": ("model_openclaw.jsonl", "openclaw_labels.jsonl", "openclaw_histories.jsonl"),
                               "gemma": ("model_gemma.jsonl", "gemma_labels.jsonl", "gemma_histories.jsonl")}[set_name]
    outs, labels = REAL / outs, REAL / labels
    if not outs.exists() or not labels.exists():
        return []
    hist = {h["id"]: h["text"] for h in map(json.loads, open(REAL / histories, encoding="utf-8"))}
    lab = {x["id"]: x for x in map(json.loads, open(labels, encoding="utf-8"))}
    review = _review()
    langs = _language_labels()
    items = []
    for line in open(outs, encoding="utf-8"):
        r = json.loads(line)
        if r["id"] not in lab:
            continue
        truth = {k: None for k in KINDS}
        truth.update(lab[r["id"]]["labels"])
        truth["truncation_marker"] = False
        truth["stale"] = None
        for k, v in (review.get(r["id"]) or {}).get("labels", {}).items():
            truth[k] = v
        # language: labelled by two other identifiers (label_language.py); a loop, noise or
        # an empty output has no language to judge (those kinds say more)
        lang = langs.get(r["id"])
        truth["language_drift"] = None if not (lang and lang["output_language"]) \
            or any(truth.get(k) for k in ("repetition", "garbled", "empty")) \
            or (lang.get("history_share_in_output_language") or 0) >= 0.25 \
            else lang["output_language"] != lang["history_language"]
        # off-topic: not labelled by a rule (the signal is the detector's own); the outputs it
        # flags are listed by --ungrounded-review and were read by hand (model_review.yaml)
        truth["ungrounded"] = None
        truth["invented_identifiers"] = None
        for k, v in (review.get(r["id"]) or {}).get("labels", {}).items():
            if k in ("ungrounded", "invented_identifiers"):
                truth[k] = v
        items.append(Item(r["id"], set_name, r["lang"], r["output"], truth, input_text=hist[r["history"]]))
    return items


def swapped_items(models: Optional[list] = None) -> list:
    """The summary of another conversation, as a compactor that mixes up its sessions would
    store it: each real model output that its labels call sound (no failure measured or
    read, in its history's language) given the next history in the same language as its
    input. About something else by construction (unless it copies a passage of the other:
    the histories draw on one pool of real sentences per language): ungrounded; same
    language: no drift."""
    hist = [json.loads(ln) for ln in open(REAL / "histories.jsonl", encoding="utf-8")]
    by_lang = defaultdict(list)
    for h in hist:
        by_lang[h["lang"]].append(h)
    src = {r["id"]: r["history"] for r in map(json.loads, open(REAL / "model_outputs.jsonl", encoding="utf-8"))}
    items = []
    for it in models if models is not None else model_items():
        if any(v for k, v in it.truth.items() if k != "cut_off") or it.truth.get("language_drift") is not False:
            continue
        own = next(h for h in by_lang[it.lang] if h["id"] == src[it.id])
        group = by_lang[it.lang]
        other = group[(group.index(own) + 1) % len(group)]
        truth = {k: None for k in KINDS}
        truth["ungrounded"] = None if same_subject({}, {}, it.content, other["text"]) else True
        truth["language_drift"] = False
        items.append(Item(f"{it.id}<-{other['id']}", "swapped", it.lang, it.content, truth, input_text=other["text"]))
    return items


def page_items() -> list:
    """The model's summaries of real manual pages (real/generate_pages.py), each given the
    next page in its language as its input: a summary of another document with a subject
    of its own. Only sound outputs (no loop, noise or emptiness by label_model.py's rules)
    that two other identifiers (lingua and CLD2, agreeing: label_language.py) read in the
    page's language are judged: about something else,
    ungrounded (unless the two pages are one page under two names, or share a copied
    passage); in the page's language, no drift."""
    path = REAL / "model_pages.jsonl"
    if not path.exists() or not (REAL / "page_labels.jsonl").exists():
        return []
    pages = [json.loads(ln) for ln in open(REAL / "grounding.jsonl", encoding="utf-8")]
    by_id = {p["id"]: p for p in pages}
    by_lang = defaultdict(list)
    for p in pages:
        by_lang[p["lang"]].append(p)
    langs = {i: x for i, x in _language_labels().items() if "page_language" in x}
    labels = {x["id"]: x["labels"] for x in map(json.loads, open(REAL / "page_labels.jsonl", encoding="utf-8"))}
    review = _review()
    sound = {i for i, x in labels.items() if not any(x[k] is not False for k in ("repetition", "empty", "garbled"))}
    items = []
    for r in map(json.loads, open(path, encoding="utf-8")):
        # against its own page: loops, noise, emptiness and cut-offs, as label_model.py measured them
        truth = {k: None for k in KINDS}
        truth.update(labels[r["id"]])
        truth.update((review.get(r["id"]) or {}).get("labels", {}))
        own = by_id[r["page"]]
        items.append(Item(r["id"], "pages", own["lang"], r["output"], truth, input_text=own["input"][:r["input_chars"]]))
        lab = langs.get(r["id"])
        if r["id"] not in sound or not lab or not lab["output_language"] \
                or lab["output_language"] != lab["page_language"]:
            continue      # a loop, noise or an empty output has no subject; another language is drift
        page = by_id[r["page"]]
        group = by_lang[page["lang"]]
        other = group[(group.index(page) + 1) % len(group)]
        truth = {k: None for k in KINDS}
        truth["language_drift"] = False
        truth["ungrounded"] = None if same_subject(page, other, r["output"], other["input"]) \
            or names_page(page["summary"], other["id"]) else True
        items.append(Item(f"{r['id']}<-{other['id']}", "pages", page["lang"], r["output"], truth,
                          input_text=other["input"]))
    return items


def pair_items() -> list:
    """Real human text on both sides: an excerpt as the summary of another excerpt, in the
    same language (no drift) or in another (drift). Only language_drift is judged here."""
    labels = {i: x.get("text_language") for i, x in _language_labels().items() if "text_language" in x}
    rows = [json.loads(ln) for ln in open(REAL / "human.jsonl", encoding="utf-8")]
    by_lang = {}
    for r in rows:
        if labels.get(r["id"]):      # the excerpt's own language, as two other identifiers agree on it
            by_lang.setdefault(labels[r["id"]], []).append(r)
    langs = sorted(by_lang)
    items = []
    for li, lang in enumerate(langs):
        group = by_lang[lang]
        if len(group) < 2:
            continue
        others = [x for x in langs if x != lang]
        for i, r in enumerate(group):
            same = group[(i + 1) % len(group)]
            other_lang = others[(li + i) % len(others)]
            other = by_lang[other_lang][i % len(by_lang[other_lang])]
            for partner, drift in ((same, False), (other, True)):
                truth = {k: None for k in KINDS}
                truth["language_drift"] = drift
                # another excerpt in the same language is about something else: ungrounded
                # (unless it shares the excerpt's source or copies a passage of it)
                truth["ungrounded"] = None if drift or same_subject(r, partner, r["text"], partner["text"]) else True
                items.append(Item(f"{r['id']}<-{partner['id']}", "pairs", lang, r["text"], truth,
                                  input_text=partner["text"]))
    return items


def grounding_items() -> list:
    """Real human overviews (a manual page's NAME line and first DESCRIPTION paragraphs) as
    the summary of the rest of their own page (grounded: short, paraphrased) and of the
    next page in the same language (off-topic). collect_grounding.py made them. An overview
    in another language than the page it is set against (label_language.py: a page whose
    NAME and DESCRIPTION were left untranslated, or only they were translated) is not judged
    for grounding: a summary in another language shares no words with its input whatever it
    says, and the guard leaves it to language_drift."""
    path = REAL / "grounding.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(ln) for ln in open(path, encoding="utf-8")]
    by_lang = defaultdict(list)
    for r in rows:
        by_lang[r["lang"]].append(r)
    # each overview's language and its page's, as two other identifiers agree on them
    # (label_language.py; None where they do not)
    langs = {i: x for i, x in _language_labels().items() if "grounding_page_language" in x}

    def other_language(a: dict, b: dict) -> bool:
        """a's overview and b's page each have a language, and they differ."""
        la, lb = langs.get(a["id"], {}).get("overview_language"), langs.get(b["id"], {}).get("input_language")
        return bool(la and lb and la != lb)
    items = []
    for lang, group in sorted(by_lang.items()):
        for i, r in enumerate(group):
            for partner, off in ((r, False), (group[(i + 1) % len(group)], True)):
                if off and partner is r:
                    continue
                truth = {k: None for k in KINDS}
                # only grounding (and invention) is judged here: some pages' overviews are
                # untranslated English, one is mojibake in the package itself (man-es fakeroot.1)
                truth["ungrounded"] = off
                if off and (same_subject(r, partner, r["summary"], partner["input"])
                            or names_page(r["summary"], partner["id"])):
                    truth["ungrounded"] = None      # one page under two names, or a copied passage
                if other_language(r, partner):
                    truth["ungrounded"] = None      # an untranslated overview of a translated page (or
                    # the reverse): another language than its input, drift's question
                truth["invented_identifiers"] = False if not off else None   # a real overview of its own page
                items.append(Item(f"{r['id']}<-{partner['id']}" if off else r["id"], "grounding", lang, r["summary"],
                                  truth, input_text=partner["input"]))
    return items


def human_items() -> list:
    over = yaml.safe_load(open(REAL / "human_labels.yaml", encoding="utf-8")) or {}
    items = []
    for line in open(REAL / "human.jsonl", encoding="utf-8"):
        r = json.loads(line)
        truth = _truth_all(False)
        truth["cut_off"] = None        # excerpts are cut where the excerpt ends
        for k, v in (over.get(r["id"]) or {}).get("labels", {}).items():
            truth[k] = v
        items.append(Item(r["id"], "human", r["lang"], r["text"], truth))
    return items


def docs_items() -> list:
    """Real READMEs, NEWS files, changelogs and package descriptions (collect_docs.py): good
    text in a summary's shape (headings, lists, paths, versions, ids, code). A tail ends
    where its document ends: not cut off. A head ends where a paragraph ends, which may
    announce the next one ("as follows:"): its cut_off is not judged."""
    path = REAL / "docs.jsonl"
    if not path.exists():
        return []
    items = []
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        truth = _truth_all(False)
        truth["cut_off"] = False if r["part"] == "tail" else None
        items.append(Item(r["id"], "docs", r["lang"], r["text"], truth))
    return items


def hand_items() -> list:
    samples = (build() + build(seed=7, base="holdout.yaml") + build(seed=11, base="adversarial.yaml")
               + build(seed=13, base="fresh.yaml"))
    items = []
    for s in samples:
        truth = _truth_all(False)
        truth["cut_off"] = None
        if s.label != "good":
            truth[s.label] = True
        for k in s.also:
            truth[k] = None
        # the corpus wraps summaries of any language in English transcripts: it was not
        # written to say anything about language drift
        truth["language_drift"] = None
        # ... nor about grounding, except where both sides are English; its failures were
        # written for their own kind, their identifiers not for their synthetic inputs
        if s.lang != "en" or not s.input_text or s.label != "good":
            truth["ungrounded"] = None
        if s.label != "good":
            truth["invented_identifiers"] = None
        items.append(Item(s.id, s.part, s.lang, s.content, truth, s.input_text, s.input_tokens, s.previous,
                          list(s.context), s.form))
    return items


def empty_items() -> list:
    """Information-free summaries, each of which must raise a failure:
    - published-empty: the summaries people published (real/published_empty.yaml, verbatim,
      with their source), as a store check sees them: the text and `tokensBefore` where the
      report gives it;
    - generated-empty: what OpenClaw 2026.9.6's own compact() stored when given an empty or
      nearly empty preparation, its summarizer the local models (real/generate_empty.py,
      batch 1, made while the checks were written), stored over a real history as a check of
      the store sees it (the real history it names, then the next ones of its language, up
      to the session's tokensBefore or EMPTY_HISTORY_TOKENS);
      generated-empty/tokens: the same with only tokensBefore known (no history text);
    - generated-empty-2 (and /tokens): batch 2, made after the checks were fixed (held out).
    Language: the case's (the greeting's; the empty and heartbeat cases are English)."""
    items = []
    truth = {k: None for k in KINDS}
    pub = REAL / "published_empty.yaml"
    for r in yaml.safe_load(pub.read_text(encoding="utf-8")) if pub.exists() else []:
        items.append(Item(r["id"], "published-empty", r.get("lang", "en"), r["text"], dict(truth, empty=True),
                          input_tokens=r.get("tokens_before")))
    gen = REAL / "generated_empty.jsonl"
    if not gen.exists():
        return items
    rows = [json.loads(ln) for ln in open(REAL / "openclaw_histories.jsonl", encoding="utf-8")]
    for line in open(gen, encoding="utf-8"):
        r = json.loads(line)
        if r.get("output") is None:
            continue
        # the batch: recorded, or read from the id ("ge" then one "b" per batch after the first)
        batch = r.get("batch") or 1 + len(r["id"][2:]) - len(r["id"][2:].lstrip("b"))
        name = "generated-empty" if batch == 1 else f"generated-empty-{batch}"
        items.append(Item(r["id"], name, r["lang"], r["output"], dict(truth),
                          input_text=_history_of_size(rows, r["history"], min(r["tokens_before"], EMPTY_HISTORY_TOKENS))))
        items.append(Item(r["id"], name + "/tokens", r["lang"], r["output"], dict(truth), input_tokens=r["tokens_before"]))
    return items


# The history a generated record is stored over, as a check of the store reads it: its real
# history, then the next ones of the same language, up to its tokensBefore (at most this many
# tokens: the check reads the same words whatever the size beyond).
EMPTY_HISTORY_TOKENS = 8000


def _history_of_size(rows: list, first: str, tokens: int) -> str:
    from compaction_guard.tokens import estimate_tokens
    start = next(i for i, h in enumerate(rows) if h["id"] == first)
    lang = rows[start]["lang"]
    same = [h for h in rows[start:] + rows[:start] if h["lang"] == lang]
    out, n = [], 0
    while n < tokens:
        for h in same:
            out.append(h["text"])
            n += estimate_tokens(h["text"])
            if n >= tokens:
                break
    return "\n\n".join(out)


def info_free_recall(res: dict, st: str) -> tuple:
    """(items, items that raised a failure) of an information-free set."""
    rows = [v for (s, _l), v in res.get("info_free", {}).items() if s == st]
    return sum(v[0] for v in rows), sum(v[1] for v in rows)


# What four real agents stored when they compacted, each agent a set (real/agents.jsonl).
AGENT_SETS = ("claude-code", "codex", "gemini-cli", "opencode")
# the kind a label is, where one kind names it (the others: any failure, see agent_items)
AGENT_LABEL_KINDS = {"loop": "repetition", "language": "language_drift", "empty": "empty", "whitespace": "empty",
                     "preamble": "empty", "skeleton": "empty", "cut-off": "cut_off"}


def agent_items() -> list:
    """What Claude Code 2.1.328, Codex CLI 0.171.0, Gemini CLI 0.61.0 and opencode 1.18.33 really
    stored when they compacted (real/agents.jsonl, written by real/collect_agents.py from the
    recordings in tests/recordings/ and tests/data/claude-code/): each summary the agent kept,
    with the history it replaced and the agent's own counts of its context, as a check of its
    store sees it. Labelled by the case each run scripted and checked against the stored text
    (collect_agents.py): a good summary must raise no failure; every other one must raise one
    (`must_fail`), of the kind its label names where one does (a loop `repetition`, another
    language `language_drift`, empty, whitespace, a tool-call preamble or an unfilled skeleton
    `empty`); an echoed prompt, or the acknowledgement Codex keeps when its compaction answer was
    empty (`other`), any failure; a summary cut off mid-sentence is held to its `cut_off` warning,
    neither good nor a failure. Compactions the agent dropped (nothing stored) are the hooks'
    concern, not a summary: left out."""
    path = REAL / "agents.jsonl"
    items = []
    for r in map(json.loads, open(path, encoding="utf-8")) if path.exists() else ():
        if not r["stored"]:
            continue
        label = r["label"]
        truth = {k: None for k in KINDS}
        if label == "good":
            truth = {k: False for k in KINDS}
        elif label in AGENT_LABEL_KINDS:
            truth[AGENT_LABEL_KINDS[label]] = True
        st = "gemini-cli" if r["agent"] == "gemini" else r["agent"]
        items.append(Item(r["id"], st, r["lang"], r["summary"], truth, input_text=r["history"] or None,
                          previous=r.get("previous"), context_before=r.get("context_before"),
                          context_after=r.get("context_after"), context_source=r.get("counts_source") or "",
                          label=label, must_fail=label not in ("good", "cut-off")))
    return items


def agents_caught(res: dict, st: str, held: bool = False) -> tuple:
    """(broken summaries, those that raised a failure, the missed ids) of an agent's set (`held`: those held
    to every one caught: a real model's answers through the agent, `smollm2:` labels, are reported apart)."""
    rows = [v for (s, label), v in res.get("must_fail", {}).items()
            if s == st and not (held and label.startswith("smollm2:"))]
    return sum(v[0] for v in rows), sum(v[1] for v in rows), [i for v in rows for i in v[2]]


# Broken summaries people published in the agents' and frameworks' issue trackers, verbatim with their
# source (real/published_broken.yaml): each must raise a failure, named; they come without their history
PUBLISHED_SET = "published-broken"


def published_items() -> list:
    """real/published_broken.yaml: the text as it was stored (or as the issue quotes what became the
    summary), its form (a label of EXPECTED_NAME), its source; judged as a check of a store sees a
    record without its history (and with the count before where the report gives it)."""
    path = REAL / "published_broken.yaml"
    items = []
    for r in (yaml.safe_load(path.read_text(encoding="utf-8")) or []) if path.exists() else []:
        truth = {k: None for k in KINDS}
        kind = SESSION_LABEL_KINDS.get(r["label"])
        if kind:
            truth[kind] = True
        items.append(Item(r["id"], PUBLISHED_SET, r.get("lang", "en"), r["text"], truth,
                          input_tokens=r.get("tokens_before"), label=r["label"],
                          must_fail=r["label"] not in WARNED_LABELS))
    return items


# Long working sessions of the same four agents (real/sessions.jsonl: six turns with real tool calls, in
# English, German and Japanese, then a compaction; tests/recordings/sessions/, real/collect_sessions.py).
SESSION_SETS = ("claude-code/sessions", "codex/sessions", "gemini-cli/sessions", "opencode/sessions")
# Sets reported and not yet held to their targets (every broken summary caught and named, no good one
# failed): held once the detectors for them are in.
NOT_YET_HELD = ()
# whether a broken summary's failure must name it (its kind or form): held with the detectors that name them
NAMES_HELD = True
# the kind (or the form a failure names, Finding.figures["form"]) each broken label must be reported as
EXPECTED_NAME = {"cut-off": "cut_off", "newest-dropped": "coverage", "preamble": "preamble", "tool-call": "tool_call",
                 "reasoning": "reasoning", "echo": "echo", "error": "error", "refusal": "refusal",
                 "placeholder": "placeholder", "stale": "stale", "loop": "repetition", "language": "language_drift"}
# labels held to a warning of their kind, not a failure: the summary may still be good otherwise
WARNED_LABELS = {"invented-ask": "invented_ask"}
SESSION_LABEL_KINDS = {"cut-off": "cut_off", "newest-dropped": "coverage", "stale": "stale", "preamble": "empty", "tool-call": "empty",
                       "reasoning": "empty", "error": "empty", "refusal": "empty", "placeholder": "empty",
                       "invented-ask": "invented_ask"}


def session_items() -> list:
    """What the four agents stored when they compacted long working sessions (real/sessions.jsonl): each
    summary with the history it replaced, the summary before it and the agent's own counts, as a check
    of the store sees it. A good summary (long, short, with figures derived from the history, or stored
    again unchanged after a turn that added nothing it lacks) must raise no failure, and no cut_off
    warning; every broken one a failure, of the kind its label names where one does, named
    (EXPECTED_NAME); a request attributed to the user that the history does not hold, at least its
    warning. SmolLM2's answers through the agent (`model`) are labelled by hand in
    real/sessions_review.yaml (good, or the kinds that are wrong with them)."""
    path = REAL / "sessions.jsonl"
    review = {}
    rpath = REAL / "sessions_review.yaml"
    if rpath.exists():
        review = yaml.safe_load(rpath.read_text(encoding="utf-8")) or {}
    items = []
    for r in map(json.loads, open(path, encoding="utf-8")) if path.exists() else ():
        label = r["label"]
        truth = {k: None for k in KINDS}
        if label == "model":
            got = review.get(r["id"])
            if not got:
                continue            # not reviewed: not judged
            # (a real model's answer: reported, not held to every one caught: `smollm2:<form>`)
            label = "good" if got.get("label") == "good" else "smollm2:" + got.get("label", "model")
            if label == "good":
                truth = {k: False for k in KINDS}
            for k in got.get("kinds") or ():
                truth[k] = True
        elif label == "good":
            truth = {k: False for k in KINDS}
        elif label in SESSION_LABEL_KINDS:
            truth[SESSION_LABEL_KINDS[label]] = True
        st = ("gemini-cli" if r["agent"] == "gemini" else r["agent"]) + "/sessions"
        items.append(Item(r["id"], st, r["lang"], r["summary"], truth, input_text=r["history"] or None,
                          previous=r.get("previous"), context_before=r.get("context_before"),
                          context_after=r.get("context_after"), context_source=r.get("counts_source") or "",
                          label=label, must_fail=label not in ("good",) and label not in WARNED_LABELS))
    return items


# held to TARGET_EMPTY_RECALL (CI fails below it); the others are printed as not yet held
EMPTY_HELD = ("published-empty", "generated-empty", "generated-empty-2")
EMPTY_SETS = ("published-empty", "generated-empty", "generated-empty/tokens", "generated-empty-2",
              "generated-empty-2/tokens")
TARGET_EMPTY_RECALL = 0.95
SETS = AGENT_SETS + SESSION_SETS + (PUBLISHED_SET, "model", "openclaw", "gemma", "swapped", "pages", "human", "docs", "pairs", "grounding", "development", "held-out",
        "adversarial", "fresh") + EMPTY_SETS


def all_items() -> list:
    models = model_items()
    return agent_items() + session_items() + published_items() + models + model_items("openclaw") + model_items("gemma") + swapped_items(models) + page_items() \
        + human_items() + docs_items() + pair_items() + grounding_items() + hand_items() + empty_items()


def store_verdict(items: list, settings=DEFAULT):
    """guard_verdict as a check of a store sees each item: each set and language is one
    store, whose inputs give the word frequencies grounding weighs words by."""
    texts = defaultdict(set)
    for it in items:
        if it.input_text:
            texts[(it.set, it.lang)].add(it.input_text)
    backgrounds = {k: background_of(v, settings) for k, v in texts.items()}
    return lambda item: guard_verdict(item, settings, backgrounds.get((item.set, item.lang)))


def guard_verdict(item: Item, settings=DEFAULT, background=None) -> tuple:
    """(kinds reported, failures or warnings, {kind: reason}, the failure kinds, the forms the failures name);
    `background`: the store's word frequencies, if any."""
    tracker = StaleTracker()
    for i, earlier in enumerate(item.context):
        tracker.detect(SummaryRecord(f"ctx{i}", earlier, stale_scope="dag"))
    rec = SummaryRecord(item.id, item.content, "corpus", input_text=item.input_text, input_tokens=item.input_tokens,
                        previous=item.previous, stale_scope="dag" if item.context else None,
                        context_before=item.context_before, context_after=item.context_after,
                        context_source=item.context_source)
    res = check_record(rec, settings, tracker, background=background)
    kinds = set(res.failures)
    reasons = dict(res.reasons)
    for f in res.findings:
        if not f.failure and f.kind in WARNING_KINDS + NOTED_KINDS:
            kinds.add(f.kind)
            reasons.setdefault(f.kind, f.reason)
        if f.kind == "repetition" and f.figures.get("runs_to_end"):
            kinds.add("cut_off")        # a loop that runs to the end was cut off, and says why
            reasons.setdefault("cut_off", f.reason)
    forms = {f.figures["form"] for f in res.findings if f.failure and f.figures.get("form")}
    return kinds, reasons, set(res.failures), forms


def seed_verdict(item: Item) -> tuple:
    input_tokens = seed_tokens(item.input_text) if item.input_text else (item.input_tokens or 0)
    fails = seed_rules.validate_summary(item.content, input_tokens, item.previous)
    if item.context and item.content in item.context:
        fails.append("stale")
    return set(fails), {}, set(fails), set()


def evaluate(items: list, verdict) -> dict:
    """cells[(set, lang, kind)] = {neg, fa, pos, hit, fa_ids, miss_ids}; good[(set, lang)] = [n, alarmed, ids]."""
    cells = defaultdict(lambda: {"neg": 0, "fa": 0, "pos": 0, "hit": 0, "fa_ids": [], "miss_ids": []})
    good = defaultdict(lambda: [0, 0, []])
    alarm_kinds = defaultdict(Counter)        # [set]: the kinds of the false alarms on its good items
    reasons = {}
    core = [0, 0, []]
    hand_real = [0, 0, []]
    noted = defaultdict(lambda: [0, 0, 0, 0, []])     # [(set, kind)]: items, with it, good, good with it, ids
    info_free = defaultdict(lambda: [0, 0, defaultdict(int), []])  # [(set, lang)]: items, failed, {kind: n}, missed ids
    # [(set, label)]: items, failed, missed ids, {kind: n}, named, ids failed but not named
    must_fail = defaultdict(lambda: [0, 0, [], defaultdict(int), 0, []])
    # [(set, lang)] of the agents' and published sets: good, good failed, broken, broken caught, named
    by_lang = defaultdict(lambda: [0, 0, 0, 0, 0])
    for it in items:
        got, why, failed_kinds, forms = verdict(it)
        reasons[(it.set, it.id)] = why
        if it.must_fail:
            row = must_fail[(it.set, it.label)]
            failed = sorted(failed_kinds)
            row[0] += 1
            row[1] += int(bool(failed))
            row[3]["+".join(failed) or "none"] += 1
            if not failed:
                row[2].append(it.id)
            # named: the failure says what it is (the kind or the form its label expects)
            want = EXPECTED_NAME.get(it.label.split(":")[-1])
            named = bool(failed) and (want is None or want in failed_kinds or want in forms)
            row[4] += int(named)
            if failed and not named:
                row[5].append(it.id)
            if it.set in AGENT_SETS + SESSION_SETS + (PUBLISHED_SET,):
                b = by_lang[(it.set, it.lang)]
                b[2] += 1
                b[3] += int(bool(failed))
                b[4] += int(named)
        elif it.label in WARNED_LABELS:
            row = must_fail[(it.set, it.label)]
            kind = WARNED_LABELS[it.label]
            row[0] += 1
            row[1] += int(kind in got)
            row[3]["+".join(sorted(k for k in got if k in failed_kinds or k == kind)) or "none"] += 1
            row[4] += int(kind in got)
            if kind not in got:
                row[2].append(it.id)
            if it.set in AGENT_SETS + SESSION_SETS + (PUBLISHED_SET,):
                b = by_lang[(it.set, it.lang)]
                b[2] += 1
                b[3] += int(kind in got)
                b[4] += int(kind in got)
        if it.set in EMPTY_SETS:
            row = info_free[(it.set, it.lang)]
            failed = sorted(failed_kinds)
            row[0] += 1
            row[1] += int(bool(failed))
            row[2][failed[0] if len(failed) == 1 else "+".join(failed) if failed else "none"] += 1
            if not failed:
                row[3].append(it.id)
        is_good = it.label in ("", "good") and not any(v for k, v in it.truth.items() if k not in WARNING_KINDS)
        for kind in NOTED_KINDS if it.input_text else ():      # each is judged against the history
            n = noted[(it.set, kind)]
            n[0] += 1
            n[2] += int(is_good)
            if kind in got:
                n[1] += 1
                n[3] += int(is_good)
                n[4].append(it.id)
        # a good item: no failure it has; a false alarm there: a failure of a kind it is
        # labelled free of (a kind left unlabelled, as ambiguous, is not counted)
        # (a cut_off failure, on text not labelled for it either way, is a false one: an excerpt ends where it
        # was cut, a summary's failure is to stop inside the structure it was asked for)
        failures = {k for k in failed_kinds if it.truth.get(k) is False or (k == "cut_off" and it.truth.get(k) is None)}
        if it.label in ("", "good") and not any(v for k, v in it.truth.items() if k not in WARNING_KINDS):
            g = good[(it.set, it.lang)]
            g[0] += 1
            if failures:
                g[1] += 1
                g[2].append(it.id)
                alarm_kinds[it.set].update(failures)
            if it.set in AGENT_SETS + SESSION_SETS + (PUBLISHED_SET,):
                b = by_lang[(it.set, it.lang)]
                b[0] += 1
                b[1] += int(bool(failures))
        for kind, t in it.truth.items():
            if t is None:
                continue
            c = cells[(it.set, it.lang, kind)]
            if t:
                c["pos"] += 1
                if kind in got:
                    c["hit"] += 1
                else:
                    c["miss_ids"].append(it.id)
                if it.form in ("seed", "real") and kind not in WARNING_KINDS:
                    bucket = core if it.form == "seed" else hand_real
                    bucket[0] += 1
                    bucket[1] += int(kind in got)
                    if kind not in got:
                        bucket[2].append(it.id)
            else:
                c["neg"] += 1
                if kind in got:
                    c["fa"] += 1
                    c["fa_ids"].append(it.id)
    return {"cells": cells, "good": good, "core": core, "hand_real": hand_real, "reasons": reasons, "noted": noted,
            "info_free": info_free, "alarm_kinds": alarm_kinds, "must_fail": must_fail, "by_lang": by_lang}


def info_free_report(res: dict) -> str:
    """The information-free sets: per set and language, how many raised a failure, of which kind."""
    rows = res.get("info_free") or {}
    if not rows:
        return ""
    lines = ["\ninformation-free summaries: each must raise a failure (any kind)",
             f"  {'set':<26}{'lang':<6}{'failed':>12}   kinds reported (none: no failure)"]
    for st in EMPTY_SETS:
        per = {lang: r for (s, lang), r in sorted(rows.items()) if s == st}
        if len(per) > 1:
            tot = [sum(r[0] for r in per.values()), sum(r[1] for r in per.values()), defaultdict(int),
                   [i for r in per.values() for i in r[3]]]
            for r in per.values():
                for k, v in r[2].items():
                    tot[2][k] += v
            per["all"] = tot
        for lang, r in per.items():
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(r[2].items(), key=lambda kv: -kv[1]))
            lines.append(f"  {st:<26}{lang:<6}{f'{r[1]}/{r[0]} {r[1] / r[0]:.0%}':>12}   {kinds}  {_ids(r[3], 3)}")
    return "\n".join(lines)


def agents_report(res: dict) -> str:
    """The agents' sets, short sessions and long, and the published broken summaries: per agent, good
    summaries failed, and each label of broken one caught (any failure) and named (its kind or form);
    then per set and language."""
    sets = AGENT_SETS + SESSION_SETS + (PUBLISHED_SET,)
    if not any(s in sets for (s, _l) in res.get("must_fail", {})) and not any(s in sets for (s, _l) in res["good"]):
        return ""
    lines = ["\nwhat real agents stored: every good summary valid, every broken one a failure (any kind), named",
             f"  {'set':<21}{'good failed':>12}  {'label':<15}{'caught':>8}{'named':>7}   kinds reported"]
    for st in sets:
        gn = sum(v[0] for (s, _l), v in res["good"].items() if s == st)
        ga = sum(v[1] for (s, _l), v in res["good"].items() if s == st)
        if not gn and not any(s == st for (s, _l) in res.get("must_fail", {})):
            continue
        ids = [i for (s, _l), v in res["good"].items() if s == st for i in v[2]]
        lines.append(f"  {st:<21}{f'{ga}/{gn}':>12}  {'':<15}{'':>8}{'':>7}   {_ids(ids, 3)}")
        for (s, label), r in sorted(res.get("must_fail", {}).items()):
            if s == st:
                kinds = ", ".join(f"{k} {v}" for k, v in sorted(r[3].items(), key=lambda kv: -kv[1]))
                lines.append(f"  {'':<21}{'':>12}  {label:<15}{f'{r[1]}/{r[0]}':>8}{f'{r[4]}/{r[0]}':>7}   {kinds}  "
                             f"{_ids(r[2] + r[5], 3)}")
    rows = res.get("by_lang") or {}
    if rows:
        lines += ["\n  per set and language: good summaries failed; broken ones caught, named",
                  f"  {'set':<21}{'lang':<6}{'good failed':>12}{'broken caught':>15}{'named':>8}"]
        for (st, lang), v in sorted(rows.items(), key=lambda kv: (sets.index(kv[0][0]), kv[0][1])):
            lines.append(f"  {st:<21}{lang:<6}{f'{v[1]}/{v[0]}':>12}{f'{v[3]}/{v[2]}':>15}{f'{v[4]}/{v[2]}':>8}")
    return "\n".join(lines)


def _ids(ids: list, n: int = 4) -> str:
    if not ids:
        return ""
    more = f" +{len(ids) - n}" if len(ids) > n else ""
    return " ".join(ids[:n]) + more


def _sum(cells: dict, pred) -> dict:
    out = {"neg": 0, "fa": 0, "pos": 0, "hit": 0, "fa_ids": [], "miss_ids": []}
    for key, c in cells.items():
        if pred(*key):
            for k in ("neg", "fa", "pos", "hit"):
                out[k] += c[k]
            out["fa_ids"] += c["fa_ids"]
            out["miss_ids"] += c["miss_ids"]
    return out


def report(res: dict, title: str, sets=SETS, by_lang: bool = True) -> str:
    cells, good = res["cells"], res["good"]
    lines = [title]
    for st in sets:
        langs = sorted({lang for (s, lang, _k) in cells if s == st})
        if not langs:
            continue
        gn = sum(v[0] for (s, _l), v in good.items() if s == st)
        ga = sum(v[1] for (s, _l), v in good.items() if s == st)
        lines.append(f"\n[{st}] {len(langs)} languages; good items with any failure reported: {ga}/{gn}"
                     f" = {ga / max(gn, 1):.2%}")
        lines.append(f"  {'lang':<7}{'kind':<19}{'false alarms':>16}{'recall':>14}   misses")
        rows = [(lang, k) for lang in langs for k in KINDS] if by_lang else []
        for kind in KINDS:
            tot = _sum(cells, lambda s, lang, k: s == st and k == kind)
            if tot["neg"] + tot["pos"]:
                rows.append(("all", kind))
        for lang, kind in rows:
            c = cells.get((st, lang, kind)) if lang != "all" else _sum(cells, lambda s, l2, k: s == st and k == kind)
            if not c or not (c["neg"] + c["pos"]):
                continue
            if lang != "all" and not (c["fa"] or c["pos"]):
                continue     # nothing to say: no positives, no false alarm
            fa = f"{c['fa']}/{c['neg']}" if c["neg"] else "-"
            rc = f"{c['hit']}/{c['pos']} {c['hit'] / c['pos']:.0%}" if c["pos"] else "-"
            lines.append(f"  {lang:<7}{kind:<19}{fa:>16}{rc:>14}   {_ids(c['fa_ids'] + c['miss_ids'])}")
    core, hr = res["core"], res["hand_real"]
    if core[0]:
        lines.append(f"\ncore forms (hand-written, the seed's targets): {core[1]}/{core[0]} = {core[1] / core[0]:.2%}"
                     f"  {_ids(core[2])}")
    if hr[0]:
        lines.append(f"hand-written real-world forms:                {hr[1]}/{hr[0]} = {hr[1] / hr[0]:.2%}  {_ids(hr[2])}")
    return "\n".join(lines)


class _Nothing:
    """An input with no words (the word-salad measure of a text that nothing excuses)."""
    def __init__(self, text: str):
        self.text = text
        self.unit_set = frozenset()


def salad_on_real_text(settings=DEFAULT) -> list:
    """ungrounded's word-salad measure (the Wilson lower bound of the share of a text's words
    that are neither in its input nor words of its language or English) on real human text,
    highest first: each human excerpt against the next one in its language (the `pairs`
    construction), each manual-page overview against the rest of its page, each Debian
    document against nothing (its own language read from itself). The rule needs
    ungrounded_salad_min_unknown: real text must stay under it in every language. (Against
    nothing, an overview that lists its commands, `unxz, xzcat, lzma, unlzma`, would not:
    names the input does not hold are not words; the rule runs only where there is an input.)"""
    from compaction_guard.detectors.overlap import InputView
    out = []
    for it in pair_items():
        if it.truth.get("language_drift") is False:
            out.append((it, InputView(it.input_text)))
    out += [(it, InputView(it.input_text)) for it in grounding_items() if "<-" not in it.id]
    out += [(it, _Nothing(it.content)) for it in docs_items()]
    rows = []
    for it, view in out:
        r = grounding.salad(it.content, view, settings)
        if r:
            low = 1 - grounding.upper_bound(1 - r[0] / r[1], r[1], settings.ungrounded_confidence_z)
            rows.append((round(low, 3), it.set, it.lang, it.id, r[2][:4]))
    return sorted(rows, reverse=True)


def targets_missed(res: dict) -> list:
    problems = []
    cells, good = res["cells"], res["good"]
    for (st, lang), (n, alarmed, ids) in good.items():
        if st in ("human", "docs") and alarmed:
            problems.append(f"{st}/{lang}: {alarmed} false alarm(s) ({_ids(ids, 3)})")
    for st in SETS:
        if st in NOT_YET_HELD:
            continue
        for kind in FAILURE_KINDS:
            if kind in WARNING_KINDS:       # (its cells count its warnings too: its failures are in `good`)
                continue
            c = _sum(cells, lambda s, lang, k: s == st and k == kind)
            if c["neg"] and c["fa"] / c["neg"] > TARGET_FALSE_ALARMS and (st, kind) not in NOT_HELD:
                problems.append(f"{st}/{kind}: false alarms {c['fa']}/{c['neg']} above 0.5%")
        for kind in ("language_drift", "ungrounded"):     # not one false alarm, in any language
            c = _sum(cells, lambda s, lang, k: s == st and k == kind)
            if c["fa"]:
                problems.append(f"{st}/{kind}: {c['fa']} false alarm(s) (target 0)")
    # every labelled real-model loop: the model set's and the manual-page summaries' (each
    # set's own figure is in the table)
    loops = _sum(cells, lambda s, lang, k: s in ("model", "openclaw", "gemma", "pages") and k == "repetition")
    if loops["pos"] and loops["hit"] / loops["pos"] < TARGET_MODEL_LOOP_RECALL:
        problems.append(f"model+openclaw+gemma+pages/repetition: recall {loops['hit']}/{loops['pos']} below 97%")
    for st in EMPTY_SETS:
        n, failed = info_free_recall(res, st)
        if n and failed / n < TARGET_EMPTY_RECALL and st in EMPTY_HELD:
            problems.append(f"{st}: {failed}/{n} raised a failure, below {TARGET_EMPTY_RECALL:.0%}")
    for st in AGENT_SETS + SESSION_SETS + (PUBLISHED_SET,):   # every broken summary caught, and named
        if st in NOT_YET_HELD:
            continue
        n, failed, missed = agents_caught(res, st, held=True)
        if failed < n:
            problems.append(f"{st}: {n - failed} of {n} broken summaries raised no failure ({_ids(missed, 3)})")
        rows = [v for (s, label), v in res.get("must_fail", {}).items() if s == st and not label.startswith("smollm2:")]
        unnamed = [i for v in rows for i in v[5]]
        if unnamed and NAMES_HELD:
            problems.append(f"{st}: {len(unnamed)} broken summaries caught but not named ({_ids(unnamed, 3)})")
    for (st, lang), (n, alarmed, ids) in good.items():
        if st in SESSION_SETS and alarmed and st not in NOT_YET_HELD:
            problems.append(f"{st}/{lang}: {alarmed} good summaries failed ({_ids(ids, 3)})")
    core, hr = res["core"], res["hand_real"]
    if core[0] and core[1] / core[0] < TARGET_CORE_RECALL:
        problems.append(f"core forms: recall {core[1]}/{core[0]} below 100%")
    if hr[0] and hr[1] / hr[0] < TARGET_HAND_REAL_RECALL:
        problems.append(f"hand-written real-world forms: recall {hr[1]}/{hr[0]} below 90%")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--misses", action="store_true", help="list every wrong verdict with the guard's reason")
    ap.add_argument("--seed", action="store_true", help="also evaluate the seed's literal rules")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated sets to evaluate")
    ap.add_argument("--ungrounded-review", action="store_true", help="list the model outputs reported ungrounded")
    ap.add_argument("--write-docs", action="store_true",
                    help="write docs/measured.md and the README's figures from this evaluation")
    ap.add_argument("--check-docs", action="store_true",
                    help="exit 1 when docs/measured.md or the README's figures differ from this evaluation")
    args = ap.parse_args(argv)
    wanted = set(args.sets.split(","))
    items = [it for it in all_items() if it.set in wanted]
    res = evaluate(items, store_verdict(items))
    if args.json:
        out = {f"{s}|{lang}|{k}": {x: v for x, v in c.items()} for (s, lang, k), c in res["cells"].items()}
        print(json.dumps({"cells": out, "core": res["core"][:2], "hand_real": res["hand_real"][:2]}, indent=1))
    else:
        counts = defaultdict(int)
        for it in items:
            counts[it.set] += 1
        print("items: " + ", ".join(f"{s} {counts[s]}" for s in SETS if counts[s]))
        print(report(res, "compaction-resilience-guard (default settings): real data first, then the hand-written corpus",
                     sets=tuple(x for x in SETS if x not in EMPTY_SETS)))
        print(agents_report(res))
        print(info_free_report(res))
    if not args.json:
        for (st, kind), (n, with_it, n_good, good_with, ids) in sorted(res["noted"].items()):
            if with_it or st in ("grounding", "development", "held-out", "fresh", "adversarial"):
                print(f"{kind} warnings (no set labels them) [{st}]: {with_it} of {n} items with a history, {good_with} of "
                      f"{n_good} good ones {_ids(ids, 3) if with_it else ''}")
    if args.seed:
        print()
        print(report(evaluate(items, seed_verdict), "the seed's literal rules, same items", by_lang=False))
    if args.misses:
        print("\nwrong verdicts:")
        by_id = {(it.set, it.id): it for it in items}
        for (st, lang, kind), c in sorted(res["cells"].items()):
            for what, ids in (("false alarm", c["fa_ids"]), ("missed", c["miss_ids"])):
                for i in ids:
                    why = res["reasons"].get((st, i), {}).get(kind, "")
                    print(f"  {what:<12} {st:<12} {kind:<18} {i:<50} {by_id[(st, i)].content[:60]!r} {why[:140]}")
    # with --json, stdout holds the JSON alone: what follows goes to stderr
    say = functools.partial(print, file=sys.stderr if args.json else sys.stdout)
    for (st, kind), why in NOT_HELD.items():
        c = _sum(res["cells"], lambda s, lang, k: s == st and k == kind)
        if c["neg"]:
            say(f"\nnot held to the false-alarm target: {st}/{kind} {c['fa']}/{c['neg']}: {why}")
    short_of = (
        ("language_drift", ("model", "openclaw", "gemma", "pairs"), TARGET_DRIFT_RECALL, "the misses are tool-log histories partly in the "
         "summary's language, copies of a history's lines in another language, and loops"),
        ("ungrounded", ("swapped", "pages", "pairs", "grounding"), TARGET_UNGROUNDED_RECALL, "text about another "
         "subject in the same genre shares its vocabulary (files, options, commands); short ones are not judged"),
    )
    pending = 0             # targets printed as not yet held: the closing line says so
    for kind, sets, target, why in short_of:
        for st in sets:
            c = _sum(res["cells"], lambda s, lang, k: s == st and k == kind)
            if c["pos"] and c["hit"] / c["pos"] < target:
                sep = ";" if kind == "language_drift" else ":"
                pending += 1
                say(f"\nnot yet held: {st}/{kind} recall {c['hit']}/{c['pos']} "
                      f"= {c['hit'] / c['pos']:.0%}, target {target:.0%}{sep} {why}")
    real = [(label, v) for (s, label), v in res.get("must_fail", {}).items() if s in SESSION_SETS
            and label.startswith("smollm2:")]
    if real:
        n, caught = sum(v[0] for _, v in real), sum(v[1] for _, v in real)
        named = sum(v[4] for _, v in real)
        missed = [i for _, v in real for i in v[2]]
        say(f"\nSmolLM2's own answers through the four agents (real/sessions_review.yaml): {caught}/{n} broken ones "
            f"raised a failure, {named} named as labelled" + (f"; missed: {_ids(missed, 5)}" if missed else "") +
            " (reported, not held: a real model's answer has no form chosen for it)")
    for st in EMPTY_SETS:
        n, failed = info_free_recall(res, st)
        if n and failed / n < TARGET_EMPTY_RECALL and st not in EMPTY_HELD:
            why = ("with only tokensBefore known, content the model invented cannot be told from a summary of "
                   "the history it never saw (a request about heartbeats, a JSON record, a chat to the user); with "
                   "the history known the same texts are held (see the set without /tokens)")
            pending += 1
            say(f"\nnot yet held: {st}: {failed}/{n} = {failed / n:.0%} raised a failure, target "
                f"{TARGET_EMPTY_RECALL:.0%}: {why}")
    if args.ungrounded_review:
        print("\nmodel outputs reported ungrounded (read each one; label it in model_review.yaml):")
        for it in items:
            if it.set in ("model", "openclaw", "gemma") and "ungrounded" in res["reasons"].get((it.set, it.id), {}):
                print(f"  {it.id}: {it.content[:160]!r}\n      input: {it.input_text[:120]!r}")
    problems = targets_missed(res)
    if args.write_docs or args.check_docs:
        import docs_measured
        counts = defaultdict(int)
        for it in items:
            counts[it.set] += 1
        seed = evaluate(items, seed_verdict)
        for path, text in docs_measured.pages(sys.modules[__name__], res, seed, counts).items():
            now = path.read_text(encoding="utf-8") if path.exists() else None
            if now == text:
                continue
            if args.write_docs:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                say(f"wrote {path.relative_to(ROOT)}")
            else:
                problems.append(f"{path.relative_to(ROOT)} differs from this evaluation: run "
                                "python3 tests/corpus/evaluate.py --write-docs and commit it")
    if wanted & {"human", "docs", "grounding", "pairs"}:
        salad = salad_on_real_text()
        top = salad[0] if salad else None
        say(f"\nword-salad measure on real text ({len(salad)}: human excerpts against the next in their language, "
            f"overviews against their page, documents against nothing): highest {top[0] if top else 0} ({top[1:4] if top else ''}), "
            f"the rule needs {DEFAULT.ungrounded_salad_min_unknown}")
        if top and top[0] >= DEFAULT.ungrounded_salad_min_unknown:
            problems.append(f"word salad measured on real text: {top}")
    if problems:
        say("\nTARGETS MISSED:\n  " + "\n  ".join(problems))
        return 1
    say("\nthe targets CI holds are met" + (f"; {pending} target{'s' if pending != 1 else ''} printed above as not yet "
                                            "held (not enforced)" if pending else "; every target is held"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
