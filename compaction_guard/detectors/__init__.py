"""Detectors: each module turns a summary into findings of one kind.

To add a detector: write detectors/<kind>.py with `detect(...) -> list[Finding]`,
call it from `detect_steps` below after a `yield` of its stage (one of STAGES), add
its kind to findings.FAILURE_KINDS if it is a failure kind, and add labelled samples
for it to tests/corpus/.

`detect_all` checks one summary; `detect_many` a batch, each stage for all of it before
the next: the same verdicts, in less time (check.iter_results uses it).
"""
from __future__ import annotations

from typing import Optional

from . import answers, contract, coverage, cutoff, empty, garbled, grounding, identifiers, inflation, language, markers, \
    overlap, repetition, transcript
from .stale import StaleTracker
from ..contract import minimum_tokens
from ..reasoning import strip_reasoning

__all__ = ["detect_all", "detect_many", "detect_steps", "StaleTracker", "answers", "coverage", "cutoff", "empty", "garbled", "grounding",
           "identifiers", "inflation", "language", "markers", "overlap", "repetition", "transcript"]


def detect_all(content: str, settings, *, output_tokens: int, input_tokens: Optional[int],
               allow_own_l3: bool = False, input_text: Optional[str] = None, measures: Optional[dict] = None,
               background: Optional[overlap.Background] = None, previous: Optional[str] = None,
               context: tuple = (None, None), required=None) -> list:
    """Run every per-summary detector on `content`; staleness is checked by StaleTracker.
    `measures`, when given, receives what was measured against the input (fidelity figures:
    word overlap, grounding support, identifier retention), whatever was found. `background`:
    the store's word frequencies (overlap.Background), in a check of a store. `previous`: the
    summary this one replaced, when known; `context`: the agent's own (before, after[, whose])
    count of its whole context around the compaction, when it keeps one (whose: which
    numbers of which agent, for the reason), which judges the size instead of the text; `required`: what the request
    demanded of the answer (contract.Contract), when it is known."""
    steps = detect_steps(content, settings, output_tokens=output_tokens, input_tokens=input_tokens,
                         allow_own_l3=allow_own_l3, input_text=input_text, measures=measures, background=background,
                         previous=previous, context=context, required=required)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        return done.value


# The order the detectors run in, as detect_steps announces them: detect_many runs each of
# them for every summary of a batch before the next one.
STAGES = ("reasoning", "empty", "markers", "garbled", "repetition", "unfilled", "information_free", "cut_off",
          "language", "grounding", "identifiers", "no_language")


