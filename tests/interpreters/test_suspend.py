"""Durable suspension through the public API, on both interpreters: what suspends, the events up
to ``agent_suspended``, the decisions (approve, edit, deny, supply), the errors for decisions
that do not fit, the JSON round trip, resuming with the other interpreter, suspending again, and
the budgets the core enforces.

A run that suspends and resumes is compared with one run that got the same decisions at once
(``decide_tool_call``): the same messages, and the same events but for ``agent_suspended``
(the resumed stream has no second ``agent_start``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AgentSuspendedEvent,
    AgentTool,
    AgentToolResult,
    Approve,
    BeforeToolCallResult,
    BudgetReachedEvent,
    Cost,
    Deny,
    Model,
    PendingCall,
    Suspension,
    TextContent,
    ToolOutput,
    Usage,
)
from agentcore.codec import from_json, to_json
from interpreters import tool
from interpreters.streams.scripted import Reply, tool_call
from tests.support.clocks import clock
from tests.support.events import types
from tests.support.flavours import ASYNCIO, FLAVOURS, SYNC, Flavour
from tests.support.suspending import calls, model

MODEL = Model(id="m")
RAN: list[str] = []


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    RAN.append(f"delete {path}")
    return f"deleted {path}"


@tool
def ls() -> str:
    """List the files."""
    RAN.append("ls")
    return "a.txt b.txt"


@tool(requires_approval=lambda args: args["amount"] > 100)
def pay(amount: int) -> str:
    """Pay an amount."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool(deferred=True)
def ask_human(question: str) -> str:
    """Ask a person; the answer comes later."""
    raise AssertionError("a deferred tool is never executed")


@tool(execution_mode="sequential")
def step_tool(n: int) -> str:
    """A step of a sequence."""
    RAN.append(f"step {n}")
    return f"step {n} done"


TOOLS = [delete, ls, pay, ask_human, step_tool]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


def context() -> AgentContext:
    return AgentContext("sys", (), TOOLS)


def config(**kw: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=MODEL, **kw)


def at_once(flavour: Flavour, decisions: dict[str, Any], replies: list[Any], **kw: Any) -> tuple[list[Any], list[Any]]:
    """One run that got ``decisions`` at once (``decide_tool_call``)."""
    cfg = config(decide_tool_call=lambda pending: decisions[pending.tool_call_id], **kw)
    events, messages, suspension = flavour.start_suspending("go", context(), cfg, model(*replies), clock=clock)
    assert suspension is None
    return events, messages


def texts(messages: list[Any]) -> list[tuple[str, str, bool]]:
    return [(m.role, m.text if m.role != "toolResult" else m.content[0].text,
             getattr(m, "is_error", False)) for m in messages]


# --------------------------------------------------------------------------- suspending


def test_a_call_that_requires_approval_suspends_the_run_after_the_calls_that_need_none(flavour: Flavour) -> None:
    m = model(calls(("delete", {"path": "a.txt"}, "c1"), ("ls", {}, "c2")), "Done.")
    events, messages, suspension = flavour.start_suspending("go", context(), config(), m, clock=clock)
    assert types(events) == [
        "agent_start", "turn_start", "message_start", "message_end",          # the prompt
        "message_start", "message_update", "message_end",                      # the reply
        "tool_execution_start", "tool_execution_start", "tool_execution_end",  # ls ran
        "agent_suspended",
    ]
    assert RAN == ["ls"] and m.calls == 1
    pending = PendingCall("c1", "delete", {"path": "a.txt"}, 'Tool "delete" requires approval', "approval")
    assert events[-1] == AgentSuspendedEvent((pending,))
    assert isinstance(suspension, Suspension) and suspension.pending == (pending,)
    assert [msg.role for msg in messages] == ["user", "assistant"]


