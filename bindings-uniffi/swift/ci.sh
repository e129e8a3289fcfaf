#!/usr/bin/env bash
# CI for the Swift binding on Linux: Swift 6.0 (Debian trixie's swiftlang) in the project's
# chroot (toolchain.sh: built once into the cache directory, reused after), against the debug
# library the host's cargo builds into the shared target dir (the `bindings-uniffi` step built
# it already; cargo finds nothing to do then).
#
#   1. the harness binaries (fake-model-server, conformance-check, fake-remote-service) and the
#      MCP test servers (tests/mcp/install.sh), as the other runners have them;
#   2. `gen.sh swift-check`: the library (dev profile) is built and the committed Swift sources
#      must be what UniFFI generates from it (after a change of the Rust API: run
#      `bindings-uniffi/gen.sh swift-update` and commit bindings-uniffi/swift/Sources);
#   3. `toolchain.sh ensure`: the root (cold: ~3.5 min; warm: ~2 s);
#   4. in the root: `swift build --build-tests` of this package and `swift build` of
#      examples/swift, then `swift test`: the conformance runner (every scenario of
#      tests/conformance/scenarios and of the $CONTENOX_SCENARIOS directories, else
#      ../shared/conformance/scenarios beside the repo) and the XCTest cases of
#      ContenoxAsync.swift;
#   5. examples/swift run with its input piped: approving on stdin, then with stdin closed.
#
# Fails when a process the tests started outlives `swift test`. Prints `swift: N passed, N
# failed, N skipped` (every conformance scenario, XCTest case, and the example's two runs as one).
# The build products go to <target>/swift and <target>/swift-example. CONTENOX_ONLY=REGEX runs
# the matching scenario files only; CONTENOX_TRACE_DIR=DIR keeps the traces; CONTENOX_SWIFT_JOBS
# (default 2) scenarios run at a time. Needs root (chroot, mount) and, the first time, a Debian
# mirror (see toolchain.sh).
#
#   bash bindings-uniffi/swift/ci.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
target=${CARGO_TARGET_DIR:-$repo/target}
mkdir -p "$target"
target=$(cd "$target" && pwd -P)
start=$(date +%s)
section_start=$start
section() { # TITLE: a heading, with the time the previous section took
  local now
  now=$(date +%s)
  [ "$now" = "$start" ] || echo "   ($((now - section_start)) s)"
  section_start=$now
  echo "== $1"
}

export FAKE_MODEL_SERVER=${FAKE_MODEL_SERVER:-$target/debug/fake-model-server}
export CONFORMANCE_CHECK=${CONFORMANCE_CHECK:-$target/debug/conformance-check}
export FAKE_REMOTE_SERVICE=${FAKE_REMOTE_SERVICE:-$target/debug/fake-remote-service}
if [ ! -x "$FAKE_MODEL_SERVER" ] || [ ! -x "$CONFORMANCE_CHECK" ] || [ ! -x "$FAKE_REMOTE_SERVICE" ]; then
  section "building the conformance harness"
  (cd "$repo" && cargo build --quiet -p contenox-conformance)
fi

for tool in cargo node npm python3; do
  command -v "$tool" >/dev/null || { echo "ci.sh: $tool is required" >&2; exit 1; }
done

section "MCP test servers (tests/mcp/install.sh)"
bash "$repo/tests/mcp/install.sh"

section "native library (dev profile) + Swift drift check (gen.sh swift-check)"
if ! bash "$repo/bindings-uniffi/gen.sh" swift-check; then
  echo "ci.sh: the committed Swift sources are not what UniFFI generates from the library:" >&2
  echo "       run bindings-uniffi/gen.sh swift-update and commit bindings-uniffi/swift/Sources" >&2
  exit 1
fi

section "Swift toolchain (toolchain.sh ensure)"
bash "$here/toolchain.sh" ensure

# Everything the runs inside the root read or write, bound at its own path: the target dir (when
# it is not inside the checkout), the scenario directories, the harness binaries, the trace dir.
binds=(--bind "$target")
add_ro() { # DIR: bound read-only when it exists and is outside the checkout
  local d
  [ -d "$1" ] || return 0
  d=$(cd "$1" && pwd -P)
  case "$d/" in "$repo/"*) return 0 ;; esac
  binds+=(--ro "$d")
}
scenario_dirs=()
if [ -n "${CONTENOX_SCENARIOS:-}" ]; then
  IFS=: read -ra dirs <<<"$CONTENOX_SCENARIOS"
  for d in "${dirs[@]}"; do
    [ -n "$d" ] || continue
    [ -d "$d" ] || { echo "ci.sh: scenario directory $d does not exist" >&2; exit 1; }
    d=$(cd "$d" && pwd -P)
    add_ro "$d"
    scenario_dirs+=("$d")
  done
  CONTENOX_SCENARIOS=$(IFS=:; echo "${scenario_dirs[*]}")
  export CONTENOX_SCENARIOS
else
  add_ro "$repo/../shared/conformance/scenarios"
