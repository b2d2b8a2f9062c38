"""OpenAI Chat Completions codec (``api="openai-completions"``), also spoken by OpenAI-compatible
servers: Ollama, vLLM, llama.cpp server, OpenRouter, Groq, DeepSeek, Azure OpenAI.

Request: :func:`build_request`. Response: :class:`OpenAIChatDecoder` (an SSE stream of
``chat.completion.chunk`` JSON objects ending with ``data: [DONE]``). Errors:
:func:`decode_error_response`.

The decoder folds choice 0 only (with ``n > 1`` the other choices are ignored). Each chunk's
``delta`` may carry ``content`` (text), ``reasoning_content``/``reasoning`` (thinking; DeepSeek,
OpenRouter, Groq, vLLM) and ``tool_calls`` (by ``index``: id and name on the first fragment,
argument text in fragments; a call without an id gets one made from the response's,
:func:`~agentcore.providers.base.made_up_call_id`). A text or thinking block is closed when
another kind of content starts; tool-call blocks stay open until the end, since fragments of
parallel calls may interleave. Usage arrives in a chunk of its own (``choices: []``, from
``stream_options.include_usage``) or on the last choice chunk.

Known quirks handled: a first chunk with ``choices: []`` (Azure), a choice without ``delta``,
``arguments: ""`` followed by ``"{}"`` with the id and name sent again, a missing ``arguments``
key, no ``finish_reason: tool_calls`` although calls were made, ``:`` keep-alive comments, an
``error`` object inside a chunk or in an ``event: error`` (OpenRouter, Groq).
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
from .sse import SSEEvent

__all__ = ["OpenAIChatDecoder", "build_request", "decode_error_response", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "error",
}

# Providers known to accept ``max_completion_tokens``; others get the older ``max_tokens``
# (Ollama, vLLM, llama.cpp and OpenRouter all understand it).
_MAX_COMPLETION_PROVIDERS = frozenset({"openai", "azure-openai", "azure", "groq"})

_EFFORT: dict[ThinkingLevel, str] = {
    "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high",
}


# --------------------------------------------------------------------------- request


def _data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


def _user_content(content: str | tuple[Any, ...], model: Model) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            if "image" in model.input:
                parts.append({"type": "image_url", "image_url": {"url": _data_url(block)}})
            else:
                parts.append({"type": "text", "text": "(image omitted: model has no image input)"})
    return parts


def _convert_messages(model: Model, context: LlmContext) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and model.provider == "openai" else "system"
        out.append({"role": role, "content": context.system_prompt})
    for msg in context.messages:
        if isinstance(msg, UserMessage):
            out.append({"role": "user", "content": _user_content(msg.content, model)})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed to the model
            text = "".join(b.text for b in msg.content if isinstance(b, TextContent))
            calls = [b for b in msg.content if isinstance(b, ToolCall)]
            if not text and not calls:
                continue
            # Not null with tool calls and no text: some compatible servers refuse a null content.
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name,
                                  "arguments": json.dumps(thaw(c.arguments), ensure_ascii=False)}}
                    for c in calls
                ]
            out.append(entry)
        elif isinstance(msg, ToolResultMessage):
            text = msg.text
            images = [b for b in msg.content if isinstance(b, ImageContent)]
            if not text and images:
                text = "(see attached image)"
            out.append({"role": "tool", "tool_call_id": msg.tool_call_id,
                        "content": text if text else "(no output)"})
            if images and "image" in model.input:
                # Tool messages only take text: send the images in a user message after it.
                out.append({"role": "user", "content": [
                    {"type": "text", "text": f"Images returned by tool {msg.tool_name}:"},
                    *({"type": "image_url", "image_url": {"url": _data_url(i)}} for i in images),
                ]})
    return out


def build_request(model: Model, context: LlmContext, options: StreamOptions) -> HttpRequest:
    """The streaming ``POST {base_url}/chat/completions`` request for ``context``."""
    body: dict[str, Any] = {
        "model": model.id,
        "messages": _convert_messages(model, context),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if context.tools:
        body["tools"] = [
            {"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": thaw(t.parameters)}}
            for t in context.tools
        ]
    if options.max_tokens is not None:
        key = "max_completion_tokens" if model.provider in _MAX_COMPLETION_PROVIDERS else "max_tokens"
        body[key] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if model.reasoning and options.thinking_level != "off":
        body["reasoning_effort"] = _EFFORT[options.thinking_level]
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if options.api_key:
        headers["authorization"] = f"Bearer {options.api_key}"
    return HttpRequest(
        "POST",
        join_url(model.base_url or DEFAULT_BASE_URL, "chat/completions"),
        merge_headers(headers, model, options),
        body,
    )


def decode_error_response(status: int, headers: Any, body: bytes) -> str:
    """A readable message for a non-2xx response (HTTP status, provider message, type, code)."""
    return format_http_error("OpenAI-compatible API", status, headers, body)


# --------------------------------------------------------------------------- response


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = as_int(raw.get("prompt_tokens"))
    completion = as_int(raw.get("completion_tokens"))
    details = as_dict(raw.get("prompt_tokens_details"))
    cached = as_int(details.get("cached_tokens")) or as_int(raw.get("prompt_cache_hit_tokens"))
    cached = min(cached, prompt)
    return Usage(
        input=prompt - cached,
        output=completion,
        cache_read=cached,
        cache_write=0,
        total_tokens=prompt + completion,
    )


class _Call:
    __slots__ = ("block", "id", "name", "args")

    def __init__(self, block: int, id: str, name: str) -> None:
        self.block = block
        self.id = id
        self.name = name
        self.args = ""


class OpenAIChatDecoder(SSEStreamDecoder):
    """Incremental decoder of a Chat Completions SSE stream (see the module docstring)."""

    final_event_name = "data: [DONE]"

    def __init__(self, model: Model, *, timestamp: int = 0) -> None:
        super().__init__(model, timestamp=timestamp)
        self._current: tuple[str, int] | None = None  # open text/thinking block
        self._calls: dict[int, _Call] = {}
        self._finish_reason: str | None = None
        self._saw_usage = False
        self.reasoning_tokens = 0  #: completion_tokens_details.reasoning_tokens, when reported

    def _is_terminator(self, ev: SSEEvent) -> bool:
        if ev.data.strip() == "[DONE]":
            self._complete()
            return True
        return False

    def _stream_ended(self) -> None:
        # Some compatible servers omit [DONE]; a finish_reason is enough to call it complete.
        if self._finish_reason is not None:
            self._complete()

    def _event(self, name: str, payload: Any) -> None:
        if not isinstance(payload, dict):
            self._fail(f"Unexpected stream payload (not a JSON object): {str(payload)[:80]!r}")
            return
        if not self.partial.response_id and as_str(payload.get("id")):
            self.partial = self.partial.with_header(response_id=payload["id"])
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self._saw_usage = True
            self.reasoning_tokens = as_int(
                as_dict(usage.get("completion_tokens_details")).get("reasoning_tokens"))
            self._set_usage(_usage(usage))
        err = payload.get("error")
        if err is not None or name == "error":
            self._provider_error(err if err is not None else payload)
            return
        choices = payload.get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            if isinstance(choice, dict) and as_int(choice.get("index")) == 0:
                self._choice(choice)
                break

    def _provider_error(self, err: Any) -> None:
        if isinstance(err, dict):
            message = as_str(err.get("message")) or json.dumps(err)[:300]
            extra = [f"{k}: {err[k]}" for k in ("type", "code") if err.get(k) not in (None, "")]
            meta = as_dict(err.get("metadata"))
            if meta.get("raw"):
                extra.append(f"upstream: {str(meta['raw'])[:200]}")
            if extra:
                message += " (" + ", ".join(extra) + ")"
        else:
            message = str(err)[:300]
        self._fail(f"Provider error in stream: {message}")

    def _choice(self, choice: dict[str, Any]) -> None:
        delta = as_dict(choice.get("delta"))
        reasoning = (as_str(delta.get("reasoning_content")) or as_str(delta.get("reasoning"))
                     or as_str(delta.get("reasoning_text")))
        if reasoning:
            self._stream("thinking", reasoning)
        content = as_str(delta.get("content"))
        if content:
            self._stream("text", content)
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list):
            for tc in tool_calls:
                if isinstance(tc, dict):
                    self._tool_fragment(tc)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self._finish_reason = reason
        usage = choice.get("usage")  # a few servers put usage on the choice
        if isinstance(usage, dict) and not self._saw_usage:
            self._set_usage(_usage(usage))

    def _stream(self, kind: str, text: str) -> None:
        cur = self._current
        if cur is None or cur[0] != kind:
            if cur is not None:
                self._close(cur[1])
            index = self._open("text" if kind == "text" else "thinking")
            self._current = (kind, index)
        else:
            index = cur[1]
        self._delta(index, text)

    def _tool_fragment(self, tc: dict[str, Any]) -> None:
        key = as_int(tc.get("index"))
        fn = as_dict(tc.get("function"))
        call_id = as_str(tc.get("id"))
        name = as_str(fn.get("name"))
        args = as_str(fn.get("arguments"))
        call = self._calls.get(key)
        if call is not None and call_id and call.id and call_id != call.id and call.args:
            # Same index reused for a new call (some servers number every call 0).
            self._close(call.block)
            call = None
            key = -1 - len(self._calls)
        if call is None:
            if self._current is not None:
                self._close(self._current[1])
                self._current = None
            call = _Call(self._open("toolCall", id=call_id, name=name), call_id, name)
            self._calls[key] = call
        else:
            if call_id and not call.id:
                call.id = call_id
            if name and not call.name:
                call.name = name
        if args:
            call.args += args
            self._delta(call.block, args)

    def _complete(self) -> None:
        for call in self._calls.values():
            if call.block in self._kinds:
                self._close(call.block, id=call.id or made_up_call_id(self.partial.response_id, call.block),
                            name=call.name)
        reason = self._finish_reason
        mapped: StopReason = _FINISH.get(reason, "stop") if reason else "stop"
        if mapped == "stop" and self.partial.tool_calls:
            mapped = "toolUse"
        if mapped == "error":
            self._succeed("error", f"The provider stopped the response: finish_reason {reason!r}")
        else:
            self._succeed(mapped)
