#!/usr/bin/env bash
# Build every fuzz target (fuzz/, cargo-fuzz, nightly) and run each for a fixed time, one after
# the other, at the lowest CPU priority. Not part of CI: a bench run whose figures go in
# docs/fuzzing.md.
#
#   bench/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Each run starts from the committed seeds (fuzz/seeds/<target>) plus the corpus earlier runs
# grew (target/fuzz/corpus/<target>, never committed). A crash, timeout or out-of-memory input
# lands in target/fuzz/artifacts/<target>/ and stops that target; the script goes on with the
# next one and exits non-zero at the end. Per target it prints the executions, libFuzzer's
# coverage (cov: edges, ft: features, from its last status line) and the crashes found.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
seconds=${1:-60}
shift || true
all=(sse ndjson path notebook html policy shell_line chain js_execution)
targets=("${@:-${all[@]}}")
out=$here/target/fuzz
toolchain=${FUZZ_TOOLCHAIN:-nightly}

# Overflow checks and debug assertions on (an overflow is a bug, not a wrap), AddressSanitizer
# (cargo-fuzz's default). Builds every target.
mkdir -p "$out"
# fuzz/ is a workspace of its own (nightly, outside CI) with no lockfile of its own: it starts
# from the main workspace's Cargo.lock, so the engine is fuzzed with the crate versions CI tested;
# cargo adds only what fuzz/ alone needs (libfuzzer-sys). fuzz/.gitignore keeps the copy out.
cp "$here/Cargo.lock" "$here/fuzz/Cargo.lock"
nice -n 19 cargo "+$toolchain" fuzz build --debug-assertions --target-dir "$out" \
    --fuzz-dir "$here/fuzz" >"$out/build.log" 2>&1 || { tail -n 40 "$out/build.log"; exit 1; }
bin_dir=$out/x86_64-unknown-linux-gnu/release

# The path target makes its tree beneath $TMPDIR: a directory of our own, removed at the end.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

failed=0
printf '%-11s %8s %12s %7s %7s %8s\n' target seconds executions cov ft crashes
for t in "${targets[@]}"; do
    corpus=$out/corpus/$t
    artifacts=$out/artifacts/$t
    mkdir -p "$corpus" "$artifacts"
    before=$(find "$artifacts" -type f | wc -l)
    max_len=4096
    case $t in
        html) max_len=65536 ;;
        notebook | policy | chain) max_len=16384 ;;
        # locate probes each prefix of a missing path (quadratic in its components, bounded
        # by PATH_MAX; docs/fuzzing.md): short paths keep the runs many.
        path) max_len=512 ;;
    esac
    log=$out/logs/$t.log
    mkdir -p "$(dirname "$log")"
    status=0
    TMPDIR=$scratch nice -n 19 "$bin_dir/$t" "$corpus" "$here/fuzz/seeds/$t" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    last=$(grep -E '(DONE|pulse|NEW|REDUCE|INITED).* cov: ' "$log" | tail -n 1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    crashes=$(($(find "$artifacts" -type f | wc -l) - before))
    printf '%-11s %8s %12s %7s %7s %8s\n' "$t" "$seconds" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$crashes"
    if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        failed=1
        grep -m 3 -E 'panicked|ERROR: libFuzzer|ERROR: AddressSanitizer|Test unit written' "$log" | sed 's/^/    /' || true
    fi
done
exit "$failed"
