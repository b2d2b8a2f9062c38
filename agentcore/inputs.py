"""Inputs: facts the interpreter reports to the core, in the past tense.

Every answer to an effect carries that effect's ``id``. Every input carries ``at``, the
interpreter's clock in milliseconds when the fact happened: the core stamps the messages it
creates with it (so a replay reproduces the recorded timestamps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from .config import AfterToolCallResult, BeforeToolCallResult, NextTurn
from .frozen import JSON
from .messages import AgentMessage
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


@dataclass(frozen=True, slots=True)
class Started:
    """The user started a run with these prompt messages."""

    type: ClassVar[str] = "started"
    prompts: tuple[AgentMessage, ...]
    at: int = 0


@dataclass(frozen=True, slots=True)
class Continued:
    """The user continued from the current context without a new message."""

    type: ClassVar[str] = "continued"
    at: int = 0


@dataclass(frozen=True, slots=True)
class SteeringPolled:
    type: ClassVar[str] = "steering_polled"
    id: int
    messages: tuple[AgentMessage, ...]
    at: int = 0


@dataclass(frozen=True, slots=True)
class FollowUpsPolled:
    type: ClassVar[str] = "follow_ups_polled"
    id: int
    messages: tuple[AgentMessage, ...]
    at: int = 0


@dataclass(frozen=True, slots=True)
class ContextTransformed:
    type: ClassVar[str] = "context_transformed"
    id: int
    messages: Sequence[AgentMessage]
    at: int = 0


@dataclass(frozen=True, slots=True)
class ContextConverted:
    type: ClassVar[str] = "context_converted"
    id: int
    messages: Sequence[AgentMessage]
    at: int = 0


@dataclass(frozen=True, slots=True)
class StreamEventReceived:
    """The stream function produced one event for model call ``id``."""

    type: ClassVar[str] = "stream_event_received"
    id: int
    event: StreamEvent
    at: int = 0


@dataclass(frozen=True, slots=True)
class StreamFailed:
    """The stream function raised, or its stream ended without a ``done``/``error`` event."""

    type: ClassVar[str] = "stream_failed"
    id: int
    error: str
    at: int = 0


@dataclass(frozen=True, slots=True)
class ArgumentsPrepared:
    type: ClassVar[str] = "arguments_prepared"
    id: int
    arguments: JSON
    at: int = 0


@dataclass(frozen=True, slots=True)
class BeforeToolCallDecided:
    type: ClassVar[str] = "before_tool_call_decided"
    id: int
    result: BeforeToolCallResult | None
    at: int = 0


@dataclass(frozen=True, slots=True)
class ToolUpdated:
    """A running tool called ``on_update(partial_result)``."""

    type: ClassVar[str] = "tool_updated"
    id: int
    partial_result: Any
    at: int = 0


@dataclass(frozen=True, slots=True)
class ToolFinished:
    type: ClassVar[str] = "tool_finished"
    id: int
    result: AgentToolResult
    at: int = 0


@dataclass(frozen=True, slots=True)
class ToolFailed:
    """The tool raised; ``error`` is the exception text."""

    type: ClassVar[str] = "tool_failed"
    id: int
    error: str
    at: int = 0


@dataclass(frozen=True, slots=True)
class ToolTimedOut:
    """The tool was still running ``timeout_ms`` after it started: the interpreter aborted the
    call's signal and will drop its late result."""

    type: ClassVar[str] = "tool_timed_out"
    id: int
    timeout_ms: int
    at: int = 0


@dataclass(frozen=True, slots=True)
class AfterToolCallDecided:
    type: ClassVar[str] = "after_tool_call_decided"
    id: int
    result: AfterToolCallResult | None
    at: int = 0


@dataclass(frozen=True, slots=True)
class NextTurnPrepared:
    type: ClassVar[str] = "next_turn_prepared"
    id: int
    next_turn: NextTurn | None
    at: int = 0


@dataclass(frozen=True, slots=True)
class StopAfterTurnDecided:
    type: ClassVar[str] = "stop_after_turn_decided"
    id: int
    stop: bool
    at: int = 0


@dataclass(frozen=True, slots=True)
class HookFailed:
    """A hook (or ``prepare_arguments``) raised; ``error`` is the exception text."""

    type: ClassVar[str] = "hook_failed"
    id: int
    error: str
    at: int = 0


@dataclass(frozen=True, slots=True)
class AbortRequested:
    """The run's abort signal fired."""

    type: ClassVar[str] = "abort_requested"
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
