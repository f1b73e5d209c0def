#!/usr/bin/env bash
# Set up, then run the whole test suite: the detector evaluation on the labelled
# corpus (precision/recall per kind, fails if a target is missed) and pytest, which
# runs the real OpenClaw (with the real lossless-claw), Claude Code, Codex, Gemini CLI and opencode (installed once and cached by
# scripts/setup_openclaw.sh, scripts/setup_claude_code.sh and tests/recordings/<agent>/setup_<agent>.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh test
GUARD_OPENCLAW=$(./scripts/setup_openclaw.sh)
GUARD_CLAUDE_CODE=$(./scripts/setup_claude_code.sh)
GUARD_CODEX=$(./tests/recordings/codex/setup_codex.sh)
GUARD_GEMINI=$(./tests/recordings/gemini/setup_gemini.sh)
GUARD_OPENCODE=$(./tests/recordings/opencode/setup_opencode.sh)
./tests/recordings/lossless-claw/setup_plugin.sh >/dev/null     # the real lossless-claw plugin, for OpenClaw
# the real Prometheus and Pushgateway for tests/test_team_prometheus.py (Debian's packages): installed
# where this runs as root with apt-get; elsewhere that test says it skipped and why (.ci/run requires them)
if { ! command -v prometheus || ! command -v prometheus-pushgateway; } >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus prometheus-pushgateway \
    >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends prometheus prometheus-pushgateway >/dev/null; }
fi
export GUARD_OPENCLAW GUARD_REQUIRE_OPENCLAW=1 GUARD_CLAUDE_CODE GUARD_REQUIRE_CLAUDE_CODE=1
export GUARD_CODEX GUARD_REQUIRE_CODEX=1 GUARD_GEMINI GUARD_REQUIRE_GEMINI=1 GUARD_OPENCODE GUARD_REQUIRE_OPENCODE=1
.venv/bin/python tests/corpus/evaluate.py --check-docs    # also fails when docs/measured.md or the README's figures are stale
.venv/bin/python -m pytest -q "$@"
