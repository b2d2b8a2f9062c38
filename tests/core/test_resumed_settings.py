"""``Resumed.settings``: what the resuming code puts in force, step by step.

The core takes the model, hooks, budgets, tools and tool execution mode of the settings for the
rest of the run and keeps what was used so far; ``None`` (transcripts before 0.6.0) keeps the
suspended state's. Settings that are not settings, or tools under which a pending call waits for
what its tool does not make it wait for, are refused with the state left as it was. An approved
call is checked against its tool as the settings' tools declare it.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import AgentTool, Approve, Emit, ExecuteTool, Model, Resumed, RunSettings, replace, step
from agentcore.machine import Rejection
from agentcore.state import Suspended, llm_view
from agentcore.suspension import run_settings
from agentcore.texts import waits_for_text

from .test_suspension import GATED, run_reply
from .world import call, reply

NEW = Model(id="m2")


def suspended(max_turns: int | None = None, **kw: Any) -> Any:
    s, _ = run_reply(reply(call("g", "gated")), **kw)
    assert isinstance(s.phase, Suspended)
    return replace(s, run=replace(s.run, max_turns=max_turns))


def test_settings_go_in_force_and_the_counters_are_kept() -> None:
    s = suspended(max_turns=5)
    settings = RunSettings(NEW, frozenset({"after_tool_call"}), 2, 1000, 0.5)
    after, _ = step(s, Resumed((("g", Approve()),), 5, settings)).unwrap()
    run = after.run
    assert (run.model, run.hooks, run.max_turns, run.max_total_tokens, run.max_cost_usd) == \
        (NEW, frozenset({"after_tool_call"}), 2, 1000, 0.5)
    assert (run.turns, run.total_tokens, run.cost_usd) == (s.run.turns, s.run.total_tokens, s.run.cost_usd)


def test_without_settings_the_suspended_state_s_are_kept() -> None:
    s = suspended(max_turns=5)
    after, _ = step(s, Resumed((("g", Approve()),), 5)).unwrap()
    assert (after.run.model, after.run.hooks, after.run.max_turns) == (s.run.model, s.run.hooks, 5)


def test_a_converting_hook_put_in_force_drops_the_kept_view_and_taking_it_away_rebuilds_it() -> None:
    s = suspended()
    assert s.run.llm_messages is not None
    converted, _ = step(s, Resumed((("g", Approve()),), 5, RunSettings(s.run.model, frozenset({"convert_to_llm"})))
                        ).unwrap()
    assert converted.run.llm_messages is None
    hooked = replace(s, run=replace(s.run, hooks=frozenset({"transform_context"}), llm_messages=None))
    plain, _ = step(hooked, Resumed((("g", Approve()),), 5, RunSettings(hooked.run.model))).unwrap()
    assert plain.run.llm_messages == llm_view(hooked.run.messages, frozenset())


@pytest.mark.parametrize(("settings", "text"), [
    (5, "Resumed's settings is an int (5), not a RunSettings or None"),
    (RunSettings("m"), "Resumed's settings.model is a str ('m'), not a Model"),  # type: ignore[arg-type]
    (RunSettings(NEW, frozenset({"get_api_key", "nope"})),
     "Resumed's settings name hooks the core does not ask ('get_api_key', 'nope'): the hooks are among "
     "convert_to_llm, transform_context, get_steering_messages, get_follow_up_messages, before_tool_call, "
     "after_tool_call, decide_tool_call, prepare_next_turn, should_stop_after_turn"),
    (RunSettings(NEW, max_turns=0), "Resumed's settings.max_turns is 0: a budget is None or an integer >= 1"),
    (RunSettings(NEW, max_total_tokens=-3),
     "Resumed's settings.max_total_tokens is -3: a budget is None or an integer >= 1"),
    (RunSettings(NEW, max_cost_usd=float("nan")),
     "Resumed's settings.max_cost_usd is nan: a budget is None or a finite number > 0"),
    (RunSettings(NEW, max_cost_usd=0.0),
     "Resumed's settings.max_cost_usd is 0.0: a budget is None or a finite number > 0"),
    (RunSettings(NEW, tool_execution="both"),  # type: ignore[arg-type]
     "Resumed's settings.tool_execution is a str ('both'), not one of 'sequential', 'parallel' or None"),
])
def test_settings_that_are_not_settings_are_refused_and_the_state_is_kept(settings: Any, text: str) -> None:
    s = suspended()
    result = step(s, Resumed((("g", Approve()),), 5, settings))
    failure = result.failure()
    assert isinstance(failure, Rejection) and failure.reason == text and failure.input == "resumed"


def test_the_tool_execution_mode_goes_in_force() -> None:
    s = suspended()
    assert s.run.tool_execution == "parallel"
    after, _ = step(s, Resumed((("g", Approve()),), 5, RunSettings(NEW, tool_execution="sequential"))).unwrap()
    assert after.run.tool_execution == "sequential"


def _settings(*tools: AgentTool) -> RunSettings:
    from agentcore import AgentLoopConfig

    return run_settings(AgentLoopConfig(model=NEW), list(tools))


def test_a_pending_call_whose_tool_the_settings_declare_deferred_is_refused() -> None:
    s = suspended()
    later = AgentTool("gated", "gated", "", {"type": "object"}, print, deferred=True)
    failure = step(s, Resumed((("g", Approve()),), 5, _settings(later))).failure()
    assert isinstance(failure, Rejection) and failure.reason == waits_for_text("g", "gated", "approval")


def test_an_approved_call_is_checked_against_the_settings_tools() -> None:
    s, _ = run_reply(reply(call("g", "gated", x="1")))
    typed = AgentTool("gated", "gated", "", {"type": "object", "properties": {"x": {"type": "integer"}}}, print,
                      requires_approval=True)
    _, effects = step(s, Resumed((("g", Approve()),), 5, _settings(typed))).unwrap()
    assert not any(isinstance(e, ExecuteTool) for e in effects)
    end = next(e.event for e in effects if isinstance(e, Emit) and e.event.type == "tool_execution_end")
    assert end.is_error and end.result.content[0].text.startswith('Validation failed for tool "gated":\n  - x: ')
    _, effects = step(s, Resumed((("g", Approve()),), 5, _settings(GATED))).unwrap()
    assert [e.args for e in effects if isinstance(e, ExecuteTool)] == [{"x": "1"}]


def test_an_approved_call_of_a_tool_the_settings_lack_is_not_found_and_step_does_not_raise() -> None:
    s = suspended()
    for decision in (Approve(), Approve(arguments={"y": 2})):
        _, effects = step(s, Resumed((("g", decision),), 5, _settings())).unwrap()
        end = next(e.event for e in effects if isinstance(e, Emit) and e.event.type == "tool_execution_end")
        assert end.is_error and end.result.content[0].text == "Tool gated not found"
