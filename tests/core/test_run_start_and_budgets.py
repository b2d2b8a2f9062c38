"""How a run starts and when its budgets end it, seen through ``step``: what ``initial_state``
takes from the config, the first steps of ``Started`` and ``Continued`` (the steering poll before
the first model call), and budgets that are set but not reached (the run goes on) or reached.

Written against the survivors of the mutation sample (docs/mutation.md)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    BudgetReachedEvent,
    CallLlm,
    Continued,
    Cost,
    Emit,
    Model,
    PollSteering,
    Started,
    SteeringPolled,
    StreamEventReceived,
    TextContent,
    ToolFinished,
    Usage,
    UserMessage,
    initial_state,
    replace,
    step,
)
from agentcore.effects import ExecuteTool, RunEnded
from agentcore.state import LoopState

from .world import call, reply, stream_events

FREE = AgentTool("free", "free", "", {"type": "object"}, print)
REASONS = Model(id="r", reasoning=True)
USER = UserMessage("go", timestamp=1)


def kinds(effects: Any) -> list[str]:
    return [e.event.type if isinstance(e, Emit) else type(e).__name__ for e in effects]


# --------------------------------------------------------------------------- initial_state


@pytest.mark.parametrize("level", ["minimal", "low", "medium", "high", "xhigh"])
def test_initial_state_takes_the_configs_thinking_level(level: Any) -> None:
    config = AgentLoopConfig(model=REASONS, thinking_level=level)
    s = initial_state(AgentContext(), config)
    assert s.run.thinking_level == level
    s, effects = step(s, Started((USER,), 1)).unwrap()
    assert isinstance(effects[-1], CallLlm) and effects[-1].thinking_level == level


def test_a_thinking_level_given_to_initial_state_wins_over_the_configs() -> None:
    config = AgentLoopConfig(model=REASONS, thinking_level="low")
    assert initial_state(AgentContext(), config, thinking_level="high").run.thinking_level == "high"
    assert initial_state(AgentContext(), model=REASONS).run.thinking_level == "off"


def test_a_model_that_does_not_reason_is_called_with_thinking_off() -> None:
    config = AgentLoopConfig(model=Model(id="plain"), thinking_level="high")
    s = initial_state(AgentContext(), config)
    assert s.run.thinking_level == "high"
    _, effects = step(s, Started((USER,), 1)).unwrap()
    assert effects[-1].thinking_level == "off"


def test_initial_state_takes_the_configs_mode_hooks_and_budgets() -> None:
    config = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential", max_turns=3, max_total_tokens=50,
                             max_cost_usd=2, get_steering_messages=list, get_api_key=str)
    run = initial_state(AgentContext(), config).run
    assert (run.tool_execution, run.max_turns, run.max_total_tokens, run.max_cost_usd) == ("sequential", 3, 50, 2.0)
    assert type(run.max_cost_usd) is float
    assert run.hooks == frozenset({"get_steering_messages"})  # the api key never enters the core
    plain = initial_state(AgentContext(), model=Model(id="m")).run
    assert (plain.tool_execution, plain.max_turns, plain.max_total_tokens, plain.max_cost_usd) == (
        "parallel", None, None, None)


@pytest.mark.parametrize(("hooks", "kept"), [
    (frozenset(), True), (frozenset({"get_steering_messages"}), True),
    (frozenset({"convert_to_llm"}), False), (frozenset({"transform_context"}), False),
])
def test_the_state_keeps_the_default_conversion_only_when_no_hook_converts(hooks: frozenset[str], kept: bool) -> None:
    s = initial_state(AgentContext("", (USER,)), model=Model(id="m"), hooks=hooks)
    assert s.run.llm_messages == ([USER] if kept else None)


def test_initial_state_needs_a_config_or_a_model() -> None:
    with pytest.raises(ValueError, match="^initial_state needs a config or a model$"):
        initial_state(AgentContext())


# --------------------------------------------------------------------------- the first steps


def test_continued_polls_steering_before_its_first_model_call() -> None:
    s = initial_state(AgentContext("", (USER,)), model=Model(id="m"), hooks=frozenset({"get_steering_messages"}))
    s, effects = step(s, Continued(1)).unwrap()
    assert kinds(effects) == ["agent_start", "turn_start", "PollSteering"]
    steer = UserMessage("and this", timestamp=2)
    s, effects = step(s, SteeringPolled(effects[-1].id, (steer,), 2)).unwrap()
    assert kinds(effects) == ["message_start", "message_end", "CallLlm"]
    assert list(effects[-1].messages) == [USER, steer]
    assert list(s.new_messages) == [steer]


def test_started_polls_steering_after_its_prompts_before_its_first_model_call() -> None:
    s = initial_state(AgentContext(), model=Model(id="m"), hooks=frozenset({"get_steering_messages"}))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    assert kinds(effects) == ["agent_start", "turn_start", "message_start", "message_end", "PollSteering"]
    assert isinstance(effects[-1], PollSteering) and s.phase.name == "awaiting_steering"


def test_continued_without_hooks_calls_the_model_on_the_context() -> None:
    s = initial_state(AgentContext("sys", (USER,)), model=Model(id="m"))
    s, effects = step(s, Continued(1)).unwrap()
    assert kinds(effects) == ["agent_start", "turn_start", "CallLlm"]
    assert (effects[-1].system_prompt, list(effects[-1].messages)) == ("sys", [USER])
    assert list(s.new_messages) == []


# --------------------------------------------------------------------------- budgets


def two_turns(costs: tuple[float, float] = (0.25, 0.25), **budgets: Any) -> tuple[LoopState, list[Any]]:
    """A run of two turns (a tool call, then a text reply), each reply using 10 tokens and the
    cost in ``costs``, under ``budgets``: the last state, then every event and the ``RunEnded``."""
    config = AgentLoopConfig(model=Model(id="m"), **budgets)
    s = initial_state(AgentContext("", (), (FREE,)), config)
    s, effects = step(s, Started((USER,), 1)).unwrap()
    seen = list(effects)
    for message, cost in zip((reply(call("f", "free")), reply("done")), costs):
        llm = effects[-1]
        if not isinstance(llm, CallLlm):
            break
        for ev in stream_events(replace(message, usage=Usage(total_tokens=10, cost=Cost(total=cost)))):
            s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
            seen += effects
        execute = [e for e in effects if isinstance(e, ExecuteTool)]
        if execute:
            s, effects = step(s, ToolFinished(execute[0].id, AgentToolResult((TextContent("ok"),)), 3)).unwrap()
            seen += effects
    return s, [e.event if isinstance(e, Emit) else e for e in seen if isinstance(e, (Emit, RunEnded))]


@pytest.mark.parametrize("budgets", [
    {"max_turns": 3}, {"max_total_tokens": 21}, {"max_cost_usd": 0.6},
    {"max_turns": 3, "max_total_tokens": 21, "max_cost_usd": 0.6},
])
def test_a_budget_that_is_set_but_not_reached_lets_the_run_go_on(budgets: dict[str, Any]) -> None:
    s, seen = two_turns(**budgets)
    types = [getattr(e, "type", "") for e in seen]
    assert types.count("turn_end") == 2 and "budget_reached" not in types
    assert types[-2:] == ["agent_end", "run_ended"]
    assert (s.run.turns, s.run.total_tokens, s.run.cost_usd) == (2, 20, 0.5)


@pytest.mark.parametrize(("budgets", "event"), [
    ({"max_turns": 1}, BudgetReachedEvent("max_turns", 1, 1)),
    ({"max_total_tokens": 10}, BudgetReachedEvent("max_total_tokens", 10, 10)),
    ({"max_total_tokens": 5}, BudgetReachedEvent("max_total_tokens", 5, 10)),
    ({"max_cost_usd": 0.25}, BudgetReachedEvent("max_cost_usd", 0.25, 0.25)),
    ({"max_turns": 2, "max_total_tokens": 20}, BudgetReachedEvent("max_turns", 2, 2)),  # the first one named
])
def test_a_budget_reached_ends_the_run_after_its_turn(budgets: dict[str, Any], event: BudgetReachedEvent) -> None:
    s, seen = two_turns(**budgets)
    types = [getattr(e, "type", "") for e in seen]
    assert seen[types.index("budget_reached")] == event
    assert types[types.index("budget_reached") - 1] == "turn_end" and types[-2:] == ["agent_end", "run_ended"]
    assert s.phase.name == "finished"


@pytest.mark.parametrize(("budget", "costs"), [(0.3, (0.1, 0.2)), (0.9, (0.7, 0.2))])
def test_costs_that_add_up_to_just_under_the_budget_reach_it(budget: float, costs: tuple[float, float]) -> None:
    # 0.1 + 0.2 is 0.30000000000000004, 0.7 + 0.2 is 0.8999999999999999: both reach their budget
    s, seen = two_turns(costs, max_cost_usd=budget)
    (reached,) = [e for e in seen if getattr(e, "type", "") == "budget_reached"]
    assert (reached.budget, reached.limit, reached.used, s.run.turns) == ("max_cost_usd", budget, sum(costs), 2)
