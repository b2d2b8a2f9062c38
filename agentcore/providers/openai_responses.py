"""OpenAI Responses API codec (``api="openai-responses"``).

Request: :func:`build_request` (``store: false``; reasoning items come back encrypted through
``include: ["reasoning.encrypted_content"]`` so they can be replayed statelessly). Response:
:class:`OpenAIResponsesDecoder`. Errors: :func:`decode_error_response`.

The stream is SSE; each event's JSON ``type`` names it. Output items are announced by
``response.output_item.added`` (with an ``output_index``) and closed by
``response.output_item.done``:

* ``reasoning``: ``response.reasoning_summary_text.delta`` stream the summary as thinking (summary
  parts separated by a blank line). The thinking signature is the JSON of the reasoning item
  (``id``, ``summary``, ``encrypted_content``), which :func:`build_request` sends back verbatim.
* ``message``: ``response.output_text.delta`` (and ``response.refusal.delta``) stream text.
* ``function_call``: ``response.function_call_arguments.delta``/``.done`` stream the arguments;
  the tool call id is the item's ``call_id``.

The stream ends with ``response.completed`` (stop, or toolUse when calls were made),
``response.incomplete`` (``max_output_tokens`` gives length) or ``response.failed``; an
``error`` event ends it too. Usage comes from the final response object.
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
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..stream import parse_arguments
from .base import (
    HttpRequest,
    SSEStreamDecoder,
    as_dict,
    as_int,
    as_str,
    format_http_error,
    join_url,
    load_json,
    made_up_call_id,
    merge_headers,
)

__all__ = ["DEFAULT_BASE_URL", "OpenAIResponsesDecoder", "build_request", "decode_error_response"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_EFFORT: dict[ThinkingLevel, str] = {
    "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high",
}


# --------------------------------------------------------------------------- request


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    if not block.thinking_signature:
        return None
    try:
        item = load_json(block.thinking_signature)
    except ValueError:
        return None
    if isinstance(item, dict) and item.get("type") == "reasoning":
        return item
    return None


def _convert_input(model: Model, context: LlmContext) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for msg in context.messages:
        if isinstance(msg, UserMessage):
            if isinstance(msg.content, str):
                parts: list[dict[str, Any]] = [{"type": "input_text", "text": msg.content}]
            else:
                parts = []
                for b in msg.content:
                    if isinstance(b, TextContent):
                        parts.append({"type": "input_text", "text": b.text})
                    elif isinstance(b, ImageContent) and "image" in model.input:
                        parts.append({"type": "input_image", "detail": "auto",
                                      "image_url": f"data:{b.mime_type};base64,{b.data}"})
            if parts:
                items.append({"role": "user", "content": parts})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue
            same_api = msg.api == model.api
            for block in msg.content:
                if isinstance(block, ThinkingContent):
                    item = _reasoning_item(block) if same_api else None
                    if item is not None:
                        items.append(item)
                elif isinstance(block, TextContent):
                    if block.text:
                        items.append({"role": "assistant", "content": block.text})
                elif isinstance(block, ToolCall):
                    items.append({
                        "type": "function_call", "call_id": block.id, "name": block.name,
                        "arguments": json.dumps(thaw(block.arguments), ensure_ascii=False),
                    })
        elif isinstance(msg, ToolResultMessage):
            items.append({"type": "function_call_output", "call_id": msg.tool_call_id,
                          "output": msg.text or "(no output)"})
            images = [b for b in msg.content if isinstance(b, ImageContent)]
            if images and "image" in model.input:
                items.append({"role": "user", "content": [
                    {"type": "input_text", "text": f"Images returned by tool {msg.tool_name}:"},
                    *({"type": "input_image", "detail": "auto",
                       "image_url": f"data:{i.mime_type};base64,{i.data}"} for i in images),
                ]})
    return items


def build_request(model: Model, context: LlmContext, options: StreamOptions) -> HttpRequest:
    """The streaming ``POST {base_url}/responses`` request for ``context``."""
    body: dict[str, Any] = {
        "model": model.id,
        "input": _convert_input(model, context),
        "stream": True,
        "store": False,
    }
    if context.system_prompt:
        body["instructions"] = context.system_prompt
    if context.tools:
        body["tools"] = [
            {"type": "function", "name": t.name, "description": t.description,
             "parameters": thaw(t.parameters), "strict": False}
            for t in context.tools
        ]
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if model.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
        if options.thinking_level != "off":
            body["reasoning"] = {"effort": _EFFORT[options.thinking_level], "summary": "auto"}
    if options.session_id:
        body["prompt_cache_key"] = options.session_id
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if options.api_key:
        headers["authorization"] = f"Bearer {options.api_key}"
    return HttpRequest(
        "POST",
        join_url(model.base_url or DEFAULT_BASE_URL, "responses"),
        merge_headers(headers, model, options),
        body,
    )


def decode_error_response(status: int, headers: Any, body: bytes) -> str:
    """A readable message for a non-2xx response (HTTP status, provider message, type, code)."""
    return format_http_error("OpenAI", status, headers, body)


# --------------------------------------------------------------------------- response


def _usage(raw: dict[str, Any]) -> Usage:
    total_in = as_int(raw.get("input_tokens"))
    cached = min(as_int(as_dict(raw.get("input_tokens_details")).get("cached_tokens")), total_in)
    out = as_int(raw.get("output_tokens"))
    return Usage(input=total_in - cached, output=out, cache_read=cached,
                 total_tokens=as_int(raw.get("total_tokens")) or total_in + out)


class _Item:
    __slots__ = ("kind", "index", "summary_parts", "call_id", "name")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "reasoning", "message", "function_call", "skip"
        self.index: int | None = None
        self.summary_parts = 0
        self.call_id = ""
        self.name = ""


class OpenAIResponsesDecoder(SSEStreamDecoder):
    """Incremental decoder of a Responses API SSE stream (see the module docstring)."""

    final_event_name = "response.completed"

    def __init__(self, model: Model, *, timestamp: int = 0) -> None:
        super().__init__(model, timestamp=timestamp)
        self._items: dict[int, _Item] = {}
        self.reasoning_tokens = 0

    def _event(self, name: str, payload: Any) -> None:
        if not isinstance(payload, dict):
            self._fail(f"Unexpected stream payload (not a JSON object): {str(payload)[:80]!r}")
            return
        kind = as_str(payload.get("type")) or name
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, payload)

    # -- items

    def _item_for(self, payload: dict[str, Any]) -> _Item | None:
        return self._items.get(as_int(payload.get("output_index")))

    def _on_created(self, payload: dict[str, Any]) -> None:
        resp = as_dict(payload.get("response"))
        if as_str(resp.get("id")):
            self.partial = self.partial.with_header(response_id=resp["id"])

    def _on_item_added(self, payload: dict[str, Any]) -> None:
        raw = as_dict(payload.get("item"))
        itype = as_str(raw.get("type"))
        key = as_int(payload.get("output_index"))
        if itype == "reasoning":
            self._items[key] = _Item("reasoning")
        elif itype == "message":
            self._items[key] = _Item("message")
        elif itype == "function_call":
            item = _Item("function_call")
            item.call_id = (as_str(raw.get("call_id")) or as_str(raw.get("id"))
                            or made_up_call_id(self.partial.response_id, len(self.partial.blocks)))
            item.name = as_str(raw.get("name"))
            item.index = self._open("toolCall", id=item.call_id, name=item.name)
            self._delta(item.index, as_str(raw.get("arguments")))
            self._items[key] = item
        else:
            self._items[key] = _Item("skip")  # web search, file search... run by OpenAI

    def _text(self, item: _Item | None, kind: str, text: str) -> None:
        if item is None or item.kind != kind or not text:
            return
        if item.index is None:
            item.index = self._open("thinking" if kind == "reasoning" else "text")
        self._delta(item.index, text)

    def _on_summary_part_added(self, payload: dict[str, Any]) -> None:
        item = self._item_for(payload)
        if item is not None and item.kind == "reasoning":
            if item.summary_parts > 0:
                self._text(item, "reasoning", "\n\n")
            item.summary_parts += 1

    def _on_summary_delta(self, payload: dict[str, Any]) -> None:
        self._text(self._item_for(payload), "reasoning", as_str(payload.get("delta")))

    def _on_text_delta(self, payload: dict[str, Any]) -> None:
        self._text(self._item_for(payload), "message", as_str(payload.get("delta")))

    def _on_args_delta(self, payload: dict[str, Any]) -> None:
        item = self._item_for(payload)
        if item is not None and item.kind == "function_call" and item.index is not None:
            self._delta(item.index, as_str(payload.get("delta")))

    def _on_item_done(self, payload: dict[str, Any]) -> None:
        key = as_int(payload.get("output_index"))
        item = self._items.pop(key, None)
        raw = as_dict(payload.get("item"))
        if item is None or item.kind == "skip":
            return
        if item.kind == "reasoning":
            signature = json.dumps(
                {"type": "reasoning", "id": raw.get("id"), "summary": raw.get("summary") or [],
                 "encrypted_content": raw.get("encrypted_content")},
                separators=(",", ":"), ensure_ascii=False)
            if item.index is None:
                item.index = self._open("thinking")
            self._close(item.index, signature=signature)
        elif item.kind == "message":
            if item.index is None:
                text = "".join(
                    as_str(p.get("text")) or as_str(p.get("refusal"))
                    for p in raw.get("content") or [] if isinstance(p, dict))
                if not text:
                    return
                item.index = self._open("text")
                self._delta(item.index, text)
            self._close(item.index, signature=as_str(raw.get("id")) or None)
        elif item.kind == "function_call" and item.index is not None:
            args_text = raw.get("arguments")
            args: Any = None
            if isinstance(args_text, str) and args_text.strip():
                parsed, invalid = parse_arguments(args_text)
                if invalid is None:
                    args = parsed
                elif not self.partial.block_text(item.index):
                    # Nothing was streamed: close on this text, so the call reports it invalid.
                    self._delta(item.index, args_text)
            self._close(item.index, arguments=args,
                        id=as_str(raw.get("call_id")) or item.call_id,
                        name=as_str(raw.get("name")) or item.name)

    # -- end of response

    def _final_usage(self, resp: dict[str, Any]) -> None:
        usage = resp.get("usage")
        if isinstance(usage, dict):
            self.reasoning_tokens = as_int(
                as_dict(usage.get("output_tokens_details")).get("reasoning_tokens"))
            self._set_usage(_usage(usage))

    def _on_completed(self, payload: dict[str, Any]) -> None:
        resp = as_dict(payload.get("response"))
        self._final_usage(resp)
        self._succeed("toolUse" if self._has_tool_calls() else "stop")

    def _on_incomplete(self, payload: dict[str, Any]) -> None:
        resp = as_dict(payload.get("response"))
        self._final_usage(resp)
        reason = as_str(as_dict(resp.get("incomplete_details")).get("reason"))
        if reason == "max_output_tokens" or not reason:
            self._succeed("length")
        else:
            self._succeed("error", f"OpenAI returned an incomplete response: {reason}")

    def _on_failed(self, payload: dict[str, Any]) -> None:
        resp = as_dict(payload.get("response"))
        self._final_usage(resp)
        err = as_dict(resp.get("error"))
        message = as_str(err.get("message")) or "no error details"
        code = as_str(err.get("code"))
        self._fail(f"OpenAI response failed: {message}" + (f" (code: {code})" if code else ""))

    def _on_error(self, payload: dict[str, Any]) -> None:
        err = as_dict(payload.get("error")) or payload
        message = as_str(err.get("message")) or json.dumps(payload)[:300]
        code = as_str(err.get("code")) or as_str(err.get("type"))
        self._fail(f"OpenAI stream error: {message}" + (f" (code: {code})" if code else ""))


_HANDLERS: dict[str, Any] = {
    "response.created": OpenAIResponsesDecoder._on_created,
    "response.output_item.added": OpenAIResponsesDecoder._on_item_added,
    "response.output_item.done": OpenAIResponsesDecoder._on_item_done,
    "response.reasoning_summary_part.added": OpenAIResponsesDecoder._on_summary_part_added,
    "response.reasoning_summary_text.delta": OpenAIResponsesDecoder._on_summary_delta,
    "response.output_text.delta": OpenAIResponsesDecoder._on_text_delta,
    "response.refusal.delta": OpenAIResponsesDecoder._on_text_delta,
    "response.function_call_arguments.delta": OpenAIResponsesDecoder._on_args_delta,
    "response.completed": OpenAIResponsesDecoder._on_completed,
    "response.incomplete": OpenAIResponsesDecoder._on_incomplete,
    "response.failed": OpenAIResponsesDecoder._on_failed,
    "error": OpenAIResponsesDecoder._on_error,
}
