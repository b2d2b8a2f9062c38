"""What a model call decides, as sans-IO steps both runners carry out (the pattern of
:mod:`interpreters.streams.http.session`): :func:`model_call` yields typed steps (ask
``get_api_key``, open the stream, read its next item, give agent events) and takes what each
gave; a runner only carries them out, with threads or with asyncio. Also the event stream both
front doors return, but for how it is iterated (:class:`EventStream`)."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, final

from agentcore import AgentMessage, Emit, LoopState, Suspension

from ..signal import AbortSignal
from .calls import ModelCall
from .hooks import HookCall, Returned
from .run import Marker, Run

__all__ = ["ABANDONED", "READ", "EventStream", "Last", "OpenStream", "Raised", "Step", "model_call"]


@final
@dataclass(frozen=True, slots=True)
class OpenStream:
    """Call the stream function with ``api_key`` and make its stream readable (the call's
    ``source``, ``read``); answered with a :class:`Returned` (its error: what the stream
    function raised) or ``None`` (the run was aborted first, or the stream did not start)."""

    api_key: str | None


@final
class Raised:
    """What reading the stream's next item raised."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


@final
@dataclass(frozen=True, slots=True)
class Last:
    """Give the reply's last emits; nothing is read after them."""

    emits: tuple[Emit, ...]


READ: Final[tuple[Emit, ...]] = ()
"""The step that reads the stream's next item, awaited (no emits to give first)."""

ABANDONED: Final = Marker("ABANDONED")
"""What a read gives when the abort ended the wait for the next item (or, under asyncio, when
:meth:`~interpreters.runtime.calls.ModelCall.may_read` says to read no more)."""

Step: TypeAlias = "HookCall | OpenStream | Last | tuple[Emit, ...]"
"""A step of :func:`model_call`: call ``get_api_key`` (a :class:`HookCall`, answered with what
the runner's ``interruptibly`` gives), :class:`OpenStream`, emits to give (a tuple; when the
stream's reads are awaited, :attr:`~interpreters.runtime.calls.ModelCall.awaited`, the runner
then reads its next item: :data:`READ` when there is nothing to give first; answered with the
item, ``END``, a :class:`Raised`, or :data:`ABANDONED`), or :class:`Last` emits to give."""


def model_call(run: Run, call: ModelCall) -> Generator[Step, Any, None]:
    """One model call but for its I/O: the key (``get_api_key`` wins over ``api_key``), the
    stream opened, each item read fed to the core (:meth:`ModelCall.received`) and its emits
    given, until the reply is over, the stream fails or the abort ends it. The runner then
    closes the stream and calls :meth:`ModelCall.end`."""
    effect = call.effect
    if not call.may_start:
        return
    ask = run.keys.call(effect)
    returned: Returned | None = None if ask is None else (yield ask)
    if ask is not None and returned is None:
        return  # the run was aborted while it asked
    try:
        api_key = run.keys.resolved(effect, returned)
    except BaseException as exc:
        call.fail(exc)
        return
    if not call.may_start:
        return
    opened: Returned | None = yield OpenStream(api_key)
    if opened is None:
        return
    if opened.error is not None:
        call.fail(opened.error)
        return
    if call.failure is not None:  # (the start timeout may have ended it)
        return
    call.opened = True
    emits: Sequence[Emit] = READ
    while True:
        if call.awaited:
            event = yield emits if type(emits) is tuple else tuple(emits)  # given, then the next item read
        else:  # read with a plain call (a sync stream, a list): here
            if emits:
                yield emits if type(emits) is tuple else tuple(emits)
            try:
                event = call.read()
            except BaseException as exc:
                event = Raised(exc)
        if type(event) is Raised:
            call.fail(event.error)
            return
        if event is ABANDONED:
            return
        received = call.received(event)
        if received is None:
            return
        if call.over:
            if received:
                yield Last(tuple(received))
            return
        emits = received


class EventStream:
    """The events of a run, as they happen (the sync or async iterator of a front door)."""

    def __init__(self, run: Run, events: Any) -> None:
        self._run = run
        self._events = events

    def messages(self) -> list[AgentMessage]:
        return self._run.result()

    @property
    def state(self) -> LoopState:
        """The core's current state (for debugging)."""
        return self._run.driver.state

    @property
    def suspension(self) -> Suspension | None:
        """The run's :class:`~agentcore.Suspension` once it suspended (its last event was
        ``agent_suspended``), else ``None``: store it (``agentcore.codec.to_json``) and go on
        with ``resume_suspended``, in this process or another."""
        return self._run.suspension

    @property
    def signal(self) -> AbortSignal:
        """The run's signal (what hooks and tools are given): aborted after an abort, or when
        the stream is closed before the run's end."""
        return self._run.signal
