"""Effects: commands the core gives the interpreter.

``Emit`` and ``RunEnded`` expect no answer. Every other effect carries an ``id``; the interpreter
carries it out and feeds back the matching input with the same ``id``:

=====================  ====================================================================
effect                 answered by
=====================  ====================================================================
PollSteering           SteeringPolled | HookFailed
PollFollowUps          FollowUpsPolled | HookFailed
TransformContext       ContextTransformed | HookFailed
ConvertToLlm           ContextConverted | HookFailed
CallLlm                StreamEventReceived* then a final event | StreamFailed
PrepareArguments       ArgumentsPrepared | HookFailed
BeforeToolCall         BeforeToolCallDecided | HookFailed
ExecuteTool            ToolUpdated* then ToolFinished | ToolFailed
AfterToolCall          AfterToolCallDecided | HookFailed
PrepareNextTurn        NextTurnPrepared | HookFailed
ShouldStopAfterTurn    StopAfterTurnDecided | HookFailed
=====================  ====================================================================

``CancelLlm(id)`` tells the interpreter to stop reading the stream of call ``id`` (the run was
aborted and the core has already closed the message).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from .config import AfterToolCallContext, BeforeToolCallContext, PrepareNextTurnContext
from .events import AgentEvent
from .frozen import JSON
from .messages import AgentMessage, Model, ThinkingLevel, ToolCall
from .tools import ToolSpec

__all__ = [
    "AfterToolCall",
    "BeforeToolCall",
    "CallLlm",
    "CancelLlm",
    "ConvertToLlm",
    "Effect",
    "Emit",
    "ExecuteTool",
    "PollFollowUps",
    "PollSteering",
    "PrepareArguments",
    "PrepareNextTurn",
    "RunEnded",
    "ShouldStopAfterTurn",
    "TransformContext",
]


@dataclass(frozen=True, slots=True)
class Emit:
    """Deliver ``event`` to the run's listeners."""

    type: ClassVar[str] = "emit"
    event: AgentEvent


@dataclass(frozen=True, slots=True)
class PollSteering:
    type: ClassVar[str] = "poll_steering"
    id: int


@dataclass(frozen=True, slots=True)
class PollFollowUps:
    type: ClassVar[str] = "poll_follow_ups"
    id: int


@dataclass(frozen=True, slots=True)
class TransformContext:
    type: ClassVar[str] = "transform_context"
    id: int
    messages: Sequence[AgentMessage]


@dataclass(frozen=True, slots=True)
class ConvertToLlm:
    type: ClassVar[str] = "convert_to_llm"
    id: int
    messages: Sequence[AgentMessage]


@dataclass(frozen=True, slots=True)
class CallLlm:
    """Call the model: resolve the API key, call the stream function, feed back its events."""

    type: ClassVar[str] = "call_llm"
    id: int
    model: Model
    thinking_level: ThinkingLevel
    system_prompt: str
    messages: Sequence[AgentMessage]
    tools: tuple[ToolSpec, ...]


@dataclass(frozen=True, slots=True)
class CancelLlm:
    type: ClassVar[str] = "cancel_llm"
    id: int


@dataclass(frozen=True, slots=True)
class PrepareArguments:
    """Call the tool's ``prepare_arguments`` on the raw arguments."""

    type: ClassVar[str] = "prepare_arguments"
    id: int
    tool_call: ToolCall


@dataclass(frozen=True, slots=True)
class BeforeToolCall:
    type: ClassVar[str] = "before_tool_call"
    id: int
    context: BeforeToolCallContext


@dataclass(frozen=True, slots=True)
class ExecuteTool:
    """Run tool ``tool_call.name`` with the validated ``args``."""

    type: ClassVar[str] = "execute_tool"
    id: int
    tool_call: ToolCall
    args: JSON


@dataclass(frozen=True, slots=True)
class AfterToolCall:
    type: ClassVar[str] = "after_tool_call"
    id: int
    context: AfterToolCallContext


@dataclass(frozen=True, slots=True)
class PrepareNextTurn:
    type: ClassVar[str] = "prepare_next_turn"
    id: int
    context: PrepareNextTurnContext


@dataclass(frozen=True, slots=True)
class ShouldStopAfterTurn:
    type: ClassVar[str] = "should_stop_after_turn"
    id: int
    context: PrepareNextTurnContext


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run is over (``agent_end`` was the last event); ``messages`` are the new messages."""

    type: ClassVar[str] = "run_ended"
    messages: tuple[AgentMessage, ...]


Effect: TypeAlias = (
    Emit
    | PollSteering
    | PollFollowUps
    | TransformContext
    | ConvertToLlm
    | CallLlm
    | CancelLlm
    | PrepareArguments
    | BeforeToolCall
    | ExecuteTool
    | AfterToolCall
    | PrepareNextTurn
    | ShouldStopAfterTurn
    | RunEnded
)
