"""The run of the sync interpreter (:class:`SyncRun`): the loop in the caller's thread, tools and hooks on worker threads.

The run is a generator of agent events. It feeds the core, carries out each effect in order and,
when the core waits for tools, blocks on one inbox that every tool thread (results, progress
updates) and the abort signal write to. Inputs therefore reach the core one at a time, in the
order they happened, which is exactly what a transcript records.

- Hooks (and ``get_api_key``) run on a worker thread while the caller's thread waits for their
  answer or the abort, whichever comes first: an abort ends a run that waits on a hook at once,
  and the hook's late answer is dropped. An ``async def`` hook is run with ``asyncio.run``.
- The stream function is iterated inline; between two events the signal is checked, so an abort
  cuts the reply at once (the core closes the message as ``aborted``). An ``async def`` stream
  function is refused with a pointer to :mod:`interpreters.aio`.
- Tool calls run on a process-wide pool of worker threads, so progress updates arrive while they
  run and parallel batches really run in parallel; a lone call to a tool that cannot report
  progress and has no time limit runs inline (a thread hand-off would only add latency). A call
  with a time limit gets its own signal, aborted at the deadline. After an abort, running tools
  have ``abort_grace`` seconds to return before the run stops waiting for them.
- ``KeyboardInterrupt`` or ``SystemExit`` from user code (or Ctrl-C while the run waits) aborts
  the run; the exception is raised to the caller after ``agent_end``.
"""


from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, Final

from agentcore import (
    AgentEvent,
    AgentMessage,
    CallLlm,
    Effect,
    Emit,
    ExecuteTool,
    Suspension,
)

from ..signal import AbortSignal
from .calls import ModelCall, ToolRun
from .hooks import FATAL, Returned, hook_call
from .run import END, WAIT, WAKE, Run

__all__ = ["ASYNC_STREAM_FN", "AgentEventStream", "StreamFn", "SyncRun", "default_stream_fn"]

StreamFn = Callable[..., Iterable[Any]]
"""``stream_fn(model, context, options)`` → an iterable of stream events."""

_log = logging.getLogger("agentcore")
ASYNC_STREAM_FN: Final = (
    "stream_fn returned {what}: it is an async stream function, which the sync interpreter cannot "
    "iterate. Run it with interpreters.aio.agent_loop (or interpreters.Agent), or give a stream "
    "function that returns an iterable of stream events."
)


_NOTHING: Final = object()


def _run_sync(value: Any) -> Any:
    """Run an awaitable a sync caller was given (an ``async def`` hook or tool)."""
    if inspect.isawaitable(value):
        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


def default_stream_fn() -> StreamFn | None:
    try:
        from ..streams.http import stream_http
    except ImportError:
        return None
    return stream_http


class _ToolThreads:
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


_tool_threads = _ToolThreads()


