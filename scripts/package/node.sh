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

# The release module's hot-code layout (bindings-node/hot-code.ld, build.rs) on x86-64 Linux: a
# missing or empty .text.hot means the script was not applied (fails: the module's resident code
# would be back to 7 MB); a .text.hot under 1 MB means most of its patterns match nothing any
# more (renamed hot functions: a warning, regenerate it with bindings-node/scripts/hot-code.mjs).
if [ "$(uname -s -m)" = "Linux x86_64" ]; then
  echo "== hot-code layout of the release module"
  mkdir -p "$tmp/platform"
  tar -xzf "$platform" -C "$tmp/platform"
  module=$(find "$tmp/platform" -name '*.node' | head -1)
  python3 - "$module" <<'PY'
import struct
import sys

path = sys.argv[1]
with open(path, "rb") as f:
    elf = f.read()
if elf[:4] != b"\x7fELF" or elf[4] != 2:
    sys.exit(f"{path}: not a 64-bit ELF file")
shoff, = struct.unpack_from("<Q", elf, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
strtab = headers[shstrndx][4]
def name(h):
    end = elf.index(b"\0", strtab + h[0])
    return elf[strtab + h[0]:end].decode()
sizes = {name(h): h[5] for h in headers}
hot, text = sizes.get(".text.hot", 0), sizes.get(".text", 0)
print(f".text.hot {hot / 1e6:.2f} MB, .text {text / 1e6:.2f} MB")
if hot == 0:
    sys.exit("package-node: the release module has no .text.hot: build.rs did not apply hot-code.ld")
if hot < 1_000_000:
    print("warning: .text.hot is under 1 MB: most of hot-code.ld's functions were renamed, "
          "regenerate it (bindings-node/scripts/hot-code.mjs)", file=sys.stderr)
PY
fi
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
# The examples' other dependencies (zod, for the output_schema example), as their package.json pins.
zod=$(node -p "require('$repo/examples/node/package.json').dependencies.zod")
echo "== npm install typescript@$ts @types/node@$types zod@$zod"
(cd "$app" && without_rust npm install --no-audit --no-fund --loglevel=error "typescript@$ts" "@types/node@$types" "zod@$zod")
echo "== npm install --offline the two tarballs, no Rust on PATH"
(cd "$app" && without_rust npm install --offline --no-audit --no-fund --loglevel=error "$main" "$platform")

# What hot-code.ld is for, measured on the installed package (x86-64 Linux): the module's resident
# code after a client's turns (bindings-node/scripts/hot-code-workload.mjs, its own loopback model).
# 2.3 MB when the script's profile matches the engine; toward 4.5 MB when hot functions were
# renamed or added since: a warning to regenerate it (hot-code.mjs says how), not a failure.
if [ "$(uname -s -m)" = "Linux x86_64" ]; then
  echo "== the module's resident code after 12 turns"
  resident=$(without_rust node "$repo/bindings-node/scripts/hot-code-workload.mjs" 12 \
    --package "$app/node_modules/contenox" --resident | sed -n 's/^resident code of the module: \([0-9.]*\) MB$/\1/p')
  echo "resident code: ${resident:-?} MB"
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 3.0 else 1)' "${resident:-inf}" ||
    echo "warning: the module's resident code is over 3 MB: hot-code.ld's profile is stale, regenerate it (bindings-node/scripts/hot-code.mjs)" >&2
fi

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
