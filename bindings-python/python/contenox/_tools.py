"""Host tools: a Python function the model can call."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from . import _native
from ._bridge import is_async
from ._schema import function_schema
from ._types import Tier, hints_wire

if TYPE_CHECKING:
    from ._hints import Hints, HintsLike

__all__ = ["Tool", "tool"]


def _hints_dict(hints: HintsLike) -> dict[str, bool]:
    """Hints in any accepted form as their wire form. A :class:`Hints` exists only once its
    module is imported: until then, hints given here are a mapping (or None)."""
    if hints is None:
        return {}
    module = sys.modules.get("contenox._hints")
    if module is not None and isinstance(hints, module.Hints):
        given: Hints = hints
        return given.to_dict()
    return hints_wire(dict(hints))  # type: ignore[arg-type]


class Tool:
    """A tool the model can call.

    Either from a typed function (``Tool.from_function(fn)``, ``@contenox.tool``,
    ``@client.tool``: the schema comes from the type hints and the docstring, the function is
    called with the arguments as keyword arguments), or from an explicit schema
    (``Tool(name, handler, input_schema=...)``: the handler is called with the arguments dict).
    Either way the function may be sync or async, receives the call's
    :class:`~contenox.ToolContext` when it asks for it (a parameter named ``ctx``, or annotated
    ``ToolContext``), and may raise: the exception's message becomes an error result the model
    sees. It returns any JSON value (a str is sent as is, others as compact JSON) or a
    :class:`~contenox.ToolOutput`."""

    name: str
    description: str
    input_schema: dict[str, Any]
    tier: Tier
    fn: Callable[..., Any]
    # The hints in wire form; `hints` makes the Hints when asked (see _hints).
    _hints: dict[str, bool]

    def __init__(
        self,
        name: str,
        handler: Callable[..., Any],
        *,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        hints: HintsLike = None,
        tier: Tier = "core",
    ) -> None:
        self.name = name
        self.fn = handler
        self.description = description
        self.input_schema = dict(input_schema) if input_schema is not None else {"type": "object"}
        self._hints = _hints_dict(hints)
        self.tier = tier
        self._is_async = is_async(handler)
        self._invoke = self._dict_invoker(handler)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        hints: HintsLike = None,
        tier: Tier = "core",
    ) -> Tool:
        """A tool from a typed function: schema from its type hints, description and
        parameter descriptions from its docstring."""
        schema, doc, ctx_param = function_schema(fn, _native.ToolContext)
        t = cls.__new__(cls)
        t.name = name or str(getattr(fn, "__name__", ""))
        t.fn = fn
        t.description = description if description is not None else doc
        t.input_schema = schema
        t._hints = _hints_dict(hints)
        t.tier = tier
        t._is_async = is_async(fn)
        if ctx_param is None:

            def invoke(args: dict[str, Any], ctx: _native.ToolContext) -> Any:
                return fn(**args)

        else:
            key = ctx_param

            def invoke(args: dict[str, Any], ctx: _native.ToolContext) -> Any:
                return fn(**args, **{key: ctx})

        t._invoke = invoke
        return t

    @staticmethod
    def _dict_invoker(handler: Callable[..., Any]) -> Callable[[dict[str, Any], Any], Any]:
        try:
            params = list(inspect.signature(handler).parameters.values())
        except (TypeError, ValueError):
            params = []
        wants_ctx = (
            any(p.name == "ctx" for p in params)
            or (
                len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
                >= 2
            )
            or any(p.kind is p.VAR_POSITIONAL for p in params)
        )
        if wants_ctx:
            return lambda args, ctx: handler(args, ctx)
        return lambda args, ctx: handler(args)

    @property
    def hints(self) -> Hints:
        """What the gate and the model are told about the tool (a new :class:`Hints` each
        time; set it to a ``Hints`` or a dict)."""
        from ._hints import Hints

        return Hints.from_dict(self._hints)

    @hints.setter
    def hints(self, value: HintsLike) -> None:
        self._hints = _hints_dict(value)

    def spec(self) -> dict[str, Any]:
        """The engine's ToolSpec of this tool."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "hints": dict(self._hints),
            "tier": self.tier,
        }

    def _native_parts(self) -> tuple[dict[str, Any], Callable[..., Any], bool]:
        return (self.spec(), self._invoke, self._is_async)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (as in tests)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        hints = ", ".join(f"{k}={v}" for k, v in self._hints.items())
        kind = "async " if self._is_async else ""
        extra = f", hints({hints})" if hints else ""
        tier = ", deferred" if self.tier == "deferred" else ""
        return f"<{kind}Tool {self.name}{extra}{tier}>"


ToolDecorator = Callable[[Callable[..., Any]], Tool]


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    hints: HintsLike = None,
    tier: Literal["core", "deferred"] = "core",
) -> Any:
    """Make a :class:`Tool` from a typed function, for ``create_client(tools=[...])``.

    Use bare (``@contenox.tool``) or with options (``@contenox.tool(hints={"read_only": True})``).
    """
    if fn is not None:
        return Tool.from_function(fn, name=name, description=description, hints=hints, tier=tier)

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(f, name=name, description=description, hints=hints, tier=tier)

    return wrap
