#!/usr/bin/env bash
# Build lossless-claw (the 1.0 line) from a source dir into a plugin dir ready for
# `openclaw plugins install --force --accept-capabilities --link <plugin dir>`. Prints the plugin dir.
#   setup_lossless_claw.sh <source dir> [<plugin dir>]      (default plugin dir: <this dir>/plugin)
# Source: git --git-dir=/work/.mirror/Martian-Engineering+lossless-claw/repo archive a0a20bae | tar -x -C <src>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:?usage: setup_lossless_claw.sh <source dir> [<plugin dir>]}" && pwd)
out=${2:-$here/plugin}
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
# a Node >= 22 (esbuild targets node22; node:sqlite at run time): the cached OpenClaw's if the system one is older
if ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 22 ? 0 : 1)' 2>/dev/null; then
  oc=$(/work/main/scripts/setup_openclaw.sh)
  export PATH="$oc/node-bin:$PATH"
fi
cd "$src"
[ -x node_modules/.bin/esbuild ] || npm install --silent --no-audit --no-fund --ignore-scripts >&2
npm run --silent build:plugin >&2
rm -rf "$out"; mkdir -p "$out/dist"
# the run-time set: the bundle (only `openclaw/plugin-sdk/*` stays external, OpenClaw resolves it),
# the manifest, package.json (openclaw.extensions -> ./dist/index.js), the license, the skill the manifest names,
# and the doctor contract (`openclaw doctor` reads it)
cp dist/index.js "$out/dist/"
cp openclaw.plugin.json package.json LICENSE doctor-contract-api.js doctor-contract-api.d.ts "$out/"
cp -r skills "$out/"
# OpenClaw's loader resolves every `dependencies` entry of package.json from the plugin root even though
# esbuild bundled it ("Plugin dependency @sinclair/typebox is missing from <dir>"): the production
# dependency tree, as `npm install --omit=dev` would lay it out
node -e 'for (const d of Object.keys(require("./package.json").dependencies||{})) console.log(d)' | while read -r dep; do
  mkdir -p "$out/node_modules/$(dirname "$dep")"
  cp -r "node_modules/$dep" "$out/node_modules/$dep"
done
echo "$out"
