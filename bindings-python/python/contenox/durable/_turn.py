"""What every engine adapter does with a turn: run it (or resume it) in a fresh client until it
finishes or suspends at an ask, and keep only plain data about it (what an engine records)."""

from __future__ import annotations

import json
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
    """The checkpoint (JSON text) when the outcome is ``suspended`` (``None`` when a resume
    recorded it as ``checkpoint_delta``)."""
    checkpoint_delta: dict[str, Any] | None
    """A resume's checkpoint as what it adds to the checkpoint it resumed (see
    :func:`delta_of`), so that an engine records each message once."""
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
        checkpoint_delta=None,
        pending=[p.to_dict() for p in result.pending],
    )


def _messages(checkpoint: Mapping[str, Any]) -> list[Any] | None:
    transcript = checkpoint.get("transcript")
    if isinstance(transcript, Mapping) and isinstance(transcript.get("messages"), list):
        return list(transcript["messages"])
    return None


def delta_of(checkpoint: str, base: str) -> dict[str, Any] | None:
    """``checkpoint`` as what it adds to ``base``: the messages of its transcript past the ones
    it shares with ``base``'s, and its other fields. ``None`` when the transcripts do not share
    a prefix (e.g. the turn compacted its conversation): record the whole checkpoint then.

    A turn that asks k times records k checkpoints; each holds the conversation so far, so the
    whole ones add up to the square of the conversation. The deltas add up to it once."""
    new, old = json.loads(checkpoint), json.loads(base)
    messages, before = _messages(new), _messages(old)
    if messages is None or before is None or messages[: len(before)] != before:
        return None
    keep = len(before)
    transcript = {k: v for k, v in new["transcript"].items() if k != "messages"}
    rest = {k: v for k, v in new.items() if k != "transcript"}
    return {
        "keys": list(new),
        "transcript_keys": list(new["transcript"]),
        "keep": keep,
        "tail": messages[keep:],
        "transcript": transcript,
        "rest": rest,
    }


def apply_delta(base: str, delta: Mapping[str, Any]) -> str:
    """The checkpoint :func:`delta_of` made ``delta`` of, rebuilt from ``base``: the same JSON
    values (the engine checks its digest over them, so a wrong rebuild is refused)."""
    messages = json.loads(base)["transcript"]["messages"][: delta["keep"]] + list(delta["tail"])
    fields = delta["transcript"]
    transcript = {k: messages if k == "messages" else fields[k] for k in delta["transcript_keys"]}
    rest = delta["rest"]
    whole = {k: transcript if k == "transcript" else rest[k] for k in delta["keys"]}
    return json.dumps(whole, ensure_ascii=False, separators=(",", ":"))


def shrink(state: TurnState, base: str) -> TurnState:
    """``state`` with its checkpoint recorded as a delta of ``base`` (when one can be made)."""
    if state["checkpoint"] is None:
        return state
    delta = delta_of(state["checkpoint"], base)
    if delta is None:
        return state
    return TurnState(**{**state, "checkpoint": None, "checkpoint_delta": delta})


def checkpoint_of(state: TurnState, base: str | None) -> str:
    """The whole checkpoint of a suspended ``state`` (rebuilt from ``base`` for a delta)."""
    if state["checkpoint"] is not None:
        return state["checkpoint"]
    delta = state.get("checkpoint_delta")
    if delta is None or base is None:
        raise RuntimeError("a suspended turn came back without its checkpoint")
    return apply_delta(base, delta)


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
