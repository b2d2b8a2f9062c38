"""The named sentinels a run and its runner pass each other (never fed to the core)."""

from __future__ import annotations

from typing import Final, final

__all__ = ["END", "WAIT", "WAKE", "Marker", "nothing"]


@final
class Marker:
    """A named sentinel a runner and its run pass each other (never fed to the core)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


WAIT: Final = Marker("WAIT")
"""What an :class:`~interpreters.runtime.run.AnswerOrder` gives when nothing is to be fed yet, and what
:meth:`~interpreters.runtime.run.Run.effects` gives when the run has nothing to do but wait: the runner waits for the
next item of its inbox."""

WAKE: Final = Marker("WAKE")
"""What a runner posts to its inbox when the run's signal fires: the wake-up that has the
abort fed."""

END: Final = Marker("END")
"""What a runner gives :meth:`~interpreters.runtime.calls.ModelCall.received` when the stream
has no more events."""


def nothing() -> None:
    return None
