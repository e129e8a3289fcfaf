"""The Python event classes against the one event vocabulary, the JSON Schema derived from the
engine's ``Event`` (``tests/conformance/event-schema.json``): a new, missing or changed event or
field fails here."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from contenox import events

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "tests/conformance/event-schema.json").read_text()
)

# How a schema type reads as a Python annotation of `contenox.events`.
SCALARS = {"string": "str", "integer": "int", "boolean": "bool"}
REFS = {
    "Hints": "Hints",
    "Usage": "Usage",
    "PendingRequest": "PendingRequest",
    "Outcome": "Outcome",
    "StopReason": "StopReason",
    "Source": "Source",
    "CompactTrigger": 'Literal["auto", "manual"]',
    "GateVerdict": 'Literal["allow", "deny", "ask"]',
    "Answer": "dict[str, Any]",
}
FREE_FORM = {"Any", "dict[str, Any]"}


def expected(prop: dict[str, Any]) -> set[str]:
    """The annotations that may stand for this schema property."""
    if "$ref" in prop:
        return {REFS[prop["$ref"].rsplit("/", 1)[-1]]}
    options = prop.get("anyOf") or prop.get("oneOf")
    if options and {"type": "null"} in options:
        (inner,) = [o for o in options if o != {"type": "null"}]
        return {f"{a} | None" for a in expected(inner)}
    kind = prop.get("type")
    if kind == "array" and prop.get("items", {}).get("type") in SCALARS:
        return {f"tuple[{SCALARS[prop['items']['type']]}, ...]"}
    if isinstance(kind, list):
        (inner,) = [k for k in kind if k != "null"]
        return {f"{SCALARS[inner]} | None"}
    if kind in SCALARS:
        return {SCALARS[kind]}
    return FREE_FORM | {f"{a} | None" for a in FREE_FORM}


def variants() -> dict[str, dict[str, Any]]:
    return {v["properties"]["type"]["const"]: v for v in SCHEMA["oneOf"]}


def test_one_class_per_event_type() -> None:
    assert set(events._CLASSES) == set(variants())


def test_each_class_has_the_schemas_fields_and_types() -> None:
    for kind, variant in variants().items():
        cls = events._CLASSES[kind]
        fields = {f.name: f for f in dataclasses.fields(cls) if f.name not in ("raw", "type")}
        props = {k: v for k, v in variant["properties"].items() if k != "type"}
        assert set(fields) == set(props), f"{kind}: fields {sorted(fields)} != {sorted(props)}"
        required = set(variant["required"]) - {"type"}
        for name, prop in props.items():
            f = fields[name]
            annotation = str(f.type).replace("'", '"')
            assert annotation in expected(prop), f"{kind}.{name}: {f.type} for {prop}"
            if name not in required and "None" in annotation:
                assert f.default is None, f"{kind}.{name} is optional: its default is None"
            elif name not in required:
                # Left out of the JSON when empty (`agent`) or read with its default (compact's
                # `usage`): the field has an empty default.
                has_default = f.default is not dataclasses.MISSING
                has_factory = f.default_factory is not dataclasses.MISSING
                assert has_default or has_factory, f"{kind}.{name} is optional: it has a default"
            else:
                assert f.default is not None, f"{kind}.{name} is always there"


def test_every_event_reads_into_its_class() -> None:
    for kind, variant in variants().items():
        d = {"type": kind, **{k: None for k in variant["required"] if k != "type"}}
        event = events.event_from_dict(
            {k: ({} if k in ("hints", "usage", "request") else v) for k, v in d.items()}
        )
        assert type(event) is events._CLASSES[kind]
        assert event.type == kind
