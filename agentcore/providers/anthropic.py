"""Anthropic Messages codec (``api="anthropic-messages"``), also for Claude on Vertex AI.

Request: :func:`build_request`. Response: :class:`AnthropicDecoder`. Errors:
:func:`decode_error_response`.

The stream is SSE with named events whose JSON ``type`` repeats the name: ``message_start``
(message id, input usage), then per content block ``content_block_start`` /
``content_block_delta`` / ``content_block_stop`` (by the provider's block ``index``), then
``message_delta`` (``stop_reason``, cumulative usage) and ``message_stop``. ``ping`` events may
come anywhere; an ``error`` event ends the stream.

Blocks handled: ``text`` (``text_delta``), ``thinking`` (``thinking_delta``, ``signature_delta``),
``redacted_thinking`` (its opaque ``data`` becomes the signature of a redacted thinking block),
``tool_use`` (``input_json_delta`` fragments; no fragments or ``""`` mean ``{}``). Server-side
tool blocks (``server_tool_use``, ``web_search_tool_result``, ``*_tool_result``...) are run by
Anthropic itself and are skipped. Text and thinking blocks are opened on their first non-empty
delta, so the empty text blocks Anthropic sends around server tools leave no trace.
"""

from __future__ import annotations

import json
from typing import Any

from ..frozen import thaw
from ..llm import LlmContext, StreamOptions
from ..messages import (
    AssistantMessage,
    ImageContent,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .base import (
    HttpRequest,
    SSEStreamDecoder,
    as_dict,
    as_int,
    as_str,
    format_http_error,
    join_url,
    made_up_call_id,
    merge_headers,
)

__all__ = [
    "AnthropicDecoder",
    "DEFAULT_BASE_URL",
    "DEFAULT_THINKING_BUDGETS",
    "build_request",
    "decode_error_response",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

DEFAULT_THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768,
}

_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
    "refusal": "error",
}


# --------------------------------------------------------------------------- request


def thinking_budget(level: ThinkingLevel, options: StreamOptions) -> int:
    """The thinking budget (tokens) for ``level``: ``options.thinking_budgets`` or the defaults."""
    if options.thinking_budgets and level in options.thinking_budgets:
        return int(options.thinking_budgets[level])
    return DEFAULT_THINKING_BUDGETS.get(level, 1024)


def _cache_control(options: StreamOptions) -> dict[str, Any] | None:
    if options.cache_retention == "short":
        return {"type": "ephemeral"}
    if options.cache_retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return None


def _image(block: ImageContent) -> dict[str, Any]:
    return {"type": "image",
            "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}


def _user_blocks(content: str | tuple[Any, ...], model: Model) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            if b.text:
                out.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageContent):
            if "image" in model.input:
                out.append(_image(b))
            else:
                out.append({"type": "text", "text": "(image omitted: model has no image input)"})
    return out


def _assistant_blocks(msg: AssistantMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            if b.text:
                out.append({"type": "text", "text": b.text})
        elif isinstance(b, ThinkingContent):
            if b.redacted:
                if b.thinking_signature:
                    out.append({"type": "redacted_thinking", "data": b.thinking_signature})
            elif b.thinking_signature:
                out.append({"type": "thinking", "thinking": b.thinking,
                            "signature": b.thinking_signature})
            elif b.thinking:
                # Thinking without a signature (another provider's) cannot be replayed as such.
                out.append({"type": "text", "text": b.thinking})
        elif isinstance(b, ToolCall):
            out.append({"type": "tool_use", "id": b.id, "name": b.name,
                        "input": thaw(b.arguments)})
    return out


def _tool_result_block(msg: ToolResultMessage, model: Model) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            if b.text:
                content.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageContent) and "image" in model.input:
            content.append(_image(b))
    if not content:
        content = [{"type": "text", "text": "(no output)"}]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": msg.tool_call_id,
                             "content": content}
    if msg.is_error:
        block["is_error"] = True
    return block


