"""How a turn ends, seen through ``step``: a reply cut by an abort or a broken stream when the
stream function sends finished ``AssistantMessage`` partials (not the library's
``PartialAssistantMessage``), the exact events of a turn a hook failure or an abort ends, the
stop reason a done or error event gives a partial reply, and what the hooks after a turn see.

Written against the survivors of the mutation sample (docs/mutation.md)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    AbortRequested,
    AgentContext,
    AgentEndEvent,
    AgentToolResult,
    AssistantMessage,
    CancelLlm,
    DoneEvent,
    Emit,
    ErrorEvent,
    HookFailed,
    MessageEndEvent,
    MessageStartEvent,
    Model,
    NextTurnPrepared,
    PartialAssistantMessage,
    PrepareNextTurnContext,
    Started,
    StartEvent,
    StreamEventReceived,
    TextContent,
    TextDeltaEvent,
    TextStartEvent,
    ToolExecutionEndEvent,
    ToolFinished,
    ToolSpec,
    TurnEndEvent,
    UserMessage,
    initial_state,
    step,
)
from agentcore.effects import ExecuteTool, PrepareNextTurn, ShouldStopAfterTurn
from agentcore.state import Finished
from agentcore.tools import error_result

from .world import call, reply, stream_events

USER = UserMessage("go", timestamp=1)


def events(effects: Any) -> list[Any]:
    return [e.event for e in effects if isinstance(e, Emit)]


def streaming_finished_partials() -> tuple[Any, AssistantMessage]:
    """A run whose stream function sends ``AssistantMessage`` partials: started, one text block
    open with "he" in it. The state and that partial."""
    s, effects = step(initial_state(AgentContext(), model=Model(id="m")), Started((USER,), 1)).unwrap()
    llm = effects[-1].id
    empty = AssistantMessage((), api="a", provider="p", model="m", stop_reason="stop", timestamp=2)
    with_text = AssistantMessage((TextContent("he"),), api="a", provider="p", model="m", stop_reason="stop",
                                 timestamp=2)
    for ev in (StartEvent(empty), TextStartEvent(0, with_text), TextDeltaEvent(0, "he", with_text)):
        s, effects = step(s, StreamEventReceived(llm, ev, 2)).unwrap()
    return s, with_text


def test_an_abort_of_a_reply_streamed_as_finished_messages_ends_it_as_aborted() -> None:
    s, partial = streaming_finished_partials()
    s, effects = step(s, AbortRequested(3)).unwrap()
    final = AssistantMessage((TextContent("he"),), api="a", provider="p", model="m", stop_reason="aborted",
                             error_message="Request was aborted", timestamp=2)
    assert events(effects) == [MessageEndEvent(final), TurnEndEvent(final, ()), AgentEndEvent((USER, final))]
    assert isinstance(s.phase, Finished) and s.messages[-1] == final


def test_a_broken_stream_of_finished_messages_ends_the_reply_as_an_error() -> None:
    s, partial = streaming_finished_partials()
    s, effects = step(s, StreamEventReceived(1, TextDeltaEvent(5, "x", partial), 3)).unwrap()
    final = events(effects)[0].message
    assert (final.stop_reason, final.content, final.error_message) == (
        "error", (TextContent("he"),),
        "Stream protocol error: text_delta arrived for content block 5, which was never started (expected start "
        "first, then content block events, then done or error)")


@pytest.mark.parametrize("hook", ["get_steering_messages", "transform_context", "convert_to_llm"])
def test_a_hook_that_fails_before_the_model_call_ends_the_turn_with_an_error_reply(hook: str) -> None:
    s = initial_state(AgentContext(), model=Model(id="m", api="api-x", provider="prov-x"), hooks=frozenset({hook}))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    s, effects = step(s, HookFailed(effects[-1].id, "boom", 4)).unwrap()
    final = AssistantMessage((), api="api-x", provider="prov-x", model="m", stop_reason="error",
                             error_message=f"{hook} failed: boom", timestamp=4)
    assert events(effects) == [MessageStartEvent(final), MessageEndEvent(final), TurnEndEvent(final, ()),
                               AgentEndEvent((USER, final))]
    assert type(events(effects)[2].tool_results) is tuple


def test_an_abort_while_a_hook_runs_ends_the_turn_with_an_aborted_reply() -> None:
    s = initial_state(AgentContext(), model=Model(id="m"), hooks=frozenset({"transform_context"}))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    s, effects = step(s, AbortRequested(4)).unwrap()
    (end,) = [e for e in events(effects) if e.type == "turn_end"]
    assert end.tool_results == () and type(end.tool_results) is tuple
    assert end.message.stop_reason == "aborted" and end.message.error_message == "Request was aborted"


@pytest.mark.parametrize("reason", ["stop", "length", "toolUse"])
def test_a_done_event_with_a_partial_reply_gives_it_the_events_stop_reason(reason: str) -> None:
    # A reply cut by the output limit ("length") keeps that reason: its tool call may be cut
    # too, so it does not run; it gets the cut-off error result.
    s = initial_state(AgentContext("", (), (ToolSpec("echo", parameters={"type": "object"}),)), model=Model(id="m"))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    llm = effects[-1].id
    p = PartialAssistantMessage.begin(model="m")
    opened = p.toolcall_start("c1", "echo")
    delta = opened.partial.toolcall_delta(0, "{}")
    closed = delta.partial.toolcall_end(0, {})
    for ev in (StartEvent(p), opened, delta, closed, DoneEvent(reason, closed.partial)):  # type: ignore[arg-type]
        s, effects = step(s, StreamEventReceived(llm, ev, 2)).unwrap()
    final = closed.partial.to_message(stop_reason=reason)
    assert events(effects)[0] == MessageEndEvent(final)
    runs = [e for e in effects if isinstance(e, ExecuteTool)]
    if reason == "length":
        assert runs == [] and events(effects)[2] == ToolExecutionEndEvent(
            "c1", "echo", error_result('Tool call "echo" was not executed: the reply was cut off by the output token '
                                       'limit, so its arguments may be incomplete. Re-issue the call with complete '
                                       'arguments.'), True)
    else:
        assert [e.tool_call.id for e in runs] == ["c1"]


@pytest.mark.parametrize("reason", ["error", "aborted"])
def test_an_error_event_carrying_a_partial_reply_ends_the_reply_from_that_partial(reason: str) -> None:
    s, effects = step(initial_state(AgentContext(), model=Model(id="m")), Started((USER,), 1)).unwrap()
    llm = effects[-1].id
    p = PartialAssistantMessage.begin(model="m", timestamp=2)
    opened = p.text_start()
    delta = opened.partial.text_delta(0, "half")
    for ev in (StartEvent(p), opened, delta, ErrorEvent(reason, delta.partial)):  # type: ignore[arg-type]
        s, effects = step(s, StreamEventReceived(llm, ev, 2)).unwrap()
    final = delta.partial.to_message(stop_reason=reason,
                                     error_message="The stream ended with an error event that gave no error_message")
    assert final.content == (TextContent("half"),)
    assert events(effects) == [MessageEndEvent(final), TurnEndEvent(final, ()), AgentEndEvent((USER, final))]


def test_the_hooks_after_a_turn_see_that_turn() -> None:
    echo = ToolSpec("echo", parameters={"type": "object"})
    s = initial_state(AgentContext("sys", (), (echo,)), model=Model(id="m"),
                      hooks=frozenset({"prepare_next_turn", "should_stop_after_turn"}))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    llm = effects[-1].id
    for ev in stream_events(reply(call("c", "echo"))):
        s, effects = step(s, StreamEventReceived(llm, ev, 2)).unwrap()
    s, effects = step(s, ToolFinished(effects[-1].id, AgentToolResult((TextContent("ok"),)), 3)).unwrap()
    turn_end = [e for e in events(effects) if e.type == "turn_end"][0]
    prepare = effects[-1]
    assert isinstance(prepare, PrepareNextTurn)
    expected = PrepareNextTurnContext(turn_end.message, turn_end.tool_results,
                                      AgentContext("sys", s.messages, (echo,)), s.new_messages)
    assert prepare.context == expected
    assert list(expected.new_messages) == [USER, turn_end.message, *turn_end.tool_results]
    s, effects = step(s, NextTurnPrepared(prepare.id, None, 4)).unwrap()
    assert isinstance(effects[-1], ShouldStopAfterTurn) and effects[-1].context == expected


@pytest.mark.parametrize(("opened", "index"), [(0, 1), (1, 0), (1, 2)])
def test_a_block_started_out_of_order_breaks_the_stream(opened: int, index: int) -> None:
    s, effects = step(initial_state(AgentContext(), model=Model(id="m")), Started((USER,), 1)).unwrap()
    llm = effects[-1].id
    p = PartialAssistantMessage.begin(model="m", timestamp=2)
    events_in = [StartEvent(p)]
    for _ in range(opened):
        ev = p.text_start()
        events_in.append(ev)
        p = ev.partial
    for ev in events_in:
        s, effects = step(s, StreamEventReceived(llm, ev, 2)).unwrap()
    s, effects = step(s, StreamEventReceived(llm, TextStartEvent(index, p), 3)).unwrap()
    text = (f"Stream protocol error: text_start arrived for content block {index}, but the next new block is "
            f"{opened} (expected start first, then content block events, then done or error)")
    final = p.to_message(stop_reason="error", error_message=text)
    assert effects[0] == CancelLlm(llm)
    assert events(effects) == [MessageEndEvent(final), TurnEndEvent(final, ()), AgentEndEvent((USER, final))]


def test_a_reply_without_tool_calls_leaves_no_more_tool_calls_in_the_state() -> None:
    s = initial_state(AgentContext(), model=Model(id="m"), hooks=frozenset({"get_follow_up_messages"}))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    llm = effects[-1].id
    for ev in stream_events(reply("done")):
        s, effects = step(s, StreamEventReceived(llm, ev, 2)).unwrap()
    assert s.phase.name == "awaiting_follow_ups"
    assert s.run.has_more_tool_calls is False
