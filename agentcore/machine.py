"""The agent loop as a pure function: ``step(state, input) -> Result[(state, effects), Rejection]``.

Theory of operation
-------------------

A run is driven by an interpreter. It builds the idle state with
:func:`agentcore.state.initial_state`, feeds ``Started(prompts)`` (or ``Continued()``), and then
repeats: carry out the effects ``step`` returned, feed back the answer of each effect that wants
one (matching ``id``), until a ``RunEnded`` effect says the run is over. The core decides
everything else: which events are emitted and in what order, when hooks are called, which tools
run and how, what goes into the context.

``step`` is *total*: an input that makes no sense in the current phase (an unknown id, an answer
of the wrong kind, anything after the end) returns ``Failure(Rejection)`` and the state is left as
it was. It never raises for such cases and never mutates its arguments. It is deterministic: no
clock (timestamps come in as ``at`` on inputs), no randomness, no iteration over unordered
collections.

The loop (normative semantics in ``docs/architecture.md``)::

    agent_start, turn_start, prompts                      Started
    poll steering                                         PollSteering
    ┌─ turn: polled messages → transform → convert → CallLlm → stream events
    │  error/aborted reply → turn_end, agent_end
    │  tool calls → prepare each in order (lookup, prepare_arguments, validate, before_tool_call)
    │             → execute (sequential, or all at once) → after_tool_call → results
    │  turn_end → prepare_next_turn → should_stop_after_turn → poll steering
    └─ again (turn_start) while tool calls were made (not all terminated) or steering arrived
    poll follow-ups → another turn if any, else agent_end

Messages a queue hook returns join the context in the step that brings them, so a hook that
fails later, or an abort, never loses one.

Inside, each transition works on a private transaction (:class:`_Tx`) that collects the effects;
the transaction never escapes ``step``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias

from pyrsistent import PVector, pvector
from returns.result import Failure, Result, Success

from .config import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    BeforeToolCallContext,
    BeforeToolCallResult,
    NextTurn,
    PrepareNextTurnContext,
)
from .convert import convert_message, default_convert_to_llm
from .effects import (
    AfterToolCall,
    BeforeToolCall,
    CallLlm,
    CancelLlm,
    ConvertToLlm,
    Effect,
    Emit,
    ExecuteTool,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    RunEnded,
    ShouldStopAfterTurn,
    TransformContext,
)
from .events import (
    AgentEndEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .frozen import freeze
from .inputs import (
    AbortRequested,
    AfterToolCallDecided,
    ArgumentsPrepared,
    BeforeToolCallDecided,
    ContextConverted,
    ContextTransformed,
    Continued,
    FollowUpsPolled,
    HookFailed,
    Input,
    NextTurnPrepared,
    Started,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamEventReceived,
    StreamFailed,
    ToolFailed,
    ToolFinished,
    ToolTimedOut,
    ToolUpdated,
)
from .messages import AgentMessage, AssistantMessage, Model, ThinkingLevel, ToolResultMessage
from .state import (
    AwaitingConvert,
    AwaitingFollowUps,
    AwaitingNextTurn,
    AwaitingSteering,
    AwaitingStopDecision,
    AwaitingTransform,
    CompletedTurn,
    Finished,
    Idle,
    LoopState,
    Phase,
    RunningTools,
    RunState,
    Streaming,
    ToolSlot,
    index_tools,
    llm_view,
)
from .stream import (
    DoneEvent,
    ErrorEvent,
    PartialAssistantMessage,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from .texts import (
    ABORTED_TEXT,
    BLOCKED_TEXT,
    NO_ERROR_MESSAGE_TEXT,
    REQUEST_ABORTED_TEXT,
    hook_failed_text,
    invalid_json_text,
    length_cutoff_text,
    not_a_stream_event_text,
    not_found_text,
    stream_order_text,
    stream_payload_text,
    timed_out_text,
)
from .tools import AgentToolResult, ToolExecutionMode, ToolSpec, error_result, spec_of, validate_arguments

__all__ = [
    "ABORTED_TEXT",
    "BLOCKED_TEXT",
    "Rejection",
    "StepResult",
    "awaits",
    "invalid_json_text",
    "length_cutoff_text",
    "not_found_text",
    "step",
    "stream_event_problem",
    "transition",
]


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why ``step`` refused an input. The state is unchanged."""

    reason: str
    phase: str
    input: str

    def __str__(self) -> str:
        return f"{self.reason} (phase {self.phase}, input {self.input})"


StepResult: TypeAlias = Result[tuple[LoopState, tuple[Effect, ...]], Rejection]

_AGENT_START: Final = AgentStartEvent()
_TURN_START: Final = TurnStartEvent()


# --------------------------------------------------------------------------- the stream protocol

