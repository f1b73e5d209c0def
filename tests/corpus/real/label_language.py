"""Label the language of each real model output, independently of the guard's detector.

    pip install lingua-language-detector pycld2     # the labellers (not the guard's fastText)
    python3 tests/corpus/real/label_language.py     # writes language_labels.jsonl

The model's summaries of manual pages (model_pages.jsonl) and the later set
(model_openclaw.jsonl, generate_openclaw.py) and another model family's outputs
(model_gemma.jsonl, generate_gemma.py) get their output's language the same way.

Two identifiers that work differently from the guard's (fastText lid.176): lingua's
n-gram models and Google's CLD2. An output gets a language only when both name the same
one (lingua's confidence at least 0.5, CLD2 calling its answer reliable) on the output's
prose (code, paths, identifiers, numbers set aside; at least 40 letters); otherwise it
stays unlabelled (null) and counts for nothing in the evaluation. `language_drift` is
then "the output's language differs from its history's" (histories.jsonl's `lang`), unless
a quarter or more of the history's lines (by letters, as lingua reads them) are in the
output's language: such a history is not clearly one language (the issue's definition).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
_NORM = {"iw": "he", "zh-hant": "zh", "zh-tw": "zh", "zh-cn": "zh", "nb": "no"}


def norm(code: str) -> str:
    code = (code or "").lower()
    return _NORM.get(code, code.split("-")[0])


_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.S)
_TOKEN = re.compile(r"\S*(?:://|[/\\_@#=<>{}\[\]|$%^*~:]|\d)\S*")
_LETTER = re.compile(r"[^\W\d_]")


def prose(text: str) -> str:
    """The words people read: code, URLs, paths, identifiers, numbers and log prefixes
    (`[10:12] name:`) set aside; they read as English in any language."""
    return " ".join(_TOKEN.sub(" ", _CODE.sub(" ", text)).split())


def both_languages(text: str, det) -> tuple:
    """(lingua's language, CLD2's) of a text's prose, each None when unsure or too short;
    `det`: a lingua detector."""
    import pycld2
    text = prose(text)
    conf = det.compute_language_confidence_values(text) if len(_LETTER.findall(text)) >= 40 else []
    lingua = norm(conf[0].language.iso_code_639_1.name) if conf and conf[0].value >= 0.5 else None
    try:
        reliable, _, details = pycld2.detect(text) if conf else (False, 0, [])
        cld = norm(details[0][1]) if reliable and details[0][1] != "un" else None
    except pycld2.error:
        cld = None
    return lingua, cld


def main() -> int:
    import pycld2
    from lingua import LanguageDetectorBuilder
    det = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models().build()
    out = []

    def label_output(r: dict, history: str) -> dict:
        """A model output's language label (both identifiers agreeing), and when it differs
        from its history's, the share of the history's lines in the output's language."""
        text = prose(r["output"])
        label = None
        if len(_LETTER.findall(text)) < 40:      # too few words to have a language
            text = ""
        conf = det.compute_language_confidence_values(text) if text.strip() else []
        lingua = norm(conf[0].language.iso_code_639_1.name) if conf and conf[0].value >= 0.5 else None
        try:
            reliable, _, details = pycld2.detect(text)
            cld = norm(details[0][1]) if reliable and details[0][1] != "un" else None
        except pycld2.error:
            cld = None
        if lingua and lingua == cld:
            label = lingua
        # how much of the history is in the output's language (lines lingua identifies, by
        # letters): a history a quarter or more in that language is not "clearly one
        # language", and an output in it is no drift by the issue's definition
        share = None
        if label and label != norm(r["lang"]):
            total = hit = 0
            for ln in history.splitlines():
                w = prose(ln)
                n = len(_LETTER.findall(w))
                if n < 12:
                    continue
                lang = det.detect_language_of(w)
                total += n
                hit += n if lang is not None and norm(lang.iso_code_639_1.name) == label else 0
            share = round(hit / total, 3) if total else None
        return {"id": r["id"], "history_language": norm(r["lang"]), "output_language": label,
                "history_share_in_output_language": share, "lingua": lingua, "cld2": cld}

    # the model's outputs (generate_model.py), the later set (generate_openclaw.py), then
    # another model family's (generate_gemma.py)
    for outputs, histories in (("model_outputs.jsonl", "histories.jsonl"),
                               ("model_openclaw.jsonl", "openclaw_histories.jsonl"),
                               ("model_gemma.jsonl", "gemma_histories.jsonl")):
        if not (HERE / outputs).exists():
            continue
        hist = {h["id"]: h["text"] for h in map(json.loads, open(HERE / histories, encoding="utf-8"))}
        for line in open(HERE / outputs, encoding="utf-8"):
            r = json.loads(line)
            out.append(label_output(r, hist.get(r["history"], "")))

    def both(text: str) -> tuple:
        return both_languages(text, det)

    # the human excerpts too: a translated manual page keeps untranslated sections (an
    # excerpt of a French page may be English); pairs of excerpts use these labels
    for line in open(HERE / "human.jsonl", encoding="utf-8"):
        r = json.loads(line)
        lingua, cld = both(r["text"])
        out.append({"id": r["id"], "file_language": norm(r["lang"]), "text_language": lingua if lingua == cld else None,
                    "lingua": lingua, "cld2": cld})
    # the model's summaries of manual pages (generate_pages.py): the output's language, and
    # the page's as its file says
    pages = HERE / "model_pages.jsonl"
    for line in (open(pages, encoding="utf-8") if pages.exists() else []):
        r = json.loads(line)
        lingua, cld = both(r["output"])
        out.append({"id": r["id"], "page_language": norm(r["lang"]), "output_language": lingua if lingua == cld else None,
                    "lingua": lingua, "cld2": cld})
    # the manual pages' overviews and the rest of their page (collect_grounding.py): a page
    # may keep its NAME and DESCRIPTION untranslated while the rest is translated, or the
    # reverse; such an overview is in another language than its input, which is drift's
    # question, not grounding's
    grounding = HERE / "grounding.jsonl"
    for line in (open(grounding, encoding="utf-8") if grounding.exists() else []):
        r = json.loads(line)
        labels = {}
        for side, text in (("overview", r["summary"]), ("input", r["input"])):
            lingua, cld = both(text)
            labels[f"{side}_language"] = lingua if lingua == cld else None
        out.append({"id": r["id"], "grounding_page_language": norm(r["lang"]), **labels})
    with open(HERE / "language_labels.jsonl", "w", encoding="utf-8") as fh:
        for x in out:
            fh.write(json.dumps(x, ensure_ascii=False) + "\n")
    labelled = [x for x in out if x.get("output_language") and "history_language" in x]
    drift = sum(1 for x in labelled if x["output_language"] != x["history_language"])
    print(f"model outputs: {len(labelled)} labelled, {drift} in another language than their history")
    human = [x for x in out if "text_language" in x]
    print(f"human excerpts: {sum(1 for x in human if x['text_language'])} of {len(human)} labelled, "
          f"{sum(1 for x in human if x['text_language'] and x['text_language'] != x['file_language'])} "
          "in another language than their file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
