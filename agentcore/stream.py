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
import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final, Literal, TypeAlias, final

import msgspec

from .frozen import MAX_JSON_DEPTH, FrozenDict, depth_exceeds, freeze, thaw
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
from .records import Record, replace, set_field

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
    "arguments_problem",
    "parse_arguments",
    "parse_partial_json",
    "too_deep_at",
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
class _Open(Record, frozen=True):
    """What is known of a content block still being streamed (its text is in the chunks)."""

    kind: _Kind
    id: str = ""
    name: str = ""
    redacted: bool = False

    def materialize(self, text: str) -> AssistantContent:
        """The block as it reads before its end event (a signature only comes with the end)."""
        if self.kind == "text":
            return TextContent(text)
        if self.kind == "thinking":
            return ThinkingContent(text, None, self.redacted)
        return ToolCall(self.id, self.name, freeze(_as_object(parse_partial_json(text))))


_Block: TypeAlias = "AssistantContent | _Open"


@final
class PartialAssistantMessage(msgspec.Struct, frozen=True, eq=False):
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
            set_field(self, "_content", cache)
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
            if block.invalid_json is not None:
                return block.invalid_json
            return json.dumps(thaw(block.arguments), separators=(",", ":"))
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
        return ThinkingStartEvent(len(self.blocks), self._add(_Open("thinking", redacted=redacted)), redacted)

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
        (see :func:`parse_arguments`: text that is not a JSON object, or is nested more than
        ``MAX_JSON_DEPTH`` levels deep, is kept as the call's ``invalid_json``; truncated JSON
        keeps what is complete). Given ``arguments`` nested more than ``MAX_JSON_DEPTH`` deep
        are treated the same way: the call gets ``{}`` and their JSON text as ``invalid_json``."""
        block = self._open("toolCall", index)
        invalid: str | None = None
        if arguments is None:
            args, invalid = parse_arguments(_join(self.chunks[index]))
        elif depth_exceeds(arguments):
            invalid, args = _dumps_any_depth(arguments), {}
        else:
            args = arguments
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


class StartEvent(Record, frozen=True, tag="start"):
    partial: PartialAssistantMessage


class TextStartEvent(Record, frozen=True, tag="text_start"):
    content_index: int
    partial: PartialAssistantMessage


class TextDeltaEvent(Record, frozen=True, tag="text_delta"):
    content_index: int
    delta: str
    partial: PartialAssistantMessage


class TextEndEvent(Record, frozen=True, tag="text_end"):
    content_index: int
    content: TextContent
    partial: PartialAssistantMessage


class ThinkingStartEvent(Record, frozen=True, tag="thinking_start"):
    """A thinking block begins; ``redacted`` when the provider sends it as an opaque payload."""

    content_index: int
    partial: PartialAssistantMessage
    redacted: bool = False


class ThinkingDeltaEvent(Record, frozen=True, tag="thinking_delta"):
    content_index: int
    delta: str
    partial: PartialAssistantMessage


class ThinkingEndEvent(Record, frozen=True, tag="thinking_end"):
    content_index: int
    content: ThinkingContent
    partial: PartialAssistantMessage


class ToolCallStartEvent(Record, frozen=True, tag="toolcall_start"):
    """A tool call begins; ``id`` and ``name`` are the call's, as the stream announced them."""

    content_index: int
    partial: PartialAssistantMessage
    id: str = ""
    name: str = ""


class ToolCallDeltaEvent(Record, frozen=True, tag="toolcall_delta"):
    content_index: int
    delta: str
    partial: PartialAssistantMessage


class ToolCallEndEvent(Record, frozen=True, tag="toolcall_end"):
    content_index: int
    tool_call: ToolCall
    partial: PartialAssistantMessage


class DoneEvent(Record, frozen=True, tag="done"):
    """The reply finished; ``message`` is final."""

    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(Record, frozen=True, tag="error"):
    """The reply failed or was aborted; ``error`` is the final message (with ``error_message``)."""

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

# A JSON string (possibly cut off at the end), an opening bracket (group 1) or a closing one (2).
_STRUCTURE: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|([\[{])|([\]}])', re.S)


