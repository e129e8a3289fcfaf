"""The approval policies that ship with the engine: hitl-policy-v1 documents written for this
project's builtins (``read``, ``write``, ``edit``, ``bash``, ...), with the Go runtime's secret
quarantine (ssh keys, cloud credentials, shell history, browser profiles) and its command tiers
for ``bash``.

>>> import contenox
>>> client = contenox.create_client(style="scripted", script=[{"text": "hi"}],
...                                 policy=contenox.policies.default())
>>> client.policy["default_action"]
'approve'

Each function returns a fresh copy of the engine's own document, so a host may edit it (add a
rule, change ``default_action``) before passing it as ``policy=`` or to ``client.set_policy()``.
"""

from __future__ import annotations

import json
from typing import Any

from . import _native

__all__ = ["default", "dev", "strict"]


def _preset(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_native.policy_preset(name))
    return doc


def default() -> dict[str, Any]:
    """Secrets denied, reads allowed, writes and unknown shell commands asked, everything else
    asked."""
    return _preset("default")


def strict() -> dict[str, Any]:
    """As :func:`default`, but every shell line asks and anything not named is denied."""
    return _preset("strict")


def dev() -> dict[str, Any]:
    """Secrets still denied and destructive shell lines asked; the rest runs."""
    return _preset("dev")
