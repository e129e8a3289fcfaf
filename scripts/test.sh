#!/usr/bin/env bash
# Every test of the project, in one command, on a machine with only the toolchains (Rust, Python
# >= 3.10 with venv and pip, Node >= 20 with npm, a JDK >= 17 with Maven; Swift is set up by the
# bindings-swift step itself: a Debian trixie root with Debian's swiftlang, kept in
# ~/.cache/contenox, which needs root and, the first time, apt's Debian mirror):
#
#   scripts/test.sh              set up (scripts/setup.sh: idempotent, registries only), then
#                                every step below
#   scripts/test.sh STEP...      set up, then only these steps (names as --list prints them)
#   scripts/test.sh --list       the steps, in order
#
# CONTENOX_SKIP_SETUP=1 skips the set-up (everything already installed, or offline).
# Each step runs even when an earlier one failed; the closing lines name every step run with its
# result and time, and count them. The package steps build the release artifacts once (one
# `cargo build --release` for every binding) and install each as its users would, with no Rust
# toolchain on PATH (scripts/package/).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

# name | what it runs (in this order)
steps=(
  "fmt|cargo fmt --all -- --check"
  "house|scripts/check_house.py: one test binary per crate, no new import cycle"
  "build|cargo build --locked --workspace --all-targets"
  "clippy|cargo clippy --locked --workspace --all-targets -- -D warnings"
  "test|cargo test --locked --workspace"
  "acp|tests/acp: contenox acp under real ACP clients (the TypeScript SDK client, acpx; node --test)"
  "conformance|the Rust runner on every scenario directory"
  "official-clients|pytest tests/official_clients (the official openai / anthropic / ollama SDKs vs the fake server)"
  "bindings-python|bindings-python/ci.sh"
  "bindings-node|bindings-node/ci.sh"
  "bindings-uniffi|bindings-uniffi/ci.sh"
  "durable-engines|tests/durable/ci.sh: crash tests of the DBOS, Temporal and Restate adapters (their servers started by the tests, on 127.0.0.1)"
  "telemetry|tests/telemetry/check.py: a turn from Python and from Node against a real OpenTelemetry Collector (scripts/otel-collector.sh)"
  "bindings-swift|bindings-uniffi/swift/ci.sh (Swift 6.0 in a Debian trixie root, toolchain.sh: conformance, XCTest, examples/swift)"
  "release-build|cargo build --release of every binding, in one build"
  "package-python|scripts/package/python.sh: the abi3 wheel in a fresh venv, no Rust on PATH"
  "package-node|scripts/package/node.sh: npm pack (main + platform package) in a fresh project"
  "package-kotlin|scripts/package/kotlin.sh: the jar with its native library, mvn install, examples/kotlin"
  "artifact-sizes|scripts/package/sizes.sh: each artifact against its 15 MB budget"
)

if [ "${1:-}" = --list ]; then
  for s in "${steps[@]}"; do printf '%-18s %s\n' "${s%%|*}" "${s#*|}"; done
  exit 0
fi
selected=("$@")
for want in "${selected[@]}"; do
  found=0
  for s in "${steps[@]}"; do [ "${s%%|*}" = "$want" ] && found=1; done
  if [ "$found" -eq 0 ]; then
    echo "test.sh: no step named $want (scripts/test.sh --list)" >&2
    exit 2
  fi
done

if [ "${CONTENOX_SKIP_SETUP:-}" != 1 ]; then
  echo "=== setup (scripts/setup.sh)"
  if ! bash scripts/setup.sh; then
    echo "=== setup FAILED: the tests cannot run without it" >&2
    exit 1
  fi
fi
# The project's virtualenv first on PATH: python3 there has pytest, nbformat and the official
# clients (core's notebook test and the official-clients step use it); the Python binding's CI
# installs into it too.
if [ -x "$repo/.venv/bin/python" ]; then
  export PATH="$repo/.venv/bin:$PATH"
  export CONTENOX_VENV="$repo/.venv"
fi
# Under the test command a missing notebook package (nbformat, nbclient) fails the notebook
# tests (core's and the Python binding's) instead of skipping them: setup.sh installed them.
export CONTENOX_REQUIRE_NBFORMAT=1

# The shared starter scenarios ride along when they are there (CI has them next to the repo).
shared="$repo/../shared/conformance/scenarios"
if [ -z "${CONTENOX_SCENARIOS:-}" ]; then
  CONTENOX_SCENARIOS="$repo/tests/conformance/scenarios"
  [ -d "$shared" ] && CONTENOX_SCENARIOS="$CONTENOX_SCENARIOS:$shared"
fi
export CONTENOX_SCENARIOS
target="${CARGO_TARGET_DIR:-$repo/target}"
export FAKE_MODEL_SERVER="$target/debug/fake-model-server"
export CONFORMANCE_CHECK="$target/debug/conformance-check"
export FAKE_REMOTE_SERVICE="$target/debug/fake-remote-service"

run_step() {
  local dirs
  case "$1" in
    fmt) cargo fmt --all -- --check ;;
    house) python3 scripts/check_house.py ;;
    # --locked: the committed Cargo.lock is the build; a manifest change without its lock change
    # fails here instead of resolving whatever is newest that day.
    build) cargo build --locked --workspace --all-targets ;;
    clippy) cargo clippy --locked --workspace --all-targets -- -D warnings ;;
    test) cargo test --locked --workspace ;;
    acp)
      cargo build --locked -p contenox-cli -p contenox-conformance --bins --quiet &&
        (cd tests/acp && npm run --silent build && npm test)
      ;;
    conformance)
      IFS=: read -ra dirs <<<"$CONTENOX_SCENARIOS"
      "$target/debug/conformance" "${dirs[@]}"
      ;;
    official-clients) python3 -m pytest -q -p no:cacheprovider tests/official_clients ;;
    bindings-python) bash bindings-python/ci.sh ;;
    bindings-node) bash bindings-node/ci.sh ;;
    bindings-uniffi) bash bindings-uniffi/ci.sh ;;
    durable-engines) bash tests/durable/ci.sh ;;
    # Needs the Python package (maturin develop) and the Node build the two steps before made.
    telemetry) python3 tests/telemetry/check.py "$(bash scripts/otel-collector.sh)" ;;
    bindings-swift) bash bindings-uniffi/swift/ci.sh ;;
    release-build) bash scripts/package/release-build.sh ;;
    package-python) bash scripts/package/python.sh ;;
    package-node) bash scripts/package/node.sh ;;
    package-kotlin) bash scripts/package/kotlin.sh ;;
    artifact-sizes) bash scripts/package/sizes.sh ;;
  esac
}

passed=0
failed=0
report=()
for s in "${steps[@]}"; do
  name=${s%%|*}
  if [ "${#selected[@]}" -gt 0 ]; then
    keep=0
    for want in "${selected[@]}"; do [ "$want" = "$name" ] && keep=1; done
    [ "$keep" -eq 1 ] || continue
  fi
  echo
  echo "=== $name: ${s#*|}"
  start=$SECONDS
  if run_step "$name"; then
    passed=$((passed + 1))
    result=ok
  else
    failed=$((failed + 1))
    result=FAILED
  fi
  echo "=== $name: $result ($((SECONDS - start)) s)"
  report+=("$(printf '%-18s %-6s %5d s' "$name" "$result" $((SECONDS - start)))")
done

echo
echo "steps run:"
for line in "${report[@]}"; do echo "  $line"; done
echo "steps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
