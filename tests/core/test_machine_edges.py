"""Edge cases of the state machine (``agentcore/machine.py``) that the scenario tests do not reach.

Each test drives the pure core input by input and compares the exact effects, events, texts or
state; most of them were written against a survivor of the mutation run (docs/mutation.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pyrsistent import pvector
from returns.result import Failure

from agentcore import (
    AbortRequested,
    AfterToolCallDecided,
    AfterToolCallResult,
    AgentContext,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallDecided,
    BeforeToolCallResult,
    CallLlm,
    CancelLlm,
    ContextTransformed,
    ConvertToLlm,
    DoneEvent,
    Emit,
    ErrorEvent,
    LoopState,
    Model,
    PartialAssistantMessage,
    Started,
    StartEvent,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamEventReceived,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    ToolFailed,
    ToolFinished,
    ToolSpec,
    UserMessage,
    awaits,
    initial_state,
    step,
    stream_event_problem,
)
from agentcore.effects import (
    AfterToolCall,
    BeforeToolCall,
    ExecuteTool,
    PrepareArguments,
    ShouldStopAfterTurn,
    TransformContext,
)
from agentcore.events import (
    AgentEndEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
)
from agentcore.inputs import ToolTimedOut
from agentcore.messages import ToolResultMessage, Usage
from agentcore.state import AwaitingNextTurn, AwaitingSteering, Finished
from agentcore.texts import (
    ABORTED_TEXT,
    BLOCKED_TEXT,
    NO_ERROR_MESSAGE_TEXT,
    length_cutoff_text,
    not_a_stream_event_text,
    stream_order_text,
    stream_payload_text,
    timed_out_text,
)
from agentcore.tools import error_result

from .world import call, reply, stream_events

ECHO = ToolSpec("echo", parameters={"type": "object"})
PREP = ToolSpec("prep", parameters={"type": "object"}, has_prepare_arguments=True)
USER = UserMessage("hi", timestamp=1)
MODEL = Model(id="m", api="api-x", provider="prov-x")


def fresh(hooks: Sequence[str] = (), tools: Sequence[ToolSpec] = (ECHO,), **kw: Any) -> LoopState:
    return initial_state(AgentContext("sys", (), list(tools)), model=kw.pop("model", MODEL),
                         hooks=frozenset(hooks), **kw)


def go(s: LoopState, inp: Any) -> tuple[LoopState, tuple[Any, ...]]:
    new, effects = step(s, inp).unwrap()
    return new, effects


def events(effects: Sequence[Any]) -> list[Any]:
    return [e.event for e in effects if isinstance(e, Emit)]


def others(effects: Sequence[Any]) -> list[Any]:
    return [e for e in effects if not isinstance(e, Emit)]


def started(hooks: Sequence[str] = (), tools: Sequence[ToolSpec] = (ECHO,), **kw: Any) -> LoopState:
    """Streaming, the model call has id 1 (no hook before it)."""
    s, fx = go(fresh(hooks, tools, **kw), Started((USER,), 1))
    assert isinstance(others(fx)[-1], CallLlm)
    return s


def stream(s: LoopState, id: int, message: AssistantMessage, at: int = 5) -> tuple[LoopState, tuple[Any, ...]]:
    """Feed every stream event of ``message``; the effects of the last one."""
    fx: tuple[Any, ...] = ()
    for ev in stream_events(message):
        s, fx = go(s, StreamEventReceived(id, ev, at))
    return s, fx


def begin() -> PartialAssistantMessage:
    return PartialAssistantMessage.begin(api="api-x", provider="prov-x", model="m", timestamp=0)


def streaming() -> tuple[LoopState, PartialAssistantMessage]:
    """A run whose model call has sent its start event: the state and the partial."""
    p = begin()
    s, _ = go(started(), StreamEventReceived(1, StartEvent(p), 2))
    return s, p


def streaming_text() -> tuple[LoopState, Any]:
    """A run streaming a reply whose text block 0 is open: the state and that block's start event."""
    s, p = streaming()
    opened = p.text_start()
    s, _ = go(s, StreamEventReceived(1, opened, 3))
    return s, opened


def broken(s: LoopState, event: Any, text: str, partial: Any = None, at: int = 9) -> None:
    """``event`` breaks the stream: the call is cancelled and the run ends with ``text``."""
    s, fx = go(s, StreamEventReceived(1, event, at))
    if partial is None:
        final = AssistantMessage((), api="api-x", provider="prov-x", model="m", stop_reason="error",
                                 error_message=text, timestamp=at)
        assert events(fx)[0] == MessageStartEvent(final)
    else:
        final = partial.to_message(stop_reason="error", error_message=text)
    assert others(fx)[0] == CancelLlm(1)
    assert MessageEndEvent(final) in events(fx)
    assert events(fx)[-2:] == [TurnEndEvent(final, ()), AgentEndEvent((USER, final))]
    assert isinstance(s.phase, Finished)
    assert s.run.turn_open is False


