"""Clocks for the ``clock=`` of runs and scripted models: milliseconds, stopped or ticking.

They are module-level values and classes, so Ray pickles them by reference (tests/interpreters/
test_ray.py puts the repository, which holds the package ``tests``, on the workers' ``PYTHONPATH``).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

__all__ = ["StoppedClock", "TickingClock", "clock"]


@dataclass(frozen=True)
class StoppedClock:
    """Always ``at``: every timestamp of the run is the same."""

    at: int

    def __call__(self) -> int:
        return self.at


@dataclass
class TickingClock:
    """``start``, then ``step`` more at each reading (thread-safe)."""

    start: int = 0
    step: int = 1
    _ticks: itertools.count[int] = field(init=False, repr=False)
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._ticks = itertools.count(self.start, self.step)

    def __call__(self) -> int:
        with self._lock:
            return next(self._ticks)


clock = StoppedClock(1_000)
"""The stopped clock most tests use: every timestamp is 1000."""
