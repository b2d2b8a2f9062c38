"""Shared pieces of the provider codecs: the request value, the decoder skeleton, error text.

A codec never performs I/O. :class:`HttpRequest` is the request *as data*; an interpreter sends
it and feeds the response body, chunk by chunk as it arrives, to a decoder's ``feed``; at the end
of the body it calls ``finish``. Each call returns the stream events completed so far.

:class:`StreamDecoder` holds what every decoder shares: the :class:`PartialAssistantMessage` being
folded, the bookkeeping of open content blocks, and the guarantees of the event sequence:

* exactly one ``StartEvent`` first (emitted by the first ``feed``/``finish``);
* exactly one final ``DoneEvent`` or ``ErrorEvent`` last, after which nothing more is emitted;
* ``feed`` and ``finish`` never raise: malformed input, and even a bug in a decoder, become an
  ``ErrorEvent`` whose ``error_message`` says what went wrong.

JSON from the network is parsed with :func:`load_json`: a payload nested more than
:data:`MAX_PAYLOAD_DEPTH` levels deep is malformed (an error reply), so no payload can make the
parser, or the code that walks what it returns, run out of stack. Tool-call arguments get the
tighter ``MAX_JSON_DEPTH`` (100) when the call is closed: deeper ones are invalid arguments.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..frozen import JSON, MAX_JSON_DEPTH, thaw
from ..llm import StreamOptions
from ..messages import Model, StopReason, Usage
from ..stream import (
    PartialAssistantMessage,
    StartEvent,
    StreamEvent,
    too_deep_at,
)
from .cost import usage_with_cost
from .sse import SSEDecoder, SSEEvent

__all__ = [
    "MAX_PAYLOAD_DEPTH",
    "HttpRequest",
    "SSEStreamDecoder",
    "StreamDecoder",
    "format_http_error",
    "load_json",
    "made_up_call_id",
    "snippet",
]

MAX_PAYLOAD_DEPTH: Final = MAX_JSON_DEPTH + 28
"""The deepest nesting of arrays and objects accepted in one JSON payload of a response (128):
room for tool arguments at their own limit inside any provider's envelope (Gemini's is 8 deep)."""


def load_json(text: str, limit: int = MAX_PAYLOAD_DEPTH) -> Any:
    """``json.loads`` for text received from a provider. Text nested more than ``limit`` levels
    deep raises ``json.JSONDecodeError`` (a ``ValueError``) saying so, never ``RecursionError``.

    >>> load_json('{"a": [1]}')
    {'a': [1]}
    >>> load_json('[' * 129)
    Traceback (most recent call last):
    ...
    json.decoder.JSONDecodeError: nested more than 128 levels deep: line 1 column 129 (char 128)
    """
    at = too_deep_at(text, limit)
    if at >= 0:
        raise json.JSONDecodeError(f"nested more than {limit} levels deep", text, at)
    try:
        return json.loads(text)
    except RecursionError:  # only when already called from a very deep stack
        raise json.JSONDecodeError("nested too deeply for the stack left", text, 0) from None


def made_up_call_id(response_id: str | None, index: int) -> str:
    """The id of a tool call the provider sent without one (several OpenAI-compatible servers
    do): ``call_<response>_<index>``, from the response's id (its last 24 letters, digits, ``-``
    and ``_``) and the call's content block index. Decoding the same response gives it again (a
    replay, a cassette); responses with ids of their own give calls ids of their own. Without a
    response id it is ``call_<index>``; the core gives a call whose id an earlier call of the
    conversation has one of its own (:mod:`agentcore.call_ids`).

    >>> made_up_call_id("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", 1)
    'call_bslfkBeAs8l4bebGdFOJ6PeG_1'
    >>> made_up_call_id(None, 0)
    'call_0'
    """
    tail = "".join(c for c in response_id or "" if c.isascii() and (c.isalnum() or c in "-_"))[-24:]
    return f"call_{tail}_{index}" if tail else f"call_{index}"


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """An HTTP request as data. ``body`` is a JSON value (plain dicts and lists) to be sent as
    ``application/json``."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: JSON = None

    def body_bytes(self) -> bytes:
        """The body encoded as compact UTF-8 JSON."""
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def snippet(data: str | bytes, limit: int = 120) -> str:
    """A short, printable prefix of ``data`` for error messages."""
    if isinstance(data, bytes):
        text = data[: limit * 4].decode("utf-8", errors="replace")
    else:
        text = data
    text = text.strip()
    if len(text) > limit:
        return repr(text[:limit]) + "..."
    return repr(text)


def merge_headers(
    base: Mapping[str, str], model: Model, options: StreamOptions
) -> dict[str, str]:
    """``base`` headers, then the model's own, then the call's (later ones win)."""
    out = dict(base)
    if model.headers:
        out.update({str(k): str(v) for k, v in thaw(model.headers).items()})
    if options.headers:
        out.update(options.headers)
    return out