# Block event type -> (the kind of block it belongs to, what it does to the block).
_BLOCK_EVENT: Final[dict[type, tuple[str, Literal["start", "delta", "end"]]]] = {
    TextStartEvent: ("text", "start"), TextDeltaEvent: ("text", "delta"), TextEndEvent: ("text", "end"),
    ThinkingStartEvent: ("thinking", "start"), ThinkingDeltaEvent: ("thinking", "delta"),
    ThinkingEndEvent: ("thinking", "end"),
    ToolCallStartEvent: ("toolCall", "start"), ToolCallDeltaEvent: ("toolCall", "delta"),
    ToolCallEndEvent: ("toolCall", "end"),
}
_DELTA_KIND: Final[dict[type, str]] = {t: kind for t, (kind, role) in _BLOCK_EVENT.items() if role == "delta"}
_PARTIAL_TYPES: Final = (PartialAssistantMessage, AssistantMessage)
_EVENT_TYPES: Final = frozenset(_BLOCK_EVENT) | {StartEvent, DoneEvent, ErrorEvent}


def stream_event_problem(event: Any) -> str | None:
    """What is wrong with ``event`` as a stream event on its own (``None``: nothing).

    Checks its type and the type of the message it carries (``partial``, a done event's
    ``message``, an error event's ``error``); where it stands in the stream is the core's
    business. Interpreters call this on what a stream function yields before feeding it, so a
    transcript only ever holds real stream events.

    >>> print(stream_event_problem({"type": "text_delta"}))  # doctest: +ELLIPSIS
    Stream protocol error: the stream function yielded a dict ({'type': 'text_delta'}), not a stream event ...
    >>> stream_event_problem(ErrorEvent("error", "rate limited"))[:12]
    'rate limited'
    """
    kind = type(event)
    if kind not in _EVENT_TYPES:
        return not_a_stream_event_text(event)
    if kind is DoneEvent:
        if not isinstance(event.message, _PARTIAL_TYPES):
            return stream_payload_text("done", "message", event.message)
        return None
    if kind is ErrorEvent:
        if not isinstance(event.error, _PARTIAL_TYPES):
            return stream_payload_text("error", "error", event.error)
        return None
    if not isinstance(event.partial, _PARTIAL_TYPES):
        return stream_payload_text(event.type, "partial", event.partial)
    if kind is not StartEvent and type(event.content_index) is not int:
        return (f"Stream protocol error: the {event.type} event's content_index was "
                f"{event.content_index!r}; expected the integer index of its content block")
    return None


def _finished(partial: PartialAssistantMessage | AssistantMessage, **header: Any) -> AssistantMessage:
    """The reply as it stands, closed with ``header`` changes (either kind of partial)."""
    if type(partial) is PartialAssistantMessage:
        return partial.to_message(**header)
    return replace(partial, **header)


# --------------------------------------------------------------------------- transaction


class _Tx:
    """Effects collected during one ``step`` and the time of its input."""

    __slots__ = ("fx", "at")

    def __init__(self, at: int) -> None:
        self.fx: list[Effect] = []
        self.at = at

    def emit(self, event: Any) -> None:
        self.fx.append(Emit(event))


class _Draft:
    """A private, mutable copy of the state, alive for one ``step`` only.

    Transitions assign its fields; :meth:`freeze` builds the next immutable state, reusing the
    previous :class:`RunState` when no field of it changed.
    """

    __slots__ = ("phase", "base", "model", "thinking_level", "tool_execution", "hooks", "system_prompt",
                 "tools", "tool_index", "messages", "llm_messages", "new_messages",
                 "has_more_tool_calls", "last_turn", "turn_open", "aborted", "next_id")

    phase: Phase
    base: RunState
    model: Model
    thinking_level: ThinkingLevel
    tool_execution: ToolExecutionMode
    hooks: frozenset[str]
    system_prompt: str
    tools: tuple[ToolSpec, ...]
    tool_index: Mapping[str, ToolSpec]
    messages: PVector[AgentMessage]
    llm_messages: PVector[AgentMessage] | None
    new_messages: PVector[AgentMessage]
    has_more_tool_calls: bool
    last_turn: CompletedTurn | None
    turn_open: bool
    aborted: bool
    next_id: int

    def __init__(self, state: LoopState) -> None:
        r = state.run
        self.phase = state.phase
        self.base = r
        self.model = r.model
        self.thinking_level = r.thinking_level
        self.tool_execution = r.tool_execution
        self.hooks = r.hooks
        self.system_prompt = r.system_prompt
        self.tools = r.tools
        self.tool_index = r.tool_index
        self.messages = r.messages
        self.llm_messages = r.llm_messages
        self.new_messages = r.new_messages
        self.has_more_tool_calls = r.has_more_tool_calls
        self.last_turn = r.last_turn
        self.turn_open = r.turn_open
        self.aborted = r.aborted
        self.next_id = r.next_id

    def freeze(self) -> LoopState:
        r = self.base
        if (self.next_id != r.next_id or self.messages is not r.messages
                or self.turn_open != r.turn_open or self.has_more_tool_calls != r.has_more_tool_calls
                or self.last_turn is not r.last_turn or self.aborted != r.aborted
                or self.new_messages is not r.new_messages or self.llm_messages is not r.llm_messages
                or self.model is not r.model or self.thinking_level != r.thinking_level
                or self.system_prompt is not r.system_prompt or self.tools is not r.tools
                or self.tool_index is not r.tool_index or self.hooks is not r.hooks
                or self.tool_execution != r.tool_execution):
            r = RunState(self.model, self.thinking_level, self.tool_execution, self.hooks, self.system_prompt,
                         self.tools, self.tool_index, self.messages, self.llm_messages, self.new_messages,
                         self.has_more_tool_calls, self.last_turn, self.turn_open, self.aborted,
                         self.next_id)
        return LoopState(self.phase, r)


