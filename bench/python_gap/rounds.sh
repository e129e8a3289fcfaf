#!/usr/bin/env bash
# Alternating rounds of the bench-peers Python clients: the streaming floor, contenox from one
# venv (BEFORE_PY) and from another (AFTER_PY), fresh and session, then one-turn cold starts
# (whole process, from outside). Prints one line per run: name mode turns per_turn_ms
# cpu_ms_per_turn peak_rss_mb ext_wall_s. Not part of CI (docs/benchmarks.md, "Python binding:
# the gap to the floor").
#
#   MOCK=http://127.0.0.1:PORT CLIENTS=/path/to/bench-peers/clients \
#   BEFORE_PY=/venv-a/bin/python AFTER_PY=/venv-b/bin/python bench/python_gap/rounds.sh
#   ROUNDS=3 COLD=5 TURNS=200
set -uo pipefail
: "${MOCK:?MOCK=http://127.0.0.1:PORT of a running mock_llm.py}"
: "${CLIENTS:?CLIENTS=the bench-peers clients/ folder}"
: "${BEFORE_PY:?}" "${AFTER_PY:?}"
ROUNDS=${ROUNDS:-3} COLD=${COLD:-5} TURNS=${TURNS:-200}
TV=$(mktemp)
trap 'rm -f "$TV"' EXIT
run() { # name cmd...
  local name=$1; shift
  /usr/bin/time -f "%e" -o "$TV" "$@" | tail -1 | python3 -c "import json,sys
d = json.loads(sys.stdin.read())
print('$name', d['mode'], d['turns'], d['per_turn_ms'], d['cpu_ms_per_turn'], d['peak_rss_mb'], open('$TV').read().strip())"
}
echo "load start: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq 1 "$ROUNDS"); do
  for mode in fresh session; do
    run floor "$BEFORE_PY" "$CLIENTS/py_raw_http_stream.py" --base-url "$MOCK" --turns "$TURNS" --mode $mode
    run before "$BEFORE_PY" "$CLIENTS/py_contenox.py" --base-url "$MOCK" --turns "$TURNS" --mode $mode
    run after "$AFTER_PY" "$CLIENTS/py_contenox.py" --base-url "$MOCK" --turns "$TURNS" --mode $mode
  done
done
for _ in $(seq 1 "$COLD"); do
  run floor-cold "$BEFORE_PY" "$CLIENTS/py_raw_http_stream.py" --base-url "$MOCK" --turns 1 --mode session
  run before-cold "$BEFORE_PY" "$CLIENTS/py_contenox.py" --base-url "$MOCK" --turns 1 --mode session
  run after-cold "$AFTER_PY" "$CLIENTS/py_contenox.py" --base-url "$MOCK" --turns 1 --mode session
done
echo "load end: $(cut -d' ' -f1-3 /proc/loadavg)"
