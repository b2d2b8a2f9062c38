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
    ┌─ turn: pending messages → transform → convert → CallLlm → stream events
    │  error/aborted reply → turn_end, agent_end
    │  tool calls → prepare each in order (lookup, prepare_arguments, validate, before_tool_call)
    │             → execute (sequential, or all at once) → after_tool_call → results
    │  turn_end → should_stop_after_turn → poll steering
    └─ again while tool calls were made (not all terminated) or steering is pending
    poll follow-ups → another turn if any, else agent_end

Inside, each transition works on a private transaction (:class:`_Tx`) that collects the effects;
the transaction never escapes ``step``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, TypeAlias

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
    ToolUpdated,
)
from .messages import AgentMessage, AssistantMessage, ToolResultMessage
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
    Streaming,
    ToolSlot,
    _index,
    _llm_view,
)
from .stream import DoneEvent, ErrorEvent, StartEvent
from .tools import AgentToolResult, error_result, spec_of, validate_arguments

__all__ = [
    "ABORTED_TEXT",
    "BLOCKED_TEXT",
    "Rejection",
    "StepResult",
    "length_cutoff_text",
    "not_found_text",
    "step",
]

ABORTED_TEXT: Final = "Operation aborted"
BLOCKED_TEXT: Final = "Tool execution was blocked"
REQUEST_ABORTED_TEXT: Final = "Request was aborted"


def not_found_text(name: str) -> str:
    return f"Tool {name} not found"


def length_cutoff_text(name: str) -> str:
    return (
        f'Tool call "{name}" was not executed: the reply was cut off by the output token limit, '
        "so its arguments may be incomplete. Re-issue the call with complete arguments."
    )


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


# --------------------------------------------------------------------------- transaction


class _Tx:
    """Effects collected during one ``step`` and the time of its input."""

    __slots__ = ("fx", "at")

    def __init__(self, at: int) -> None:
        self.fx: list[Effect] = []
        self.at = at

    def emit(self, event: Any) -> None:
        self.fx.append(Emit(event))


def _set(s: LoopState, **changes: Any) -> LoopState:
    return replace(s, **changes)


def _new_id(s: LoopState) -> tuple[LoopState, int]:
    return _set(s, next_id=s.next_id + 1), s.next_id


def _append(s: LoopState, message: AgentMessage) -> LoopState:
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


def _context(s: LoopState) -> AgentContext:
    return AgentContext(s.system_prompt, s.messages, s.tools)


# --------------------------------------------------------------------------- run start and end


def _on_started(s: LoopState, inp: Started, tx: _Tx) -> LoopState:
    tx.emit(_AGENT_START)
    tx.emit(_TURN_START)
    s = _set(s, turn_open=True)
    for prompt in inp.prompts:
        tx.emit(MessageStartEvent(prompt))
        tx.emit(MessageEndEvent(prompt))
        s = _append(s, prompt)
    return _poll_steering(s, tx, "start")


def _on_continued(s: LoopState, inp: Continued, tx: _Tx) -> LoopState:
    tx.emit(_AGENT_START)
    tx.emit(_TURN_START)
    return _poll_steering(_set(s, turn_open=True), tx, "start")


def _end_run(s: LoopState, tx: _Tx) -> LoopState:
    messages = tuple(s.new_messages)
    tx.emit(AgentEndEvent(messages))
    tx.fx.append(RunEnded(messages))
    return _set(s, phase=Finished(), pending=(), turn_open=False)


def _close_turn_with(s: LoopState, tx: _Tx, message: AssistantMessage, started: bool) -> LoopState:
    """End the run with ``message`` (an error or aborted reply) as the last of its turn."""
    if not s.turn_open:
        tx.emit(_TURN_START)
    if not started:
        tx.emit(MessageStartEvent(message))
    tx.emit(MessageEndEvent(message))
    s = _append(s, message)
    tx.emit(TurnEndEvent(message, ()))
    return _end_run(s, tx)


def _synthetic_reply(s: LoopState, tx: _Tx, stop_reason: str, text: str) -> AssistantMessage:
    m = s.model
    return AssistantMessage(
        (), api=m.api, provider=m.provider, model=m.id, stop_reason=stop_reason,  # type: ignore[arg-type]
        error_message=text, timestamp=tx.at,
    )


