#!/usr/bin/env bash
# Build the native library (dev profile) and generate the foreign bindings from it (UniFFI
# library mode, with this crate's uniffi-bindgen binary, so the generator is always the same
# version as the library).
#
#   gen.sh build               cargo build -p contenox-uniffi (cdylib + staticlib + uniffi-bindgen)
#   gen.sh kotlin OUT_DIR      build, then write the Kotlin sources into OUT_DIR (one line
#                              patched: see kotlin_causes)
#   gen.sh swift-check         build, generate Swift, and fail when swift/Sources differ from it
#   gen.sh swift-update        build, then rewrite the committed Swift sources
#
# The target dir is $CARGO_TARGET_DIR, else <repo>/target (as cargo does).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
case "$(uname -s)" in
  Darwin) lib="$target/debug/libcontenox_uniffi.dylib" ;;
  *) lib="$target/debug/libcontenox_uniffi.so" ;;
esac
bindgen="$target/debug/uniffi-bindgen"

build() {
  (cd "$repo" && cargo build --quiet -p contenox-uniffi)
}

generate() { # LANGUAGE OUT_DIR
  rm -rf "$2"
  mkdir -p "$2"
  (cd "$repo" && "$bindgen" generate "$lib" --language "$1" --out-dir "$2" --no-format \
    --metadata-no-deps >/dev/null)
}

# UniFFI's Kotlin exceptions have no `cause`. The one place every ContenoxException is made is
# its ErrorHandler's `lift`; this routes it through `withCauses()` (kotlin/src/main/kotlin/
# contenox/Helpers.kt), which sets the engine's cause chain as the exception's `cause`. The
# patch fails loudly when the generated line is not there exactly once.
kotlin_causes() { # OUT_DIR
  local file="$1/contenox/contenox.kt"
  local line='override fun lift(error_buf: RustBuffer.ByValue): ContenoxException = FfiConverterTypeContenoxError.lift(error_buf)'
  if [ "$(grep -cF "$line" "$file")" != 1 ]; then
    echo "gen.sh: the ContenoxException lift line is not in the generated Kotlin once; update kotlin_causes" >&2
    exit 1
  fi
  sed -i.bak "s|$line|$line.withCauses()|" "$file"
  rm -f "$file.bak"
}

# The committed Swift layout: generated files renamed into a SwiftPM package.
swift_layout() { # GENERATED_DIR PACKAGE_DIR
  mkdir -p "$2/Sources/Contenox" "$2/Sources/ContenoxFFI"
  cp "$1/Contenox.swift" "$2/Sources/Contenox/Contenox.swift"
  cp "$1/ContenoxFFI.h" "$2/Sources/ContenoxFFI/ContenoxFFI.h"
  cp "$1/ContenoxFFI.modulemap" "$2/Sources/ContenoxFFI/module.modulemap"
}

swift_files=(Sources/Contenox/Contenox.swift Sources/ContenoxFFI/ContenoxFFI.h Sources/ContenoxFFI/module.modulemap)

cmd=${1:-}
case "$cmd" in
  build)
    build
    ;;
  kotlin)
    out=${2:?usage: gen.sh kotlin OUT_DIR}
    build
    generate kotlin "$out"
    kotlin_causes "$out"
    ;;
  swift-check | swift-update)
    build
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    generate swift "$tmp/gen"
    swift_layout "$tmp/gen" "$tmp/pkg"
    if [ "$cmd" = swift-update ]; then
      swift_layout "$tmp/gen" "$here/swift"
      echo "swift sources updated"
      exit 0
    fi
    drift=0
    for f in "${swift_files[@]}"; do
      if ! diff -u "$here/swift/$f" "$tmp/pkg/$f" >"$tmp/diff" 2>&1; then
        echo "drift: bindings-uniffi/swift/$f differs from what the build generates:" >&2
        head -40 "$tmp/diff" >&2
        drift=1
      fi
    done
    if [ "$drift" -ne 0 ]; then
      echo "run bindings-uniffi/gen.sh swift-update and commit the result" >&2
      exit 1
    fi
    echo "swift sources match the generated ones"
    ;;
  *)
    echo "usage: gen.sh build | kotlin OUT_DIR | swift-check | swift-update" >&2
    exit 2
    ;;
esac
