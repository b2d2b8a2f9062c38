"""JSON codec: every message, event, input, effect and the state, tagged with ``type``.

``to_json(value)`` gives a JSON-compatible structure (dicts, lists, strings, numbers, booleans,
``None``); ``from_json`` rebuilds the value. Records become objects whose ``type`` names their
class: the ``type``/``role`` string they already carry (``"user"``, ``"message_start"``,
``"tool_finished"``...) or, for records without one, the class name (``"Usage"``, ``"LoopState"``).

Fields that hold free-form JSON (tool arguments, details, schemas) are written as they are and
read back frozen, without looking for tags inside them, so a tool argument that happens to have
a ``type`` key stays a plain object. The one exception is the numbers JSON has no text for: NaN,
``inf`` and ``-inf`` (a :class:`~agentcore.frozen.NonFinite` in a frozen value) are written as
``{"type": "float", "value": "NaN"}`` (``"Infinity"``, ``"-Infinity"``) and read back as the
numbers, wherever they are; an object of the application's own that would read as such a tag
(or as the escape of one) is written inside ``{"type": "json", "value": ...}``
(:func:`plain_json`) and read back as it was. JSON data (what :func:`to_json` and :func:`parse`
give) never holds such a number: its tag stands for it.

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

import decimal
import enum as _enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec
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
from .fold import PartialFold
from .frozen import NON_FINITE_NAMES, FrozenDict, NonFinite, freeze
from .json_tags import TAGS, finite_json, freeze_read, is_tag, needs_escape, parse, plain_json, tag_of, untag
from .records import (
    CodecError,
    field_annotations,
    is_record_class,
    record_fields,
    replace,
    required_fields,
    type_problem,
)

__all__ = [
    "CodecError",
    "PartialFold",
    "decode_at",
    "dumps",
    "encode_bytes",
    "encode_raw",
    "from_json",
    "json_form",
    "loads",
    "parse",
    "plain_json",
    "prepared",
    "register",
    "register_form",
    "to_json",
    "try_from_json",
]


_Decoder = Callable[[Mapping[str, Any], str], Any]

_decoders: dict[str, _Decoder] = {}
_classes: dict[str, type] = {}
_RESERVED: Final = frozenset({"json", "float", "partial_assistant"})


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


# --------------------------------------------------------------------------- encoding
#
# One encoder writes every JSON text the library makes: ``msgspec``'s, in C. It writes a record
# (a tagged struct) as its tagged object by itself; what it cannot know is prepared first, by
# :func:`_prepare`, which rewrites only the parts that need it:
#
# - a registered class that is not a tagged struct (an application's dataclass, a struct
#   registered under another tag, a record with derived fields) becomes its tagged object;
# - a partial message becomes ``{"type": "partial_assistant", "message": ...}``, and a stream
#   block event drops its partial when ``partials=False``;
# - sets become lists in the order of their JSON text, a plain object with its own ``type`` key
#   becomes ``{"type": "json", "value": ...}`` (outside free-form fields; :func:`plain_json`);
# - a float that is not finite becomes a :class:`NonFinite` (which the hook writes as its tag).
#
# Classes that need none of it are *native*: :func:`_prepare` hands them to the encoder as they
# are, without looking inside (every message, content block and usage of the library is one).
# Free-form fields (tool arguments, details) are never prepared; the encoder's hook gives the
# JSON form of what JSON has no type for (:func:`json_form`): a ``NonFinite`` as its tag, and a
# frozen object that would read as a tag inside the escape (:func:`agentcore.json_tags.needs_escape`).


class _PartialForm(msgspec.Struct, frozen=True, tag_field="type", tag="partial_assistant"):
    """How a partial message is written: the message it would be if it ended now."""

    message: Any


class _Plan:
    """How :func:`_prepare` writes one registered class."""

    __slots__ = ("name", "fields", "walk", "partial", "same_shape", "native", "optional")

    def __init__(self, name: str, fields: tuple[str, ...], raw: frozenset[str], partial: str | None,
                 same_shape: bool, optional: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.fields = fields
        self.optional = dict(optional or {})  # fields written only when they differ from these defaults
        self.walk = tuple(f for f in fields if f not in raw and f != partial)
        """The fields whose values may need preparing (not free-form, not the partial)."""
        self.partial = partial
        self.same_shape = same_shape
        """The encoder writes an instance as this plan would (a struct tagged ``name``)."""
        self.native = False
        """No instance ever needs preparing (set by :func:`_find_natives`)."""

    def prepare(self, value: Any, partials: bool) -> Any:
        changes: dict[str, Any] | None = None
        for f in self.walk:
            x = getattr(value, f)
            kind = type(x)
            if kind in _native or (kind is float and x - x == 0.0):
                continue
            y = _prepare(x, partials)
            if y is not x:
                if changes is None:
                    changes = {}
                changes[f] = y
        if changes is None and self.same_shape:
            return value
        out: dict[str, Any] = {"type": self.name}
        for f in self.fields:
            if f in self.optional and getattr(value, f) == self.optional[f]:
                continue
            if f == self.partial:
                if partials:
                    out[f] = _prepare(getattr(value, f), partials)
            elif changes is not None and f in changes:
                out[f] = changes[f]
            else:
                out[f] = getattr(value, f)
        return out


_plans: dict[type, _Plan] = {}
_ready = False
"""Set once the library's own records are registered: from then on each :func:`register` call
works out which classes are native again (at import, that is done once, at the end)."""
_native: set[type] = {str, int, bool, type(None), NonFinite, _PartialForm}
"""The classes :func:`_prepare` gives back as they are: scalars (a ``float`` is looked at: it may
not be finite), native records, and what it made itself (so that preparing twice changes
nothing)."""


def _prepare(value: Any, partials: bool) -> Any:
    """``value`` with what the encoder cannot write by itself rewritten (see above)."""
    kind = type(value)
    if kind in _native:
        return value
    if kind is float:
        return value if value - value == 0.0 else NonFinite(value)
    plan = _plans.get(kind)
    if plan is not None:
        return plan.prepare(value, partials)
    if kind is tuple or kind is list:
        return _prepare_items(value, partials)
    if isinstance(value, PVector):
        return _prepare_items(value.tolist(), partials)
    if isinstance(value, _stream.PartialAssistantMessage):
        return _PartialForm(_prepare(value.to_message(), partials))
    if isinstance(value, Mapping):
        if "type" in value:
            # A plain object with its own "type" key must not be read back as a record.
            return plain_json(value)
        return {str(k): _prepare(v, partials) for k, v in value.items()}
    if isinstance(value, (frozenset, set)):
        return sorted([_prepare(v, partials) for v in value], key=_json_text)
    if isinstance(value, _tools.AgentTool):
        return _prepare(value.spec, partials)
    dated = callable(getattr(value, "isoformat", None)) and not isinstance(value, type)
    if isinstance(value, _ENCODED_AS_TEXT) or dated:
        return value  # the encoder writes it in its JSON form (see json_form); a datetime, date or time too
    raise CodecError(f"cannot encode a {kind.__name__}: register it with agentcore.codec.register")


_ENCODED_AS_TEXT: Final = (decimal.Decimal, _enum.Enum, bytes, bytearray, memoryview)
"""What a registered record's fields may hold that JSON has no type for: written in its JSON
form (:func:`json_form`), read back as that form."""


def _prepare_items(items: Any, partials: bool) -> Any:
    out: list[Any] | None = None
    native = _native
    for i, x in enumerate(items):
        kind = type(x)
        if kind in native or (kind is float and x - x == 0.0):
            continue
        y = _prepare(x, partials)
        if y is not x:
            if out is None:
                out = list(items)
            out[i] = y
    return items if out is None else out


def _hook(value: Any) -> Any:
    """The encoder's hook: what ``msgspec`` has no JSON for by itself."""
    if type(value) is FrozenDict:
        data = value.as_dict()
        if "type" in data and len(data) == 2 and needs_escape(data):
            return {"type": "json", "value": data}
        return data
    if type(value) is NonFinite:
        return TAGS[value.json_name]
    if isinstance(value, PVector):
        return value.tolist()
    if isinstance(value, _enum.Enum):
        return value.value
    if isinstance(value, int):  # a subclass (bool has none)
        return int(value)
    if isinstance(value, float):  # a subclass (a numpy float, say)
        number = float(value)
        return number if number - number == 0.0 else TAGS[NonFinite(number).json_name]
    if isinstance(value, str):
        return str(value)
    return repr(value)


