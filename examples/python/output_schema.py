"""A typed final answer, offline on the scripted model: the model calls a tool, answers JSON
that misses a field (sent back with the validation error), then answers a valid object, which
``result.output`` holds as the pydantic model.

    python examples/python/output_schema.py
"""

from __future__ import annotations

import contenox
from pydantic import BaseModel


class Weather(BaseModel):
    city: str
    temp_c: float


def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 3.5 C, light rain"


def main() -> None:
    # The scripted model replays its answers; swap in style="openai", model=... to go live.
    client = contenox.create_client(
        style="scripted",
        script=[
            {"tool_calls": [{"name": "weather", "arguments": {"city": "Oslo"}}]},
            {"text": '{"city": "Oslo"}'},  # temp_c missing: sent back with the error
            {"text": '{"city": "Oslo", "temp_c": 3.5}'},
        ],
        builtins=[],
        tools=[weather],
        output_schema=Weather,
    )
    result = client.run_sync("Weather in Oslo?")
    print("outcome:", result.outcome)
    print("output:", repr(result.output))
    print("corrections:", sum(1 for m in result.transcript.messages if m["role"] == "user") - 1)
    client.close()


if __name__ == "__main__":
    main()
