"""JSON Schemas from Python type hints and docstrings, for ``@client.tool``.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any``,
``list[T]`` / ``Sequence[T]`` / ``set[T]``, ``tuple[A, B]`` / ``tuple[T, ...]``,
``dict[str, T]`` / ``Mapping[str, T]``, ``Optional[T]`` / ``T | None`` / ``Union``,
``Literal[...]``, ``enum.Enum`` subclasses, ``TypedDict`` classes, and ``Annotated[T, "text"]``
(the text becomes the description). Anything else raises ``TypeError`` naming the parameter.
Arguments reach the function as JSON values (a ``TypedDict`` parameter receives a dict, an
``Enum`` parameter the enum's value).
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

__all__ = ["function_schema", "parse_docstring"]

_NoneType = type(None)


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def type_schema(tp: Any, where: str) -> dict[str, Any]:
    """The JSON Schema of one annotation."""
    if tp is Any or tp is inspect.Parameter.empty or tp is object:
        return {}
    if tp is _NoneType or tp is None:
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if tp is list or tp is tuple or tp is set or tp is frozenset:
        return {"type": "array"}
    if tp is dict:
        return {"type": "object"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        return {"enum": values, **_enum_type(values)}
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        required = sorted(getattr(tp, "__required_keys__", set(hints)))
        props = {k: type_schema(v, f"{where}.{k}") for k, v in hints.items()}
        out: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        return out

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        inner = type_schema(args[0], where)
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        if text:
            inner = {**inner, "description": text}
        return inner
    if origin is typing.Literal:
        values = list(args)
        return {"enum": values, **_enum_type(values)}
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not _NoneType]
        nullable = len(members) != len(args)
        if len(members) == 1:
            inner = type_schema(members[0], where)
            if not nullable:
                return inner
            return {"anyOf": [inner, {"type": "null"}]} if inner else {}
        schemas = [type_schema(a, where) for a in members]
        if nullable:
            schemas.append({"type": "null"})
        return {"anyOf": schemas}
    if origin in (
        list,
        set,
        frozenset,
        collections.abc.Sequence,
        collections.abc.Set,
        collections.abc.MutableSequence,
        collections.abc.Iterable,
    ):
        item = type_schema(args[0], where) if args else {}
        return {"type": "array", "items": item} if item else {"type": "array"}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = type_schema(args[0], where)
            return {"type": "array", "items": item} if item else {"type": "array"}
        if not args:
            return {"type": "array"}
        return {
            "type": "array",
            "prefixItems": [type_schema(a, where) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        if args and args[0] is not str:
            raise TypeError(f"{where}: JSON object keys are strings; use dict[str, ...]")
        value = type_schema(args[1], where) if len(args) == 2 else {}
        out = {"type": "object"}
        if value:
            out["additionalProperties"] = value
        return out
    raise TypeError(
        f"{where}: cannot derive a JSON Schema from the annotation {tp!r}; use JSON types "
        "(str, int, float, bool, list, dict, Literal, Enum, TypedDict, Optional) or give "
        "the tool an explicit input_schema"
    )


def _enum_type(values: list[Any]) -> dict[str, Any]:
    kinds = {type(v) for v in values}
    name = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if len(kinds) == 1 and (k := next(iter(kinds))) in name:
        return {"type": name[k]}
    return {}


_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Returns?|Raises|Yields?|Examples?|Notes?|"
    r"See Also|Attributes)\s*:?\s*$"
)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (the text before any section) and the parameter descriptions of a
    Google-, NumPy- or reST-style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    base_indent: int | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        # The prefix test first: the pattern can only match such a line, and a docstring
        # without reST fields then never compiles it (a first `@client.tool` pays each compile).
        rest = stripped.startswith(":param") and re.match(
            r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$", stripped
        )
        if rest:
            section, current = "rest", rest.group(1)
            params[current] = rest.group(2).strip()
            i += 1
            continue
        if stripped.startswith(":"):
            section, current = "rest-other", None
            i += 1
            continue
        m = _SECTION.match(line)
        if m:
            section = m.group(1).lower()
            current = None
            base_indent = None
            # NumPy style: a line of dashes under the header.
            if i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
                i += 1
            i += 1
            continue
        if section is None:
            summary.append(line)
        elif section in ("args", "arguments", "parameters", "params"):
            if not stripped:
                i += 1
                continue
            indent = len(line) - len(line.lstrip())
            if base_indent is None:
                base_indent = indent
            numpy = re.match(r"^\*{0,2}(\w+)\s+:(?:\s.*)?$", stripped)
            google = re.match(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?:\s*(.*)$", stripped)
            if indent <= base_indent and numpy:
                current = numpy.group(1)
                params[current] = ""
            elif indent <= base_indent and google:
                current = google.group(1)
                params[current] = google.group(2).strip()
            elif current:
                params[current] = (params[current] + " " + stripped).strip()
        elif section == "rest" and current and stripped:
            params[current] = (params[current] + " " + stripped).strip()
        i += 1
    description = "\n".join(summary).strip()
    return description, {k: v for k, v in params.items() if v}


def function_schema(
    fn: Callable[..., Any], ctx_type: type | None = None
) -> tuple[dict[str, Any], str, str | None]:
    """``(input_schema, description, ctx_parameter)`` of a function: the schema of its
    parameters (``ctx`` — by name or by annotation — left out), the docstring's description,
    and the name of the parameter that receives the ToolContext, if any."""
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as e:
        raise TypeError(f"cannot read the type hints of {_name(fn)}: {e}") from e
    description, docs = parse_docstring(inspect.getdoc(fn))
    props: dict[str, Any] = {}
    required: list[str] = []
    ctx_param: str | None = None
    extra = False
    for name, p in sig.parameters.items():
        ann = hints.get(name, inspect.Parameter.empty)
        if name == "ctx" or (ctx_type is not None and ann is ctx_type):
            ctx_param = name
            continue
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(f"{_name(fn)}: *{name} cannot receive JSON arguments")
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(f"{_name(fn)}: positional-only parameter {name} is not supported")
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            extra = True
            continue
        schema = dict(type_schema(ann, f"{_name(fn)}({name})"))
        if name in docs and "description" not in schema:
            schema["description"] = docs[name]
        if p.default is inspect.Parameter.empty:
            required.append(name)
        elif _jsonable(p.default):
            schema["default"] = p.default.value if isinstance(p.default, enum.Enum) else p.default
        props[name] = schema
    schema_out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema_out["required"] = required
    if not extra:
        schema_out["additionalProperties"] = False
    return schema_out, description, ctx_param


def _jsonable(v: Any) -> bool:
    if v is None or isinstance(v, (str, int, float, bool, enum.Enum)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_jsonable(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _jsonable(x) for k, x in v.items())
    return False


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
