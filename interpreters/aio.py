"""The asyncio interpreter: the same loop as :mod:`interpreters.sync`, awaited.

Kept parallel to the sync interpreter, method for method. The differences are only in how
things are called and waited for:

- ``async def`` hooks, tools and stream functions are awaited in the run's task; sync ones run in
  worker threads (``asyncio.to_thread``) so they never block the event loop.
- A stream function may return an async iterable, a sync iterable (iterated in a worker thread),
  or an awaitable of either.
- Parallel tool calls run as tasks; every answer goes through one ``asyncio.Queue`` inbox.
- An abort while a reply streams cancels the wait for the next stream event at once, even when
  the stream function is blocked on the network; the core then closes the message as ``aborted``.
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
    DoneEvent,
    Effect,
    Emit,
    ErrorEvent,
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

from .driver import (
    Run,
    Journals,
    failure_text,
    hook_call,
    llm_context,
    now_ms,
    stream_options,
    tool_call,
    tool_result,
    tool_scopes,
)
from .signal import AbortSignal
from .sync import _NO_STREAM_FN, _prompts

__all__ = [
    "AgentEventStream",
    "agent_loop",
    "agent_loop_continue",
    "run_agent_loop",
    "run_agent_loop_continue",
]

_log = logging.getLogger("agentcore")
_WAKE = object()
_END = object()


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Await an ``async def`` callable in this task; run a sync one in a worker thread."""
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):
        return await fn(*args)
    value = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(value):
        value = await value
    return value


def default_stream_fn() -> Callable[..., Any] | None:
    try:
        from .http import astream_http
    except ImportError:
        return None
    return astream_http


async def _next_in_thread(iterator: Any) -> Any:
    return await asyncio.to_thread(next, iterator, _END)


