"""Model calls and tool runs as both runners carry them out, all but the I/O: :class:`ModelCall`
(one ``CallLlm``: its options, feeding each stream event, its end) and :class:`ToolRun` (one
``ExecuteTool``: the tool, its arguments, progress, scopes and outcome)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import Any, Final

from agentcore import (
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    CallLlm,
    DoneEvent,
    Emit,
    ErrorEvent,
    ExecuteTool,
    Input,
    LlmContext,
    PartialAssistantMessage,
    StreamEventReceived,
    StreamFailed,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
    ToolFailed,
    ToolFinished,
    ToolUpdated,
    stream_event_problem,
    thaw,
)
from agentcore.codec import PartialFold
from agentcore.texts import STREAM_ENDED_TEXT

from ..signal import AbortSignal
from .journal import tool_scopes
from .run import END, Run, nothing

__all__ = [
    "NO_STREAM_FN",
    "ModelCall",
    "ToolRun",
    "llm_context",
    "stream_options",
    "stream_start_timeout_text",
    "tool_call",
    "tool_result",
]

_DELTA_TYPES: Final = frozenset({TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent})


NO_STREAM_FN: Final = (
    "No stream_fn was given and no HTTP provider is available for api {api!r}. Pass stream_fn "
    "(for example interpreters.ScriptedModel) or use a model from agentcore.providers."
)


class ModelCall:
    """One model call (``CallLlm``) as both runners carry it out, all but reading the stream.

    A runner checks :attr:`may_start`, resolves the key, :meth:`open` s the stream, and gives
    each item it reads to :meth:`received` (which feeds the core), then :data:`END`; what goes
    wrong is kept (:meth:`fail`) and, once the stream is closed, :meth:`end` feeds it, or the
    abort. An item that is not a stream event never reaches the core (a transcript could not
    hold it); an event whose partial is an ``AssistantMessage`` (pi-ai style) reaches it with
    the library's partial, folded from the events' own fields, so that a transcript reproduces
    exactly what the core read.

    An abort while the stream is open is fed as one that waits for the stream
    (``AbortRequested(wait_for_stream=True)``): the runner reads on until the stream's final
    event, which is fed (the core makes it the aborted reply), dropping any other, for
    :attr:`Run.stream_grace` seconds (:meth:`reads_on`); past that, or when the stream ends
    otherwise, :meth:`end` feeds ``StreamFailed`` and the core closes the reply itself."""

    __slots__ = ("run", "effect", "id", "signal", "failure", "over", "fold", "feed_core", "clock", "pending",
                 "opened", "waiting", "deadline", "start_timeout_ms", "stream_signal", "unlink", "source", "read",
                 "awaited")

    def __init__(self, run: Run, effect: CallLlm) -> None:
        self.run = run
        self.effect = effect
        self.id = effect.id
        self.signal = run.signal
        self.failure: str | None = None if run.stream_fn is not None else NO_STREAM_FN.format(api=effect.model.api)
        self.over = False
        self.fold: PartialFold | None = None
        # Only the stream function's own failures become StreamFailed: an error while feeding
        # the core (a journal that cannot write) is the caller's and propagates.
        self.feed_core, self.clock, self.pending = run.driver.feed, run.clock, run.pending
        self.opened = False
        """The runner has the stream to read (set by it): there is a stream to read on after
        an abort."""
        self.waiting = False
        """The abort was fed as one that waits for the stream's final event."""
        self.deadline: float | None = None
        """After an abort, the ``time.monotonic()`` until which the stream is read on."""
        ms = run.config.stream_start_timeout_ms
        self.start_timeout_ms: int | None = ms or None
        """The time the stream has to give its first item (``stream_start_timeout_ms``)."""
        self.stream_signal = self.signal
        """The signal the stream function gets: the run's, or, with a start timeout, its own
        (following the run's), aborted when the stream does not start in time."""
        self.unlink: Callable[[], None] = nothing
        self.source: Any = None
        """What the runner closes once the reply is over (the stream it opened)."""
        self.read: Callable[[], Any] = _no_stream
        """How the runner reads the stream's next item (set by the runner that opened it)."""
        self.awaited = False
        """Whether :attr:`read` gives an awaitable (the asyncio runner)."""
        if ms:
            own = self.stream_signal = AbortSignal()
            run_signal = self.signal
            self.unlink = run_signal.add_callback(lambda: own.abort(run_signal.reason))

    @property
    def may_start(self) -> bool:
        """There is a stream function, nothing failed, no abort (no model call starts after one)."""
        return self.failure is None and not self.signal.aborted

    def open(self, api_key: str | None) -> Any:
        """Call the stream function: what it returns (events, as the runner can read them)."""
        run, effect = self.run, self.effect
        options = stream_options(effect, run.config, api_key, self.stream_signal)
        return run.stream_fn(effect.model, llm_context(effect), options)

    def start_timed_out(self) -> None:
        """The stream gave no item within its start timeout: it is told to stop (its own
        signal) and left; the reply ends with the timeout's error."""
        ms = self.start_timeout_ms
        self.failure = stream_start_timeout_text(ms or 0)
        self.stream_signal.abort(f"the stream did not start within {ms} ms")

    def may_wait(self) -> bool:
        """After an abort, whether the stream is to be read on for its final event: it is
        open, the run has a grace period for it and the abort was not fed another way."""
        return self.waiting or (self.opened and self.run.stream_grace > 0 and not self.run.abort_fed)

    def grace_deadline(self) -> float:
        """The ``time.monotonic()`` until which the stream is read on after the abort (set the
        first time it is asked for: when the runner sees the abort)."""
        if self.deadline is None:
            self.deadline = time.monotonic() + self.run.stream_grace
        return self.deadline

    def reads_on(self) -> bool:
        """The abort fired: whether to go on reading the stream for its final event. The first
        time, the abort is fed as one that waits for it; ``False`` once the grace period is
        over (or when there is none)."""
        if not self.waiting:
            if not self.may_wait():
                return False
            deadline = self.grace_deadline()
            self.waiting = True
            self.run.feed_abort(wait_for_stream=True)
        else:
            deadline = self.grace_deadline()
        return time.monotonic() < deadline

    def may_read(self) -> bool:
        """Whether to read the stream's next item: no abort, or the stream is read on for its
        final event (checked before each read: a wait that has begun ends only when the abort
        cancels it, which misses an abort given while the runner was elsewhere)."""
        return not self.signal.aborted or self.reads_on()

    def grace_text(self) -> str:
        return f"the stream did not end within {self.run.stream_grace:g} s of the abort"

    def fail(self, exc: BaseException) -> None:
        """The stream function raised ``exc`` (calling it, or reading it)."""
        self.failure = self.run.failed(exc)

    def received(self, event: Any) -> Sequence[Any] | None:
        """Feed one item of the stream: the ``Emit`` s to give now (:attr:`over` once the reply
        is over), or ``None`` to drop the stream (an abort, its end, an item that is not a stream
        event).
        The common case, a delta carrying the library's partial, costs two lookups."""
        if self.signal.aborted:
            if not self.waiting and not self.reads_on():
                return None
            return self.received_after_abort(event)
        if type(event) not in _DELTA_TYPES or type(event.partial) is not PartialAssistantMessage:
            if event is END:  # without done or error
                self.failure = STREAM_ENDED_TEXT
                return None
            problem = stream_event_problem(event)
            if problem is not None:
                self.failure = problem
                return None
            if type(getattr(event, "partial", None)) is AssistantMessage:
                if self.fold is None:
                    self.fold = PartialFold()
                event = self.fold.adopt(event)
        return self.took(self.feed_core(StreamEventReceived(self.id, event, self.clock())))

    def took(self, effects: Sequence[Any]) -> Sequence[Any]:
        """What the core gave for a stream event: the ``Emit`` s to give now; anything else
        means the reply is over (:attr:`over`) and goes to the run's pending effects."""
        for out in effects:
            if type(out) is not Emit:
                break
        else:
            return effects
        self.over = True  # the reply is over: the core asks for what comes next
        emits = []
        for out in effects:
            if type(out) is Emit:
                emits.append(out)
            else:
                self.pending.append(out)
        return emits

    def received_after_abort(self, event: Any) -> Sequence[Any] | None:
        """An item read after the abort (fed as one that waits for the stream): its final
        event is fed, even a little past the grace period (it was read); any other item is
        dropped, ``()`` to read on, ``None`` once the grace period is over."""
        kind = type(event)
        if kind is DoneEvent or kind is ErrorEvent:
            problem = stream_event_problem(event)
            if problem is not None:
                self.failure = problem
                return None
            return self.took(self.feed_core(StreamEventReceived(self.id, event, self.clock())))
        if event is END:
            self.failure = STREAM_ENDED_TEXT
            return None
        return () if time.monotonic() < self.grace_deadline() else None

    def end(self) -> None:
        """The stream is closed: feed its failure, else the abort (nothing once it is over).
        After an abort that waited for the stream, ``StreamFailed`` says why its final event
        did not come (the core then closes the reply itself)."""
        self.unlink()
        if self.over:
            return
        run = self.run
        if self.signal.aborted or run.abort_fed:
            if self.may_wait():
                if not self.waiting:  # the abort landed as the stream ended or was left
                    self.waiting = True
                    run.feed_abort(wait_for_stream=True)
                run.feed(StreamFailed(self.id, self.failure or self.grace_text(), self.clock()))
            else:
                run.feed_abort()
            return
        if self.failure is not None:
            run.feed(StreamFailed(self.id, self.failure, self.clock()))
            return
        run.feed_abort()


