#!/usr/bin/env bash
# The Swift toolchain this project tests with on Linux: Debian trixie's `swiftlang` (Swift 6.0,
# with XCTest and Swift Testing) in a minbase trixie root, built once from Debian's packages and
# kept in a cache directory, entered with chroot.
#
#   toolchain.sh ensure        build the root unless a good one is there (stamp + `swift` runs)
#   toolchain.sh run [--bind DIR]... [--ro DIR]... [--] CMD [ARG...]
#                              ensure, then run CMD inside the root, in the current directory
#   toolchain.sh enter [--bind DIR]... [--ro DIR]... [--] CMD [ARG...]
#                              the same without the checks (after an `ensure`: saves ~2 s a call)
#   toolchain.sh dir           print the root's directory
#   toolchain.sh remove        unmount anything left under the root, then delete it
#
# The root: ${CONTENOX_SWIFT_ROOT:-${XDG_CACHE_HOME:-~/.cache}/contenox/swift-trixie} (2.8 GB).
# Built with the host's `debootstrap` (Debian's package; installed with apt-get when missing),
# from the mirror the host's apt is configured with (CONTENOX_DEBIAN_MIRROR overrides it; without
# either, debootstrap's default), then `apt-get install` of the packages below inside it. The
# build goes to ROOT.partial and is moved into place only after `swift --version` ran in it and
# the stamp (the recipe it was built from) was written, so a killed build leaves no half root;
# a root whose stamp is missing or stale, or in which swift does not run, is built again.
# Concurrent callers share the root: `run` holds a shared lock, a rebuild an exclusive one.
#
# `run` enters the root in a mount and PID namespace of its own (unshare): /proc mounted, /dev
# bound, the checkout (the repository this script is in) bound read-write at the same path, and
# each --bind DIR (read-write) / --ro DIR (read-only) too, so every path means the same inside
# and out. A trap unmounts everything when CMD ends, fails or is interrupted; the namespaces go
# with their last process anyway (nothing CMD started outlives it: the PID namespace's processes
# are killed when it ends), and a stale mount under the root in the host's namespace (from a
# killed run of an older version, or made by hand) is unmounted at the next start.
#
# Also in the root, for the processes conformance scenarios start from inside it: Debian's
# `nodejs` (the npm MCP test server, run from the checkout's tests/mcp/node_modules) and
# `python3-venv`, with a virtualenv at /opt/contenox/mcp-venv holding tests/mcp/requirements.txt
# (the Python MCP test server's packages, as the host's tests/mcp/.venv does; made again when
# the file changes). CONTENOX_MCP_PYTHON=/opt/contenox/mcp-venv/bin/python points the runner at it.
# The host-built binaries (the Rust library, fake-model-server, ...) run there as they are:
# trixie's glibc is newer than the hosts' this project builds on.
#
# Needs: root (chroot, mount, unshare), Debian's apt (for debootstrap), a reachable Debian mirror
# the first time.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
root=${CONTENOX_SWIFT_ROOT:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/contenox/swift-trixie}
suite=trixie
packages=(swiftlang libc6-dev libstdc++-14-dev nodejs python3-venv)
# Bump when the way the root is made changes (the packages are part of the recipe already).
recipe="contenox-swift-root 1 $suite ${packages[*]}"
stamp_name=.contenox-stamp
mcp_venv=/opt/contenox/mcp-venv
path_inside=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() {
  echo "toolchain.sh: $*" >&2
  exit 1
}

need_root() {
  [ "$(id -u)" = 0 ] || die "building and entering the Swift root needs root (chroot, mount)"
  command -v unshare >/dev/null || die "unshare (util-linux) is required"
}