class SyncRun(Run):
    """One run of the loop under this interpreter: a :class:`~interpreters.runtime.run.Run` that
    carries the core's effects out in the calling thread (tools inline or on worker threads);
    ``AgentEventStream`` drives it. Its :class:`~interpreters.runtime.run.AnswerOrder` decides in
    which order the answers it waits for reach the core. The twin of
    :class:`interpreters.runtime.tasks.AsyncRun`, method for method."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def default_stream_fn(self) -> Any:
        return default_stream_fn()

    # -- the loop

    def events(self) -> Generator[AgentEvent, None, None]:
        remove = self.signal.add_callback(self.on_abort)
        try:
            for effect in self.effects():
                kind = type(effect)
                if kind is Emit:
                    yield effect.event
                elif kind is CallLlm:
                    yield from self.call_llm(effect)
                elif kind is ExecuteTool:
                    self.start_tool(effect)
                elif effect is WAIT:
                    self.wait_for_answer()
                else:
                    self.call_hook(effect)
        finally:
            remove()
            self.close()

    def on_abort(self) -> None:
        """The signal fired (in any thread): wake the run."""
        self.inbox.put(WAKE)

    def post(self, item: Any) -> None:
        self.inbox.put(item)

    def next_answer(self, timeout: float | None = None) -> Any:
        """The next item to feed (an answer, or the abort wake-up), in the run's answer order,
        waiting for the inbox at most ``timeout`` seconds (then ``queue.Empty``)."""
        order, get = self.order, self.inbox.get
        item = order.due(self)
        deadline = None if timeout is None else time.monotonic() + timeout
        while item is WAIT:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            item = order.arrived(self, get(timeout=left))
        return item

    def wait_for_answer(self) -> None:
        try:
            item = self.next_answer(self.wait_limit())
        except queue.Empty:
            self.waited_too_long()
            return
        except FATAL as exc:  # Ctrl-C while the run waits: stop it, then let the interruption through
            if self.fatal is not None:
                raise
            self.stop_for(exc)
            return
        self.take(item)

    def interruptibly(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Returned | None:
        """Call ``fn`` on a worker thread (an awaitable it returns is run with ``asyncio.run``)
        and wait for it or for the abort: ``None`` when the run was aborted first (the call is
        left behind and what it returns is dropped, unless it answers within ``hook_grace``)."""
        if self.signal.aborted:
            return None
        box: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def job() -> None:
            try:
                box.put(Returned(_run_sync(fn(*args, **kwargs))))
            except BaseException as exc:
                box.put(Returned(error=exc))

        remove = self.signal.add_callback(lambda: box.put(WAKE))
        try:
            _tool_threads.submit(job)
            try:
                item = box.get()
            except FATAL as exc:  # Ctrl-C while waiting
                self.stop_for(exc)
                return None
        finally:
            remove()
        if item is WAKE:
            try:
                item = box.get(timeout=self.hook_grace)
            except (queue.Empty, *FATAL):
                return None
        return None if item is WAKE else item

    # -- effects

    def call_hook(self, effect: Effect) -> None:
        if self.ended:
            return  # the run ended (an abort) before this hook could be called
        call = hook_call(effect, self.config, self.registry, self.signal)
        self.hook_returned(effect, call, self.interruptibly(call.fn, *call.args, **call.kwargs))

    def api_key(self, effect: CallLlm) -> tuple[bool, str | None]:
        """The key of a model call: ``get_api_key`` (on a worker thread) wins over ``api_key``.
        ``(False, None)`` when the run was aborted meanwhile."""
        ask = self.keys.call(effect)
        if ask is None:
            return True, self.keys.resolved(effect, None)
        returned = self.interruptibly(ask.fn, *ask.args, **ask.kwargs)
        return (False, None) if returned is None else (True, self.keys.resolved(effect, returned))

    def call_llm(self, effect: CallLlm) -> Generator[AgentEvent, None, None]:
        call = ModelCall(self, effect)
        source: Iterator[Any] | None = None
        first: Any = _NOTHING  # the stream's first item, read with the start timeout
        try:
            try:
                if call.may_start:
                    live, api_key = self.api_key(effect)
                    if live and call.may_start:
                        if call.start_timeout_ms is None:
                            source = self.events_of(call.open(api_key))
                        else:
                            source, first = self.start_stream(call, api_key)
                        call.opened = source is not None
            except BaseException as exc:
                call.fail(exc)
            while source is not None:
                if first is not _NOTHING:
                    event, first = first, _NOTHING
                else:
                    try:
                        event = next(source, END)
                    except BaseException as exc:
                        call.fail(exc)
                        break
                emits = call.received(event)
                if emits is None:
                    break
                for out in emits:
                    yield out.event
                if call.over:
                    break
        finally:
            self.close_stream(source)
        call.end()

    def start_stream(self, call: ModelCall, api_key: str | None) -> tuple[Iterator[Any] | None, Any]:
        """With a start timeout: call the stream function and read the stream's first item on a
        worker thread, waiting at most the timeout: ``(the stream, its first item)``, or
        ``(None, None)`` when it did not start in time (it is told to stop and left: the worker
        closes it if it ever gives the item). What the stream function raises is raised."""
        box: queue.SimpleQueue[tuple[Any, Any, BaseException | None]] = queue.SimpleQueue()
        lock = threading.Lock()
        left = False

        def job() -> None:
            source: Any = None
            try:
                source = self.events_of(call.open(api_key))
                outcome: tuple[Any, Any, BaseException | None] = (source, next(source, END), None)
            except BaseException as exc:
                outcome = (source, None, exc)
            with lock:
                if not left:
                    box.put(outcome)
                    return
            self.close_stream(outcome[0])

        _tool_threads.submit(job)
        try:
            source, item, error = box.get(timeout=(call.start_timeout_ms or 0) / 1000)
        except queue.Empty:
            with lock:
                left = True
            try:
                source, item, error = box.get_nowait()  # it came as the time ran out
            except queue.Empty:
                call.start_timed_out()
                return None, None
        except FATAL as exc:  # Ctrl-C while waiting: the run stops (its signal tells the stream)
            with lock:
                left = True
            self.stop_for(exc)
            return None, None
        if error is not None:
            self.close_stream(source)
            raise error
        return source, item

    def events_of(self, source: Any) -> Iterator[Any]:
        """How to read what a stream function returned: a sync iterator (an async stream
        function is refused, pointing to :mod:`interpreters.aio`)."""
        if inspect.isawaitable(source) or (hasattr(source, "__aiter__") and not hasattr(source, "__iter__")):
            what = "a coroutine" if inspect.iscoroutine(source) else f"a {type(source).__name__} (an async iterable)"
            close = getattr(source, "close", None)
            if inspect.iscoroutine(source) and close is not None:
                close()  # never awaited: no "coroutine was never awaited" warning
            raise TypeError(ASYNC_STREAM_FN.format(what=what))
        return iter(source)

    def close_stream(self, source: Any) -> None:
        close = getattr(source, "close", None)
        if close is not None:
            try:
                close()
            except BaseException as exc:
                self.ignored(exc)

    def start_tool(self, effect: ExecuteTool) -> None:
        signal = self.tool_starts(effect)
        if signal is None:
            return
        if self.runs_inline(effect):
            self.run_tool(effect, signal)  # its outcome is in the inbox when this returns
            return
        _tool_threads.submit(self.run_tool, effect, signal)

    def runs_inline(self, effect: ExecuteTool) -> bool:
        """A lone sync call that cannot report progress runs in the caller's thread: a thread
        hand-off would only add latency. Parallel batches always use the pool."""
        tool = self.quiet_lone_tool(effect)
        return tool is not None and not inspect.iscoroutinefunction(tool.execute)

    def run_tool(self, effect: ExecuteTool, signal: AbortSignal) -> None:
        """In a worker thread (or inline): run the tool, post its updates and outcome to the inbox."""
        job = ToolRun(self, effect, signal)
        try:
            tool, args = job.call()
            with job.scope():
                value = _run_sync(tool.execute(*args))
            outcome = job.finished(tool, value)
        except BaseException as exc:
            outcome = job.failed(exc)
        job.close(outcome)


class AgentEventStream(Iterator[AgentEvent]):
    """The events of a run, as they happen. ``result()`` runs it to the end and returns the
    messages the run added."""

    def __init__(self, run: SyncRun) -> None:
        self._run = run
        self._events = run.events()

    def __iter__(self) -> AgentEventStream:
        return self

    def __next__(self) -> AgentEvent:
        return next(self._events)

    def result(self) -> list[AgentMessage]:
        for _ in self._events:
            pass
        return self._run.result()

    def close(self) -> None:
        """Stop the run where it is (its tool threads are not waited for)."""
        self._events.close()

    @property
    def state(self) -> Any:
        """The core's current state (for debugging)."""
        return self._run.driver.state

    @property
    def suspension(self) -> Suspension | None:
        """The run's :class:`~agentcore.Suspension` once it suspended (its last event was
        ``agent_suspended``), else ``None``: store it (``agentcore.codec.to_json``) and go on
        with :func:`resume_suspended`, in this process or another."""
        return self._run.suspension

    @property
    def signal(self) -> AbortSignal:
        """The run's signal (what hooks and tools are given): aborted after an abort, or when
        the stream is closed before the run's end."""
        return self._run.signal


