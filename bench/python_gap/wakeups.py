"""Voluntary context switches per fresh turn, per thread of this process: how often each engine
thread parks and wakes in a turn (prompt -> echo tool call -> final text) against the
bench-peers mock. Not part of CI (docs/benchmarks.md, "Python binding: the gap to the floor").

    python bench/python_gap/wakeups.py http://127.0.0.1:PORT [turns]
    CONTENOX_WORKER_THREADS=2 python bench/python_gap/wakeups.py ...   # compare worker counts
"""

from __future__ import annotations

import asyncio
import os
import sys

import contenox


def switches() -> dict[str, int]:
    out = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/status") as f:
            status = f.read()
        with open(f"/proc/self/task/{tid}/comm") as f:
            name = f.read().strip()
        out[f"{name}/{tid}"] = int(
            status.split("voluntary_ctxt_switches:")[1].split()[0]
        )
    return out


async def main(base: str, turns: int) -> None:
    client = contenox.create_client(
        style="openai",
        base_url=base + "/v1",
        model="m",
        api_key="sk-dummy",
        builtins=[],
    )

    @client.tool()
    def echo(text: str) -> str:
        """Echo the given text back.

        Args:
            text: the text
        """
        return text

    empty = client.transcript
    for i in range(5):  # warm up: runtime, connection pool
        client.transcript = empty
        await client.run(f"turn {i}")
    before = switches()
    for i in range(turns):
        client.transcript = empty
        r = await client.run(f"turn {i}")
        assert r.final_text == f"done {i}", r.final_text
    after = switches()
    total = 0.0
    for thread in sorted(after):
        per_turn = (after[thread] - before.get(thread, 0)) / turns
        total += per_turn
        print(f"{thread:24} {per_turn:6.2f} per turn")
    print(f"{'total':24} {total:6.2f} per turn")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200))