# --------------------------------------------------------------------------- stream events


def test_stream_event_problem_names_the_event_the_field_and_the_value() -> None:
    assert stream_event_problem(DoneEvent("stop", "x")) == stream_payload_text("done", "message", "x")  # type: ignore[arg-type]
    assert "the done event's message was a str ('x')" in stream_payload_text("done", "message", "x")
    assert stream_event_problem(ErrorEvent("error", 5)) == stream_payload_text("error", "error", 5)  # type: ignore[arg-type]
    assert "the error event's error was an int (5)" in stream_payload_text("error", "error", 5)
    delta = TextDeltaEvent(0, "a", None)  # type: ignore[arg-type]
    assert stream_event_problem(delta) == stream_payload_text("text_delta", "partial", None)
    assert "the text_delta event's partial was None (None)" in stream_payload_text("text_delta", "partial", None)


def test_something_that_is_not_a_stream_event_cancels_the_call_and_ends_the_run_with_the_problem() -> None:
    item = {"type": "text_delta"}
    broken(started(), item, not_a_stream_event_text(item))


def test_a_second_start_event_breaks_the_stream() -> None:
    s, p = streaming()
    broken(s, StartEvent(p), "Stream protocol error: start arrived a second time "
           "(expected start first, then content block events, then done or error)", partial=p)


def test_a_block_event_before_the_start_event_breaks_the_stream() -> None:
    p = begin()
    broken(started(), p.text_start(), stream_order_text("text_start", "before the stream's start event"))


def test_a_delta_for_a_block_that_was_never_started_breaks_the_stream() -> None:
    s, p = streaming()
    delta = TextDeltaEvent(0, "a", p)
    broken(s, delta, "Stream protocol error: text_delta arrived for content block 0, which was never "
           "started (expected start first, then content block events, then done or error)", partial=p)


def test_an_end_for_a_block_that_was_never_started_breaks_the_stream() -> None:
    s, opened = streaming_text()
    p1 = opened.partial
    end = p1.text_end(0)
    late = TextEndEvent(1, end.content, p1)
    broken(s, late, stream_order_text("text_end", "for content block 1, which was never started"), partial=p1)


def test_a_delta_after_its_block_ended_breaks_the_stream() -> None:
    s, opened = streaming_text()
    ended = opened.partial.text_end(0)
    s, _ = go(s, StreamEventReceived(1, ended, 4))
    assert s.phase.blocks == ("",)  # type: ignore[union-attr]
    p2 = ended.partial
    broken(s, TextDeltaEvent(0, "more", p2),
           stream_order_text("text_delta", "for content block 0, which had already ended"), partial=p2)


def test_ending_one_block_leaves_the_next_open_block_open() -> None:
    s, p = streaming()
    evs: list[Any] = []
    e0 = p.text_start()
    evs.append(e0)
    e1 = e0.partial.thinking_start()
    evs.append(e1)
    e2 = e1.partial.text_delta(0, "a")
    evs.append(e2)
    e3 = e2.partial.text_end(0)
    evs.append(e3)
    e4 = e3.partial.thinking_delta(1, "hmm")
    evs.append(e4)
    e5 = e4.partial.thinking_end(1)
    evs.append(e5)
    for ev in evs:
        s, fx = go(s, StreamEventReceived(1, ev, 3))
        assert others(fx) == []
    assert s.phase.blocks == ("", "")  # type: ignore[union-attr]
    done = e5.partial.done("stop")
    s, fx = go(s, StreamEventReceived(1, done, 4))
    assert not any(isinstance(e, CancelLlm) for e in fx)
    assert isinstance(s.phase, Finished)
    assert s.run.messages[-1].stop_reason == "stop"


def test_a_delta_whose_index_is_not_an_integer_breaks_the_stream() -> None:
    s, opened = streaming_text()
    p1 = opened.partial
    bad = TextDeltaEvent("0", "a", p1)  # type: ignore[arg-type]
    broken(s, bad, "Stream protocol error: the text_delta event's content_index was '0'; expected the "
           "integer index of its content block", partial=p1)


def test_a_delta_without_a_partial_on_an_open_block_breaks_the_stream() -> None:
    s, opened = streaming_text()
    bad = TextDeltaEvent(0, "a", None)  # type: ignore[arg-type]
    broken(s, bad, stream_payload_text("text_delta", "partial", None), partial=opened.partial)


