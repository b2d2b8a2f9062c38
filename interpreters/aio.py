"""The asyncio interpreter: the same loop as :mod:`interpreters.sync`, awaited.

Kept parallel to the sync interpreter, method for method. The differences are only in how
things are called and waited for:

- ``async def`` hooks, tools and stream functions are awaited in the run's task; sync ones run in
  worker threads (``asyncio.to_thread``) so they never block the event loop.
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
from contextlib import ExitStack
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any

from agentcore import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    CallLlm,
    CancelLlm,
    Continued,
    Effect,
    Emit,
    ExecuteTool,
    HookFailed,
    Input,
    RunEnded,
    Started,
    StreamEventReceived,
    StreamFailed,
    ToolFailed,
    ToolFinished,
    ToolUpdated,
    initial_state,
    thaw,
)
from agentcore.texts import STREAM_ENDED_TEXT

from .driver import (
    FATAL,
    NO_STREAM_FN,
    Journals,
    WAIT,
    Run,
    StreamItems,
    check_run_arguments,
    failure_text,
    hook_call,
    llm_context,
    prompt_messages,
    stream_options,
    tool_call,
    tool_result,
    tool_scopes,
    with_signal,
)
from .clock import now_ms
from .signal import AbortSignal

__all__ = [
    "AgentEventStream",
    "AsyncRun",
    "agent_loop",
    "agent_loop_continue",
    "run_agent_loop",
    "run_agent_loop_continue",
]

_log = logging.getLogger("agentcore")
_WAKE = object()
_END = object()


class _Raised:
    """An exception user code raised, carried out of a worker thread as a value (asyncio cannot
    carry some exceptions, ``StopIteration`` among them, out of a thread into a task)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _boxed(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``fn`` in a worker thread; what it raises comes back as a :class:`_Raised`."""
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        return _Raised(exc)


def _really_cancelled() -> bool:
    """Whether the running task is being cancelled (not user code raising ``CancelledError``)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await an ``async def`` callable in this task; run a sync one in a worker thread. Raises
    what ``fn`` raised."""
    if _is_async(fn):
        return await fn(*args, **kwargs)
    value = await asyncio.to_thread(_boxed, fn, args, kwargs)
    if type(value) is _Raised:
        raise value.error
    if inspect.isawaitable(value):
        value = await value
    return value


def default_stream_fn() -> Callable[..., Any] | None:
    try:
        from .http import astream_http
    except ImportError:
        return None
    return astream_http


class AsyncRun(Run):
    """One run of the loop under this interpreter: a :class:`~interpreters.driver.Run` that
    carries the core's effects out in an asyncio task (tools as tasks or on worker threads);
    ``AgentEventStream`` drives it. Its :class:`~interpreters.driver.AnswerOrder` decides in
    which order the answers it waits for reach the core."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox: asyncio.Queue[Any] | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.interruptible: asyncio.Task[Any] | None = None
        self.cancelled_by_abort = False
        self.reading: asyncio.Future[Any] | None = None
        """A worker thread's read of the next event of a sync stream."""
        self.inline_tool: tuple[asyncio.Task[Any], int] | None = None
        """The run task and the id of a lone ``async def`` tool it awaits inline."""
        self.giving_up_inline = False

    def default_stream_fn(self) -> Any:
        return default_stream_fn()

    # -- the loop

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.inbox = inbox

        def on_abort() -> None:
            try:
                here = asyncio.get_running_loop() is loop
            except RuntimeError:
                here = False
            if here:  # aborted from user code on this loop: the wake-up goes before its next answer
                inbox.put_nowait(_WAKE)
                loop.call_soon(self.cancel_waits)
            else:
                loop.call_soon_threadsafe(self.wake_on_abort)

        remove = self.signal.add_callback(on_abort)
        try:
            if self.first is not None:
                self.feed(self.first)
            pending = self.pending
            while not self.finished:
                if not pending:
                    await self.wait_for_answer()
                    continue
                effect = pending.popleft()
                kind = type(effect)
                if kind is Emit:
                    yield effect.event  # type: ignore[union-attr]
                elif kind is CallLlm:
                    async for event in self.call_llm(effect):  # type: ignore[arg-type]
                        yield event
                elif kind is ExecuteTool:
                    await self.start_tool(effect)  # type: ignore[arg-type]
                elif kind is RunEnded:
                    self.end(effect)
                elif kind is not CancelLlm:  # a stream the core left behind was already closed
                    await self.call_hook(effect)
            self.raise_fatal()
        finally:
            remove()
            self.close()
            for task in self.tasks.values():
                task.cancel()

    def wake_on_abort(self) -> None:
        assert self.inbox is not None
        self.inbox.put_nowait(_WAKE)
        self.cancel_waits()

    def cancel_waits(self) -> None:
        """The abort ends a wait for the next stream event or a hook at once, and a lone tool
        awaited inline after ``abort_grace``. (If the run task is busy elsewhere, an async
        listener, the check before its next wait sees the signal instead.)"""
        task = self.interruptible
        if task is not None and not task.done():
            self.cancelled_by_abort = True
            task.cancel()
        inline = self.inline_tool
        if inline is not None:
            asyncio.get_running_loop().call_later(self.abort_grace, self.give_up_inline, inline[1])

    def give_up_inline(self, eid: int) -> None:
        inline = self.inline_tool
        if inline is not None and inline[1] == eid and not inline[0].done():
            self.giving_up_inline = True
            inline[0].cancel()

    async def next_answer(self) -> Any:
        """The next item to feed (an answer, or the abort wake-up), in the run's answer order,
        waiting for the inbox."""
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
        if item is _WAKE:
            self.feed_abort()
        elif self.accept(item):
            self.feed(item)

    def failed(self, exc: BaseException) -> str:
        """The text of a failure of user code (a fatal one also stops the run)."""
        if isinstance(exc, FATAL):
            self.stop_for(exc)
        return failure_text(exc)

    async def interruptibly(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """Call ``fn`` (awaited, or in a worker thread) so that an abort ends the wait at once:
        ``(False, None)`` when the run was aborted first, else ``(True, value or _Raised)``."""
        if self.signal.aborted:
            return False, None
        task = asyncio.current_task()
        assert task is not None
        future: asyncio.Future[Any] | None = None
        self.interruptible = task
        try:
            if _is_async(fn):
                try:
                    value = await fn(*args, **kwargs)
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:
                    value = _Raised(exc)
            else:
                future = asyncio.ensure_future(asyncio.to_thread(_boxed, fn, args, kwargs))
                value = await asyncio.shield(future)
                if inspect.isawaitable(value):  # a sync callable that returned a coroutine
                    try:
                        value = await value
                    except asyncio.CancelledError:
                        raise
                    except BaseException as exc:
                        value = _Raised(exc)
            return True, value
        except asyncio.CancelledError as exc:
            if not self.cancelled_by_abort:
                if task.cancelling() == 0:
                    return True, _Raised(exc)  # user code raised CancelledError itself
                raise
            task.uncancel()
            if future is not None:
                await asyncio.wait((future,), timeout=self.hook_grace)
                if future.done() and not future.cancelled():
                    answer = future.result()
                    if not inspect.isawaitable(answer):
                        return True, answer  # it answered as the abort landed: keep it
                    close = getattr(answer, "close", None)
                    if close is not None:
                        close()  # a coroutine it returned is not awaited any more
            return False, None
        finally:
            self.interruptible = None
            self.cancelled_by_abort = False

    # -- effects

    async def call_hook(self, effect: Effect) -> None:
        if self.ended:
            return  # the run ended (an abort) before this hook could be called
        id_ = getattr(effect, "id")
        call = hook_call(effect, self.config, self.registry, self.signal)
        live, value = await self.interruptibly(call.fn, *call.args, **call.kwargs)
        if live and type(value) is _Raised and isinstance(value.error, FATAL):
            self.stop_for(value.error)  # the run stops as aborted, then the exception goes on
            live = False
        if not live:
            self.feed_abort()
            return
        try:
            if type(value) is _Raised:
                raise value.error
            answer = call.answer(value, self.clock())
        except BaseException as exc:
            answer = HookFailed(id_, self.failed(exc), self.clock())
        self.feed(answer)

    async def api_key(self, effect: CallLlm) -> tuple[bool, str | None]:
        """The key of a model call: ``get_api_key`` wins over ``api_key``. ``(False, None)`` when
        the run was aborted meanwhile."""
        key = self.config.api_key
        get = self.config.get_api_key
        if get is not None:
            args, kwargs = with_signal(get, (effect.model.provider,), self.signal)
            live, value = await self.interruptibly(get, *args, **kwargs)
            if not live:
                return False, None
            if type(value) is _Raised:
                raise value.error
            key = value or key
        self.keys_used(effect.model.provider, key)
        return True, key

    async def call_llm(self, effect: CallLlm) -> AsyncIterator[AgentEvent]:
        signal = self.signal
        stream_fn = self.stream_fn
        if stream_fn is None and not signal.aborted:
            self.feed(StreamFailed(effect.id, NO_STREAM_FN.format(api=effect.model.api), self.clock()))
            return
        source: Any = None
        failure: str | None = None
        next_event: Any = None  # awaitable per event (async iterables, sync iterators in a thread)
        next_now: Any = None  # plain call per event (lists and tuples)
        try:
            try:
                live, api_key = (await self.api_key(effect)) if not signal.aborted else (False, None)
                live = live and not signal.aborted  # no model call starts after an abort
                if live:
                    assert stream_fn is not None
                    options = stream_options(effect, self.config, api_key, signal)
                    source = stream_fn(effect.model, llm_context(effect), options)
                    if inspect.isawaitable(source):
                        live, source = await self.interruptibly(_identity_await, source)
                        if type(source) is _Raised:
                            raise source.error
                if not live:
                    source = None
                elif hasattr(source, "__aiter__"):
                    source = source.__aiter__()
                    next_event = source.__anext__
                elif isinstance(source, (list, tuple)):
                    next_now = iter(source).__next__
                else:
                    sync_source = iter(source)
                    source = sync_source

                    async def next_in_thread() -> Any:  # the event, _END or what it raised
                        read = asyncio.ensure_future(asyncio.to_thread(_boxed, next, (sync_source, _END), {}))
                        self.reading = read
                        return await asyncio.shield(read)

                    next_event = next_in_thread
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError) and _really_cancelled():
                    raise
                failure = self.failed(exc)
            feed, clock, pending, items = self.driver.feed, self.clock, self.pending, StreamItems()
            task = asyncio.current_task()
            # Only the stream function's own failures become StreamFailed: an error while feeding
            # the core (a journal that cannot write) is the caller's and propagates.
            while (next_event is not None or next_now is not None) and not signal.aborted:
                if next_now is not None:
                    try:
                        event = next_now()
                    except StopIteration:
                        failure = STREAM_ENDED_TEXT
                        break
                else:
                    self.interruptible = task
                    try:
                        event = await next_event()
                    except StopAsyncIteration:
                        failure = STREAM_ENDED_TEXT
                        break
                    except asyncio.CancelledError as exc:
                        if not self.cancelled_by_abort:
                            if _really_cancelled():
                                raise
                            failure = self.failed(exc)  # the stream raised CancelledError itself
                            break
                        if task is not None:
                            task.uncancel()
                        read, self.reading = self.reading, None
                        if read is not None:  # what the stream raised as the abort landed still counts
                            await asyncio.wait((read,), timeout=self.hook_grace)
                            if read.done() and not read.cancelled():
                                raised = read.result()
                                if type(raised) is _Raised and isinstance(raised.error, FATAL):
                                    self.stop_for(raised.error)
                        break
                    except BaseException as exc:
                        failure = self.failed(exc)
                        break
                    finally:
                        self.interruptible = None
                        self.cancelled_by_abort = False
                    if event is _END:
                        failure = STREAM_ENDED_TEXT
                        break
                    if type(event) is _Raised:
                        failure = self.failed(event.error)
                        break
                if signal.aborted:
                    break
                event, problem = items.take(event)
                if problem is not None:
                    failure = problem
                    break
                over = False
                for out in feed(StreamEventReceived(effect.id, event, clock())):
                    if type(out) is Emit:
                        yield out.event
                    else:  # the reply is over: the core asks for what comes next
                        pending.append(out)
                        over = True
                if over:
                    return
        finally:
            aclose = getattr(source, "aclose", None)
            close = getattr(source, "close", None)
            try:
                if aclose is not None:
                    await aclose()
                elif close is not None:
                    close()
            except BaseException as exc:
                if isinstance(exc, FATAL):
                    self.stop_for(exc)  # raised to the caller once the run has ended
        if failure is not None and not signal.aborted:
            self.feed(StreamFailed(effect.id, failure, self.clock()))
            return
        self.feed_abort()

    async def start_tool(self, effect: ExecuteTool) -> None:
        self.order.tool_starting(self, effect)
        if self.ended:
            return
        signal = self.tool_started(effect)
        instead = self.aborted_before_start(effect)
        if instead is not None:
            assert self.inbox is not None
            self.inbox.put_nowait(instead)
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
        inbox, clock, eid = self.inbox, self.clock, effect.id
        assert inbox is not None
        loop = asyncio.get_running_loop()
        open_ = True

        def on_update(partial: Any) -> None:
            if not open_:
                return
            update = ToolUpdated(eid, partial, clock())
            try:
                running_loop = asyncio.get_running_loop()
            except RuntimeError:
                running_loop = None
            if running_loop is loop:
                inbox.put_nowait(update)
            else:
                loop.call_soon_threadsafe(inbox.put_nowait, update)

        if inline:
            task = asyncio.current_task()
            assert task is not None
            self.inline_tool = (task, eid)
        try:
            tool = tool_call(effect, self.registry)
            args = (effect.tool_call.id, thaw(effect.args), signal, on_update)
            scopes = tool_scopes(self.driver.journals, effect) if self.driver.journals else ()
            with ExitStack() as stack:
                for scope in scopes:
                    stack.enter_context(scope)
                value = await _call(tool.execute, *args)
            outcome: Input = ToolFinished(eid, tool_result(tool.name, value), clock())
        except asyncio.CancelledError as exc:
            if inline and self.giving_up_inline:  # the abort's grace period is over
                self.giving_up_inline = False
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                outcome = ToolFailed(eid, self.grace_text(), clock())
            elif _really_cancelled():
                if inline:
                    raise  # the caller's cancellation (wait_for, a task group...)
                outcome = ToolFailed(eid, "Tool execution was cancelled", clock())
            else:
                outcome = ToolFailed(eid, self.failed(exc), clock())  # the tool raised it itself
        except BaseException as exc:
            outcome = ToolFailed(eid, self.failed(exc), clock())
        finally:
            if inline:
                self.inline_tool = None
        open_ = False
        inbox.put_nowait(outcome)


async def _identity_await(value: Any) -> Any:
    return await value


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
    def signal(self) -> AbortSignal:
        """The run's signal (what hooks and tools are given)."""
        return self._run.signal


def agent_loop(
    prompts: str | AgentMessage | Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Start a run with ``prompts``; ``async for`` over the result for its events."""
    check_run_arguments(context, config, signal, stream_fn, "agent_loop")
    first = Started(prompt_messages(prompts, clock), clock())
    return AgentEventStream(AsyncRun(initial_state(context, config), context.tools, config, first, signal, stream_fn, journal, clock))


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Continue from ``context``; raises ``ValueError`` at once when it cannot be continued."""
    check_run_arguments(context, config, signal, stream_fn, "agent_loop_continue")
    return AgentEventStream(AsyncRun(initial_state(context, config), context.tools, config, Continued(clock()), signal, stream_fn, journal, clock))


async def _drain(stream: AgentEventStream, emit: Callable[..., Any]) -> list[AgentMessage]:
    signal = stream.signal
    fatal: BaseException | None = None
    async for event in stream:
        try:
            args, kwargs = with_signal(emit, (event,), signal)
            outcome = emit(*args, **kwargs)
            if inspect.isawaitable(outcome):
                await outcome
        except FATAL as exc:  # the listener's Ctrl-C or exit: abort, let the run end, then raise
            if fatal is None:
                fatal = exc
                signal.abort(f"{type(exc).__name__} in a listener")
        except asyncio.CancelledError:
            raise
        except BaseException:
            _log.exception("listener %r raised on %s; the run goes on", emit, event.type)
    messages = await stream.result()
    if fatal is not None:
        raise fatal
    return messages


async def run_agent_loop(
    prompts: str | AgentMessage | Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """Run to the end, giving each event to ``emit`` (sync or async); returns the new messages."""
    return await _drain(agent_loop(prompts, context, config, signal, stream_fn, journal=journal, clock=clock), emit)


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """:func:`run_agent_loop` for a continue."""
    return await _drain(agent_loop_continue(context, config, signal, stream_fn, journal=journal, clock=clock), emit)
