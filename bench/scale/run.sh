#!/usr/bin/env bash
# The scale curve (issue 18): per-turn cost and RSS against the size of one conversation
# (10 .. 10,000 messages) and against concurrent clients in one process (1 .. 1,000), for the
# Rust crate, the Python binding and the Node binding, over loopback HTTP against the Rust
# fake-model-server. See docs/benchmarks.md, section "Scale".
#
#   bench/scale/run.sh                  # build (release), run the whole curve, write the results
#   bench/scale/run.sh --no-build       # take what build.sh built last time
#   PROFILE=profiling bench/scale/run.sh   # release + line tables (for perf / callgrind)
#   SCALE_ARGS="--langs rust --messages 10,100 --clients 1" bench/scale/run.sh --no-build
#
# Writes target/scale/results/{scale.jsonl,scale.md} and the plot docs/scale.png. To update the
# committed figures: cp target/scale/results/scale.jsonl docs/ and paste scale.md into
# docs/benchmarks.md ("Scale"). Needs cargo, python3 (venv), node >= 20 and npm. The driver exits
# non-zero if any turn of any client was not the scripted one, and warns on superlinear growth.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
export PROFILE="${PROFILE:-release}"
OUT="${SCALE_OUT:-$TARGET/scale/results}"
PLOT="${SCALE_PLOT:-$REPO/docs/scale.png}"

build=1
for a in "$@"; do
    case "$a" in
        --no-build) build=0 ;;
        *) echo "unknown argument $a" >&2; exit 2 ;;
    esac
done
if [[ $build == 1 ]]; then
    "$HERE/build.sh"
fi
# 1,000 clients hold 1,000 sockets here (and as many in the server): raise the soft fd limit.
if [[ "$(ulimit -n)" != unlimited && "$(ulimit -n)" -lt 8192 ]]; then
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
    if [[ "$(ulimit -n)" -lt 4096 ]]; then
        echo "warning: ulimit -n is $(ulimit -n); 1,000 clients need about 2,100 descriptors" >&2
    fi
fi
# shellcheck disable=SC2086
exec "$TARGET/scale/venv/bin/python" "$HERE/scale.py" --target "$TARGET" --profile "$PROFILE" \
    --out "$OUT" --plot "$PLOT" --command "bench/scale/run.sh $*" ${SCALE_ARGS:-}
