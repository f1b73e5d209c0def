"""Write compaction_guard/data/openclaw_audit.json from an installed OpenClaw (npm `openclaw`).

OpenClaw's compaction safeguard audits every summary before it stores it
(src/agents/pi-hooks/compaction-safeguard-quality.ts, `auditSummaryQuality`). The guard
runs the same audit on the answers it returns (compaction_guard/contract.py), which needs
the audit's data as OpenClaw has it: the section headings it requires, its limits, and the
stop words of its keyword extractor (packages/memory-host-sdk query-expansion.ts) in seven
languages. This reads them from the package's bundle, so the guard's copy is exactly the
version it was made from (recorded in the file, with OpenClaw's MIT licence notice).

    python3 scripts/make_openclaw_audit_data.py [OPENCLAW_PACKAGE_DIR]

The package directory defaults to the test install (scripts/setup_openclaw.sh).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "compaction_guard" / "data" / "openclaw_audit.json"


def _default_package() -> Path:
    base = Path.home() / ".cache" / "compaction-guard"
    found = sorted(base.glob("openclaw-*-node-*/node_modules/openclaw"))
    if not found:
        sys.exit("no OpenClaw install: run scripts/setup_openclaw.sh or give the package directory")
    return found[-1]


def _module(dist: Path, prefix: str, needle: str) -> str:
    for p in sorted(dist.glob(f"{prefix}*.mjs")):
        text = p.read_text(encoding="utf-8")
        if needle in text:
            return text
    sys.exit(f"no {prefix}*.mjs holding {needle!r} in {dist}")


def _strings(block: str) -> list:
    return [json.loads(m) for m in re.findall(r'"(?:[^"\\]|\\.)*"', block)]


def _set(text: str, name: str) -> list:
    m = re.search(rf"const {name} = (?:/\* @__PURE__ \*/ )?new Set\(\[(.*?)\]\);", text, re.S)
    if not m:
        sys.exit(f"{name} not found")
    return _strings(m.group(1))


def _const(text: str, name: str):
    m = re.search(rf"const {name} = ([^;]+);", text)
    if not m:
        sys.exit(f"{name} not found")
    raw = m.group(1).strip()
    return float(raw.replace("e", "E")) if re.fullmatch(r"[\d.]+e\d+", raw) else json.loads(raw)


def main() -> None:
    pkg = Path(sys.argv[1]) if len(sys.argv) > 1 else _default_package()
    version = json.loads((pkg / "package.json").read_text())["version"]
    dist = pkg / "dist"
    qe = _module(dist, "query-expansion-", "function extractKeywords")
    audit = _module(dist, "builtin-openclaw-", "function auditSummaryQuality")
    particles = re.search(r"const KO_TRAILING_PARTICLES = \[(.*?)\]", qe, re.S)
    sections = re.search(r"const REQUIRED_SUMMARY_SECTIONS = \[(.*?)\];", audit, re.S)
    data = {
        "source": f"npm openclaw {version}: src/agents/pi-hooks/compaction-safeguard-quality.ts and "
                  "packages/memory-host-sdk/src/host/query-expansion.ts, read by scripts/make_openclaw_audit_data.py",
        "licence": "OpenClaw is MIT-licensed: Copyright (c) 2026 OpenClaw Foundation. Permission is hereby granted, "
                   "free of charge, to any person obtaining a copy of this software and associated documentation "
                   "files, to deal in the Software without restriction, subject to including this notice.",
        "required_sections": _strings(sections.group(1)),
        "max_extracted_identifiers": _const(audit, "MAX_EXTRACTED_IDENTIFIERS"),
        "max_ask_overlap_tokens": _const(audit, "MAX_ASK_OVERLAP_TOKENS"),
        "min_ask_overlap_tokens_for_double_match": _const(audit, "MIN_ASK_OVERLAP_TOKENS_FOR_DOUBLE_MATCH"),
        "latest_user_request_context_label": _const(audit, "LATEST_USER_REQUEST_CONTEXT_LABEL"),
        "stop_words": {lang: _set(qe, f"STOP_WORDS_{lang.upper()}") for lang in ("en", "es", "pt", "ar", "ko", "ja", "zh")},
        "ko_trailing_particles": _strings(particles.group(1)),
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {sum(len(v) for v in data['stop_words'].values())} stop words, OpenClaw {version}")


if __name__ == "__main__":
    main()