_ENCODER: Final = msgspec.json.Encoder(enc_hook=_hook)
_encode: Final = _ENCODER.encode
_decode_json: Final = msgspec.json.Decoder().decode


def encode_bytes(value: Any) -> bytes:
    """Prepared data (see :func:`prepared`; a record that needs no preparing, too) as compact
    JSON ``bytes``, UTF-8.

    A string that UTF-8 cannot hold (a lone surrogate, such as half of an emoji cut by a stream)
    is written as a JSON escape (``"\\ud83d"``), and then every non-ASCII character of that
    value is: the text stays valid JSON and :func:`parse` gives the same string back.

    >>> encode_bytes(["é", "half \\ud83d"])
    b'["\\\\u00e9","half \\\\ud83d"]'
    """
    try:
        return _encode(value)
    except UnicodeEncodeError:
        plain = finite_json(msgspec.to_builtins(value, enc_hook=_plain_hook, str_keys=True))
        return json.dumps(plain, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _plain_hook(value: Any) -> Any:
    if isinstance(value, msgspec.Raw):
        return parse(bytes(value))
    return _hook(value)


def _json_text(value: Any) -> bytes:
    """The sort key of a set's items: their JSON text, with sorted keys."""
    return msgspec.json.encode(value, enc_hook=_hook, order="sorted")


def encode_raw(value: Any) -> Any:
    """A free-form JSON field (tool arguments, ``details``) as JSON data, without type tags (NaN
    and the infinities as :class:`~agentcore.frozen.NonFinite` numbers)."""
    if type(value) in _SCALARS:
        return freeze(value)
    text = encode_bytes(freeze(value))
    return untag(parse(text))


def json_form(value: Any) -> Any:
    """What JSON cannot hold, as the JSON that stands for it in free-form fields (tool
    arguments, ``details``): datetimes, dates and times as RFC 3339 text, ``Decimal`` as its
    exact text, sets as lists in the order of their items' JSON text, bytes as base64 text, an
    ``Enum`` as its value, NaN and the infinities as :class:`~agentcore.frozen.NonFinite` numbers
    (written as their tags), and any other object as its ``repr``. A run keeps the objects; what is
    encoded (a transcript, the Ray wire) keeps this form, which encodes to itself, so a replay is
    identical.

    >>> import decimal
    >>> json_form(decimal.Decimal("1.10")), json_form({3, 1}), json_form(b"hi")
    ('1.10', [1, 3], 'aGk=')
    """
    return encode_raw(value)


def prepared(value: Any, *, partials: bool = True) -> Any:
    """``value`` ready for :data:`encode_bytes`: what the encoder could not write by itself
    rewritten, the rest as it is (the same objects). Raises :class:`CodecError` for a value
    that has no JSON form (an unregistered class)."""
    return _prepare(value, partials)


def register(cls: type, tag: str | None = None, *, skip: tuple[str, ...] = (),
             rebuild: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
             optional: tuple[str, ...] = ()) -> type:
    """Teach the codec a record class or a frozen dataclass (an application's own message type, say).

    ``tag`` defaults to the class's ``type`` or ``role`` attribute, else its name. ``skip``
    names derived fields that are left out and recomputed by ``rebuild(fields) -> fields``; ``optional``
    fields are written only when not their default (added later: older text stays the same).
    Returns ``cls``, so it also works as a decorator.
    """
    name = tag or _tag_of(cls)
    if name in _RESERVED:
        raise ValueError(f"type tag {name!r} is reserved by the codec")
    existing = _classes.get(name)
    if existing is not None and existing is not cls:
        raise ValueError(f"type tag {name!r} is already used by {existing.__name__}")
    _classes[name] = cls
    _add_plan(cls, name, skip, optional=optional)
    fields = [(name, _field_kind(annotation)) for name, annotation in field_annotations(cls).items()
              if name not in skip]

    def decode(obj: Mapping[str, Any], path: str) -> Any:
        kwargs: dict[str, Any] = {}
        for fname, kind in fields:
            if fname not in obj:
                continue
            v = obj[fname]
            where = f"{path}.{fname}"
            if kind == "raw":
                kwargs[fname] = freeze_read(v)
            elif kind == "pvector":
                kwargs[fname] = None if v is None else pvector(
                    _decode(x, f"{where}[{i}]") for i, x in enumerate(_array(v, where)))
            elif kind == "frozenset":
                kwargs[fname] = None if v is None else frozenset(
                    _decode(x, f"{where}[{i}]") for i, x in enumerate(_array(v, where)))
            else:
                kwargs[fname] = _decode(v, where)
        if rebuild is not None:
            kwargs = rebuild(kwargs)
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise CodecError(f"cannot build {name} at {path}: {exc}") from None

    _decoders[name] = decode
    if _ready:
        _find_natives()
    return cls


class _FormPlan(_Plan):
    """A class with a JSON form of its own (:func:`register_form`)."""

    __slots__ = ("encode",)

    def __init__(self, name: str, encode: Callable[[Any], Any]) -> None:
        super().__init__(name, (), frozenset(), None, False)
        self.encode = encode

    def prepare(self, value: Any, partials: bool) -> Any:
        return self.encode(value)


def register_form(cls: type, encode: Callable[[Any], Any], decode: Callable[[Mapping[str, Any], str], Any]) -> None:
    """Give a record class a JSON form of its own (a :class:`~agentcore.state.Suspension`'s,
    which writes each value once): ``encode(value)`` gives the prepared data written for it (a
    mapping tagged with the class's tag), ``decode(obj, path)`` builds the value back from that
    JSON object (:func:`decode_at` decodes its parts)."""
    name = _tag_of(cls)
    _classes[name] = cls
    _native.discard(cls)
    _plans[cls] = _FormPlan(name, encode)
    _decoders[name] = decode
    if _ready:
        _find_natives()


def _array(value: Any, path: str) -> list[Any]:
    """A field's JSON array (a field that holds a list, a persistent vector or a set)."""
    if type(value) is not list:
        raise CodecError(type_problem(value, list, path) or f"{path} is not a list")
    return value


def _add_plan(cls: type, name: str, skip: tuple[str, ...], partial: str | None = None,
              optional: tuple[str, ...] = ()) -> None:
    annotations = field_annotations(cls)
    fields = tuple(f for f in annotations if f not in skip)
    raw = frozenset(f for f, a in annotations.items() if _field_kind(a) == "raw")
    config = getattr(cls, "__struct_config__", None)
    same_shape = (config is not None and config.tag_field == "type" and config.tag == name and not skip
                  and not optional and partial is None and getattr(cls, "__struct_encode_fields__", ()) == fields)
    _native.discard(cls)
    defaults = {f.name: f.default for f in msgspec.structs.fields(cls) if f.name in optional} if optional else None
    _plans[cls] = _Plan(name, fields, raw, partial, same_shape, defaults)


def _find_natives() -> None:
    """Mark native the plans whose every prepared field has a type that never needs preparing,
    and find the native classes ``msgspec`` can decode by itself (:data:`_typed`)."""
    changed = True
    while changed:
        changed = False
        for cls, plan in _plans.items():
            if plan.native or not plan.same_shape:
                continue
            hints = _hints(cls)
            if hints is None:  # an annotation that does not resolve: prepared field by field
                continue
            if all(_native_type(hints.get(f, Any)) for f in plan.walk):
                plan.native = changed = True
                _native.add(cls)
    decodable: set[type] = set()
    changed = True
    while changed:
        changed = False
        for cls, plan in _plans.items():
            if cls in decodable or not plan.native:
                continue
            raw = [f for f in plan.fields if f not in plan.walk]
            if raw and "__post_init__" not in cls.__dict__:
                continue  # its free-form fields would stay unfrozen
            hints = _hints(cls) or {}
            if all(_decodable_type(hints.get(f, Any), decodable) for f in plan.walk):
                decodable.add(cls)
                changed = True
    _typed.clear()
    _typed.update({plan.name: cls for cls, plan in _plans.items() if cls in decodable})
    _find_readers(decodable)


def _find_readers(decodable: set[type]) -> None:
    """The JSON objects of which native classes the codec reads before msgspec decodes them
    (:data:`_readers`): those with a free-form field of any value, and those holding one."""
    free: dict[type, frozenset[str]] = {}
    for cls in decodable:
        plan, hints = _plans[cls], _hints(cls) or {}
        fields = frozenset(f for f in plan.fields if f not in plan.walk and hints.get(f, Any) is Any)
        if fields:
            free[cls] = fields
    holding: dict[type, frozenset[str]] = {}
    changed = True
    while changed:
        changed = False
        for cls in decodable:
            hints = _hints(cls) or {}
            fields = frozenset(f for f in _plans[cls].walk
                               if _mentions(hints.get(f, Any), set(free) | set(holding)))
            if fields and holding.get(cls) != fields:
                holding[cls] = fields
                changed = True
    _readers.clear()
    _readers.update({cls: (free.get(cls, frozenset()), holding.get(cls, frozenset()))
                     for cls in set(free) | set(holding)})


def _mentions(tp: Any, classes: set[type]) -> bool:
    if isinstance(tp, type):
        return tp in classes
    return any(_mentions(a, classes) for a in typing.get_args(tp))


def _read_free(cls: type, obj: dict[str, Any]) -> dict[str, Any]:
    """The JSON object of a native ``cls`` with its free-form fields of any value read
    (:func:`~agentcore.json_tags.freeze_read`), and those of the records it holds."""
    free, holding = _readers[cls]
    out = dict(obj)
    for f in free:
        if f in out:
            out[f] = freeze_read(out[f])
    for f in holding:
        if f in out:
            out[f] = _read_held(out[f])
    return out


def _read_held(value: Any) -> Any:
    if type(value) is dict:
        tag = value.get("type")
        cls = _typed.get(tag) if type(tag) is str else None
        return _read_free(cls, value) if cls in _readers else value
    if type(value) is list:
        return [_read_held(v) for v in value]
    return value


_hints_of: dict[type, dict[str, Any] | None] = {}


def _hints(cls: type) -> dict[str, Any] | None:
    """The resolved field types of ``cls`` (``None`` if they do not resolve), found once."""
    if cls not in _hints_of:
        try:
            _hints_of[cls] = typing.get_type_hints(cls)
        except Exception:
            _hints_of[cls] = None
    return _hints_of[cls]


def _native_type(tp: Any) -> bool:
    if tp in _SCALARS or tp is FrozenDict or tp is type(None):
        return True
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return True
    if origin is typing.Union or origin is types.UnionType or origin is tuple:
        return all(a is Ellipsis or _native_type(a) for a in typing.get_args(tp))
    return isinstance(tp, type) and tp in _native


def _decodable_type(tp: Any, decodable: set[type]) -> bool:
    if isinstance(tp, type) and tp in _plans:
        return tp in decodable
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType or origin is tuple:
        return all(a is Ellipsis or _decodable_type(a, decodable) for a in typing.get_args(tp))
    return _native_type(tp)


_readers: dict[type, tuple[frozenset[str], frozenset[str]]] = {}
"""Native class → its free-form fields of any value (``details``) and its fields that hold
records with such fields. msgspec would hand a free-form value over as JSON data, so the codec
reads them first (:func:`_read_free`: the numbers JSON has no text for come back from their
tags)."""
_typed: dict[str, type] = {}
"""Tag → native record class whose every field ``msgspec`` decodes by itself (in C): messages,
content, usage, most inputs. Free-form JSON fields are frozen by the class's ``__post_init__``."""


def _dec_hook(cls: type, value: Any) -> Any:
    if cls is FrozenDict:
        return freeze_read(value)
    raise NotImplementedError(cls)


def _decode(value: Any, path: str) -> Any:
    if isinstance(value, list):
        return tuple(_decode(v, f"{path}[{i}]") for i, v in enumerate(value))
    if isinstance(value, dict):
        tag = value.get("type")
        if tag is None:
            return FrozenDict({k: _decode(v, f"{path}.{k}") for k, v in value.items()})
        if tag == "json":
            if is_tag(value):  # the escape of a plain value's wrapper (agentcore.json_tags.plain_json)
                value = value["value"]
            return freeze_read(value.get("value"))
        if tag == "partial_assistant":
            message = _decode(value.get("message"), f"{path}.message")
            blocks = tuple(message.content)
            return _stream.PartialAssistantMessage(replace(message, content=()), blocks,
                                                   (None,) * len(blocks))
        typed = _typed.get(tag) if isinstance(tag, str) else None
        if typed is not None:
            if typed in _readers:  # free-form fields of any value: msgspec would hand them over as JSON data
                value = _read_free(typed, value)
            try:
                return msgspec.convert(value, typed, dec_hook=_dec_hook)
            except msgspec.ValidationError:
                pass  # the field-by-field decoder is lenient, and words the error
        decoder = _decoders.get(tag) if isinstance(tag, str) else None
        if decoder is None and tag == "float" and is_tag(value):  # a number JSON has no text for
            return NonFinite(NON_FINITE_NAMES[value["value"]])
        if decoder is None:
            raise CodecError(
                f"unknown type tag {tag!r} at {path} (register application types with agentcore.codec.register)"
            )
        return decoder(value, path)
    return value


def to_json(value: Any, *, partials: bool = True) -> Any:
    """Encode ``value`` as JSON-compatible data. ``partials=False`` drops the partial message
    of stream delta/block events (see :class:`PartialFold`)."""
    return parse(encode_bytes(_prepare(value, partials)))


def from_json(data: Any) -> Any:
    """Decode what :func:`to_json` produced. Raises :class:`CodecError` naming the path."""
    return _decode(data, "$")


def decode_at(data: Any, path: str) -> Any:
    """:func:`from_json` of a part of a JSON value, found at ``path`` (which errors name)."""
    return _decode(data, path)


def try_from_json(data: Any) -> Result[Any, str]:
    """:func:`from_json` as a ``Result`` (the failure holds the error text)."""
    try:
        return Success(from_json(data))
    except CodecError as exc:
        return Failure(str(exc))


def dumps(value: Any, *, partials: bool = True) -> str:
    """``to_json`` as compact JSON text (one line, UTF-8 kept)."""
    return encode_bytes(_prepare(value, partials)).decode("utf-8")


def loads(text: str) -> Any:
    """Parse JSON text and decode it."""
    try:
        data = json.loads(text, parse_constant=tag_of)
    except ValueError as exc:
        raise CodecError(f"not JSON: {exc}") from None
    return from_json(data)


# --------------------------------------------------------------------------- stream events

_BLOCK_EVENTS: Final = _stream.BLOCK_EVENTS


def _register_block_event(cls: type) -> None:
    name = _tag_of(cls)
    _classes[name] = cls
    _add_plan(cls, name, (), partial="partial")
    fields = [name for name in record_fields(cls) if name != "partial"]
    required = [name for name in required_fields(cls) if name != "partial"]

    def decode(obj: Mapping[str, Any], path: str) -> Any:
        kwargs = {f: _decode(obj[f], f"{path}.{f}") for f in fields if f in obj}
        missing = [f for f in required if f not in obj]
        if missing:
            raise CodecError(f"{name} at {path} lacks {', '.join(missing)}")
        partial = obj.get("partial")
        kwargs["partial"] = _decode(partial, f"{path}.partial") if partial is not None else None
        return cls(**kwargs)

    _decoders[name] = decode



# --------------------------------------------------------------------------- the registry


def _register_module(module: Any) -> None:
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if is_record_class(obj) and obj not in _plans:
            if obj in (_tools.AgentTool, _config.AgentLoopConfig, _llm.StreamOptions,
                       _stream.PartialAssistantMessage, _state.RunState):
                continue
            register(obj)


for _cls in _BLOCK_EVENTS:
    _register_block_event(_cls)
for _module in (_messages, _stream, _events, _tools, _config, _llm, _inputs, _effects, _state, _machine):
    _register_module(_module)
register(_tools.AgentToolResult, optional=("is_error",))  # is_error came in 0.6: written when true
register(_state.ToolSlot)
register(_state.CompletedTurn)


register(_state.RunState, skip=("tool_index", "call_ids"), rebuild=_state.read_back_run)
register(_state.LoopState)
_find_natives()
_ready = True
