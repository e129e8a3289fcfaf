import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def text_of(message: dict) -> str:  # type: ignore[type-arg]
    """The text of a transcript message: its text parts, joined."""
    return "".join(p["text"] for p in message["content"] if p["type"] == "text")


def with_text(message: dict) -> dict:  # type: ignore[type-arg]
    """The message with its text as `content` (what the tests compare)."""
    return {**message, "content": text_of(message)}


# --- processes a test started (background shells) -------------------------------------------

needs_proc = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc")


def pids_running(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (zombies have an empty one)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            pids.append(int(entry))
    return pids


async def wait_until(what: str, check: Any, timeout: float = 10.0) -> None:
    """Poll ``check`` every 20 ms until it holds; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.02)
