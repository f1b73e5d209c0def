#!/usr/bin/env bash
# Set up, then check the bundled demo OpenClaw home (good and broken summaries) and report.
# The demo home is copied to a temporary folder: the repository is never written.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
home=$(mktemp -d "${TMPDIR:-/tmp}/guard-demo.XXXXXX")
cp -r demo/openclaw-home/. "$home/"
.venv/bin/python demo/add_openclaw_stores.py "$home"     # + a lossless-claw lcm.db and a session transcript
# + an agent database the real OpenClaw 2026.9.6 gateway wrote (tests/data/openclaw-live)
mkdir -p "$home/agents/main/agent"
cp tests/data/openclaw-live/openclaw-agent.sqlite "$home/agents/main/agent/"
export OPENCLAW_STATE_DIR="$home"
echo "== compaction-guard --check   (OPENCLAW_STATE_DIR=$home)"
.venv/bin/compaction-guard --check || echo "(exit status $?: failures found, as the demo intends)"
echo
echo "== compaction-guard --simulate  (the 3-level chain on the demo's MEMORY.md)"
.venv/bin/compaction-guard --simulate - < "$home/workspace/MEMORY.md"
echo "== compaction-guard --simulate --fault L1=repetition  (watch L1 fail and escalate)"
.venv/bin/compaction-guard --simulate - --fault L1=repetition < "$home/workspace/MEMORY.md"
echo "== compaction-guard --report"
.venv/bin/compaction-guard --report