def test_a_stream_delta_outside_a_model_call_is_rejected() -> None:
    p = begin()
    out = step(fresh(), StreamEventReceived(1, TextDeltaEvent(0, "a", p), 1))
    assert isinstance(out, Failure)
    assert out.failure().reason == "stream_event_received is not expected while idle"


def test_a_done_event_with_a_partial_takes_its_stop_reason_from_the_event() -> None:
    s, p = streaming()
    e0 = p.toolcall_start("c1", "echo")
    e1 = e0.partial.toolcall_delta(0, "{}")
    e2 = e1.partial.toolcall_end(0, {})
    for ev in (e0, e1, e2):
        s, _ = go(s, StreamEventReceived(1, ev, 3))
    s, fx = go(s, StreamEventReceived(1, DoneEvent("toolUse", e2.partial), 4))  # type: ignore[arg-type]
    final = e2.partial.to_message(stop_reason="toolUse")
    assert events(fx)[0] == MessageEndEvent(final)
    assert [type(e) for e in others(fx)] == [ExecuteTool]


def test_a_done_event_with_a_partial_and_an_unknown_reason_stops() -> None:
    s, p = streaming()
    s, fx = go(s, StreamEventReceived(1, DoneEvent("error", p), 4))  # type: ignore[arg-type]
    final = p.to_message(stop_reason="stop")
    assert events(fx) == [MessageEndEvent(final), TurnEndEvent(final, ()), AgentEndEvent((USER, final))]


def _error_end(event: ErrorEvent) -> AssistantMessage:
    s, _ = streaming()
    s, fx = go(s, StreamEventReceived(1, event, 3))
    assert isinstance(s.phase, Finished)
    end = events(fx)[0]
    assert isinstance(end, MessageEndEvent)
    assert events(fx)[1] == TurnEndEvent(end.message, ())
    message = end.message
    assert isinstance(message, AssistantMessage)
    return message


def test_an_error_event_whose_message_says_stop_ends_as_the_event_says() -> None:
    quiet = AssistantMessage((), api="api-x", stop_reason="stop", timestamp=3)
    assert _error_end(ErrorEvent("aborted", quiet)) == AssistantMessage(
        (), api="api-x", stop_reason="aborted", error_message=NO_ERROR_MESSAGE_TEXT, timestamp=3)
    told = AssistantMessage((), api="api-x", stop_reason="stop", error_message="boom", timestamp=3)
    assert _error_end(ErrorEvent("error", told)) == AssistantMessage(
        (), api="api-x", stop_reason="error", error_message="boom", timestamp=3)


def test_an_error_event_keeps_the_error_stop_reason_of_its_message() -> None:
    failed = AssistantMessage((), stop_reason="error", error_message="boom", timestamp=3)
    assert _error_end(ErrorEvent("aborted", failed)) == failed


def test_a_plain_reply_ends_its_turn_with_that_reply() -> None:
    final = reply("hello")
    s, fx = stream(started(), 1, final)
    assert events(fx)[-2:] == [TurnEndEvent(final, ()), AgentEndEvent((USER, final))]
    assert s.run.turn_open is False
    assert s.run.last_turn is not None and s.run.last_turn.message == final


def test_a_turn_that_ends_leaves_the_turn_closed_while_prepare_next_turn_runs() -> None:
    s, _fx = stream(started(["prepare_next_turn"]), 1, reply("hello"))
    assert isinstance(s.phase, AwaitingNextTurn)
    assert s.run.turn_open is False


# --------------------------------------------------------------------------- state and context


def test_the_state_keeps_the_default_conversion_of_the_context() -> None:
    s = started()
    assert s.run.llm_messages == pvector([USER])
    call_llm = CallLlm(1, MODEL, "off", "sys", pvector([USER]), (ECHO,))
    s2, fx = go(fresh(), Started((USER,), 1))
    assert others(fx) == [call_llm]
    assert s2.run.llm_messages == pvector([USER])


def test_a_transform_that_returns_the_context_itself_is_converted_by_default() -> None:
    s, fx = go(fresh(["transform_context"]), Started((USER,), 1))
    transform = others(fx)[0]
    assert transform == TransformContext(1, pvector([USER]))
    assert s.run.llm_messages is None
    s, fx = go(s, ContextTransformed(1, transform.messages, 2))
    assert others(fx) == [CallLlm(2, MODEL, "off", "sys", pvector([USER]), (ECHO,))]


