"""``output_schema``: a typed final answer, through the real fake model server over HTTP. The
engine asks for it in each style's native field, validates the answer, sends an invalid one back
with the errors, and the binding parses the validated JSON into the host's type."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import contenox
import pytest
from conformance_runner import FakeServer
from pydantic import BaseModel, Field, field_validator

# pydantic reads a TypedDict of typing_extensions on Python < 3.12 (typing.TypedDict from 3.12).
from typing_extensions import TypedDict


class Weather(BaseModel):
    city: str
    temp_c: float = Field(description="degrees Celsius")
    conditions: list[str] = []


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


Served = Callable[..., tuple[FakeServer, contenox.Client]]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """``served(model_script, style=..., **client_options)``: a fake server answering the
    script, and a client on it; both stopped after the test."""
    started: list[tuple[FakeServer, contenox.Client]] = []

    def start(
        script: list[dict[str, Any]], style: str = "openai", **options: Any
    ) -> tuple[FakeServer, contenox.Client]:
        scenario = tmp_path / f"s{len(started)}.json"
        scenario.write_text(
            json.dumps(
                {"name": "output", "style": style, "prompt": "p", "expect": {}, "model": script}
            )
        )
        server = FakeServer(scenario)
        try:
            client = contenox.create_client(
                style=style,
                base_url=server.base_url(style),
                model="fake",
                api_key="test",
                builtins=[],
                root=str(tmp_path),
                **options,
            )
        except BaseException:
            server.stop()
            raise
        started.append((server, client))
        return server, client

    yield start
    for server, client in started:
        client.close()
        server.stop()


def weather_tool(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 3.5 C, light rain"


TOOL_THEN_INVALID_THEN_VALID = [
    {"tool_calls": [{"name": "weather_tool", "arguments": {"city": "Oslo"}}]},
    {"text": "Oslo is 3.5 degrees and rainy."},
    {"text": '{"city": "Oslo", "temp_c": 3.5, "conditions": ["light rain"]}'},
]


@pytest.mark.parametrize("style", ["openai", "anthropic", "ollama"])
def test_a_pydantic_object_after_a_tool_call_and_an_invalid_answer(
    served: Served, style: str
) -> None:
    server, client = served(
        TOOL_THEN_INVALID_THEN_VALID, style=style, tools=[weather_tool], output_schema=Weather
    )
    r = client.run_sync("Weather in Oslo?")
    assert r.outcome == "done", r
    assert isinstance(r.output, Weather)
    assert r.output == Weather(city="Oslo", temp_c=3.5, conditions=["light rain"])
    requests = server.requests()
    assert len(requests) == 3
    # The tool's result went to the model, then the invalid answer with what was wrong.
    assert "3.5 C, light rain" in json.dumps(requests[1])
    correction = json.dumps(requests[2])
    assert "Oslo is 3.5 degrees and rainy." in correction
    assert "not valid JSON" in correction
    # Each style's native field, with the schema pydantic made.
    native = {
        "openai": lambda b: b["response_format"]["json_schema"]["schema"],
        "anthropic": lambda b: b["output_config"]["format"]["schema"],
        "ollama": lambda b: b["format"],
    }[style](requests[0])
    assert native["properties"]["temp_c"]["description"] == "degrees Celsius"


async def test_per_run_dataclass_and_typeddict_and_a_stream(served: Served) -> None:
    _, client = served(
        [
            {"text": '{"x": 1, "y": 2}'},
            {"text": '{"left": "a", "right": "b"}'},
            {"text": '{"x": 3,'},
            {"text": '{"x": 3, "y": 4}'},
        ],
        output_schema=Weather,
    )
    r = await client.run("A point?", output_schema=Point)
    assert r.output == Point(1, 2)
    r = client.run_sync("A pair?", output_schema=Pair)
    assert r.output == {"left": "a", "right": "b"}
    run = client.stream("Another point?", output_schema=Point)
    partial = [e.output async for e in run if isinstance(e, contenox.events.OutputDelta)]
    result = await run.result()
    assert result.output == Point(3, 4)
    assert partial[0] == {} and partial[-1] == {"x": 3, "y": 4}
    assert any(e.type == "retry" for e in run.events)


def test_a_dict_schema_gives_json_values_and_retries_run_out(served: Served) -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    _, client = served(
        [{"text": '{"n": 1}'}, {"text": '{"n": "one"}'}, {"text": "one"}],
        output_schema=schema,
        output_retries=1,
    )
    r = client.run_sync("n?")
    assert (r.outcome, r.output) == ("done", {"n": 1})
    r = client.run_sync("n again?")
    assert r.outcome == "output_invalid"
    assert r.output is None and r.final_text == "one"
    assert r.error and "not valid JSON" in r.error and "after 1 correction" in r.error


def test_a_python_validator_the_schema_lacks_is_an_outcome_not_a_raise(
    served: Served,
) -> None:
    class Even(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def even(cls, v: int) -> int:
            if v % 2:
                raise ValueError("n must be even")
            return v

    _, client = served([{"text": '{"n": 3}'}], output_schema=Even)
    r = client.run_sync("n?")
    assert r.outcome == "output_invalid" and r.output is None
    assert r.error and "n must be even" in r.error
    assert r.final_text == '{"n": 3}'


def test_a_bad_schema_is_a_configuration_error(served: Served, tmp_path: Path) -> None:
    with pytest.raises(contenox.ConfigurationError, match="output_schema"):
        served([], output_schema={"type": "nope"})
    _, client = served([{"text": "never"}])
    with pytest.raises(contenox.ConfigurationError, match="output_schema"):
        client.run_sync("x", output_schema={"type": 7})
    with pytest.raises(contenox.ConfigurationError, match="output_schema"):
        client.run_sync("x", output_schema=object())


def test_the_result_keeps_its_output_in_dicts_and_pickles(served: Served) -> None:
    import pickle

    _, client = served([{"text": '{"city": "Oslo", "temp_c": 1}'}], output_schema=Weather)
    r = client.run_sync("w?")
    assert r.to_dict()["output"] == {"city": "Oslo", "temp_c": 1.0, "conditions": []}
    assert pickle.loads(pickle.dumps(r)).output == r.output


def test_the_output_schema_example_runs() -> None:
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "output_schema.py"
    out = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out == ("outcome: done\noutput: Weather(city='Oslo', temp_c=3.5)\ncorrections: 1\n"), out
