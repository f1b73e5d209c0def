"""The seed guard's detection rules, literally, as a reference.

Used by tests/corpus/evaluate.py (how often the literal rules are wrong) and by
benchmarks/ (throughput and memory side by side). Not used by the guard itself.
"""
from __future__ import annotations

import math
from collections import Counter

MIN_SUMMARY_LENGTH = 10
MAX_ENTROPY = 5.0
REPETITION_THRESHOLD = 3
REPETITION_MIN_LENGTH = 20


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    freq = Counter(text)
    total = len(text)
    entropy = 0.0
    for count in freq.values():
        p = count / total
        if p > 0:
            entropy -= p * math.log2(p)
    return round(entropy, 2)


def detect_repetition(text: str) -> bool:
    if len(text) < REPETITION_MIN_LENGTH * REPETITION_THRESHOLD:
        return False
    # The seed counted in a Python loop (`phrases[text[i:i + 20]] += 1`); the same count made
    # by Counter from a generator runs in C and takes about half the time, with the same
    # verdict on every text: the reference speed is measured against this plain fast form.
    phrases = Counter(text[i:i + REPETITION_MIN_LENGTH] for i in range(len(text) - REPETITION_MIN_LENGTH))
    return any(count >= REPETITION_THRESHOLD for count in phrases.values())


def detect_repetition_literal(text: str) -> bool:
    """The seed's loop as it was written (kept to show the fast form gives the same verdicts)."""
    if len(text) < REPETITION_MIN_LENGTH * REPETITION_THRESHOLD:
        return False
    phrases = Counter()
    for i in range(len(text) - REPETITION_MIN_LENGTH):
        phrases[text[i:i + REPETITION_MIN_LENGTH]] += 1
    return any(count >= REPETITION_THRESHOLD for count in phrases.values())


def validate_summary(content: str, input_tokens: int = 0, previous=None) -> list:
    """The seed's failure kinds for one summary (plus 'stale' when previous is given)."""
    failures = []
    if len(content.strip()) < MIN_SUMMARY_LENGTH:
        failures.append("empty")
    output_tokens = len(content) // 4
    if input_tokens > 0 and output_tokens > input_tokens:
        failures.append("inflation")
    if shannon_entropy(content) > MAX_ENTROPY:
        failures.append("garbled")
    if detect_repetition(content):
        failures.append("repetition")
    if "[FALLBACK]" in content or "[TRUNCATED]" in content:
        failures.append("truncation_marker")
    if previous is not None and previous == content:
        failures.append("stale")
    return failures
