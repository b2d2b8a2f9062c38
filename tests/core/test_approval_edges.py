"""The tool batch's approval and suspension steps, seen through ``step``: what a call waits for
(an approval or a result) and why, the decisions ``decide_tool_call`` and ``Resumed`` may give
(and the exact rejection of any other, the state left as it was), and what each decision does.

Written against the survivors of the mutation sample (docs/mutation.md): each test names the
behaviour it pins."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    AfterToolCallDecided,
    AgentContext,
    AgentTool,
    AgentToolResult,
    ApprovalChecked,
    Approve,
    AssistantMessage,
    BeforeToolCallDecided,
    BeforeToolCallResult,
    Deny,
    Emit,
    Model,
    PendingCall,
    Rejection,
    Resumed,
    Started,
    StreamEventReceived,
    TextContent,
    ToolCallDecided,
    ToolExecutionEndEvent,
    ToolFinished,
    ToolOutput,
    UserMessage,
    initial_state,
    step,
)
from agentcore.effects import AfterToolCall, BeforeToolCall, CheckApproval, DecideToolCall, ExecuteTool, RunSuspended
from agentcore.state import LoopState, Suspended
from agentcore.tools import error_result

from .world import call, reply, stream_events

GATED = AgentTool("gated", "gated", "", {"type": "object"}, print, requires_approval=True)
FREE = AgentTool("free", "free", "", {"type": "object"}, print)
LATER = AgentTool("later", "later", "", {"type": "object"}, print, deferred=True)
ASKS = AgentTool("asks", "asks", "", {"type": "object"}, print, requires_approval=lambda args: True)
TOOLS = (GATED, FREE, LATER, ASKS)
OK = AgentToolResult((TextContent("ok"),))


def run_reply(message: AssistantMessage, hooks: frozenset[str] = frozenset(), mode: str = "parallel",
              tools: tuple[AgentTool, ...] = TOOLS) -> tuple[LoopState, list[Any]]:
    """Start a run and stream ``message``: the state and the effects of the last step."""
    s = initial_state(AgentContext("", (), tools), model=Model(id="m"), hooks=hooks, tool_execution=mode)  # type: ignore[arg-type]
    s, effects = step(s, Started((UserMessage("go", timestamp=1),), 1)).unwrap()
    llm = effects[-1]
    for ev in stream_events(message):
        s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
    return s, list(effects)


def only(effects: list[Any], kind: type) -> Any:
    (found,) = [e for e in effects if isinstance(e, kind)]
    return found


def events(effects: Any) -> list[Any]:
    return [e.event for e in effects if isinstance(e, Emit)]


def refused(s: LoopState, inp: Any) -> Rejection:
    """``inp`` is rejected and the state is left as it was."""
    result = step(s, inp)
    rejection: Rejection = result.failure()
    return rejection


# --------------------------------------------------------------------------- decide_tool_call


def test_decide_tool_call_answering_a_result_for_a_call_that_needs_approval_is_refused() -> None:
    s, effects = run_reply(reply(call("g", "gated", x=1)), frozenset({"decide_tool_call"}))
    decide = only(effects, DecideToolCall)
    assert decide.pending == PendingCall("g", "gated", {"x": 1}, 'Tool "gated" requires approval', "approval")
    assert refused(s, ToolCallDecided(decide.id, ToolOutput("faked"), 3)) == Rejection(
        "tool call g waits for an approval (Approve or Deny), not ToolOutput", "running_tools", "tool_call_decided")
    # the call still waits for its decision: an approval runs the gated tool
    s, effects = step(s, ToolCallDecided(decide.id, Approve(), 4)).unwrap()
    execute = only(effects, ExecuteTool)
    assert (execute.tool_call.id, dict(execute.args)) == ("g", {"x": 1})


def test_decide_tool_call_answering_an_approval_for_a_deferred_call_is_refused() -> None:
    s, effects = run_reply(reply(call("l", "later", x=1)), frozenset({"decide_tool_call"}))
    decide = only(effects, DecideToolCall)
    assert decide.pending == PendingCall(
        "l", "later", {"x": 1}, 'Tool "later" is deferred: its result comes from outside the run', "result")
    assert refused(s, ToolCallDecided(decide.id, Approve(), 3)) == Rejection(
        "tool call l waits for a result (ToolOutput or Deny), not Approve", "running_tools", "tool_call_decided")
    assert refused(s, ToolCallDecided(decide.id, "yes", 3)) == Rejection(  # type: ignore[arg-type]
        "tool call l waits for a result (ToolOutput or Deny), not str 'yes'", "running_tools", "tool_call_decided")
    s, effects = step(s, ToolCallDecided(decide.id, ToolOutput("from outside"), 4)).unwrap()
    assert not [e for e in effects if isinstance(e, ExecuteTool)]
    assert events(effects)[0] == ToolExecutionEndEvent(
        "l", "later", AgentToolResult((TextContent("from outside"),)), False)


def test_decide_tool_call_without_a_decision_leaves_the_call_pending_and_the_run_suspends() -> None:
    s, effects = run_reply(reply(call("g", "gated", x=1), call("f", "free")), frozenset({"decide_tool_call"}))
    decide = only(effects, DecideToolCall)
    s, effects = step(s, ToolCallDecided(decide.id, None, 3)).unwrap()
    execute = only(effects, ExecuteTool)  # the free call runs meanwhile
    assert execute.tool_call.id == "f"
    s, effects = step(s, ToolFinished(execute.id, OK, 4)).unwrap()
    pending = (decide.pending,)
    assert effects[-1] == RunSuspended(tuple(s.new_messages), pending)
    assert isinstance(s.phase, Suspended) and s.phase.pending == pending


def test_a_decision_of_decide_tool_call_is_checked_like_one_given_to_resumed() -> None:
    s, effects = run_reply(reply(call("l", "later")), frozenset({"decide_tool_call"}))
    decide = only(effects, DecideToolCall)
    assert refused(s, ToolCallDecided(decide.id, Deny(7), 3)).reason == (  # type: ignore[arg-type]
        "the Deny for tool call l has a reason that is an int (7), not text")
    assert refused(s, ToolCallDecided(decide.id, ToolOutput(7), 3)).reason == (  # type: ignore[arg-type]
        "the ToolOutput for tool call l has a result that is an int (7), not an AgentToolResult or a str")


def test_a_deny_from_decide_tool_call_gives_its_reason_or_the_default() -> None:
    for decision, text in ((Deny("not today"), "not today"), (Deny(), "Tool call was denied")):
        s, effects = run_reply(reply(call("g", "gated")), frozenset({"decide_tool_call"}))
        s, effects = step(s, ToolCallDecided(only(effects, DecideToolCall).id, decision, 3)).unwrap()
        assert events(effects)[0] == ToolExecutionEndEvent("g", "gated", error_result(text), True)


# --------------------------------------------------------------------------- before_tool_call suspends


@pytest.mark.parametrize(("tool", "reason", "waits_for"), [
    ("free", None, "approval"),
    ("free", "ask the admin", "approval"),
    ("later", None, "result"),
    ("later", "ask the admin", "result"),
])
def test_a_call_before_tool_call_suspends_waits_for_what_its_tool_gives(tool: str, reason: str | None,
                                                                         waits_for: str) -> None:
    # A deferred tool's result comes from outside the run: suspended by before_tool_call, its
    # call still waits for that result, not for an approval that would run a tool with no body.
    s, effects = run_reply(reply(call("c", tool, x=1)), frozenset({"before_tool_call"}))
    before = only(effects, BeforeToolCall)
    decided = BeforeToolCallDecided(before.id, BeforeToolCallResult(reason=reason, suspend=True), 3)
    s, effects = step(s, decided).unwrap()
    pending = (PendingCall("c", tool, {"x": 1}, reason or "before_tool_call suspended the call", waits_for),)  # type: ignore[arg-type]
    assert effects[-1] == RunSuspended(tuple(s.new_messages), pending)
    assert isinstance(s.phase, Suspended) and s.phase.pending == pending


def test_a_call_before_tool_call_suspends_goes_to_decide_tool_call_first() -> None:
    s, effects = run_reply(reply(call("l", "later")), frozenset({"before_tool_call", "decide_tool_call"}))
    s, effects = step(s, BeforeToolCallDecided(only(effects, BeforeToolCall).id,
                                               BeforeToolCallResult(suspend=True), 3)).unwrap()
    assert only(effects, DecideToolCall).pending == PendingCall(
        "l", "later", {}, "before_tool_call suspended the call", "result")


def test_a_block_wins_over_a_suspend_and_keeps_its_terminate() -> None:
    s, effects = run_reply(reply(call("f", "free")), frozenset({"before_tool_call"}))
    answer = BeforeToolCallResult(block=True, reason="no", terminate=True, suspend=True)
    s, effects = step(s, BeforeToolCallDecided(only(effects, BeforeToolCall).id, answer, 3)).unwrap()
    assert events(effects)[0] == ToolExecutionEndEvent("f", "free", error_result("no", True), True)
    assert not isinstance(s.phase, Suspended)


# --------------------------------------------------------------------------- requires_approval functions


def test_a_requires_approval_function_that_says_yes_makes_the_call_wait_for_an_approval() -> None:
    s, effects = run_reply(reply(call("a", "asks", x=1)))
    check = only(effects, CheckApproval)
    assert (check.tool_call.id, dict(check.args)) == ("a", {"x": 1})
    s, effects = step(s, ApprovalChecked(check.id, True, 3)).unwrap()
    pending = (PendingCall("a", "asks", {"x": 1}, 'Tool "asks" requires approval', "approval"),)
    assert effects[-1] == RunSuspended(tuple(s.new_messages), pending)


def test_a_requires_approval_function_that_says_no_runs_the_call() -> None:
    s, effects = run_reply(reply(call("a", "asks", x=1)))
    s, effects = step(s, ApprovalChecked(only(effects, CheckApproval).id, False, 3)).unwrap()
    execute = only(effects, ExecuteTool)
    assert (execute.tool_call.id, dict(execute.args)) == ("a", {"x": 1})


# --------------------------------------------------------------------------- ToolOutput


@pytest.mark.parametrize("is_error", ["yes", 1, 0, None, 1.0])
def test_a_tool_output_whose_is_error_is_not_a_bool_is_refused(is_error: Any) -> None:
    shown = f"{type(is_error).__name__}"
    article = "an" if shown == "int" else "a"
    what = "None" if is_error is None else f"{article} {shown}"
    text = f"the ToolOutput for tool call l has an is_error that is {what} ({is_error!r}), not a bool"
    s, effects = run_reply(reply(call("l", "later")), frozenset({"decide_tool_call"}))
    decide = only(effects, DecideToolCall)
    assert refused(s, ToolCallDecided(decide.id, ToolOutput("x", is_error=is_error), 3)) == Rejection(
        text, "running_tools", "tool_call_decided")
    s, _ = step(s, ToolCallDecided(decide.id, None, 3)).unwrap()
    assert refused(s, Resumed((("l", ToolOutput("x", is_error=is_error)),), 4)) == Rejection(
        "Cannot resume: " + text, "suspended", "resumed")


def test_a_tool_output_is_the_calls_result_as_given_and_after_tool_call_sees_it() -> None:
    result = AgentToolResult((TextContent("it broke"),), details={"code": 2})
    s, _ = run_reply(reply(call("l", "later", x=1)), frozenset({"after_tool_call"}))
    s, effects = step(s, Resumed((("l", ToolOutput(result, is_error=True)),), 4)).unwrap()
    after = only(effects, AfterToolCall)
    assert (after.context.tool_call.id, dict(after.context.args), after.context.result, after.context.is_error) == (
        "l", {"x": 1}, result, True)
    assert refused(s, ToolFinished(after.id, OK, 5)).reason == "tool call l is finishing, it cannot take tool_finished"
    s, effects = step(s, AfterToolCallDecided(after.id, None, 5)).unwrap()
    assert events(effects)[0] == ToolExecutionEndEvent("l", "later", result, True)


# --------------------------------------------------------------------------- Resumed


@pytest.mark.parametrize(("decisions", "text"), [
    (None, "the decisions are None (None), not a tuple of (tool call id, decision) pairs"),
    ("g", "the decisions are a str ('g'), not a tuple of (tool call id, decision) pairs"),
    ((("g",),), "decision 0 is a tuple (('g',)), not a (tool call id, decision) pair"),
    ((("g", Approve(), 3),),
     "decision 0 is a tuple (('g', Approve(arguments=None), 3)), not a (tool call id, decision) pair"),
    ((["g"], Approve()), "decision 0 is a list (['g']), not a (tool call id, decision) pair"),
    (((["g"], Approve()),), "decision 0 has a tool call id that is a list (['g']), not text"),
    ((("g", Approve()), 3), "decision 1 is an int (3), not a (tool call id, decision) pair"),
])
def test_resumed_with_decisions_that_are_not_id_decision_pairs_is_refused(decisions: Any, text: str) -> None:
    s, _ = run_reply(reply(call("g", "gated")))
    assert refused(s, Resumed(decisions, 5)) == Rejection("Cannot resume: " + text, "suspended", "resumed")


def test_resumed_takes_decisions_as_a_list_of_lists_too() -> None:
    s, _ = run_reply(reply(call("g", "gated")))
    s, effects = step(s, Resumed([["g", Approve()]], 5)).unwrap()  # type: ignore[arg-type]
    assert only(effects, ExecuteTool).tool_call.id == "g"


def test_an_approval_with_edited_arguments_that_fail_validation_gives_the_validation_error() -> None:
    strict = AgentTool("strict", "strict", "", {"type": "object", "properties": {"n": {"type": "integer"}}},
                       print, requires_approval=True)
    s, _ = run_reply(reply(call("s", "strict", n=1)), tools=(strict,))
    s, effects = step(s, Resumed((("s", Approve({"n": "one"})),), 5)).unwrap()
    end = events(effects)[0]
    assert end.is_error and end.result.content[0].text.startswith(
        'Validation failed for tool "strict":\n  - n: \'one\' is not of type \'integer\'')
    assert not [e for e in effects if isinstance(e, ExecuteTool)]


def test_a_sequential_batch_pauses_at_the_first_pending_call_and_runs_the_rest_after_the_decision() -> None:
    s, effects = run_reply(reply(call("g", "gated"), call("f", "free")), mode="sequential")
    assert effects[-1] == RunSuspended(tuple(s.new_messages), (
        PendingCall("g", "gated", {}, 'Tool "gated" requires approval', "approval"),))
    assert [e.tool_call_id for e in events(effects) if e.type == "tool_execution_start"] == ["g"]
    s, effects = step(s, Resumed((("g", Deny()),), 5)).unwrap()
    assert [e.type for e in events(effects)] == ["tool_execution_end", "message_start", "message_end",
                                                "tool_execution_start"]
    assert only(effects, ExecuteTool).tool_call.id == "f"
