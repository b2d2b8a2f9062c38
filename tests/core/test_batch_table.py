"""The tool batch as a table (``agentcore.batch.CALL``): the slot steps are its stages' steps,
the answers each step takes are read from it, a hook failure during the batch is the batch's,
and its one abort check ends each call where the table says."""

from __future__ import annotations

from typing import Any, get_args

from agentcore import (
    AbortRequested,
    AfterToolCallDecided,
    AgentContext,
    AgentTool,
    AgentToolResult,
    ApprovalChecked,
    ArgumentsPrepared,
    BeforeToolCallDecided,
    HookFailed,
    Model,
    Started,
    StreamEventReceived,
    TextContent,
    ToolCallDecided,
    ToolExecutionEndEvent,
    ToolFailed,
    ToolFinished,
    ToolSpec,
    ToolTimedOut,
    ToolUpdated,
    UserMessage,
    initial_state,
    step,
)
from agentcore.batch import ANSWERS, CALL, SlotAsk, ToolAnswer
from agentcore.effects import ExecuteTool
from agentcore.machine import TRANSITIONS, TURN, Ask
from agentcore.state import RunningTools, SlotStep, Suspended

from .world import call, reply, stream_events

OK = AgentToolResult((TextContent("ran"),))


def test_the_slot_steps_are_the_steps_of_the_call_table_in_order() -> None:
    assert [stage.step for stage in CALL if stage.step is not None] == list(get_args(SlotStep))
    assert [stage.name for stage in CALL] == [
        "start", "lookup", "prepare_arguments", "validate", "before_tool_call", "approval", "decision",
        "pending", "ready", "execute", "after_tool_call", "done"]


def test_the_answers_each_step_takes_are_read_from_the_table() -> None:
    assert ANSWERS == {
        ArgumentsPrepared: ("preparing",), BeforeToolCallDecided: ("checking",), ApprovalChecked: ("approving",),
        ToolCallDecided: ("deciding",), ToolFinished: ("running",), ToolFailed: ("running",),
        ToolTimedOut: ("running",), ToolUpdated: ("running",), AfterToolCallDecided: ("finishing",),
        HookFailed: ("preparing", "checking", "approving", "deciding", "finishing"),
    }
    assert set(get_args(ToolAnswer)) == set(ANSWERS)
    assert {stage.step for stage in CALL if isinstance(stage, SlotAsk)} == {s for steps in ANSWERS.values()
                                                                            for s in steps}


def test_a_hook_failure_during_the_batch_goes_to_the_batch_never_to_the_turn() -> None:
    """The turn's hook-failure handler (which ends the run with ``<hook> failed``) is only
    reached from the phases of the turn's own hooks: ``RunningTools`` sends ``HookFailed`` to
    the batch, like every other answer about a call."""
    failing = {phase for phase, kind in TRANSITIONS if kind is HookFailed}
    turn_phases = {stage.phase for stage in TURN if isinstance(stage, Ask)}
    assert failing == turn_phases | {RunningTools}
    assert TRANSITIONS[(RunningTools, HookFailed)] is TRANSITIONS[(RunningTools, ToolFinished)]
    turn_handlers = {TRANSITIONS[(phase, HookFailed)] for phase in turn_phases}
    assert len(turn_handlers) == 1 and TRANSITIONS[(RunningTools, HookFailed)] not in turn_handlers


# --------------------------------------------------------------------------- the one abort check


def tool(name: str, **kw: Any) -> AgentTool:
    return AgentTool(name, name, "", {"type": "object"}, print, **kw)


def started(*calls: Any, tools: tuple[Any, ...], hooks: frozenset[str] = frozenset(),
            mode: str = "parallel") -> tuple[Any, list[Any]]:
    s = initial_state(AgentContext("", (), tools), model=Model(id="m"), hooks=hooks, tool_execution=mode)
    s, first = step(s, Started((UserMessage("go"),), 1)).unwrap()
    effects: list[Any] = []
    for ev in stream_events(reply(*calls, stop="toolUse")):
        s, out = step(s, StreamEventReceived(first[-1].id, ev, 2)).unwrap()
        effects = list(out)
    return s, effects


