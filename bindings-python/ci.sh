#!/usr/bin/env bash
# CI for the Python binding: build the package (dev profile), run pytest (every conformance
# scenario + the API tests + the quickstart notebook, headless), mypy --strict on the package,
# its stubs and the examples, ruff, and rustfmt.
# Needs the conformance binaries (cargo build -p contenox-conformance) in the cargo target dir.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
export FAKE_MODEL_SERVER="${FAKE_MODEL_SERVER:-$TARGET/debug/fake-model-server}"
export CONFORMANCE_CHECK="${CONFORMANCE_CHECK:-$TARGET/debug/conformance-check}"
export FAKE_REMOTE_SERVICE="${FAKE_REMOTE_SERVICE:-$TARGET/debug/fake-remote-service}"
for bin in "$FAKE_MODEL_SERVER" "$CONFORMANCE_CHECK" "$FAKE_REMOTE_SERVICE"; do
    if [[ ! -x "$bin" ]]; then
        echo "missing $bin: run 'cargo build -p contenox-conformance' first" >&2
        exit 1
    fi
done

cd "$HERE"
start=$SECONDS
# The MCP test servers the mcp_* scenarios start (idempotent; the lead's .ci/run may have done it).
if [[ -f "$REPO/tests/mcp/install.sh" ]]; then
    bash "$REPO/tests/mcp/install.sh"
fi
# scripts/test.sh passes the project's virtualenv (CONTENOX_VENV), which already holds these.
VENV="${CONTENOX_VENV:-$HERE/.venv}"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements-dev.txt \
    -r requirements-durable.txt \
    -c "$REPO/scripts/python-constraints.txt"
export VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"

echo "== rustfmt"
cargo fmt -p contenox-python --check

echo "== build (maturin develop, dev profile)"
maturin develop --quiet

echo "== pytest"
python -m pytest -q -p no:cacheprovider tests

echo "== mypy --strict (package, stubs, examples)"
mypy --strict --no-incremental python/contenox "$REPO/examples/python"

echo "== ruff"
ruff check python tests
ruff format --check python tests
ruff check "$REPO/examples/python"
ruff format --check "$REPO/examples/python"

echo "bindings-python ci: ok in $((SECONDS - start)) s"
