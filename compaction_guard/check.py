"""Checking summaries: records in, results out, streamed.

    validate("summary text", input="source text")      -> Result
    check_records(records, settings)                   -> CheckReport (one Result per record, in order)
    iter_results(records, settings, source=..., workers=N) -> Result, one at a time (bounded memory)

Per-summary detectors need nothing but the record: they run on batches of records
(detectors.detect_many, a detector for the whole batch at a time), in worker processes
for big checks; staleness and storms look across records, so they run here, in order.
"""
from __future__ import annotations

import itertools
import os
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterable, Iterator, Optional

from .detectors import StaleTracker, detect_many
from .detectors.lineage import LineageTracker
from .detectors.overlap import Background
from .detectors.storm import StormTracker
from .findings import Result
from .records import SummaryRecord
from .settings import DEFAULT, Settings
from .tokens import COUNTERS, estimate_tokens

BATCH = 256
# a batch of long summaries ends sooner: the batch is held in memory at once
BATCH_CHARS = 1 << 20


def _content(record: SummaryRecord) -> str:
    c = record.content
    return c if isinstance(c, str) else ("" if c is None else str(c))


def _job(record: SummaryRecord, settings: Settings, allow_own_l3: bool = False, background=None) -> tuple:
    previous = record.previous if isinstance(record.previous, str) else None
    return (_content(record), record.input_text, record.input_tokens, record.token_counter, settings,
            allow_own_l3 or bool(getattr(record, "own_answer", False)), background, previous, (record.context_before, record.context_after, record.context_source,
                                                    record.answer), record.contract)


def _prepare(job) -> tuple:
    """(detect_many's call, output_tokens, input_tokens, the fidelity figures' dict) of a job."""
    content, input_text, input_tokens, counter, settings, allow_own_l3, background, previous, context, required = job
    count = COUNTERS.get(counter, estimate_tokens)
    if input_text is not None and input_tokens is None:
        input_tokens = count(input_text)     # a store's own count (lcm token_count, tokensBefore) wins
    output_tokens = count(content)
    measures = {}
    keywords = dict(output_tokens=output_tokens, input_tokens=input_tokens, allow_own_l3=allow_own_l3,
                    input_text=input_text, measures=measures, background=background, previous=previous,
                    context=context, required=required)
    return (content, settings, keywords), output_tokens, input_tokens, measures


def _detect_batch(jobs: list) -> list:
    """The per-summary work (no cross-record state), for each job: (findings, output_tokens,
    input_tokens, fidelity figures or None). Each detector runs for the whole batch before
    the next (detectors.detect_many). The seed's entropy is measured when a Result is read for it."""
    prepared = [_prepare(j) for j in jobs]
    found = detect_many([p[0] for p in prepared])
    return [(findings, output_tokens, input_tokens, (measures or None))
            for findings, (_, output_tokens, input_tokens, measures) in zip(found, prepared)]


def _detect(job) -> tuple:
    return _detect_batch([job])[0]


def _judge(sid: str, content, settings: Settings) -> list:
    """A stored summary's failure kinds on its text alone (a condensed summary's source
    that this check did not yield)."""
    content = content if isinstance(content, str) else ("" if content is None else str(content))
    findings = _detect((content, None, None, "guard", settings, False, None, None, (None, None), None))[0]
    return [f.kind for f in findings if f.failure]


def check_record(record: SummaryRecord, settings: Settings = DEFAULT, stale: Optional[StaleTracker] = None,
                 allow_own_l3: bool = False, background=None) -> Result:
    """Validate one record. Pass the same StaleTracker across records of one check, and the
    store's word frequencies (`background`, see background_of) when there are some."""
    findings, output_tokens, input_tokens, fidelity = _detect(_job(record, settings, allow_own_l3,
                                                                            background))
    findings += (stale or StaleTracker()).detect(record)
    return _result(record, findings, output_tokens, input_tokens, fidelity)


