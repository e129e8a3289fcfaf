"""OpenAI Agents SDK (Python) client of bench/parallel_tools: Agent + Runner.run, Chat
Completions model, function tools `nap` (async, sleeps --ms) and `echo`; a fresh conversation
per turn; one JSON line out. Runs with the harness's virtualenv (target/bench-peers/.venv)."""

import argparse
import asyncio
import json
import time
from importlib.metadata import version

from agents import (Agent, OpenAIChatCompletionsModel, Runner, function_tool,
                    set_tracing_disabled)
from openai import AsyncOpenAI


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--ms", type=int, default=300)
    return ap.parse_args()


async def main(args: argparse.Namespace) -> int:
    set_tracing_disabled(True)

    @function_tool
    async def nap() -> str:
        """Wait a moment."""
        await asyncio.sleep(args.ms / 1000)
        return "rested"

    @function_tool
    def echo(n: int = 0) -> str:
        """Echo the arguments."""
        return json.dumps({"n": n})

    client = AsyncOpenAI(base_url=args.base_url, api_key="sk-dummy", max_retries=0)
    model = OpenAIChatCompletionsModel(model="fake", openai_client=client)
    agent = Agent(name="bench", instructions="Use the tools.", tools=[nap, echo], model=model)
    turn_ms, ok = [], True
    for i in range(1, args.turns + 1):
        t = time.perf_counter()
        r = await Runner.run(agent, [{"role": "user", "content": f"turn {i}"}], max_turns=5)
        turn_ms.append((time.perf_counter() - t) * 1000)
        ok = ok and r.final_output == "done"
    await client.close()
    print(json.dumps({"sdk": "openai-agents-python " + version("openai-agents"),
                      "turn_ms": turn_ms, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(parse())))
