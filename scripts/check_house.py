#!/usr/bin/env python3
"""The shape of the house, checked (scripts/test.sh step `house`):

- one integration test binary per crate: each test binary links the whole engine again, so a
  crate's tests live as modules of one binary (tests/all/main.rs), never as tests/NAME.rs beside it.

Exits non-zero with one line per violation.
"""

import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent


def workspace_crates() -> list[pathlib.Path]:
    # The members line of the root manifest (tomllib is Python 3.11+; the test command needs 3.10).
    manifest = (REPO / "Cargo.toml").read_text()
    members = re.search(r"^members\s*=\s*\[([^\]]*)\]", manifest, re.MULTILINE)
    if members is None:
        sys.exit("check_house: no `members = [...]` in Cargo.toml")
    return [REPO / m for m in re.findall(r'"([^"]+)"', members.group(1))]


def test_binaries(crate: pathlib.Path) -> list[str]:
    """The integration test targets cargo finds by itself: tests/*.rs and tests/*/main.rs."""
    tests = crate / "tests"
    if not tests.is_dir():
        return []
    found = [p for p in tests.glob("*.rs")]
    found += [p for p in tests.glob("*/main.rs")]
    return sorted(str(p.relative_to(REPO)) for p in found)


def check_test_binaries() -> list[str]:
    problems = []
    for crate in workspace_crates():
        binaries = test_binaries(crate)
        if len(binaries) > 1:
            problems.append(
                f"{crate.relative_to(REPO)}: {len(binaries)} integration test binaries "
                f"({', '.join(binaries)}); make each a module of one (tests/all/main.rs)"
            )
    return problems


def main() -> int:
    problems = check_test_binaries()
    for p in problems:
        print(f"check_house: {p}", file=sys.stderr)
    if not problems:
        print("check_house: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
