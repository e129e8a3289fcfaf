#!/usr/bin/env bash
# Build the native library (dev profile) and generate the foreign bindings from it (UniFFI
# library mode, with the uniffi-bindgen binary of bindgen/, so the generator is always the same
# version as the library).
#
#   gen.sh build               cargo build -p contenox-uniffi (cdylib + staticlib) and bindgen/
#                              (uniffi-bindgen)
#   gen.sh kotlin OUT_DIR      build, then write the Kotlin sources into OUT_DIR (one line
#                              patched: see kotlin_causes)
#   gen.sh kotlin-release OUT_DIR NATIVE_DIR
#                              release build; the Kotlin sources into OUT_DIR and the stripped
#                              library into NATIVE_DIR/<JNA resource prefix>/ (linux-x86-64/...),
#                              the layout of the jar that `mvn -Prelease install` makes
#   gen.sh swift-check         build, generate Swift, and fail when swift/Sources differ from it
#   gen.sh swift-update        build, then rewrite the committed Swift sources
#
# The target dir is $CARGO_TARGET_DIR, else <repo>/target (as cargo does).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
profile=debug
[ "${1:-}" = kotlin-release ] && profile=release
case "$(uname -s)" in
  Darwin) libfile=libcontenox_uniffi.dylib ;;
  *) libfile=libcontenox_uniffi.so ;;
esac
lib="$target/$profile/$libfile"
# The generator is a build tool: its dev build serves both profiles (bindgen/ pins the library's
# exact uniffi version), so a release build never links it with LTO.
bindgen="$target/debug/uniffi-bindgen"

build() {
  if [ "$profile" = release ]; then
    (cd "$repo" && cargo build --quiet --release -p contenox-uniffi --lib)
  else
    (cd "$repo" && cargo build --quiet -p contenox-uniffi)
  fi
  # bindgen/ is a workspace of its own (see its Cargo.toml) with its own committed Cargo.lock
  # (--locked); same target directory.
  cargo build --quiet --locked --manifest-path "$here/bindgen/Cargo.toml" --target-dir "$target"
}

# Where JNA looks for a library inside a jar: com.sun.jna.Platform.RESOURCE_PREFIX.
jna_prefix() {
  local os arch
  case "$(uname -s)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) echo "gen.sh: no JNA resource prefix known for $(uname -s)" >&2; return 1 ;;
  esac
  case "$(uname -m)" in
    x86_64 | amd64) arch=x86-64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) echo "gen.sh: no JNA resource prefix known for $(uname -m)" >&2; return 1 ;;
  esac
  echo "$os-$arch"
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
  kotlin-release)
    out=${2:?usage: gen.sh kotlin-release OUT_DIR NATIVE_DIR}
    native=${3:?usage: gen.sh kotlin-release OUT_DIR NATIVE_DIR}
    build
    # The release library is stripped (its symbol table, where UniFFI reads the interface's
    # metadata, is gone; the exported functions JNA calls stay), so the sources are generated
    # from the static library of the same build, whose objects keep their symbols.
    lib="$target/release/libcontenox_uniffi.a"
    generate kotlin "$out"
    kotlin_causes "$out"
    prefix=$(jna_prefix)
    rm -rf "$native"
    mkdir -p "$native/$prefix"
    cp "$target/release/$libfile" "$native/$prefix/$libfile"
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
    echo "usage: gen.sh build | kotlin OUT_DIR | kotlin-release OUT_DIR NATIVE_DIR | swift-check | swift-update" >&2
    exit 2
    ;;
esac
