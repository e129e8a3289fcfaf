#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the telemetry test talks to (tests/otel-collector: the
# collector's own Go modules, the OTLP receiver and the file exporter, nothing else) once, under
# ~/.cache/contenox keyed by its go.sum, and prints the binary's path. About 2 minutes the first
# time on 2 cores (Go modules from the module proxy); instant after.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$here/tests/otel-collector"
key="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)"
cache="${CONTENOX_CACHE:-$HOME/.cache/contenox}/otelcol-$key"
bin="$cache/otelcol-contenox"
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  (cd "$src" && go build -mod=readonly -trimpath -ldflags="-s -w" -o "$bin.tmp" .) >&2
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
