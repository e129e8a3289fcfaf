#!/usr/bin/env bash
# The side-by-side benchmark of ../shared/bench-peers against THIS checkout, in one command:
#
#   bench/peers/run.sh                 # every peer, 3 rounds x 200 turns, both modes, cold starts
#   PEERS=raw-http-stream-python,contenox-python bench/peers/run.sh   # a subset (run.sh's PEERS)
#
# 1. copies the shared harness (read-only there) to target/bench-peers/ (writable; kept, so its
#    installs are reused) and installs the pinned peers with its install.sh (registries only);
# 2. builds the contenox clients from this checkout: the Rust client (rust-client/build.sh, a
#    release build against core/), the release wheel (maturin) and the release npm packages
#    (bindings-node/scripts/pack.mjs), installed into the harness's .venv and node/;
# 3. runs the harness's run.sh (its settings pass through: TURNS, REPEATS, COLD_REPEATS, MODES,
#    PEERS, ...) and then bench/peers/gaps.py, which prints issue 18's figures: contenox-python
#    against the STREAMING floor raw-http-stream-python (contenox streams), contenox-node's peak
#    RSS and cold start, and contenox-rust against the floors, each paired round by round.
#
# Needs the toolchains and maturin (scripts/setup.sh puts it into .venv). Not part of CI: the
# figures depend on the machine and its load (docs/benchmarks.md records them with the load).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared=${BENCH_PEERS_SHARED:-$repo/../shared/bench-peers}
work=${BENCH_PEERS_WORK:-$repo/target/bench-peers}
[ -f "$shared/run.sh" ] || { echo "bench/peers: no harness at $shared (set BENCH_PEERS_SHARED)" >&2; exit 1; }

if [ ! -f "$work/run.sh" ]; then
  mkdir -p "$work"
  cp -r "$shared/." "$work/"
  chmod -R u+w "$work"
fi
# The harness's Node client was written against the binding before `transcript` became a
# property (bindings-node/README.md: `client.transcript`); as it stands it throws a TypeError.
sed -i 's/client\.transcript()/client.transcript/' "$work/clients/node_contenox.mjs"
# The harness's Python client looks its version up with importlib.metadata after the loop, about
# 20 ms of a one-turn process (75M instructions: reading every installed distribution's
# metadata) that the floors it is compared with do not pay; the package's own __version__ gives
# the same string. The cold start then is what issue 18 names: import, create a client, a turn.
sed -i 's/from importlib.metadata import version$/from contenox import __version__/; s/v = version("contenox")/v = __version__/' \
  "$work/clients/py_contenox.py"
# The same for the Node client: its version lookup after the loop, `pkgVersion('contenox')`
# (_common.mjs: createRequire(...).resolve of contenox/package.json), faults in about 6 MB of the
# node binary's CommonJS resolver (VmHWM 51.9 -> 58.0 MB across that one call), which the peak
# RSS from outside (`time -v`) counts and the fetch floor, which makes no such call, does not pay.
# The package.json that run.sh installs below is read directly instead.
sed -i "s|pkgVersion('contenox')|JSON.parse(readFileSync(new URL('../node/node_modules/contenox/package.json', import.meta.url), 'utf8')).version|" \
  "$work/clients/node_contenox.mjs"
grep -q "^import { readFileSync } from 'node:fs';" "$work/clients/node_contenox.mjs" ||
  sed -i "1a import { readFileSync } from 'node:fs';" "$work/clients/node_contenox.mjs"
if [ ! -x "$work/.venv/bin/python" ] || [ ! -x "$work/node/node_modules/.bin/node" ]; then
  echo "== install the peers (target/bench-peers/install.sh)"
  "$work/install.sh"
fi

maturin=$(command -v maturin || echo "$repo/.venv/bin/maturin")
[ -x "$maturin" ] || { echo "bench/peers: maturin not found (scripts/setup.sh installs it into .venv)" >&2; exit 1; }
dist="$work/dist"
rm -rf "$dist" && mkdir -p "$dist"

echo "== contenox-rust: rust-client/build.sh (release, against $repo/core)"
"$work/rust-client/build.sh" "$repo" >/dev/null
echo "== contenox-python: maturin build --release, into the harness's .venv"
(cd "$repo/bindings-python" && "$maturin" build --release --quiet --out "$dist")
"$work/.venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$dist"/contenox-*.whl
echo "== contenox-node: pack.mjs (release native module), into the harness's node/"
mapfile -t tarballs < <(cd "$repo/bindings-node" && node scripts/pack.mjs --out "$dist" | tail -2)
(cd "$work/node" && npm install --offline --no-save --no-audit --no-fund --loglevel=error "${tarballs[@]}")

echo "== run.sh (load $(cut -d' ' -f1-3 /proc/loadavg))"
"$work/run.sh"
python3 "$repo/bench/peers/gaps.py" "$work/results/runs.raw"