def _fail_run(s: LoopState, tx: _Tx, text: str) -> LoopState:
    return _close_turn_with(s, tx, _synthetic_reply(s, tx, "error", text), started=False)


def _abort_now(s: LoopState, tx: _Tx) -> LoopState:
    """Stop at once, from a phase where no tool is in flight."""
    if s.turn_open:
        return _close_turn_with(s, tx, _synthetic_reply(s, tx, "aborted", REQUEST_ABORTED_TEXT), started=False)
    return _end_run(s, tx)


# --------------------------------------------------------------------------- between turns


def _poll_steering(s: LoopState, tx: _Tx, after: Any) -> LoopState:
    if s.aborted:
        return _abort_now(s, tx)
    if "get_steering_messages" not in s.hooks:
        return _steering_arrived(s, tx, after, ())
    s, id = _new_id(s)
    tx.fx.append(PollSteering(id))
    return _set(s, phase=AwaitingSteering(id, after))


def _steering_arrived(s: LoopState, tx: _Tx, after: str, messages: tuple[AgentMessage, ...]) -> LoopState:
    if after == "turn":
        s = _set(s, pending=tuple(messages))
        return _continue_or_follow_up(s, tx)
    if messages:
        s = _set(s, pending=s.pending + tuple(messages))
    if after == "prepare":
        tx.emit(_TURN_START)
        s = _set(s, turn_open=True)
    return _begin_turn_body(s, tx)


def _continue_or_follow_up(s: LoopState, tx: _Tx) -> LoopState:
    if s.has_more_tool_calls or s.pending:
        return _next_turn(s, tx)
    if "get_follow_up_messages" not in s.hooks:
        return _end_run(s, tx)
    s, id = _new_id(s)
    tx.fx.append(PollFollowUps(id))
    return _set(s, phase=AwaitingFollowUps(id))


def _next_turn(s: LoopState, tx: _Tx) -> LoopState:
    if "prepare_next_turn" in s.hooks and s.last_turn is not None:
        s, id = _new_id(s)
        turn = s.last_turn
        assert turn is not None
        ctx = PrepareNextTurnContext(turn.message, turn.tool_results, _context(s), s.new_messages)
        tx.fx.append(PrepareNextTurn(id, ctx))
        return _set(s, phase=AwaitingNextTurn(id))
    return _after_prepare(s, tx)


def _apply_next_turn(s: LoopState, nxt: NextTurn) -> LoopState:
    changes: dict[str, Any] = {}
    if nxt.context is not None:
        ctx = nxt.context
        specs = tuple(spec_of(t) for t in ctx.tools)
        messages = ctx.messages if isinstance(ctx.messages, PVector) else pvector(ctx.messages)
        changes.update(
            system_prompt=ctx.system_prompt,
            messages=messages,
            tools=specs,
            tool_index=_index(specs),
            llm_messages=_llm_view(messages, s.hooks),
        )
    if nxt.model is not None:
        changes["model"] = nxt.model
    if nxt.thinking_level is not None:
        changes["thinking_level"] = nxt.thinking_level
    return _set(s, **changes) if changes else s


def _after_prepare(s: LoopState, tx: _Tx) -> LoopState:
    if not s.pending and "get_steering_messages" in s.hooks:
        return _poll_steering(s, tx, "prepare")
    return _steering_arrived(s, tx, "prepare", ())


# --------------------------------------------------------------------------- the model call


def _begin_turn_body(s: LoopState, tx: _Tx) -> LoopState:
    for message in s.pending:
        tx.emit(MessageStartEvent(message))
        tx.emit(MessageEndEvent(message))
        s = _append(s, message)
    s = _set(s, pending=())
    if s.aborted:
        return _abort_now(s, tx)
    if "transform_context" in s.hooks:
        s, id = _new_id(s)
        tx.fx.append(TransformContext(id, s.messages))
        return _set(s, phase=AwaitingTransform(id))
    return _convert(s, tx, s.messages)


def _convert(s: LoopState, tx: _Tx, messages: Sequence[AgentMessage]) -> LoopState:
    if "convert_to_llm" in s.hooks:
        s, id = _new_id(s)
        tx.fx.append(ConvertToLlm(id, messages))
        return _set(s, phase=AwaitingConvert(id))
    if s.llm_messages is not None and messages is s.messages:
        return _call_llm(s, tx, s.llm_messages)
    return _call_llm(s, tx, pvector(default_convert_to_llm(messages)))


