"""The core's side of suspension and budgets, step by step: the exact effects of a batch that
pauses, the suspended state, ``Resumed`` (and what it refuses), an abort of a suspended run, the
budget stage."""

from __future__ import annotations

from typing import Any

from agentcore import (
    AbortRequested,
    AgentContext,
    AgentEndEvent,
    AgentSuspendedEvent,
    AgentTool,
    AgentToolResult,
    Approve,
    AssistantMessage,
    BudgetReachedEvent,
    Cost,
    Deny,
    Emit,
    ExecuteTool,
    Model,
    PendingCall,
    Resumed,
    RunEnded,
    RunSuspended,
    Started,
    StreamEventReceived,
    TextContent,
    ToolFinished,
    ToolOutput,
    Usage,
    UserMessage,
    initial_state,
    replace,
    step,
)
from agentcore.codec import from_json, to_json
from agentcore.state import Suspended, Suspension

from .world import call, reply, stream_events

GATED = AgentTool("gated", "gated", "", {"type": "object"}, print, requires_approval=True)
FREE = AgentTool("free", "free", "", {"type": "object"}, print)
LATER = AgentTool("later", "later", "", {"type": "object"}, print, deferred=True)
OK = AgentToolResult((TextContent("ok"),))


def run_reply(message: AssistantMessage, tools: tuple[Any, ...] = (GATED, FREE, LATER),
              **kw: Any) -> tuple[Any, list[Any]]:
    """Start a run and stream ``message``: the state and the effects of the last step."""
    s = initial_state(AgentContext("", (), tools), model=Model(id="m"), **kw)
    s, effects = step(s, Started((UserMessage("go", timestamp=1),), 1)).unwrap()
    llm = effects[-1]
    for ev in stream_events(message):
        s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
    return s, list(effects)


def test_a_batch_with_a_call_that_waits_pauses_and_the_run_suspends() -> None:
    s, effects = run_reply(reply(call("g", "gated", x=1), call("f", "free")))
    kinds = [type(e).__name__ if not isinstance(e, Emit) else e.event.type for e in effects]
    assert kinds == ["message_end", "tool_execution_start", "tool_execution_start", "ExecuteTool"]
    execute = effects[-1]
    s, effects = step(s, ToolFinished(execute.id, OK, 3)).unwrap()
    pending = (PendingCall("g", "gated", {"x": 1}, 'Tool "gated" requires approval', "approval"),)
    assert [e.event.type for e in effects[:-1]] == ["tool_execution_end", "agent_suspended"]
    assert effects[-2] == Emit(AgentSuspendedEvent(pending))
    assert effects[-1] == RunSuspended(tuple(s.new_messages), pending)
    assert isinstance(s.phase, Suspended) and s.phase.pending == pending and s.run.turn_open
    assert from_json(to_json(Suspension(s, pending))) == Suspension(s, pending)


def test_resumed_goes_on_from_the_batch() -> None:
    s, effects = run_reply(reply(call("g", "gated"), call("l", "later")))
    assert isinstance(s.phase, Suspended) and [p.waits_for for p in s.phase.pending] == ["approval", "result"]
    s, effects = step(s, Resumed((("g", Approve({"y": 2})), ("l", ToolOutput("from outside"))), 5)).unwrap()
    assert isinstance(effects[0], Emit) and effects[0].event.type == "tool_execution_end"  # l's result
    execute = next(e for e in effects if isinstance(e, ExecuteTool))
    assert execute.tool_call.id == "g" and dict(execute.args) == {"y": 2}
    s, effects = step(s, ToolFinished(execute.id, OK, 6)).unwrap()
    texts = [e.event.message.content[0].text for e in effects
             if isinstance(e, Emit) and e.event.type == "message_end"]
    assert texts == ["ok", "from outside"]  # in call order
    assert effects[-1].type == "call_llm"


def test_resumed_refuses_decisions_that_do_not_fit_and_leaves_the_state() -> None:
    s, _ = run_reply(reply(call("g", "gated"), call("l", "later")))
    result = step(s, Resumed((("g", ToolOutput("x")), ("g", Deny()), ("zz", Approve())), 5))
    assert result.failure().reason == (
        "Cannot resume: no decision for pending tool call l; no pending tool call zz; more than one decision "
        "for g; tool call g waits for an approval (Approve or Deny), not ToolOutput")
    assert result.failure().phase == "suspended" and result.failure().input == "resumed"


def test_an_abort_ends_a_suspended_run_with_aborted_results() -> None:
    s, _ = run_reply(reply(call("g", "gated")))
    s, effects = step(s, AbortRequested(5)).unwrap()
    ends = [e.event for e in effects if isinstance(e, Emit) and e.event.type == "tool_execution_end"]
    assert [(e.tool_call_id, e.result.content[0].text) for e in ends] == [("g", "Operation aborted")]
    assert isinstance(effects[-1], RunEnded) and s.phase.name == "finished"


def test_a_budget_ends_the_run_after_the_turn() -> None:
    used = Usage(total_tokens=7, cost=Cost(total=0.02))
    s = initial_state(AgentContext("", (), (FREE,)), model=Model(id="m"))
    s = replace(s, run=replace(s.run, max_total_tokens=10))
    s, effects = step(s, Started((UserMessage("go", timestamp=1),), 1)).unwrap()
    llm = effects[-1]
    for ev in stream_events(replace(reply(call("f", "free")), usage=used)):
        s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
    s, effects = step(s, ToolFinished(effects[-1].id, replace(OK, usage=Usage(total_tokens=3)), 3)).unwrap()
    tail = [e.event for e in effects if isinstance(e, Emit)][-3:]
    assert tail[0].type == "turn_end"
    assert tail[1:] == [BudgetReachedEvent("max_total_tokens", 10, 10), AgentEndEvent(tuple(s.new_messages))]
    assert (s.run.turns, s.run.total_tokens, s.run.cost_usd) == (1, 10, 0.02)
    assert isinstance(effects[-1], RunEnded)


def test_without_budgets_the_counters_run_and_nothing_stops() -> None:
    s, effects = run_reply(replace(reply("hi"), usage=Usage(total_tokens=7)))
    assert isinstance(effects[-1], RunEnded) and (s.run.turns, s.run.total_tokens) == (1, 7)
