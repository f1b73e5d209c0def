"""What detectors produce: findings, gathered per summary into a Result."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .tokens import seed_entropy

# The failure kinds, exactly as reported.
FAILURE_KINDS = ("empty", "inflation", "garbled", "repetition", "truncation_marker", "stale", "language_drift",
                 "ungrounded", "invented_identifiers", "format", "coverage", "cut_off")


@dataclass
class Finding:
    """One thing a detector saw.

    kind:     a failure kind (FAILURE_KINDS) or, for warnings, a short warning name
    reason:   one line a person can act on
    failure:  True for a failure, False for a warning (suspicious, summary stays valid)
    figures:  the measurements behind it
    """

    kind: str
    reason: str
    failure: bool = True
    figures: dict = field(default_factory=dict)


@dataclass
class Result:
    """The verdict on one summary."""

    id: str
    source: str
    findings: list
    output_tokens: int
    input_tokens: Optional[int]
    # measured against the input, when it is known (detectors.detect_all): word_overlap,
    # same_language, grounding, content_words, key_identifiers, identifier_retention
    fidelity: Optional[dict] = None
    # the character entropy, measured when first read (see `entropy`), or the text to measure
    _entropy: Optional[float] = field(default=None, repr=False)
    _text: Optional[str] = field(default=None, repr=False, compare=False)

    @property
    def entropy(self) -> float:
        """The summary's character Shannon entropy (the seed's figure, tokens.seed_entropy),
        measured when first read: a check
        that only counts failures does not pay for it (a fifth of the per-summary work). The
        text is let go once it is measured."""
        if self._entropy is None:
            self._entropy = seed_entropy(self._text or "")
            self._text = None
        return self._entropy

    def settle(self) -> "Result":
        """Measure what is measured when read, and let the text go (a result kept for later)."""
        _ = self.entropy
        return self

    @property
    def failures(self) -> list:
        seen = []
        for f in self.findings:
            if f.failure and f.kind not in seen:
                seen.append(f.kind)
        return seen

    @property
    def warnings(self) -> list:
        return [f"{f.kind}: {f.reason}" for f in self.findings if not f.failure]

    @property
    def valid(self) -> bool:
        return not any(f.failure for f in self.findings)

    @property
    def reasons(self) -> dict:
        out = {}
        for f in self.findings:
            if f.failure and f.kind not in out:
                out[f.kind] = f.reason
        return out

    def to_dict(self) -> dict:
        session = getattr(self, "session", None)
        return {
            "id": self.id,
            "source": self.source,
            **({"session": str(session)} if session else {}),
            **({"guard_l3": True} if getattr(self, "own_answer", False) else {}),
            "valid": self.valid,
            "failures": self.failures,
            "warnings": self.warnings,
            "reasons": self.reasons,
            "output_tokens": self.output_tokens,
            "input_tokens": self.input_tokens,
            "entropy": self.entropy,
            "fidelity": self.fidelity,
        }