def _result(rec, findings, output_tokens, input_tokens, fidelity=None) -> Result:
    r = Result(rec.id, rec.source, findings, output_tokens, input_tokens, fidelity, _text=_content(rec))
    r.new = rec.new
    r.key = rec.key
    r.session = (rec.meta or {}).get("session")
    r.fallback = bool((rec.meta or {}).get("fallback"))
    r.own_answer = bool(getattr(rec, "own_answer", False))
    # the session (one conversation) whose latest verdict this is: the agent's own scope
    # ("codex:<thread>", "opencode:<session>", ...: the key its hook records under too)
    r.session_key = rec.stale_scope or (f"{rec.source}:{r.session}" if r.session else None)
    # the agent's own counts around the compaction where it keeps them, else the summary's input
    # and output (the verdict's figures for the team's view, telemetry.py)
    r.tokens_before = rec.context_before if rec.context_before is not None else input_tokens
    r.tokens_after = rec.context_after if rec.context_after is not None else output_tokens
    r.trigger = (rec.meta or {}).get("trigger")
    # the conversation the store says it condensed, by the store's own id of it (a session,
    # Codex's thread, lossless-claw's conversation): a team's telemetry joins on it
    meta = rec.meta or {}
    r.conversation = next((str(meta[k]) for k in ("session", "thread", "conversation_id") if meta.get(k)), None)
    return r


def validate(content: str, input: Optional[str] = None, input_tokens: Optional[int] = None,
             previous: Optional[str] = None, settings: Settings = DEFAULT) -> Result:
    """Validate one summary. `input` is the text it summarizes (or give `input_tokens`);
    `previous` is the summary it replaced. Returns a Result (`.valid`, `.failures`, `.reasons`)."""
    rec = SummaryRecord(id="summary", content=content, source="api", input_text=input,
                        input_tokens=input_tokens, previous=previous)
    return check_record(rec, settings)


def _read_ahead(records: Iterator, n: int) -> tuple:
    """(the same records, the first n of them). A store that fails within the first n still
    has what it yielded before checked; its error is raised where it happened."""
    head = []
    error = None
    try:
        for rec in itertools.islice(records, n):
            head.append(rec)
    except Exception as exc:      # noqa: BLE001 - re-raised in place, after the records read
        error = exc
    if error is None:
        return itertools.chain(head, records), head

    def fail():
        raise error
        yield  # pragma: no cover - makes this a generator
    return itertools.chain(head, fail()), head


def background_of(input_texts: Iterable[Optional[str]], settings: Settings = DEFAULT):
    """A store's word frequencies (detectors.overlap.Background) from its input texts, or None
    when fewer than `ungrounded_background_min_inputs` are known (a lone summary, a short session)."""
    return Background.of(input_texts, settings.ungrounded_background_min_inputs)


def auto_workers(expected_records: Optional[int] = None, expected_chars: Optional[int] = None) -> int:
    """Both cores pay for themselves above ~4,000 summaries or ~500,000 characters."""
    cpus = os.cpu_count() or 1
    if cpus < 2:
        return 1
    if (expected_records or 0) >= 4000 or (expected_chars or 0) >= 500_000:
        return min(cpus, 4)
    return 1


def iter_results(records: Iterable[SummaryRecord], settings: Settings = DEFAULT, source=None,
                 workers: int = 1) -> Iterator[Result]:
    """Validate records in order, yielding each Result as soon as it is known.

    `source` (a stores.Source) primes staleness and storm tracking with the summaries
    an incremental check skipped. With `workers` > 1 the per-summary detectors run in
    that many processes, a bounded number of batches in flight; with one, a batch (BATCH
    records at most, fewer when long) is checked before its Results are yielded."""
    stale = StaleTracker(settings.max_stale_keys, settings=settings)
    storms = StormTracker(settings)
    lineage = LineageTracker(lambda sid, content: _judge(sid, content, settings), settings.max_stale_keys)
    primed = set()
    # the store's word frequencies, from the input texts of its first records (read ahead,
    # then checked like the rest): what the genre's words weigh in grounding
    if isinstance(records, list):
        head = records[:settings.ungrounded_background_inputs]
    else:
        records, head = _read_ahead(iter(records), settings.ungrounded_background_inputs)
    background = background_of((r.input_text for r in head), settings)

    def finish(rec, outcome):
        findings, output_tokens, input_tokens, fidelity = outcome
        scope = rec.stale_scope
        if source is not None and stale.needs_history(scope):
            stale.prime(scope, source.history(scope, rec))
            if scope not in primed:
                primed.add(scope)
                storms.prime(scope, source.recent(scope))
        findings += stale.detect(rec)
        findings += storms.detect(rec)
        failed = [f.kind for f in findings if f.failure]
        findings += lineage.detect(rec, failed, source)
        lineage.remember(rec.id, failed)
        return _result(rec, findings, output_tokens, input_tokens, fidelity)

    if workers <= 1:
        for batch in _batches(records):
            for rec, outcome in zip(batch, _detect_batch([_job(r, settings, background=background) for r in batch])):
                yield finish(rec, outcome)
        return
    yield from _pooled(workers, ((b, _detect_batch, [_job(r, settings, background=background) for r in b])
                                 for b in _batches(records)), finish)


