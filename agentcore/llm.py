"""What a stream function receives: the model's view of the conversation and the call options.

A stream function is ``stream_fn(model, context, options)`` returning an iterable (or, under the
asyncio interpreter, an async iterable) of :mod:`agentcore.stream` events that ends with a
``DoneEvent`` or an ``ErrorEvent``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .messages import LlmMessage, ThinkingLevel
from .records import Record
from .tools import ToolSpec

__all__ = ["LlmContext", "StreamOptions"]


class LlmContext(Record, frozen=True):
    """System prompt, messages (already converted for the model) and tool specs."""

    system_prompt: str
    messages: Sequence[LlmMessage]
    tools: tuple[ToolSpec, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamOptions:
    """Per-call options. ``api_key``, ``signal`` and the callbacks are filled in by the
    interpreter when it makes the call; they never appear in an effect or a transcript."""

    thinking_level: ThinkingLevel = "off"
    temperature: float | None = None
    max_tokens: int | None = None
    cache_retention: Literal["none", "short", "long"] | None = None
    session_id: str | None = None
    headers: Mapping[str, str] | None = None
    metadata: Mapping[str, Any] | None = None
    thinking_budgets: Mapping[str, int] | None = None
    max_retry_delay_ms: int | None = None
    transport: str | None = None
    api_key: str | None = None
    signal: Any = None
    on_payload: Callable[..., Any] | None = None
    on_response: Callable[..., Any] | None = None
