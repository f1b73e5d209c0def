#!/usr/bin/env bash
# Install the pinned Claude Code (npm `@anthropic-ai/claude-code`, a native binary: no Node
# needed to run it), once, into a cache kept between runs. Prints the binary's path.
set -euo pipefail
CLAUDE_CODE_VERSION=2.1.328
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) echo "setup_claude_code: no Claude Code build for $(uname -m)" >&2; exit 2 ;;
esac
cache=${GUARD_CLAUDE_CODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/compaction-guard/claude-code-$CLAUDE_CODE_VERSION}
bin="$cache/node_modules/@anthropic-ai/claude-code-linux-$arch/claude"
if [ ! -f "$cache/.ready" ]; then
  mkdir -p "$cache"
  # --ignore-scripts: its postinstall only links the platform binary, which is used directly
  npm install --silent --no-audit --no-fund --ignore-scripts --no-save --prefix "$cache" \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@anthropic-ai/claude-code-linux-$arch@$CLAUDE_CODE_VERSION" >&2
  DISABLE_AUTOUPDATER=1 "$bin" --version >&2
  touch "$cache/.ready"
fi
echo "$bin"
