"""The sync runner's I/O (:class:`ThreadWaits`): the process-wide worker threads tools and hooks
run on, the inbox it blocks on, user code called on a thread and waited for or the abort, a
stream function's return read as a sync iterator (an async one refused), its first item read
within the start timeout."""

from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Final

from ..signal import AbortSignal
from .calls import ModelCall
from .hooks import FATAL, Returned
from .run import END, WAKE, Run

__all__ = ["ASYNC_STREAM_FN", "ThreadWaits", "ToolThreads", "run_sync", "sync_events", "tool_threads"]

_log = logging.getLogger("agentcore")

ASYNC_STREAM_FN: Final = (
    "stream_fn returned {what}: it is an async stream function, which the sync interpreter cannot "
    "iterate. Run it with interpreters.aio.agent_loop (or interpreters.Agent), or give a stream "
    "function that returns an iterable of stream events."
)


def run_sync(value: Any) -> Any:
    """Run an awaitable a sync caller was given (an ``async def`` hook or tool)."""
    if inspect.isawaitable(value):
        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


def sync_events(source: Any) -> Iterator[Any]:
    """How to read what a stream function returned: a sync iterator (an async stream
    function is refused, pointing to :mod:`interpreters.aio`)."""
    if inspect.isawaitable(source) or (hasattr(source, "__aiter__") and not hasattr(source, "__iter__")):
        what = "a coroutine" if inspect.iscoroutine(source) else f"a {type(source).__name__} (an async iterable)"
        close = getattr(source, "close", None)
        if inspect.iscoroutine(source) and close is not None:
            close()  # never awaited: no "coroutine was never awaited" warning
        raise TypeError(ASYNC_STREAM_FN.format(what=what))
    return iter(source)


class ToolThreads:
    """The process-wide worker threads tools and hooks run on: created on demand, reused when
    idle, kept warm between runs. Daemon threads, so a tool that never returns cannot keep the
    process from exiting."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
        self.idle = 0
        self.lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        with self.lock:
            start = self.idle == 0
            if not start:
                self.idle -= 1
        if start:
            threading.Thread(target=self._work, name="agentcore-tool", daemon=True).start()
        self.jobs.put((fn, args))

    def _work(self) -> None:
        while True:
            fn, args = self.jobs.get()
            try:
                fn(*args)
            except BaseException:  # jobs report every failure themselves; this is a last resort
                _log.exception("tool thread job %r failed", fn)
            with self.lock:
                self.idle += 1


tool_threads: Final = ToolThreads()


class ThreadWaits:
    """How a :class:`~interpreters.runtime.threads.SyncRun` waits and calls out: its I/O
    primitives, method for method those of :class:`~interpreters.runtime.task_waits.TaskWaits`."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def listen(self, signal: AbortSignal) -> Callable[[], None]:
        """Wake the run when ``signal`` fires (in any thread)."""
        return signal.add_callback(self.wake)

    def wake(self) -> None:
        self.inbox.put(WAKE)

    def post(self, item: Any) -> None:
        self.inbox.put(item)

    def get(self, timeout: float | None) -> Any:
        """The inbox's next item, waited for at most ``timeout`` seconds (then ``TimeoutError``).
        Ctrl-C while the run waits stops it (the abort's wake-up), then goes through."""
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        except FATAL as exc:
            if self.run.fatal is not None:
                raise
            self.run.stop_for(exc)
            return WAKE

    def cancel_tool(self, id_: int) -> None:
        """A thread cannot be cancelled: the tool is told by its signal, its late answer dropped."""

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Returned | None:
        """Call ``fn`` on a worker thread (an awaitable it returns is run with ``asyncio.run``)
        and wait for it or for the abort: ``None`` when the run was aborted first (the call is
        left behind and what it returns is dropped, unless it answers within ``hook_grace``)."""
        run = self.run
        box: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def job() -> None:
            try:
                box.put(Returned(run_sync(fn(*args, **kwargs))))
            except BaseException as exc:
                box.put(Returned(error=exc))

        remove = run.signal.add_callback(lambda: box.put(WAKE))
        try:
            tool_threads.submit(job)
            try:
                item = box.get()
            except FATAL as exc:  # Ctrl-C while waiting
                run.stop_for(exc)
                return None
        finally:
            remove()
        if item is WAKE:
            try:
                item = box.get(timeout=run.hook_grace)
            except (queue.Empty, *FATAL):
                return None
        return None if item is WAKE else item

    def open(self, call: ModelCall, api_key: str | None) -> Returned | None:
        """Call the stream function and make its stream readable (with a start timeout: its first
        item read on a worker thread, waited for at most the timeout)."""
        try:
            if call.start_timeout_ms is None:
                call.source = sync_events(call.open(api_key))
                call.read = partial(next, call.source, END)
                return Returned()
            return self.start(call, api_key)
        except BaseException as exc:
            return Returned(error=exc)

    def start(self, call: ModelCall, api_key: str | None) -> Returned | None:
        """Read the stream's first item on a worker thread, waiting at most the start timeout;
        ``None`` when it did not start in time (it is told to stop and left: the worker closes
        it if it ever gives the item). What the stream function raises is raised."""
        box: queue.SimpleQueue[tuple[Any, Any, BaseException | None]] = queue.SimpleQueue()
        lock = threading.Lock()
        left = False

        def job() -> None:
            source: Any = None
            try:
                source = sync_events(call.open(api_key))
                outcome: tuple[Any, Any, BaseException | None] = (source, next(source, END), None)
            except BaseException as exc:
                outcome = (source, None, exc)
            with lock:
                if not left:
                    box.put(outcome)
                    return
            self.close_stream(outcome[0])

        tool_threads.submit(job)
        try:
            source, item, error = box.get(timeout=(call.start_timeout_ms or 0) / 1000)
        except queue.Empty:
            with lock:
                left = True
            try:
                source, item, error = box.get_nowait()  # it came as the time ran out
            except queue.Empty:
                call.start_timed_out()
                return None
        except FATAL as exc:  # Ctrl-C while waiting: the run stops (its signal tells the stream)
            with lock:
                left = True
            self.run.stop_for(exc)
            return None
        call.source = source
        if error is not None:
            raise error
        call.read = partial(_first_then, call, source, item)
        return Returned()

    def close_stream(self, source: Any) -> None:
        close = getattr(source, "close", None)
        if close is not None:
            try:
                close()
            except BaseException as exc:
                self.run.ignored(exc)

    def spawn(self, id_: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the pool (a tool call)."""
        tool_threads.submit(fn, *args)

    def inline_ok(self, fn: Any) -> bool:
        """A sync tool runs in the caller's thread (an ``async def`` one would need a loop)."""
        return not inspect.iscoroutinefunction(fn)

    def close(self) -> None:
        """The tool threads are not waited for (nor can they be stopped)."""


def _first_then(call: ModelCall, source: Iterator[Any], item: Any) -> Any:
    """The first item, read by :meth:`ThreadWaits.start`; then the stream's own."""
    call.read = partial(next, source, END)
    return item