def _call_llm(s: LoopState, tx: _Tx, messages: Sequence[AgentMessage]) -> LoopState:
    s, id = _new_id(s)
    tx.fx.append(CallLlm(id, s.model, s.thinking_level, s.system_prompt, messages, s.tools))
    return _set(s, phase=Streaming(id))


def _on_stream_event(s: LoopState, inp: StreamEventReceived, tx: _Tx) -> LoopState:
    phase = s.phase
    assert isinstance(phase, Streaming)
    event = inp.event
    if isinstance(event, (DoneEvent, ErrorEvent)):
        final = event.message if isinstance(event, DoneEvent) else event.error
        return _reply_finished(s, tx, final, started=phase.partial is not None)
    if isinstance(event, StartEvent):
        if phase.partial is None:
            tx.emit(MessageStartEvent(event.partial))
        else:
            tx.emit(MessageUpdateEvent(event.partial, event))
        return _set(s, phase=Streaming(phase.id, event.partial))
    if phase.partial is None:
        # A block event before the stream's start: nothing has been announced; ignore it, as
        # the final event still carries the whole message.
        return s
    tx.emit(MessageUpdateEvent(event.partial, event))
    return _set(s, phase=Streaming(phase.id, event.partial))


def _on_stream_failed(s: LoopState, inp: StreamFailed, tx: _Tx) -> LoopState:
    phase = s.phase
    assert isinstance(phase, Streaming)
    m = s.model
    if phase.partial is not None:
        final = phase.partial.to_message(stop_reason="error", error_message=inp.error)
    else:
        final = AssistantMessage(
            (), api=m.api, provider=m.provider, model=m.id, stop_reason="error",
            error_message=inp.error, timestamp=tx.at,
        )
    return _reply_finished(s, tx, final, started=phase.partial is not None)


def _abort_stream(s: LoopState, tx: _Tx) -> LoopState:
    phase = s.phase
    assert isinstance(phase, Streaming)
    tx.fx.append(CancelLlm(phase.id))
    if phase.partial is None:
        return _abort_now(s, tx)
    final = phase.partial.to_message(stop_reason="aborted", error_message=REQUEST_ABORTED_TEXT)
    return _close_turn_with(s, tx, final, started=True)


def _reply_finished(s: LoopState, tx: _Tx, final: AssistantMessage, started: bool) -> LoopState:
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
            results.append(_emit_result(tx, slot, with_message=True))
        return _finish_turn(_set(s, has_more_tool_calls=True), tx, final, tuple(results))
    sequential = s.tool_execution == "sequential" or any(
        (spec := s.tool_index.get(c.name)) is not None and spec.execution_mode == "sequential"
        for c in calls
    )
    batch = RunningTools(final, sequential, tuple(ToolSlot(c) for c in calls))
    return _advance_tools(_set(s, phase=batch), tx)


# --------------------------------------------------------------------------- tools


def _slot_update(s: LoopState, index: int, slot: ToolSlot) -> LoopState:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    slots = batch.slots[:index] + (slot,) + batch.slots[index + 1 :]
    return _set(s, phase=replace(batch, slots=slots))


def _emit_result(tx: _Tx, slot: ToolSlot, with_message: bool) -> ToolResultMessage:
    result = slot.result
    assert result is not None
    tx.emit(ToolExecutionEndEvent(slot.call.id, slot.call.name, result, slot.is_error))
    message = _result_message(slot)
    if with_message:
        tx.emit(MessageStartEvent(message))
        tx.emit(MessageEndEvent(message))
    return message


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


def _complete(s: LoopState, tx: _Tx, index: int, result: AgentToolResult, is_error: bool) -> LoopState:
    """Slot ``index`` has its final result: emit its end (and, sequentially, its message)."""
    batch = s.phase
    assert isinstance(batch, RunningTools)
    slot = replace(batch.slots[index], step="done", result=result, is_error=is_error, wait_id=-1, at=tx.at)
    _emit_result(tx, slot, with_message=batch.sequential)
    return _slot_update(s, index, slot)


