"""Labels for the real model outputs, by rules fixed before the detectors saw them.

Each output gets, per kind, True (that failure), False (not that failure) or None
(ambiguous: left out of that kind's figures). The rules rest on measurements, not
on the guard's detectors, and were written before the detectors were run on the
outputs (see the git history of this file):

- repetition: digits are set aside (each run of digits becomes "0": a loop through
  a counter or a timestamp is still a loop) and whitespace is collapsed. The
  longest back-to-back repeat of any unit (1-400 characters, any script, with or
  without spaces) is measured. A loop: the unit repeats at least 3 times back to
  back, the repeated stretch covers at least 120 characters and at least 25% of
  the output, the unit holds a letter or digit (or the stretch is 300+ characters),
  and the same unit does not repeat 3 times back to back in the (digit-masked)
  history: a model copying a repetitive input is not looping. Not a loop: no
  back-to-back repeat of 3+ covering 40+ characters that the history lacks.
  Between the two: unlabelled.
- inflation: the model's own tokenizer (the server's /tokenize) counts output and
  history. Inflated: output tokens > history tokens. Not inflated: at most 80% of
  the history's tokens (the guard estimates tokens, within about 12%). Between:
  unlabelled.
- cut_off: the server's finish_reason is "length".
- empty: blank, or fewer than 3 letters. Not empty: 40+ letters or digits.
- garbled: U+FFFD, C0/C1 control characters, chat-template or special tokens
  printed as text (<|im_start|>, <|im_end|>, <|endoftext|>, <s>, </s>), or text
  that ftfy's fix_encoding changes (mojibake). Otherwise not garbled: a small model
  writes nonsense in real words, which is not noise (#12's grounding is for that).

    .venv/bin/python tests/corpus/real/label_model.py   # writes model_labels.jsonl (page_labels.jsonl,
                                                        # openclaw_labels.jsonl, gemma_labels.jsonl)
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
_DIGITS = re.compile(r"\d+")
_WS = re.compile(r"\s+")
_ALNUM = re.compile(r"[^\W_]")
_SPECIAL = re.compile(r"<\|(?:im_start|im_end|endoftext|eot_id|start_header_id|end_header_id)\|>|</?s>")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")


def mask(text: str) -> str:
    return _WS.sub(" ", _DIGITS.sub("0", text)).strip()


_TANDEM = re.compile(r"(.{1,400}?)\1{2,}", re.S)


def longest_tandem(s: str) -> tuple:
    """(covered chars, unit, repeats) of the longest back-to-back repeat (3+ copies),
    tried from every position (finditer alone would take "---" inside a repeated line
    and skip past the line's own repeat: fixed after the first evaluation, see the
    note in this file's history)."""
    best = (0, "", 0)
    i = 0
    while i < len(s):
        m = _TANDEM.match(s, i)
        if m:
            span = m.end() - m.start()
            if span > best[0]:
                best = (span, m.group(1), span // len(m.group(1)))
        i += 1
    return best


def text_labels(out: str, history: str) -> tuple:
    """(labels, figures) of the rules that read only the output and its input: repetition,
    empty, garbled."""
    m_out, m_in = mask(out), mask(history)
    covered, unit, reps = longest_tandem(m_out)
    unit_in_history = bool(unit) and (unit * 3) in m_in
    informative = bool(_ALNUM.search(unit)) or covered >= 300
    if covered >= 120 and covered >= 0.25 * len(m_out) and informative and not unit_in_history:
        rep = True
    elif covered < 40 or unit_in_history:
        rep = False
    else:
        rep = None
    letters = len(_ALNUM.findall(out))
    empty = True if letters < 3 else (False if letters >= 40 else None)
    import ftfy
    garbled = bool(_CONTROL.search(out) or _SPECIAL.search(out) or ftfy.fix_encoding(out) != out)
    return ({"repetition": rep, "empty": empty, "garbled": garbled},
            {"repeat_chars": covered, "repeat_unit": unit[:60], "repeats": reps})


def label(rec: dict, history: str) -> dict:
    labels, figures = text_labels(rec["output"], history)
    it, ot = rec["input_tokens"], rec["output_tokens"]
    infl = True if ot > it else (False if ot <= 0.8 * it else None)
    return {"id": rec["id"], "lang": rec["lang"], "style": rec["style"],
            "labels": {"repetition": labels["repetition"], "inflation": infl,
                       "cut_off": rec["finish_reason"] == "length", "empty": labels["empty"],
                       "garbled": labels["garbled"]},
            "figures": dict(figures, output_tokens=ot, input_tokens=it)}


def label_file(outputs: str, histories: str, labels: str) -> int:
    """Label every output of `outputs` against its history; write `labels`; how many."""
    hist = {h["id"]: h["text"] for h in map(json.loads, open(HERE / histories, encoding="utf-8"))}
    rows = [json.loads(x) for x in open(HERE / outputs, encoding="utf-8") if x.strip()]
    with open(HERE / labels, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(label(r, hist[r["history"]]), ensure_ascii=False) + "\n")
    return len(rows)


def main() -> None:
    n = label_file("model_outputs.jsonl", "histories.jsonl", "model_labels.jsonl")
    print(f"{n} outputs labelled", file=sys.stderr)
    # the later set (generate_openclaw.py: the prompts compactors send), by the same rules
    if (HERE / "model_openclaw.jsonl").exists():
        n = label_file("model_openclaw.jsonl", "openclaw_histories.jsonl", "openclaw_labels.jsonl")
        print(f"{n} outputs of the later set labelled", file=sys.stderr)
    # another model family (generate_gemma.py: Gemma 3 270M), by the same rules
    if (HERE / "model_gemma.jsonl").exists():
        n = label_file("model_gemma.jsonl", "gemma_histories.jsonl", "gemma_labels.jsonl")
        print(f"{n} outputs of the other model family labelled", file=sys.stderr)
    # the model's summaries of manual pages (generate_pages.py), against the page it was given
    pages_out = HERE / "model_pages.jsonl"
    if pages_out.exists():
        pages = {p["id"]: p for p in map(json.loads, open(HERE / "grounding.jsonl", encoding="utf-8"))}
        rows = [json.loads(x) for x in open(pages_out, encoding="utf-8") if x.strip()]
        with open(HERE / "page_labels.jsonl", "w", encoding="utf-8") as fh:
            for r in rows:
                labels, figures = text_labels(r["output"], pages[r["page"]]["input"][: r["input_chars"]])
                labels["cut_off"] = r["finish_reason"] == "length"
                fh.write(json.dumps({"id": r["id"], "lang": r["lang"], "labels": labels, "figures": figures},
                                    ensure_ascii=False) + "\n")
        print(f"{len(rows)} page summaries labelled", file=sys.stderr)


if __name__ == "__main__":
    main()
