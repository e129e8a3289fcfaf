"""Tool hints: :class:`Hints` and the forms the API takes them in (:data:`HintsLike`).

Imported on first use (``contenox.Hints``, ``tool.hints``, a hook's call event, an event): a
frozen dataclass costs about a millisecond to define in every process (``dataclasses`` compiles
its methods from source), and registering a tool needs only the hints' wire form
(``_types.hints_wire``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

from ._types import hints_wire

__all__ = ["Hints", "HintsLike"]


@dataclass(frozen=True, slots=True)
class Hints:
    """Advisory hints about a tool; each is ``None`` when unknown (treat unknown as mutating)."""

    read_only: bool | None = None
    destructive: bool | None = None
    open_world: bool | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Hints:
        """Read the wire form (camelCase; snake_case is accepted too)."""
        w = hints_wire(d)
        return cls(
            read_only=w.get("readOnly"),
            destructive=w.get("destructive"),
            open_world=w.get("openWorld"),
        )

    def to_dict(self) -> dict[str, bool]:
        """The wire form: camelCase, unknown hints left out."""
        out: dict[str, bool] = {}
        if self.read_only is not None:
            out["readOnly"] = self.read_only
        if self.destructive is not None:
            out["destructive"] = self.destructive
        if self.open_world is not None:
            out["openWorld"] = self.open_world
        return out

    @property
    def empty(self) -> bool:
        """True when all three are unknown."""
        return self.read_only is None and self.destructive is None and self.open_world is None


HintsLike = Union[Hints, Mapping[str, Union[bool, None]], None]
"""Hints as a :class:`Hints`, or a dict with ``read_only``/``readOnly``, ``destructive``,
``open_world``/``openWorld``."""
