"""The tool batch (agentcore/batch.py) seen through ``step``: the exact slots it keeps, the
contexts its hooks get, its update events, and which ids it waits on."""

from __future__ import annotations

from typing import Any

from agentcore import (
    AfterToolCallDecided,
    AfterToolCallResult,
    AgentContext,
    AgentToolResult,
    BeforeToolCallDecided,
    Model,
    Started,
    StreamEventReceived,
    TextContent,
    ToolExecutionUpdateEvent,
    ToolFinished,
    ToolSpec,
    ToolUpdated,
    UserMessage,
    awaits,
    initial_state,
    step,
)
from agentcore.effects import AfterToolCall, ExecuteTool
from agentcore.state import RunningTools, ToolSlot

from .world import call, reply, stream_events

ECHO = ToolSpec("echo", parameters={"type": "object"})
RESULT = AgentToolResult((TextContent("ok"),), details={"kept": 1})


def run_until_tools(*calls: Any, mode: str = "parallel", hooks: frozenset[str] = frozenset()) -> tuple[Any, Any]:
    s = initial_state(AgentContext("", (), (ECHO,)), model=Model(id="m"), hooks=hooks, tool_execution=mode)
    s, _ = step(s, Started((UserMessage("go"),), 1)).unwrap()
    effects: Any = ()
    for ev in stream_events(reply(*calls, stop="toolUse")):
        s, effects = step(s, StreamEventReceived(1, ev, 2)).unwrap()
    return s, effects


def test_a_sequential_call_done_keeps_its_call_arguments_time_and_message() -> None:
    c1, c2 = call("c1", "echo", a=1), call("c2", "echo", a=2)
    s, effects = run_until_tools(c1, c2, mode="sequential")
    run = [e for e in effects if isinstance(e, ExecuteTool)]
    assert [e.tool_call.id for e in run] == ["c1"]
    s, _ = step(s, ToolFinished(run[0].id, RESULT, 7)).unwrap()
    batch = s.phase
    assert isinstance(batch, RunningTools)
    done = batch.slots[0]
    assert done.message is not None and done.message.tool_call_id == "c1"
    assert done == ToolSlot(c1, "done", -1, c1.arguments, RESULT, False, 7, done.message)
    assert batch.slots[1].step == "running"


def test_after_tool_call_sees_the_call_and_its_arguments_and_the_slot_keeps_them() -> None:
    c1 = call("c1", "echo", a=1)
    s, effects = run_until_tools(c1, hooks=frozenset({"after_tool_call"}))
    (execute,) = [e for e in effects if isinstance(e, ExecuteTool)]
    running = s.phase.slots[0]
    assert running == ToolSlot(c1, "running", execute.id, c1.arguments)
    s, effects = step(s, ToolFinished(execute.id, RESULT, 3)).unwrap()
    (after,) = [e for e in effects if isinstance(e, AfterToolCall)]
    assert (after.context.tool_call, after.context.args, after.context.result) == (c1, c1.arguments, RESULT)
    assert s.phase.slots[0] == ToolSlot(c1, "finishing", after.id, c1.arguments, RESULT, False)


def test_a_patch_without_details_keeps_the_tools_details() -> None:
    c1 = call("c1", "echo", a=1)
    s, effects = run_until_tools(c1, hooks=frozenset({"after_tool_call"}))
    (execute,) = [e for e in effects if isinstance(e, ExecuteTool)]
    s, effects = step(s, ToolFinished(execute.id, RESULT, 3)).unwrap()
    (after,) = [e for e in effects if isinstance(e, AfterToolCall)]
    patch = AfterToolCallResult(content=(TextContent("patched"),))
    s, effects = step(s, AfterToolCallDecided(after.id, patch, 4)).unwrap()
    end = [e.event for e in effects if getattr(e, "event", None) is not None and e.event.type == "tool_execution_end"]
    assert end[0].result == AgentToolResult((TextContent("patched"),), details={"kept": 1})


def test_a_tool_update_names_the_call_and_the_tool() -> None:
    c1 = call("c1", "echo", a=1)
    s, effects = run_until_tools(c1)
    (execute,) = [e for e in effects if isinstance(e, ExecuteTool)]
    s, effects = step(s, ToolUpdated(execute.id, {"done": 0.5}, 3)).unwrap()
    assert [e.event for e in effects] == [ToolExecutionUpdateEvent("c1", "echo", c1.arguments, {"done": 0.5})]


def test_a_ready_call_waits_on_no_id() -> None:
    # Parallel: once c1 is ready (not started: c2 is still checking) it waits on nothing: no id
    # is awaited for it, neither the model call's spent id 1 nor the -1 a waiting-free slot holds.
    c1, c2 = call("c1", "echo", a=1), call("c2", "echo", a=2)
    s, effects = run_until_tools(c1, c2, hooks=frozenset({"before_tool_call"}))
    first = [e for e in effects if e.type == "before_tool_call"]
    assert len(first) == 1
    s, effects = step(s, BeforeToolCallDecided(first[0].id, None, 3)).unwrap()
    assert s.phase.slots[0] == ToolSlot(c1, "ready", -1, c1.arguments)
    assert not awaits(s, 1) and not awaits(s, -1)
    assert s.phase.slots[1].step == "checking"
