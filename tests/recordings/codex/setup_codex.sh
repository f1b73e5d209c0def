#!/usr/bin/env bash
# Install the pinned Codex CLI (npm `@openai/codex`, a native Rust binary shipped in the
# platform package `@openai/codex@<v>-linux-<arch>`, aliased as `@openai/codex-linux-<arch>`),
# once, into a cache kept between runs. Prints the binary's path on stdout (all else on stderr).
set -euo pipefail
CODEX_VERSION=0.171.0
case "$(uname -m)" in
  x86_64) arch=x64; triple=x86_64-unknown-linux-musl ;;
  aarch64|arm64) arch=arm64; triple=aarch64-unknown-linux-musl ;;
  *) echo "setup_codex: no Codex build for $(uname -m)" >&2; exit 2 ;;
esac
cache=${GUARD_CODEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/compaction-guard/codex-$CODEX_VERSION}
if [ ! -f "$cache/.ready" ]; then
  mkdir -p "$cache"
  # --ignore-scripts: the package has no install step we need; the platform binary is used directly
  npm install --silent --no-audit --no-fund --ignore-scripts --no-save --prefix "$cache" \
    "@openai/codex@$CODEX_VERSION" "@openai/codex-linux-$arch@npm:@openai/codex@$CODEX_VERSION-linux-$arch" >&2
fi
bin=$(find "$cache/node_modules/@openai/codex-linux-$arch" -type f -name codex -path "*$triple*" 2>/dev/null | head -1)
if [ -z "$bin" ]; then
  bin=$(find "$cache/node_modules/@openai/codex-linux-$arch" -type f -name codex 2>/dev/null | head -1)
fi
[ -n "$bin" ] || { echo "setup_codex: no codex binary under $cache" >&2; exit 1; }
if [ ! -f "$cache/.ready" ]; then
  # a throwaway CODEX_HOME: even --version creates $CODEX_HOME/tmp (default ~/.codex)
  vhome=$(mktemp -d)
  CODEX_HOME="$vhome" "$bin" --version >&2
  rm -rf "$vhome"
  touch "$cache/.ready"
fi
echo "$bin"
