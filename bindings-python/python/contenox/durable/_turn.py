"""What every engine adapter does with a turn: run it (or resume it) in a fresh client until it
finishes or suspends at an ask, and keep only plain data about it (what an engine records)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import contenox

ClientFactory = Callable[["contenox.WaitFor"], "contenox.Client"]
"""``make_client(wait_for)``: builds the client a turn runs on, in every process that runs a
step of it, with the same config (the checkpoint holds no secret: keys, headers and injected
values come from here at every resume). The client must be created with
``wait_for=wait_for``: the adapter's answer to an ask is to suspend the turn."""


class TurnState(TypedDict):
    """What an engine records after a run or resume step: how the turn stands, plain data."""

    outcome: str
    final_text: str
    error: str | None
    stop_reason: str | None
    usage: dict[str, int]
    checkpoint: str | None
    """The checkpoint (JSON text) when the outcome is ``suspended``."""
    pending: list[dict[str, Any]]
    """The pending requests (each with its ``call_id`` and, when the ask has a timeout, its
    absolute ``deadline_ms``) when the outcome is ``suspended``."""


def suspend(request: contenox.PendingRequest, cancel: Any) -> dict[str, bool]:
    """The adapters' ``wait_for``: every ask suspends the turn; the engine answers it later."""
    del request, cancel
    return {"suspend": True}


def _usage(usage: contenox.Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def state_of(result: contenox.TurnResult) -> TurnState:
    """The plain data an engine records about a finished or suspended run."""
    return TurnState(
        outcome=result.outcome,
        final_text=result.final_text,
        error=result.error,
        stop_reason=result.stop_reason,
        usage=_usage(result.usage),
        checkpoint=result.checkpoint,
        pending=[p.to_dict() for p in result.pending],
    )


async def run_once(
    make_client: ClientFactory,
    prompt: str | None = None,
    checkpoint: str | None = None,
    answers: Mapping[str, Any] | None = None,
) -> TurnState:
    """Run ``prompt`` (or resume ``checkpoint`` with ``answers``, keyed by call id) in a fresh
    client until the turn finishes or suspends at its next ask."""
    client = make_client(suspend)
    try:
        if checkpoint is None:
            if prompt is None:
                raise ValueError("run_once needs a prompt or a checkpoint")
            result = await client.run(prompt)
        else:
            result = await client.resume(checkpoint, dict(answers or {}))
        return state_of(result)
    finally:
        client.close()
