"""The opt-in ``websearch`` builtin's host side: the provider the host supplies, what it is
asked and what it returns. The engine owns the tool (its schema, the domain filters, the cap,
the numbered text the model reads); a provider only searches."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Union

from ._native import CancelSignal

__all__ = [
    "SearchRequest",
    "SearchResult",
    "SearchResults",
    "WebSearch",
    "WebSearchProvider",
]


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What the model asked ``websearch`` for."""

    query: str
    max_results: int
    """How many results the tool shows (a provider may return more; the rest are dropped)."""
    allowed_domains: tuple[str, ...] = ()
    """Only results from these domains (and their subdomains); empty = any."""
    blocked_domains: tuple[str, ...] = ()
    """No results from these domains (and their subdomains)."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SearchRequest:
        return cls(
            query=d["query"],
            max_results=int(d["max_results"]),
            allowed_domains=tuple(d.get("allowed_domains") or ()),
            blocked_domains=tuple(d.get("blocked_domains") or ()),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "max_results": self.max_results,
            "allowed_domains": list(self.allowed_domains),
            "blocked_domains": list(self.blocked_domains),
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One search result. A provider may return these or dicts with the same keys."""

    title: str
    url: str
    snippet: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


SearchResults = Iterable[Union[SearchResult, Mapping[str, Any]]]
"""What a provider returns: :class:`SearchResult` objects or ``{"title", "url", "snippet"}``
dicts (``snippet`` optional)."""


class WebSearchProvider(Protocol):
    """An object with a ``search(request)`` method, sync or async (``search(request, cancel)``
    also receives the turn's :class:`CancelSignal`)."""

    def search(self, request: SearchRequest, /) -> Any: ...


WebSearch = Union[
    Callable[[SearchRequest], Union[SearchResults, Awaitable[SearchResults]]],
    Callable[[SearchRequest, CancelSignal], Union[SearchResults, Awaitable[SearchResults]]],
    WebSearchProvider,
]
"""``websearch=``: a function ``search(request)`` / ``search(request, cancel)``, sync or async,
or an object with such a ``search`` method. It returns :data:`SearchResults`; an exception
becomes the call's error result (``web search failed: ...``) and the turn goes on."""


def results_wire(value: Any) -> Any:
    """What a provider returned, with :class:`SearchResult` objects as dicts and other iterables
    as lists; the engine checks the shape (the same message in every language)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        return value
    return [r.to_dict() if isinstance(r, SearchResult) else r for r in value]
