#!/usr/bin/env bash
# CI for the UniFFI binding (Kotlin on the JVM; Swift sources checked for drift).
#
# Expects the Rust workspace's debug binaries of the harness (`cargo build -p
# contenox-conformance`: fake-model-server, conformance-check); builds them if missing.
# Needs: cargo, a JDK (17+), Maven (3.8+); Maven fetches its plugins and the few dependencies
# (Kotlin, kotlinx-coroutines, JNA, JUnit 5, org.json) by name on first run. The MCP test
# servers the mcp_* scenarios and McpTest start (node, python3) are installed by
# tests/mcp/install.sh (idempotent: nothing to do once installed).
#
#   bash bindings-uniffi/ci.sh     (CONTENOX_SCENARIOS: extra scenario dirs, colon-separated)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
start=$(date +%s)

export FAKE_MODEL_SERVER=${FAKE_MODEL_SERVER:-$target/debug/fake-model-server}
export CONFORMANCE_CHECK=${CONFORMANCE_CHECK:-$target/debug/conformance-check}
export FAKE_REMOTE_SERVICE=${FAKE_REMOTE_SERVICE:-$target/debug/fake-remote-service}
if [ ! -x "$FAKE_MODEL_SERVER" ] || [ ! -x "$CONFORMANCE_CHECK" ] || [ ! -x "$FAKE_REMOTE_SERVICE" ]; then
  echo "== building the conformance harness"
  (cd "$repo" && cargo build --quiet -p contenox-conformance)
fi

for tool in cargo java mvn node python3; do
  command -v "$tool" >/dev/null || { echo "ci.sh: $tool is required" >&2; exit 1; }
done

echo "== MCP test servers (tests/mcp/install.sh)"
bash "$repo/tests/mcp/install.sh"

echo "== native library (dev profile) + Swift drift check"
bash "$here/gen.sh" swift-check

echo "== Kotlin: generate bindings, compile, test (mvn -q test)"
cd "$here/kotlin"
rm -rf target/surefire-reports
status=0
mvn_log=$(mktemp)
mvn -q -B test 2>&1 | tee "$mvn_log" || status=$?
# JUnit skips a @Test whose body returns a value (a Kotlin `= runBlocking { ... }` ending in an
# expression) with only a warning: such a test would pass forever without running.
if grep -q "It will not be executed" "$mvn_log"; then
  grep "must not return a value" "$mvn_log" | sort -u >&2
  echo "ci.sh: JUnit did not run the @Test methods above (end them with runBlocking<Unit>)" >&2
  status=1
fi
rm -f "$mvn_log"

# One closing line of counts, from Surefire's reports (mvn -q prints nothing on success).
python3 - <<'PY' || status=1
import glob, sys, xml.etree.ElementTree as ET
tests = failed = skipped = 0
for f in glob.glob("target/surefire-reports/TEST-*.xml"):
    r = ET.parse(f).getroot()
    tests += int(r.get("tests", 0))
    failed += int(r.get("failures", 0)) + int(r.get("errors", 0))
    skipped += int(r.get("skipped", 0))
if tests == 0:
    print("ci.sh: no test ran", file=sys.stderr)
    sys.exit(1)
print(f"kotlin: {tests - failed - skipped} passed, {failed} failed, {skipped} skipped")
PY

echo "bindings-uniffi ci.sh: $(( $(date +%s) - start )) s"
exit "$status"
