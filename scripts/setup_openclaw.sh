#!/usr/bin/env bash
# Install the pinned OpenClaw (npm `openclaw`) and a Node it runs on (npm's node-linux-<arch>;
# Debian's Node 20 is older than OpenClaw needs), once, into a cache kept between runs.
# Prints the install's directory. The tests run OpenClaw's own code from it.
set -euo pipefail
OPENCLAW_VERSION=2026.9.6
NODE_VERSION=24.21.0
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) echo "setup_openclaw: no Node build for $(uname -m)" >&2; exit 2 ;;
esac
cache=${GUARD_OPENCLAW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/compaction-guard/openclaw-$OPENCLAW_VERSION-node-$NODE_VERSION}
if [ ! -f "$cache/.ready" ]; then
  mkdir -p "$cache"
  # --ignore-scripts: OpenClaw's install scripts fetch optional native helpers it runs without
  npm install --silent --no-audit --no-fund --ignore-scripts --no-save --prefix "$cache" \
    "openclaw@$OPENCLAW_VERSION" "node-linux-$arch@$NODE_VERSION" >&2
  "$cache/node_modules/node-linux-$arch/bin/node" "$cache/node_modules/openclaw/openclaw.mjs" --version >&2
  ln -sfn "node_modules/node-linux-$arch/bin" "$cache/node-bin"
  touch "$cache/.ready"
fi
echo "$cache"
