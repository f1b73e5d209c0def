#!/usr/bin/env bash
# Install the pinned opencode (npm `opencode-ai`; the native binary is in the optional dependency
# `opencode-linux-<arch>`, installed explicitly), once, into a cache kept between runs. Prints the
# binary's path on stdout (everything else on stderr).
set -euo pipefail
OPENCODE_VERSION=1.18.33
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) echo "setup_opencode: no opencode build for $(uname -m)" >&2; exit 2 ;;
esac
cache=${GUARD_OPENCODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/compaction-guard/opencode-$OPENCODE_VERSION}
bin="$cache/node_modules/opencode-linux-$arch/bin/opencode"
if [ ! -f "$cache/.ready" ]; then
  mkdir -p "$cache"
  # --ignore-scripts: the postinstall only links the platform binary, which is used directly;
  # --omit=optional: only the one platform package named here (not the baseline/musl builds)
  npm install --silent --no-audit --no-fund --ignore-scripts --omit=optional --no-save --prefix "$cache" \
    "opencode-ai@$OPENCODE_VERSION" "opencode-linux-$arch@$OPENCODE_VERSION" >&2
  # opencode installs @opencode-ai/plugin (npm, at run time) into every config directory it loads
  # (~/.config/opencode, .opencode/) unless node_modules is there and package-lock.json already lists it;
  # offline that install fails after ~70 s and plugins wait for it. Keep one real install here, to copy
  # package.json + package-lock.json and link node_modules into a throwaway config dir.
  mkdir -p "$cache/config-deps"
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$cache/config-deps" \
    "@opencode-ai/plugin@$OPENCODE_VERSION" >&2
  OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 "$bin" --version >&2
  touch "$cache/.ready"
fi
echo "$bin"