# The mount points at or below $1 in this mount namespace, deepest first.
mounts_under() {
  local prefix=$1
  awk '{print $5}' /proc/self/mountinfo |
    while IFS= read -r m; do
      m=$(printf '%b' "${m//\\/\\0}") # mountinfo escapes space, tab, newline, backslash as \ooo
      case "$m" in "$prefix" | "$prefix"/*) echo "$m" ;; esac
    done | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-
}

# Unmount everything at or below $1; fails when something stays mounted.
unmount_under() {
  local m left
  while IFS= read -r m; do
    [ -n "$m" ] || continue
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done < <(mounts_under "$1")
  left=$(mounts_under "$1")
  [ -z "$left" ] || { echo "toolchain.sh: still mounted under $1:" >&2; echo "$left" >&2; return 1; }
}

# Delete a root directory, never through a mount (a bound checkout would go with it).
safe_remove() {
  [ -e "$1" ] || return 0
  unmount_under "$1" || die "not deleting $1 while something is mounted under it"
  rm -rf --one-file-system "$1"
}

# The Debian mirror the host's apt uses: the first `deb` source of the host's own suite (its
# VERSION_CODENAME), from the deb822 .sources files or the one-line .list files.
host_mirror() {
  [ -n "${CONTENOX_DEBIAN_MIRROR:-}" ] && { echo "$CONTENOX_DEBIAN_MIRROR"; return; }
  local codename
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 0
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v want="$codename" '
      function flush() { if (deb && suite_ok && uri != "") { print uri; found = 1; exit } deb = 0; suite_ok = 0; uri = "" }
      /^[[:space:]]*$/ { flush(); next }
      /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) suite_ok = 1 }
      END { if (!found) flush() }
    ' "$f"
  done | head -1 | grep . && return 0
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v want="$codename" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } if ($(i + 1) == want) { print $i; exit } }'
}

host_install() { # PACKAGE: install a host package with apt-get (once)
  command -v apt-get >/dev/null || die "$1 is missing and there is no apt-get to install it"
  echo "toolchain.sh: apt-get install $1 (on the host)"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1" >/dev/null; then
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1" >/dev/null
  fi
}

# Run a command in root $1 with a clean environment (for building it): see `inside`.
chroot_in() { # ROOT CMD...
  local dir=$1
  shift
  in_namespaces bash "$here/toolchain.sh" __inside "$dir" --clean-env -- "$@"
}

# True when root $1 has the stamp of this recipe and runs swift, node and python3.
healthy() {
  local dir=$1
  [ -f "$dir/$stamp_name" ] && [ "$(cat "$dir/$stamp_name")" = "$recipe" ] || return 1
  chroot_in "$dir" sh -c 'swift --version && node --version && python3 -c "import venv"' >/dev/null 2>&1
}

build() {
  need_root
  local new="$root.partial" started=$SECONDS mirror
  command -v debootstrap >/dev/null || host_install debootstrap
  safe_remove "$new"
  mkdir -p "$(dirname "$root")"
  mirror=$(host_mirror || true)
  echo "toolchain.sh: debootstrap --variant=minbase $suite into $new${mirror:+ from the host apt mirror}"
  # In a mount namespace of its own: debootstrap's mounts inside the new root end with it.
  if ! in_namespaces \
    debootstrap --variant=minbase "$suite" "$new" ${mirror:+"$mirror"} >"$new.log" 2>&1; then
    tail -20 "$new.log" >&2
    die "debootstrap failed (log: $new.log)"
  fi
  echo "toolchain.sh: debootstrap took $((SECONDS - started)) s; apt-get install ${packages[*]}"
  cp /etc/resolv.conf "$new/etc/resolv.conf" 2>/dev/null || true
  # No fsync per unpacked file (a root that dies half-made is thrown away anyway): the install
  # writes 3 GB, and dpkg's syncs dominate it on a shared disk.
  echo force-unsafe-io >"$new/etc/dpkg/dpkg.cfg.d/contenox-unsafe-io"
  started=$SECONDS
  chroot_in "$new" apt-get update -q >>"$new.log" 2>&1 || { tail -20 "$new.log" >&2; die "apt-get update in the root failed"; }
  chroot_in "$new" apt-get install -y -q --no-install-recommends "${packages[@]}" >>"$new.log" 2>&1 ||
    { tail -20 "$new.log" >&2; die "apt-get install in the root failed (log: $new.log)"; }
  chroot_in "$new" apt-get clean
  echo "toolchain.sh: apt-get install took $((SECONDS - started)) s"
  chroot_in "$new" swift --version >/dev/null 2>&1 || die "swift does not run in the new root"
  echo "$recipe" >"$new/$stamp_name"
  safe_remove "$root"
  mv "$new" "$root"
  rm -f "$new.log"
  echo "toolchain.sh: the Swift root is ready in $root"
}

lock_fd=9
lock() { # MODE (-s shared, -x exclusive)
  mkdir -p "$(dirname "$root")"
  exec 9>"$root.lock"
  flock "$1" "$lock_fd"
}

# Leaves the shared lock held (for the caller's run) with a good root in place.
ensure() {
  need_root
  lock -s
  unmount_under "$root" 2>/dev/null || true # a stale mount in this namespace, from a killed run
  # What a killed build left (none runs: a build holds the lock exclusively).
  if [ -e "$root.partial" ]; then safe_remove "$root.partial"; rm -f "$root.partial.log"; fi
  if healthy "$root"; then return 0; fi
  flock -u "$lock_fd"
  lock -x
  if ! healthy "$root"; then
    [ -e "$root" ] && echo "toolchain.sh: the root in $root is missing its stamp or does not run swift: building it again"
    build
  fi
  lock -s
}

# tests/mcp/requirements.txt (the Python MCP test server's packages) into the root's own
# virtualenv: the host's tests/mcp/.venv is made for the host's Python. Made again when the
# requirements change (a stamp beside it holds their hash).
ensure_mcp_venv() {
  local req="$repo/tests/mcp/requirements.txt" want have
  want=$(sha256sum <"$req" | cut -d' ' -f1)
  have=$(cat "$root$mcp_venv.stamp" 2>/dev/null || true)
  [ "$want" = "$have" ] && return 0
  flock -u "$lock_fd"
  lock -x
  have=$(cat "$root$mcp_venv.stamp" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    echo "toolchain.sh: pip install -r tests/mcp/requirements.txt into $mcp_venv (in the root)"
    # pip inside the root uses the host's name servers, pip configuration and CA certificates
    # (the bundle PIP_CERT or pip.conf may name: a machine behind a TLS-inspecting proxy trusts
    # its CA there).
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    if [ -f /etc/pip.conf ]; then cp /etc/pip.conf "$root/etc/pip.conf"; fi
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
      mkdir -p "$root/etc/ssl/certs"
      cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    fi
    rm -rf "${root:?}$mcp_venv" "$root$mcp_venv.stamp"
    mkdir -p "$root$(dirname "$mcp_venv")"
    local started=$SECONDS
    if ! enter -- sh -c 'python3 -m venv "$0" && "$0/bin/pip" install --quiet --disable-pip-version-check -r "$1"' \
      "$mcp_venv" "$req" >"$root$mcp_venv.log" 2>&1; then
      cat "$root$mcp_venv.log" >&2
      die "could not install tests/mcp/requirements.txt into the root's $mcp_venv"
    fi
    echo "$want" >"$root$mcp_venv.stamp"
    echo "toolchain.sh: MCP virtualenv ready ($((SECONDS - started)) s)"
  fi
  lock -s
}

# Run CMD in the root with the checkout and the given directories bound at their own paths.
enter() { # [--bind DIR]... [--ro DIR]... [--] CMD...
  local args=(--bind "$repo")
  case "$root/" in "$repo/"*) die "the root ($root) must not be inside the checkout ($repo)" ;; esac
  while [ $# -gt 0 ]; do
    case "$1" in
      --bind | --ro)
        [ $# -ge 2 ] || die "$1 needs a directory"
        [ -d "$2" ] || die "$1 $2: not a directory"
        local d
        d=$(cd "$2" && pwd -P)
        # Binding the root (or a directory holding it) into itself would loop.
        case "$root/" in "${d%/}/"*) die "$1 $d: the root is inside it" ;; esac
        args+=("$1" "$d")
        shift 2
        ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || die "run: no command"
  in_namespaces bash "$here/toolchain.sh" __inside "$root" --cwd "$(pwd -P)" "${args[@]}" -- "$@"
}

# CMD in new mount and PID namespaces, ended with everything it started when this script is
# (unshare --fork ignores SIGTERM and SIGINT itself; SIGKILL ends it, and --kill-child then
# ends the namespace's first process, and with it the namespace).
in_namespaces() { # CMD...
  unshare --mount --pid --fork --kill-child --propagation private "$@" <&0 &
  local pid=$! status=0
  trap 'kill -KILL "$pid" 2>/dev/null' TERM INT HUP
  wait "$pid" || status=$?
  while kill -0 "$pid" 2>/dev/null; do
    status=0
    wait "$pid" || status=$?
  done
  trap - TERM INT HUP
  return "$status"
}

# Inside the new mount and PID namespaces (the bash running this is their PID 1): mount /proc,
# bind /dev and the directories (parents first), chroot, run CMD, and unmount everything however
# CMD ends. Not `exec`: the trap must run after CMD.
inside() { # ROOT [--clean-env] [--cwd DIR] [--bind DIR | --ro DIR]... -- CMD...
  local dir=$1 clean=0 cwd=/ binds=()
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --clean-env) clean=1; shift ;;
      --cwd) cwd=$2; shift 2 ;;
      --bind) binds+=("rw:$2"); shift 2 ;;
      --ro) binds+=("ro:$2"); shift 2 ;;
      --) shift; break ;;
      *) die "__inside: unknown option $1" ;;
    esac
  done
  inside_root=$dir # global: the trap runs after this function has returned
  trap 'unmount_under "$inside_root" || true' EXIT
  mount -t proc proc "$dir/proc"
  mount --rbind /dev "$dir/dev"
  local b mode path
  while IFS= read -r b; do
    [ -n "$b" ] || continue
    mode=${b%%:*} path=${b#*:}
    mkdir -p "$dir$path"
    mount --bind "$path" "$dir$path"
    [ "$mode" = ro ] && mount -o remount,bind,ro "$dir$path"
  done < <(for b in "${binds[@]}"; do echo "${#b} $b"; done | sort -n | cut -d' ' -f2-)
  local status=0
  if [ "$clean" = 1 ]; then
    chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH="$path_inside" \
      DEBIAN_FRONTEND=noninteractive "$@" || status=$?
  else
    # The environment goes in as it is (CONTENOX_*, FAKE_*, CARGO_TARGET_DIR ...), with the
    # root's own PATH; the working directory too when it is inside a bound directory.
    [ -d "$dir$cwd" ] || cwd=/
    chroot "$dir" /usr/bin/env PATH="$path_inside" bash -c 'cd "$0" && exec "$@"' "$cwd" "$@" || status=$?
  fi
  return "$status"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  __inside)
    inside "$@"
    ;;
  ensure)
    ensure
    ensure_mcp_venv
    swift=$(chroot_in "$root" swift --version 2>/dev/null | head -1)
    echo "toolchain.sh: $swift (root $root)"
    ;;
  run)
    ensure
    ensure_mcp_venv
    enter "$@"
    ;;
  enter)
    need_root
    lock -s
    [ -f "$root/$stamp_name" ] && [ "$(cat "$root/$stamp_name")" = "$recipe" ] ||
      die "no Swift root of this recipe in $root: run toolchain.sh ensure first"
    enter "$@"
    ;;
  dir)
    echo "$root"
    ;;
  remove)
    need_root
    lock -x
    safe_remove "$root.partial"
    safe_remove "$root"
    rm -f "$root.partial.log"
    echo "toolchain.sh: removed $root"
    ;;
  *)
    echo "usage: toolchain.sh ensure | run|enter [--bind DIR]... [--ro DIR]... [--] CMD... | dir | remove" >&2
    exit 2
    ;;
esac