def _convert_messages(model: Model, context: LlmContext) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for msg in context.messages:
        if isinstance(msg, UserMessage):
            blocks = _user_blocks(msg.content, model)
            if blocks:
                out.append({"role": "user", "content": blocks})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue
            blocks = _assistant_blocks(msg)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif isinstance(msg, ToolResultMessage):
            block = _tool_result_block(msg, model)
            last = out[-1] if out else None
            # Consecutive tool results go into one user message.
            if (last is not None and last["role"] == "user"
                    and all(b.get("type") == "tool_result" for b in last["content"])):
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
    return out


def build_request(model: Model, context: LlmContext, options: StreamOptions) -> HttpRequest:
    """The streaming ``POST {base_url}/v1/messages`` request for ``context``."""
    cache = _cache_control(options)
    messages = _convert_messages(model, context)
    if cache is not None and messages and messages[-1]["role"] == "user":
        last_block = messages[-1]["content"][-1]
        messages[-1]["content"][-1] = {**last_block, "cache_control": cache}
    max_tokens = options.max_tokens or model.max_tokens
    body: dict[str, Any] = {"model": model.id, "max_tokens": max_tokens, "stream": True,
                            "messages": messages}
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": context.system_prompt}
        if cache is not None:
            system["cache_control"] = cache
        body["system"] = [system]
    if context.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": thaw(t.parameters)}
            for t in context.tools
        ]
    thinking = model.reasoning and options.thinking_level != "off"
    if thinking:
        budget = thinking_budget(options.thinking_level, options)
        if max_tokens <= budget:
            # The budget must be below max_tokens: leave room for the answer.
            body["max_tokens"] = max_tokens = budget + max(1024, min(max_tokens, 8192))
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif options.temperature is not None:
        body["temperature"] = options.temperature  # not allowed together with thinking
    if options.metadata and "user_id" in options.metadata:
        body["metadata"] = {"user_id": str(options.metadata["user_id"])}
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "anthropic-version": ANTHROPIC_VERSION,
    }
    if options.api_key:
        headers["x-api-key"] = options.api_key
    return HttpRequest(
        "POST",
        join_url(model.base_url or DEFAULT_BASE_URL, "v1/messages"),
        merge_headers(headers, model, options),
        body,
    )


def decode_error_response(status: int, headers: Any, body: bytes) -> str:
    """A readable message for a non-2xx response (HTTP status, error type and message)."""
    return format_http_error("Anthropic", status, headers, body)


# --------------------------------------------------------------------------- response


class _Block:
    __slots__ = ("kind", "index", "signature", "redacted", "id", "name", "input")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "text", "thinking", "toolCall" or "skip"
        self.index: int | None = None  # our content index once opened
        self.signature: str | None = None
        self.redacted = False
        self.id = ""
        self.name = ""
        self.input: Any = None


