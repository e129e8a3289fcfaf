#!/usr/bin/env bash
# Builds what the scale curve runs, all from this checkout, into the ignored target/ directory:
#   - target/scale/venv: the bench's own virtualenv (maturin, matplotlib, the contenox wheel);
#   - bindings-node: `npm ci` + `npm run build` (napi, release) in place (outputs are gitignored);
#   - target/$PROFILE/{fake-model-server,scale-client}: the model server and the Rust client.
# PROFILE is `release` (what ships; default) or `profiling` (release + line tables, for perf /
# callgrind). Usage: bench/scale/build.sh [--skip-python] [--skip-node] [--skip-rust]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
PROFILE="${PROFILE:-release}"
SCALE="$TARGET/scale"
VENV="$SCALE/venv"
python=1 node=1 rust=1
for a in "$@"; do
    case "$a" in
        --skip-python) python=0 ;;
        --skip-node) node=0 ;;
        --skip-rust) rust=0 ;;
        *) echo "unknown argument $a" >&2; exit 2 ;;
    esac
done
mkdir -p "$SCALE"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$HERE/requirements.txt"

if [[ $rust == 1 ]]; then
    echo "== rust: fake-model-server, scale-client ($PROFILE)"
    cargo build -q --profile "$PROFILE" -p contenox-conformance --bin fake-model-server --bin scale-client
fi
if [[ $python == 1 ]]; then
    echo "== python: contenox wheel ($PROFILE)"
    rm -rf "$SCALE/wheels"
    "$VENV/bin/maturin" build -q --profile "$PROFILE" -m "$REPO/bindings-python/Cargo.toml" \
        -i "$VENV/bin/python" --out "$SCALE/wheels"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps \
        "$SCALE"/wheels/contenox-*.whl
fi
if [[ $node == 1 ]]; then
    echo "== node: bindings-node ($PROFILE)"
    cd "$REPO/bindings-node"
    [[ -d node_modules ]] || npm ci --no-audit --no-fund --loglevel=error
    # The workspace's own cargo build (shares target/ with the Rust side), then the TS layer.
    node scripts/build-native.mjs --profile "$PROFILE"
    npm run -s build:ts
fi
echo "== built"
