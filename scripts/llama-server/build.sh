#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from the source that ships in the PyPI sdist of
# llama-cpp-python, once, and caches it under ~/.cache/contenox/llama-server/ (or
# $CONTENOX_CACHE/llama-server/). Prints the path of the binary on its last line.
#
#   scripts/llama-server/build.sh            build if the cache has no binary for this version
#
# GGML_NATIVE=OFF: a native build dies with an illegal instruction on our VMs (the build host's
# CPU flags are not the run host's). LLAMA_CURL=OFF: nothing downloads at run time. About 15 min
# on 2 idle cores; it runs under `nice` so it does not starve other work.
set -euo pipefail

version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache="${CONTENOX_CACHE:-$HOME/.cache/contenox}/llama-server"
bin="$cache/$version/bin/llama-server"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache/$version"
work="$cache/$version/work"
rm -rf "$work"
mkdir -p "$work"
python3 -m pip download --quiet --no-binary :all: --no-deps --dest "$work" \
  "llama-cpp-python==$version" >&2
tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
src=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
[ -f "$src/CMakeLists.txt" ] || { echo "build.sh: no llama.cpp source in the sdist" >&2; exit 1; }

jobs="${LLAMA_BUILD_JOBS:-1}"
nice -n 15 cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
nice -n 15 cmake --build "$work/build" --target llama-server -j "$jobs" >&2

mkdir -p "$cache/$version/bin"
cp "$work/build/bin/llama-server" "$bin.tmp"
mv "$bin.tmp" "$bin"
rm -rf "$work"
echo "$bin"
