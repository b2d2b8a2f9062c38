"""The sync interpreter: runs the loop in the caller's thread, tools on a thread pool.

The run is a generator of agent events. It feeds the core, carries out each effect in order and,
when the core waits for tools, blocks on one inbox that every tool thread (results, progress
updates) and the abort signal write to. Inputs therefore reach the core one at a time, in the
order they happened, which is exactly what a transcript records.

- Hooks run inline, in the caller's thread (an ``async def`` hook is run to completion with
  ``asyncio.run``).
- The stream function is iterated inline; between two events the signal is checked, so an abort
  cuts the reply at once (the core closes the message as ``aborted``).
- Tool calls run on a process-wide pool of worker threads, so progress updates arrive while they
  run and parallel batches really run in parallel; a lone call to a tool that cannot report
  progress runs inline (a thread hand-off would only add latency). After an abort, running tools
  have ``abort_grace`` seconds to return before the run stops waiting for them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import ExitStack
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
    UserMessage,
    initial_state,
    thaw,
)

from .driver import (
    Run,
    Journals,
    deliver,
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

__all__ = [
    "AgentEventStream",
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
_NO_STREAM_FN = (
    "No stream_fn was given and no HTTP provider is available for api {api!r}. Pass stream_fn "
    "(for example interpreters.ScriptedModel) or use a model from agentcore.providers."
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
    """The process-wide worker threads tool calls run on: created on demand, reused when idle,
    kept warm between runs. Daemon threads, so a tool that never returns cannot keep the process
    from exiting."""

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
            except BaseException:  # run_tool reports every failure itself; this is a last resort
                _log.exception("tool thread job %r failed", fn)
            with self.lock:
                self.idle += 1


_tool_threads = _ToolThreads()


class _SyncRun(Run):
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
                if isinstance(effect, Emit):
                    yield effect.event
                elif isinstance(effect, CallLlm):
                    yield from self.call_llm(effect)
                elif isinstance(effect, ExecuteTool):
                    self.start_tool(effect)
                elif isinstance(effect, RunEnded):
                    self.finished = True
                    self.messages = effect.messages
                elif isinstance(effect, CancelLlm):
                    pass  # the stream was already left behind
                else:
                    self.call_hook(effect)
        finally:
            remove()
            self.close()

    def next_answer(self, timeout: float | None = None) -> Any:
        """The next item of the inbox (an answer, or the abort wake-up), waiting for it at most
        ``timeout`` seconds (then ``queue.Empty``)."""
        return self.inbox.get(timeout=timeout)

    def wait_for_answer(self) -> None:
        try:
            item = self.next_answer(self.grace_left())
        except queue.Empty:
            self.give_up_on_tools()
            return
        if item is _WAKE:
            self.feed_abort()
        elif self.accept(item):
            self.feed(item)

    # -- effects

    def call_hook(self, effect: Effect) -> None:
        if self.ended:
            return  # the run ended (an abort) before this hook could be called
        id_ = getattr(effect, "id")
        try:
            call = hook_call(effect, self.config, self.registry, self.signal)
            answer = call.answer(_run_sync(call.fn(*call.args)), self.clock())
        except Exception as exc:
            answer = HookFailed(id_, failure_text(exc), self.clock())
        self.feed(answer)

    def call_llm(self, effect: CallLlm) -> Generator[AgentEvent, None, None]:
        signal = self.signal
        if signal.aborted:
            self.feed_abort()
            return
        stream_fn = self.stream_fn
        if stream_fn is None:
            self.feed(StreamFailed(effect.id, _NO_STREAM_FN.format(api=effect.model.api), self.clock()))
            return
        iterator: Iterator[Any] | None = None
        failure: str | None = None
        try:
            try:
                api_key = self.config.api_key
                if self.config.get_api_key is not None:
                    api_key = _run_sync(self.config.get_api_key(effect.model.provider)) or api_key
                options = stream_options(effect, self.config, api_key, signal)
                iterator = iter(stream_fn(effect.model, llm_context(effect), options))
            except Exception as exc:
                failure = failure_text(exc)
            feed, clock, pending = self.driver.feed, self.clock, self.pending
            # Only the stream function's own failures become StreamFailed: an error while feeding
            # the core (a journal that cannot write) is the caller's and propagates.
            while iterator is not None:
                try:
                    event = next(iterator)
                except StopIteration:
                    failure = "The stream ended without a done or error event"
                    break
                except Exception as exc:
                    failure = failure_text(exc)
                    break
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
            close = getattr(iterator, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    pass
        if failure is not None and not signal.aborted:
            self.feed(StreamFailed(effect.id, failure, self.clock()))
            return
        self.feed_abort()

    def start_tool(self, effect: ExecuteTool) -> None:
        if self.ended:
            return
        self.running.add(effect.id)
        instead = self.aborted_before_start(effect)
        if instead is not None:
            self.inbox.put(instead)
            return
        if self.runs_inline(effect):
            self.run_tool(effect)  # its outcome is in the inbox when this returns
            return
        _tool_threads.submit(self.run_tool, effect)

    def runs_inline(self, effect: ExecuteTool) -> bool:
        """A lone sync call that cannot report progress runs in the caller's thread: a thread
        hand-off would only add latency. Parallel batches always use the pool."""
        tool = self.quiet_lone_tool(effect)
        return tool is not None and not inspect.iscoroutinefunction(tool.execute)

    def run_tool(self, effect: ExecuteTool) -> None:
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
                value = _run_sync(tool.execute(effect.tool_call.id, thaw(effect.args), self.signal, on_update))
            outcome: Input = ToolFinished(eid, tool_result(tool.name, value), clock())
        except BaseException as exc:  # a tool must never take the run down
            outcome = ToolFailed(eid, failure_text(exc), clock())
        open_ = False
        inbox.put(outcome)



class AgentEventStream(Iterator[AgentEvent]):
    """The events of a run, as they happen. ``result()`` runs it to the end and returns the
    messages the run added."""

    def __init__(self, run: _SyncRun) -> None:
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


def _prompts(prompts: str | AgentMessage | Sequence[AgentMessage], clock: Callable[[], int]) -> tuple[AgentMessage, ...]:
    if isinstance(prompts, str):
        return (UserMessage(prompts, timestamp=clock()),)
    if isinstance(prompts, (list, tuple)):
        return tuple(prompts)
    return (prompts,)


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
    first = Started(_prompts(prompts, clock), clock())
    return AgentEventStream(_SyncRun(initial_state(context, config), context.tools, config, first, signal, stream_fn, journal, clock))


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
    return AgentEventStream(_SyncRun(initial_state(context, config), context.tools, config, Continued(clock()), signal, stream_fn, journal, clock))


def _drain(stream: AgentEventStream, emit: Callable[[AgentEvent], Any]) -> list[AgentMessage]:
    listeners = (emit,)
    for event in stream:
        deliver(listeners, event)
    return stream.result()


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
    return _drain(agent_loop_continue(context, config, signal, stream_fn, journal=journal, clock=clock), emit)