def _set(s: _Draft, **changes: Any) -> _Draft:
    for name, value in changes.items():
        setattr(s, name, value)
    return s


def _new_id(s: _Draft) -> tuple[_Draft, int]:
    id_ = s.next_id
    s.next_id = id_ + 1
    return s, id_


def _append(s: _Draft, message: AgentMessage) -> _Draft:
    llm = s.llm_messages
    if llm is not None:
        converted = convert_message(message)
        if converted is not None:
            llm = llm.append(converted)
    return _set(
        s,
        messages=s.messages.append(message),
        new_messages=s.new_messages.append(message),
        llm_messages=llm,
    )


def _context(s: _Draft) -> AgentContext:
    return AgentContext(s.system_prompt, s.messages, s.tools)


# --------------------------------------------------------------------------- run start and end


def _on_started(s: _Draft, inp: Started, tx: _Tx) -> _Draft:
    tx.emit(_AGENT_START)
    tx.emit(_TURN_START)
    s.turn_open = True
    s = _add_messages(s, tx, inp.prompts)
    return _poll_steering(s, tx, "start")


def _on_continued(s: _Draft, inp: Continued, tx: _Tx) -> _Draft:
    tx.emit(_AGENT_START)
    tx.emit(_TURN_START)
    s.turn_open = True
    return _poll_steering(s, tx, "start")


def _add_messages(s: _Draft, tx: _Tx, messages: Sequence[AgentMessage]) -> _Draft:
    """Announce and append messages that enter the context whole (prompts, polled messages)."""
    for message in messages:
        tx.emit(MessageStartEvent(message))
        tx.emit(MessageEndEvent(message))
        s = _append(s, message)
    return s


def _end_run(s: _Draft, tx: _Tx) -> _Draft:
    messages = tuple(s.new_messages)
    tx.emit(AgentEndEvent(messages))
    tx.fx.append(RunEnded(messages))
    return _set(s, phase=Finished(), turn_open=False)


def _close_turn_with(s: _Draft, tx: _Tx, message: AssistantMessage, started: bool) -> _Draft:
    """End the run with ``message`` (an error or aborted reply) as the last of its turn."""
    if not s.turn_open:
        tx.emit(_TURN_START)
    if not started:
        tx.emit(MessageStartEvent(message))
    tx.emit(MessageEndEvent(message))
    s = _append(s, message)
    tx.emit(TurnEndEvent(message, ()))
    return _end_run(s, tx)


def _synthetic_reply(s: _Draft, tx: _Tx, stop_reason: Literal["error", "aborted"], text: str) -> AssistantMessage:
    m = s.model
    return AssistantMessage(
        (), api=m.api, provider=m.provider, model=m.id, stop_reason=stop_reason,
        error_message=text, timestamp=tx.at,
    )


def _fail_run(s: _Draft, tx: _Tx, text: str) -> _Draft:
    return _close_turn_with(s, tx, _synthetic_reply(s, tx, "error", text), started=False)


def _abort_now(s: _Draft, tx: _Tx) -> _Draft:
    """Stop at once, from a phase where no model call or tool is in flight: a turn in progress
    is closed by an aborted reply."""
    if s.turn_open:
        return _close_turn_with(s, tx, _synthetic_reply(s, tx, "aborted", REQUEST_ABORTED_TEXT), started=False)
    return _end_run(s, tx)


# --------------------------------------------------------------------------- between turns
#
# turn_end → prepare_next_turn → should_stop_after_turn → poll steering → next turn while tool
# calls were made or steering arrived → otherwise poll follow-ups → next turn or agent_end.


def _after_turn(s: _Draft, tx: _Tx) -> _Draft:
    """``turn_end`` was emitted: ``prepare_next_turn`` first, after every turn."""
    if s.aborted:
        return _end_run(s, tx)
    if "prepare_next_turn" in s.hooks:
        s, id = _new_id(s)
        tx.fx.append(PrepareNextTurn(id, _turn_context(s)))
        return _set(s, phase=AwaitingNextTurn(id))
    return _decide_stop(s, tx)


def _turn_context(s: _Draft) -> PrepareNextTurnContext:
    turn = s.last_turn
    assert turn is not None
    return PrepareNextTurnContext(turn.message, turn.tool_results, _context(s), s.new_messages)


def _decide_stop(s: _Draft, tx: _Tx) -> _Draft:
    if "should_stop_after_turn" in s.hooks:
        s, id = _new_id(s)
        tx.fx.append(ShouldStopAfterTurn(id, _turn_context(s)))
        return _set(s, phase=AwaitingStopDecision(id))
    return _poll_steering(s, tx, "turn")


def _poll_steering(s: _Draft, tx: _Tx, after: Literal["start", "turn"]) -> _Draft:
    if s.aborted:
        return _abort_now(s, tx)
    if "get_steering_messages" not in s.hooks:
        return _steering_arrived(s, tx, after, ())
    s, id = _new_id(s)
    tx.fx.append(PollSteering(id))
    return _set(s, phase=AwaitingSteering(id, after))


