"""Google Gemini codec (``api="google-generative-ai"``): ``streamGenerateContent``.

Request: :func:`build_request` (``?alt=sse``). Response: :class:`GoogleDecoder`. Errors:
:func:`decode_error_response`.

The decoder accepts the three body framings Gemini uses and picks one from the first
non-blank character of the body:

* ``data: {...}`` SSE events (``alt=sse``; events separated by CRLF CRLF);
* ``[{...},\\r\\n{...}]``: the default streaming form, a JSON array whose elements arrive one by
  one; an incremental scanner (tracking string and escape state and nesting depth) cuts each
  complete element out as soon as its closing brace arrives;
* ``{...}``: a single, non-streamed ``generateContent`` response.

Each element is a ``GenerateContentResponse``: the parts of candidate 0 are folded in order.
``text`` parts with ``thought: true`` are thinking, other text parts are text; consecutive parts
of one kind extend the same block. A ``thoughtSignature`` is kept on the block it came with (or
on the tool call). ``functionCall`` parts carry complete ``args``; they become a tool call at once
(an id is synthesized when Gemini gives none: ``gemini-synth-<responseId>-<n>-<name>``, which
:func:`build_request` does not send back). Vertex's streamed arguments
(``willContinue`` / ``partialArgs``) are assembled too.

Gemini has no terminal event: the response is complete when a candidate carried a
``finishReason``. ``STOP`` gives stop (toolUse when calls were made), ``MAX_TOKENS`` length,
anything else (``SAFETY``, ``RECITATION``...) an error.
"""

from __future__ import annotations

import codecs
import json
import re
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
from .base import (
    HttpRequest,
    StreamDecoder,
    as_dict,
    as_int,
    as_str,
    format_http_error,
    join_url,
    load_json,
    merge_headers,
    snippet,
)
from .sse import SSEDecoder

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_THINKING_BUDGETS",
    "GoogleDecoder",
    "JsonArrayScanner",
    "build_request",
    "decode_error_response",
]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
SYNTHETIC_ID_PREFIX = "gemini-synth-"

DEFAULT_THINKING_BUDGETS: dict[ThinkingLevel, int] = {
    "minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 24576,
}


# --------------------------------------------------------------------------- request


def _parts_user(content: str | tuple[Any, ...], model: Model) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            if b.text:
                parts.append({"text": b.text})
        elif isinstance(b, ImageContent):
            if "image" in model.input:
                parts.append({"inlineData": {"mimeType": b.mime_type, "data": b.data}})
            else:
                parts.append({"text": "(image omitted: model has no image input)"})
    return parts


def _parts_assistant(msg: AssistantMessage, same_model: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            if b.text or b.text_signature:
                part: dict[str, Any] = {"text": b.text}
                if b.text_signature and same_model:
                    part["thoughtSignature"] = b.text_signature
                parts.append(part)
        elif isinstance(b, ThinkingContent):
            if b.redacted or not same_model:
                if b.thinking and not b.redacted:
                    parts.append({"text": b.thinking})
                continue
            part = {"text": b.thinking, "thought": True}
            if b.thinking_signature:
                part["thoughtSignature"] = b.thinking_signature
            parts.append(part)
        elif isinstance(b, ToolCall):
            call: dict[str, Any] = {"name": b.name, "args": thaw(b.arguments)}
            if b.id and not b.id.startswith(SYNTHETIC_ID_PREFIX):
                call["id"] = b.id
            part = {"functionCall": call}
            if b.thought_signature and same_model:
                part["thoughtSignature"] = b.thought_signature
            parts.append(part)
    return parts


def _convert_contents(model: Model, context: LlmContext) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    for msg in context.messages:
        if isinstance(msg, UserMessage):
            parts = _parts_user(msg.content, model)
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue
            parts = _parts_assistant(msg, msg.provider == model.provider and msg.model == model.id)
            if parts:
                contents.append({"role": "model", "parts": parts})
        elif isinstance(msg, ToolResultMessage):
            text = msg.text or ("(see attached image)" if msg.content else "(no output)")
            response = {"error": text} if msg.is_error else {"output": text}
            fr: dict[str, Any] = {"name": msg.tool_name, "response": response}
            if msg.tool_call_id and not msg.tool_call_id.startswith(SYNTHETIC_ID_PREFIX):
                fr["id"] = msg.tool_call_id
            parts = [{"functionResponse": fr}]
            if "image" in model.input:
                parts += [{"inlineData": {"mimeType": b.mime_type, "data": b.data}}
                          for b in msg.content if isinstance(b, ImageContent)]
            last = contents[-1] if contents else None
            if (last is not None and last["role"] == "user"
                    and all("functionResponse" in p or "inlineData" in p for p in last["parts"])):
                last["parts"].extend(parts)
            else:
                contents.append({"role": "user", "parts": parts})
    return contents


def build_request(model: Model, context: LlmContext, options: StreamOptions) -> HttpRequest:
    """The ``POST {base_url}/models/{id}:streamGenerateContent?alt=sse`` request."""
    body: dict[str, Any] = {"contents": _convert_contents(model, context)}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description, "parameters": thaw(t.parameters)}
            for t in context.tools
        ]}]
    config: dict[str, Any] = {}
    if options.max_tokens is not None:
        config["maxOutputTokens"] = options.max_tokens
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if model.reasoning and options.thinking_level != "off":
        level = options.thinking_level
        budget = (int(options.thinking_budgets[level])
                  if options.thinking_budgets and level in options.thinking_budgets
                  else DEFAULT_THINKING_BUDGETS[level])
        config["thinkingConfig"] = {"includeThoughts": True, "thinkingBudget": budget}
    if config:
        body["generationConfig"] = config
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if options.api_key:
        headers["x-goog-api-key"] = options.api_key
    url = join_url(model.base_url or DEFAULT_BASE_URL,
                   f"models/{model.id}:streamGenerateContent?alt=sse")
    return HttpRequest("POST", url, merge_headers(headers, model, options), body)