def _batches(records: Iterable[SummaryRecord]) -> Iterator[list]:
    """The records in lists of at most BATCH, or fewer when they hold BATCH_CHARS characters
    (summaries and inputs): a batch of huge summaries is not held at once. A store that fails
    has the records it yielded before checked; its error is raised after them."""
    batch, size = [], 0
    it = iter(records)
    while True:
        try:
            rec = next(it, None)
        except Exception:       # noqa: BLE001 - re-raised once what was read is checked
            if batch:
                yield batch
            raise
        if rec is None:
            break
        batch.append(rec)
        size += len(_content(rec)) + len(rec.input_text or "")
        if len(batch) >= BATCH or size >= BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _pooled(workers: int, tasks, finish) -> Iterator[Result]:
    """Run (records, fn, arg) tasks in `workers` forked processes with at most
    2 x workers batches in flight; yield the records' Results in order."""
    import multiprocessing       # (imported where used: a one-core check does without)
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        inflight = deque()
        for batch, fn, arg in tasks:
            inflight.append((batch, pool.submit(fn, arg)))
            while len(inflight) > 2 * workers:
                done, fut = inflight.popleft()
                for r, o in zip(done, fut.result()):
                    yield finish(r, o)
        while inflight:
            done, fut = inflight.popleft()
            for r, o in zip(done, fut.result()):
                yield finish(r, o)


