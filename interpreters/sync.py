"""The sync interpreter: runs the loop in the caller's thread, tools and hooks on worker threads.

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
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any, Final

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
    deliver,
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
    "SyncRun",
    "StreamFn",
    "agent_loop",
    "agent_loop_continue",
    "run_agent_loop",
    "run_agent_loop_continue",
]

StreamFn = Callable[..., Iterable[Any]]
"""``stream_fn(model, context, options)`` → an iterable of stream events."""

_log = logging.getLogger("agentcore")
_WAKE = object()
ASYNC_STREAM_FN: Final = (
    "stream_fn returned {what}: it is an async stream function, which the sync interpreter cannot "
    "iterate. Run it with interpreters.aio.agent_loop (or interpreters.Agent), or give a stream "
    "function that returns an iterable of stream events."
)


def _run_sync(value: Any) -> Any:
    """Run an awaitable a sync caller was given (an ``async def`` hook or tool)."""
    if inspect.isawaitable(value):
        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


def default_stream_fn() -> StreamFn | None:
    try:
        from .http import stream_http
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


class _Returned:
    """What a call on a worker thread gave: its value, or the exception it raised."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = error


class SyncRun(Run):
    """One run of the loop under this interpreter: a :class:`~interpreters.driver.Run` that
    carries the core's effects out in the calling thread (tools inline or on worker threads);
    ``AgentEventStream`` drives it. Its :class:`~interpreters.driver.AnswerOrder` decides in
    which order the answers it waits for reach the core."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def default_stream_fn(self) -> Any:
        return default_stream_fn()

    # -- the loop

    def events(self) -> Generator[AgentEvent, None, None]:
        remove = self.signal.add_callback(lambda: self.inbox.put(_WAKE))
        try:
            if self.first is not None:
                self.feed(self.first)
            pending = self.pending
            while not self.finished:
                if not pending:
                    self.wait_for_answer()
                    continue
                effect = pending.popleft()
                kind = type(effect)
                if kind is Emit:
                    yield effect.event  # type: ignore[union-attr]
                elif kind is CallLlm:
                    yield from self.call_llm(effect)  # type: ignore[arg-type]
                elif kind is ExecuteTool:
                    self.start_tool(effect)  # type: ignore[arg-type]
                elif kind is RunEnded:
                    self.end(effect)
                elif kind is not CancelLlm:  # a stream the core left behind was already closed
                    self.call_hook(effect)
            self.raise_fatal()
        finally:
            remove()
            self.close()

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
        if item is _WAKE:
            self.feed_abort()
        elif self.accept(item):
            self.feed(item)

    def failed(self, exc: BaseException) -> str:
        """The text of a failure of user code (a fatal one also stops the run)."""
        if isinstance(exc, FATAL):
            self.stop_for(exc)
        return failure_text(exc)

    def off_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> _Returned | None:
        """Call ``fn`` on a worker thread and wait for it, or for the abort (``None``: the run was
        aborted first; the call is left behind and what it returns is dropped)."""
        if self.signal.aborted:
            return None
        box: queue.SimpleQueue[Any] = queue.SimpleQueue()

        def job() -> None:
            try:
                box.put(_Returned(_run_sync(fn(*args, **kwargs))))
            except BaseException as exc:
                box.put(_Returned(error=exc))

        remove = self.signal.add_callback(lambda: box.put(_WAKE))
        try:
            _tool_threads.submit(job)
            try:
                item = box.get()
            except FATAL as exc:  # Ctrl-C while waiting
                self.stop_for(exc)
                return None
        finally:
            remove()
        if item is _WAKE:
            try:
                item = box.get(timeout=self.hook_grace)
            except (queue.Empty, *FATAL):
                return None
        return None if item is _WAKE else item

    # -- effects

    def call_hook(self, effect: Effect) -> None:
        if self.ended:
            return  # the run ended (an abort) before this hook could be called
        id_ = getattr(effect, "id")
        call = hook_call(effect, self.config, self.registry, self.signal)
        returned = self.off_thread(call.call)
        if returned is None:
            self.feed_abort()
            return
        if isinstance(returned.error, FATAL):
            self.stop_for(returned.error)  # the run stops as aborted, then the exception goes on
            self.feed_abort()
            return
        try:
            if returned.error is not None:
                raise returned.error
            answer = call.answer(returned.value, self.clock())
        except BaseException as exc:
            answer = HookFailed(id_, self.failed(exc), self.clock())
        self.feed(answer)

    def api_key(self, effect: CallLlm) -> tuple[bool, str | None]:
        """The key of a model call: ``get_api_key`` (on a worker thread) wins over ``api_key``.
        ``(False, None)`` when the run was aborted meanwhile."""
        key = self.config.api_key
        get = self.config.get_api_key
        if get is not None:
            args, kwargs = with_signal(get, (effect.model.provider,), self.signal)
            returned = self.off_thread(get, *args, **kwargs)
            if returned is None:
                return False, None
            if returned.error is not None:
                raise returned.error
            key = returned.value or key
        self.keys_used(effect.model.provider, key)
        return True, key

    def call_llm(self, effect: CallLlm) -> Generator[AgentEvent, None, None]:
        signal = self.signal
        stream_fn = self.stream_fn
        if stream_fn is None and not signal.aborted:
            self.feed(StreamFailed(effect.id, NO_STREAM_FN.format(api=effect.model.api), self.clock()))
            return
        iterator: Iterator[Any] | None = None
        failure: str | None = None
        try:
            try:
                live, api_key = self.api_key(effect) if not signal.aborted else (False, None)
                if live and not signal.aborted:  # no model call starts after an abort
                    assert stream_fn is not None
                    options = stream_options(effect, self.config, api_key, signal)
                    iterator = _sync_iterator(stream_fn(effect.model, llm_context(effect), options))
            except _AsyncStreamFn as exc:
                failure = str(exc)
            except BaseException as exc:
                failure = self.failed(exc)
            feed, clock, pending, items = self.driver.feed, self.clock, self.pending, StreamItems()
            # Only the stream function's own failures become StreamFailed: an error while feeding
            # the core (a journal that cannot write) is the caller's and propagates.
            while iterator is not None:
                try:
                    event = next(iterator)
                except StopIteration:
                    failure = STREAM_ENDED_TEXT
                    break
                except BaseException as exc:
                    failure = self.failed(exc)
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
            close = getattr(iterator, "close", None)
            if close is not None:
                try:
                    close()
                except BaseException as exc:
                    if isinstance(exc, FATAL):
                        self.stop_for(exc)  # raised to the caller once the run has ended
        if failure is not None and not signal.aborted:
            self.feed(StreamFailed(effect.id, failure, self.clock()))
            return
        self.feed_abort()

    def start_tool(self, effect: ExecuteTool) -> None:
        self.order.tool_starting(self, effect)
        if self.ended:
            return
        signal = self.tool_started(effect)
        instead = self.aborted_before_start(effect)
        if instead is not None:
            self.inbox.put(instead)
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
        inbox, clock, eid = self.inbox, self.clock, effect.id
        open_ = True

        def on_update(partial: Any) -> None:
            if open_:
                inbox.put(ToolUpdated(eid, partial, clock()))

        try:
            tool = tool_call(effect, self.registry)
            scopes = tool_scopes(self.driver.journals, effect) if self.driver.journals else ()
            with ExitStack() as stack:
                for scope in scopes:
                    stack.enter_context(scope)
                value = _run_sync(tool.execute(effect.tool_call.id, thaw(effect.args), signal, on_update))
            outcome: Input = ToolFinished(eid, tool_result(tool.name, value), clock())
        except BaseException as exc:  # a tool must never take the run down
            outcome = ToolFailed(eid, self.failed(exc), clock())
        open_ = False
        inbox.put(outcome)


class _AsyncStreamFn(TypeError):
    """The stream function is an async one (refused by the sync interpreter)."""


def _sync_iterator(source: Any) -> Iterator[Any]:
    """The events of what a stream function returned, as a sync iterator."""
    if inspect.isawaitable(source) or (hasattr(source, "__aiter__") and not hasattr(source, "__iter__")):
        what = "a coroutine" if inspect.iscoroutine(source) else f"a {type(source).__name__} (an async iterable)"
        close = getattr(source, "close", None)
        if inspect.iscoroutine(source) and close is not None:
            close()  # never awaited: no "coroutine was never awaited" warning
        raise _AsyncStreamFn(ASYNC_STREAM_FN.format(what=what))
    return iter(source)


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
    def signal(self) -> AbortSignal:
        """The run's signal (what hooks and tools are given): aborted after an abort, or when
        the stream is closed before the run's end."""
        return self._run.signal


