#!/usr/bin/env bash
# What the harness's contenox client costs by itself (issue 18's Python cold start): its
# `py_contenox.py --turns 1` run three ways, alternating, as whole processes:
#   floor    - py_raw_http_stream.py, the streaming floor (stdlib http.client, no asyncio);
#   null     - py_contenox.py with bench/python_gap/null_contenox/ first on sys.path: a package
#              with contenox's names that does nothing (no engine, no HTTP), so what is left is
#              the client's own _common, `import asyncio`, `asyncio.run`, Timer and emit;
#   contenox - py_contenox.py with the installed contenox.
# Prints each one's instructions (callgrind, whole process, all threads) and its median wall time
# over N runs. The null line is the least any SDK can cost through this client. Not part of CI.
#
#   MOCK=http://127.0.0.1:PORT CLIENTS=/path/to/bench-peers/clients PY=/venv/bin/python \
#     bench/python_gap/skeleton.sh          # N=41 wall runs each, CALLGRIND=0 skips the counts
set -uo pipefail
: "${MOCK:?MOCK=http://127.0.0.1:PORT of a running mock_llm.py}"
: "${CLIENTS:?CLIENTS=the bench-peers clients/ folder (with _common.py)}"
: "${PY:?PY=the python that has contenox installed}"
N=${N:-41} CALLGRIND=${CALLGRIND:-1}
null="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/null_contenox"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
client() { # floor|null|contenox -> the client script
  if [ "$1" = floor ]; then echo "$CLIENTS/py_raw_http_stream.py"; else echo "$CLIENTS/py_contenox.py"; fi
}
path() { # floor|null|contenox -> PYTHONPATH (the stand-in first for null)
  if [ "$1" = null ]; then echo "$null"; fi
}
args=(--base-url "$MOCK" --turns 1 --mode fresh)
echo "load start: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in floor null contenox; do
  PYTHONPATH=$(path $k) "$PY" "$(client $k)" "${args[@]}" > "$tmp/$k.out" || { echo "$k: the client failed: $(cat "$tmp/$k.out")" >&2; exit 1; }
  grep -q '"ok_turns": 1' "$tmp/$k.out" || { echo "$k: the turn was not ok: $(cat "$tmp/$k.out")" >&2; exit 1; }
  [ $k = null ] && { grep -q '"sdk_version": "null"' "$tmp/$k.out" || { echo "null: the stand-in was not imported" >&2; exit 1; }; }
done
if [ "$CALLGRIND" = 1 ]; then
  for k in floor null contenox; do
    PYTHONPATH=$(path $k) PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
      "$PY" "$(client $k)" "${args[@]}" > /dev/null 2> "$tmp/cg.log"
    echo "instructions $k: $(awk '/Collected/ {s += $4} END {printf "%.1fM", s / 1e6}' "$tmp/cg.log")"
  done
fi
for _ in $(seq 1 "$N"); do
  for k in floor null contenox; do
    t0=$EPOCHREALTIME
    PYTHONPATH=$(path $k) "$PY" "$(client $k)" "${args[@]}" > /dev/null
    t1=$EPOCHREALTIME
    echo "$k $t0 $t1" >> "$tmp/wall"
  done
done
python3 - "$tmp/wall" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, a, b = line.split()
    t[k].append(float(b) - float(a))
floor = statistics.median(t["floor"])
for k in ("floor", "null", "contenox"):
    m = statistics.median(t[k])
    print(f"wall {k:8s} median {m:.3f} s  ({m / floor:.2f}x the floor, {len(t[k])} runs)")
PY
echo "load end: $(cut -d' ' -f1-3 /proc/loadavg)"
