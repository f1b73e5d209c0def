"""format: an answer without the shape its request demanded (compaction_guard/contract.py).

Only where the request is known (the proxy, the chain): a stored summary has no request.
- the sections asked for that the answer lacks, named (a template's headings are matched
  with their `#`s and case aside; an audited request's exactly, as its audit matches them);
- a wrapper asked for and not given (a `<summary>` block; Gemini CLI's `<state_snapshot>`);
- a closing line asked for (lossless-claw's `Expand for details about: ...`) that the answer does
  not end with;
- for a request OpenClaw's safeguard audits, every reason its audit would reject the answer
  for (`missing_identifiers:...`, `latest_user_ask_not_reflected`, ...): OpenClaw would store
  nothing, so the answer is no progress.
"""
from __future__ import annotations

import re

from ..contract import Contract, audit, has_footer, missing_sections
from ..findings import Finding



def detect(content: str, contract: Contract) -> list:
    if contract is None or not (contract.structured or contract.audited):
        return []
    out = []
    if contract.wrapper:
        w = re.escape(contract.wrapper)
        m = re.search(rf"<{w}>(.*?)(?:</{w}>|$)", content, re.S | re.I)
        if not m or not m.group(1).strip():
            out.append(Finding("format", f"the request asked for the summary inside <{contract.wrapper}> tags and the "
                               "answer has none; re-run compaction", figures={"missing": [f"<{contract.wrapper}>"]}))
            return out
        content = m.group(1)
    missing = missing_sections(content, contract)
    if missing:
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        out.append(Finding("format", f"the answer lacks {len(missing)} of the {len(contract.sections)} sections the "
                           f"request asked for: {shown}; the agent may refuse it (OpenClaw's safeguard does)",
                           figures={"missing": missing, "asked": list(contract.sections)}))
    if not has_footer(content, contract):
        out.append(Finding("format", f"the answer does not end with the line the request asked for "
                           f"('{contract.footer} ...'); re-run compaction", figures={"missing": [contract.footer]}))
    if contract.audited:
        reasons = [r for r in audit(content, contract) if not r.startswith("missing_section:")]
        if reasons:
            out.append(Finding("format", f"OpenClaw's compaction audit would reject it ({', '.join(reasons)}) and "
                               "store nothing", figures={"audit": reasons}))
    return out
