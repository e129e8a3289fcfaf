"""Durable turns on the engines users already run: a turn whose ask waits for a person survives
its process (a crash, a deploy, a weekend).

The adapters are optional: each imports its engine, which the default install does not bring.

- :mod:`contenox.durable.dbos` (``pip install contenox[dbos]``): a turn is a DBOS workflow; the
  model requests and tool calls between two asks are one step, an ask is an event plus a
  ``recv`` keyed by its call id with the ask's deadline as the timeout.
- :mod:`contenox.durable.temporal` (``pip install contenox[temporal]``): a turn is a Temporal
  workflow; the model requests and tool calls between two asks are one activity, an ask is an
  update keyed by its call id; the workflow continues as new at every ask, so a run's history
  holds one checkpoint, never the whole conversation again and again.
- :mod:`contenox.durable.dbos_stepped` and :mod:`contenox.durable.temporal_stepped`: the same
  engines on the stepped turn (``client.step``): each model request and each tool call is a
  step or an activity of its own, so a crash repeats only the action that was running. On
  Temporal the workflow holds the turn's journal and each activity gets a delta of it, never
  the conversation.

Both build on the engine's suspend and resume (``{"suspend": True}``, ``client.resume``): the
ask is the durable boundary. What runs between two asks is recorded only when it has finished:
a crash inside it runs it again, so a tool with side effects should use the idempotency key its
context gives it (``turn_id:call_id``). docs/durable.md says what is exactly-once and what not.
"""

from contenox.durable._turn import ClientFactory, TurnState, run_once, suspend

__all__ = ["ClientFactory", "TurnState", "run_once", "suspend"]
