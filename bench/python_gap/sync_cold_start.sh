#!/usr/bin/env bash
# Python cold start with the synchronous entry (issue 27, benchmark 3): whole `--turns 1 --mode
# fresh` processes (import, create a client, register the tool, one turn against the harness's
# mock, exit), five ways, alternating, in one run:
#   floor          - py_raw_http_stream.py, the streaming stdlib floor (http.client, no asyncio);
#   skeleton       - the harness's py_contenox.py with null_contenox/ first on sys.path: what the
#                    asyncio client costs with an SDK that does nothing (issue 18's skeleton);
#   skeleton-sync  - py_contenox_sync.py with the same stand-in: what the sync client costs;
#   contenox-async - the harness's py_contenox.py (asyncio.run, await client.run);
#   contenox-sync  - py_contenox_sync.py (client.run_sync; the script checks it imported no asyncio).
# Every client runs from one copy of the harness's clients/ (same sys.path shape), the async one
# with bench/peers/run.sh's version patch. Prints each one's median wall time over N runs and its
# difference to the floor, and with CALLGRIND=1 each one's instructions (whole process, all
# threads). Not part of CI.
#
#   MOCK=http://127.0.0.1:PORT CLIENTS=/path/to/bench-peers/clients PY=/venv/bin/python \
#     bench/python_gap/sync_cold_start.sh       # N=41 wall runs each; CALLGRIND=1 adds counts
set -uo pipefail
: "${MOCK:?MOCK=http://127.0.0.1:PORT of a running mock_llm.py}"
: "${CLIENTS:?CLIENTS=the bench-peers clients/ folder (with _common.py)}"
: "${PY:?PY=the python that has contenox installed}"
N=${N:-41} CALLGRIND=${CALLGRIND:-0}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/clients"
cp "$CLIENTS/_common.py" "$CLIENTS/py_raw_http_stream.py" "$CLIENTS/py_contenox.py" "$here/py_contenox_sync.py" "$tmp/clients/"
sed -i 's/from importlib.metadata import version$/from contenox import __version__/; s/v = version("contenox")/v = __version__/' \
  "$tmp/clients/py_contenox.py"
kinds=(floor skeleton skeleton-sync contenox-async contenox-sync)
script() { # kind -> the client script
  case $1 in
    floor) echo "$tmp/clients/py_raw_http_stream.py" ;;
    skeleton|contenox-async) echo "$tmp/clients/py_contenox.py" ;;
    *) echo "$tmp/clients/py_contenox_sync.py" ;;
  esac
}
path() { # kind -> PYTHONPATH (the do-nothing stand-in first for the skeletons)
  case $1 in skeleton*) echo "$here/null_contenox" ;; esac
}
args=(--base-url "$MOCK" --turns 1 --mode fresh)
echo "load start: $(cut -d' ' -f1-3 /proc/loadavg)"
for k in "${kinds[@]}"; do
  PYTHONPATH=$(path "$k") "$PY" "$(script "$k")" "${args[@]}" > "$tmp/$k.out" || { echo "$k: the client failed: $(cat "$tmp/$k.out")" >&2; exit 1; }
  grep -q '"ok_turns": 1' "$tmp/$k.out" || { echo "$k: the turn was not ok: $(cat "$tmp/$k.out")" >&2; exit 1; }
  case $k in
    skeleton*) grep -q '"sdk_version": "null"' "$tmp/$k.out" || { echo "$k: the stand-in was not imported" >&2; exit 1; } ;;
    contenox*) if grep -q '"sdk_version": "null"' "$tmp/$k.out"; then echo "$k: ran the stand-in" >&2; exit 1; fi ;;
  esac
  if [ "$k" = contenox-sync ]; then
    grep -q '"asyncio_imported": false' "$tmp/$k.out" || { echo "contenox-sync imported asyncio: $(cat "$tmp/$k.out")" >&2; exit 1; }
  fi
done
if [ "$CALLGRIND" = 1 ]; then
  for k in "${kinds[@]}"; do
    PYTHONPATH=$(path "$k") PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
      "$PY" "$(script "$k")" "${args[@]}" > /dev/null 2> "$tmp/cg.log"
    echo "instructions $k: $(awk '/Collected/ {s += $4} END {printf "%.1fM", s / 1e6}' "$tmp/cg.log")"
  done
fi
for _ in $(seq 1 "$N"); do
  for k in "${kinds[@]}"; do
    t0=$EPOCHREALTIME
    PYTHONPATH=$(path "$k") "$PY" "$(script "$k")" "${args[@]}" > /dev/null
    t1=$EPOCHREALTIME
    echo "$k $t0 $t1" >> "$tmp/wall"
  done
done
python3 - "$tmp/wall" "${kinds[@]}" <<'PY'
import collections, statistics, sys
t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, a, b = line.split()
    t[k].append(float(b) - float(a))
floor = statistics.median(t["floor"])
for k in sys.argv[2:]:
    m = statistics.median(t[k])
    q = statistics.quantiles(t[k], n=4) if len(t[k]) > 1 else [m, m, m]
    print(f"wall {k:14s} median {m * 1000:6.1f} ms  (IQR {q[0] * 1000:.1f}-{q[2] * 1000:.1f}; "
          f"{(m - floor) * 1000:+6.1f} ms, {m / floor:.2f}x the floor; {len(t[k])} runs)")
PY
echo "load end: $(cut -d' ' -f1-3 /proc/loadavg)"
