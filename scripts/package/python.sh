#!/usr/bin/env bash
# The Python package as users install it: `maturin build --release` makes the abi3 wheel (in the
# release target the release-build step filled); a fresh virtualenv with no Rust toolchain on
# PATH installs it with pip and runs examples/python/quickstart.py, sync_script.py and the
# notebook, executed headless (nbclient) with its run rendered as an HTML table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="$dist/python"
rm -rf "$out"
mkdir -p "$out"

maturin=$(command -v maturin || true)
[ -n "$maturin" ] || { echo "package-python: maturin not found (scripts/setup.sh installs it into .venv)" >&2; exit 1; }
echo "== maturin build --release"
(cd "$repo/bindings-python" && "$maturin" build --release --quiet --out "$out")
wheels=("$out"/contenox-*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || { echo "package-python: expected one wheel in $out" >&2; exit 1; }
wheel=${wheels[0]}
case "$(basename "$wheel")" in
  contenox-*-cp310-abi3-*.whl) ;;
  *) echo "package-python: $(basename "$wheel") is not an abi3 wheel for Python >= 3.10" >&2; exit 1 ;;
esac
echo "wheel: $(basename "$wheel") ($(mib "$wheel") MiB)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/contenox-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The interpreter the project's virtualenv was made from, not the virtualenv itself.
base_python=$(python3 -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
"$base_python" -m venv "$tmp/venv"
py="$tmp/venv/bin/python"
cp -r "$repo/examples/python" "$tmp/examples"

echo "== pip install the wheel (+ what a notebook user has: ipykernel, nbclient, nbformat), no Rust on PATH"
without_rust "$py" -m pip install --quiet --disable-pip-version-check --only-binary=:all: \
  "$wheel" ipykernel nbclient nbformat

cd "$tmp/examples"
echo "== the installed module is the wheel's"
without_rust "$py" - "$tmp/venv" <<'PY'
import sys
from pathlib import Path

import contenox
import contenox._native as native

venv = Path(sys.argv[1]).resolve()
where = Path(native.__file__).resolve()
assert venv in where.parents, f"contenox._native loaded from {where}, not from {venv}"
print(f"contenox._native: {where.relative_to(venv)}")
PY

echo "== examples/python/quickstart.py"
without_rust "$py" quickstart.py | tee "$tmp/quickstart.out"
grep -q "^done: Lisbon is sunny; I booked two nights.$" "$tmp/quickstart.out"

echo "== examples/python/sync_script.py"
without_rust "$py" sync_script.py

echo "== examples/python/host_hooks.py"
without_rust "$py" host_hooks.py | tee "$tmp/host_hooks.out"
grep -q "^done: The write was refused; the build runs in the background.$" "$tmp/host_hooks.out"

echo "== examples/python/quickstart.ipynb, executed headless"
without_rust "$py" - quickstart.ipynb <<'PY'
import sys

import nbclient
import nbformat

nb = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
errors = [o for o in outputs if o.get("output_type") == "error"]
assert not errors, errors
html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
tables = [h for h in html if "<table>" in h and "book" in h and "ask" in h]
assert tables, f"no run rendered as a table: {html}"
print(f"notebook: {len(nb.cells)} cells, no error, the run rendered as a table")
PY
echo "package-python: ok"