def agent_loop(
    prompts: str | AgentMessage | Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Start a run with ``prompts``; iterate the result for its events.

    >>> from agentcore import AgentContext, AgentLoopConfig, Model
    >>> from interpreters import ScriptedModel
    >>> stream = agent_loop("hi", AgentContext(), AgentLoopConfig(model=Model(id="m")),
    ...                     stream_fn=ScriptedModel(["Hello!"]))
    >>> [e.type for e in stream][:3]
    ['agent_start', 'turn_start', 'message_start']
    >>> stream.result()[-1].text
    'Hello!'
    """
    check_run_arguments(context, config, signal, stream_fn, "agent_loop")
    first = Started(prompt_messages(prompts, clock), clock())
    return AgentEventStream(SyncRun(initial_state(context, config), context.tools, config, first, signal, stream_fn, journal, clock))


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Continue from ``context`` (its last message must not be an assistant message).

    Raises ``ValueError`` at once, before any event, when the context cannot be continued.
    """
    check_run_arguments(context, config, signal, stream_fn, "agent_loop_continue")
    return AgentEventStream(SyncRun(initial_state(context, config), context.tools, config, Continued(clock()), signal, stream_fn, journal, clock))


def _check_emit(emit: Any, fn: str) -> None:
    if not callable(emit):
        raise TypeError(f"{fn}() argument 'emit' must be callable, not {type(emit).__name__!r}")
    if inspect.iscoroutinefunction(emit) or inspect.iscoroutinefunction(getattr(emit, "__call__", None)):
        raise TypeError(f"{fn}() argument 'emit' is an async function, which the sync interpreter cannot "
                        f"await: use interpreters.aio.{fn}, or a sync function")


def _drain(stream: AgentEventStream, emit: Callable[..., Any]) -> list[AgentMessage]:
    listeners, signal = (emit,), stream.signal
    fatal: BaseException | None = None
    for event in stream:
        try:
            deliver(listeners, event, signal)
        except FATAL as exc:  # the listener's Ctrl-C or exit: abort, let the run end, then raise
            if fatal is None:
                fatal = exc
                signal.abort(f"{type(exc).__name__} in a listener")
    messages = stream.result()
    if fatal is not None:
        raise fatal
    return messages


def run_agent_loop(
    prompts: str | AgentMessage | Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """Run to the end, giving each event to ``emit``; returns the new messages.

    An ``emit`` that raises is logged and the run goes on.
    """
    _check_emit(emit, "run_agent_loop")
    return _drain(agent_loop(prompts, context, config, signal, stream_fn, journal=journal, clock=clock), emit)


def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """:func:`run_agent_loop` for a continue."""
    _check_emit(emit, "run_agent_loop_continue")
    return _drain(agent_loop_continue(context, config, signal, stream_fn, journal=journal, clock=clock), emit)
