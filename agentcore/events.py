"""Agent events: what a run reports to its listeners, in order.

A run is ``agent_start``, then one or more turns (``turn_start`` ... ``turn_end``), each holding
``message_start``/``message_update``/``message_end`` for the messages it adds and
``tool_execution_start``/``update``/``end`` for the tools it runs, and finally ``agent_end``
with every message the run added. ``agent_end`` is always last and always emitted exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from .frozen import JSON
from .messages import AgentMessage, AssistantMessage, ToolResultMessage
from .stream import PartialAssistantMessage, StreamEvent
from .tools import AgentToolResult

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]


@dataclass(frozen=True, slots=True)
class AgentStartEvent:
    type: ClassVar[str] = "agent_start"


@dataclass(frozen=True, slots=True)
class TurnStartEvent:
    type: ClassVar[str] = "turn_start"


@dataclass(frozen=True, slots=True)
class MessageStartEvent:
    """A message begins. For a streamed reply ``message`` is the (empty) partial."""

    type: ClassVar[str] = "message_start"
    message: AgentMessage


@dataclass(frozen=True, slots=True)
class MessageUpdateEvent:
    """One stream event of the assistant reply, with the partial message after it."""

    type: ClassVar[str] = "message_update"
    message: PartialAssistantMessage
    assistant_message_event: StreamEvent


@dataclass(frozen=True, slots=True)
class MessageEndEvent:
    type: ClassVar[str] = "message_end"
    message: AgentMessage


@dataclass(frozen=True, slots=True)
class ToolExecutionStartEvent:
    """A tool call is about to be prepared; ``args`` are the raw arguments from the model."""

    type: ClassVar[str] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: JSON


@dataclass(frozen=True, slots=True)
class ToolExecutionUpdateEvent:
    """A running tool reported progress."""

    type: ClassVar[str] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: JSON
    partial_result: Any


@dataclass(frozen=True, slots=True)
class ToolExecutionEndEvent:
    type: ClassVar[str] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool


@dataclass(frozen=True, slots=True)
class TurnEndEvent:
    type: ClassVar[str] = "turn_end"
    message: AssistantMessage
    tool_results: tuple[ToolResultMessage, ...]


@dataclass(frozen=True, slots=True)
class AgentEndEvent:
    type: ClassVar[str] = "agent_end"
    messages: tuple[AgentMessage, ...]


AgentEvent: TypeAlias = (
    AgentStartEvent
    | TurnStartEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | TurnEndEvent
    | AgentEndEvent
)
