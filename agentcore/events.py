"""Agent events: what a run reports to its listeners, in order.

A run is ``agent_start``, then one or more turns (``turn_start`` ... ``turn_end``), each holding
``message_start``/``message_update``/``message_end`` for the messages it adds and
``tool_execution_start``/``update``/``end`` for the tools it runs, and finally ``agent_end``
with every message the run added. ``agent_end`` is always last and always emitted exactly once,
unless the run suspends: then ``agent_suspended`` is last instead, and the resumed run ends
with ``agent_end`` (or suspends again). A run that a budget ended has ``budget_reached`` just
before its ``agent_end``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from .frozen import JSON
from .messages import AgentMessage, AssistantMessage, ToolResultMessage
from .records import Record
from .stream import PartialAssistantMessage, StreamEvent
from .tools import AgentToolResult, PendingCall

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "AgentSuspendedEvent",
    "BudgetReachedEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]


class AgentStartEvent(Record, frozen=True, tag="agent_start"):
    """The run begins."""


class TurnStartEvent(Record, frozen=True, tag="turn_start"):
    """A turn begins."""


class MessageStartEvent(Record, frozen=True, tag="message_start"):
    """A message begins. For a streamed reply ``message`` is the (empty) partial."""

    message: AgentMessage


class MessageUpdateEvent(Record, frozen=True, tag="message_update"):
    """One stream event of the assistant reply, with the partial message after it."""

    message: PartialAssistantMessage
    assistant_message_event: StreamEvent


class MessageEndEvent(Record, frozen=True, tag="message_end"):
    message: AgentMessage


class ToolExecutionStartEvent(Record, frozen=True, tag="tool_execution_start"):
    """A tool call is about to be prepared; ``args`` are the raw arguments from the model."""

    tool_call_id: str
    tool_name: str
    args: JSON


class ToolExecutionUpdateEvent(Record, frozen=True, tag="tool_execution_update"):
    """A running tool reported progress."""

    tool_call_id: str
    tool_name: str
    args: JSON
    partial_result: Any


class ToolExecutionEndEvent(Record, frozen=True, tag="tool_execution_end"):
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool


class TurnEndEvent(Record, frozen=True, tag="turn_end"):
    message: AssistantMessage
    tool_results: tuple[ToolResultMessage, ...]


class AgentEndEvent(Record, frozen=True, tag="agent_end"):
    messages: tuple[AgentMessage, ...]


class AgentSuspendedEvent(Record, frozen=True, tag="agent_suspended"):
    """The run stopped to wait for decisions on ``pending`` (the last event of its stream)."""

    pending: tuple[PendingCall, ...]


class BudgetReachedEvent(Record, frozen=True, tag="budget_reached"):
    """A budget of the run (``max_turns``, ``max_total_tokens`` or ``max_cost_usd``) was reached
    after a turn: the run ends (``agent_end`` comes next). ``used`` is what the run used."""

    budget: Literal["max_turns", "max_total_tokens", "max_cost_usd"]
    limit: float
    used: float


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
    | AgentSuspendedEvent
    | BudgetReachedEvent
)
