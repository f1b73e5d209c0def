#!/usr/bin/env bash
# Set up, then check a demo home holding what five agents wrote (OpenClaw's stores, two real Claude Code
# transcripts, two real Codex rollouts, two real Gemini CLI sessions and a real opencode database, good and
# broken summaries), run the chain, and report. The demo home
# is a temporary folder standing in for the user's home: the repository is never written.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
user=$(mktemp -d "${TMPDIR:-/tmp}/guard-demo.XXXXXX")
home="$user/.openclaw"
mkdir -p "$home"
cp -r demo/openclaw-home/. "$home/"
.venv/bin/python demo/add_openclaw_stores.py "$home"     # + a lossless-claw lcm.db and a session transcript
# + an agent database the real OpenClaw 2026.9.6 gateway wrote (tests/data/openclaw-live)
mkdir -p "$home/agents/main/agent"
cp tests/data/openclaw-live/openclaw-agent.sqlite "$home/agents/main/agent/"
# + two transcripts the real Claude Code 2.1.328 wrote (tests/data/claude-code: a good compaction, a loop)
mkdir -p "$user/.claude/projects/-work"
cp tests/data/claude-code/good.jsonl tests/data/claude-code/loop.jsonl "$user/.claude/projects/-work/"
# + two rollouts the real Codex CLI 0.171.0 wrote (tests/recordings/codex/data: a good compaction, a preamble)
mkdir -p "$user/.codex/sessions/2026/12/05"
for case in good-auto preamble-auto; do
  thread=$(.venv/bin/python -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["payload"]["id"])' "tests/recordings/codex/data/$case.jsonl")
  cp "tests/recordings/codex/data/$case.jsonl" "$user/.codex/sessions/2026/12/05/rollout-2026-12-05T14-25-58-$thread.jsonl"
done
# + two chat sessions the real Gemini CLI 0.61.0 wrote (tests/recordings/gemini/data: a good compression, a preamble)
mkdir -p "$user/.gemini/tmp/work/chats"
cp tests/recordings/gemini/data/session-good-long.jsonl "$user/.gemini/tmp/work/chats/session-2026-12-05T15-04-a7dc17fc.jsonl"
cp tests/recordings/gemini/data/session-live-preamble.jsonl "$user/.gemini/tmp/work/chats/session-2026-12-06T02-44-74be1b42.jsonl"
# + the database the real opencode 1.18.33 wrote (tests/recordings/opencode/data/empty: it stored an empty summary)
mkdir -p "$user/.local/share"
cp -r tests/recordings/opencode/data/empty "$user/.local/share/opencode"
unset OPENCLAW_HOME OPENCLAW_STATE_DIR OPENCLAW_CONFIG_PATH LCM_DATABASE_PATH CLAUDE_CONFIG_DIR CODEX_HOME GEMINI_CLI_HOME
unset XDG_DATA_HOME XDG_CONFIG_HOME OPENCODE_DB OPENCODE_CONFIG_DIR
export HOME="$user"
echo "== compaction-guard --check   (HOME=$user: every agent found there)"
.venv/bin/compaction-guard --check || echo "(exit status $?: failures found, as the demo intends)"
echo
echo "== compaction-guard --simulate  (the 3-level chain on the demo's MEMORY.md)"
.venv/bin/compaction-guard --simulate - < "$home/workspace/MEMORY.md"
echo "== compaction-guard --simulate --fault L1=repetition  (watch L1 fail and escalate)"
.venv/bin/compaction-guard --simulate - --fault L1=repetition < "$home/workspace/MEMORY.md"
echo "== compaction-guard --report"
.venv/bin/compaction-guard --report
