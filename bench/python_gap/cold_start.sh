#!/usr/bin/env bash
# Where the Python cold start goes (issue 18; docs/benchmarks.md, "Python binding: the gap to the
# floor", "Cold start"): callgrind instructions after each step of the harness client's
# `--turns 1` (bench/python_gap/cold_steps.py) for two venvs, plus the streaming floor's whole
# process; then N alternating runs of wall marks (ms since just before exec: interpreter start,
# imports, import contenox, create, register, first turn, exit = last mark to the process's end).
# Not part of CI.
#
#   MOCK=http://127.0.0.1:PORT CLIENTS=/path/to/bench-peers/clients \
#   BEFORE_PY=/venv-a/bin/python AFTER_PY=/venv-b/bin/python bench/python_gap/cold_start.sh
#   N=20 (mark runs)  CALLGRIND=1 (0 skips the instruction counts)
set -uo pipefail
: "${MOCK:?MOCK=http://127.0.0.1:PORT of a running mock_llm.py}"
: "${CLIENTS:?CLIENTS=the bench-peers clients/ folder (with _common.py)}"
: "${BEFORE_PY:?}" "${AFTER_PY:?}"
export CLIENTS
N=${N:-20} CALLGRIND=${CALLGRIND:-1}
steps="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cold_steps.py"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "load start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$CALLGRIND" = 1 ]; then
  count() { # cmd... -> instructions of the whole process (all threads)
    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" > /dev/null 2> "$log"
    awk '/Collected/ {s += $4} END {print s}' "$log"
  }
  for v in before after; do
    py=$BEFORE_PY; [ $v = after ] && py=$AFTER_PY
    prev=0
    for n in 0 1 2 3 4; do
      c=$(count "$py" "$steps" --url "$MOCK" --stop $n)
      echo "instructions $v step $n: $c (+$((c - prev)))"
      prev=$c
    done
  done
  echo "instructions floor process: $(count "$BEFORE_PY" "$CLIENTS/py_raw_http_stream.py" --base-url "$MOCK" --turns 1 --mode fresh)"
fi
for _ in $(seq 1 "$N"); do
  for v in floor before after; do
    py=$BEFORE_PY; [ $v = after ] && py=$AFTER_PY
    extra=(); [ $v = floor ] && extra=(--floor)
    t0=$EPOCHREALTIME
    out=$("$py" "$steps" --url "$MOCK" --marks "$t0" "${extra[@]}")
    t1=$EPOCHREALTIME
    echo "marks $v $out end=$(python3 -c "print(f'{1000 * ($t1 - $t0):.2f}')")"
  done
done | python3 -c '
import collections, statistics, sys
steps = collections.defaultdict(lambda: collections.defaultdict(list))
for line in sys.stdin:
    _, name, *kv = line.split()
    prev = 0.0
    for item in kv:
        k, v = item.split("=")
        steps[name][k].append(float(v) - prev)
        prev = float(v)
for name, d in steps.items():
    print(f"wall {name:6s} " + "  ".join(f"{k} {statistics.median(v):.1f}" for k, v in d.items()) + " (ms, medians)")
'
echo "load end: $(cut -d' ' -f1-3 /proc/loadavg)"