def _prepare(s: LoopState, tx: _Tx, index: int) -> LoopState:
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
    if spec.has_prepare_arguments:
        s, id = _new_id(s)
        tx.fx.append(PrepareArguments(id, call))
        return _slot_update(s, index, replace(_slot(s, index), step="preparing", wait_id=id))
    return _validate(s, tx, index, call.arguments)


def _slot(s: LoopState, index: int) -> ToolSlot:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    return batch.slots[index]


def _validate(s: LoopState, tx: _Tx, index: int, arguments: Any) -> LoopState:
    call = _slot(s, index).call
    spec = s.tool_index[call.name]
    checked = validate_arguments(spec, arguments)
    if isinstance(checked, Failure):
        return _complete(s, tx, index, error_result(checked.failure()), True)
    args = checked.unwrap()
    if "before_tool_call" in s.hooks:
        batch = s.phase
        assert isinstance(batch, RunningTools)
        s, id = _new_id(s)
        tx.fx.append(BeforeToolCall(id, BeforeToolCallContext(batch.message, call, args, _context(s))))
        return _slot_update(s, index, replace(_slot(s, index), step="checking", wait_id=id, args=args))
    return _ready(s, tx, index, args)


def _ready(s: LoopState, tx: _Tx, index: int, args: Any) -> LoopState:
    if s.aborted:
        return _complete(s, tx, index, error_result(ABORTED_TEXT), True)
    s = _slot_update(s, index, replace(_slot(s, index), step="ready", args=args, wait_id=-1))
    batch = s.phase
    assert isinstance(batch, RunningTools)
    if batch.sequential:
        return _execute(s, tx, index)
    return s


def _execute(s: LoopState, tx: _Tx, index: int) -> LoopState:
    slot = _slot(s, index)
    if s.aborted:
        return _complete(s, tx, index, error_result(ABORTED_TEXT), True)
    s, id = _new_id(s)
    tx.fx.append(ExecuteTool(id, slot.call, slot.args))
    return _slot_update(s, index, replace(slot, step="running", wait_id=id))


def _finish_execution(s: LoopState, tx: _Tx, index: int, result: AgentToolResult, is_error: bool) -> LoopState:
    """The tool returned (or raised): run ``after_tool_call`` or complete the slot."""
    slot = _slot(s, index)
    if "after_tool_call" in s.hooks:
        batch = s.phase
        assert isinstance(batch, RunningTools)
        s, id = _new_id(s)
        ctx = AfterToolCallContext(batch.message, slot.call, slot.args, result, is_error, _context(s))
        tx.fx.append(AfterToolCall(id, ctx))
        return _slot_update(s, index, replace(slot, step="finishing", wait_id=id, result=result, is_error=is_error))
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


def _advance_tools(s: LoopState, tx: _Tx) -> LoopState:
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
                s = _set(s, phase=replace(batch, cursor=batch.cursor + 1))
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


def _tools_done(s: LoopState, tx: _Tx) -> LoopState:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    if batch.sequential:
        results = tuple(_result_message(slot) for slot in batch.slots)
    else:
        results = tuple(_emit_result_message(tx, slot) for slot in batch.slots)
    terminate = all(slot.result is not None and slot.result.terminate is True for slot in batch.slots)
    return _finish_turn(_set(s, has_more_tool_calls=not terminate), tx, batch.message, results)


def _emit_result_message(tx: _Tx, slot: ToolSlot) -> ToolResultMessage:
    message = _result_message(slot)
    tx.emit(MessageStartEvent(message))
    tx.emit(MessageEndEvent(message))
    return message


def _find_slot(s: LoopState, id: int) -> int | None:
    batch = s.phase
    if not isinstance(batch, RunningTools):
        return None
    for i, slot in enumerate(batch.slots):
        if slot.wait_id == id:
            return i
    return None


def _on_tool_answer(s: LoopState, inp: Input, tx: _Tx) -> LoopState:
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
    if isinstance(inp, AfterToolCallDecided):
        assert slot.result is not None
        result, is_error = _patch(slot.result, slot.is_error, inp.result)
        return _advance_tools(_complete(s, tx, index, result, is_error), tx)
    assert isinstance(inp, HookFailed)
    # prepare_arguments, before_tool_call or after_tool_call raised: an error result.
    return _advance_tools(_complete(s, tx, index, error_result(inp.error), True), tx)


# --------------------------------------------------------------------------- turn end


