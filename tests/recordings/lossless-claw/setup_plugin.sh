#!/usr/bin/env bash
# The real lossless-claw plugin, ready for `openclaw plugins install --link <dir>`, once, into a cache kept
# between runs; prints the directory. lossless-claw is on no registry reachable here: plugin/ holds what
# its own build (setup_lossless_claw.sh, from its source at the pinned commit in FINDINGS.md) made and the
# gateway loads: dist/index.js, openclaw.plugin.json, package.json and its MIT LICENSE. Its one
# run-time dependency, which OpenClaw looks for in the plugin's folder, comes from npm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$here/plugin/package.json")
cache=${GUARD_LOSSLESS_CLAW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/compaction-guard/lossless-claw-$version}
if [ ! -f "$cache/.ready" ] || ! cmp -s "$here/plugin/dist/index.js" "$cache/dist/index.js"; then
  rm -rf "$cache"
  mkdir -p "$cache/dist"
  cp "$here/plugin/dist/index.js" "$cache/dist/"
  cp "$here/plugin/openclaw.plugin.json" "$here/plugin/package.json" "$here/plugin/LICENSE" "$cache/"
  # dependencies only (@sinclair/typebox, pinned in package.json); not its optional peer, OpenClaw
  (cd "$cache" && npm install --silent --no-audit --no-fund --ignore-scripts --omit=dev --omit=optional \
    --legacy-peer-deps --no-save --no-package-lock >&2)
  touch "$cache/.ready"
fi
echo "$cache"
