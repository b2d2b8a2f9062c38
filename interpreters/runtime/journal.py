"""The steps of a run and who observes them: the :class:`Driver` (the core's state and the one
way to advance it) and the :class:`Journal` protocol every observer implements (the transcript
recorder, the OpenTelemetry tracer, your own), told each step."""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeAlias

from agentcore import Effect, ExecuteTool, Input, LoopState
from agentcore.machine import Rejection, transition

from .checks import article
from .clock import now_ms

__all__ = ["Driver", "InterpreterError", "Journal", "Journals", "observers", "tool_scopes"]


class Journal(abc.ABC):
    """Observes a run: the driver calls :meth:`record` after every step of the core.

    The transcript recorder and the OpenTelemetry tracer are journals; write your own by
    subclassing this class and defining :meth:`record`. The other methods are part of the
    protocol too, and do nothing here: override the ones your observer needs.
    """

    __slots__ = ()

    @abc.abstractmethod
    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        """Step ``step`` fed ``input`` to the core, which asked for ``effects``."""

    def tool_scope(self, effect: ExecuteTool) -> AbstractContextManager[Any]:
        """A context manager the interpreter enters around the execution of ``effect``'s tool,
        in the thread or task that runs it (a tracer makes the tool's own spans children of its
        ``execute_tool`` span this way)."""
        return nullcontext()

    def flush(self) -> None:
        """Write what is held back (the run's event stream closed: see :meth:`run_closed`)."""

    def run_started(self, state: LoopState) -> None:
        """The run starts from ``state``, before its first step (a resumed run: its suspended
        state). A journal that cannot observe this run (a recorder that recorded one already)
        raises here, before anything runs."""

    def run_closed(self) -> None:
        """The run's event stream closed (at the run's end, or abandoned before it): the run
        goes no further. Calls :meth:`flush`; the transcript recorder also closes its file."""
        self.flush()

    def add_secrets(self, values: Sequence[str]) -> None:
        """API keys the run resolved (``get_api_key``'s answer, the provider's environment
        variable): keep them out of whatever is written."""

    def keys_pending(self, pending: bool) -> None:
        """``True``: the run will use an API key that ``get_api_key`` has not given yet, and
        what the run does meanwhile may quote it (a conversation holding it, a tool's result):
        hold back what would be written. ``False``: the key is known now (:meth:`add_secrets`
        was told it first) or the run goes on without it: write what is held. (The transcript
        recorder holds its lines; a journal that writes nothing needs do nothing.)"""


Journals: TypeAlias = "Journal | Sequence[Journal] | None"
"""What ``journal=`` accepts: one observer, several, or none."""


def observers(journal: Journals) -> tuple[Journal, ...]:
    """``journal=`` as a tuple of observers (``TypeError`` for what is not a :class:`Journal`)."""
    if journal is None:
        return ()
    found: tuple[Any, ...] = tuple(journal) if isinstance(journal, (list, tuple)) else (journal,)
    for item in found:
        if not isinstance(item, Journal):
            raise TypeError(f"journal= takes Journal instances (a TranscriptRecorder, a TracingObserver, "
                            f"or a subclass of interpreters.Journal), not {article(type(item).__name__)}")
    return found


def tool_scopes(journals: Sequence[Journal], effect: ExecuteTool) -> list[AbstractContextManager[Any]]:
    """The context managers the observers want around one tool execution."""
    return [j.tool_scope(effect) for j in journals]


class InterpreterError(RuntimeError):
    """The core rejected an input: the interpreter fed something out of protocol."""


class Driver:
    """The core's state and the one way to advance it (each step told to the journals)."""

    __slots__ = ("state", "steps", "journals", "clock", "fed")

    def __init__(self, state: LoopState, journal: Journals = None, clock: Callable[[], int] = now_ms) -> None:
        self.state = state
        self.steps = 0
        self.fed = False
        self.journals = observers(journal)
        self.clock = clock
        started: list[Journal] = []
        try:
            for observer in self.journals:
                observer.run_started(state)
                started.append(observer)
        except BaseException:
            for observer in started:  # the run will not start: those told it did let go (of a file)
                observer.run_closed()
            raise

    @property
    def ended(self) -> bool:
        """True once the core has ended the run, or suspended it (this run takes no more input;
        a driver that starts from a suspended state takes the decisions first)."""
        name = self.state.phase.name
        return name == "finished" or (name == "suspended" and self.fed)

    def feed(self, input: Input) -> tuple[Effect, ...]:
        out = transition(self.state, input)
        if type(out) is Rejection:
            raise InterpreterError(f"the core rejected an input: {out}")
        self.state, effects = out  # type: ignore[misc]
        self.steps += 1
        self.fed = True
        for journal in self.journals:
            journal.record(self.steps, input, effects)
        return effects