def _finish_turn(
    s: LoopState, tx: _Tx, message: AssistantMessage, results: tuple[ToolResultMessage, ...]
) -> LoopState:
    for result in results:
        s = _append(s, result)
    tx.emit(TurnEndEvent(message, results))
    s = _set(s, turn_open=False, last_turn=CompletedTurn(message, results))
    if s.aborted:
        return _end_run(s, tx)
    if "should_stop_after_turn" in s.hooks:
        s, id = _new_id(s)
        turn = s.last_turn
        assert turn is not None
        ctx = PrepareNextTurnContext(turn.message, turn.tool_results, _context(s), s.new_messages)
        tx.fx.append(ShouldStopAfterTurn(id, ctx))
        return _set(s, phase=AwaitingStopDecision(id))
    return _poll_steering(s, tx, "turn")


# --------------------------------------------------------------------------- hook answers


def _on_steering(s: LoopState, inp: SteeringPolled, tx: _Tx) -> LoopState:
    phase = s.phase
    assert isinstance(phase, AwaitingSteering)
    return _steering_arrived(s, tx, phase.after, tuple(inp.messages))


def _on_follow_ups(s: LoopState, inp: FollowUpsPolled, tx: _Tx) -> LoopState:
    if inp.messages:
        return _next_turn(_set(s, pending=tuple(inp.messages)), tx)
    return _end_run(s, tx)


def _on_transformed(s: LoopState, inp: ContextTransformed, tx: _Tx) -> LoopState:
    return _convert(s, tx, inp.messages)


def _on_converted(s: LoopState, inp: ContextConverted, tx: _Tx) -> LoopState:
    return _call_llm(s, tx, inp.messages)


def _on_next_turn(s: LoopState, inp: NextTurnPrepared, tx: _Tx) -> LoopState:
    if inp.next_turn is not None:
        s = _apply_next_turn(s, inp.next_turn)
    return _after_prepare(s, tx)


def _on_stop_decided(s: LoopState, inp: StopAfterTurnDecided, tx: _Tx) -> LoopState:
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


def _on_hook_failed(s: LoopState, inp: HookFailed, tx: _Tx) -> LoopState:
    if isinstance(s.phase, RunningTools):
        return _on_tool_answer(s, inp, tx)
    return _fail_run(s, tx, f"{_HOOK_OF_PHASE[type(s.phase)]} failed: {inp.error}")


def _on_abort(s: LoopState, inp: AbortRequested, tx: _Tx) -> LoopState:
    if s.aborted:
        return s
    s = _set(s, aborted=True)
    phase = s.phase
    if isinstance(phase, Idle):
        return s  # the run will stop before its first model call
    if isinstance(phase, Streaming):
        return _abort_stream(s, tx)
    if isinstance(phase, RunningTools):
        # Calls in flight finish (they see the aborted signal); the rest are aborted as reached.
        return _advance_tools(s, tx)
    return _abort_now(s, tx)


# --------------------------------------------------------------------------- the table

_Handler: TypeAlias = Callable[[LoopState, Any, _Tx], LoopState]

_WAITING_HOOK_PHASES: Final = tuple(_HOOK_OF_PHASE)
_TOOL_INPUTS: Final = (ArgumentsPrepared, BeforeToolCallDecided, ToolUpdated, ToolFinished, ToolFailed,
                       AfterToolCallDecided)

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
    AfterToolCallDecided: ("finishing",),
    HookFailed: ("preparing", "checking", "finishing"),
}


def _reject(s: LoopState, inp: Input, reason: str) -> StepResult:
    return Failure(Rejection(reason, s.phase.name, inp.type))


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


def step(state: LoopState, input: Input) -> StepResult:
    """Advance the run by one input. Returns the new state and the effects to carry out, or a
    :class:`Rejection` (and the state is unchanged)."""
    handler = TRANSITIONS.get((type(state.phase), type(input)))
    if handler is None:
        return _reject(state, input, f"{input.type} is not expected while {state.phase.name}")
    problem = _check(state, input)
    if problem is not None:
        return _reject(state, input, problem)
    tx = _Tx(input.at)
    new_state = handler(state, input, tx)
    return Success((new_state, tuple(tx.fx)))


def phase_name(state: LoopState) -> str:
    """The current phase's name (``idle``, ``streaming`` ...)."""
    phase: Phase = state.phase
    return phase.name