def test_approve_goes_on_with_the_events_an_uninterrupted_run_has(flavour: Flavour) -> None:
    replies = [calls(("delete", {"path": "a.txt"}, "c1"), ("ls", {}, "c2")), "Done."]
    m = model(*replies)
    first, _, suspension = flavour.start_suspending("go", context(), config(), m, clock=clock)
    events, messages, again = flavour.resume(suspension, {"c1": Approve()}, context(), config(), m, clock=clock)
    assert again is None
    assert types(events) == [
        "tool_execution_end",                                  # delete ran
        "message_start", "message_end", "message_start", "message_end",  # the results, in call order
        "turn_end", "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end",
    ]
    assert texts(messages) == [("user", "go", False), ("assistant", "", False), ("toolResult", "deleted a.txt", False),
                               ("toolResult", "a.txt b.txt", False), ("assistant", "Done.", False)]
    assert events[-1].messages == tuple(messages)
    RAN.clear()
    whole, whole_messages = at_once(flavour, {"c1": Approve()}, replies)
    assert whole_messages == messages
    resumed = [e for e in first if e.type != "agent_suspended"] + events
    assert types(resumed) == types(whole)
    # the same events, but that in a parallel batch the calls that needed no decision finish first
    # (tool_execution_end comes in completion order in any run)
    def shown(evs: list[Any]) -> list[Any]:
        return [e for e in evs if e.type not in ("message_update", "tool_execution_end")]

    assert shown(resumed) == shown(whole)
    ends = [e for e in resumed if e.type == "tool_execution_end"]
    assert sorted(ends, key=lambda e: e.tool_call_id) == sorted(
        (e for e in whole if e.type == "tool_execution_end"), key=lambda e: e.tool_call_id)