def decode_error_response(status: int, headers: Any, body: bytes) -> str:
    """A readable message for a non-2xx response (HTTP status, ``error.status`` and message)."""
    return format_http_error("Google Gemini", status, headers, body)


# --------------------------------------------------------------------------- framing


class JsonArrayScanner:
    """Cuts complete JSON values out of a streamed JSON array ``[v, v, ...]`` (or, with
    ``bare=True``, out of values simply written one after another).

    >>> s = JsonArrayScanner()
    >>> s.feed('[{"a": "}"},\\r\\n{"b"'), s.feed(': [1]}]'), s.done
    (['{"a": "}"}'], ['{"b": [1]}'], True)
    """

    __slots__ = ("_buf", "_pos", "_depth", "_in_string", "_escape", "_start", "started", "done",
                 "bare", "error")

    def __init__(self, bare: bool = False) -> None:
        self._buf = ""
        self._pos = 0
        self._depth = 0  # nesting depth inside the current element
        self._in_string = False
        self._escape = False
        self._start = -1  # start of the element being read
        self.started = bare  # the opening '[' was seen
        self.done = False  # the closing ']' was seen
        self.bare = bare
        self.error: str | None = None

    @property
    def in_element(self) -> bool:
        return self._start >= 0

    def feed(self, text: str) -> list[str]:
        out: list[str] = []
        if self.done or self.error:
            return out
        buf = self._buf + text
        i = self._pos
        n = len(buf)
        while i < n:
            ch = buf[i]
            if self._start >= 0:
                if self._in_string:
                    if self._escape:
                        self._escape = False
                    elif ch == "\\":
                        self._escape = True
                    elif ch == '"':
                        self._in_string = False
                    i += 1
                    continue
                if ch == '"':
                    self._in_string = True
                elif ch in "{[":
                    self._depth += 1
                elif ch in "}]":
                    self._depth -= 1
                    if self._depth == 0:
                        out.append(buf[self._start:i + 1])
                        self._start = -1
                i += 1
                continue
            if ch in " \t\r\n,":
                i += 1
                continue
            if not self.started:
                if ch == "[":
                    self.started = True
                    i += 1
                    continue
                self.error = f"expected '[' at the start of the body, got {ch!r}"
                break
            if ch == "]" and not self.bare:
                self.done = True
                i += 1
                break
            if ch in "{[":
                self._start = i
                self._depth = 1
                i += 1
                continue
            self.error = f"unexpected character {ch!r} between array elements"
            break
        if self._start >= 0:
            # Keep only the element being read.
            self._buf = buf[self._start:]
            self._pos = i - self._start
            self._start = 0
        else:
            self._buf = ""
            self._pos = 0
        return out


