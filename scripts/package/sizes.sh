#!/usr/bin/env bash
# The size of each release artifact (the file users download, and its native library unpacked)
# against the budget of 15 MB (15,000,000 bytes) each. Reads what the package steps left in
# <target>/dist (and the CLI in the release target, once the workspace has one); fails when an
# artifact is missing or over budget.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
exec python3 - "$dist" "$target" "$repo" <<'PY'
import sys
import tarfile
import zipfile
from pathlib import Path

dist, target, repo = (Path(a) for a in sys.argv[1:])
BUDGET = 15_000_000
failed = False


def one(pattern: str, what: str) -> Path | None:
    global failed
    found = sorted(dist.glob(pattern))
    if len(found) != 1:
        print(f"missing {what}: {dist / pattern} (run the step that makes it)", file=sys.stderr)
        failed = True
        return None
    return found[0]


def row(label: str, path: Path, unpacked: int) -> None:
    global failed
    size = path.stat().st_size
    over = size > BUDGET or unpacked > BUDGET
    failed |= over
    mark = "  OVER BUDGET" if over else ""
    print(f"{label:<58} {size / 1e6:8.1f} MB {unpacked / 1e6:8.1f} MB{mark}")


print(f"{'artifact':<58} {'download':>11} {'unpacked':>11}   (budget {BUDGET / 1e6:.0f} MB each)")
if wheel := one("python/contenox-*.whl", "the wheel"):
    with zipfile.ZipFile(wheel) as z:
        native = sum(i.file_size for i in z.infolist() if "_native" in i.filename)
    row(f"wheel {wheel.name} (_native)", wheel, native)
if platform := one("node/contenox-node-*.tgz", "the npm platform package"):
    with tarfile.open(platform) as t:
        native = sum(m.size for m in t.getmembers() if m.name.endswith(".node"))
    row(f"npm {platform.name} (.node)", platform, native)
if main := one("node/contenox-[0-9]*.tgz", "the npm main package"):
    with tarfile.open(main) as t:
        row(f"npm {main.name} (JavaScript, types)", main, sum(m.size for m in t.getmembers()))
if jar := one("kotlin/contenox-kotlin-*.jar", "the Kotlin jar"):
    with zipfile.ZipFile(jar) as z:
        native = sum(i.file_size for i in z.infolist() if "libcontenox_uniffi" in i.filename)
    row(f"jar {jar.name} (native library)", jar, native)
if (repo / "cli" / "Cargo.toml").is_file():
    cli = target / "release" / "contenox"
    if cli.is_file():
        row("contenox CLI (target/release/contenox)", cli, cli.stat().st_size)
    else:
        print(f"missing the CLI binary: {cli}", file=sys.stderr)
        failed = True
else:
    print(f"{'contenox CLI':<58} (no cli/ crate in the workspace yet)")
sys.exit(1 if failed else 0)
PY
