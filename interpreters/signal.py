"""``AbortSignal``: one object that aborts a run from any thread or from asyncio code;
``StopRun``: what user code raises to stop a run and have the caller see why."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

__all__ = ["AbortSignal", "StopRun"]

_log = logging.getLogger("agentcore")


class AbortSignal:
    """Set once with :meth:`abort`; readable everywhere through :attr:`aborted`.

    Stream functions and tools receive the run's signal: check ``signal.aborted`` between units
    of work, or register a callback with :meth:`add_callback` (called at once, in the aborting
    thread, or immediately if the signal has already fired).

    >>> s = AbortSignal()
    >>> s.aborted
    False
    >>> s.abort("user pressed stop")
    >>> s.aborted, s.reason
    (True, 'user pressed stop')
    """

    __slots__ = ("_event", "_lock", "_callbacks", "reason", "_fired")

    def __init__(self) -> None:
        self._fired = False  # read on every stream event: a plain attribute, not a lock
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def aborted(self) -> bool:
        return self._fired

    def abort(self, reason: str | None = None) -> None:
        """Fire the signal (a second call does nothing)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._fired = True
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a failing callback must not stop the others
                _log.exception("abort callback %r raised", callback)

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` when the signal fires. Returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass

    def wait(self, timeout: float | None = None) -> bool:
        """Block the calling thread until the signal fires (or ``timeout`` seconds pass)."""
        return self._event.wait(timeout)

    async def wait_async(self) -> None:
        """Wait in asyncio until the signal fires."""
        if self.aborted:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def resolve() -> None:
            if not future.done():
                future.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(resolve)

        remove = self.add_callback(wake)
        try:
            await future
        finally:
            remove()


class StopRun(BaseException):
    """Raised by user code (a stream function, a tool, a hook, a listener) to stop the run: the
    run is aborted, still ends with ``agent_end``, and then the exception is raised to the caller
    (as ``KeyboardInterrupt`` and ``SystemExit`` are). Subclass it together with an ``Exception``
    to be both, as :class:`~interpreters.streams.cassette.CassetteMiss` (an ``AssertionError``)
    does: a failed expectation that a run must not turn into an error message."""
