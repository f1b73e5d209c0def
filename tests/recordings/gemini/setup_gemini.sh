#!/usr/bin/env bash
# Install the pinned Gemini CLI (npm `@google/gemini-cli`, a bundled Node program; engines: node >=20,
# so Debian's Node 20 runs it), once, into a cache kept between runs. Prints the entry script's path
# (run it as `node <path>`; it is also executable through its #!/usr/bin/env node line).
set -euo pipefail
GEMINI_CLI_VERSION=0.61.0
cache=${GUARD_GEMINI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/compaction-guard/gemini-$GEMINI_CLI_VERSION}
bin="$cache/node_modules/@google/gemini-cli/bundle/gemini.js"
if [ ! -f "$cache/.ready" ]; then
  command -v node >/dev/null || { echo "setup_gemini: node (>=20) is required" >&2; exit 2; }
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    echo "setup_gemini: node $major is too old (engines: >=20); installing node@20 into the cache" >&2
    mkdir -p "$cache"
    npm install --silent --no-audit --no-fund --no-save --prefix "$cache" node@20 >&2
  fi
  mkdir -p "$cache"
  # --ignore-scripts: the bundle needs no install step (optional native add-ons are optional)
  npm install --silent --no-audit --no-fund --ignore-scripts --no-save --prefix "$cache" \
    "@google/gemini-cli@$GEMINI_CLI_VERSION" >&2
  PATH="$cache/node_modules/node/bin:$PATH" GEMINI_CLI_NO_RELAUNCH=true node "$bin" --version >&2
  touch "$cache/.ready"
fi
echo "$bin"
