# Shared by the package tests (sourced). Paths, and a PATH without any Rust toolchain on it: the
# packages are installed and used as a user without Rust would.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
dist="$target/dist"
export FAKE_MODEL_SERVER="${FAKE_MODEL_SERVER:-$target/debug/fake-model-server}"

# PATH less every directory that holds cargo, rustc or rustup.
path_without_rust() {
  local dir out=()
  IFS=: read -ra dirs <<<"$PATH"
  for dir in "${dirs[@]}"; do
    [ -n "$dir" ] || continue
    if [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ] || [ -e "$dir/rustup" ]; then
      continue
    fi
    out+=("$dir")
  done
  (IFS=:; echo "${out[*]}")
}

# Runs a command with no Rust toolchain reachable: PATH stripped, cargo's and rustup's variables
# unset. Fails loudly if cargo or rustc can still be found.
without_rust() {
  local path
  path=$(path_without_rust)
  if PATH="$path" command -v cargo >/dev/null || PATH="$path" command -v rustc >/dev/null; then
    echo "package test: cargo/rustc still on the stripped PATH ($path)" >&2
    return 1
  fi
  env -u CARGO -u CARGO_HOME -u RUSTUP_HOME -u RUSTUP_TOOLCHAIN -u RUSTC -u CARGO_TARGET_DIR \
    PATH="$path" "$@"
}

mib() { # FILE... : total size in MiB, one decimal
  du -cb "$@" | tail -1 | awk '{printf "%.1f", $1 / 1048576}'
}
