"""inflation: a compaction that did not make the context smaller.

Where the agent keeps its own count of its whole context around the compaction (OpenClaw's
tokensBefore/tokensAfter, Claude Code's preTokens/postTokens, ...), the verdict is on those
numbers, whatever the visible text's length: the context the agent counted holds its system
prompt, tools and whatever the store does not show, and the summary replaced all of it.
- `context` (before and after known): after at or above `max_context_after_ratio` of before
  is a failure (the agent counted both with the same counter);
- `against_before` (only before known): the summary larger than `max_inflation_ratio` times
  what the agent said its context held is a failure; a small fraction of it is not;
- `detect` (no count of the agent's): a summary with more tokens than what it replaced. Both
  sides are counted with the same script-aware estimate (tokens.estimate_tokens), so a
  Chinese summary of an English conversation is measured right. The input is the record's
  source text when the store has it, else its recorded token count.
Each reason says which numbers were compared and whose they are (`whose`: the record's
context_source, e.g. "Claude Code's preTokens/postTokens").
"""
from __future__ import annotations

from ..findings import Finding


def context(before, after, settings, whose: str = "") -> list:
    if not before or after is None or before <= 0:
        return []
    ratio = after / before
    if ratio < settings.max_context_after_ratio:
        return []
    grew = "grew the context" if after > before else "did not shrink the context"
    counts = f"the agent's own counts: {whose}" if whose else "the agent's own counts"
    return [Finding("inflation", f"the compaction {grew}: {after:,} tokens after it, {before:,} before (x{ratio:.2f}, "
                    f"{counts}); its summary replaced less than it added, re-run it with a smaller "
                    "target or through compaction-guard serve",
                    figures={"context_before": before, "context_after": after, "context_ratio": round(ratio, 3)})]


def against_before(output_tokens: int, before: int, settings, whose: str = "") -> list:
    """Only the agent's count before is known: the summary (the guard's estimate) against it."""
    if not before or before <= 0:
        return []
    ratio = output_tokens / before
    if ratio <= settings.max_inflation_ratio:
        if ratio > settings.warn_compression_ratio:
            return [Finding("low_compression", f"summary is {ratio:.0%} of the tokens the agent's context held before "
                            "the compaction", failure=False,
                            figures={"output_tokens": output_tokens, "context_before": before, "ratio": round(ratio, 2)})]
        return []
    counts = f"the agent's own count before it: {whose}" if whose else "the agent's own count before it"
    return [Finding("inflation", f"summary is {output_tokens:,} tokens, larger than the {before:,} tokens the agent's "
                    f"context held before the compaction (x{ratio:.2f}, {counts}); compaction grew the context, "
                    "re-run with a smaller target",
                    figures={"output_tokens": output_tokens, "context_before": before, "ratio": round(ratio, 2)})]


def detect(output_tokens: int, input_tokens, settings) -> list:
    if not input_tokens or input_tokens <= 0:
        return []
    ratio = output_tokens / input_tokens
    figures = {"output_tokens": output_tokens, "input_tokens": input_tokens, "ratio": round(ratio, 2)}
    if ratio > settings.max_inflation_ratio:
        return [Finding("inflation", f"summary is {output_tokens} tokens, larger than the {input_tokens}-token input it "
                        f"replaced (x{ratio:.2f}); compaction grew the context, re-run with a smaller target",
                        figures=figures)]
    if ratio > settings.warn_compression_ratio:
        return [Finding("low_compression", f"summary kept {ratio:.0%} of its input's tokens", failure=False, figures=figures)]
    return []
