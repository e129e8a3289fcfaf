#!/usr/bin/env python3
"""The harness's contenox client (bench-peers clients/py_contenox.py) as a script writes it without
asyncio: the same client, tool and turns, each turn `client.run_sync(...)` (issue 27). The version
comes from `contenox.__version__`, as bench/peers/run.sh patches the harness's client to do."""
import _common  # noqa: F401
import sys
import time

import contenox


def main():
    args = _common.parse_args()
    system = "You are a benchmark agent. Use the echo tool."

    def make():
        client = contenox.create_client(style="openai", base_url=args.base_url + "/v1",
                                        model=args.model or "gpt-4o-mini", api_key="sk-dummy",
                                        system=system, builtins=[])

        @client.tool()
        def echo(text: str) -> str:
            """Echo the given text back.

            Args:
                text: the text
            """
            return text
        return client

    client = make()
    empty = client.transcript
    timer = _common.Timer()
    for i in range(1, args.turns + 1):
        t = time.perf_counter()
        if args.fresh:
            client.transcript = empty
        r = client.run_sync(f"turn {i}")
        timer.turn_done(i, r.final_text, t)
    return _common.emit("contenox-python-sync", contenox.__version__, args, timer,
                        asyncio_imported="asyncio" in sys.modules)


if __name__ == "__main__":
    raise SystemExit(main())
