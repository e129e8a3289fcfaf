#!/usr/bin/env bash
# Every test of the project, in one command. Assumes the toolchains of README.md ("Set up");
# `.ci/run` installs the packages, then calls this.
#
# Each step runs even when an earlier one failed; the last line counts the steps.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

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

passed=0
failed=0
failures=()
step() {
  local name=$1
  shift
  echo
  echo "=== $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: ok ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

step "cargo fmt" cargo fmt --all -- --check
step "cargo build" cargo build --workspace --all-targets
step "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
step "cargo test" cargo test --workspace
step "conformance (rust)" "$target/debug/conformance" ${CONTENOX_SCENARIOS//:/ }
step "official clients vs fake server" python3 -m pytest -q tests/official_clients
for b in bindings-python bindings-node bindings-uniffi; do
  [ -x "$b/ci.sh" ] && step "$b" "$b/ci.sh"
done
[ -x tests/mcp/ci.sh ] && step "mcp" tests/mcp/ci.sh

echo
for f in "${failures[@]}"; do echo "failed step: $f"; done
echo "steps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
