"""The run of the asyncio interpreter (:class:`AsyncRun`): the same loop as :mod:`interpreters.sync`, awaited.

Kept parallel to the sync interpreter, method for method. The differences are only in how
things are called and waited for:

- ``async def`` hooks, tools and stream functions are awaited in the run's task; sync ones run in
  worker threads (``asyncio.to_thread``) so they never block the event loop. A sync stream
  function marked ``blocking = False`` (``ScriptedModel`` is) is called in the run's task.
- A stream function may return an async iterable, a list or tuple of events (read directly), a
  sync iterable (each event read in a worker thread, about 40 µs an event: give a list, or an
  async iterable, when that matters), or an awaitable of any of these.
- Parallel tool calls run as tasks; every answer goes through one ``asyncio.Queue`` inbox.
- An abort cancels the run task's wait at once, whether it waits for the next stream event
  (even when the stream function is blocked on the network) or for a hook: the core then closes
  the reply as ``aborted`` or ends the run; a hook's late answer is dropped (an ``async def``
  hook is cancelled, a sync one's thread is left to finish).
- A tool call with a time limit runs in its own task with its own signal, aborted (and the task
  cancelled) at the deadline.
- ``KeyboardInterrupt`` or ``SystemExit`` from user code aborts the run; the exception is
  raised to the caller after ``agent_end``.
"""


from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from functools import partial
from typing import Any

from agentcore import (
    AgentEvent,
    AgentMessage,
    CallLlm,
    Effect,
    Emit,
    ExecuteTool,
    Suspension,
    ToolFailed,
)

from ..signal import AbortSignal
from .calls import ModelCall, ToolRun
from .hooks import Returned, hook_call
from .run import END, WAIT, WAKE, Run

__all__ = ["AgentEventStream", "AsyncRun", "default_stream_fn"]

_log = logging.getLogger("agentcore")