class ToolRun:
    """One tool call as both runners carry it out, wherever it runs: the tool and its
    arguments, its progress (:meth:`on_update`, posted while the call is open), the journals'
    scopes around it, and its outcome (posted by :meth:`close`)."""

    __slots__ = ("run", "effect", "id", "signal", "open", "clock", "post")

    def __init__(self, run: Run, effect: ExecuteTool, signal: AbortSignal) -> None:
        self.run = run
        self.effect = effect
        self.id = effect.id
        self.signal = signal
        self.open = True
        self.clock = run.clock
        self.post = run.post

    def on_update(self, partial: Any) -> None:
        if self.open:
            self.post(ToolUpdated(self.id, partial, self.clock()))

    def call(self) -> tuple[AgentTool, tuple[Any, ...]]:
        """The tool and the arguments of its ``execute`` (``LookupError`` without one)."""
        effect = self.effect
        tool = tool_call(effect, self.run.registry)
        return tool, (effect.tool_call.id, thaw(effect.args), self.signal, self.on_update)

    def scope(self) -> AbstractContextManager[Any]:
        """The context managers the journals want around the execution, as one."""
        journals = self.run.driver.journals
        if not journals:
            return _NO_SCOPE
        stack = ExitStack()
        try:
            for scope in tool_scopes(journals, self.effect):
                stack.enter_context(scope)
        except BaseException:
            stack.close()
            raise
        return stack

    def finished(self, tool: AgentTool, value: Any) -> Input:
        return ToolFinished(self.id, tool_result(tool.name, value), self.clock())

    def failed(self, exc: BaseException) -> Input:
        """A tool must never take the run down: what it raised is an error result."""
        return ToolFailed(self.id, self.run.failed(exc), self.clock())

    def close(self, outcome: Input) -> None:
        """Post the outcome; progress reported after it is dropped."""
        self.open = False
        self.post(outcome)


