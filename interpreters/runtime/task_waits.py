"""The asyncio runner's I/O (:class:`TaskWaits`): its inbox, user code awaited or run on worker
threads, streams opened and read (an async iterable, a list, a sync iterable read in a worker
thread), tools as tasks, and how the abort ends its waits: the wait it is in (for a hook, or for
the next stream event once the stream's grace period is over), a lone tool awaited inline (after
``abort_grace``), a stream that does not start within its start timeout."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from agentcore import Input, ToolFailed

from ..signal import AbortSignal
from .awaiting import (
    awaited,
    awaited_value,
    boxed,
    call_in_task,
    is_async,
    may_block,
    on_loop,
    read_in_thread,
    really_cancelled,
)
from .calls import ModelCall, ToolRun
from .hooks import Returned
from .run import END, WAKE, Run
from .steps import ABANDONED, Raised

__all__ = ["TaskWaits"]


class TaskWaits:
    """How an :class:`~interpreters.runtime.tasks.AsyncRun` waits and calls out: its I/O
    primitives, method for method those of :class:`~interpreters.runtime.thread_waits.ThreadWaits`,
    and the waits the abort may cancel."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        """The tool calls running as tasks of their own."""
        self.task: asyncio.Task[Any] | None = None
        """The run task, while it waits for user code or the stream (the wait the abort ends)."""
        self.by_abort = False
        self.reading: asyncio.Future[Any] | None = None
        """A worker thread's read of the next event of a sync stream."""
        self.inline: tuple[asyncio.Task[Any], int] | None = None
        """The run task and the id of a lone ``async def`` tool it awaits inline."""
        self.giving_up_inline = False
        self.stream: ModelCall | None = None
        """The model call whose stream the run task reads."""
        self.give_up: asyncio.TimerHandle | None = None
        """After an abort, the end of the stream's grace period: the wait for its next event is
        cancelled then."""
        self.start: asyncio.TimerHandle | None = None
        """Until the stream's first item: its start timeout."""
        self.reader: asyncio.Task[Any] | None = None
        """The task that reads the stream."""

    def listen(self, signal: AbortSignal) -> Callable[[], None]:
        """Wake the run when ``signal`` fires (in any thread), and end the wait it is in."""
        self.loop = asyncio.get_running_loop()
        return signal.add_callback(self.on_abort)

    def on_abort(self) -> None:
        loop = self.loop
        assert loop is not None
        if on_loop(loop):  # aborted from user code on this loop: the wake-up goes before its next answer
            self.inbox.put_nowait(WAKE)
            loop.call_soon(self.cancel_all)
        else:
            loop.call_soon_threadsafe(self.wake)

    def post(self, item: Any) -> None:
        loop = self.loop
        assert loop is not None
        if on_loop(loop):
            self.inbox.put_nowait(item)
        else:
            loop.call_soon_threadsafe(self.inbox.put_nowait, item)

    def get(self, timeout: float | None) -> Awaitable[Any]:
        """The inbox's next item, waited for at most ``timeout`` seconds (then ``TimeoutError``)."""
        if timeout is None:
            return self.inbox.get()
        return asyncio.wait_for(self.inbox.get(), timeout)

    def cancel_tool(self, id_: int) -> None:
        """The tool call timed out: stop waiting for its task too."""
        task = self.tasks.get(id_)
        if task is not None:
            task.cancel()

    async def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Returned | None:
        """Call ``fn`` (an ``async def`` one awaited here, a sync one on a worker thread, an
        awaitable it returns awaited) and wait for it or for the abort: ``None`` when the run
        was aborted first (an ``async def`` call is cancelled; a thread is left behind and what
        it returns is dropped, unless it answers within ``hook_grace``)."""
        future: asyncio.Future[Any] | None = None
        task = self.begin()
        try:
            if is_async(fn):
                returned = await awaited(fn, *args, **kwargs)
            else:
                future = asyncio.ensure_future(asyncio.to_thread(boxed, fn, args, kwargs))
                returned = await asyncio.shield(future)
                if returned.error is None and inspect.isawaitable(returned.value):
                    returned = await awaited(awaited_value, returned.value)  # a sync callable returned a coroutine
            return returned
        except asyncio.CancelledError as exc:
            if not self.by_abort:
                if task.cancelling() == 0:
                    return Returned(error=exc)  # user code raised CancelledError itself
                raise
            task.uncancel()
            return await self.late_answer(future)
        finally:
            self.end()

    async def open(self, call: ModelCall, api_key: str | None) -> Returned | None:
        """Call the stream function (on a worker thread when it may block; an awaitable it
        returns awaited, so that an abort ends the wait) and make its stream readable, within
        its start timeout."""
        if call.start_timeout_ms is not None:
            self.start_timer(call)
        signal = self.run.signal
        try:
            if may_block(self.run.stream_fn):
                returned = None if signal.aborted else await self.call(call.open, (api_key,), {})
            else:
                returned = Returned(call.open(api_key))
                if inspect.isawaitable(returned.value):
                    returned = None if signal.aborted else await self.call(awaited_value, (returned.value,), {})
            if returned is None or returned.error is not None:
                return returned
            call.source = returned.value
            if call.failure is None:
                self.readable(call, returned.value)
                self.stream, self.reader = call, asyncio.current_task()
            return returned
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and really_cancelled():
                raise
            return Returned(error=exc)

    def readable(self, call: ModelCall, source: Any) -> None:
        """How to read what a stream function returned: an async iterable awaited event by
        event, a list or tuple read directly, another sync iterable read in a worker thread."""
        if hasattr(source, "__aiter__"):
            call.source = source = source.__aiter__()
            call.read, call.awaited = source.__anext__, True
        elif isinstance(source, (list, tuple)):
            call.read = partial(next, iter(source), END)
        else:
            call.source = sync_source = iter(source)
            call.read, call.awaited = partial(self.read_in_thread, sync_source), True

    async def close_stream(self, source: Any) -> None:
        self.stream_over()
        aclose = getattr(source, "aclose", None)
        close = getattr(source, "close", None)
        try:
            if aclose is not None:
                await aclose()
            elif close is not None:
                close()
        except BaseException as exc:
            self.run.ignored(exc)

    def spawn(self, id_: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` as a task of its own (a tool call)."""
        task = asyncio.ensure_future(fn(*args))
        self.tasks[id_] = task
        task.add_done_callback(lambda _: self.tasks.pop(id_, None))

    def inline_ok(self, fn: Any) -> bool:
        """An ``async def`` tool is awaited in the run's task (a sync one would block the loop)."""
        return inspect.iscoroutinefunction(fn)

    def execute(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Awaitable[Any]:
        """Await ``fn(*args)`` in this task, or run it on a worker thread (a sync tool)."""
        return call_in_task(fn, *args)

    def close(self) -> None:
        for task in self.tasks.values():
            task.cancel()

    def begin(self) -> asyncio.Task[Any]:
        task = asyncio.current_task()
        assert task is not None
        self.task = task
        return task

    def end(self) -> None:
        self.task = None
        self.by_abort = False

    def wake(self) -> None:
        self.inbox.put_nowait(WAKE)
        self.cancel_all()

    def cancel_all(self) -> None:
        """The abort ends a wait for a hook at once, a wait for the next stream event at the end
        of the stream's grace period (its final event may come first), and a lone tool awaited
        inline after ``abort_grace``. (If the run task is busy elsewhere, an async listener, the
        check before its next wait sees the signal instead.)"""
        task = self.task
        if task is not None and not task.done():
            call = self.stream
            if call is not None and call.may_wait():
                self.give_up_later(call)
            else:
                self.by_abort = True
                task.cancel()
        inline = self.inline
        if inline is not None:
            asyncio.get_running_loop().call_later(self.run.abort_grace, self.give_up_inline, inline[1])

    def give_up_later(self, call: ModelCall) -> None:
        """Cancel the wait for the stream's next event when its grace period ends."""
        if self.give_up is None:
            delay = max(0.0, call.grace_deadline() - time.monotonic())
            self.give_up = asyncio.get_running_loop().call_later(delay, self.give_up_stream, call)

    def start_timer(self, call: ModelCall) -> None:
        self.start = asyncio.get_running_loop().call_later((call.start_timeout_ms or 0) / 1000,
                                                           self.start_timed_out, call)

    def started(self) -> None:
        if self.start is not None:  # the stream started
            self.start.cancel()
            self.start = None

    def start_timed_out(self, call: ModelCall) -> None:
        """The stream has given no item within its start timeout: it is left (the wait for it
        ends) and the reply ends with the timeout's error."""
        call.start_timed_out()
        task = self.task
        if task is not None and not task.done():
            self.by_abort = True
            task.cancel()

    def give_up_stream(self, call: ModelCall) -> None:
        task = self.task
        if self.stream is call and task is not None and not task.done():
            self.by_abort = True
            task.cancel()

    def stream_over(self) -> None:
        self.started()
        self.stream = None
        if self.give_up is not None:
            self.give_up.cancel()
            self.give_up = None

    async def late_answer(self, future: asyncio.Future[Any] | None) -> Returned | None:
        """The abort ended the wait for user code on a worker thread: its answer if it comes
        within ``hook_grace`` (given as the abort landed: kept), else ``None``."""
        if future is not None:
            await asyncio.wait((future,), timeout=self.run.hook_grace)
            if future.done() and not future.cancelled():
                answer: Returned = future.result()
                if answer.error is not None or not inspect.isawaitable(answer.value):
                    return answer
                close = getattr(answer.value, "close", None)
                if close is not None:
                    close()  # a coroutine it returned is not awaited any more
        return None

    async def read(self, call: ModelCall) -> Any:
        """The stream's next item (``END`` at its end), a :class:`Raised`, or ``ABANDONED`` when
        the abort (past the stream's grace period) or the start timeout ended the wait, or before
        it began (:meth:`~interpreters.runtime.calls.ModelCall.may_read`: an abort given while
        the run task was elsewhere cancelled no wait)."""
        if not call.may_read():
            return ABANDONED
        if not call.awaited:
            event = call.read()
        else:
            if call.waiting:
                self.give_up_later(call)
            self.task = self.reader
            try:
                event = await call.read()
            except StopAsyncIteration:
                event = END
            except asyncio.CancelledError as exc:
                if self.by_abort:
                    await self.read_abandoned()
                    return ABANDONED
                if really_cancelled():
                    raise
                event = Raised(exc)  # the stream raised CancelledError itself
            except BaseException as exc:
                event = Raised(exc)
            finally:
                self.end()
        if self.start is not None:  # the stream started
            self.start.cancel()
            self.start = None
        return event

    async def read_in_thread(self, source: Any) -> Any:
        read = asyncio.ensure_future(asyncio.to_thread(read_in_thread, source))
        self.reading = read
        return await asyncio.shield(read)

    async def read_abandoned(self) -> None:
        """The abort ended the wait for the next event: what the stream raised as it landed
        still counts (``KeyboardInterrupt`` in a thread's read stops the run)."""
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        read, self.reading = self.reading, None
        if read is not None:
            await asyncio.wait((read,), timeout=self.run.hook_grace)
            if read.done() and not read.cancelled():
                raised = read.result()
                if type(raised) is Raised:
                    self.run.ignored(raised.error)

    def inline_tool(self, eid: int, inline: bool) -> None:
        """Tool call ``eid`` starts (``inline``: awaited in the run task) or ends."""
        if inline:
            task = asyncio.current_task()
            assert task is not None
            self.inline = (task, eid)
        elif self.inline is not None and self.inline[1] == eid:
            self.inline = None

    def give_up_inline(self, eid: int) -> None:
        inline = self.inline
        if inline is not None and inline[1] == eid and not inline[0].done():
            self.giving_up_inline = True
            inline[0].cancel()

    def tool_cancelled(self, job: ToolRun, exc: asyncio.CancelledError, inline: bool) -> Input:
        """A tool's run was cancelled: the abort's grace period for an inline one is over, the
        run closed its task, or the tool raised ``CancelledError`` itself. Inline, a
        cancellation of the run task is the caller's (``wait_for``, a task group...): raised."""
        if inline and self.giving_up_inline:
            self.giving_up_inline = False
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            return ToolFailed(job.id, self.run.grace_text(), self.run.clock())
        if really_cancelled():
            if inline:
                raise exc
            return ToolFailed(job.id, "Tool execution was cancelled", self.run.clock())
        return job.failed(exc)
