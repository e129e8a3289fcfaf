#!/usr/bin/env bash
# The npm packages as users install them: bindings-node/scripts/pack.mjs packs the main package
# `contenox` (optionalDependencies on one platform package per napi target) and this machine's
# platform package with the release native module; a fresh project installs both tarballs with no
# Rust toolchain on PATH and with npm offline (so no registry is asked for the platform packages:
# the tarball satisfies its optionalDependency), type-checks the examples against the installed
# package's types and runs them, the SSE server over HTTP included (examples/node/test).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="$dist/node"

echo "== pack (release native module, main + platform package)"
mapfile -t tarballs < <(cd "$repo/bindings-node" && node scripts/pack.mjs --out "$out" | tail -2)
main=${tarballs[0]}
platform=${tarballs[1]}
[ -f "$main" ] && [ -f "$platform" ] || { echo "package-node: pack.mjs made no tarballs" >&2; exit 1; }
echo "main: $(basename "$main") ($(mib "$main") MiB), platform: $(basename "$platform") ($(mib "$platform") MiB)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/contenox-npm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
app="$tmp/app"
mkdir -p "$app"
cp -r "$repo/examples/node/src" "$repo/examples/node/test" "$repo/examples/node/tsconfig.json" "$app/"
cat >"$app/package.json" <<'JSON'
{ "name": "contenox-package-test", "private": true, "type": "module" }
JSON
# The examples' own TypeScript toolchain, at the versions their package.json asks for, from the
# registry; then the two tarballs with npm offline, so that no registry is asked for the platform
# packages (the platform tarball satisfies its optionalDependency; the other platforms' packages
# are optional and not installable here, and are skipped without a lookup).
ts=$(node -p "require('$repo/examples/node/package.json').devDependencies.typescript")
types=$(node -p "require('$repo/examples/node/package.json').devDependencies['@types/node']")
echo "== npm install typescript@$ts @types/node@$types"
(cd "$app" && without_rust npm install --no-audit --no-fund --loglevel=error "typescript@$ts" "@types/node@$types")
echo "== npm install --offline the two tarballs, no Rust on PATH"
(cd "$app" && without_rust npm install --offline --no-audit --no-fund --loglevel=error "$main" "$platform")

cd "$app"
echo "== the native module comes from the platform package"
without_rust node --input-type=module - <<'JS'
import { createRequire } from 'node:module'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
const require = createRequire(join(process.cwd(), 'package.json'))
const main = dirname(require.resolve('contenox/package.json'))
const pkg = require('contenox/package.json')
const stray = readdirSync(main).filter((f) => f.endsWith('.node'))
if (stray.length) throw new Error(`the main package carries a native module: ${stray}`)
const optional = Object.keys(pkg.optionalDependencies ?? {})
const platform = optional.find((name) => existsSync(join('node_modules', name, 'package.json')))
if (!platform) throw new Error(`none of the optionalDependencies is installed: ${optional}`)
const loaded = require('contenox')
if (typeof loaded.createClient !== 'function') throw new Error('contenox has no createClient')
console.log(`contenox ${pkg.version}: ${optional.length} platform packages declared, ${platform} installed and loaded`)
JS

echo "== examples: tsc --strict against the installed package, then run them"
without_rust npx tsc -p tsconfig.json --strict
without_rust node --test --test-reporter=spec test/
echo "package-node: ok"
