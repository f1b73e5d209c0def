"""inflation: a compaction that did not make the context smaller.

- `context`: the agent's own measure of its whole context just before and just after
  the compaction (OpenClaw's tokensBefore/tokensAfter, Claude Code's preTokens/postTokens),
  when it keeps both: after at or above `max_context_after_ratio` of before is a failure,
  whatever the summary's text (the agent counted both with the same counter).
- `detect`: a summary with more tokens than what it replaced. Both sides are counted with
  the same script-aware estimate (tokens.estimate_tokens), so a Chinese summary of an
  English conversation is measured right. The input is the record's source text when the
  store has it, else its recorded token count.
"""
from __future__ import annotations

from ..findings import Finding


def context(before, after, settings) -> list:
    if not before or after is None or before <= 0:
        return []
    ratio = after / before
    if ratio < settings.max_context_after_ratio:
        return []
    grew = "grew the context" if after > before else "did not shrink the context"
    return [Finding("inflation", f"the compaction {grew}: {after:,} tokens after it, {before:,} before (x{ratio:.2f}, "
                    "the agent's own counts); its summary replaced less than it added, re-run it with a smaller "
                    "target or through compaction-guard serve",
                    figures={"context_before": before, "context_after": after, "context_ratio": round(ratio, 3)})]


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