def _boxed(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Returned:
    """Call ``fn`` in a worker thread: what it returns or raises, as a value (asyncio cannot
    carry some exceptions, ``StopIteration`` among them, out of a thread into a task)."""
    try:
        return Returned(fn(*args, **kwargs))
    except BaseException as exc:
        return Returned(error=exc)


def _really_cancelled() -> bool:
    """Whether the running task is being cancelled (not user code raising ``CancelledError``)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the caller runs on ``loop`` (not in another thread)."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await an ``async def`` callable in this task; run a sync one in a worker thread. Raises
    what ``fn`` raised."""
    if _is_async(fn):
        return await fn(*args, **kwargs)
    value = (await asyncio.to_thread(_boxed, fn, args, kwargs)).get()
    if inspect.isawaitable(value):
        value = await value
    return value


def _may_block(stream_fn: Any) -> bool:
    """Whether ``stream_fn`` is called on a worker thread: a sync one may block before it returns
    (connecting to a server, say), unless it says it does not (``blocking = False``, as
    ``ScriptedModel`` does). An ``async def`` one is called on the loop."""
    return getattr(stream_fn, "blocking", True) is not False and not _is_async(stream_fn)


def default_stream_fn() -> Callable[..., Any] | None:
    try:
        from ..streams.http import astream_http
    except ImportError:
        return None
    return astream_http


class AsyncRun(Run):
    """One run of the loop under this interpreter: a :class:`~interpreters.runtime.run.Run` that
    carries the core's effects out in an asyncio task (tools as tasks or on worker threads);
    ``AgentEventStream`` drives it. Its :class:`~interpreters.runtime.run.AnswerOrder` decides in
    which order the answers it waits for reach the core. The twin of
    :class:`interpreters.runtime.threads.SyncRun`, method for method."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox: asyncio.Queue[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.interruptible: asyncio.Task[Any] | None = None
        self.cancelled_by_abort = False
        self.reading: asyncio.Future[Any] | None = None
        """A worker thread's read of the next event of a sync stream."""
        self.inline_tool: tuple[asyncio.Task[Any], int] | None = None
        """The run task and the id of a lone ``async def`` tool it awaits inline."""
        self.giving_up_inline = False
        self.stream_call: ModelCall | None = None
        """The model call whose stream the run task reads."""
        self.give_up: asyncio.TimerHandle | None = None
        """After an abort, the end of the stream's grace period: the wait for its next event is
        cancelled then."""

    def default_stream_fn(self) -> Any:
        return default_stream_fn()

    # -- the loop

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        self.loop, self.inbox = asyncio.get_running_loop(), asyncio.Queue()
        remove = self.signal.add_callback(self.on_abort)
        try:
            for effect in self.effects():
                kind = type(effect)
                if kind is Emit:
                    yield effect.event
                elif kind is CallLlm:
                    async for event in self.call_llm(effect):
                        yield event
                elif kind is ExecuteTool:
                    await self.start_tool(effect)
                elif effect is WAIT:
                    await self.wait_for_answer()
                else:
                    await self.call_hook(effect)
        finally:
            remove()
            self.close()

    def on_abort(self) -> None:
        """The signal fired (in any thread): wake the run, and end the wait it is in."""
        loop, inbox = self.loop, self.inbox
        assert loop is not None and inbox is not None
        if _on(loop):  # aborted from user code on this loop: the wake-up goes before its next answer
            inbox.put_nowait(WAKE)
            loop.call_soon(self.cancel_waits)
        else:
            loop.call_soon_threadsafe(self.wake_on_abort)

    def post(self, item: Any) -> None:
        loop, inbox = self.loop, self.inbox
        assert loop is not None and inbox is not None
        if _on(loop):
            inbox.put_nowait(item)
        else:
            loop.call_soon_threadsafe(inbox.put_nowait, item)

    def wake_on_abort(self) -> None:
        assert self.inbox is not None
        self.inbox.put_nowait(WAKE)
        self.cancel_waits()

    def cancel_waits(self) -> None:
        """The abort ends a wait for a hook at once, a wait for the next stream event at the end
        of the stream's grace period (its final event may come first), and a lone tool awaited
        inline after ``abort_grace``. (If the run task is busy elsewhere, an async listener, the
        check before its next wait sees the signal instead.)"""
        task = self.interruptible
        if task is not None and not task.done():
            call = self.stream_call
            if call is not None and call.may_wait():
                self.give_up_later(call)
            else:
                self.cancelled_by_abort = True
                task.cancel()
        inline = self.inline_tool
        if inline is not None:
            asyncio.get_running_loop().call_later(self.abort_grace, self.give_up_inline, inline[1])

    def give_up_later(self, call: ModelCall) -> None:
        """Cancel the wait for the stream's next event when its grace period ends."""
        if self.give_up is None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, call.grace_deadline() - time.monotonic())
            self.give_up = loop.call_later(delay, self.give_up_stream, call)

    def start_timed_out(self, call: ModelCall) -> None:
        """The stream has given no item within its start timeout: it is left (the wait for it
        ends) and the reply ends with the timeout's error."""
        call.start_timed_out()
        task = self.interruptible
        if task is not None and not task.done():
            self.cancelled_by_abort = True
            task.cancel()

    def give_up_stream(self, call: ModelCall) -> None:
        task = self.interruptible
        if self.stream_call is call and task is not None and not task.done():
            self.cancelled_by_abort = True
            task.cancel()

    def give_up_inline(self, eid: int) -> None:
        inline = self.inline_tool
        if inline is not None and inline[1] == eid and not inline[0].done():
            self.giving_up_inline = True
            inline[0].cancel()

    def close(self) -> None:
        super().close()
        for task in self.tasks.values():
            task.cancel()

    async def next_answer(self) -> Any:
        """The next item to feed (an answer, or the abort wake-up), in the run's answer order,
        waiting for the inbox (the caller bounds the wait)."""
        order, inbox = self.order, self.inbox
        assert inbox is not None
        item = order.due(self)
        while item is WAIT:
            item = order.arrived(self, await inbox.get())
        return item

    async def wait_for_answer(self) -> None:
        limit = self.wait_limit()
        try:
            item = await (self.next_answer() if limit is None else asyncio.wait_for(self.next_answer(), limit))
        except asyncio.TimeoutError:
            for id_ in self.waited_too_long():  # timed out: stop waiting for their tasks too
                task = self.tasks.get(id_)
                if task is not None:
                    task.cancel()
            return
        self.take(item)

    async def interruptibly(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Returned | None:
        """Call ``fn`` (an ``async def`` one awaited here, a sync one on a worker thread, an
        awaitable it returns awaited) and wait for it or for the abort: ``None`` when the run
        was aborted first (an ``async def`` call is cancelled; a thread is left behind and what
        it returns is dropped, unless it answers within ``hook_grace``)."""
        if self.signal.aborted:
            return None
        task = asyncio.current_task()
        assert task is not None
        future: asyncio.Future[Any] | None = None
        self.interruptible = task
        try:
            if _is_async(fn):
                returned = await _awaited(fn, *args, **kwargs)
            else:
                future = asyncio.ensure_future(asyncio.to_thread(_boxed, fn, args, kwargs))
                returned = await asyncio.shield(future)
                if returned.error is None and inspect.isawaitable(returned.value):
                    returned = await _awaited(_awaited_value, returned.value)  # a sync callable returned a coroutine
            return returned
        except asyncio.CancelledError as exc:
            if not self.cancelled_by_abort:
                if task.cancelling() == 0:
                    return Returned(error=exc)  # user code raised CancelledError itself
                raise
            task.uncancel()
            if future is not None:
                await asyncio.wait((future,), timeout=self.hook_grace)
                if future.done() and not future.cancelled():
                    answer: Returned = future.result()
                    if answer.error is not None or not inspect.isawaitable(answer.value):
                        return answer  # it answered as the abort landed: keep it
                    close = getattr(answer.value, "close", None)
                    if close is not None:
                        close()  # a coroutine it returned is not awaited any more
            return None
        finally:
            self.interruptible = None
            self.cancelled_by_abort = False

    # -- effects

    async def call_hook(self, effect: Effect) -> None:
        if self.ended:
            return  # the run ended (an abort) before this hook could be called
        call = hook_call(effect, self.config, self.registry, self.signal)
        self.hook_returned(effect, call, await self.interruptibly(call.fn, *call.args, **call.kwargs))

    async def api_key(self, effect: CallLlm) -> tuple[bool, str | None]:
        """The key of a model call: ``get_api_key`` (awaited, or on a worker thread) wins over
        ``api_key``. ``(False, None)`` when the run was aborted meanwhile."""
        ask = self.keys.call(effect)
        if ask is None:
            return True, self.keys.resolved(effect, None)
        returned = await self.interruptibly(ask.fn, *ask.args, **ask.kwargs)
        return (False, None) if returned is None else (True, self.keys.resolved(effect, returned))

    async def call_llm(self, effect: CallLlm) -> AsyncIterator[AgentEvent]:
        call, signal = ModelCall(self, effect), self.signal
        source: Any = None
        read: Any = None  # the next event, END, or a _Raised: awaited, or a plain call
        awaited = False
        start_timer: asyncio.TimerHandle | None = None  # until the stream's first item
        try:
            try:
                if call.may_start:
                    live, api_key = await self.api_key(effect)
                    if live and call.may_start:
                        if call.start_timeout_ms is not None:
                            start_timer = asyncio.get_running_loop().call_later(
                                call.start_timeout_ms / 1000, self.start_timed_out, call)
                        if _may_block(self.stream_fn):  # called on a worker thread
                            returned = await self.interruptibly(call.open, api_key)
                            live = returned is not None
                            source = returned.get() if returned is not None else None
                        else:
                            source = call.open(api_key)
                            if inspect.isawaitable(source):  # awaited so that an abort ends the wait
                                returned = await self.interruptibly(_awaited_value, source)
                                live = returned is not None
                                source = returned.get() if returned is not None else None
                        if live and call.failure is None:  # (the start timeout may have ended it)
                            source, read, awaited = self.events_of(source)
                            call.opened = True
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError) and _really_cancelled():
                    raise
                call.fail(exc)
            task = asyncio.current_task()
            self.stream_call = call
            # Checked before each read too: a wait that has begun ends only when the abort
            # cancels it, and that misses an abort given while the run task was elsewhere.
            while read is not None:
                if signal.aborted and not call.reads_on():
                    break
                if not awaited:
                    event = read()
                else:
                    if call.waiting:
                        self.give_up_later(call)
                    self.interruptible = task
                    try:
                        event = await read()
                    except StopAsyncIteration:
                        event = END
                    except asyncio.CancelledError as exc:
                        if self.cancelled_by_abort:
                            await self.read_abandoned()
                            break
                        if _really_cancelled():
                            raise
                        event = _Raised(exc)  # the stream raised CancelledError itself
                    except BaseException as exc:
                        event = _Raised(exc)
                    finally:
                        self.interruptible = None
                        self.cancelled_by_abort = False
                    if type(event) is _Raised:
                        call.fail(event.error)
                        break
                if start_timer is not None:  # the stream started
                    start_timer.cancel()
                    start_timer = None
                emits = call.received(event)
                if emits is None:
                    break
                for out in emits:
                    yield out.event
                if call.over:
                    break
        finally:
            if start_timer is not None:
                start_timer.cancel()
            self.stream_call = None
            if self.give_up is not None:
                self.give_up.cancel()
                self.give_up = None
            await self.close_stream(source)
        call.end()

    def events_of(self, source: Any) -> tuple[Any, Any, bool]:
        """How to read what a stream function returned: ``(what to close, the call that gives
        the next event, END or a _Raised, whether it is awaited)``. An async iterable is
        awaited event by event, a list or tuple read directly, another sync iterable read in a
        worker thread."""
        if hasattr(source, "__aiter__"):
            source = source.__aiter__()
            return source, source.__anext__, True
        if isinstance(source, (list, tuple)):
            return source, partial(next, iter(source), END), False
        sync_source = iter(source)

        async def next_in_thread() -> Any:
            read = asyncio.ensure_future(asyncio.to_thread(_read, sync_source))
            self.reading = read
            return await asyncio.shield(read)

        return sync_source, next_in_thread, True

    async def read_abandoned(self) -> None:
        """The abort ended the wait for the next event: what the stream raised as it landed
        still counts (``KeyboardInterrupt`` in a thread's read stops the run)."""
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        read, self.reading = self.reading, None
        if read is not None:
            await asyncio.wait((read,), timeout=self.hook_grace)
            if read.done() and not read.cancelled():
                raised = read.result()
                if type(raised) is _Raised:
                    self.ignored(raised.error)

    async def close_stream(self, source: Any) -> None:
        aclose = getattr(source, "aclose", None)
        close = getattr(source, "close", None)
        try:
            if aclose is not None:
                await aclose()
            elif close is not None:
                close()
        except BaseException as exc:
            self.ignored(exc)

    async def start_tool(self, effect: ExecuteTool) -> None:
        signal = self.tool_starts(effect)
        if signal is None:
            return
        if self.runs_inline(effect):
            await self.run_tool(effect, signal, inline=True)  # its outcome is in the inbox when this returns
            return
        task = asyncio.ensure_future(self.run_tool(effect, signal))
        eid = effect.id
        self.tasks[eid] = task
        task.add_done_callback(lambda _: self.tasks.pop(eid, None))

    def runs_inline(self, effect: ExecuteTool) -> bool:
        """A lone ``async def`` call that cannot report progress is awaited in the run's task: a
        task of its own would only add scheduling latency."""
        tool = self.quiet_lone_tool(effect)
        return tool is not None and inspect.iscoroutinefunction(tool.execute)

    async def run_tool(self, effect: ExecuteTool, signal: AbortSignal, inline: bool = False) -> None:
        """In its own task (or inline): run the tool, post its updates and outcome to the inbox.

        Inline, a cancellation is the caller's (``wait_for``, a task group...) and propagates."""
        job = ToolRun(self, effect, signal)
        if inline:
            task = asyncio.current_task()
            assert task is not None
            self.inline_tool = (task, effect.id)
        try:
            tool, args = job.call()
            with job.scope():
                value = await _call(tool.execute, *args)
            outcome = job.finished(tool, value)
        except asyncio.CancelledError as exc:
            if inline and self.giving_up_inline:  # the abort's grace period is over
                self.giving_up_inline = False
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                outcome = ToolFailed(effect.id, self.grace_text(), self.clock())
            elif _really_cancelled():
                if inline:
                    raise  # the caller's cancellation (wait_for, a task group...)
                outcome = ToolFailed(effect.id, "Tool execution was cancelled", self.clock())
            else:
                outcome = job.failed(exc)  # the tool raised it itself
        except BaseException as exc:
            outcome = job.failed(exc)
        finally:
            if inline:
                self.inline_tool = None
        job.close(outcome)


