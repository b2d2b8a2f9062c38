"""The driver protocol shared by every interpreter.

An interpreter owns a :class:`Driver` (the core's state plus ``feed``) and carries out effects.
Everything that does not depend on *how* it waits (threads or asyncio) lives here, so the sync
and asyncio interpreters differ only in how they call things and wait for answers:

- :meth:`Driver.feed` steps the core, raises :class:`InterpreterError` on a rejection (that is a
  bug in the interpreter, never a user error) and reports each step to an optional journal.
- :func:`hook_call` maps a hook effect to the user's callable, its arguments, and the input that
  carries its answer back.
- :func:`tool_call` does the same for ``ExecuteTool``; :func:`stream_options` builds the options
  of a model call.
- :func:`failure_text` turns an exception into the text the model or the user will see.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeAlias

from pyrsistent import PVector, pvector

from agentcore import (
    ABORTED_TEXT,
    AbortRequested,
    AfterToolCall,
    AfterToolCallDecided,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    ArgumentsPrepared,
    BeforeToolCall,
    BeforeToolCallDecided,
    BeforeToolCallResult,
    CallLlm,
    ContextConverted,
    ContextTransformed,
    ConvertToLlm,
    Effect,
    ExecuteTool,
    FollowUpsPolled,
    Input,
    LlmContext,
    LoopState,
    NextTurn,
    NextTurnPrepared,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamOptions,
    TextContent,
    ToolFailed,
    ToolFinished,
    ToolSpec,
    ToolUpdated,
    TransformContext,
    thaw,
)
from agentcore.machine import Rejection, transition

from .signal import AbortSignal

__all__ = [
    "Driver",
    "HookCall",
    "InterpreterError",
    "Journal",
    "Journals",
    "Run",
    "observers",
    "tool_scopes",
    "failure_text",
    "hook_call",
    "now_ms",
    "stream_options",
    "tool_registry",
]

_log = logging.getLogger("agentcore")


class InterpreterError(RuntimeError):
    """The core rejected an input: the interpreter fed something out of protocol."""


class Journal(Protocol):
    """Observes a run: receives every step (the transcript recorder and the tracer implement it).

    An observer may also define ``tool_scope(effect) -> context manager``: the interpreter
    enters it around each tool execution, in the thread or task that runs the tool (this is how
    a tracer makes the tool's own spans children of its ``execute_tool`` span); and ``flush()``,
    called when the run's event stream closes (at its end, or abandoned before it).
    """

    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None: ...


Journals: TypeAlias = "Journal | Sequence[Journal] | None"
"""What ``journal=`` accepts: one observer, several, or none."""


def observers(journal: Journals) -> tuple[Journal, ...]:
    """``journal=`` as a tuple of observers."""
    if journal is None:
        return ()
    if isinstance(journal, (list, tuple)):
        return tuple(journal)
    return (journal,)  # type: ignore[return-value]


def tool_scopes(journals: Sequence[Journal], effect: ExecuteTool) -> list[Any]:
    """The context managers the observers want around one tool execution."""
    return [getattr(j, "tool_scope")(effect) for j in journals if hasattr(j, "tool_scope")]


def now_ms() -> int:
    """The wall clock in integer milliseconds (the time every input carries)."""
    return time.time_ns() // 1_000_000


class Driver:
    """The core's state and the one way to advance it."""

    __slots__ = ("state", "steps", "journals", "clock")

    def __init__(self, state: LoopState, journal: Journals = None, clock: Callable[[], int] = now_ms) -> None:
        self.state = state
        self.steps = 0
        self.journals = observers(journal)
        self.clock = clock

    @property
    def ended(self) -> bool:
        """True once the core has ended the run (any further input would be rejected)."""
        return self.state.phase.name == "finished"

    def feed(self, input: Input) -> tuple[Effect, ...]:
        out = transition(self.state, input)
        if type(out) is Rejection:
            raise InterpreterError(f"the core rejected an input: {out}")
        self.state, effects = out  # type: ignore[misc]
        self.steps += 1
        for journal in self.journals:
            journal.record(self.steps, input, effects)
        return effects


class Run:
    """What the sync and asyncio runners share: the driver, the effects still to carry out, and
    feeding (an abort that fired is always fed before the next input)."""

    def __init__(
        self,
        state: LoopState,
        tools: Sequence[Any],
        config: AgentLoopConfig,
        first: Input | None,
        signal: AbortSignal | None,
        stream_fn: Any,
        journal: Journals,
        clock: Callable[[], int],
        outstanding: Sequence[Effect] = (),
    ) -> None:
        """Run from ``state``: feed ``first``, or (resuming) carry out ``outstanding`` effects."""
        if first is not None:
            # Check the first input now, so that a bad continue raises before any event.
            out = transition(state, first)
            if type(out) is Rejection:
                raise ValueError(out.reason)
        self.config = config
        # The run's own signal: it follows the caller's, and also fires when the run is closed
        # before its end, so that tools and streams still running are told to stop.
        self.signal = AbortSignal()
        self.unlink: Callable[[], None] = (
            signal.add_callback(lambda: self.signal.abort(signal.reason)) if signal is not None else _nothing
        )
        self.stream_fn = stream_fn if stream_fn is not None else self.default_stream_fn()
        self.registry = tool_registry(tools)
        self.clock = clock
        self.driver = Driver(state, journal, clock)
        self.first = first
        self.pending: deque[Effect] = deque(outstanding)
        self.running: set[int] = set()
        self.abort_fed = False
        self.abort_deadline = 0.0
        self.finished = False
        self.messages: tuple[AgentMessage, ...] = ()

    abort_grace: float = 5.0
    """Seconds a running tool has, after an abort, to return before the run stops waiting for it
    (its result is then ``Operation aborted`` and a late answer is ignored)."""

    def default_stream_fn(self) -> Any:
        """The stream function used when none is given (the HTTP providers)."""
        return None

    def close(self) -> None:
        """The run's generator is closing: stop what still runs if the run did not end, and
        have the journals write what they hold (a run abandoned mid-stream is on disk now)."""
        self.unlink()
        if not self.finished:
            self.signal.abort("the run was closed before its end")
        for journal in self.driver.journals:
            flush = getattr(journal, "flush", None)
            if flush is not None:
                flush()

    @property
    def ended(self) -> bool:
        return self.finished or self.driver.ended

    def feed(self, input: Input) -> None:
        """Feed an answer; then, if the signal fired meanwhile, the abort. (The answer goes
        first: it is a fact that already happened, e.g. messages a hook took off a queue.)"""
        if self.ended:
            return
        self.pending.extend(self.driver.feed(input))
        if not self.abort_fed and self.signal.aborted:
            self.feed_abort()

    def feed_abort(self) -> None:
        if self.abort_fed or self.ended:
            return
        self.abort_fed = True
        self.abort_deadline = time.monotonic() + self.abort_grace
        self.pending.extend(self.driver.feed(AbortRequested(self.clock())))

    def accept(self, item: Any) -> bool:
        """Whether an answer from a tool still counts (it was not given up on)."""
        if isinstance(item, (ToolFinished, ToolFailed)):
            if item.id not in self.running:
                return False
            self.running.discard(item.id)
        elif isinstance(item, ToolUpdated) and item.id not in self.running:
            return False  # progress reported after the tool returned
        return True

    def grace_left(self) -> float | None:
        """Seconds left to wait for running tools after an abort (``None``: no limit now)."""
        if not self.abort_fed or not self.running:
            return None
        return max(0.0, self.abort_deadline - time.monotonic())

    def give_up_on_tools(self) -> None:
        """The abort's grace period is over: the tools still running get an aborted result."""
        text = f"{ABORTED_TEXT} (the tool did not stop within {self.abort_grace:g} s of the abort)"
        for id_ in sorted(self.running):
            self.running.discard(id_)
            self.feed(ToolFailed(id_, text, self.clock()))

    def aborted_before_start(self, effect: ExecuteTool) -> Input | None:
        """If the signal fired before a tool could start, the answer to give instead of running it."""
        if not self.signal.aborted:
            return None
        self.feed_abort()
        return ToolFailed(effect.id, ABORTED_TEXT, self.clock())

    def quiet_lone_tool(self, effect: ExecuteTool) -> AgentTool | None:
        """The tool of ``effect`` when it is the only call running and cannot report progress
        (runners may then run it without a hand-off to a thread or task)."""
        tool = self.registry.get(effect.tool_call.name)
        if (
            tool is None
            or getattr(tool.execute, "reports_progress", True) is not False
            or len(self.running) != 1
            or any(isinstance(e, ExecuteTool) for e in self.pending)
        ):
            return None
        return tool

    def result(self) -> list[AgentMessage]:
        return list(self.messages)


def _nothing() -> None:
    return None


def failure_text(exc: BaseException) -> str:
    """The message of an exception, or its type name when it has none."""
    text = str(exc)
    return text if text else type(exc).__name__


def tool_registry(tools: Sequence[AgentTool | ToolSpec]) -> dict[str, AgentTool]:
    """Name → tool for the tools that have an implementation (first declaration wins)."""
    registry: dict[str, AgentTool] = {}
    for tool in tools:
        if isinstance(tool, AgentTool):
            registry.setdefault(tool.name, tool)
    return registry


@dataclass(frozen=True, slots=True)
class HookCall:
    """How to carry out one hook effect: call ``fn(*args)`` and wrap the value with ``answer``."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    answer: Callable[[Any, int], Input]


def _messages(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"expected a list of messages, got {type(value).__name__}")
    return tuple(value)


def _history(value: Any) -> PVector[Any]:
    return value if isinstance(value, PVector) else pvector(_messages(value))


def _expect(kind: type, name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} returned {type(value).__name__}, expected {kind.__name__} or None")
        return value

    return check


def _user_context(ctx: AgentContext, registry: dict[str, AgentTool]) -> AgentContext:
    """The hook's view of the context: real tools instead of the core's specs."""
    tools = tuple(registry.get(t.name, t) for t in ctx.tools)
    return AgentContext(ctx.system_prompt, ctx.messages, tools)


def hook_call(
    effect: Effect, config: AgentLoopConfig, registry: dict[str, AgentTool], signal: Any
) -> HookCall:
    """The call that carries out a hook effect (everything but model calls and tool runs)."""
    if isinstance(effect, PollSteering):
        eid = effect.id
        return HookCall("get_steering_messages", config.get_steering_messages,  # type: ignore[arg-type]
                        (), lambda v, at: SteeringPolled(eid, _messages(v), at))
    if isinstance(effect, PollFollowUps):
        eid = effect.id
        return HookCall("get_follow_up_messages", config.get_follow_up_messages,  # type: ignore[arg-type]
                        (), lambda v, at: FollowUpsPolled(eid, _messages(v), at))
    if isinstance(effect, TransformContext):
        eid = effect.id
        return HookCall("transform_context", config.transform_context,  # type: ignore[arg-type]
                        (effect.messages, signal), lambda v, at: ContextTransformed(eid, _history(v), at))
    if isinstance(effect, ConvertToLlm):
        eid = effect.id
        return HookCall("convert_to_llm", config.convert_to_llm,  # type: ignore[arg-type]
                        (effect.messages,), lambda v, at: ContextConverted(eid, _history(v), at))
    if isinstance(effect, PrepareArguments):
        eid = effect.id
        tool = registry.get(effect.tool_call.name)
        fn = tool.prepare_arguments if tool is not None and tool.prepare_arguments else _identity
        return HookCall("prepare_arguments", fn, (thaw(effect.tool_call.arguments),),
                        lambda v, at: ArgumentsPrepared(eid, v, at))
    if isinstance(effect, BeforeToolCall):
        eid = effect.id
        ctx = replace(effect.context, context=_user_context(effect.context.context, registry))
        check_before = _expect(BeforeToolCallResult, "before_tool_call")
        return HookCall("before_tool_call", config.before_tool_call,  # type: ignore[arg-type]
                        (ctx, signal), lambda v, at: BeforeToolCallDecided(eid, check_before(v), at))
    if isinstance(effect, AfterToolCall):
        eid = effect.id
        actx = replace(effect.context, context=_user_context(effect.context.context, registry))
        check_after = _expect(AfterToolCallResult, "after_tool_call")
        return HookCall("after_tool_call", config.after_tool_call,  # type: ignore[arg-type]
                        (actx, signal), lambda v, at: AfterToolCallDecided(eid, check_after(v), at))
    if isinstance(effect, PrepareNextTurn):
        eid = effect.id
        pctx = replace(effect.context, context=_user_context(effect.context.context, registry))
        check_next = _expect(NextTurn, "prepare_next_turn")

        def next_turn(v: Any, at: int) -> Input:
            nxt = check_next(v)
            if nxt is not None and nxt.context is not None:
                registry.clear()
                registry.update(tool_registry(nxt.context.tools))
            return NextTurnPrepared(eid, nxt, at)

        return HookCall("prepare_next_turn", config.prepare_next_turn,  # type: ignore[arg-type]
                        (pctx,), next_turn)
    if isinstance(effect, ShouldStopAfterTurn):
        eid = effect.id
        sctx = replace(effect.context, context=_user_context(effect.context.context, registry))
        return HookCall("should_stop_after_turn", config.should_stop_after_turn,  # type: ignore[arg-type]
                        (sctx,), lambda v, at: StopAfterTurnDecided(eid, bool(v), at))
    raise TypeError(f"{type(effect).__name__} is not a hook effect")


def _identity(value: Any) -> Any:
    return value


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


def deliver(listeners: Sequence[Callable[[Any], Any]], event: Any) -> None:
    """Give ``event`` to each listener. A listener that raises is logged and stays subscribed;
    the run and the other listeners go on."""
    for listener in listeners:
        try:
            listener(event)
        except Exception:
            _log.exception("listener %r raised on %s; the run goes on", listener, event.type)
