"""An agent turn on the scripted model (no network, no key): a typed host tool, a gate that asks
before anything that is not read-only, and a wait_for that answers.

    python examples/python/quickstart.py
"""

from __future__ import annotations

import asyncio
from typing import Any

import contenox

# The scripted model replays these responses; swap in style="openai", model=..., to go live.
SCRIPT: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {"id": "call_1", "name": "lookup", "arguments": {"city": "Lisbon"}},
            {"id": "call_2", "name": "book", "arguments": {"city": "Lisbon", "nights": 2}},
        ]
    },
    {"text": "Lisbon is sunny; I booked two nights."},
]


def gate(call: contenox.ToolCallEvent) -> contenox.Deny | contenox.Ask | None:
    """Allow read-only tools, ask about everything else."""
    if call.hints.read_only:
        return None
    return contenox.pending(kind="approval", prompt=f"Run {call.name} {call.arguments}?")


async def approve(request: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
    print(f"  [asked] {request.prompt} -> approved")
    return {"approve": True}


async def main() -> None:
    client = contenox.create_client(
        style="scripted",
        script=SCRIPT,
        builtins=[],
        hooks={"before_tool": gate},
        wait_for=approve,
    )

    @client.tool(hints={"read_only": True})
    def lookup(city: str) -> str:
        """Today's weather in a city.

        Args:
            city: the city's name
        """
        return f"{city}: sunny, 24°C"

    @client.tool(hints={"destructive": False, "open_world": True})
    async def book(city: str, nights: int, ctx: contenox.ToolContext) -> dict[str, Any]:
        """Book a hotel."""
        return {"booked": city, "nights": nights, "ref": ctx.call_id}

    run = client.stream("What's the weather in Lisbon? Book two nights if it's nice.")
    async for event in run:
        print(event)
    result = await run.result()
    print(f"\n{result.outcome}: {result.final_text}")
    print(result.transcript)


if __name__ == "__main__":
    asyncio.run(main())