def test_convert_to_llm_is_asked_with_the_id_the_core_waits_for() -> None:
    s, fx = go(fresh(["convert_to_llm"]), Started((USER,), 1))
    assert others(fx) == [ConvertToLlm(1, pvector([USER]))]
    assert awaits(s, 1)


def test_awaits_says_which_answer_the_core_waits_for() -> None:
    assert awaits(fresh(), 1) is False
    s = started()
    assert awaits(s, 1) is True
    assert awaits(s, 2) is False


def test_a_reasoning_model_is_called_with_the_runs_thinking_level() -> None:
    model = Model(id="r", reasoning=True)
    s, fx = go(fresh(model=model, thinking_level="high"), Started((USER,), 1))
    assert others(fx) == [CallLlm(1, model, "high", "sys", pvector([USER]), (ECHO,))]
    assert s.run.thinking_level == "high"


def test_a_step_that_changes_only_the_phase_keeps_the_run_state() -> None:
    s = started()
    s2, _ = go(s, StreamEventReceived(1, StartEvent(begin()), 2))
    assert s2.phase != s.phase
    assert s2.run is s.run


def test_after_should_stop_after_turn_says_go_on_steering_is_polled_after_the_turn() -> None:
    s, _ = go(fresh(["should_stop_after_turn", "get_steering_messages"]), Started((USER,), 1))
    s, _ = go(s, SteeringPolled(1, (), 2))
    s, fx = stream(s, 2, reply("x"))
    assert others(fx) == [ShouldStopAfterTurn(3, others(fx)[0].context)]
    s, _ = go(s, StopAfterTurnDecided(3, False, 6))
    assert s.phase == AwaitingSteering(4)


# --------------------------------------------------------------------------- tools


def _tool_turn(hooks: Sequence[str] = (), tools: Sequence[ToolSpec] = (ECHO,), *calls: Any,
               **kw: Any) -> tuple[LoopState, tuple[Any, ...], AssistantMessage]:
    message = reply(*(calls or (call("c1", "echo", a=1),)))
    s, fx = stream(started(hooks, tools, **kw), 1, message)
    return s, fx, message


def test_a_finished_tool_gives_an_end_event_and_a_result_message_with_everything() -> None:
    s, fx, message = _tool_turn()
    run = others(fx)[0]
    assert run == ExecuteTool(2, message.tool_calls[0], {"a": 1})
    result = AgentToolResult((TextContent("done"),), {"k": 1}, added_tool_names=("extra",))
    s, fx = go(s, ToolFinished(2, result, 7))
    expected = ToolResultMessage("c1", "echo", (TextContent("done"),), details={"k": 1}, is_error=False,
                                 added_tool_names=("extra",), timestamp=7)
    assert events(fx)[:4] == [ToolExecutionEndEvent("c1", "echo", result, False), MessageStartEvent(expected),
                              MessageEndEvent(expected), TurnEndEvent(message, (expected,))]
    assert s.run.last_turn is not None and s.run.last_turn.tool_results == (expected,)


def test_a_sequential_tool_result_message_carries_the_time_of_the_answer() -> None:
    s, fx, _message = _tool_turn(tool_execution="sequential")
    result = AgentToolResult((TextContent("done"),))
    s, fx = go(s, ToolFinished(2, result, 8))
    expected = ToolResultMessage("c1", "echo", (TextContent("done"),), timestamp=8)
    assert events(fx)[:3] == [ToolExecutionEndEvent("c1", "echo", result, False), MessageStartEvent(expected),
                              MessageEndEvent(expected)]


def test_a_reply_cut_by_the_length_limit_runs_no_tool() -> None:
    message = reply(call("c1", "echo", a=1), stop="length")
    _s, fx = stream(started(), 1, message, at=6)
    text = length_cutoff_text("echo")
    result = error_result(text)
    expected = ToolResultMessage("c1", "echo", (TextContent(text),), details={}, is_error=True, timestamp=6)
    assert events(fx)[0] == MessageEndEvent(message)
    assert events(fx)[1:6] == [ToolExecutionStartEvent("c1", "echo", {"a": 1}),
                               ToolExecutionEndEvent("c1", "echo", result, True), MessageStartEvent(expected),
                               MessageEndEvent(expected), TurnEndEvent(message, (expected,))]
    assert others(fx)[0] == CallLlm(2, MODEL, "off", "sys", pvector([USER, message, expected]), (ECHO,))