_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def _set_path(target: dict[str, Any], path: str, value: Any, append: bool) -> None:
    """Set ``$.a.b[0]`` in ``target`` (creating containers); ``append`` concatenates strings."""
    if path.startswith("$"):
        path = path[1:]
    keys: list[str | int] = []
    for m in _PATH_TOKEN.finditer(path):
        if m.group(2) is not None:
            keys.append(int(m.group(2)))
        else:
            keys.append(m.group(1) or m.group(3) or m.group(4) or "")
    if not keys:
        return
    node: Any = target
    for key, nxt in zip(keys, keys[1:]):
        child_default: Any = [] if isinstance(nxt, int) else {}
        if isinstance(key, int):
            if not isinstance(node, list):
                return
            while len(node) <= key:
                node.append(None)
            if not isinstance(node[key], (dict, list)):
                node[key] = child_default
            node = node[key]
        else:
            if not isinstance(node, dict):
                return
            if not isinstance(node.get(key), (dict, list)):
                node[key] = child_default
            node = node[key]
    last = keys[-1]
    if isinstance(last, int):
        if not isinstance(node, list):
            return
        while len(node) <= last:
            node.append(None)
        old = node[last]
        node[last] = old + value if append and isinstance(old, str) else value
    elif isinstance(node, dict):
        old = node.get(last)
        node[last] = old + value if append and isinstance(old, str) else value


# --------------------------------------------------------------------------- response

_FINISH_OK = {"STOP": "stop", "MAX_TOKENS": "length", "FINISH_REASON_UNSPECIFIED": "stop"}


