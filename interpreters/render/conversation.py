"""A recorded run as a conversation: :func:`build_conversation` folds the events of a run (a
replayed transcript's, say) into :class:`Conversation`: turns, each with its user and assistant
messages, the tool calls of each assistant message with their results, and the usage and cost
per turn. :mod:`~interpreters.render.text` and :mod:`~interpreters.render.html` render it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agentcore import (
    AgentEndEvent,
    AgentEvent,
    AssistantMessage,
    MessageEndEvent,
    ToolCall,
    ToolResultMessage,
    TurnStartEvent,
    UserMessage,
)

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
    "header_facts",
]


@dataclass
class ToolCallEntry:
    call: ToolCall
    result: ToolResultMessage | None = None

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

    @property
    def usage(self) -> UsageTotals:
        total = UsageTotals()
        for t in self.turns:
            total.merge(t.usage)
        return total

    @property
    def tool_calls(self) -> list[ToolCallEntry]:
        return [c for t in self.turns for e in t.entries if isinstance(e, AssistantEntry) for c in e.calls]


def build_conversation(events: Iterable[AgentEvent]) -> Conversation:
    """Fold a run's events into turns, messages, tool calls with their results, and usage."""
    conv = Conversation()
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
        elif isinstance(event, AgentEndEvent):
            conv.finished = True
            conv.new_messages = len(event.messages)
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