def detect_many(calls: list) -> list:
    """detect_all for many summaries: `calls` is a list of (content, settings, keywords), the
    findings come back in that order. Each detector runs for every summary before the next
    one does (STAGES): a summary's verdict is the same as detect_all's, and a batch of short
    summaries takes about a tenth less time than one at a time (the processor keeps one
    detector's code and patterns at hand instead of a dozen's)."""
    out = [None] * len(calls)
    waiting = {stage: [] for stage in STAGES}
    # summaries alike one after another (ASCII text takes other paths than the rest, long
    # text other paths than short): 1-3% less time than in the batch's order
    order = sorted(range(len(calls)), key=lambda i: (not calls[i][0].isascii(), len(calls[i][0]) // 512))
    group = [(i, detect_steps(calls[i][0], calls[i][1], **calls[i][2])) for i in order]
    for stage in (None,) + STAGES:
        if stage is not None:
            group = waiting[stage]
        for i, steps in group:      # (a summary announces only stages after this one)
            try:
                waiting[next(steps)].append((i, steps))
            except StopIteration as done:
                out[i] = done.value
    return out


def detect_steps(content: str, settings, *, output_tokens: int, input_tokens: Optional[int],
                 allow_own_l3: bool = False, input_text: Optional[str] = None, measures: Optional[dict] = None,
                 background: Optional[overlap.Background] = None, previous: Optional[str] = None,
                 context: tuple = (None, None), required=None):
    """detect_all, as a generator that names each stage (STAGES) before it runs it and
    returns the findings (detect_many runs many at once). One generator: each stage of a
    batch resumes one frame, not a chain of them."""
    # the structure a request demands costs what it costs: not counted against the answer's size
    if required is not None:
        allowance = minimum_tokens(required)
        input_tokens = input_tokens + allowance if input_tokens else input_tokens
    # the agent's own counts of its context, when it keeps them, judge the size (inflation.py)
    before, after = context[0], context[1]
    whose = context[2] if len(context) > 2 else ""
    head = inflation.context(before, after, settings, whose) if before and after is not None \
        else inflation.against_before(output_tokens, before, settings, whose) if before else []
    # what the compaction model answered, where the agent kept it apart from what it stored
    answer = context[3] if len(context) > 3 else None
    if isinstance(answer, str) and not answer.strip() and content.strip():
        head = head + [empty.answered_nothing(content)]
    # the input's figures, measured on first use and shared by every check below
    view = overlap.InputView(input_text) if input_text else None
    extra = _request_words(required)
    yield "reasoning"
    reasoning = strip_reasoning(content)       # read by both of empty's checks
    yield "empty"
    findings = empty.detect(content, settings, input_tokens, input_text, reasoning)
    if not (findings and any(f.failure for f in findings)):
        # the summarization prompt sent back, looping or not (the loop, read below, says less)
        findings += answers.echo(reasoning.text, settings)
    cut = []

    def cut_off() -> list:         # asked by repetition and below: measured once
        if not cut:
            cut.append(cutoff.detect(content, settings, required))
        return cut[0]
    if findings and any(f.failure for f in findings):
        # An empty summary is only that: its noise or size says nothing more; but a
        # loop of separators is both, and the loop says why.
        yield "repetition"
        findings = findings + repetition.detect(content, settings, input_text, cut_off)
    else:
        if input_tokens and not before:
            findings += inflation.detect(output_tokens, input_tokens, settings)
        yield "markers"
        findings += markers.detect(content, settings, allow_own_l3=allow_own_l3, previous=previous)
        yield "garbled"
        findings += garbled.detect(content, settings, input_text)
        yield "repetition"
        findings += repetition.detect(content, settings, input_text, cut_off)
        if not (findings and any(f.failure and f.kind in ("garbled", "repetition") for f in findings)):
            # the prompt's template echoed with its placeholders (noise and loops say more)
            yield "unfilled"
            findings += empty.unfilled_template(content, settings, input_text)
            if not any(f.failure for f in findings):
                # what the model answered instead of a summary: a call, its prompt, a refusal, a preamble
                findings += answers.classify(content, settings, reasoning, input_text)
        if not (findings and any(f.failure for f in findings)):
            # well formed and carrying nothing (loops, noise and markers say more)
            yield "information_free"
            findings += empty.information_free(content, settings, input_tokens, extra, reasoning, view, previous)
        if not (findings and any(f.kind == "repetition" and f.figures.get("runs_to_end", True) for f in findings)):
            # a loop that runs to the end is cut off too, and says more; one that stopped
            # inside the summary says nothing of how the summary ends
            yield "cut_off"
            findings += cut_off()
        # noise has no language to judge, nor a loop over most of the summary; a loop over less
        # leaves text in a language (an English paragraph then `0,` 200 times, of a Russian
        # history, is both). What it is about is judged only without either.
        looped = max((f.figures.get("loop_share", 1.0) for f in findings if f.failure and f.kind == "repetition"),
                     default=None) if findings else None
        if input_text and not any(f.failure and f.kind == "garbled" for f in findings) \
                and (looped is None or looped < settings.language_max_loop_share):
            yield "language"
            mine = overlap.unit_counts(content)
            share = overlap.shared(mine, view)
            drift, same = language.judge(content, settings, input_text, overlap=share)
            if measures is not None:
                measures.update(word_overlap=round(share, 3), same_language=same, grounding=None, content_words=None)
            findings += drift
            if looped is None:
                if not any(f.failure for f in findings):
                    # a few words for thousands of tokens, in whatever language
                    findings += empty.too_little(content, settings, view, input_tokens, extra, previous)
                if not any(f.failure for f in findings):
                    # a few words sharing nothing with a history that named things, in any language
                    nothing = empty.carries_nothing(content, settings, view, input_tokens, extra, previous)
                    if nothing:
                        findings = [f for f in findings if f.kind != "empty_info"] + nothing
                yield "grounding"
                sview = overlap.InputView(content)       # the summary's own identifiers, scanned once
                measured = measures if measures is not None else {}
                # what the summarizer was given: the history since the last compaction, and the summary of
                # what came before it (a summary carries it forward: its names are not invented)
                source, src_view = (input_text, view) if not previous else \
                    (previous + "\n\n" + input_text, overlap.InputView(previous + "\n\n" + input_text))
                findings += grounding.detect(content, settings, src_view, mine, same, measured, sview, background)
                if same and not any(f.failure for f in findings):
                    # a few words, none of them the history's (grounding judges longer text)
                    findings += empty.none_of_the_history(content, settings, view, input_tokens, extra, previous)
                if same and not any(f.failure for f in findings):
                    # a long history, and nothing of it that names it
                    findings += grounding.nothing_specific(content, settings, view, mine, sview, input_tokens,
                                                           previous)
                yield "identifiers"
                findings += identifiers.detect(content, settings, source, src_view, measured, sview)
                if same and not any(f.failure for f in findings):
                    # names of its own, none of the history's
                    findings += grounding.names_other_things(findings, measured.get("grounding"), settings)
                if same and not any(f.failure for f in findings):
                    # the start of the history carried, its end not
                    findings += coverage.detect(content, settings, view, previous)
                findings += transcript.detect(content, settings, input_text)
    named = [f for f in findings if f.failure and f.kind in ("language_drift", "ungrounded", "empty")] \
        if findings else None
    if named and not any(f.failure and f.kind == "garbled" for f in findings):
        # text that is no language is garbled first: its "language" and "subject" are noise
        yield "no_language"
        noise = garbled.no_language(content, settings, view)
        if noise:
            findings = [f for f in findings if f not in named] + noise
    if findings and any(f.failure and f.figures.get("no_language") for f in findings):
        # text that is no language is garbled, first and only: its size, loops, language
        # and subject are the noise's, not a summary's (the agent's own counts stay: a fact
        # of the context, not of the text)
        return [f for f in findings if f.failure and f.figures.get("no_language")] + head
    if required is not None:
        findings += contract.detect(content, required)
    return head + findings if head else findings


_NO_WORDS = frozenset()


def _request_words(required) -> frozenset:
    """The word units of the headings a request asked for: the template's own words."""
    if required is None or not required.sections:
        return _NO_WORDS
    return frozenset(u for h in required.sections for u in overlap.units(h))
