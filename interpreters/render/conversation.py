"""A recorded run as a conversation: :func:`build_conversation` folds the events of a run (a
replayed transcript's, say) into :class:`Conversation`: turns, each with its user and assistant
messages, the tool calls of each assistant message with their results, and the usage and cost
per turn. :mod:`~interpreters.render.text` and :mod:`~interpreters.render.html` render it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agentcore import (
    AgentEndEvent,
    AgentEvent,
    AgentSuspendedEvent,
    Approve,
    AssistantMessage,
    BudgetReachedEvent,
    Deny,
    MessageEndEvent,
    PendingCall,
    ToolCall,
    ToolResultMessage,
    TurnStartEvent,
    UserMessage,
    thaw,
)
from agentcore.texts import budget_reached_text

from .common import UsageTotals

__all__ = [
    "AssistantEntry",
    "Conversation",
    "Entry",
    "OtherEntry",
    "ToolCallEntry",
    "Turn",
    "UserEntry",
    "build_conversation",
    "decision_text",
    "header_facts",
]


@dataclass
class ToolCallEntry:
    call: ToolCall
    result: ToolResultMessage | None = None
    pending: PendingCall | None = None
    """Set when the run suspended on this call (it waited for a decision)."""
    decision: Any = None
    """The decision it got when the run was resumed (``Approve``, ``Deny``, ``ToolOutput``)."""

    @property
    def decided(self) -> str:
        """What happened to a call that waited: ``approved``, ``denied: reason``, ... (``""``:
        it never waited)."""
        return decision_text(self.pending, self.decision)

    @property
    def is_error(self) -> bool:
        return self.result is not None and self.result.is_error


@dataclass
class UserEntry:
    message: Any
    queued: bool = False
    """Delivered during the run (steering or follow-up), not as the prompt."""


@dataclass
class AssistantEntry:
    message: AssistantMessage
    calls: list[ToolCallEntry] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.message.stop_reason in ("error", "aborted")


@dataclass
class OtherEntry:
    """A tool result without its call, or a message of an application-defined type."""

    message: Any


Entry = UserEntry | AssistantEntry | OtherEntry


@dataclass
class Turn:
    number: int
    entries: list[Entry] = field(default_factory=list)

    @property
    def usage(self) -> UsageTotals:
        total = UsageTotals()
        for e in self.entries:
            if isinstance(e, AssistantEntry):
                total.add(e.message.usage)
                for c in e.calls:
                    total.add(c.result.usage if c.result is not None else None)
            elif isinstance(e, OtherEntry) and isinstance(e.message, ToolResultMessage):
                total.add(e.message.usage)
        return total


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)
    finished: bool = False
    new_messages: int = 0
    suspended: bool = False
    """The recording ends with the run suspended (tool calls wait for decisions)."""
    budget: str = ""
    """What ended the run when a budget did (``Budget reached: max_turns is 3, ...``)."""

    @property
    def usage(self) -> UsageTotals:
        total = UsageTotals()
        for t in self.turns:
            total.merge(t.usage)
        return total

    @property
    def tool_calls(self) -> list[ToolCallEntry]:
        return [c for t in self.turns for e in t.entries if isinstance(e, AssistantEntry) for c in e.calls]


def decision_text(pending: PendingCall | None, decision: Any) -> str:
    """How a call that waited for a decision is shown (``""`` for one that never waited)."""
    if pending is None:
        return ""
    if decision is None:
        return f"waits for {'an approval' if pending.waits_for == 'approval' else 'a result'}: {pending.reason}"
    if isinstance(decision, Approve):
        if decision.arguments is not None:
            return f"approved with arguments {json.dumps(thaw(decision.arguments), ensure_ascii=False)}"
        return "approved"
    if isinstance(decision, Deny):
        return f"denied: {decision.reason}" if decision.reason else "denied"
    return "result supplied"


def build_conversation(events: Iterable[AgentEvent], decisions: Iterable[tuple[str, Any]] = ()) -> Conversation:
    """Fold a run's events into turns, messages, tool calls with their results, and usage.
    ``decisions`` (tool call id, decision) are those the recording's ``Resumed`` inputs gave."""
    conv = Conversation()
    decided = dict(decisions)
    assistant_seen = False

    def current() -> Turn:
        if not conv.turns:
            conv.turns.append(Turn(1))
        return conv.turns[-1]

    for event in events:
        if isinstance(event, TurnStartEvent):
            conv.turns.append(Turn(len(conv.turns) + 1))
        elif isinstance(event, MessageEndEvent):
            m = event.message
            if isinstance(m, AssistantMessage):
                assistant_seen = True
                current().entries.append(AssistantEntry(m, [ToolCallEntry(c) for c in m.tool_calls]))
            elif isinstance(m, ToolResultMessage):
                for entry in reversed(current().entries):
                    if isinstance(entry, AssistantEntry):
                        match = next((c for c in entry.calls if c.call.id == m.tool_call_id), None)
                        if match is not None:
                            match.result = m
                            break
                else:
                    current().entries.append(OtherEntry(m))
            elif isinstance(m, UserMessage):
                current().entries.append(UserEntry(m, queued=assistant_seen))
            else:
                current().entries.append(OtherEntry(m))
        elif isinstance(event, AgentSuspendedEvent):
            waiting = {p.tool_call_id: p for p in event.pending}
            for entry in current().entries:
                if isinstance(entry, AssistantEntry):
                    for c in entry.calls:
                        if c.call.id in waiting:
                            c.pending = waiting[c.call.id]
                            c.decision = decided.get(c.call.id)
            conv.suspended = True
        elif isinstance(event, BudgetReachedEvent):
            conv.budget = budget_reached_text(event.budget, event.limit, event.used)
        elif isinstance(event, AgentEndEvent):
            conv.finished = True
            conv.suspended = False
            conv.new_messages = len(event.messages)
        if isinstance(event, TurnStartEvent) or isinstance(event, MessageEndEvent):
            conv.suspended = False
    return conv


def header_facts(header: Mapping[str, Any]) -> list[tuple[str, str]]:
    model = header.get("model") or {}
    facts: list[tuple[str, str]] = []
    if isinstance(model, Mapping):
        facts.append(("model", f"{model.get('id', '?')} ({model.get('provider', '?')}, {model.get('api', '?')})"))
    tools = [t.get("name", "?") for t in header.get("tools") or () if isinstance(t, Mapping)]
    facts.append(("tools", ", ".join(tools) or "none"))
    hooks = header.get("hooks") or ()
    if hooks:
        facts.append(("hooks", ", ".join(str(h) for h in hooks)))
    created = header.get("created_at")
    if isinstance(created, int):
        when = datetime.fromtimestamp(created / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        facts.append(("recorded", when))
    facts.append(("library", f"agentcore-fx {header.get('library_version', '?')}, "
                             f"{header.get('interpreter', '?')} interpreter"))
    return facts
