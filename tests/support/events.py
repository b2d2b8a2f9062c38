"""What a run's events look like in an assertion: their types.

It imports nothing from the library, so the core's tests (which depend on ``agentcore`` alone)
use it too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["each_type", "types"]


def types(events: Iterable[Any]) -> list[str]:
    """The event types, each run of consecutive ``message_update`` s shown once."""
    out: list[str] = []
    for e in events:
        if e.type == "message_update" and out and out[-1] == "message_update":
            continue
        out.append(e.type)
    return out


def each_type(events: Iterable[Any]) -> list[str]:
    """The type of every event, in order (stream events too)."""
    return [e.type for e in events]