def ends(effects: Any) -> dict[str, str]:
    """Call id → the text of the result its tool_execution_end gave."""
    return {e.event.tool_call_id: e.event.result.content[0].text for e in effects
            if e.type == "emit" and isinstance(e.event, ToolExecutionEndEvent)}


def abort(s: Any) -> tuple[Any, list[Any]]:
    s, out = step(s, AbortRequested(5)).unwrap()
    return s, list(out)


def test_an_abort_ends_a_call_waiting_on_a_hook_or_a_decision_at_once() -> None:
    waiting_on = {
        "preparing": started(call("a", "prep"), tools=(ToolSpec("prep", parameters={"type": "object"},
                                                                  has_prepare_arguments=True),)),
        "checking": started(call("a", "t"), tools=(tool("t"),), hooks=frozenset({"before_tool_call"})),
        "approving": started(call("a", "t"), tools=(tool("t", requires_approval=bool),)),
        "deciding": started(call("a", "t"), tools=(tool("t", requires_approval=True),),
                            hooks=frozenset({"decide_tool_call"})),
        "pending": started(call("a", "t"), tools=(tool("t", deferred=True),)),
    }
    for step_, (s, _) in waiting_on.items():
        batch = s.phase.batch if isinstance(s.phase, Suspended) else s.phase
        assert batch.slots[0].step == step_
        s, out = abort(s)
        assert ends(out) == {"a": "Operation aborted"}, step_
        assert s.phase.name == "finished"


def test_an_abort_ends_a_call_whose_after_tool_call_runs_but_one_whose_tool_runs_keeps_its_result() -> None:
    s, effects = started(call("a", "t"), call("b", "t"), tools=(tool("t"),), hooks=frozenset({"after_tool_call"}))
    run_a, run_b = (e for e in effects if isinstance(e, ExecuteTool))
    s, _ = step(s, ToolFinished(run_a.id, OK, 3)).unwrap()
    assert [slot.step for slot in s.phase.slots] == ["finishing", "running"]
    s, out = abort(s)
    assert ends(out) == {"a": "Operation aborted"}
    s, out = step(s, ToolFinished(run_b.id, OK, 6)).unwrap()  # no after_tool_call any more
    assert ends(out) == {"b": "ran"}
    assert s.phase.name == "finished"


def test_calls_an_abort_reaches_later_get_the_aborted_result_whatever_they_are() -> None:
    """Ready to run (parallel), not reached yet (sequential): unknown tools and invalid
    arguments included, the call is only started and ended."""
    prep = ToolSpec("prep", parameters={"type": "object"}, has_prepare_arguments=True)
    s, _ = started(call("a", "t"), call("b", "prep"), call("c", "ghost"), tools=(tool("t"), prep))
    assert [slot.step for slot in s.phase.slots] == ["ready", "preparing", "waiting"]
    s, out = abort(s)
    assert ends(out) == {"a": "Operation aborted", "b": "Operation aborted", "c": "Operation aborted"}
    assert not any(isinstance(e, ExecuteTool) for e in out)

    s, effects = started(call("a", "t"), call("b", "ghost"), call("c", "t", n=1), mode="sequential",
                         tools=(tool("t"),))
    run_a = next(e for e in effects if isinstance(e, ExecuteTool))
    s, out = abort(s)
    assert ends(out) == {}
    s, out = step(s, ToolFinished(run_a.id, OK, 6)).unwrap()
    assert ends(out) == {"a": "ran", "b": "Operation aborted", "c": "Operation aborted"}
    assert [e.event.type for e in out if e.type == "emit"][:4] == [
        "tool_execution_end", "message_start", "message_end", "tool_execution_start"]
