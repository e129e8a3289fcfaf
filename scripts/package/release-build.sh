#!/usr/bin/env bash
# The release builds of every binding in one cargo invocation, so their dependencies (the engine,
# tokio, reqwest, ...) compile once; the package steps after it (maturin, scripts/pack.mjs,
# mvn -Prelease) find them built. Profile: [profile.release] in Cargo.toml (fat LTO, one codegen
# unit, stripped, panic = unwind). The CLI joins when the workspace has it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$repo"
# --lib: the libraries the packages carry (not the uniffi-bindgen tool, which gen.sh runs from
# the dev build).
packages=(-p contenox-python -p contenox-node -p contenox-uniffi --lib)
if [ -f cli/Cargo.toml ]; then
  # The CLI is a binary: a second invocation, which finds the engine built.
  cli=1
fi
# maturin builds the Python module as an extension module through this variable (PyO3 0.30 reads
# it); setting it here too keeps PyO3's build the same, so maturin finds it compiled.
export PYO3_BUILD_EXTENSION_MODULE=1
start=$SECONDS
cargo build --locked --release "${packages[@]}"
if [ -n "${cli:-}" ]; then
  cargo build --locked --release -p contenox-cli --bins
fi
echo "release build: $((SECONDS - start)) s"
