"""``output_schema``: what a Python host passes for a typed final answer, as the engine's JSON
Schema plus how the validated JSON becomes the host's value.

A JSON Schema ``dict`` is sent as it is and the answer comes back as JSON values. A type (a
pydantic model class, a dataclass, a ``TypedDict``, or any type pydantic's ``TypeAdapter``
takes) goes through ``TypeAdapter``: its ``json_schema()`` is the schema, and its
``validate_python`` makes the answer an instance. pydantic is imported only then, so the
package works without it for dict schemas.

The engine validates the answer against the schema (and corrects it through the retries);
pydantic's own validators run afterwards, here, and a value they refuse ends the turn as
``output_invalid`` with their message (the engine cannot send a Python validator's error back to
the model: keep such rules in the schema where they should be retried).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ._errors import ConfigurationError

__all__ = ["OutputSchema", "OutputSpec", "Parse", "output_spec"]

OutputSchema = Any
"""A JSON Schema (a ``dict``), or a type: a pydantic model class, a dataclass, a
``TypedDict``, or anything pydantic's ``TypeAdapter`` takes."""

Parse = Callable[[Any], Any]


class OutputSpec:
    """An ``output_schema`` read: the schema's JSON text for the engine, and the parser of the
    validated answer (``None``: the JSON values as they are)."""

    __slots__ = ("parse", "schema_json")

    def __init__(self, schema_json: str, parse: Parse | None) -> None:
        self.schema_json = schema_json
        self.parse = parse


def output_spec(schema: OutputSchema | None) -> OutputSpec | None:
    """Read an ``output_schema`` argument; ``None`` when not given. A value that is neither a
    schema nor a type pydantic can describe is a :class:`ConfigurationError`."""
    if schema is None:
        return None
    if isinstance(schema, Mapping):
        try:
            return OutputSpec(json.dumps(dict(schema)), None)
        except (TypeError, ValueError) as e:
            raise ConfigurationError(f"output_schema: not JSON: {e}") from e
    try:
        from pydantic import TypeAdapter
    except ImportError as e:
        raise ConfigurationError(
            f"output_schema: {schema!r} is a type; a type needs pydantic installed "
            "(or pass a JSON Schema dict)"
        ) from e
    try:
        adapter: Any = TypeAdapter(schema)
        made = adapter.json_schema()
    except Exception as e:
        raise ConfigurationError(
            f"output_schema: pydantic cannot describe {schema!r} as a JSON Schema: {e}"
        ) from e
    return OutputSpec(json.dumps(made), adapter.validate_python)