def too_deep_at(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """Where JSON ``text`` opens an array or object more than ``limit`` levels deep: the index
    of that ``[`` or ``{`` (brackets inside strings do not count), or ``-1`` when it does not.

    Found without recursion, in linear time. For text that passes, ``json.loads`` (which
    recurses once a level) goes at most ``limit`` levels deep, however malformed the text is.

    >>> too_deep_at('[[1], {"a": "[[["}]', 2), too_deep_at('[[[1]]]', 2)
    (-1, 2)
    """
    if text.count("[") + text.count("{") <= limit:
        return -1
    depth = 0
    for m in _STRUCTURE.finditer(text):
        kind = m.lastindex
        if kind == 1:
            depth += 1
            if depth > limit:
                return m.start()
        elif kind == 2 and depth:
            depth -= 1
    return -1


def _too_deep(text: str) -> bool:
    return too_deep_at(text) >= 0


def _too_deep_text() -> str:
    return f"nested more than {MAX_JSON_DEPTH} levels deep"


def parse_arguments(text: str) -> tuple[Any, str | None]:
    """Parse a tool call's argument text: ``(arguments, None)`` when it is a JSON object (blank
    text counts as ``{}``), else ``(salvaged, text)``: what :func:`parse_partial_json` keeps of
    it (``{}`` when nothing), and the text itself, to be reported as invalid JSON.

    Text nested more than ``MAX_JSON_DEPTH`` (100) levels deep is invalid whatever it holds.

    >>> parse_arguments('{"a": [1]}')
    ({'a': [1]}, None)
    >>> parse_arguments('{"a": [1')
    ({'a': [1]}, '{"a": [1')
    >>> parse_arguments('[' * 101 + ']' * 101)[0]
    {}
    """
    if not text.strip():
        return {}, None
    if _too_deep(text):
        return {}, text
    try:
        args = json.loads(text)
    except ValueError:
        return _as_object(parse_partial_json(text)), text
    except RecursionError:  # only when already called from a very deep stack
        return {}, text
    if not isinstance(args, dict):
        return {}, text
    return args, None


def arguments_problem(text: str) -> str | None:
    """Why ``text`` is not accepted as tool arguments (``None`` when it is): the JSON parser's
    message, ``'they are not a JSON object'``, or ``'nested more than 100 levels deep'``.

    >>> arguments_problem('{"a": 1}') is None, arguments_problem('[1]')
    (True, 'they are not a JSON object')
    >>> arguments_problem('{"a": ')
    'Expecting value: line 1 column 7 (char 6)'
    >>> arguments_problem('{"a":' * 101)
    'nested more than 100 levels deep'
    """
    if _too_deep(text):
        return _too_deep_text()
    try:
        value = json.loads(text)
    except ValueError as exc:
        return str(exc)
    except RecursionError:
        return _too_deep_text()
    return None if isinstance(value, dict) else "they are not a JSON object"


_END: Final[Any] = object()


def _dumps_any_depth(value: Any) -> str:
    """Compact JSON text of ``value`` (mappings, lists and tuples, scalars) at any depth: built
    with an explicit stack, unlike ``json.dumps``. A value that contains itself raises
    ``ValueError``."""
    out: list[str] = []
    stack: list[tuple[Iterator[Any], bool, int]] = []  # (items left, is an object, id)
    active: set[int] = set()
    item = value
    while True:
        if isinstance(item, Mapping):
            opened: tuple[Iterator[Any], bool] | None = (iter(item.items()), True)
            out.append("{")
        elif type(item) is list or type(item) is tuple:
            opened = (iter(item), False)
            out.append("[")
        else:
            opened = None
            out.append(json.dumps(item, ensure_ascii=False, default=str))
        if opened is not None:
            if id(item) in active:
                raise ValueError(f"cannot encode a {type(item).__name__} that contains itself")
            active.add(id(item))
            stack.append((opened[0], opened[1], id(item)))
        while stack:
            items, is_object, ident = stack[-1]
            nxt: Any = next(items, _END)
            if nxt is _END:
                stack.pop()
                active.discard(ident)
                out.append("}" if is_object else "]")
                continue
            if out[-1] != "{" and out[-1] != "[":
                out.append(",")
            if is_object:
                key, item = nxt
                out.append(json.dumps(str(key), ensure_ascii=False) + ":")
            else:
                item = nxt
            break
        else:
            return "".join(out)


def parse_partial_json(text: str) -> Any:
    """Parse JSON that may be cut off, keeping every complete member.

    >>> parse_partial_json('{"a": 1, "b": [1, 2')
    {'a': 1, 'b': [1, 2]}
    >>> parse_partial_json('{"path": "/tm')
    {'path': '/tm'}
    >>> parse_partial_json('')
    {}

    Text nested more than ``MAX_JSON_DEPTH`` (100) levels deep gives ``{}`` (nothing is kept),
    and so does any text Python's parser would need too deep a stack for.

    >>> parse_partial_json('{"a": ' * 101)
    {}
    """
    if not text.strip() or _too_deep(text):
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # Nothing after the first error can be kept, except a string cut off at the end (whose
        # error is reported where the string starts).
        limit = len(text) if exc.msg.startswith("Unterminated string") else exc.pos
    except ValueError:
        limit = len(text)
    except RecursionError:
        return {}
    # Track the open containers and whether we stop inside a string; then try closing the
    # text at successively earlier safe cut points. The open containers are a linked list,
    # innermost first (``(bracket, outer)`` or ``None``), so a cut point shares it in O(1).
    stack: Any = None
    in_string = False
    escape = False
    cuts: list[tuple[int, Any, bool]] = []  # (end index, open containers, in string)
    for i, ch in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
                cuts.append((i + 1, stack, False))
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack = (ch, stack)
            cuts.append((i + 1, stack, False))
        elif ch in "}]":
            if stack is not None:
                stack = stack[1]
            cuts.append((i + 1, stack, False))
        elif ch == ",":
            cuts.append((i, stack, False))
        elif ch not in " \t\r\n:":
            cuts.append((i + 1, stack, False))
    if in_string and not escape:
        cuts.append((len(text), stack, True))
    tries = 0
    for end, open_stack, inside in reversed(cuts):
        if end > limit:
            continue
        closers = ['"'] if inside else []
        while open_stack is not None:
            closers.append(_CLOSERS[open_stack[0]])
            open_stack = open_stack[1]
        try:
            return json.loads(text[:end] + "".join(closers))
        except ValueError:
            tries += 1
            if tries >= _MAX_TRIES:  # keeps a pathological input linear, not quadratic
                break
        except RecursionError:
            break
    return {}
