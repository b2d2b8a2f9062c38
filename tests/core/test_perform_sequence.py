"""Exact effect sequences with ``perform_sequence`` (and its failure reports)."""

from __future__ import annotations

import pytest

from agentcore import (
    AgentContext,
    AgentToolResult,
    BeforeToolCall,
    BeforeToolCallDecided,
    CallLlm,
    ExecuteTool,
    FollowUpsPolled,
    Model,
    PollFollowUps,
    PollSteering,
    ShouldStopAfterTurn,
    Started,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamEventReceived,
    TextContent,
    ToolFinished,
    ToolSpec,
    UserMessage,
    initial_state,
)
from agentcore.testing import perform_sequence

from .world import call, reply, stream_events

ECHO = ToolSpec("echo", parameters={"type": "object"})
ALL_HOOKS = frozenset({"get_steering_messages", "get_follow_up_messages", "before_tool_call",
                       "should_stop_after_turn"})


def final(message: object) -> object:
    return stream_events(message)[-1]  # type: ignore[arg-type]


def test_the_exact_effects_of_a_tool_turn_with_every_hook() -> None:
    state = initial_state(AgentContext("", (), [ECHO]), model=Model(id="m"), hooks=ALL_HOOKS)
    _, events = perform_sequence(state, Started((UserMessage("go"),), 0), [
        (PollSteering, lambda e: SteeringPolled(e.id, (), 1)),
        (CallLlm, lambda e: StreamEventReceived(e.id, final(reply(call("c1", "echo"))), 2)),
        (BeforeToolCall, lambda e: BeforeToolCallDecided(e.id, None, 3)),
        (ExecuteTool, lambda e: ToolFinished(e.id, AgentToolResult((TextContent("ok"),)), 4)),
        (ShouldStopAfterTurn, lambda e: StopAfterTurnDecided(e.id, False, 5)),
        (PollSteering, lambda e: SteeringPolled(e.id, (), 6)),   # once after each turn, no more
        (CallLlm, lambda e: StreamEventReceived(e.id, final(reply("done")), 8)),
        (ShouldStopAfterTurn, lambda e: StopAfterTurnDecided(e.id, False, 9)),
        (PollSteering, lambda e: SteeringPolled(e.id, (), 10)),
        (PollFollowUps, lambda e: FollowUpsPolled(e.id, (), 11)),
    ])
    assert events[-1].type == "agent_end"


def test_a_mismatch_reports_what_ran_and_what_was_expected() -> None:
    state = initial_state(AgentContext("", (), [ECHO]), model=Model(id="m"), hooks=ALL_HOOKS)
    with pytest.raises(AssertionError) as info:
        perform_sequence(state, Started((UserMessage("go"),), 0), [
            (PollSteering, lambda e: SteeringPolled(e.id, (), 1)),
            (ExecuteTool, None),
        ])
    text = str(info.value)
    assert text.startswith("expected ExecuteTool next, got CallLlm(id=2,")
    assert "ran: ['PollSteering']" in text


def test_leftover_expectations_and_unfinished_runs_fail() -> None:
    state = initial_state(AgentContext(), model=Model(id="m"))
    with pytest.raises(AssertionError, match=r"^the run did not end: the core is streaming"):
        perform_sequence(state, Started((UserMessage("go"),), 0), [(CallLlm, None)])
    with pytest.raises(AssertionError, match=r"^expectations left over: \['PollSteering'\]"):
        perform_sequence(state, Started((UserMessage("go"),), 0), [
            (CallLlm, lambda e: StreamEventReceived(e.id, final(reply("x")), 1)), (PollSteering, None)])
