"""Inputs: facts the interpreter reports to the core, in the past tense.

Every answer to an effect carries that effect's ``id``. Every input carries ``at``, the
interpreter's clock in milliseconds when the fact happened: the core stamps the messages it
creates with it (so a replay reproduces the recorded timestamps).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from .config import AfterToolCallResult, BeforeToolCallResult, NextTurn
from .frozen import JSON
from .messages import AgentMessage
from .records import Record
from .stream import StreamEvent
from .tools import AgentToolResult

__all__ = [
    "AbortRequested",
    "AfterToolCallDecided",
    "ArgumentsPrepared",
    "BeforeToolCallDecided",
    "ContextConverted",
    "ContextTransformed",
    "Continued",
    "FollowUpsPolled",
    "HookFailed",
    "Input",
    "NextTurnPrepared",
    "Started",
    "SteeringPolled",
    "StopAfterTurnDecided",
    "StreamEventReceived",
    "StreamFailed",
    "ToolFailed",
    "ToolFinished",
    "ToolTimedOut",
    "ToolUpdated",
]


class Started(Record, frozen=True, tag="started"):
    """The user started a run with these prompt messages."""

    prompts: tuple[AgentMessage, ...]
    at: int = 0


class Continued(Record, frozen=True, tag="continued"):
    """The user continued from the current context without a new message."""

    at: int = 0


class SteeringPolled(Record, frozen=True, tag="steering_polled"):
    id: int
    messages: tuple[AgentMessage, ...]
    at: int = 0


class FollowUpsPolled(Record, frozen=True, tag="follow_ups_polled"):
    id: int
    messages: tuple[AgentMessage, ...]
    at: int = 0


class ContextTransformed(Record, frozen=True, tag="context_transformed"):
    id: int
    messages: Sequence[AgentMessage]
    at: int = 0


class ContextConverted(Record, frozen=True, tag="context_converted"):
    id: int
    messages: Sequence[AgentMessage]
    at: int = 0


class StreamEventReceived(Record, frozen=True, tag="stream_event_received"):
    """The stream function produced one event for model call ``id``."""

    id: int
    event: StreamEvent
    at: int = 0


class StreamFailed(Record, frozen=True, tag="stream_failed"):
    """The stream function raised, or its stream ended without a ``done``/``error`` event."""

    id: int
    error: str
    at: int = 0


class ArgumentsPrepared(Record, frozen=True, tag="arguments_prepared"):
    id: int
    arguments: JSON
    at: int = 0


class BeforeToolCallDecided(Record, frozen=True, tag="before_tool_call_decided"):
    id: int
    result: BeforeToolCallResult | None
    at: int = 0


class ToolUpdated(Record, frozen=True, tag="tool_updated"):
    """A running tool called ``on_update(partial_result)``."""

    id: int
    partial_result: Any
    at: int = 0


class ToolFinished(Record, frozen=True, tag="tool_finished"):
    id: int
    result: AgentToolResult
    at: int = 0


class ToolFailed(Record, frozen=True, tag="tool_failed"):
    """The tool raised; ``error`` is the exception text."""

    id: int
    error: str
    at: int = 0


class ToolTimedOut(Record, frozen=True, tag="tool_timed_out"):
    """The tool was still running ``timeout_ms`` after it started: the interpreter aborted the
    call's signal and will drop its late result."""

    id: int
    timeout_ms: int
    at: int = 0


class AfterToolCallDecided(Record, frozen=True, tag="after_tool_call_decided"):
    id: int
    result: AfterToolCallResult | None
    at: int = 0


class NextTurnPrepared(Record, frozen=True, tag="next_turn_prepared"):
    id: int
    next_turn: NextTurn | None
    at: int = 0


class StopAfterTurnDecided(Record, frozen=True, tag="stop_after_turn_decided"):
    id: int
    stop: bool
    at: int = 0


class HookFailed(Record, frozen=True, tag="hook_failed"):
    """A hook (or ``prepare_arguments``) raised; ``error`` is the exception text."""

    id: int
    error: str
    at: int = 0


class AbortRequested(Record, frozen=True, tag="abort_requested"):
    """The run's abort signal fired."""

    at: int = 0


Input: TypeAlias = (
    Started
    | Continued
    | SteeringPolled
    | FollowUpsPolled
    | ContextTransformed
    | ContextConverted
    | StreamEventReceived
    | StreamFailed
    | ArgumentsPrepared
    | BeforeToolCallDecided
    | ToolUpdated
    | ToolFinished
    | ToolFailed
    | ToolTimedOut
    | AfterToolCallDecided
    | NextTurnPrepared
    | StopAfterTurnDecided
    | HookFailed
    | AbortRequested
)
