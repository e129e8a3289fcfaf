#!/usr/bin/env bash
# CI for the Node binding: install, build the native module (dev profile, sharing the
# workspace's target dir), check the committed native.d.ts against the build, type-check the
# examples with tsc --strict and run them, then `node --test` (unit tests of the API, process
# exit tests, and every conformance scenario through the JavaScript API).
#
# Expects the workspace's debug harness binaries (cargo build -p contenox-conformance);
# FAKE_MODEL_SERVER / CONFORMANCE_CHECK override their paths, CONTENOX_SCENARIOS adds
# scenario directories (colon-separated).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
target="${CARGO_TARGET_DIR:-$repo/target}"
export FAKE_MODEL_SERVER="${FAKE_MODEL_SERVER:-$target/debug/fake-model-server}"
export CONFORMANCE_CHECK="${CONFORMANCE_CHECK:-$target/debug/conformance-check}"
export FAKE_REMOTE_SERVICE="${FAKE_REMOTE_SERVICE:-$target/debug/fake-remote-service}"
for bin in "$FAKE_MODEL_SERVER" "$CONFORMANCE_CHECK" "$FAKE_REMOTE_SERVICE"; do
  [ -x "$bin" ] || { echo "ci.sh: $bin is missing: run cargo build -p contenox-conformance first" >&2; exit 1; }
done

step() { printf '\n== %s\n' "$*"; }

cd "$here"
step "npm ci (bindings-node)"
npm ci --no-audit --no-fund

step "native module (debug) + native.d.ts drift check"
node scripts/build-native.mjs --check-dts

step "TypeScript layer (index.ts, lib/*.ts -> .js, .d.ts; index.mjs)"
npm run --silent build:ts

step "rust unit tests of the crate"
cargo test -p contenox-node --lib --quiet

step "examples: tsc --strict, then run them (examples/node/test: each example, the SSE server over HTTP)"
(
  cd "$repo/examples/node"
  npm ci --no-audit --no-fund
  npx tsc -p tsconfig.json --strict
  node --test --test-reporter=spec test/
)

step "node --test"
node --test --test-reporter=spec tests/
