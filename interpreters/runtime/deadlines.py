"""When a run must stop waiting: the tools' time limits and the abort's grace period."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..signal import AbortSignal

__all__ = ["Deadline", "Deadlines"]


@dataclass(slots=True)
class Deadline:
    """A running tool call with a time limit: when it expires and the signal it was given."""

    at: float
    ms: int
    signal: AbortSignal
    unlink: Callable[[], None]


class Deadlines:
    """The deadlines of a run's tool calls (id → :class:`Deadline`) and, once the abort is
    fed, the end of the grace period the tools still running have to return."""

    __slots__ = ("tools", "abort_at")

    def __init__(self) -> None:
        self.tools: dict[int, Deadline] = {}
        self.abort_at = 0.0

    def __contains__(self, id_: int) -> bool:
        return id_ in self.tools

    def add(self, id_: int, ms: int, run_signal: AbortSignal) -> AbortSignal:
        """Tool call ``id_`` has ``ms`` milliseconds: the signal to give it, its own, which
        follows ``run_signal`` and fires at the deadline."""
        own = AbortSignal()
        unlink = run_signal.add_callback(lambda: own.abort(run_signal.reason))
        self.tools[id_] = Deadline(time.monotonic() + ms / 1000, ms, own, unlink)
        return own

    def drop(self, id_: int) -> None:
        """Tool call ``id_`` is over (it answered, or was given up on)."""
        deadline = self.tools.pop(id_, None)
        if deadline is not None:
            deadline.unlink()

    def abort_fed(self, grace: float) -> None:
        """The abort was fed: the tools still running have ``grace`` seconds from now."""
        self.abort_at = time.monotonic() + grace

    def limit(self, abort_grace_runs: bool) -> float | None:
        """Seconds until the first deadline (the abort's grace period's end counts when
        ``abort_grace_runs``): how long a runner may wait (``None``: no limit)."""
        now = time.monotonic()
        limit: float | None = self.abort_at - now if abort_grace_runs else None
        if self.tools:
            first = min(d.at for d in self.tools.values()) - now
            limit = first if limit is None else min(limit, first)
        return None if limit is None else max(0.0, limit)

    def expired(self) -> list[tuple[int, Deadline]]:
        """The tool calls past their deadline, in id order, taken out (each signal aborted)."""
        now = time.monotonic()
        expired = [(i, self.tools.pop(i)) for i in sorted(i for i, d in self.tools.items() if d.at <= now)]
        for _, deadline in expired:
            deadline.unlink()
            deadline.signal.abort(f"the tool timed out after {deadline.ms} ms")
        return expired

    def abort_grace_over(self) -> bool:
        return self.abort_at <= time.monotonic()

    def clear(self) -> None:
        for deadline in self.tools.values():
            deadline.unlink()
        self.tools.clear()