class AnthropicDecoder(SSEStreamDecoder):
    """Incremental decoder of an Anthropic Messages SSE stream (see the module docstring)."""

    final_event_name = "message_stop"

    def __init__(self, model: Model, *, timestamp: int = 0) -> None:
        super().__init__(model, timestamp=timestamp)
        self._blocks: dict[int, _Block] = {}
        self._stop_reason: str | None = None
        self._stop_sequence: str | None = None
        self._raw_usage: dict[str, int] = {}

    def _event(self, name: str, payload: Any) -> None:
        if not isinstance(payload, dict):
            self._fail(f"Unexpected stream payload (not a JSON object): {str(payload)[:80]!r}")
            return
        kind = as_str(payload.get("type")) or name
        if kind == "content_block_delta":
            self._block_delta(payload)
        elif kind == "content_block_start":
            self._block_start(payload)
        elif kind == "content_block_stop":
            self._block_stop(payload)
        elif kind == "message_start":
            message = as_dict(payload.get("message"))
            if as_str(message.get("id")):
                self.partial = self.partial.with_header(response_id=message["id"])
            self._usage_update(as_dict(message.get("usage")))
        elif kind == "message_delta":
            delta = as_dict(payload.get("delta"))
            if isinstance(delta.get("stop_reason"), str):
                self._stop_reason = delta["stop_reason"]
            if isinstance(delta.get("stop_sequence"), str):
                self._stop_sequence = delta["stop_sequence"]
            self._usage_update(as_dict(payload.get("usage")))
        elif kind == "message_stop":
            self._complete()
        elif kind == "error":
            err = as_dict(payload.get("error"))
            text = as_str(err.get("message")) or json.dumps(payload)[:300]
            etype = as_str(err.get("type"))
            rid = as_str(payload.get("request_id"))
            extra = ", ".join(x for x in (etype, f"request_id: {rid}" if rid else "") if x)
            self._fail(f"Anthropic stream error: {text}" + (f" ({extra})" if extra else ""))
        # ping and unknown events: ignored

    def _usage_update(self, raw: dict[str, Any]) -> None:
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                    "cache_creation_input_tokens"):
            if isinstance(raw.get(key), int):
                self._raw_usage[key] = raw[key]
        u = self._raw_usage
        self._set_usage(Usage(
            input=u.get("input_tokens", 0),
            output=u.get("output_tokens", 0),
            cache_read=u.get("cache_read_input_tokens", 0),
            cache_write=u.get("cache_creation_input_tokens", 0),
        ))

    def _block_start(self, payload: dict[str, Any]) -> None:
        key = as_int(payload.get("index"))
        cb = as_dict(payload.get("content_block"))
        ctype = as_str(cb.get("type"))
        if ctype == "text":
            block = _Block("text")
            self._blocks[key] = block
            self._block_text(block, as_str(cb.get("text")))
        elif ctype == "thinking":
            block = _Block("thinking")
            self._blocks[key] = block
            if as_str(cb.get("signature")):
                block.signature = cb["signature"]
            self._block_text(block, as_str(cb.get("thinking")))
        elif ctype == "redacted_thinking":
            block = _Block("thinking")
            block.redacted = True
            block.signature = as_str(cb.get("data"))
            self._blocks[key] = block
        elif ctype == "tool_use":
            block = _Block("toolCall")
            block.id = (as_str(cb.get("id"))
                        or made_up_call_id(self.partial.response_id, len(self.partial.blocks)))
            block.name = as_str(cb.get("name"))
            block.input = cb.get("input")
            block.index = self._open("toolCall", id=block.id, name=block.name)
            self._blocks[key] = block
        else:
            self._blocks[key] = _Block("skip")  # server tools and their results

    def _block_text(self, block: _Block, text: str) -> None:
        if not text:
            return
        if block.index is None:
            block.index = self._open("text" if block.kind == "text" else "thinking",
                                     redacted=block.redacted)
        self._delta(block.index, text)

    def _block_delta(self, payload: dict[str, Any]) -> None:
        block = self._blocks.get(as_int(payload.get("index")))
        if block is None or block.kind == "skip":
            return
        delta = as_dict(payload.get("delta"))
        dtype = as_str(delta.get("type"))
        if dtype == "text_delta":
            self._block_text(block, as_str(delta.get("text")))
        elif dtype == "thinking_delta":
            self._block_text(block, as_str(delta.get("thinking")))
        elif dtype == "signature_delta":
            block.signature = (block.signature or "") + as_str(delta.get("signature"))
        elif dtype == "input_json_delta" and block.index is not None:
            self._delta(block.index, as_str(delta.get("partial_json")))

    def _block_stop(self, payload: dict[str, Any]) -> None:
        block = self._blocks.pop(as_int(payload.get("index")), None)
        if block is None or block.kind == "skip":
            return
        if block.kind == "toolCall":
            if block.index is None:
                return
            args: Any = None
            if not self.partial.block_text(block.index).strip():
                args = block.input if isinstance(block.input, dict) else {}
            self._close(block.index, arguments=args)
            return
        if block.index is None:
            if block.kind == "text" or not block.signature:
                return  # an empty text or thinking block: nothing to keep
            block.index = self._open("thinking", redacted=block.redacted)
        self._close(block.index, signature=block.signature)

    def _complete(self) -> None:
        reason = self._stop_reason
        mapped: StopReason = _STOP.get(reason, "stop") if reason else "stop"
        if mapped == "error":
            self._succeed("error", f"Anthropic stopped the response: stop_reason {reason!r}")
        else:
            self._succeed(mapped)