class _AsyncRun(Run):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox: asyncio.Queue[Any] | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.stream_task: asyncio.Task[Any] | None = None
        self.cancelled_by_abort = False
        self.awaiting_stream = False

    def default_stream_fn(self) -> Any:
        return default_stream_fn()

    # -- the loop

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.inbox = inbox

        def on_abort() -> None:
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
                if isinstance(effect, Emit):
                    yield effect.event
                elif isinstance(effect, CallLlm):
                    async for event in self.call_llm(effect):
                        yield event
                elif isinstance(effect, ExecuteTool):
                    await self.start_tool(effect)
                elif isinstance(effect, RunEnded):
                    self.finished = True
                    self.messages = effect.messages
                elif isinstance(effect, CancelLlm):
                    pass
                else:
                    await self.call_hook(effect)
        finally:
            remove()
            self.close()
            for task in self.tasks:
                task.cancel()

    def wake_on_abort(self) -> None:
        assert self.inbox is not None
        self.inbox.put_nowait(_WAKE)
        # Cancel only a wait for the next stream event: if the reader is busy elsewhere (an async
        # listener), the check before the next wait sees the signal instead.
        task = self.stream_task
        if task is not None and self.awaiting_stream and not task.done():
            self.cancelled_by_abort = True
            task.cancel()

    async def next_answer(self) -> Any:
        """The next item of the inbox (an answer, or the abort wake-up), waiting for it."""
        assert self.inbox is not None
        return await self.inbox.get()

    async def wait_for_answer(self) -> None:
        grace = self.grace_left()
        try:
            item = await (self.next_answer() if grace is None else asyncio.wait_for(self.next_answer(), grace))
        except asyncio.TimeoutError:
            self.give_up_on_tools()
            return
        if item is _WAKE:
            self.feed_abort()
        elif self.accept(item):
            self.feed(item)

    # -- effects

    async def call_hook(self, effect: Effect) -> None:
        if self.ended:
            return  # the run ended (an abort) before this hook could be called
        id_ = getattr(effect, "id")
        try:
            call = hook_call(effect, self.config, self.registry, self.signal)
            answer = call.answer(await _call(call.fn, *call.args), self.clock())
        except Exception as exc:
            answer = HookFailed(id_, failure_text(exc), self.clock())
        self.feed(answer)

    async def call_llm(self, effect: CallLlm) -> AsyncIterator[AgentEvent]:
        signal = self.signal
        if signal.aborted:
            self.feed_abort()
            return
        stream_fn = self.stream_fn
        if stream_fn is None:
            self.feed(StreamFailed(effect.id, _NO_STREAM_FN.format(api=effect.model.api), self.clock()))
            return
        source: Any = None
        failure: str | None = None
        next_event: Any = None
        try:
            try:
                api_key = self.config.api_key
                if self.config.get_api_key is not None:
                    api_key = (await _call(self.config.get_api_key, effect.model.provider)) or api_key
                options = stream_options(effect, self.config, api_key, signal)
                source = stream_fn(effect.model, llm_context(effect), options)
                if inspect.isawaitable(source):
                    source = await source
                if hasattr(source, "__aiter__"):
                    source = source.__aiter__()
                    next_event = source.__anext__
                else:
                    source = iter(source)
                    sync_source = source

                    async def next_in_thread() -> Any:
                        item = await _next_in_thread(sync_source)
                        if item is _END:
                            raise StopAsyncIteration
                        return item

                    next_event = next_in_thread
            except Exception as exc:
                failure = failure_text(exc)
            feed, clock, pending = self.driver.feed, self.clock, self.pending
            self.stream_task = asyncio.current_task()
            # Only the stream function's own failures become StreamFailed: an error while feeding
            # the core (a journal that cannot write) is the caller's and propagates.
            while next_event is not None and not signal.aborted:
                self.awaiting_stream = True
                try:
                    event = await next_event()
                except StopAsyncIteration:
                    failure = "The stream ended without a done or error event"
                    break
                except asyncio.CancelledError:
                    if not self.cancelled_by_abort:
                        raise
                    task = asyncio.current_task()
                    if task is not None:
                        task.uncancel()
                    break
                except Exception as exc:
                    failure = failure_text(exc)
                    break
                finally:
                    self.awaiting_stream = False
                if signal.aborted:
                    break
                for out in feed(StreamEventReceived(effect.id, event, clock())):
                    if type(out) is Emit:
                        yield out.event
                    else:
                        pending.append(out)
                if isinstance(event, (DoneEvent, ErrorEvent)):
                    return
        finally:
            self.stream_task = None
            self.cancelled_by_abort = False
            aclose = getattr(source, "aclose", None)
            close = getattr(source, "close", None)
            try:
                if aclose is not None:
                    await aclose()
                elif close is not None:
                    close()
            except BaseException:
                pass
        if failure is not None and not signal.aborted:
            self.feed(StreamFailed(effect.id, failure, self.clock()))
            return
        self.feed_abort()

    async def start_tool(self, effect: ExecuteTool) -> None:
        if self.ended:
            return
        self.running.add(effect.id)
        instead = self.aborted_before_start(effect)
        if instead is not None:
            assert self.inbox is not None
            self.inbox.put_nowait(instead)
            return
        if self.runs_inline(effect):
            await self.run_tool(effect, inline=True)  # its outcome is in the inbox when this returns
            return
        task = asyncio.ensure_future(self.run_tool(effect))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def runs_inline(self, effect: ExecuteTool) -> bool:
        """A lone ``async def`` call that cannot report progress is awaited in the run's task: a
        task of its own would only add scheduling latency."""
        tool = self.quiet_lone_tool(effect)
        return tool is not None and inspect.iscoroutinefunction(tool.execute)

    async def run_tool(self, effect: ExecuteTool, inline: bool = False) -> None:
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

        try:
            tool = tool_call(effect, self.registry)
            args = (effect.tool_call.id, thaw(effect.args), self.signal, on_update)
            scopes = tool_scopes(self.driver.journals, effect) if self.driver.journals else ()
            with ExitStack() as stack:
                for scope in scopes:
                    stack.enter_context(scope)
                value = await _call(tool.execute, *args)
            outcome: Input = ToolFinished(eid, tool_result(tool.name, value), clock())
        except asyncio.CancelledError:
            if inline:
                raise
            outcome = ToolFailed(eid, "Tool execution was cancelled", clock())
        except BaseException as exc:
            outcome = ToolFailed(eid, failure_text(exc), clock())
        open_ = False
        inbox.put_nowait(outcome)



class AgentEventStream(AsyncIterator[AgentEvent]):
    """The events of a run (async). ``await result()`` runs it to the end and returns the
    messages the run added."""

    def __init__(self, run: _AsyncRun) -> None:
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
    first = Started(_prompts(prompts, clock), clock())
    return AgentEventStream(_AsyncRun(initial_state(context, config), context.tools, config, first, signal, stream_fn, journal, clock))


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
    return AgentEventStream(_AsyncRun(initial_state(context, config), context.tools, config, Continued(clock()), signal, stream_fn, journal, clock))


async def _drain(stream: AgentEventStream, emit: Callable[[AgentEvent], Any]) -> list[AgentMessage]:
    async for event in stream:
        try:
            outcome = emit(event)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            _log.exception("listener %r raised on %s; the run goes on", emit, event.type)
    return await stream.result()


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