@dataclass
class CheckReport:
    """The outcome of one check: what was read, counts, and (when collected) every Result."""

    results: list = field(default_factory=list)
    sources: list = field(default_factory=list)   # [{"name", "path", "summaries"}]
    notes: list = field(default_factory=list)     # things a person should know (nothing found, skipped lines)
    errors: list = field(default_factory=list)    # stores that could not be read (the check went on)
    checked_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    checked: int = 0
    failing: int = 0
    fallback: int = 0
    by_kind: Counter = field(default_factory=Counter)
    warnings_by_kind: Counter = field(default_factory=Counter)   # each summary once per warning kind
    warnings_count: int = 0
    session_warnings: list = field(default_factory=list)   # context_pressure, one per session
    layout: Optional[str] = None          # which directory of the agent's, and why (its layout's describe())
    paths: Optional[dict] = None          # the layout's paths (its to_dict())
    agents: list = field(default_factory=list)             # a check of several agents: what each one's found
    sources_found: list = field(default_factory=list)      # the stores found, before they are read
    nothing_found: Optional[str] = None   # no store at all: where it looked and what to set
    # compactions the agent dropped (no summary stored), seen by its hook since the last check
    dropped: list = field(default_factory=list)
    own_l3: int = 0                       # summaries that are the guard's own L3 answer (serve), stored
    unscoped: int = 0                     # failing summaries of no session (a summaries file)
    # the sessions whose latest compaction failed, after this check was recorded (state.affected_
    # sessions, each naming its agent); None when not known (the check was not recorded)
    affected: Optional[list] = None

    def absorb(self, other: "CheckReport") -> None:
        """Add one agent's check to this report of several (check_machine)."""
        self.results += other.results
        self.sources += other.sources
        self.sources_found += other.sources_found
        self.notes += other.notes
        self.errors += other.errors
        self.session_warnings += other.session_warnings
        self.dropped += other.dropped
        self.own_l3 += other.own_l3
        self.unscoped += other.unscoped
        if other.affected is not None:
            self.affected = (self.affected or []) + other.affected
        self.checked += other.checked
        self.failing += other.failing
        self.fallback += other.fallback
        self.warnings_count += other.warnings_count
        self.by_kind.update(other.by_kind)
        self.warnings_by_kind.update(other.warnings_by_kind)
        self.layout = "; ".join(x for x in (self.layout, other.layout) if x) or None
        if self.paths is None:
            self.paths = other.paths

    def add(self, result: Result, collect: bool = True) -> None:
        self.checked += 1
        if not result.valid:
            self.failing += 1
            self.by_kind.update(result.failures)
            if not getattr(result, "session_key", None):
                self.unscoped += 1
        if result.warnings:
            self.warnings_count += 1
            self.warnings_by_kind.update({f.kind for f in result.findings if not f.failure})
        if getattr(result, "own_answer", False):
            self.own_l3 += 1
        if getattr(result, "fallback", False) or getattr(result, "own_answer", False) \
                or "truncation_marker" in result.failures:
            self.fallback += 1
        if collect:
            self.results.append(result.settle())      # kept: its figures now, its text let go

    @property
    def failures_found(self) -> int:
        return self.failing

    @property
    def escalations(self) -> int:
        """Summaries that a compactor using the chain would have had to redo (failed)."""
        return self.failing

    @property
    def status(self) -> str:
        """The state of the sessions, not of the summaries this check read: DEGRADED while any
        session's latest compaction failed (`affected`, what the state holds after this check,
        the hooks' verdicts included) or this check found a failure of no session; before it is
        recorded (`affected` None), DEGRADED when this check found a failure. HEALTHY only when
        something was seen: NO_STORE when no store was found, ERROR when the stores found could
        not be read and nothing was checked."""
        if (self.affected or self.unscoped) if self.affected is not None else (self.failing or self.dropped):
            return "DEGRADED"
        if self.nothing_found:
            return "NO_STORE"
        if self.errors and not self.checked:
            return "ERROR"
        return "HEALTHY"

    def header(self) -> dict:
        return {"checked_at": self.checked_at, "summaries_checked": self.checked, "failures_found": self.failing,
                "escalations": self.escalations, "status": self.status, "failures_by_kind": dict(self.by_kind),
                "warnings_by_kind": dict(self.warnings_by_kind.most_common()), "written_by_fallback": self.fallback,
                "layout": self.layout, "paths": self.paths, "agents": self.agents, "nothing_found": self.nothing_found,
                "sources": self.sources, "notes": self.notes,
                "session_warnings": self.session_warnings, "dropped": self.dropped, "errors": self.errors,
                **({"guard_l3": self.own_l3} if self.own_l3 else {}), **self.degraded()}

    def degraded(self) -> dict:
        """How many sessions' latest compaction failed, since when, and which (the first 20)."""
        if self.affected is None:
            return {}
        return degraded_doc(self.affected)

    def to_dict(self) -> dict:
        return {**self.header(), "results": [r.to_dict() for r in self.results]}


def check_records(records: Iterable[SummaryRecord], settings: Settings = DEFAULT,
                  report: Optional[CheckReport] = None, workers: Optional[int] = None) -> CheckReport:
    """Validate records in order and collect every Result; staleness is tracked across them."""
    report = report or CheckReport()
    records = records if isinstance(records, list) else list(records)
    if workers is None:
        workers = auto_workers(len(records), sum(len(r.content) for r in records if isinstance(r.content, str)))
    for r in iter_results(records, settings, workers=workers):
        report.add(r)
    return report


def degraded_doc(affected: list, most: int = 20) -> dict:
    """{sessions_affected, degraded_since, affected_sessions}: the sessions whose latest
    compaction failed (state.affected_sessions), oldest failing first."""
    return {"sessions_affected": len(affected),
            "degraded_since": min((a["since"] for a in affected if a.get("since")), default=None),
            "affected_sessions": affected[:most]}
