"""What the spans say: the GenAI semantic conventions' attribute values of agentcore's records
(provider names, finish reasons, messages and tool definitions in the conventions' JSON shapes)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from agentcore import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    thaw,
)

__all__ = [
    "FINISH_REASONS",
    "INSTRUMENTATION",
    "SCHEMA_URL",
    "SEMCONV_VERSION",
    "input_messages",
    "json_text",
    "message_json",
    "output_messages",
    "provider_name",
    "tool_definitions",
]

SEMCONV_VERSION: Final = "1.41.0"
"""The version of the OpenTelemetry semantic conventions (GenAI) the spans follow."""

SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

INSTRUMENTATION: Final = "agentcore-fx"

# The provider names of agentcore's models → the conventions' well-known gen_ai.provider.name.
# Anything else (ollama, openrouter, scripted, a custom one) is passed through as it is.
_PROVIDERS: Final[Mapping[str, str]] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "gcp.gemini",
    "gemini": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "vertex": "gcp.vertex_ai",
    "vertex_ai": "gcp.vertex_ai",
    "amazon-bedrock": "aws.bedrock",
    "bedrock": "aws.bedrock",
    "azure-openai": "azure.ai.openai",
    "azure-openai-responses": "azure.ai.openai",
    "groq": "groq",
    "mistral": "mistral_ai",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "perplexity": "perplexity",
    "cohere": "cohere",
}

# stop_reason → gen_ai.response.finish_reasons / the output message's finish_reason.
FINISH_REASONS: Final[Mapping[str, str]] = {
    "stop": "stop",
    "length": "length",
    "toolUse": "tool_call",
    "error": "error",
    "aborted": "aborted",
}

json_text: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def provider_name(provider: str) -> str:
    """The ``gen_ai.provider.name`` of an agentcore provider name.

    >>> provider_name("google"), provider_name("openai"), provider_name("ollama")
    ('gcp.gemini', 'openai', 'ollama')
    """
    return _PROVIDERS.get(provider, provider or "_OTHER")


def _user_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"type": "blob", "modality": "image", "mime_type": block.mime_type,
                          "content": block.data})
    return parts


def _assistant_parts(content: Sequence[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ThinkingContent):
            if not block.redacted:
                parts.append({"type": "reasoning", "content": block.thinking})
        elif isinstance(block, ToolCall):
            parts.append({"type": "tool_call", "id": block.id, "name": block.name,
                          "arguments": thaw(block.arguments)})
    return parts


def message_json(message: Any) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": _user_parts(message.content)}
    if isinstance(message, AssistantMessage):
        return {"role": "assistant", "parts": _assistant_parts(message.content)}
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": message.tool_call_id,
                                           "response": message.text}]}
    # An application's own message type (or a summary message before conversion): its text if
    # it has one, under its own role.
    text = getattr(message, "text", None) or getattr(message, "summary", None)
    parts = [{"type": "text", "content": text}] if isinstance(text, str) else []
    return {"role": str(getattr(message, "role", "user")), "parts": parts}


def input_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Messages in the conventions' ``gen_ai.input.messages`` shape (role + parts).

    >>> input_messages([UserMessage("hi")])
    [{'role': 'user', 'parts': [{'type': 'text', 'content': 'hi'}]}]
    """
    return [message_json(m) for m in messages]


def output_messages(message: AssistantMessage) -> list[dict[str, Any]]:
    """A reply in the conventions' ``gen_ai.output.messages`` shape (one choice).

    >>> output_messages(AssistantMessage((TextContent("4"),)))
    [{'role': 'assistant', 'parts': [{'type': 'text', 'content': '4'}], 'finish_reason': 'stop'}]
    """
    return [{"role": "assistant", "parts": _assistant_parts(message.content),
             "finish_reason": FINISH_REASONS.get(message.stop_reason, message.stop_reason)}]


def tool_definitions(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"type": "function", "name": t.name, "description": t.description,
             "parameters": thaw(t.parameters)} for t in tools]