async def _awaited(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Returned:
    """What ``await fn(*args, **kwargs)`` gives, or what it raises (a ``CancelledError`` goes
    on: the caller tells a cancellation of its task from user code raising it)."""
    try:
        return Returned(await fn(*args, **kwargs))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return Returned(error=exc)


async def _awaited_value(value: Any) -> Any:
    return await value


class _Raised:
    """What a sync stream raised while a worker thread read its next event."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _read(source: Any) -> Any:
    """In a worker thread: the next event of a sync stream, ``END``, or what it raised."""
    try:
        return next(source, END)
    except BaseException as exc:
        return _Raised(exc)


class AgentEventStream(AsyncIterator[AgentEvent]):
    """The events of a run (async). ``await result()`` runs it to the end and returns the
    messages the run added."""

    def __init__(self, run: AsyncRun) -> None:
        self._run = run
        self._events = run.events()

    def __aiter__(self) -> AgentEventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        return await self._events.__anext__()

    async def result(self) -> list[AgentMessage]:
        async for _ in self._events:
            pass
        return self._run.result()

    async def aclose(self) -> None:
        await self._events.aclose()

    @property
    def state(self) -> Any:
        return self._run.driver.state

    @property
    def suspension(self) -> Suspension | None:
        """The run's :class:`~agentcore.Suspension` once it suspended, else ``None`` (see
        :attr:`interpreters.sync.AgentEventStream.suspension`)."""
        return self._run.suspension

    @property
    def signal(self) -> AbortSignal:
        """The run's signal (what hooks and tools are given)."""
        return self._run.signal


