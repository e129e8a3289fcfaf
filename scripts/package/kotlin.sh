#!/usr/bin/env bash
# The Kotlin package as users depend on it: `mvn -Prelease install` in bindings-uniffi/kotlin
# makes the jar with the release native library at JNA's resource path (linux-x86-64/...) and
# installs it into the local Maven repository; examples/kotlin, a separate Maven project, depends
# on contenox:contenox-kotlin from there, and its console app runs a turn with `java -jar`: no
# jna.library.path, no LD_LIBRARY_PATH, no Rust toolchain on PATH. JNA's load log proves the
# library came out of the jar.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
out="$dist/kotlin"
rm -rf "$out"
mkdir -p "$out"

echo "== mvn -Prelease install (bindings-uniffi/kotlin)"
(cd "$repo/bindings-uniffi/kotlin" && mvn -q -B -Prelease clean install)
jar=$(ls "$repo"/bindings-uniffi/kotlin/target/package/contenox-kotlin-*.jar | grep -v -- '-sources\|-javadoc' | head -1)
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) native=linux-x86-64/libcontenox_uniffi.so ;;
  Linux-aarch64) native=linux-aarch64/libcontenox_uniffi.so ;;
  Darwin-arm64) native=darwin-aarch64/libcontenox_uniffi.dylib ;;
  Darwin-x86_64) native=darwin-x86-64/libcontenox_uniffi.dylib ;;
  *) echo "package-kotlin: no JNA resource path known for $(uname -sm)" >&2; exit 1 ;;
esac
jar tf "$jar" | grep -qx "$native" || { echo "package-kotlin: $jar lacks $native" >&2; jar tf "$jar" >&2; exit 1; }
cp "$jar" "$out/"
echo "jar: $(basename "$jar") ($(mib "$jar") MiB), carries $native"

echo "== examples/kotlin: mvn package against the installed artifact"
example="$repo/examples/kotlin"
(cd "$example" && mvn -q -B clean package)
app="$example/target/contenox-kotlin-example-0.1.0.jar"
[ -f "$app" ] || { echo "package-kotlin: $app was not built" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/contenox-kotlin.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
run_app() { # STDIN OUT: java -jar with nothing pointing JNA at a library directory
  printf '%s' "$1" | (cd "$tmp" && without_rust env -u LD_LIBRARY_PATH -u JAVA_TOOL_OPTIONS -u JNA_LIBRARY_PATH \
    java -Djna.debug_load=true -jar "$app") >"$2" 2>"$2.err"
}

echo "== java -jar: approve the booking on stdin"
if ! run_app $'y\n' "$tmp/yes.out"; then
  cat "$tmp/yes.out" "$tmp/yes.out.err" >&2
  exit 1
fi
cat "$tmp/yes.out"
grep -q '^done: Lisbon is sunny; I booked two nights.$' "$tmp/yes.out"
grep -q '  < book: {"booked":true' "$tmp/yes.out" || { cat "$tmp/yes.out" >&2; exit 1; }
# JNA says where it found the library: inside the installed jar, extracted from the resource.
if ! grep -q "contenox-kotlin-[^/]*\.jar!/$native" "$tmp/yes.out.err"; then
  echo "package-kotlin: JNA did not load $native from the contenox jar:" >&2
  cat "$tmp/yes.out.err" >&2
  exit 1
fi

echo "== java -jar: stdin closed, the booking is denied and the turn still ends"
run_app '' "$tmp/no.out" || { cat "$tmp/no.out" "$tmp/no.out.err" >&2; exit 1; }
# No ^ anchor: the prompt is printed without a newline and the turn's events come from another
# coroutine, so the result line may follow the prompt on the same line.
grep -q '  < book (error): .*No one is at the terminal' "$tmp/no.out" || { cat "$tmp/no.out" >&2; exit 1; }
grep -q '^done: ' "$tmp/no.out" || { cat "$tmp/no.out" >&2; exit 1; }
echo "package-kotlin: ok"
