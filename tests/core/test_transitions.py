"""Transition table tests, h11 style: phase x input -> exact effects, or a rejection.

Each row builds a state in some phase by feeding a short input list, feeds one more input and
compares the effects (summarised as ``emit:<event type>`` or the effect type) with the row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from returns.result import Failure

from agentcore import (
    AbortRequested,
    AgentContext,
    AgentToolResult,
    BeforeToolCallDecided,
    BeforeToolCallResult,
    Continued,
    FollowUpsPolled,
    HookFailed,
    LoopState,
    Model,
    PartialAssistantMessage,
    Started,
    SteeringPolled,
    StreamEventReceived,
    StreamFailed,
    TextContent,
    ToolFinished,
    ToolSpec,
    ToolUpdated,
    UserMessage,
    initial_state,
    step,
)

from .world import call, reply, stream_events

ECHO = ToolSpec("echo", parameters={"type": "object"})
USER = UserMessage("hi", timestamp=1)


def fresh(hooks: tuple[str, ...] = (), messages: tuple[Any, ...] = ()) -> LoopState:
    return initial_state(AgentContext("sys", messages, [ECHO]), model=Model(id="m"), hooks=frozenset(hooks))


def feed(s: LoopState, *inputs: Any) -> LoopState:
    for inp in inputs:
        s = step(s, inp).unwrap()[0]
    return s


def summary(effects: Any) -> list[str]:
    return [f"emit:{e.event.type}" if e.type == "emit" else e.type for e in effects]


def final(message: Any) -> Any:
    return stream_events(message)[-1]


# Builders of states in each phase ------------------------------------------------------------

def idle() -> LoopState:
    return fresh()


def streaming() -> LoopState:
    return feed(fresh(), Started((USER,), 1))


def streaming_started() -> LoopState:
    s = streaming()
    return feed(s, StreamEventReceived(1, StartEvent_(), 2))


def StartEvent_() -> Any:
    return stream_events(reply("x"))[0]


def steering_at_start() -> LoopState:
    return feed(fresh(("get_steering_messages",)), Started((USER,), 1))


def tools_running() -> LoopState:
    s = streaming()
    return feed(s, StreamEventReceived(1, final(reply(call("c1", "echo"))), 2))


def follow_ups() -> LoopState:
    s = feed(fresh(("get_follow_up_messages",)), Started((USER,), 1))
    return feed(s, StreamEventReceived(1, final(reply("done")), 2))


def finished() -> LoopState:
    return feed(streaming(), StreamEventReceived(1, final(reply("done")), 2))


PARTIAL = PartialAssistantMessage.begin(model="m")

Row = tuple[str, Callable[[], LoopState], Any, Any]

TABLE: list[Row] = [
    ("start", idle, Started((USER,), 1),
     ["emit:agent_start", "emit:turn_start", "emit:message_start", "emit:message_end", "call_llm"]),
    ("start with steering hook", lambda: fresh(("get_steering_messages",)), Started((USER,), 1),
     ["emit:agent_start", "emit:turn_start", "emit:message_start", "emit:message_end", "poll_steering"]),
    ("continue", lambda: fresh(messages=(USER,)), Continued(1),
     ["emit:agent_start", "emit:turn_start", "call_llm"]),
    ("continue empty", idle, Continued(1), "Cannot continue: no messages in context"),
    ("continue after assistant", lambda: fresh(messages=(USER, reply("x"))), Continued(1),
     "Cannot continue from message role: assistant"),
    ("stream before start", idle, StreamEventReceived(1, final(reply("x")), 1),
     "stream_event_received is not expected while idle"),
    ("abort while idle", idle, AbortRequested(1), []),
    ("steering arrives", steering_at_start, SteeringPolled(1, (UserMessage("s"),), 2),
     ["emit:message_start", "emit:message_end", "call_llm"]),
    ("steering with wrong id", steering_at_start, SteeringPolled(7, (), 2),
     "expected an answer for id 1, got id 7"),
    ("steering hook fails", steering_at_start, HookFailed(1, "boom", 2),
     ["emit:message_start", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]),
    ("abort while polling at start", steering_at_start, AbortRequested(2),
     ["emit:message_start", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]),
    ("stream start", streaming, StreamEventReceived(1, StartEvent_(), 2), ["emit:message_start"]),
    ("stream delta", streaming_started, StreamEventReceived(1, PARTIAL.text_start(), 3), ["emit:message_update"]),
    ("block event before start ends the reply", streaming, StreamEventReceived(1, PARTIAL.text_start(), 3),
     ["cancel_llm", "emit:message_start", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]),
    ("stream for another call", streaming, StreamEventReceived(9, StartEvent_(), 2),
     "expected an answer for id 1, got id 9"),
    ("text reply done", streaming_started, StreamEventReceived(1, final(reply("x")), 3),
     ["emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]),
    ("done without start", streaming, StreamEventReceived(1, final(reply("x")), 3),
     ["emit:message_start", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]),
    ("tool call reply", streaming, StreamEventReceived(1, final(reply(call("c1", "echo"))), 3),
     ["emit:message_start", "emit:message_end", "emit:tool_execution_start", "execute_tool"]),
    ("stream failed", streaming, StreamFailed(1, "reset", 3),
     ["emit:message_start", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]),
    ("abort while streaming", streaming_started, AbortRequested(3),
     ["cancel_llm", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]),
    ("tool update", tools_running, ToolUpdated(2, {"progress": 1}, 4), ["emit:tool_execution_update"]),
    ("tool finished", tools_running, ToolFinished(2, AgentToolResult((TextContent("ok"),)), 4),
     ["emit:tool_execution_end", "emit:message_start", "emit:message_end", "emit:turn_end",
      "emit:turn_start", "call_llm"]),
    ("tool answer with unknown id", tools_running, ToolFinished(5, AgentToolResult(), 4),
     "no tool call is waiting for an answer with id 5"),
    ("before_tool_call answer while running", tools_running, BeforeToolCallDecided(2, BeforeToolCallResult(), 4),
     "tool call c1 is running, it cannot take before_tool_call_decided"),
    ("abort while tools run", tools_running, AbortRequested(4), []),
    ("follow-up arrives", follow_ups, FollowUpsPolled(2, (UserMessage("more"),), 4),
     ["emit:turn_start", "emit:message_start", "emit:message_end", "call_llm"]),
    ("no follow-up", follow_ups, FollowUpsPolled(2, (), 4), ["emit:agent_end", "run_ended"]),
    ("abort between turns", follow_ups, AbortRequested(4), ["emit:agent_end", "run_ended"]),
    ("anything after the end", finished, AbortRequested(5), "abort_requested is not expected while finished"),
    ("start twice", finished, Started((USER,), 5), "started is not expected while finished"),
]


@pytest.mark.parametrize(("name", "build", "inp", "expected"), TABLE, ids=[r[0] for r in TABLE])
def test_transition(name: str, build: Callable[[], LoopState], inp: Any, expected: Any) -> None:
    before = build()
    result = step(before, inp)
    if isinstance(expected, str):
        assert isinstance(result, Failure)
        assert result.failure().reason == expected
        assert result.failure().phase == before.phase.name
    else:
        after, effects = result.unwrap()
        assert summary(effects) == expected


def test_rejection_leaves_the_state_untouched() -> None:
    s = tools_running()
    result = step(s, ToolFinished(99, AgentToolResult(), 1))
    assert isinstance(result, Failure)
    assert str(result.failure()) == (
        "no tool call is waiting for an answer with id 99 (phase running_tools, input tool_finished)")
