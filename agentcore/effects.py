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
ExecuteTool            ToolUpdated* then ToolFinished | ToolFailed | ToolTimedOut
AfterToolCall          AfterToolCallDecided | HookFailed
CheckApproval          ApprovalChecked | HookFailed
DecideToolCall         ToolCallDecided | HookFailed
PrepareNextTurn        NextTurnPrepared | HookFailed
ShouldStopAfterTurn    StopAfterTurnDecided | HookFailed
=====================  ====================================================================

Each effect that ``HookFailed`` may answer asks for a hook of the user's: :mod:`agentcore.hooks`
declares which (a test checks this table against it).

``CancelLlm(id)`` tells the interpreter to stop reading the stream of call ``id`` (the run was
aborted and the core has already closed the message).

``RunSuspended`` ends a run like ``RunEnded`` does, but the run is not over: its state is
suspended, waiting for the decisions on ``pending`` (fed later as ``Resumed``, in any process).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from .config import AfterToolCallContext, BeforeToolCallContext, PrepareNextTurnContext
from .events import AgentEvent
from .frozen import JSON
from .messages import AgentMessage, Model, ThinkingLevel, ToolCall
from .records import Record
from .tools import PendingCall, ToolSpec

__all__ = [
    "AfterToolCall",
    "BeforeToolCall",
    "CallLlm",
    "CancelLlm",
    "CheckApproval",
    "ConvertToLlm",
    "DecideToolCall",
    "Effect",
    "Emit",
    "ExecuteTool",
    "PollFollowUps",
    "PollSteering",
    "PrepareArguments",
    "PrepareNextTurn",
    "RunEnded",
    "RunSuspended",
    "ShouldStopAfterTurn",
    "TransformContext",
]


class Emit(Record, frozen=True, tag="emit"):
    """Deliver ``event`` to the run's listeners."""

    event: AgentEvent


class PollSteering(Record, frozen=True, tag="poll_steering"):
    id: int


class PollFollowUps(Record, frozen=True, tag="poll_follow_ups"):
    id: int


class TransformContext(Record, frozen=True, tag="transform_context"):
    id: int
    messages: Sequence[AgentMessage]


class ConvertToLlm(Record, frozen=True, tag="convert_to_llm"):
    id: int
    messages: Sequence[AgentMessage]


class CallLlm(Record, frozen=True, tag="call_llm"):
    """Call the model: resolve the API key, call the stream function, feed back its events."""

    id: int
    model: Model
    thinking_level: ThinkingLevel
    system_prompt: str
    messages: Sequence[AgentMessage]
    tools: tuple[ToolSpec, ...]


class CancelLlm(Record, frozen=True, tag="cancel_llm"):
    id: int


class PrepareArguments(Record, frozen=True, tag="prepare_arguments"):
    """Call the tool's ``prepare_arguments`` on the raw arguments."""

    id: int
    tool_call: ToolCall


class BeforeToolCall(Record, frozen=True, tag="before_tool_call"):
    id: int
    context: BeforeToolCallContext


class ExecuteTool(Record, frozen=True, tag="execute_tool"):
    """Run tool ``tool_call.name`` with the validated ``args``."""

    id: int
    tool_call: ToolCall
    args: JSON


class AfterToolCall(Record, frozen=True, tag="after_tool_call"):
    id: int
    context: AfterToolCallContext


class CheckApproval(Record, frozen=True, tag="check_approval"):
    """Ask the tool's ``requires_approval`` function whether this call needs an approval."""

    id: int
    tool_call: ToolCall
    args: JSON


class DecideToolCall(Record, frozen=True, tag="decide_tool_call"):
    """Ask the ``decide_tool_call`` hook for the decision on a call that waits for one."""

    id: int
    pending: PendingCall


class PrepareNextTurn(Record, frozen=True, tag="prepare_next_turn"):
    id: int
    context: PrepareNextTurnContext


class ShouldStopAfterTurn(Record, frozen=True, tag="should_stop_after_turn"):
    id: int
    context: PrepareNextTurnContext


class RunEnded(Record, frozen=True, tag="run_ended"):
    """The run is over (``agent_end`` was the last event); ``messages`` are the new messages."""

    messages: tuple[AgentMessage, ...]


class RunSuspended(Record, frozen=True, tag="run_suspended"):
    """The run stopped to wait for decisions on ``pending`` (``agent_suspended`` was the last
    event); ``messages`` are the new messages so far."""

    messages: tuple[AgentMessage, ...]
    pending: tuple[PendingCall, ...]


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
    | CheckApproval
    | DecideToolCall
    | RunSuspended
)
