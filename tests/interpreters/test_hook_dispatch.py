"""The interpreters call each hook effect's hook as ``agentcore.hooks`` declares it: the function
set on the config (or the tool) under the hook's name, and its value fed back as the hook's
answer, with the effect's id."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    AfterToolCall,
    AfterToolCallContext,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCall,
    BeforeToolCallContext,
    CallLlm,
    CheckApproval,
    ConvertToLlm,
    DecideToolCall,
    Model,
    PendingCall,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    PrepareNextTurnContext,
    ShouldStopAfterTurn,
    TextContent,
    ToolCall,
    TransformContext,
    UserMessage,
)
from agentcore.hooks import GET_API_KEY, HOOK_OF_EFFECT, HOOKS
from interpreters.runtime.checks import tool_registry
from interpreters.runtime.hooks import KeyLookup, hook_call

CALL = ToolCall("c1", "t", {"n": 1})
REPLY = AssistantMessage((CALL,), stop_reason="toolUse")
CTX = AgentContext("", (UserMessage("hi"),))
TURN_CTX = PrepareNextTurnContext(REPLY, (), CTX, ())
EFFECTS: tuple[Any, ...] = (
    PollSteering(7), PollFollowUps(7), TransformContext(7, CTX.messages), ConvertToLlm(7, CTX.messages),
    PrepareArguments(7, CALL), BeforeToolCall(7, BeforeToolCallContext(REPLY, CALL, {"n": 1}, CTX)),
    AfterToolCall(7, AfterToolCallContext(REPLY, CALL, {"n": 1}, AgentToolResult((TextContent("ok"),)), False, CTX)),
    CheckApproval(7, CALL, {"n": 1}), DecideToolCall(7, PendingCall("c1", "t", {"n": 1}, "why", "approval")),
    PrepareNextTurn(7, TURN_CTX), ShouldStopAfterTurn(7, TURN_CTX),
)


def none(*args: Any) -> None:
    return None


def test_every_hook_effect_is_dispatched_here() -> None:
    assert {type(e) for e in EFFECTS} == set(HOOK_OF_EFFECT)


@pytest.mark.parametrize("effect", EFFECTS, ids=lambda e: type(e).__name__)
def test_a_hook_effect_calls_the_hook_of_its_name_and_answers_with_the_hook_s_answer(effect: Any) -> None:
    hook = HOOK_OF_EFFECT[type(effect)]
    fns = {h.name: (lambda *a, _n=h.name: _n) for h in HOOKS}
    config = AgentLoopConfig(model=Model(id="m"), **{h.name: fns[h.name] for h in HOOKS if h.on == "config"})
    tool = AgentTool("t", "t", "", {"type": "object"}, none, prepare_arguments=fns["prepare_arguments"],
                     requires_approval=fns["requires_approval"])
    call = hook_call(effect, config, tool_registry([tool]), None)
    assert call.name == hook.name and call.fn is fns[hook.name]
    value = {"convert_to_llm": [], "transform_context": [], "get_steering_messages": [],
             "get_follow_up_messages": [], "decide_tool_call": None}.get(hook.name)
    answer = call.answer(value, 11)
    assert type(answer) is hook.answer and answer.id == 7 and answer.at == 11


def test_get_api_key_is_called_by_name_and_feeds_nothing() -> None:
    config = AgentLoopConfig(model=Model(id="m"), get_api_key=lambda provider: "k")
    call = hook_call(KeyLookup("anthropic"), config, {}, None)
    assert (call.name, call.args) == (GET_API_KEY.name, ("anthropic",))


def test_an_effect_that_asks_no_hook_is_refused() -> None:
    with pytest.raises(TypeError, match="^CallLlm is not a hook effect$"):
        hook_call(CallLlm(1, Model(id="m"), "off", "", (), ()), AgentLoopConfig(model=Model(id="m")), {}, None)
