"""JSON codec: every message, event, input, effect and the state, tagged with ``type``.

``to_json(value)`` gives a JSON-compatible structure (dicts, lists, strings, numbers, booleans,
``None``); ``from_json`` rebuilds the value. Records become objects whose ``type`` names their
class: the ``type``/``role`` string they already carry (``"user"``, ``"message_start"``,
``"tool_finished"``...) or, for records without one, the class name (``"Usage"``, ``"LoopState"``).

Fields that hold free-form JSON (tool arguments, details, schemas) are written as they are and
read back frozen, without looking for tags inside them, so a tool argument that happens to have
a ``type`` key stays a plain object.

Stream events carry the whole partial message; a journal that stores every delta would grow with
the square of the reply. ``to_json(event, partials=False)`` leaves out the partial of delta and
block events; :class:`PartialFold` puts it back by folding the events in order.

>>> from agentcore.messages import UserMessage
>>> to_json(UserMessage("hi", timestamp=3))
{'type': 'user', 'content': 'hi', 'timestamp': 3}
>>> from_json({'type': 'user', 'content': 'hi', 'timestamp': 3})
UserMessage(content='hi', timestamp=3)
>>> from_json({'type': 'nope'})
Traceback (most recent call last):
...
agentcore.codec.CodecError: unknown type tag 'nope' at $ (register application types with agentcore.codec.register)
"""

from __future__ import annotations

import base64 as _base64
import dataclasses
import decimal as _decimal
import enum as _enum
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from pyrsistent import PVector, pvector
from returns.result import Failure, Result, Success

from . import config as _config
from . import effects as _effects
from . import events as _events
from . import inputs as _inputs
from . import llm as _llm
from . import machine as _machine
from . import messages as _messages
from . import state as _state
from . import stream as _stream
from . import tools as _tools
from .frozen import FrozenDict, freeze
from .records import (
    field_annotations,
    is_record,
    is_record_class,
    record_fields,
    replace,
    required_fields,
)

__all__ = [
    "CodecError",
    "PartialFold",
    "dumps",
    "encode_raw",
    "from_json",
    "json_form",
    "loads",
    "register",
    "to_json",
    "try_from_json",
]


class CodecError(ValueError):
    """A JSON value that does not decode: names the path and the problem."""


_Encoder = Callable[[Any, bool], Any]
_Decoder = Callable[[Mapping[str, Any], str], Any]

_encoders: dict[type, _Encoder] = {}
_decoders: dict[str, _Decoder] = {}
_classes: dict[str, type] = {}
_RESERVED: Final = frozenset({"json", "partial_assistant"})


def _tag_of(cls: type) -> str:
    for attr in ("type", "role"):
        value = cls.__dict__.get(attr)
        if isinstance(value, str):
            return value
    return cls.__name__


