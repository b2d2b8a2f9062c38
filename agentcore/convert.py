"""The default ``convert_to_llm``: agent messages to the messages a model accepts.

- ``user``, ``assistant`` and ``toolResult`` messages pass through unchanged.
- ``BashExecutionMessage``, ``CompactionSummaryMessage`` and ``BranchSummaryMessage`` become user
  text messages (a bash execution marked ``exclude_from_context`` is dropped).
- Any other message type (an application's own record) is dropped: it is part of the run's
  history and events, but the model never sees it. Give the loop a ``convert_to_llm`` hook to
  send it.

>>> from agentcore.messages import CompactionSummaryMessage
>>> summary = CompactionSummaryMessage(summary="We fixed the bug.", timestamp=5)
>>> convert_message(summary).content  # doctest: +NORMALIZE_WHITESPACE
'The conversation history before this point was compacted into the following summary:\\n\\n<summary>\\nWe
fixed the bug.\\n</summary>'
"""

from __future__ import annotations

from collections.abc import Iterable

from .messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    LlmMessage,
    ToolResultMessage,
    UserMessage,
)

__all__ = ["convert_message", "default_convert_to_llm"]


def _bash_text(m: BashExecutionMessage) -> str:
    text = f"Ran `{m.command}`\n```\n{m.output}\n```" if m.output else f"Ran `{m.command}`\n(no output)"
    if m.cancelled:
        text += "\n\n(command cancelled)"
    elif m.exit_code not in (0, None):
        text += f"\n\nCommand exited with code {m.exit_code}"
    if m.truncated and m.full_output_path:
        text += f"\n\n[Output truncated. Full output: {m.full_output_path}]"
    return text


def convert_message(message: AgentMessage) -> LlmMessage | None:
    """Convert one message, or ``None`` when the model should not see it."""
    if isinstance(message, (UserMessage, AssistantMessage, ToolResultMessage)):
        return message
    if isinstance(message, BashExecutionMessage):
        if message.exclude_from_context:
            return None
        return UserMessage(_bash_text(message), timestamp=message.timestamp)
    if isinstance(message, CompactionSummaryMessage):
        return UserMessage(
            "The conversation history before this point was compacted into the following summary:"
            f"\n\n<summary>\n{message.summary}\n</summary>",
            timestamp=message.timestamp,
        )
    if isinstance(message, BranchSummaryMessage):
        return UserMessage(
            "The following is a summary of a branch that this conversation came back from:"
            f"\n\n<summary>\n{message.summary}\n</summary>",
            timestamp=message.timestamp,
        )
    return None


def default_convert_to_llm(messages: Iterable[AgentMessage]) -> list[LlmMessage]:
    """Convert a whole history (what the core does incrementally when no hook is set)."""
    out: list[LlmMessage] = []
    for m in messages:
        c = convert_message(m)
        if c is not None:
            out.append(c)
    return out