def test_deny_gives_the_call_an_error_result_with_the_reason(flavour: Flavour) -> None:
    m = model(tool_call("delete", {"path": "a.txt"}, "c1"), "OK, I will not.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m, clock=clock)
    events, messages, _ = flavour.resume(suspension, {"c1": Deny("not that file")}, context(), config(), m)
    end = next(e for e in events if e.type == "tool_execution_end")
    assert end.is_error and end.result.content == (TextContent("not that file"),)
    assert texts(messages)[2] == ("toolResult", "not that file", True)
    assert RAN == []
    assert "not that file" in json.dumps(to_json(m.requests[-1].context.messages[-1]))  # the model sees it


def test_deny_without_a_reason_says_the_call_was_denied(flavour: Flavour) -> None:
    m = model(tool_call("delete", {"path": "a.txt"}, "c1"), "OK.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    _, messages, _ = flavour.resume(suspension, {"c1": Deny()}, context(), config(), m)
    assert texts(messages)[2] == ("toolResult", "Tool call was denied", True)


def test_approve_with_edited_arguments_runs_them_validated_again(flavour: Flavour) -> None:
    m = model(tool_call("delete", {"path": "a.txt"}, "c1"), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    _, messages, _ = flavour.resume(suspension, {"c1": Approve(arguments={"path": "b.txt"})}, context(), config(), m)
    assert RAN == ["delete b.txt"] and texts(messages)[2] == ("toolResult", "deleted b.txt", False)


def test_edited_arguments_that_fail_validation_give_the_validation_error(flavour: Flavour) -> None:
    m = model(tool_call("delete", {"path": "a.txt"}, "c1"), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    _, messages, _ = flavour.resume(suspension, {"c1": Approve(arguments={"path": 3})}, context(), config(), m)
    assert RAN == []
    assert texts(messages)[2] == ("toolResult", 'Validation failed for tool "delete":\n  - path: 3 is not of type '
                                  "'string'\n\nReceived arguments:\n{\n  \"path\": 3\n}", True)


def test_a_deferred_call_waits_for_its_result_from_outside(flavour: Flavour) -> None:
    m = model(tool_call("ask_human", {"question": "Which file?"}, "q1"), "Deleting b.txt then.")
    events, _, suspension = flavour.start_suspending("go", context(), config(), m)
    assert suspension.pending == (PendingCall("q1", "ask_human", {"question": "Which file?"},
                                              'Tool "ask_human" is deferred: its result comes from outside the run',
                                              "result"),)
    events, messages, _ = flavour.resume(suspension, {"q1": ToolOutput("b.txt")}, context(), config(), m)
    end = next(e for e in events if e.type == "tool_execution_end")
    assert end.result == AgentToolResult((TextContent("b.txt"),)) and not end.is_error
    assert texts(messages)[2:] == [("toolResult", "b.txt", False), ("assistant", "Deleting b.txt then.", False)]


def test_a_deferred_result_may_be_an_error_and_after_tool_call_sees_it(flavour: Flavour) -> None:
    seen: list[Any] = []

    def after(ctx: Any) -> None:
        seen.append((ctx.tool_call.id, ctx.result.content[0].text, ctx.is_error))

    m = model(tool_call("ask_human", {"question": "?"}, "q1"), "Sorry.")
    _, _, suspension = flavour.start_suspending("go", context(), config(after_tool_call=after), m)
    _, messages, _ = flavour.resume(suspension, {"q1": ToolOutput("nobody answered", is_error=True)}, context(),
                                    config(after_tool_call=after), m)
    assert seen == [("q1", "nobody answered", True)]
    assert texts(messages)[2] == ("toolResult", "nobody answered", True)


def test_before_tool_call_may_suspend_a_call_with_its_reason(flavour: Flavour) -> None:
    def before(ctx: Any) -> BeforeToolCallResult | None:
        return BeforeToolCallResult(suspend=True, reason="ls is watched") if ctx.tool_call.name == "ls" else None

    m = model(tool_call("ls", {}, "c1"), "Here.")
    _, _, suspension = flavour.start_suspending("go", context(), config(before_tool_call=before), m)
    assert suspension.pending == (PendingCall("c1", "ls", {}, "ls is watched", "approval"),)
    assert RAN == []
    _, messages, _ = flavour.resume(suspension, {"c1": Approve()}, context(), config(before_tool_call=before), m)
    assert RAN == ["ls"] and texts(messages)[2] == ("toolResult", "a.txt b.txt", False)


def test_before_tool_call_suspend_without_reason_has_the_default_reason(flavour: Flavour) -> None:
    m = model(tool_call("ls", {}, "c1"), "Here.")
    cfg = config(before_tool_call=lambda ctx: BeforeToolCallResult(suspend=True))
    _, _, suspension = flavour.start_suspending("go", context(), cfg, m)
    assert suspension.pending[0].reason == "before_tool_call suspended the call"


def test_requires_approval_as_a_function_of_the_arguments(flavour: Flavour) -> None:
    m = model(calls(("pay", {"amount": 5}, "p1"), ("pay", {"amount": 500}, "p2")), "Paid.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    assert RAN == ["pay 5"]
    assert [(p.tool_call_id, p.reason) for p in suspension.pending] == [("p2", 'Tool "pay" requires approval')]
    _, messages, _ = flavour.resume(suspension, {"p2": Approve()}, context(), config(), m)
    assert RAN == ["pay 5", "pay 500"]
    assert [t for _, t, _ in texts(messages)[2:4]] == ["paid 5", "paid 500"]


def test_a_requires_approval_function_that_raises_gives_the_call_an_error_result(flavour: Flavour) -> None:
    boom = AgentTool("boom", "boom", "", {"type": "object"}, lambda *a: "ran", requires_approval=lambda args: 1 / 0)
    m = model(tool_call("boom", {}, "b1"), "Oh.")
    _, messages, suspension = flavour.start_suspending("go", AgentContext(tools=[boom]), config(), m)
    assert suspension is None and texts(messages)[2] == ("toolResult", "division by zero", True)


def test_a_sequential_batch_stops_at_the_pending_call(flavour: Flavour) -> None:
    m = model(calls(("step_tool", {"n": 1}, "s1"), ("delete", {"path": "x"}, "d1"), ("step_tool", {"n": 2}, "s2")),
              "Done.")
    events, _, suspension = flavour.start_suspending("go", context(), config(), m)
    assert RAN == ["step 1"]
    assert [e.tool_call_id for e in events if e.type == "tool_execution_start"] == ["s1", "d1"]
    assert [p.tool_call_id for p in suspension.pending] == ["d1"]
    events, messages, _ = flavour.resume(suspension, {"d1": Approve()}, context(), config(), m)
    assert RAN == ["step 1", "delete x", "step 2"]
    assert [e.tool_call_id for e in events if e.type == "tool_execution_start"] == ["s2"]
    assert [t for _, t, _ in texts(messages)[2:5]] == ["step 1 done", "deleted x", "step 2 done"]


def test_several_pending_calls_and_suspending_again(flavour: Flavour) -> None:
    m = model(calls(("delete", {"path": "a"}, "c1"), ("ask_human", {"question": "?"}, "c2")),
              tool_call("delete", {"path": "b"}, "c3"), "Done.")
    _, _, s1 = flavour.start_suspending("go", context(), config(), m)
    assert [(p.tool_call_id, p.waits_for) for p in s1.pending] == [("c1", "approval"), ("c2", "result")]
    events, messages, s2 = flavour.resume(s1, {"c2": ToolOutput("yes"), "c1": Approve()}, context(), config(), m)
    assert types(events)[-1] == "agent_suspended" and [p.tool_call_id for p in s2.pending] == ["c3"]
    assert [msg.role for msg in messages] == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    events, messages, s3 = flavour.resume(s2, {"c3": Deny("no")}, context(), config(), m)
    assert s3 is None and types(events)[-1] == "agent_end"
    assert texts(messages)[-2:] == [("toolResult", "no", True), ("assistant", "Done.", False)]


def test_decide_tool_call_decides_at_once_and_none_suspends(flavour: Flavour) -> None:
    asked: list[PendingCall] = []

    def decide(pending: PendingCall) -> Any:
        asked.append(pending)
        return Approve() if pending.tool_call_id == "c1" else None

    m = model(calls(("delete", {"path": "a"}, "c1"), ("delete", {"path": "b"}, "c2")), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(decide_tool_call=decide), m)
    assert [p.tool_call_id for p in asked] == ["c1", "c2"]
    assert RAN == ["delete a"] and [p.tool_call_id for p in suspension.pending] == ["c2"]


def test_decide_tool_call_of_the_wrong_kind_gives_an_error_result(flavour: Flavour) -> None:
    m = model(tool_call("ask_human", {"question": "?"}, "q1"), "Hm.")
    cfg = config(decide_tool_call=lambda pending: Approve())
    _, messages, suspension = flavour.start_suspending("go", context(), cfg, m)
    assert suspension is None
    assert texts(messages)[2] == ("toolResult", "decide_tool_call returned Approve for tool call q1, which waits for "
                                  "a result (ToolOutput, Deny or None)", True)


# --------------------------------------------------------------------------- decisions that do not fit


@pytest.mark.parametrize("decisions, text", [
    ({}, "Cannot resume: no decision for pending tool calls c1, c2"),
    ({"c1": Approve(), "c2": ToolOutput("x"), "c9": Deny()}, "Cannot resume: no pending tool call c9"),
    ({"c1": ToolOutput("x"), "c2": Approve()},
     "Cannot resume: tool call c1 waits for an approval (Approve or Deny), not ToolOutput; "
     "tool call c2 waits for a result (ToolOutput or Deny), not Approve"),
    ({"c2": Deny(), "zz": Approve(), "aa": Approve()},
     "Cannot resume: no decision for pending tool call c1; no pending tool call aa, zz"),
])
def test_decisions_that_do_not_fit_raise_one_error_naming_the_ids_before_anything_runs(
        flavour: Flavour, decisions: dict[str, Any], text: str) -> None:
    m = model(calls(("delete", {"path": "a"}, "c1"), ("ask_human", {"question": "?"}, "c2")), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    with pytest.raises(ValueError) as info:
        flavour.resume(suspension, decisions, context(), config(), m)
    assert str(info.value) == text
    assert RAN == [] and m.calls == 1
    # nothing lost: the same suspension resumes with the right decisions
    _, messages, _ = flavour.resume(suspension, {"c1": Approve(), "c2": ToolOutput("x")}, context(), config(), m)
    assert [msg.role for msg in messages][-1] == "assistant"


def test_a_decision_that_is_not_one_is_a_type_error(flavour: Flavour) -> None:
    m = model(tool_call("delete", {"path": "a"}, "c1"), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    with pytest.raises(TypeError, match=r"decision for 'c1' must be Approve, Deny or ToolOutput, not a bool"):
        flavour.resume(suspension, {"c1": True}, context(), config(), m)
    with pytest.raises(TypeError, match="argument 'suspension' must be a Suspension"):
        flavour.resume(to_json(suspension), {"c1": Approve()}, context(), config(), m)


def test_a_suspension_of_a_newer_format_is_refused(flavour: Flavour) -> None:
    m = model(tool_call("delete", {"path": "a"}, "c1"), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    data = to_json(suspension)
    data["version"] = 99
    with pytest.raises(ValueError, match="^Cannot resume: the suspension has format version 99; this library reads "
                                         "versions 1 to 2$"):
        flavour.resume(from_json(data), {"c1": Approve()}, context(), config(), m)


# --------------------------------------------------------------------------- JSON and the other interpreter


@pytest.mark.parametrize("first, second", [(SYNC, ASYNCIO), (ASYNCIO, SYNC)], ids=["sync-then-asyncio",
                                                                                   "asyncio-then-sync"])
def test_the_suspension_round_trips_through_json_and_resumes_on_the_other_interpreter(
        first: Flavour, second: Flavour) -> None:
    replies = [calls(("delete", {"path": "a"}, "c1"), ("ls", {}, "c2")), "Done."]
    m = model(*replies)
    _, _, suspension = first.start_suspending("go", context(), config(), m, clock=clock)
    text = json.dumps(to_json(suspension))
    restored = from_json(json.loads(text))
    assert restored == suspension and isinstance(restored, Suspension)
    _, messages, _ = second.resume(restored, {"c1": Approve()}, context(), config(), m, clock=clock)
    RAN.clear()
    assert messages == at_once(second, {"c1": Approve()}, replies)[1]


# --------------------------------------------------------------------------- the run's other endings


def test_an_aborted_resume_gives_the_pending_calls_an_aborted_result(flavour: Flavour) -> None:
    from interpreters import AbortSignal

    m = model(tool_call("delete", {"path": "a"}, "c1"), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m)
    signal = AbortSignal()
    signal.abort()
    events, messages, again = flavour.suspending(lambda: flavour.resume_suspended(
        suspension, {"c1": Approve()}, context=context(), config=config(), signal=signal, stream_fn=m))
    assert again is None and types(events)[-1] == "agent_end"
    assert RAN == [] and m.calls == 1


# --------------------------------------------------------------------------- budgets


def usage(tokens: int, cost: float) -> Usage:
    return Usage(total_tokens=tokens, cost=Cost(total=cost))


def looping(n: int, tokens: int = 10, cost: float = 0.25) -> list[Any]:
    return [Reply(tool_calls=[("ls", {}, f"l{i}")], usage=usage(tokens, cost)) for i in range(n)]


@pytest.mark.parametrize("budget, value, turns, used", [
    ("max_turns", 2, 2, 2), ("max_total_tokens", 25, 3, 30), ("max_cost_usd", 0.5, 2, 0.5),
])
def test_a_budget_ends_the_run_after_the_turn_that_reached_it(flavour: Flavour, budget: str, value: Any,
                                                              turns: int, used: Any) -> None:
    m = model(*looping(10))
    events, messages, _ = flavour.start_suspending("go", context(), config(**{budget: value}), m)
    assert m.calls == turns
    assert types(events)[-4:] == ["message_end", "turn_end", "budget_reached", "agent_end"]
    assert events[-2] == BudgetReachedEvent(budget, value, used)  # type: ignore[arg-type]
    assert [msg.role for msg in messages].count("assistant") == turns


def test_tool_results_usage_counts_toward_the_token_budget(flavour: Flavour) -> None:
    spender = AgentTool("spend", "spend", "", {"type": "object"},
                        lambda *a: AgentToolResult("ok", usage=usage(100, 0.0)))
    m = model(*[Reply(tool_calls=[("spend", {}, f"s{i}")], usage=usage(1, 0.0)) for i in range(5)])
    events, _, _ = flavour.start_suspending("go", AgentContext(tools=[spender]), config(max_total_tokens=150), m)
    assert m.calls == 2 and events[-2] == BudgetReachedEvent("max_total_tokens", 150, 202)


def test_budgets_carry_over_a_suspension_and_the_resumed_config_sets_them(flavour: Flavour) -> None:
    replies = [Reply(tool_calls=[("delete", {"path": "a"}, "c1")], usage=usage(10, 0.0)), *looping(5)]
    m = model(*replies)
    _, _, suspension = flavour.start_suspending("go", context(), config(max_turns=2), m)
    assert suspension.state.run.turns == 0  # the suspended turn has not ended yet
    events, _, _ = flavour.resume(suspension, {"c1": Approve()}, context(), config(max_turns=3), m)
    assert m.calls == 3 and events[-2] == BudgetReachedEvent("max_turns", 3, 3)


def test_budgets_are_checked_values() -> None:
    with pytest.raises(ValueError, match="max_turns must be None or an integer >= 1, not 0"):
        config(max_turns=0)
    with pytest.raises(ValueError, match=r"max_cost_usd must be None or a number > 0 \(US dollars\), not -1"):
        config(max_cost_usd=-1)


def test_requires_approval_must_be_a_bool_or_a_function() -> None:
    with pytest.raises(TypeError, match="requires_approval must be a bool or a function"):
        AgentTool("x", "x", "", {}, print, requires_approval="yes")  # type: ignore[arg-type]


def test_every_flavour_is_covered() -> None:
    assert {f.name for f in FLAVOURS} == {"sync", "asyncio"}