def _field_kind(annotation: str) -> str:
    if "JSON" in annotation or "FrozenDict" in annotation or annotation.startswith("Mapping"):
        return "raw"
    if "PVector" in annotation or annotation.startswith("Sequence"):
        return "pvector"
    if "frozenset" in annotation:
        return "frozenset"
    return "value"


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def encode_raw(value: Any) -> Any:
    """A free-form JSON field (tool arguments, ``details``) as JSON data, without type tags."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, FrozenDict):
        return {str(k): encode_raw(v) for k, v in value.items()}
    if isinstance(value, Mapping):
        return {str(k): encode_raw(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [encode_raw(v) for v in value]
    if is_record(value) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return to_json(value)
    return json_form(value)


def json_form(value: Any) -> Any:
    """What JSON cannot hold, as the JSON that stands for it in free-form fields (tool
    arguments, ``details``): datetimes, dates and times as ISO 8601 text, ``Decimal`` as its
    exact text, sets as sorted lists, bytes as base64 text, an ``Enum`` as its value, and any other
    object as its ``repr``. A run keeps the objects; what is encoded (a transcript, the Ray
    wire) keeps this form, which encodes to itself, so a replay is identical.

    >>> import decimal
    >>> json_form(decimal.Decimal("1.10")), json_form({3, 1}), json_form(b"hi")
    ('1.10', [1, 3], 'aGk=')
    """
    if type(value) in _SCALARS:
        return value
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat) and not isinstance(value, type):  # datetime, date, time (no clock read)
        return str(isoformat())
    if isinstance(value, _decimal.Decimal):
        return str(value)
    if isinstance(value, (set, frozenset)):
        items = [encode_raw(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, _enum.Enum):
        return encode_raw(value.value)
    if isinstance(value, (int, float, str)):  # subclasses: their plain value
        return (int if isinstance(value, int) and not isinstance(value, bool) else
                bool if isinstance(value, bool) else float if isinstance(value, float) else str)(value)
    return repr(value)


def register(cls: type, tag: str | None = None, *, skip: tuple[str, ...] = (),
             rebuild: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> type:
    """Teach the codec a record class or a frozen dataclass (an application's own message type, say).

    ``tag`` defaults to the class's ``type`` or ``role`` attribute, else its name. ``skip``
    names derived fields that are left out and recomputed by ``rebuild(fields) -> fields``.
    Returns ``cls``, so it also works as a decorator.
    """
    name = tag or _tag_of(cls)
    if name in _RESERVED:
        raise ValueError(f"type tag {name!r} is reserved by the codec")
    existing = _classes.get(name)
    if existing is not None and existing is not cls:
        raise ValueError(f"type tag {name!r} is already used by {existing.__name__}")
    _classes[name] = cls
    fields = [(name, _field_kind(annotation)) for name, annotation in field_annotations(cls).items()
              if name not in skip]
    scalars = _SCALARS

    def encode(value: Any, partials: bool) -> Any:
        out: dict[str, Any] = {"type": name}
        for fname, kind in fields:
            v = getattr(value, fname)
            if type(v) in scalars:
                out[fname] = v
            elif kind == "raw":
                out[fname] = encode_raw(v)
            else:
                out[fname] = _encode(v, partials)
        return out

    def decode(obj: Mapping[str, Any], path: str) -> Any:
        kwargs: dict[str, Any] = {}
        for fname, kind in fields:
            if fname not in obj:
                continue
            v = obj[fname]
            where = f"{path}.{fname}"
            if kind == "raw":
                kwargs[fname] = freeze(v)
            elif kind == "pvector":
                kwargs[fname] = None if v is None else pvector(_decode(x, f"{where}[{i}]") for i, x in enumerate(v))
            elif kind == "frozenset":
                kwargs[fname] = frozenset(v)
            else:
                kwargs[fname] = _decode(v, where)
        if rebuild is not None:
            kwargs = rebuild(kwargs)
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise CodecError(f"cannot build {name} at {path}: {exc}") from None

    _encoders[cls] = encode
    _decoders[name] = decode
    return cls


def _encode(value: Any, partials: bool) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    encoder = _encoders.get(kind)
    if encoder is not None:
        return encoder(value, partials)
    if kind is tuple:
        return [_encode(v, partials) for v in value]
    if isinstance(value, _stream.PartialAssistantMessage):
        return {"type": "partial_assistant", "message": _encode(value.to_message(), partials)}
    if isinstance(value, (tuple, list, PVector)):
        return [_encode(v, partials) for v in value]
    if isinstance(value, (frozenset, set)):
        return sorted(_encode(v, partials) for v in value)
    if isinstance(value, Mapping):
        if "type" in value:
            # A plain object with its own "type" key must not be read back as a record.
            return {"type": "json", "value": encode_raw(value)}
        return {str(k): _encode(v, partials) for k, v in value.items()}
    if isinstance(value, _tools.AgentTool):
        return _encode(value.spec, partials)
    raise CodecError(f"cannot encode a {type(value).__name__}: register it with agentcore.codec.register")


def _decode(value: Any, path: str) -> Any:
    if isinstance(value, list):
        return tuple(_decode(v, f"{path}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        tag = value.get("type")
        if tag is None:
            return FrozenDict({k: _decode(v, f"{path}.{k}") for k, v in value.items()})
        if tag == "json":
            return freeze(value.get("value"))
        if tag == "partial_assistant":
            message = _decode(value.get("message"), f"{path}.message")
            blocks = tuple(message.content)
            return _stream.PartialAssistantMessage(replace(message, content=()), blocks,
                                                   (None,) * len(blocks))
        decoder = _decoders.get(tag) if isinstance(tag, str) else None
        if decoder is None:
            raise CodecError(
                f"unknown type tag {tag!r} at {path} (register application types with agentcore.codec.register)"
            )
        return decoder(value, path)
    return value


def to_json(value: Any, *, partials: bool = True) -> Any:
    """Encode ``value`` as JSON-compatible data. ``partials=False`` drops the partial message
    of stream delta/block events (see :class:`PartialFold`)."""
    return _encode(value, partials)


def from_json(data: Any) -> Any:
    """Decode what :func:`to_json` produced. Raises :class:`CodecError` naming the path."""
    return _decode(data, "$")


def try_from_json(data: Any) -> Result[Any, str]:
    """:func:`from_json` as a ``Result`` (the failure holds the error text)."""
    try:
        return Success(from_json(data))
    except CodecError as exc:
        return Failure(str(exc))


def dumps(value: Any, *, partials: bool = True) -> str:
    """``to_json`` then compact JSON text (one line, UTF-8 kept)."""
    return json.dumps(to_json(value, partials=partials), ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> Any:
    """Parse JSON text and decode it."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CodecError(f"not JSON: {exc}") from None
    return from_json(data)


# --------------------------------------------------------------------------- stream events

_BLOCK_EVENTS: Final = _stream.BLOCK_EVENTS


def _register_block_event(cls: type) -> None:
    name = _tag_of(cls)
    fields = [name for name in record_fields(cls) if name != "partial"]
    required = [name for name in required_fields(cls) if name != "partial"]

    def encode(value: Any, partials: bool) -> Any:
        out: dict[str, Any] = {"type": name}
        for fname in fields:
            out[fname] = _encode(getattr(value, fname), partials)
        if partials:
            out["partial"] = _encode(value.partial, partials)
        return out

    def decode(obj: Mapping[str, Any], path: str) -> Any:
        kwargs = {f: _decode(obj[f], f"{path}.{f}") for f in fields if f in obj}
        missing = [f for f in required if f not in obj]
        if missing:
            raise CodecError(f"{name} at {path} lacks {', '.join(missing)}")
        partial = obj.get("partial")
        kwargs["partial"] = _decode(partial, f"{path}.partial") if partial is not None else None
        return cls(**kwargs)

    _encoders[cls] = encode
    _decoders[name] = decode


_DELTA_EVENTS: Final[dict[type, Any]] = {
    _stream.TextDeltaEvent: _stream.PartialAssistantMessage.text_delta,
    _stream.ThinkingDeltaEvent: _stream.PartialAssistantMessage.thinking_delta,
    _stream.ToolCallDeltaEvent: _stream.PartialAssistantMessage.toolcall_delta,
}


class PartialFold:
    """Rebuilds the ``partial`` of stream events decoded with ``partials=False``.

    Feed the events of one reply in order; each comes back with its partial, built by the same
    O(1)-per-event fold the stream functions use. A stream function may change the partial's
    header (usage, ``response_id``) without an event of its own: a recorded event then carries
    that ``header``, given here, and the fold takes it before the event. ``strict=False``
    accepts an event the fold cannot place (before the start, for a block that is not open):
    it keeps the partial as it stands, as the core, which refuses such an event, reads nothing
    from it.

    :meth:`adopt` turns an event whose partial is an ``AssistantMessage`` (as pi-ai writes
    them) into the same event with the library's partial.
    """

    __slots__ = ("partial",)

    def __init__(self) -> None:
        self.partial: _stream.PartialAssistantMessage | None = None

    def apply(self, event: Any, header: Any = None, *, strict: bool = True) -> Any:
        if isinstance(event, _stream.StartEvent):
            if not isinstance(event.partial, _stream.PartialAssistantMessage):
                raise CodecError(f"the start event's partial is a {type(event.partial).__name__}, "
                                 "not a partial assistant message")
            self.partial = event.partial
            return event
        if not isinstance(event, _BLOCK_EVENTS) or event.partial is not None:
            if isinstance(event, _BLOCK_EVENTS):
                self.partial = event.partial
            return event
        p = self.partial
        if p is None:
            if strict:
                raise CodecError(f"{event.type} event before the stream's start event")
            return replace(event, partial=_EMPTY_PARTIAL)
        if header is not None and header is not p.header:
            p = _stream.PartialAssistantMessage(header, p.blocks, p.chunks)
        try:
            rebuilt = self._rebuild(p, event)
        except (ValueError, IndexError, TypeError, AttributeError):
            if strict:
                raise
            return replace(event, partial=p)
        self.partial = rebuilt.partial
        return rebuilt

    @staticmethod
    def _rebuild(p: _stream.PartialAssistantMessage, event: Any) -> Any:
        kind = type(event)
        if kind in _DELTA_EVENTS:
            # The rebuilt delta event has exactly the recorded fields: it is the event itself.
            return _DELTA_EVENTS[kind](p, event.content_index, event.delta)
        rebuilt: Any
        if isinstance(event, _stream.TextStartEvent):
            rebuilt = p.text_start()
        elif isinstance(event, _stream.TextEndEvent):
            rebuilt = p.text_end(event.content_index, event.content.text_signature, event.content.text)
        elif isinstance(event, _stream.ThinkingStartEvent):
            rebuilt = p.thinking_start(event.redacted)
        elif isinstance(event, _stream.ThinkingEndEvent):
            c = event.content
            rebuilt = p.thinking_end(event.content_index, c.thinking_signature, c.thinking)
        elif isinstance(event, _stream.ToolCallStartEvent):
            rebuilt = p.toolcall_start(event.id, event.name)
        else:
            call = event.tool_call
            rebuilt = p.toolcall_end(event.content_index, call.arguments, id=call.id, name=call.name,
                                     thought_signature=call.thought_signature)
        if rebuilt.content_index != event.content_index:
            raise ValueError(f"{event.type} for block {event.content_index}, the next block is {rebuilt.content_index}")
        # Keep the recorded event's own fields; take only the rebuilt partial.
        return replace(event, partial=rebuilt.partial)

    def adopt(self, event: Any) -> Any:
        """``event`` with the library's partial instead of its ``AssistantMessage`` one: the
        content folded from the events' own fields, the header taken from the message. An event
        the fold cannot place is given back as it is (the core will say what is wrong with it)."""
        message = getattr(event, "partial", None)
        if not isinstance(message, _messages.AssistantMessage):
            return event  # nothing to adopt (a done or error event, the library's partial)
        header = replace(message, content=())
        if isinstance(event, _stream.StartEvent):
            blocks = tuple(message.content)
            self.partial = _stream.PartialAssistantMessage(header, blocks, (None,) * len(blocks))
            return _stream.StartEvent(self.partial)
        p = self.partial
        if p is None or type(event) not in _BLOCK_EVENT_TYPES:
            return event
        if header != p.header:
            p = self.partial = _stream.PartialAssistantMessage(header, p.blocks, p.chunks)
        try:
            rebuilt = self._rebuild(p, replace(event, partial=None))
        except (ValueError, IndexError, TypeError, AttributeError):
            return event
        self.partial = rebuilt.partial
        return rebuilt


_EMPTY_PARTIAL: Final = _stream.PartialAssistantMessage.begin()
_BLOCK_EVENT_TYPES: Final = frozenset(_BLOCK_EVENTS)


# --------------------------------------------------------------------------- the registry


def _register_module(module: Any) -> None:
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if is_record_class(obj) and obj not in _encoders:
            if obj in _BLOCK_EVENTS or obj in (_tools.AgentTool, _config.AgentLoopConfig, _llm.StreamOptions,
                                               _stream.PartialAssistantMessage, _state.RunState):
                continue
            register(obj)


for _cls in _BLOCK_EVENTS:
    _register_block_event(_cls)
for _module in (_messages, _stream, _events, _tools, _config, _llm, _inputs, _effects, _state, _machine):
    _register_module(_module)
register(_state.ToolSlot)
register(_state.CompletedTurn)


def _rebuild_run(fields: dict[str, Any]) -> dict[str, Any]:
    fields["tool_index"] = _state.index_tools(fields.get("tools", ()))
    return fields


register(_state.RunState, skip=("tool_index",), rebuild=_rebuild_run)
register(_state.LoopState)
