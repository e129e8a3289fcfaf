"""contenox (Python) client of bench/parallel_tools: a fresh client per turn (built outside the
timed part), the read-only host tools `nap` (sleeps --ms) and `echo`; one JSON line out."""

import argparse
import asyncio
import json
import time

import contenox


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--style", default="openai")
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--ms", type=int, default=300)
    return ap.parse_args()


async def main(args: argparse.Namespace) -> int:
    async def nap(arguments: dict) -> str:
        await asyncio.sleep(args.ms / 1000)
        return "rested"

    tools = [
        contenox.Tool("nap", nap, description="Wait a moment.", hints={"readOnly": True}),
        contenox.Tool("echo", lambda a: json.dumps(a), description="Echo the arguments.",
                      hints={"readOnly": True}),
    ]
    turn_ms, ok = [], True
    for i in range(1, args.turns + 1):
        client = contenox.create_client(style=args.style, base_url=args.base_url, model="fake",
                                        api_key="sk-dummy", builtins=[], tools=tools)
        t = time.perf_counter()
        r = await client.run(f"turn {i}")
        turn_ms.append((time.perf_counter() - t) * 1000)
        ok = ok and r.final_text == "done"
        client.close()
    print(json.dumps({"sdk": "contenox-python", "turn_ms": turn_ms, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
