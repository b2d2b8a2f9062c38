"""The run of the sync interpreter (:class:`SyncRun`): the loop in the caller's thread, tools and
hooks on worker threads.

The twin of :mod:`interpreters.runtime.tasks`, line for line: what a run decides is shared
(:class:`~interpreters.runtime.run.Run`, :func:`~interpreters.runtime.steps.model_call`); the
I/O primitives are its :class:`~interpreters.runtime.thread_waits.ThreadWaits`: one inbox that tool
threads and the abort signal write to, hooks on a worker thread waited for or the abort, the
stream read inline, tools inline when alone and quiet, else on the pool. ``KeyboardInterrupt``
or ``SystemExit`` from user code aborts the run, then reaches the caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from agentcore import AgentEvent, AgentMessage, CallLlm, Effect, Emit, ExecuteTool

from ..signal import AbortSignal
from .calls import ModelCall, ToolRun
from .hooks import HookCall, Returned
from .run import WAIT, Run
from .steps import EventStream, Last, OpenStream, model_call
from .thread_waits import ThreadWaits, run_sync

__all__ = ["AgentEventStream", "StreamFn", "SyncRun", "default_stream_fn"]

StreamFn = Callable[..., Iterable[Any]]
"""``stream_fn(model, context, options)`` → an iterable of stream events."""


def default_stream_fn() -> Callable[..., Any] | None:
    try:
        from ..streams.http import stream_http
    except ImportError:
        return None
    return stream_http


class SyncRun(Run):
    """One run of the loop under this interpreter: a :class:`~interpreters.runtime.run.Run` that
    carries the core's effects out with its :attr:`waits` (threads); ``AgentEventStream``
    drives it. The twin of :class:`interpreters.runtime.tasks.AsyncRun`, method for method."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waits = ThreadWaits(self)

    def default_stream_fn(self) -> Any:
        return default_stream_fn()

    # -- the loop

    def events(self) -> Generator[AgentEvent, None, None]:
        remove = self.waits.listen(self.signal)
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

    def post(self, item: Any) -> None:
        self.waits.inbox.put(item)

    def close(self) -> None:
        super().close()
        self.waits.close()

    def next_answer(self, timeout: float | None = None) -> Any:
        """The next item to feed (an answer, or the abort wake-up), in the run's answer order,
        waiting for the inbox at most ``timeout`` seconds (then ``TimeoutError``)."""
        order, get = self.order, self.waits.get
        item = order.due(self)
        deadline = None if timeout is None else time.monotonic() + timeout
        while item is WAIT:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            item = order.arrived(self, get(left))
        return item

    def wait_for_answer(self) -> None:
        try:
            item = self.next_answer(self.wait_limit())
        except TimeoutError:
            for id_ in self.waited_too_long():  # timed out: stop waiting for them too
                self.waits.cancel_tool(id_)
            return
        self.take(item)

    def interruptibly(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Returned | None:
        """Call ``fn`` and wait for it or for the abort: ``None`` when the run was aborted first
        (what it gives is dropped then, unless it answers within ``hook_grace``)."""
        if self.signal.aborted:
            return None
        return self.waits.call(fn, args, kwargs)

    # -- effects

    def call_hook(self, effect: Effect) -> None:
        call = self.hook_of(effect)
        if call is not None:
            self.hook_returned(effect, call, self.interruptibly(call.fn, *call.args, **call.kwargs))

    def call_llm(self, effect: CallLlm) -> Iterator[AgentEvent]:
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
                elif type(step) is Last:
                    for out in step.emits:
                        yield out.event
                elif type(step) is OpenStream:
                    reply = self.waits.open(call, step.api_key)
                else:
                    assert type(step) is HookCall
                    reply = self.interruptibly(step.fn, *step.args, **step.kwargs)
        except StopIteration:
            pass
        finally:
            self.waits.close_stream(call.source)
        call.end()

    def start_tool(self, effect: ExecuteTool) -> None:
        signal = self.tool_starts(effect)
        if signal is None:
            return
        if self.runs_inline(effect):
            self.run_tool(effect, signal)  # its outcome is in the inbox when this returns
            return
        self.waits.spawn(effect.id, self.run_tool, effect, signal)

    def runs_inline(self, effect: ExecuteTool) -> bool:
        """A lone call that cannot report progress runs in the run's own thread or task when it
        can (``waits.inline_ok``): a hand-off would only add latency."""
        tool = self.quiet_lone_tool(effect)
        return tool is not None and self.waits.inline_ok(tool.execute)

    def run_tool(self, effect: ExecuteTool, signal: AbortSignal) -> None:
        """On its own (or inline): run the tool, post its updates and outcome to the inbox."""
        job = ToolRun(self, effect, signal)
        try:
            tool, args = job.call()
            with job.scope():
                value = run_sync(tool.execute(*args))
            outcome = job.finished(tool, value)
        except BaseException as exc:
            outcome = job.failed(exc)
        job.close(outcome)


class AgentEventStream(EventStream, Iterator[AgentEvent]):
    """The events of a run, as they happen. ``result()`` runs it to the end and returns
    the messages the run added."""

    def __init__(self, run: SyncRun) -> None:
        super().__init__(run, run.events())

    def __iter__(self) -> AgentEventStream:
        return self

    def __next__(self) -> AgentEvent:
        return next(self._events)  # type: ignore[no-any-return]

    def result(self) -> list[AgentMessage]:
        for _ in self._events:
            pass
        return self.messages()

    def close(self) -> None:
        """Stop the run where it is (its tool threads are not waited for)."""
        self._events.close()