def _steering_arrived(s: _Draft, tx: _Tx, after: str, messages: Sequence[AgentMessage]) -> _Draft:
    if after == "start":
        return _begin_turn_body(s, tx, messages)
    if s.has_more_tool_calls or messages:
        return _next_turn(s, tx, messages)
    if "get_follow_up_messages" not in s.hooks:
        return _end_run(s, tx)
    s, id = _new_id(s)
    tx.fx.append(PollFollowUps(id))
    return _set(s, phase=AwaitingFollowUps(id))


def _next_turn(s: _Draft, tx: _Tx, messages: Sequence[AgentMessage]) -> _Draft:
    tx.emit(_TURN_START)
    s.turn_open = True
    return _begin_turn_body(s, tx, messages)


def _apply_next_turn(s: _Draft, nxt: NextTurn) -> _Draft:
    changes: dict[str, Any] = {}
    if nxt.context is not None:
        ctx = nxt.context
        specs = tuple(spec_of(t) for t in ctx.tools)
        messages = ctx.messages if isinstance(ctx.messages, PVector) else pvector(ctx.messages)
        changes.update(
            system_prompt=ctx.system_prompt,
            messages=messages,
            tools=specs,
            tool_index=index_tools(specs),
            llm_messages=llm_view(messages, s.hooks),
        )
    if nxt.model is not None:
        changes["model"] = nxt.model
    if nxt.thinking_level is not None:
        changes["thinking_level"] = nxt.thinking_level
    return _set(s, **changes) if changes else s


# --------------------------------------------------------------------------- the model call


def _begin_turn_body(s: _Draft, tx: _Tx, messages: Sequence[AgentMessage]) -> _Draft:
    s = _add_messages(s, tx, messages)
    if "transform_context" in s.hooks:
        s, id = _new_id(s)
        tx.fx.append(TransformContext(id, s.messages))
        return _set(s, phase=AwaitingTransform(id))
    return _convert(s, tx, s.messages)


def _convert(s: _Draft, tx: _Tx, messages: Sequence[AgentMessage]) -> _Draft:
    if "convert_to_llm" in s.hooks:
        s, id = _new_id(s)
        tx.fx.append(ConvertToLlm(id, messages))
        return _set(s, phase=AwaitingConvert(id))
    if s.llm_messages is not None and messages is s.messages:
        return _call_llm(s, tx, s.llm_messages)
    return _call_llm(s, tx, pvector(default_convert_to_llm(messages)))


def _call_llm(s: _Draft, tx: _Tx, messages: Sequence[AgentMessage]) -> _Draft:
    s, id = _new_id(s)
    model = s.model
    level: ThinkingLevel = s.thinking_level if model.reasoning else "off"  # only models that reason
    tx.fx.append(CallLlm(id, model, level, s.system_prompt, messages, s.tools))
    return _set(s, phase=Streaming(id))


def _on_stream_event(s: _Draft, inp: StreamEventReceived, tx: _Tx) -> _Draft:
    """Every stream event but the deltas of open blocks (``transition`` takes those at once)."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    event: Any = inp.event
    problem = stream_event_problem(event)
    if problem is not None:
        return _stream_broken(s, tx, problem)
    kind = type(event)
    if kind is DoneEvent:
        final = event.message
        if type(final) is PartialAssistantMessage:
            final = final.to_message(stop_reason=event.reason if event.reason in ("stop", "length", "toolUse")
                                     else "stop")
        return _reply_finished(s, tx, final, started=phase.partial is not None)
    if kind is ErrorEvent:
        return _reply_finished(s, tx, _error_reply(event), started=phase.partial is not None)
    if kind is StartEvent:
        if phase.partial is not None:
            return _stream_broken(s, tx, stream_order_text("start", "a second time"))
        tx.emit(MessageStartEvent(event.partial))
        return _set(s, phase=Streaming(phase.id, event.partial))
    block, role = _BLOCK_EVENT[kind]
    if phase.partial is None:
        return _stream_broken(s, tx, stream_order_text(event.type, "before the stream's start event"))
    index, blocks = event.content_index, phase.blocks
    if role == "start":
        if index != len(blocks):
            return _stream_broken(s, tx, stream_order_text(
                event.type, f"for content block {index}, but the next new block is {len(blocks)}"))
        blocks = blocks + (block,)
    else:
        if not 0 <= index < len(blocks):
            return _stream_broken(s, tx, stream_order_text(
                event.type, f"for content block {index}, which was never started"))
        if blocks[index] != block:
            state = "had already ended" if blocks[index] == "" else f"is a {blocks[index]} block"
            return _stream_broken(s, tx, stream_order_text(
                event.type, f"for content block {index}, which {state}"))
        if role == "end":
            blocks = blocks[:index] + ("",) + blocks[index + 1:]
    tx.emit(MessageUpdateEvent(event.partial, event))
    return _set(s, phase=Streaming(phase.id, event.partial, blocks))


def _error_reply(event: ErrorEvent) -> AssistantMessage:
    """The final message of an error event: an error, whatever its message says."""
    error: Any = event.error
    reason: Literal["error", "aborted"] = "aborted" if event.reason == "aborted" else "error"
    if type(error) is PartialAssistantMessage:
        error = error.to_message()
    changes: dict[str, Any] = {}
    if error.stop_reason not in ("error", "aborted"):
        changes["stop_reason"] = reason
    if not error.error_message:
        changes["error_message"] = NO_ERROR_MESSAGE_TEXT
    final: AssistantMessage = replace(error, **changes) if changes else error
    return final


def _stream_broken(s: _Draft, tx: _Tx, text: str) -> _Draft:
    """The stream broke the protocol: stop reading it, end the reply as an error."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    tx.fx.append(CancelLlm(phase.id))
    return _stream_ended(s, tx, text)


