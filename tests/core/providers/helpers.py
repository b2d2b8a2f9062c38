"""Shared helpers for the provider codec tests."""

from __future__ import annotations

from typing import Any

from agentcore.messages import AssistantMessage, Model, ModelCost
from agentcore.providers.anthropic import AnthropicDecoder
from agentcore.providers.base import StreamDecoder
from agentcore.providers.google import GoogleDecoder
from agentcore.providers.openai_chat import OpenAIChatDecoder
from agentcore.providers.openai_responses import OpenAIResponsesDecoder
from agentcore.stream import DoneEvent, ErrorEvent, StartEvent, StreamEvent

DECODERS: dict[str, type[StreamDecoder]] = {
    "openai_chat": OpenAIChatDecoder,
    "openai_compatible": OpenAIChatDecoder,
    "openai_responses": OpenAIResponsesDecoder,
    "anthropic": AnthropicDecoder,
    "gemini": GoogleDecoder,
}

APIS = {
    "openai_chat": "openai-completions",
    "openai_compatible": "openai-completions",
    "openai_responses": "openai-responses",
    "anthropic": "anthropic-messages",
    "gemini": "google-generative-ai",
}

TEST_MODEL_COST = ModelCost(input=1.0, output=2.0, cache_read=0.5, cache_write=4.0)


def model_for(folder: str, id: str = "test-model") -> Model:
    return Model(id=id, api=APIS[folder], provider="test", cost=TEST_MODEL_COST)


def decode(folder: str, body: bytes, chunks: list[int] | None = None) -> list[StreamEvent]:
    """Decode ``body`` with the folder's decoder, fed whole or cut at the ``chunks`` sizes."""
    d = DECODERS[folder](model_for(folder))
    events: list[StreamEvent] = []
    if chunks is None:
        events += d.feed(body)
    else:
        pos = 0
        for size in chunks:
            events += d.feed(body[pos:pos + size])
            pos += size
        events += d.feed(body[pos:])
    events += d.finish()
    events += d.finish()  # idempotent
    events += d.feed(b"data: ignored after the end\n\n")
    return events


def check_shape(events: list[StreamEvent]) -> AssistantMessage:
    """Exactly one start first, exactly one final event last; returns the final message."""
    assert events, "no events"
    assert isinstance(events[0], StartEvent)
    assert sum(isinstance(e, StartEvent) for e in events) == 1
    finals = [e for e in events if isinstance(e, (DoneEvent, ErrorEvent))]
    assert len(finals) == 1 and finals[0] is events[-1], [e.type for e in events]
    last = events[-1]
    return last.message if isinstance(last, DoneEvent) else last.error  # type: ignore[union-attr]


def summary(events: list[StreamEvent]) -> Any:
    """Event types plus the final message: what must not depend on how the body was split."""
    msg = check_shape(events)
    return [e.type for e in events], msg