def join_url(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return 0


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --------------------------------------------------------------------------- the decoder skeleton

_BlockKind = Literal["text", "thinking", "toolCall"]


class StreamDecoder:
    """Skeleton of an incremental response decoder. Subclasses implement :meth:`_feed` and
    :meth:`_end` and use the ``_open_*``/``_delta``/``_close`` helpers to advance the partial."""

    #: What the final-event check names in its message, e.g. ``"[DONE]"``.
    final_event_name = "final event"

    def __init__(self, model: Model, *, timestamp: int = 0) -> None:
        self.model = model
        self.partial = PartialAssistantMessage.begin(
            api=model.api, provider=model.provider, model=model.id, timestamp=timestamp
        )
        self._out: list[StreamEvent] = []
        self._started = False
        self.finished = False
        self._kinds: dict[int, _BlockKind] = {}  # open content blocks: index -> kind
        self._signatures: dict[int, str] = {}
        self._usage = Usage()
        self._received = 0
        self._head = b""

    # -- public API

    def feed(self, data: bytes) -> list[StreamEvent]:
        """Decode the next chunk of the response body; return the events it completed."""
        if self.finished:
            return []
        self._begin()
        if len(self._head) < 200:
            self._head += data[: 200 - len(self._head)]
        self._received += len(data)
        try:
            self._feed(data)
        except Exception as exc:  # noqa: BLE001 - never raise to the interpreter
            self._fail(f"Internal error while decoding the {self.model.api} stream: "
                       f"{type(exc).__name__}: {exc}")
        return self._take()

    def finish(self) -> list[StreamEvent]:
        """The response body ended. Returns the remaining events; the last one is final."""
        if self.finished:
            return self._take()
        self._begin()
        try:
            self._end()
        except Exception as exc:  # noqa: BLE001
            self._fail(f"Internal error while decoding the {self.model.api} stream: "
                       f"{type(exc).__name__}: {exc}")
        if not self.finished:
            self._fail(self._truncated_message())
        return self._take()

    # -- for subclasses

    def _feed(self, data: bytes) -> None:
        raise NotImplementedError

    def _end(self) -> None:
        """End of body: finish successfully if the stream allows it (else the base reports a
        truncated stream)."""

    def _truncated_message(self, detail: str = "") -> str:
        what = f"received {self._received} bytes"
        if self._received == 0:
            what = "the body was empty"
        elif not self._any_event():
            what += f", no events; body starts with {snippet(self._head, 80)}"
        if detail:
            what += f"; {detail}"
        return (f"Stream ended before the provider's final event ({self.final_event_name}); "
                f"{what}")

    def _any_event(self) -> bool:
        return True

    # -- emitting

    def _begin(self) -> None:
        if not self._started:
            self._started = True
            self._out.append(StartEvent(self.partial))

    def _take(self) -> list[StreamEvent]:
        out = self._out
        self._out = []
        return out

    def _push(self, event: Any) -> None:
        self._out.append(event)
        self.partial = event.partial

    def _open(self, kind: _BlockKind, *, id: str = "", name: str = "",
              redacted: bool = False) -> int:
        index = len(self.partial.blocks)
        if kind == "text":
            self._push(self.partial.text_start())
        elif kind == "thinking":
            self._push(self.partial.thinking_start(redacted=redacted))
        else:
            self._push(self.partial.toolcall_start(id, name))
        self._kinds[index] = kind
        return index

    def _delta(self, index: int, text: str) -> None:
        if not text:
            return
        kind = self._kinds.get(index)
        if kind == "text":
            self._push(self.partial.text_delta(index, text))
        elif kind == "thinking":
            self._push(self.partial.thinking_delta(index, text))
        elif kind == "toolCall":
            self._push(self.partial.toolcall_delta(index, text))

    def _close(self, index: int, *, signature: str | None = None, arguments: Any = None,
               id: str | None = None, name: str | None = None,
               thought_signature: str | None = None, text: str | None = None) -> None:
        kind = self._kinds.pop(index, None)
        if kind is None:
            return
        sig = signature if signature is not None else self._signatures.pop(index, None)
        if kind == "text":
            self._push(self.partial.text_end(index, signature=sig, text=text))
        elif kind == "thinking":
            self._push(self.partial.thinking_end(index, signature=sig, thinking=text))
        else:
            self._push(self.partial.toolcall_end(index, arguments, id=id, name=name,
                                                 thought_signature=thought_signature))

    def _close_all(self) -> None:
        for index in sorted(self._kinds):
            self._close(index)

    def _set_usage(self, usage: Usage) -> None:
        self._usage = usage
        self.partial = self.partial.with_header(usage=usage_with_cost(self.model, usage))

    def _has_tool_calls(self) -> bool:
        return any(k == "toolCall" for k in self._kinds.values()) or bool(self.partial.tool_calls)

    def _succeed(self, reason: StopReason, error_message: str | None = None) -> None:
        if self.finished:
            return
        self._close_all()
        self.finished = True
        if reason in ("stop", "length", "toolUse"):
            self._out.append(self.partial.done(reason))
        else:
            self._out.append(self.partial.error(
                "aborted" if reason == "aborted" else "error",
                error_message or "The provider stopped the response with an error"))

    def _fail(self, message: str) -> None:
        if self.finished:
            return
        self.finished = True
        self._out.append(self.partial.error("error", message))


class SSEStreamDecoder(StreamDecoder):
    """A decoder whose body is an SSE stream of JSON payloads: subclasses implement
    :meth:`_event` (called with the parsed JSON of each event's data)."""

    def __init__(self, model: Model, *, timestamp: int = 0) -> None:
        super().__init__(model, timestamp=timestamp)
        self._sse = SSEDecoder()
        self._events_seen = 0

    def _any_event(self) -> bool:
        return self._events_seen > 0

    def _feed(self, data: bytes) -> None:
        for ev in self._sse.feed(data):
            if self.finished:
                return
            self._events_seen += 1
            self._sse_event(ev)

    def _end(self) -> None:
        for ev in self._sse.close():
            if self.finished:
                return
            self._events_seen += 1
            self._sse_event(ev)
        if not self.finished:
            self._stream_ended()

    def _stream_ended(self) -> None:
        """Called at the end of the body when no final event was seen; may finish."""

    def _sse_event(self, ev: SSEEvent) -> None:
        data = ev.data
        if self._is_terminator(ev):
            return
        try:
            payload = load_json(data)
        except json.JSONDecodeError as exc:
            self._fail(f"Invalid JSON in {self.model.api} stream event "
                       f"{ev.event!r}: {exc.msg} at position {exc.pos}; data starts with "
                       f"{snippet(data, 80)}")
            return
        self._event(ev.event, payload)

    def _is_terminator(self, ev: SSEEvent) -> bool:
        """Handle a non-JSON terminator such as ``[DONE]``; True when handled."""
        return False

    def _event(self, name: str, payload: Any) -> None:
        raise NotImplementedError


# --------------------------------------------------------------------------- HTTP errors

_REASONS = {
    400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden",
    404: "Not Found", 408: "Request Timeout", 409: "Conflict", 413: "Payload Too Large",
    422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout", 529: "Overloaded",
}

_HINTS = {
    401: "check the API key",
    403: "check the API key and its permissions",
    404: "check the model id and the base URL",
    429: "rate limited or out of quota; retry later",
    529: "the provider is overloaded; retry later",
}


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    try:
        items = headers.items()
    except AttributeError:
        return None
    for k, v in items:
        if str(k).lower() == name:
            if isinstance(v, (list, tuple)):
                return str(v[0]) if v else None
            return str(v)
    return None


def format_http_error(provider: str, status: int, headers: Any, body: bytes) -> str:
    """A message a person can act on, from an HTTP error response of any supported provider.

    >>> format_http_error("OpenAI", 401, {}, b'{"error": {"message": "Incorrect API key",'
    ...     b' "type": "invalid_request_error", "code": "invalid_api_key"}}')  # doctest: +NORMALIZE_WHITESPACE
    'OpenAI HTTP 401 Unauthorized: Incorrect API key (type: invalid_request_error, code: invalid_api_key;
    check the API key)'
    """
    reason = _REASONS.get(status, "")
    head = f"{provider} HTTP {status}" + (f" {reason}" if reason else "")
    text = body.decode("utf-8", errors="replace").strip() if body else ""
    parsed: Any = None
    if text:
        try:
            parsed = load_json(text)
        except ValueError:
            parsed = None
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        parsed = parsed[0]  # Gemini wraps errors of streaming calls in an array
    message = ""
    details: list[str] = []
    if isinstance(parsed, dict):
        err = parsed.get("error")
        if isinstance(err, dict):
            message = as_str(err.get("message"))
            for key in ("type", "status", "code", "param"):
                val = err.get(key)
                if val is not None and val != "" and not (key == "code" and val == status):
                    details.append(f"{key}: {val}")
            meta = as_dict(err.get("metadata"))
            raw = meta.get("raw")
            if raw:
                prov = as_str(meta.get("provider_name"))
                details.append(f"upstream{' ' + prov if prov else ''}: {str(raw)[:300]}")
        elif isinstance(err, str):
            message = err
        if not message:
            message = as_str(parsed.get("message")) or as_str(parsed.get("detail"))
        req_id = parsed.get("request_id")
        if isinstance(req_id, str):
            details.append(f"request_id: {req_id}")
    if not message:
        message = text[:300] if text else "(empty body)"
    rid = _header(headers, "request-id") or _header(headers, "x-request-id")
    if rid and not any(d.startswith("request_id") for d in details):
        details.append(f"request_id: {rid}")
    retry = _header(headers, "retry-after")
    if retry and status >= 400:
        details.append(f"retry after {retry}s" if retry.strip().isdigit() else f"retry after {retry}")
    hint = _HINTS.get(status) or ("provider-side error; retry later" if status >= 500 else "")
    tail = ", ".join(details)
    if hint:
        tail = f"{tail}; {hint}" if tail else hint
    return f"{head}: {message}" + (f" ({tail})" if tail else "")