def test_a_timed_out_tool_reports_the_timeout() -> None:
    s, fx, _message = _tool_turn()
    s, fx = go(s, ToolTimedOut(2, 500, 7))
    text = timed_out_text("echo", 500)
    assert text == 'Tool "echo" timed out after 500 ms'
    assert events(fx)[0] == ToolExecutionEndEvent("c1", "echo", error_result(text), True)
    assert s.run.messages[-1] == ToolResultMessage("c1", "echo", (TextContent(text),), details={},
                                                   is_error=True, timestamp=7)


def test_after_tool_call_without_a_patch_keeps_the_error_of_a_failed_tool() -> None:
    s, fx, _message = _tool_turn(["after_tool_call"])
    s, fx = go(s, ToolFailed(2, "kaput", 7))
    after = others(fx)[0]
    assert isinstance(after, AfterToolCall) and after.context.is_error is True
    s, fx = go(s, AfterToolCallDecided(after.id, None, 8))
    assert events(fx)[0] == ToolExecutionEndEvent("c1", "echo", error_result("kaput"), True)
    assert events(fx)[0].is_error is True


def test_a_patch_without_terminate_keeps_the_tools_terminate() -> None:
    s, fx, _message = _tool_turn(["after_tool_call"])
    s, fx = go(s, ToolFinished(2, AgentToolResult((TextContent("bye"),), terminate=True), 7))
    after = others(fx)[0]
    s, fx = go(s, AfterToolCallDecided(after.id, AfterToolCallResult(content=(TextContent("patched"),)), 8))
    patched = AgentToolResult((TextContent("patched"),), terminate=True)
    assert events(fx)[0] == ToolExecutionEndEvent("c1", "echo", patched, False)
    assert not any(isinstance(e, CallLlm) for e in fx)
    assert isinstance(s.phase, Finished)
    assert s.run.has_more_tool_calls is False


def test_a_block_that_asks_to_terminate_ends_the_run_after_the_batch() -> None:
    s, fx, _message = _tool_turn(["before_tool_call"])
    before = others(fx)[0]
    assert isinstance(before, BeforeToolCall)
    s, fx = go(s, BeforeToolCallDecided(before.id, BeforeToolCallResult(block=True, terminate=True), 7))
    blocked = error_result(BLOCKED_TEXT, True)
    assert blocked.terminate is True
    assert events(fx)[0] == ToolExecutionEndEvent("c1", "echo", blocked, True)
    assert not any(isinstance(e, CallLlm) for e in fx)
    assert isinstance(s.phase, Finished)


def test_an_abort_while_prepare_arguments_runs_ends_that_call_at_once() -> None:
    s, fx, message = _tool_turn((), (PREP,), call("c1", "prep", a=1))
    assert others(fx) == [PrepareArguments(2, message.tool_calls[0])]
    s, fx = go(s, AbortRequested(7))
    aborted = error_result(ABORTED_TEXT)
    expected = ToolResultMessage("c1", "prep", (TextContent(ABORTED_TEXT),), details={}, is_error=True,
                                 timestamp=7)
    assert events(fx) == [ToolExecutionEndEvent("c1", "prep", aborted, True), MessageStartEvent(expected),
                          MessageEndEvent(expected), TurnEndEvent(message, (expected,)),
                          AgentEndEvent((USER, message, expected))]
    assert isinstance(s.phase, Finished)
    late = step(s, AfterToolCallDecided(2, None, 8))
    assert isinstance(late, Failure)


def test_an_abort_in_a_parallel_batch_stops_the_calls_that_were_ready_to_run() -> None:
    s, fx, _message = _tool_turn(["before_tool_call"], (ECHO,), call("c1", "echo", a=1), call("c2", "echo", a=2))
    first = others(fx)[0]
    s, fx = go(s, BeforeToolCallDecided(first.id, None, 6))
    second = others(fx)[0]
    assert isinstance(second, BeforeToolCall) and second.context.tool_call.id == "c2"
    s, fx = go(s, AbortRequested(7))
    aborted = error_result(ABORTED_TEXT)
    assert events(fx)[:2] == [ToolExecutionEndEvent("c2", "echo", aborted, True),
                              ToolExecutionEndEvent("c1", "echo", aborted, True)]
    assert not any(isinstance(e, ExecuteTool) for e in fx)
    assert isinstance(s.phase, Finished)
    assert [m.is_error for m in s.run.messages[2:]] == [True, True]


@pytest.mark.parametrize(("item", "kind"), [
    (UserMessage("x"), "a UserMessage"), (Usage(), "a Usage"), (3, "an int"), (object(), "an object"),
    ({}, "a dict"), (None, "None"),
])
def test_a_stream_item_s_kind_is_named_with_its_article(item: Any, kind: str) -> None:
    assert not_a_stream_event_text(item).startswith(f"Stream protocol error: the stream function yielded {kind}")