_NO_SCOPE: Final = nullcontext()


def _no_stream() -> Any:
    return END


def stream_start_timeout_text(ms: int) -> str:
    """The ``error_message`` of a reply whose stream did not start in time.

    >>> stream_start_timeout_text(250)
    'Model call timed out: the stream gave no event within 250 ms (stream_start_timeout_ms=250)'
    """
    return f"Model call timed out: the stream gave no event within {ms} ms (stream_start_timeout_ms={ms})"


def tool_result(name: str, value: Any) -> AgentToolResult:
    """Check what a tool's ``execute`` returned (a plain string is accepted as text)."""
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, str):
        return AgentToolResult((TextContent(value),))
    raise TypeError(f"tool {name} returned {type(value).__name__}, expected AgentToolResult")


def tool_call(effect: ExecuteTool, registry: dict[str, AgentTool]) -> AgentTool:
    """The tool an ``ExecuteTool`` effect names."""
    tool = registry.get(effect.tool_call.name)
    if tool is None:
        raise LookupError(f"Tool {effect.tool_call.name} has no implementation in this run")
    return tool


def stream_options(effect: CallLlm, config: AgentLoopConfig, api_key: str | None, signal: Any) -> StreamOptions:
    """The options of one model call: the config's, the turn's thinking level, the resolved key."""
    return StreamOptions(
        thinking_level=effect.thinking_level,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        cache_retention=config.cache_retention,
        session_id=config.session_id,
        headers=config.headers,
        metadata=config.metadata,
        thinking_budgets=config.thinking_budgets,
        max_retry_delay_ms=config.max_retry_delay_ms,
        transport=config.transport,
        api_key=api_key,
        signal=signal,
        on_payload=config.on_payload,
        on_response=config.on_response,
    )


def llm_context(effect: CallLlm) -> LlmContext:
    return LlmContext(effect.system_prompt, effect.messages, effect.tools)
