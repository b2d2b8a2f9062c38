"""Stream events and the partial-message accumulator.

A stream function (a provider codec, the scripted model, your own) reports a reply as a sequence
of *stream events*: ``StartEvent``, then ``text_*``/``thinking_*``/``toolcall_*`` start, delta and
end events per content block, and finally ``DoneEvent`` or ``ErrorEvent``. Every event carries the
``partial`` message as it stands after that event.

:class:`PartialAssistantMessage` is the fold of those events. It is immutable and each step costs
O(1) whatever the amount of text received so far: a content block being streamed keeps its
chunks in a linked list and is only joined when someone reads ``.content`` (and then cached). The
methods that advance it return the *event*, which holds the new partial, so producing a stream is
a chain of calls:

>>> p = PartialAssistantMessage.begin(api="scripted", provider="scripted", model="m")
>>> events = [StartEvent(p)]
>>> events.append(events[-1].partial.text_start())
>>> events.append(events[-1].partial.text_delta(0, "Hel"))
>>> events.append(events[-1].partial.text_delta(0, "lo"))
>>> events.append(events[-1].partial.text_end(0))
>>> events.append(events[-1].partial.done("stop"))
>>> [e.type for e in events]
['start', 'text_start', 'text_delta', 'text_delta', 'text_end', 'done']
>>> events[-1].message.text
'Hello'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, TypeAlias, final

from .frozen import FrozenDict, freeze
from .messages import (
    ZERO_USAGE,
    AssistantContent,
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = [
    "BLOCK_EVENTS",
    "DoneEvent",
    "ErrorEvent",
    "PartialAssistantMessage",
    "StartEvent",
    "StreamEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "parse_partial_json",
]

_Kind = Literal["text", "thinking", "toolCall"]


# A streamed block's text is a linked list of its chunks, newest first: ``(previous, text)``.
_Chunks: TypeAlias = "tuple[Any, str] | None"


def _join(chunks: _Chunks) -> str:
    parts: list[str] = []
    while chunks is not None:
        chunks, text = chunks
        parts.append(text)
    parts.reverse()
    return "".join(parts)


@final
@dataclass(frozen=True, slots=True)
class _Open:
    """What is known of a content block still being streamed (its text is in the chunks)."""

    kind: _Kind
    id: str = ""
    name: str = ""
    signature: str | None = None
    redacted: bool = False

    def materialize(self, text: str) -> AssistantContent:
        if self.kind == "text":
            return TextContent(text, self.signature)
        if self.kind == "thinking":
            return ThinkingContent(text, self.signature, self.redacted)
        return ToolCall(self.id, self.name, freeze(_as_object(parse_partial_json(text))))


_Block: TypeAlias = "AssistantContent | _Open"


@final
@dataclass(frozen=True, slots=True, eq=False)
class PartialAssistantMessage:
    """An assistant message while it streams. Reads like an :class:`AssistantMessage`.

    ``content`` is materialized on first access and cached; :meth:`to_message` gives the
    finished message.
    """

    role: ClassVar[str] = "assistant"
    header: AssistantMessage
    blocks: tuple[_Block, ...] = ()
    chunks: tuple[_Chunks, ...] = ()
    _content: list[tuple[AssistantContent, ...]] | None = None

    @classmethod
    def begin(
        cls,
        *,
        api: str = "",
        provider: str = "",
        model: str = "",
        timestamp: int = 0,
        usage: Usage = ZERO_USAGE,
        response_id: str | None = None,
    ) -> PartialAssistantMessage:
        """An empty partial for a reply about to stream."""
        header = AssistantMessage(
            (), api=api, provider=provider, model=model, timestamp=timestamp, usage=usage,
            response_id=response_id,
        )
        return cls(header)

    # -- reading, like AssistantMessage

    @property
    def content(self) -> tuple[AssistantContent, ...]:
        cache = self._content
        if cache is None:
            cache = [tuple(b.materialize(_join(c)) if isinstance(b, _Open) else b
                           for b, c in zip(self.blocks, self.chunks))]
            object.__setattr__(self, "_content", cache)
        return cache[0]

    @property
    def api(self) -> str:
        return self.header.api

    @property
    def provider(self) -> str:
        return self.header.provider

    @property
    def model(self) -> str:
        return self.header.model

    @property
    def usage(self) -> Usage:
        return self.header.usage

    @property
    def stop_reason(self) -> StopReason:
        return self.header.stop_reason

    @property
    def error_message(self) -> str | None:
        return self.header.error_message

    @property
    def response_id(self) -> str | None:
        return self.header.response_id

    @property
    def timestamp(self) -> int:
        return self.header.timestamp

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolCall))

    def block_text(self, index: int) -> str:
        """The text received so far in block ``index`` (text, thinking or tool-call JSON)."""
        block = self.blocks[index]
        if isinstance(block, _Open):
            return _join(self.chunks[index])
        if isinstance(block, TextContent):
            return block.text
        if isinstance(block, ThinkingContent):
            return block.thinking
        if isinstance(block, ToolCall):
            return json.dumps(dict(block.arguments), separators=(",", ":"))
        raise TypeError(type(block).__name__)

    def to_message(self, **overrides: Any) -> AssistantMessage:
        """The finished message (open blocks closed as they stand), with header ``overrides``."""
        return replace(self.header, content=self.content, **overrides)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartialAssistantMessage):
            return NotImplemented
        return self.header == other.header and self.content == other.content

    def __hash__(self) -> int:
        return hash((self.header, self.content))

    def __repr__(self) -> str:
        return f"PartialAssistantMessage(content={self.content!r}, model={self.model!r})"

    # -- advancing (each returns the event carrying the new partial)

    def _open(self, kind: _Kind, index: int) -> _Open:
        block = self.blocks[index]
        if not isinstance(block, _Open) or block.kind != kind:
            raise ValueError(f"content block {index} is not an open {kind} block")
        return block

    def _append_delta(self, index: int, delta: str, kind: _Kind) -> PartialAssistantMessage:
        self._open(kind, index)
        chunks = self.chunks
        if index == len(chunks) - 1:
            new_chunks = chunks[:-1] + ((chunks[-1], delta),)
        else:
            new_chunks = chunks[:index] + ((chunks[index], delta),) + chunks[index + 1 :]
        return PartialAssistantMessage(self.header, self.blocks, new_chunks)

    def _close(self, index: int, kind: _Kind, final: AssistantContent) -> PartialAssistantMessage:
        self._open(kind, index)
        blocks, chunks = self.blocks, self.chunks
        return PartialAssistantMessage(self.header, blocks[:index] + (final,) + blocks[index + 1 :],
                                       chunks[:index] + (None,) + chunks[index + 1 :])

    def _add(self, block: _Open) -> PartialAssistantMessage:
        return PartialAssistantMessage(self.header, self.blocks + (block,), self.chunks + (None,))

    def text_start(self) -> TextStartEvent:
        return TextStartEvent(len(self.blocks), self._add(_Open("text")))

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        return TextDeltaEvent(index, delta, self._append_delta(index, delta, "text"))

    def text_end(self, index: int, signature: str | None = None, text: str | None = None) -> TextEndEvent:
        """Close text block ``index``; ``text`` replaces what was streamed when given."""
        self._open("text", index)
        content = TextContent(text if text is not None else _join(self.chunks[index]), signature)
        return TextEndEvent(index, content, self._close(index, "text", content))

    def thinking_start(self, redacted: bool = False) -> ThinkingStartEvent:
        return ThinkingStartEvent(len(self.blocks), self._add(_Open("thinking", redacted=redacted)))

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        return ThinkingDeltaEvent(index, delta, self._append_delta(index, delta, "thinking"))

    def thinking_end(
        self, index: int, signature: str | None = None, thinking: str | None = None
    ) -> ThinkingEndEvent:
        block = self._open("thinking", index)
        body = thinking if thinking is not None else _join(self.chunks[index])
        content = ThinkingContent(body, signature, block.redacted)
        return ThinkingEndEvent(index, content, self._close(index, "thinking", content))

    def toolcall_start(self, id: str, name: str) -> ToolCallStartEvent:
        return ToolCallStartEvent(len(self.blocks), self._add(_Open("toolCall", id=id, name=name)), id, name)

    def toolcall_delta(self, index: int, delta: str) -> ToolCallDeltaEvent:
        return ToolCallDeltaEvent(index, delta, self._append_delta(index, delta, "toolCall"))

    def toolcall_end(
        self,
        index: int,
        arguments: Any = None,
        *,
        id: str | None = None,
        name: str | None = None,
        thought_signature: str | None = None,
    ) -> ToolCallEndEvent:
        """Close tool-call block ``index``. Without ``arguments`` the streamed JSON is parsed
        (tolerantly: truncated JSON keeps what is complete)."""
        block = self._open("toolCall", index)
        invalid: str | None = None
        if arguments is not None:
            args = arguments
        else:
            text = _join(self.chunks[index])
            try:
                args = json.loads(text) if text.strip() else {}
                if not isinstance(args, dict):
                    invalid, args = text, {}
            except ValueError:
                invalid, args = text, _as_object(parse_partial_json(text))
        call = ToolCall(id if id is not None else block.id, name if name is not None else block.name,
                        freeze(args), thought_signature, invalid)
        return ToolCallEndEvent(index, call, self._close(index, "toolCall", call))

    def with_header(self, **changes: Any) -> PartialAssistantMessage:
        """A copy with header fields (usage, response_id, model...) changed."""
        return PartialAssistantMessage(replace(self.header, **changes), self.blocks, self.chunks)

    def done(self, reason: Literal["stop", "length", "toolUse"], **header: Any) -> DoneEvent:
        """The final event of a successful reply."""
        return DoneEvent(reason, self.to_message(stop_reason=reason, **header))

    def error(
        self, reason: Literal["error", "aborted"], error_message: str, **header: Any
    ) -> ErrorEvent:
        """The final event of a failed or aborted reply (content received so far is kept)."""
        return ErrorEvent(
            reason, self.to_message(stop_reason=reason, error_message=error_message, **header)
        )


def _as_object(value: Any) -> Any:
    return value if isinstance(value, (dict, FrozenDict)) else {}


# --------------------------------------------------------------------------- the events


@dataclass(frozen=True, slots=True)
class StartEvent:
    type: ClassVar[str] = "start"
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class TextStartEvent:
    type: ClassVar[str] = "text_start"
    content_index: int
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class TextDeltaEvent:
    type: ClassVar[str] = "text_delta"
    content_index: int
    delta: str
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class TextEndEvent:
    type: ClassVar[str] = "text_end"
    content_index: int
    content: TextContent
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class ThinkingStartEvent:
    type: ClassVar[str] = "thinking_start"
    content_index: int
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class ThinkingDeltaEvent:
    type: ClassVar[str] = "thinking_delta"
    content_index: int
    delta: str
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class ThinkingEndEvent:
    type: ClassVar[str] = "thinking_end"
    content_index: int
    content: ThinkingContent
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class ToolCallStartEvent:
    """A tool call begins; ``id`` and ``name`` are the call's, as the stream announced them."""

    type: ClassVar[str] = "toolcall_start"
    content_index: int
    partial: PartialAssistantMessage
    id: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallDeltaEvent:
    type: ClassVar[str] = "toolcall_delta"
    content_index: int
    delta: str
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class ToolCallEndEvent:
    type: ClassVar[str] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: PartialAssistantMessage


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The reply finished; ``message`` is final."""

    type: ClassVar[str] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """The reply failed or was aborted; ``error`` is the final message (with ``error_message``)."""

    type: ClassVar[str] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage


BLOCK_EVENTS = (
    TextStartEvent, TextDeltaEvent, TextEndEvent,
    ThinkingStartEvent, ThinkingDeltaEvent, ThinkingEndEvent,
    ToolCallStartEvent, ToolCallDeltaEvent, ToolCallEndEvent,
)
"""The events of one content block (everything between ``start`` and ``done``/``error``)."""

StreamEvent: TypeAlias = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)


# --------------------------------------------------------------------------- partial JSON

_CLOSERS = {"{": "}", "[": "]"}
_MAX_TRIES = 8


def parse_partial_json(text: str) -> Any:
    """Parse JSON that may be cut off, keeping every complete member.

    >>> parse_partial_json('{"a": 1, "b": [1, 2')
    {'a': 1, 'b': [1, 2]}
    >>> parse_partial_json('{"path": "/tm')
    {'path': '/tm'}
    >>> parse_partial_json('')
    {}
    """
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # Nothing after the first error can be kept, except a string cut off at the end (whose
        # error is reported where the string starts).
        limit = len(text) if exc.msg.startswith("Unterminated string") else exc.pos
    except ValueError:
        limit = len(text)
    # Track the open containers and whether we stop inside a string; then try closing the
    # text at successively earlier safe cut points.
    stack: list[str] = []
    in_string = False
    escape = False
    cuts: list[tuple[int, tuple[str, ...], bool]] = []  # (end index, open stack, in string)
    for i, ch in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
                cuts.append((i + 1, tuple(stack), False))
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
            cuts.append((i + 1, tuple(stack), False))
        elif ch in "}]":
            if stack:
                stack.pop()
            cuts.append((i + 1, tuple(stack), False))
        elif ch == ",":
            cuts.append((i, tuple(stack), False))
        elif ch not in " \t\r\n:":
            cuts.append((i + 1, tuple(stack), False))
    if in_string and not escape:
        cuts.append((len(text), tuple(stack), True))
    tries = 0
    for end, open_stack, inside in reversed(cuts):
        if end > limit:
            continue
        candidate = text[:end] + ('"' if inside else "")
        candidate += "".join(_CLOSERS[c] for c in reversed(open_stack))
        try:
            return json.loads(candidate)
        except ValueError:
            tries += 1
            if tries >= _MAX_TRIES:  # keeps a pathological input linear, not quadratic
                break
    return {}
