"""Content blocks, messages, usage and models: the data every other module speaks.

All records are frozen ``msgspec`` structs (:mod:`agentcore.records`). Messages carry a ``role``
(a class constant) and an integer ``timestamp`` in milliseconds, supplied by whoever created the
message (the interpreter's clock, or the replayed transcript); the core never reads a clock.

>>> m = UserMessage("What is 2 + 2?", timestamp=1)
>>> m.role, m.content
('user', 'What is 2 + 2?')
>>> a = AssistantMessage((TextContent("4"),), stop_reason="stop")
>>> a.text
'4'
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

from .frozen import EMPTY, JSON, FrozenDict, freeze
from .records import Message, Record, set_field

__all__ = [
    "AgentMessage",
    "AssistantContent",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "ContentBlock",
    "Cost",
    "ImageContent",
    "LlmMessage",
    "Model",
    "ModelCost",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevel",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "THINKING_LEVELS",
]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")
StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted"]


# --------------------------------------------------------------------------- content blocks


class TextContent(Record, frozen=True, tag="text"):
    """Plain text. ``text_signature`` is an opaque provider token kept for round trips."""

    text: str
    text_signature: str | None = None


class ThinkingContent(Record, frozen=True, tag="thinking"):
    """Model reasoning. ``redacted`` blocks carry the provider's opaque payload in the signature."""

    thinking: str
    thinking_signature: str | None = None
    redacted: bool = False


class ImageContent(Record, frozen=True, tag="image"):
    """An image as base64 ``data`` with its ``mime_type`` (``image/png`` ...)."""

    data: str
    mime_type: str


class ToolCall(Record, frozen=True, tag="toolCall"):
    """A tool call requested by the model. ``arguments`` is frozen JSON (a :class:`FrozenDict`).

    ``invalid_json`` holds the raw argument text when the model streamed something that is not
    valid JSON (``arguments`` then holds what could be salvaged); the loop does not run such a
    call and tells the model what was wrong.
    """

    id: str
    name: str
    arguments: FrozenDict = EMPTY
    thought_signature: str | None = None
    invalid_json: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, FrozenDict):
            set_field(self, "arguments", freeze(self.arguments))


ContentBlock: TypeAlias = TextContent | ThinkingContent | ImageContent | ToolCall
UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall


# --------------------------------------------------------------------------- usage and models


class Cost(Record, frozen=True):
    """Cost in USD, by kind of token."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


ZERO_COST = Cost()


class Usage(Record, frozen=True):
    """Token counts of one model call (or one tool's own model use) and what they cost."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = ZERO_COST


ZERO_USAGE = Usage()


class ModelCost(Record, frozen=True):
    """Prices in USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(Record, frozen=True, kw_only=True):
    """A model and how to reach it.

    ``api`` names the wire protocol (``openai-completions``, ``openai-responses``,
    ``anthropic-messages``, ``google-generative-ai`` or anything a custom stream function
    understands); ``provider`` names who serves it (used to find the API key).
    """

    id: str
    name: str = ""
    api: str = "scripted"
    provider: str = "scripted"
    base_url: str = ""
    reasoning: bool = False
    input: tuple[str, ...] = ("text",)
    cost: ModelCost = msgspec.field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: FrozenDict | None = None


# --------------------------------------------------------------------------- messages


# msgspec makes fields keyword-only per class: a message's positional fields sit in a base.


class _UserFields(Message, frozen=True):
    content: str | tuple[UserContent, ...]


class UserMessage(_UserFields, frozen=True, kw_only=True, tag="user"):
    """A user turn: a string or a sequence of text and image blocks."""

    timestamp: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            set_field(self, "content", tuple(self.content))

    @property
    def text(self) -> str:
        """The text of the message (text blocks joined, images skipped)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


class _AssistantFields(Message, frozen=True):
    content: tuple[AssistantContent, ...] = ()


class AssistantMessage(_AssistantFields, frozen=True, kw_only=True, tag="assistant"):
    """A model turn: text, thinking and tool calls, with the provider metadata and usage."""

    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = ZERO_USAGE
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    response_id: str | None = None
    timestamp: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            set_field(self, "content", tuple(self.content))

    @property
    def text(self) -> str:
        """The text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls, in source order."""
        return tuple(b for b in self.content if isinstance(b, ToolCall))


class _ToolResultFields(Message, frozen=True):
    tool_call_id: str
    tool_name: str
    content: tuple[UserContent, ...] = ()


class ToolResultMessage(_ToolResultFields, frozen=True, kw_only=True, tag="toolResult"):
    """The result of one tool call, sent back to the model."""

    details: JSON = None
    is_error: bool = False
    usage: Usage | None = None
    added_tool_names: tuple[str, ...] | None = None
    timestamp: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            set_field(self, "content", tuple(self.content))
        details = freeze(self.details)
        if details is not self.details:
            set_field(self, "details", details)

    @property
    def text(self) -> str:
        """The text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


class BashExecutionMessage(Message, frozen=True, kw_only=True, tag="bashExecution"):
    """A shell command the user ran themselves, shown to the model as a user message."""

    command: str
    output: str
    exit_code: int | None = 0
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool = False
    timestamp: int = 0


class CompactionSummaryMessage(Message, frozen=True, kw_only=True, tag="compactionSummary"):
    """A summary that replaces compacted history."""

    summary: str
    tokens_before: int = 0
    timestamp: int = 0


class BranchSummaryMessage(Message, frozen=True, kw_only=True, tag="branchSummary"):
    """A summary of a conversation branch the user came back from."""

    summary: str
    from_id: str = ""
    timestamp: int = 0


LlmMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
"""What a model can be sent: the output of ``convert_to_llm``."""

AgentMessage: TypeAlias = Any
"""Any message the loop carries: the six built-in types or an application's own frozen record
with a ``role`` attribute and a ``timestamp``."""
