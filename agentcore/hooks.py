"""The hooks, each declared once: where the user's function is set, how the core asks for it,
what brings its value back and what a failure of it gives.

A hook is a function of the user's that the run calls. Most are set on
:class:`~agentcore.config.AgentLoopConfig`; ``prepare_arguments`` and ``requires_approval`` are
set on a tool (:class:`~agentcore.tools.AgentTool`). The core never calls one: it asks the
interpreter with the hook's effect, and the interpreter feeds back the hook's answer (with the
effect's id), or ``HookFailed`` when the function raised. ``get_api_key`` is the exception: the
interpreter calls it itself, as part of a model call (keys never enter the core), and what it
raises fails that call (``StreamFailed``).

The turn's table (:data:`agentcore.machine.TURN`), the tool batch's table
(:data:`agentcore.batch.CALL`) and the interpreters' hook dispatch take the hooks from here.

>>> for hook in HOOKS:
...     print(f"{hook.name:24} {hook.on:6} {hook.effect.__name__ if hook.effect else '-':20}"
...           f" {hook.answer.__name__ if hook.answer else '-':22} {hook.failure.__name__}")
convert_to_llm           config ConvertToLlm         ContextConverted       HookFailed
transform_context        config TransformContext     ContextTransformed     HookFailed
get_steering_messages    config PollSteering         SteeringPolled         HookFailed
get_follow_up_messages   config PollFollowUps        FollowUpsPolled        HookFailed
before_tool_call         config BeforeToolCall       BeforeToolCallDecided  HookFailed
after_tool_call          config AfterToolCall        AfterToolCallDecided   HookFailed
decide_tool_call         config DecideToolCall       ToolCallDecided        HookFailed
prepare_next_turn        config PrepareNextTurn      NextTurnPrepared       HookFailed
should_stop_after_turn   config ShouldStopAfterTurn  StopAfterTurnDecided   HookFailed
get_api_key              config -                    -                      StreamFailed
prepare_arguments        tool   PrepareArguments     ArgumentsPrepared      HookFailed
requires_approval        tool   CheckApproval        ApprovalChecked        HookFailed
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from .effects import (
    AfterToolCall,
    BeforeToolCall,
    CheckApproval,
    ConvertToLlm,
    DecideToolCall,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    TransformContext,
)
from .inputs import (
    AfterToolCallDecided,
    ApprovalChecked,
    ArgumentsPrepared,
    BeforeToolCallDecided,
    ContextConverted,
    ContextTransformed,
    FollowUpsPolled,
    HookFailed,
    NextTurnPrepared,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamFailed,
    ToolCallDecided,
)

__all__ = [
    "AFTER_TOOL_CALL",
    "ASKED_BY_CORE",
    "BEFORE_TOOL_CALL",
    "CONVERT_TO_LLM",
    "DECIDE_TOOL_CALL",
    "GET_API_KEY",
    "GET_FOLLOW_UP_MESSAGES",
    "GET_STEERING_MESSAGES",
    "HOOKS",
    "HOOK_OF_EFFECT",
    "PREPARE_ARGUMENTS",
    "PREPARE_NEXT_TURN",
    "REQUIRES_APPROVAL",
    "SHOULD_STOP_AFTER_TURN",
    "TRANSFORM_CONTEXT",
    "Hook",
]


@dataclass(frozen=True, slots=True)
class Hook:
    """One hook. ``name`` is the attribute that holds the user's function, on the run's
    :class:`~agentcore.config.AgentLoopConfig` (``on="config"``) or on the tool (``on="tool"``);
    the core asks for it with ``effect`` and takes its value from ``answer``; ``failure`` is
    what a hook that raised gives. ``effect`` and ``answer`` are ``None`` for a hook the
    interpreter calls on its own (``get_api_key``)."""

    name: str
    on: Literal["config", "tool"]
    effect: type | None
    answer: type | None
    failure: type = HookFailed

    @property
    def asked_by_core(self) -> bool:
        """Whether the core asks for this config hook when it is set (the run's ``hooks``
        name it): every config hook but ``get_api_key``."""
        return self.on == "config" and self.effect is not None


CONVERT_TO_LLM: Final = Hook("convert_to_llm", "config", ConvertToLlm, ContextConverted)
TRANSFORM_CONTEXT: Final = Hook("transform_context", "config", TransformContext, ContextTransformed)
GET_STEERING_MESSAGES: Final = Hook("get_steering_messages", "config", PollSteering, SteeringPolled)
GET_FOLLOW_UP_MESSAGES: Final = Hook("get_follow_up_messages", "config", PollFollowUps, FollowUpsPolled)
BEFORE_TOOL_CALL: Final = Hook("before_tool_call", "config", BeforeToolCall, BeforeToolCallDecided)
AFTER_TOOL_CALL: Final = Hook("after_tool_call", "config", AfterToolCall, AfterToolCallDecided)
DECIDE_TOOL_CALL: Final = Hook("decide_tool_call", "config", DecideToolCall, ToolCallDecided)
PREPARE_NEXT_TURN: Final = Hook("prepare_next_turn", "config", PrepareNextTurn, NextTurnPrepared)
SHOULD_STOP_AFTER_TURN: Final = Hook("should_stop_after_turn", "config", ShouldStopAfterTurn, StopAfterTurnDecided)
GET_API_KEY: Final = Hook("get_api_key", "config", None, None, StreamFailed)
PREPARE_ARGUMENTS: Final = Hook("prepare_arguments", "tool", PrepareArguments, ArgumentsPrepared)
REQUIRES_APPROVAL: Final = Hook("requires_approval", "tool", CheckApproval, ApprovalChecked)

HOOKS: Final = (
    CONVERT_TO_LLM, TRANSFORM_CONTEXT, GET_STEERING_MESSAGES, GET_FOLLOW_UP_MESSAGES, BEFORE_TOOL_CALL,
    AFTER_TOOL_CALL, DECIDE_TOOL_CALL, PREPARE_NEXT_TURN, SHOULD_STOP_AFTER_TURN, GET_API_KEY,
    PREPARE_ARGUMENTS, REQUIRES_APPROVAL,
)
"""Every hook; the config's in the order of :data:`agentcore.config.HOOK_NAMES`."""

ASKED_BY_CORE: Final = tuple(hook.name for hook in HOOKS if hook.asked_by_core)
"""The config hooks the core asks for (what a run's ``hooks`` may name), in table order."""

HOOK_OF_EFFECT: Final = {hook.effect: hook for hook in HOOKS if hook.effect is not None}
"""Effect type → the hook it asks for."""