def _stream_ended(s: _Draft, tx: _Tx, text: str) -> _Draft:
    """The reply ends as an error with ``text``, keeping what it streamed so far."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    if phase.partial is not None:
        final = _finished(phase.partial, stop_reason="error", error_message=text)
    else:
        final = _synthetic_reply(s, tx, "error", text)
    return _reply_finished(s, tx, final, started=phase.partial is not None)


def _on_stream_failed(s: _Draft, inp: StreamFailed, tx: _Tx) -> _Draft:
    return _stream_ended(s, tx, inp.error)


def _abort_stream(s: _Draft, tx: _Tx) -> _Draft:
    phase = s.phase
    assert isinstance(phase, Streaming)
    tx.fx.append(CancelLlm(phase.id))
    if phase.partial is None:
        return _abort_now(s, tx)
    final = _finished(phase.partial, stop_reason="aborted", error_message=REQUEST_ABORTED_TEXT)
    return _close_turn_with(s, tx, final, started=True)


def _reply_finished(s: _Draft, tx: _Tx, final: AssistantMessage, started: bool) -> _Draft:
    if not started:
        tx.emit(MessageStartEvent(final))
    tx.emit(MessageEndEvent(final))
    s = _append(s, final)
    if final.stop_reason in ("error", "aborted"):
        tx.emit(TurnEndEvent(final, ()))
        return _end_run(s, tx)
    calls = final.tool_calls
    if not calls:
        return _finish_turn(_set(s, has_more_tool_calls=False), tx, final, ())
    if final.stop_reason == "length":
        results = []
        for call in calls:
            tx.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
            slot = ToolSlot(call, "done", result=error_result(length_cutoff_text(call.name)),
                            is_error=True, at=tx.at)
            message = _emit_result(tx, slot, with_message=True)
            assert message is not None
            results.append(message)
        return _finish_turn(_set(s, has_more_tool_calls=True), tx, final, tuple(results))
    sequential = s.tool_execution == "sequential" or any(
        (spec := s.tool_index.get(c.name)) is not None and spec.execution_mode == "sequential"
        for c in calls
    )
    batch = RunningTools(final, sequential, tuple(ToolSlot(c) for c in calls))
    return _advance_tools(_set(s, phase=batch), tx)


# --------------------------------------------------------------------------- tools


def _slot_update(s: _Draft, index: int, slot: ToolSlot) -> _Draft:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    s.phase = RunningTools(batch.message, batch.sequential,
                           batch.slots[:index] + (slot,) + batch.slots[index + 1 :], batch.cursor)
    return s


def _emit_result(tx: _Tx, slot: ToolSlot, with_message: bool) -> ToolResultMessage | None:
    """``tool_execution_end`` for a finished slot, and (``with_message``) its result message."""
    result = slot.result
    assert result is not None
    tx.emit(ToolExecutionEndEvent(slot.call.id, slot.call.name, result, slot.is_error))
    return _emit_result_message(tx, slot) if with_message else None


def _result_message(slot: ToolSlot) -> ToolResultMessage:
    result = slot.result
    assert result is not None
    return ToolResultMessage(
        slot.call.id,
        slot.call.name,
        result.content,
        details=result.details,
        is_error=slot.is_error,
        usage=result.usage,
        added_tool_names=result.added_tool_names or None,
        timestamp=slot.at,
    )


def _complete(s: _Draft, tx: _Tx, index: int, result: AgentToolResult, is_error: bool) -> _Draft:
    """Slot ``index`` has its final result: emit its end (and, sequentially, its message)."""
    batch = s.phase
    assert isinstance(batch, RunningTools)
    call, args = batch.slots[index].call, batch.slots[index].args
    slot = ToolSlot(call, "done", -1, args, result, is_error, tx.at)
    message = _emit_result(tx, slot, with_message=batch.sequential)
    if message is not None:  # kept: the turn's tool_results hold this same message
        slot = ToolSlot(call, "done", -1, args, result, is_error, tx.at, message)
    return _slot_update(s, index, slot)


def _prepare(s: _Draft, tx: _Tx, index: int) -> _Draft:
    """Start preparing call ``index``: the start event, lookup, then ``prepare_arguments``."""
    batch = s.phase
    assert isinstance(batch, RunningTools)
    call = batch.slots[index].call
    tx.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
    if s.aborted:
        return _complete(s, tx, index, error_result(ABORTED_TEXT), True)
    spec = s.tool_index.get(call.name)
    if spec is None:
        return _complete(s, tx, index, error_result(not_found_text(call.name)), True)
    if call.invalid_json is not None:
        return _complete(s, tx, index, error_result(invalid_json_text(call.name, call.invalid_json)), True)
    if spec.has_prepare_arguments:
        s, id = _new_id(s)
        tx.fx.append(PrepareArguments(id, call))
        return _slot_update(s, index, ToolSlot(call, "preparing", id))
    return _validate(s, tx, index, call.arguments)


def _slot(s: _Draft, index: int) -> ToolSlot:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    return batch.slots[index]


def _validate(s: _Draft, tx: _Tx, index: int, arguments: Any) -> _Draft:
    call = _slot(s, index).call
    spec = s.tool_index[call.name]
    checked = validate_arguments(spec, arguments)
    if isinstance(checked, Failure):
        return _complete(s, tx, index, error_result(checked.failure()), True)
    args = checked.unwrap()
    if s.aborted:
        return _complete(s, tx, index, error_result(ABORTED_TEXT), True)
    if "before_tool_call" in s.hooks:
        batch = s.phase
        assert isinstance(batch, RunningTools)
        s, id = _new_id(s)
        tx.fx.append(BeforeToolCall(id, BeforeToolCallContext(batch.message, call, args, _context(s))))
        return _slot_update(s, index, ToolSlot(call, "checking", id, args))
    return _ready(s, tx, index, args)


def _ready(s: _Draft, tx: _Tx, index: int, args: Any) -> _Draft:
    if s.aborted:
        return _complete(s, tx, index, error_result(ABORTED_TEXT), True)
    s = _slot_update(s, index, ToolSlot(_slot(s, index).call, "ready", -1, args))
    batch = s.phase
    assert isinstance(batch, RunningTools)
    if batch.sequential:
        return _execute(s, tx, index)
    return s


def _execute(s: _Draft, tx: _Tx, index: int) -> _Draft:
    slot = _slot(s, index)
    if s.aborted:
        return _complete(s, tx, index, error_result(ABORTED_TEXT), True)
    s, id = _new_id(s)
    tx.fx.append(ExecuteTool(id, slot.call, slot.args))
    return _slot_update(s, index, ToolSlot(slot.call, "running", id, slot.args))


def _finish_execution(s: _Draft, tx: _Tx, index: int, result: AgentToolResult, is_error: bool) -> _Draft:
    """The tool returned (or raised): run ``after_tool_call`` or complete the slot. After an
    abort no hook is asked for any more: the call keeps its own result."""
    slot = _slot(s, index)
    if "after_tool_call" in s.hooks and not s.aborted:
        batch = s.phase
        assert isinstance(batch, RunningTools)
        s, id = _new_id(s)
        ctx = AfterToolCallContext(batch.message, slot.call, slot.args, result, is_error, _context(s))
        tx.fx.append(AfterToolCall(id, ctx))
        return _slot_update(s, index, ToolSlot(slot.call, "finishing", id, slot.args, result, is_error))
    return _complete(s, tx, index, result, is_error)


def _patch(result: AgentToolResult, is_error: bool, patch: AfterToolCallResult | None) -> tuple[AgentToolResult, bool]:
    if patch is None:
        return result, is_error
    patched = AgentToolResult(
        patch.content if patch.content is not None else result.content,
        freeze(patch.details) if patch.details is not None else result.details,
        patch.usage if patch.usage is not None else result.usage,
        result.added_tool_names,
        patch.terminate if patch.terminate is not None else result.terminate,
    )
    return patched, patch.is_error if patch.is_error is not None else is_error


def _advance_tools(s: _Draft, tx: _Tx) -> _Draft:
    """Move the batch forward as far as it goes without an answer."""
    while True:
        batch = s.phase
        assert isinstance(batch, RunningTools)
        slots = batch.slots
        if batch.cursor < len(slots):
            current = slots[batch.cursor]
            if current.step == "waiting":
                s = _prepare(s, tx, batch.cursor)
                continue
            if current.step == "done" or (current.step == "ready" and not batch.sequential):
                s.phase = RunningTools(batch.message, batch.sequential, slots, batch.cursor + 1)
                continue
            return s  # waiting for an answer about the current call
        if not batch.sequential:
            ready = [i for i, slot in enumerate(slots) if slot.step == "ready"]
            if ready:
                for i in ready:
                    s = _execute(s, tx, i)
                continue
        if all(slot.step == "done" for slot in slots):
            return _tools_done(s, tx)
        return s


def _tools_done(s: _Draft, tx: _Tx) -> _Draft:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    if batch.sequential:
        results = tuple(slot.message or _result_message(slot) for slot in batch.slots)
    else:
        results = tuple(_emit_result_message(tx, slot) for slot in batch.slots)
    terminate = all(slot.result is not None and slot.result.terminate is True for slot in batch.slots)
    return _finish_turn(_set(s, has_more_tool_calls=not terminate), tx, batch.message, results)


def _emit_result_message(tx: _Tx, slot: ToolSlot) -> ToolResultMessage:
    message = _result_message(slot)
    tx.emit(MessageStartEvent(message))
    tx.emit(MessageEndEvent(message))
    return message


def _find_slot(s: _Draft | LoopState, id: int) -> int | None:
    batch = s.phase
    if not isinstance(batch, RunningTools):
        return None
    for i, slot in enumerate(batch.slots):
        if slot.wait_id == id:
            return i
    return None


def _on_tool_answer(s: _Draft, inp: Input, tx: _Tx) -> _Draft:
    index = _find_slot(s, inp.id)  # type: ignore[union-attr]
    assert index is not None
    slot = _slot(s, index)
    if isinstance(inp, ArgumentsPrepared):
        return _advance_tools(_validate(s, tx, index, freeze(inp.arguments)), tx)
    if isinstance(inp, BeforeToolCallDecided):
        decision: BeforeToolCallResult | None = inp.result
        if decision is not None and decision.block:
            result = error_result(decision.reason or BLOCKED_TEXT, True if decision.terminate else None)
            return _advance_tools(_complete(s, tx, index, result, True), tx)
        return _advance_tools(_ready(s, tx, index, slot.args), tx)
    if isinstance(inp, ToolUpdated):
        tx.emit(ToolExecutionUpdateEvent(slot.call.id, slot.call.name, slot.call.arguments, inp.partial_result))
        return s
    if isinstance(inp, ToolFinished):
        return _advance_tools(_finish_execution(s, tx, index, inp.result, False), tx)
    if isinstance(inp, ToolFailed):
        return _advance_tools(_finish_execution(s, tx, index, error_result(inp.error), True), tx)
    if isinstance(inp, ToolTimedOut):
        text = timed_out_text(slot.call.name, inp.timeout_ms)
        return _advance_tools(_finish_execution(s, tx, index, error_result(text), True), tx)
    if isinstance(inp, AfterToolCallDecided):
        assert slot.result is not None
        result, is_error = _patch(slot.result, slot.is_error, inp.result)
        return _advance_tools(_complete(s, tx, index, result, is_error), tx)
    assert isinstance(inp, HookFailed)
    # prepare_arguments, before_tool_call or after_tool_call raised: an error result.
    return _advance_tools(_complete(s, tx, index, error_result(inp.error), True), tx)


# --------------------------------------------------------------------------- turn end


def _finish_turn(
    s: _Draft, tx: _Tx, message: AssistantMessage, results: tuple[ToolResultMessage, ...]
) -> _Draft:
    for result in results:
        s = _append(s, result)
    tx.emit(TurnEndEvent(message, results))
    s.turn_open = False
    s.last_turn = CompletedTurn(message, results)
    return _after_turn(s, tx)


# --------------------------------------------------------------------------- hook answers


def _on_steering(s: _Draft, inp: SteeringPolled, tx: _Tx) -> _Draft:
    phase = s.phase
    assert isinstance(phase, AwaitingSteering)
    return _steering_arrived(s, tx, phase.after, tuple(inp.messages))


def _on_follow_ups(s: _Draft, inp: FollowUpsPolled, tx: _Tx) -> _Draft:
    if inp.messages:
        return _next_turn(s, tx, inp.messages)
    return _end_run(s, tx)


def _on_transformed(s: _Draft, inp: ContextTransformed, tx: _Tx) -> _Draft:
    return _convert(s, tx, inp.messages)


def _on_converted(s: _Draft, inp: ContextConverted, tx: _Tx) -> _Draft:
    return _call_llm(s, tx, inp.messages)


def _on_next_turn(s: _Draft, inp: NextTurnPrepared, tx: _Tx) -> _Draft:
    if inp.next_turn is not None:
        s = _apply_next_turn(s, inp.next_turn)
    return _decide_stop(s, tx)


def _on_stop_decided(s: _Draft, inp: StopAfterTurnDecided, tx: _Tx) -> _Draft:
    if inp.stop:
        return _end_run(s, tx)
    return _poll_steering(s, tx, "turn")


_HOOK_OF_PHASE: Final[dict[type, str]] = {
    AwaitingSteering: "get_steering_messages",
    AwaitingFollowUps: "get_follow_up_messages",
    AwaitingTransform: "transform_context",
    AwaitingConvert: "convert_to_llm",
    AwaitingNextTurn: "prepare_next_turn",
    AwaitingStopDecision: "should_stop_after_turn",
}


def _on_hook_failed(s: _Draft, inp: HookFailed, tx: _Tx) -> _Draft:
    if isinstance(s.phase, RunningTools):
        return _on_tool_answer(s, inp, tx)
    return _fail_run(s, tx, hook_failed_text(_HOOK_OF_PHASE[type(s.phase)], inp.error))


def _on_abort(s: _Draft, inp: AbortRequested, tx: _Tx) -> _Draft:
    if s.aborted:
        return s
    s = _set(s, aborted=True)
    phase = s.phase
    if isinstance(phase, Idle):
        return s  # the run will stop before its first model call
    if isinstance(phase, Streaming):
        return _abort_stream(s, tx)
    if isinstance(phase, RunningTools):
        # A call waiting on a hook stops now (the hook's late answer will be rejected); calls
        # running finish (they see the aborted signal); the rest are aborted as reached.
        for i, slot in enumerate(phase.slots):
            if slot.step in ("preparing", "checking", "finishing"):
                s = _complete(s, tx, i, error_result(ABORTED_TEXT), True)
        return _advance_tools(s, tx)
    return _abort_now(s, tx)


# --------------------------------------------------------------------------- the table

_Handler: TypeAlias = Callable[[_Draft, Any, _Tx], _Draft]

_WAITING_HOOK_PHASES: Final = tuple(_HOOK_OF_PHASE)
_TOOL_INPUTS: Final = (ArgumentsPrepared, BeforeToolCallDecided, ToolUpdated, ToolFinished, ToolFailed,
                       ToolTimedOut, AfterToolCallDecided)

TRANSITIONS: Final[dict[tuple[type, type], _Handler]] = {
    (Idle, Started): _on_started,
    (Idle, Continued): _on_continued,
    (AwaitingSteering, SteeringPolled): _on_steering,
    (AwaitingFollowUps, FollowUpsPolled): _on_follow_ups,
    (AwaitingTransform, ContextTransformed): _on_transformed,
    (AwaitingConvert, ContextConverted): _on_converted,
    (Streaming, StreamEventReceived): _on_stream_event,
    (Streaming, StreamFailed): _on_stream_failed,
    **{(RunningTools, t): _on_tool_answer for t in _TOOL_INPUTS},
    (RunningTools, HookFailed): _on_hook_failed,
    (AwaitingNextTurn, NextTurnPrepared): _on_next_turn,
    (AwaitingStopDecision, StopAfterTurnDecided): _on_stop_decided,
    **{(p, HookFailed): _on_hook_failed for p in _WAITING_HOOK_PHASES},
    **{(p, AbortRequested): _on_abort for p in (
        Idle, AwaitingSteering, AwaitingFollowUps, AwaitingNextTurn, AwaitingTransform,
        AwaitingConvert, Streaming, RunningTools, AwaitingStopDecision)},
}
"""(phase type, input type) → handler. A pair that is not here is rejected."""

# Which tool-slot step may receive which answer.
_SLOT_STEP_FOR: Final[dict[type, tuple[str, ...]]] = {
    ArgumentsPrepared: ("preparing",),
    BeforeToolCallDecided: ("checking",),
    ToolUpdated: ("running",),
    ToolFinished: ("running",),
    ToolFailed: ("running",),
    ToolTimedOut: ("running",),
    AfterToolCallDecided: ("finishing",),
    HookFailed: ("preparing", "checking", "finishing"),
}


def _reject(s: LoopState, inp: Input, reason: str) -> Rejection:
    return Rejection(reason, s.phase.name, inp.type)


def _check(s: LoopState, inp: Input) -> str | None:
    """Why ``inp`` cannot be taken in ``s`` (``None`` when it can)."""
    phase = s.phase
    if isinstance(inp, Continued):
        if len(s.messages) == 0:
            return "Cannot continue: no messages in context"
        last = s.messages[-1]
        if getattr(last, "role", None) == "assistant":
            return "Cannot continue from message role: assistant"
        return None
    input_id = getattr(inp, "id", None)
    if input_id is None:
        return None
    if isinstance(phase, RunningTools):
        index = _find_slot(s, input_id)
        if index is None:
            return f"no tool call is waiting for an answer with id {input_id}"
        step = phase.slots[index].step
        if step not in _SLOT_STEP_FOR[type(inp)]:
            return f"tool call {phase.slots[index].call.id} is {step}, it cannot take {inp.type}"
        return None
    if getattr(phase, "id", None) != input_id:
        return f"expected an answer for id {getattr(phase, 'id', None)}, got id {input_id}"
    return None


def awaits(state: LoopState, id: int) -> bool:
    """Whether the core waits for an answer with ``id`` now (interpreters drop late answers:
    a hook the abort left behind, a tool that ran past its deadline).

    >>> from agentcore import AgentContext, Model, initial_state
    >>> awaits(initial_state(AgentContext(), model=Model(id="m")), 1)
    False
    """
    phase = state.phase
    if isinstance(phase, RunningTools):
        return _find_slot(state, id) is not None
    return getattr(phase, "id", None) == id


def transition(state: LoopState, input: Input) -> tuple[LoopState, tuple[Effect, ...]] | Rejection:
    """:func:`step` without the ``Result`` wrapper: ``(state, effects)`` or a :class:`Rejection`.

    For interpreters' hot loops; everything else should use :func:`step`.
    """
    phase = state.phase
    if type(input) is StreamEventReceived and type(phase) is Streaming:
        # The hot path: a delta of an open block only replaces the phase.
        event: Any = input.event
        kind = _DELTA_KIND.get(type(event))
        if kind is not None and input.id == phase.id:
            index, blocks = event.content_index, phase.blocks
            if (type(index) is int and 0 <= index < len(blocks) and blocks[index] == kind
                    and type(event.partial) in _PARTIAL_TYPES):
                return (LoopState(Streaming(phase.id, event.partial, blocks), state.run),
                        (Emit(MessageUpdateEvent(event.partial, event)),))
    handler = TRANSITIONS.get((type(phase), type(input)))
    if handler is None:
        return _reject(state, input, f"{input.type} is not expected while {state.phase.name}")
    problem = _check(state, input)
    if problem is not None:
        return _reject(state, input, problem)
    tx = _Tx(input.at)
    draft = handler(_Draft(state), input, tx)
    return draft.freeze(), tuple(tx.fx)


def step(state: LoopState, input: Input) -> StepResult:
    """Advance the run by one input. Returns ``Success((new state, effects))``, or
    ``Failure(Rejection)`` when the input is not legal now (the state is then unchanged)."""
    out = transition(state, input)
    if type(out) is Rejection:
        return Failure(out)
    return Success(out)  # type: ignore[arg-type]
