"""The run of the asyncio interpreter (:class:`AsyncRun`): the same loop as :mod:`interpreters.sync`, awaited.

The twin of :mod:`interpreters.runtime.threads`, line for line: what a run decides is shared
(:class:`~interpreters.runtime.run.Run`, :func:`~interpreters.runtime.steps.model_call`); the
I/O primitives are its :class:`~interpreters.runtime.task_waits.TaskWaits`: one ``asyncio.Queue``
inbox, ``async def`` user code awaited in the run's task and sync code on worker threads, tools
as tasks, and an abort that cancels the wait the run is in. ``KeyboardInterrupt``
or ``SystemExit`` from user code aborts the run, then reaches the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

from agentcore import AgentEvent, AgentMessage, CallLlm, Effect, Emit, ExecuteTool

from ..signal import AbortSignal
from .calls import ModelCall, ToolRun
from .hooks import HookCall, Returned
from .run import WAIT, Run
from .steps import EventStream, Last, OpenStream, model_call
from .task_waits import TaskWaits

__all__ = ["AgentEventStream", "AsyncRun", "default_stream_fn"]


def default_stream_fn() -> Callable[..., Any] | None:
    try:
        from ..streams.http import astream_http
    except ImportError:
        return None
    return astream_http


class AsyncRun(Run):
    """One run of the loop under this interpreter: a :class:`~interpreters.runtime.run.Run` that
    carries the core's effects out with its :attr:`waits` (tasks); ``AgentEventStream``
    drives it. The twin of :class:`interpreters.runtime.threads.SyncRun`, method for method."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waits = TaskWaits(self)

    def default_stream_fn(self) -> Any:
        return default_stream_fn()

    # -- the loop

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        remove = self.waits.listen(self.signal)
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

    def post(self, item: Any) -> None:
        self.waits.post(item)

    def close(self) -> None:
        super().close()
        self.waits.close()

    async def next_answer(self, timeout: float | None = None) -> Any:
        """The next item to feed (an answer, or the abort wake-up), in the run's answer order,
        waiting for the inbox at most ``timeout`` seconds (then ``TimeoutError``)."""
        order, get = self.order, self.waits.get
        item = order.due(self)
        deadline = None if timeout is None else time.monotonic() + timeout
        while item is WAIT:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            item = order.arrived(self, await get(left))
        return item

    async def wait_for_answer(self) -> None:
        try:
            item = await self.next_answer(self.wait_limit())
        except TimeoutError:
            for id_ in self.waited_too_long():  # timed out: stop waiting for them too
                self.waits.cancel_tool(id_)
            return
        self.take(item)

    async def interruptibly(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Returned | None:
        """Call ``fn`` and wait for it or for the abort: ``None`` when the run was aborted first
        (what it gives is dropped then, unless it answers within ``hook_grace``)."""
        if self.signal.aborted:
            return None
        return await self.waits.call(fn, args, kwargs)

    # -- effects

    async def call_hook(self, effect: Effect) -> None:
        call = self.hook_of(effect)
        if call is not None:
            self.hook_returned(effect, call, await self.interruptibly(call.fn, *call.args, **call.kwargs))

    async def call_llm(self, effect: CallLlm) -> AsyncIterator[AgentEvent]:
        call = ModelCall(self, effect)
        steps = model_call(self, call)
        reply: Any = None
        try:
            while True:
                step = steps.send(reply)
                reply = None
                if type(step) is tuple:
                    for out in step:
                        yield out.event
                    if call.awaited:
                        reply = await self.waits.read(call)
                elif type(step) is Last:
                    for out in step.emits:
                        yield out.event
                elif type(step) is OpenStream:
                    reply = await self.waits.open(call, step.api_key)
                else:
                    assert type(step) is HookCall
                    reply = await self.interruptibly(step.fn, *step.args, **step.kwargs)
        except StopIteration:
            pass
        finally:
            await self.waits.close_stream(call.source)
        call.end()

    async def start_tool(self, effect: ExecuteTool) -> None:
        signal = self.tool_starts(effect)
        if signal is None:
            return
        if self.runs_inline(effect):
            await self.run_tool(effect, signal, inline=True)  # its outcome is in the inbox when this returns
            return
        self.waits.spawn(effect.id, self.run_tool, effect, signal)

    def runs_inline(self, effect: ExecuteTool) -> bool:
        """A lone call that cannot report progress runs in the run's own thread or task when it
        can (``waits.inline_ok``): a hand-off would only add latency."""
        tool = self.quiet_lone_tool(effect)
        return tool is not None and self.waits.inline_ok(tool.execute)

    async def run_tool(self, effect: ExecuteTool, signal: AbortSignal, inline: bool = False) -> None:
        """On its own (or inline): run the tool, post its updates and outcome to the inbox."""
        job = ToolRun(self, effect, signal)
        self.waits.inline_tool(effect.id, inline)
        try:
            tool, args = job.call()
            with job.scope():
                value = await self.waits.execute(tool.execute, args)
            outcome = job.finished(tool, value)
        except asyncio.CancelledError as exc:  # inline, the caller's cancellation (wait_for...) goes on
            outcome = self.waits.tool_cancelled(job, exc, inline)
        except BaseException as exc:
            outcome = job.failed(exc)
        finally:
            self.waits.inline_tool(effect.id, False)
        job.close(outcome)


class AgentEventStream(EventStream, AsyncIterator[AgentEvent]):
    """The events of a run, as they happen. ``await result()`` runs it to the end and returns
    the messages the run added."""

    def __init__(self, run: AsyncRun) -> None:
        super().__init__(run, run.events())

    def __aiter__(self) -> AgentEventStream:
        return self

    async def __anext__(self) -> AgentEvent:
        return await self._events.__anext__()  # type: ignore[no-any-return]

    async def result(self) -> list[AgentMessage]:
        async for _ in self._events:
            pass
        return self.messages()

    async def aclose(self) -> None:
        """Stop the run where it is (its tool tasks are cancelled)."""
        await self._events.aclose()
