"""The library's one wall clock: integer milliseconds since the epoch.

Every timestamp the interpreters make comes from :func:`now_ms`: the ``at`` of the inputs fed
to the core (unless a run is given its own ``clock=``), the HTTP streamers' reply timestamps,
a transcript's ``created_at`` and its resume markers. Durations and deadlines use
``time.monotonic`` instead, and OpenTelemetry spans its own nanosecond clock.
"""

from __future__ import annotations

import time

__all__ = ["now_ms"]


def now_ms() -> int:
    """The wall clock in integer milliseconds (the time every input carries)."""
    return time.time_ns() // 1_000_000