fi
for bin in "$FAKE_MODEL_SERVER" "$CONFORMANCE_CHECK" "$FAKE_REMOTE_SERVICE"; do
  add_ro "$(dirname "$bin")"
done
[ -n "${CONTENOX_MCP_NODE_MODULES:-}" ] && add_ro "$CONTENOX_MCP_NODE_MODULES"
if [ -n "${CONTENOX_TRACE_DIR:-}" ]; then
  mkdir -p "$CONTENOX_TRACE_DIR"
  CONTENOX_TRACE_DIR=$(cd "$CONTENOX_TRACE_DIR" && pwd -P)
  export CONTENOX_TRACE_DIR
  binds+=(--bind "$CONTENOX_TRACE_DIR")
fi
# The Python MCP test server runs on the root's Python, from the root's own virtualenv.
export CONTENOX_MCP_PYTHON=/opt/contenox/mcp-venv/bin/python
export CONTENOX_REPO="$repo"

# Linked against the library cargo built, found there at run time; warnings are errors (the
# generated sources, ContenoxAsync.swift, the tests and the example compile without any).
link=(-Xlinker -L"$target/debug" -Xlinker -rpath -Xlinker "$target/debug" -Xswiftc -warnings-as-errors)
in_root() { bash "$here/toolchain.sh" enter "${binds[@]}" -- "$@"; }

section "swift build --build-tests (bindings-uniffi/swift) and swift build (examples/swift)"
in_root swift build --package-path "$here" --scratch-path "$target/swift" --build-tests "${link[@]}"
in_root swift build --package-path "$repo/examples/swift/console-app" --scratch-path "$target/swift-example" "${link[@]}"

section "swift test (the conformance runner + XCTest)"
log="$target/swift/test.log"
status=0
# Then, in the same PID namespace, no process the tests started (fake servers, MCP servers,
# shells) may be left: the namespace's first process (PID 1) and this shell are all there may be
# (read with bash builtins only, so the check starts no process of its own; zombies not counted).
# shellcheck disable=SC2016
in_root bash -c '
  swift test "$@"
  status=$?
  left=""
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = "$$" ] && continue
    read -r stat <"$p/stat" 2>/dev/null || continue
    rest=${stat##*) }
    [ "${rest%% *}" = Z ] && continue
    comm=${stat#* }
    left="$left $pid ${comm%%) *})"
  done
  if [ -n "$left" ]; then
    echo "ci.sh: processes left after swift test:$left"
    status=1
  fi
  exit "$status"
' swift-test --skip-build --package-path "$here" --scratch-path "$target/swift" "${link[@]}" 2>&1 |
  tee "$log" || status=$? # pipefail: swift test's failure, or a process left behind

# One closing line of counts: the runner's `ok` / `FAIL` line per scenario and XCTest's line per
# test case.
ok=$(grep -c '^ok   ' "$log" || true)
bad=$(grep -c '^FAIL ' "$log" || true)
xok=$(grep -cE "^Test Case '.*' passed" "$log" || true)
xbad=$(grep -cE "^Test Case '.*' failed" "$log" || true)
xskip=$(grep -cE "^Test Case '.*' skipped" "$log" || true)
if [ $((ok + bad)) -eq 0 ] || [ $((xok + xbad + xskip)) -eq 0 ]; then
  echo "ci.sh: no conformance scenario or no XCTest case ran" >&2
  status=1
fi

section "examples/swift: approve the booking on stdin, then with stdin closed"
example="$target/swift-example/debug/contenox-swift-example"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/contenox-swift.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
example_ok=1
if printf 'y\n' | in_root "$example" >"$tmp/yes.out" 2>&1 &&
  grep -q '^done: Lisbon is sunny; I booked two nights.$' "$tmp/yes.out" &&
  grep -q '  < book: {"booked":true' "$tmp/yes.out"; then
  cat "$tmp/yes.out"
else
  echo "ci.sh: examples/swift did not book when approved:" >&2
  cat "$tmp/yes.out" >&2
  example_ok=0
fi
# No ^ anchor on the error line: the question is printed without a newline.
if in_root "$example" </dev/null >"$tmp/no.out" 2>&1 &&
  grep -q '  < book (error): .*No one is at the terminal' "$tmp/no.out" &&
  grep -q '^done: ' "$tmp/no.out"; then
  echo "(stdin closed: the booking was denied and the turn ended)"
else
  echo "ci.sh: examples/swift with stdin closed did not deny the booking and finish:" >&2
  cat "$tmp/no.out" >&2
  example_ok=0
fi
[ "$example_ok" = 1 ] || status=1

echo "conformance scenarios: $ok passed, $bad failed; XCTest cases: $xok passed, $xbad failed," \
  "$xskip skipped; examples/swift: $([ "$example_ok" = 1 ] && echo ok || echo FAILED)"
echo "swift: $((ok + xok + example_ok)) passed, $((bad + xbad + 1 - example_ok)) failed, $xskip skipped"
echo "bindings-uniffi/swift ci.sh: $(( $(date +%s) - start )) s"
exit "$status"