class GoogleDecoder(StreamDecoder):
    """Incremental decoder of a Gemini ``streamGenerateContent`` body (see the module docstring)."""

    final_event_name = "a candidate with finishReason"

    def __init__(self, model: Model, *, timestamp: int = 0) -> None:
        super().__init__(model, timestamp=timestamp)
        self._mode: str | None = None  # "sse", "array", "object"
        self._text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # text before the framing is known
        self._sse: SSEDecoder | None = None
        self._scanner: JsonArrayScanner | None = None
        self._elements = 0
        self._current: tuple[str, int] | None = None  # open text/thinking block
        self._call_count = 0
        self._finish_reason: str | None = None
        self._streaming_call: tuple[int, dict[str, Any], str | None] | None = None
        self.thoughts_tokens = 0

    def _any_event(self) -> bool:
        return self._elements > 0

    # -- framing

    def _feed(self, data: bytes) -> None:
        text = self._text_decoder.decode(data, False)
        if self._mode is None:
            self._pending += text
            stripped = self._pending.lstrip("\ufeff \t\r\n")
            if not stripped:
                return
            first = stripped[0]
            if first == "[":
                self._mode = "array"
                self._scanner = JsonArrayScanner()
            elif first == "{":
                self._mode = "object"
                self._scanner = JsonArrayScanner(bare=True)
            else:
                self._mode = "sse"
                self._sse = SSEDecoder()
                text, self._pending = self._pending, ""
                self._sse_text(text.encode("utf-8"))
                return
            text, self._pending = stripped, ""
        if self._mode == "sse":
            self._sse_text(text.encode("utf-8"))
        else:
            self._scan(text)

    def _sse_text(self, data: bytes) -> None:
        assert self._sse is not None
        for ev in self._sse.feed(data):
            if self.finished:
                return
            if ev.data.strip() == "[DONE]":
                continue
            self._element(ev.data)

    def _scan(self, text: str) -> None:
        scanner = self._scanner
        assert scanner is not None
        for element in scanner.feed(text):
            if self.finished:
                return
            self._element(element)
        if scanner.error and not self.finished:
            self._fail(f"Malformed Gemini JSON stream: {scanner.error}; body starts with "
                       f"{snippet(self._head, 80)}")

    def _end(self) -> None:
        tail = self._text_decoder.decode(b"", True)
        if tail:
            self._feed_text_tail(tail)
        if self.finished:
            return
        if self._sse is not None:
            for ev in self._sse.close():
                if self.finished:
                    return
                self._element(ev.data)
        if self.finished:
            return
        if self._scanner is not None and self._scanner.in_element:
            self._fail(self._truncated_message("the body ends inside a JSON value"))
            return
        if self._finish_reason is not None:
            self._complete()

    def _feed_text_tail(self, tail: str) -> None:
        if self._mode == "sse" and self._sse is not None:
            self._sse_text(tail.encode("utf-8"))
        elif self._scanner is not None:
            self._scan(tail)

    # -- content

    def _element(self, raw: str) -> None:
        self._elements += 1
        try:
            payload = load_json(raw)
        except json.JSONDecodeError as exc:
            self._fail(f"Invalid JSON in Gemini stream: {exc.msg} at position {exc.pos}; "
                       f"data starts with {snippet(raw, 80)}")
            return
        if not isinstance(payload, dict):
            self._fail(f"Unexpected Gemini stream element (not a JSON object): {snippet(raw, 80)}")
            return
        err = payload.get("error")
        if isinstance(err, dict):
            message = as_str(err.get("message")) or json.dumps(err)[:300]
            status = as_str(err.get("status"))
            self._fail(f"Gemini stream error: {message}" + (f" ({status})" if status else ""))
            return
        if not self.partial.response_id and as_str(payload.get("responseId")):
            self.partial = self.partial.with_header(response_id=payload["responseId"])
        usage = payload.get("usageMetadata")
        if isinstance(usage, dict) and "promptTokenCount" in usage:
            self._usage_update(usage)
        feedback = as_dict(payload.get("promptFeedback"))
        if as_str(feedback.get("blockReason")):
            self._fail(f"Gemini blocked the prompt: {feedback['blockReason']}"
                       + (f" ({feedback['blockReasonMessage']})"
                          if as_str(feedback.get("blockReasonMessage")) else ""))
            return
        candidates = payload.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            return
        cand = next((c for c in candidates if isinstance(c, dict) and as_int(c.get("index")) == 0),
                    None)
        if cand is None:
            return
        for part in as_dict(cand.get("content")).get("parts") or []:
            if isinstance(part, dict):
                self._part(part)
        reason = cand.get("finishReason")
        if isinstance(reason, str) and reason:
            self._finish_reason = reason
            if self._mode == "object":
                self._complete()

    def _usage_update(self, raw: dict[str, Any]) -> None:
        prompt = as_int(raw.get("promptTokenCount"))
        cached = min(as_int(raw.get("cachedContentTokenCount")), prompt)
        thoughts = as_int(raw.get("thoughtsTokenCount"))
        self.thoughts_tokens = thoughts
        output = as_int(raw.get("candidatesTokenCount")) + thoughts
        self._set_usage(Usage(input=prompt - cached, output=output, cache_read=cached,
                              total_tokens=as_int(raw.get("totalTokenCount"))
                              or prompt + output))

    def _close_current(self) -> None:
        if self._current is not None:
            self._close(self._current[1])
            self._current = None

    def _part(self, part: dict[str, Any]) -> None:
        signature = as_str(part.get("thoughtSignature")) or None
        call = part.get("functionCall")
        if isinstance(call, dict):
            self._function_call(call, signature)
            return
        text = part.get("text")
        if not isinstance(text, str):
            return
        kind = "thinking" if part.get("thought") is True else "text"
        cur = self._current
        if cur is None or cur[0] != kind:
            if not text and signature is None:
                return
            self._close_current()
            cur = (kind, self._open("thinking" if kind == "thinking" else "text"))
            self._current = cur
        self._delta(cur[1], text)
        if signature is not None:
            self._signatures[cur[1]] = signature

    def _new_id(self, name: str) -> str:
        self._call_count += 1
        rid = self.partial.response_id
        return f"{SYNTHETIC_ID_PREFIX}{rid + '-' if rid else ''}{self._call_count}-{name}"

    def _function_call(self, call: dict[str, Any], signature: str | None) -> None:
        self._close_current()
        name = as_str(call.get("name"))
        streaming = self._streaming_call
        if streaming is not None:
            index, args, sig = streaming
            for pa in call.get("partialArgs") or []:
                if not isinstance(pa, dict):
                    continue
                path = as_str(pa.get("jsonPath"))
                if "stringValue" in pa:
                    _set_path(args, path, as_str(pa.get("stringValue")), append=True)
                elif "numberValue" in pa:
                    _set_path(args, path, pa.get("numberValue"), append=False)
                elif "boolValue" in pa:
                    _set_path(args, path, bool(pa.get("boolValue")), append=False)
                elif "nullValue" in pa:
                    _set_path(args, path, None, append=False)
            if isinstance(call.get("args"), dict):
                args.update(call["args"])
            sig = signature or sig
            if call.get("willContinue") is True and not name:
                self._streaming_call = (index, args, sig)
                return
            self._streaming_call = None
            self._close(index, arguments=args, thought_signature=sig)
            if not name:
                return
        if not name:
            return
        call_id = as_str(call.get("id")) or self._new_id(name)
        index = self._open("toolCall", id=call_id, name=name)
        if call.get("willContinue") is True:
            args0 = call.get("args")
            self._streaming_call = (index, dict(args0) if isinstance(args0, dict) else {},
                                    signature)
            return
        raw_args = call.get("args")
        full_args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        self._delta(index, json.dumps(full_args, ensure_ascii=False, separators=(",", ":")))
        self._close(index, arguments=full_args, thought_signature=signature)

    def _complete(self) -> None:
        if self._streaming_call is not None:
            index, args, sig = self._streaming_call
            self._streaming_call = None
            self._close(index, arguments=args, thought_signature=sig)
        reason = self._finish_reason or "STOP"
        mapped = _FINISH_OK.get(reason)
        if mapped is None:
            self._succeed("error", f"Gemini stopped the response: finishReason {reason}")
        elif mapped == "stop" and self.partial.tool_calls:
            self._succeed("toolUse")
        else:
            self._succeed("length" if mapped == "length" else "stop")
