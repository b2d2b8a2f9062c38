"""The base of every record the core builds: a frozen, tagged ``msgspec.Struct``.

Messages, content blocks, events, stream events, inputs, effects and the state are immutable
records. They are ``msgspec`` structs rather than dataclasses because a run builds dozens per
turn and one per streamed delta: a frozen struct builds about ten times faster than a frozen
dataclass, compares and hashes in C, and encodes to JSON in C (see ``docs/dependencies.md``).

Each record class has a tag, the ``type`` its JSON object carries: the class's ``type`` (or,
for messages, ``role``) string where it has one, its class name otherwise. The tag is given once,
in the class statement, and becomes the class attribute too::

    class TextContent(Record, tag="text"):      # TextContent.type == "text"
        text: str

Records are not tracked by Python's cyclic garbage collector (``gc=False``): they are immutable,
so they cannot form a reference cycle among themselves, and leaving them out saves the collector
re-scanning every message of a long run (6 % of a tool turn, counted in instructions). Reference
counting frees them as usual. The one thing this gives up: a cycle that runs through a record,
such as an object in a tool result's ``details`` that refers back to that result, is never
collected.

To change fields of a record, use :func:`replace` (``dataclasses.replace`` works on dataclasses
only); it takes records and dataclasses alike, so it also serves user-defined message types.

Records were frozen dataclasses up to 0.3. Code written then changes in one place each:
``dataclasses.replace(r, ...)`` becomes ``agentcore.replace(r, ...)``, ``dataclasses.asdict(r)``
``msgspec.structs.asdict(r)`` (one level) or ``agentcore.codec.to_json(r)`` (JSON data),
``dataclasses.astuple(r)`` ``msgspec.structs.astuple(r)`` and ``dataclasses.fields(cls)``
:func:`record_fields` (the names). Those ``dataclasses`` functions, given a record (or, for
``fields``, a record class), raise a ``TypeError`` that says so; ``dataclasses.is_dataclass`` is
false for records, as before.

>>> from agentcore import TextContent
>>> replace(TextContent("a"), text="b")
TextContent(text='b', text_signature=None)
>>> TextContent.type, is_record(TextContent("a")), record_fields(TextContent)
('text', True, ('text', 'text_signature'))
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence, Set
from types import FrameType
from typing import Any, ClassVar, Final, NoReturn, TypeVar

import msgspec
import msgspec.structs

__all__ = [
    "CodecError",
    "Message",
    "Record",
    "field_annotations",
    "fields_problem",
    "is_message",
    "is_record",
    "is_record_class",
    "kind_of",
    "messages_problem",
    "path_key",
    "record_fields",
    "replace",
    "required_fields",
    "set_field",
    "type_problem",
]

_T = TypeVar("_T")


class CodecError(ValueError):
    """A JSON value that does not decode (``agentcore.codec``): names the path and the problem."""


CodecError.__module__ = "agentcore.codec"  # where it is documented, raised from, and pickled by


class _RecordMeta(msgspec.StructMeta):
    """Makes the struct's tag its ``type`` (records) or ``role`` (messages) class attribute."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        tag = cls.__struct_config__.tag
        attribute = getattr(cls, "__tag_attribute__", "type")
        if isinstance(tag, str) and attribute not in namespace:
            setattr(cls, attribute, tag)
        return cls


class _NotADataclass:
    """``__dataclass_fields__`` of record classes, which are not dataclasses: there is no such
    attribute. ``dataclasses.replace``, ``asdict``, ``astuple`` and ``fields`` look for it on the
    class to tell a dataclass, and get a ``TypeError`` (the type they raise themselves) that
    names what to use instead; whatever else asks (``dataclasses.is_dataclass``, ``hasattr``,
    pprint, pytest) gets the ``AttributeError`` any class without it gives."""

    def __get__(self, cls: type | None, metaclass: type | None = None) -> NoReturn:
        if cls is None:  # looked up on the metaclass itself
            raise AttributeError("__dataclass_fields__")
        raise _not_a_dataclass(cls)


_RecordMeta.__dataclass_fields__ = _NotADataclass()  # type: ignore[attr-defined]


_INSTEAD: Final = {
    "replace": "agentcore.replace(record, field=value) (it takes records and dataclasses alike)",
    "asdict": "msgspec.structs.asdict(record) (its fields, one level) or agentcore.codec.to_json(record) "
              "(JSON data, nested records too)",
    "astuple": "msgspec.structs.astuple(record)",
    "fields": "agentcore.records.record_fields(cls) (the names) or msgspec.structs.fields(cls)",
}
"""What to use instead of each ``dataclasses`` function, for code written when records were
dataclasses (up to 0.3)."""


def _in_dataclasses(frame: FrameType | None) -> bool:
    return frame is not None and frame.f_globals.get("__name__") == "dataclasses"


class _Probe(Exception):
    """Raised and caught at once: its traceback gives the frames that looked the attribute up."""


def _not_a_dataclass(cls: type) -> Exception:
    """The error for looking up ``__dataclass_fields__`` on a record class: a ``TypeError`` naming
    the replacement when ``dataclasses.fields`` looked, or ``replace``/``asdict``/``astuple``
    through their check of their argument (not a record nested in a dataclass they convert);
    the plain ``AttributeError`` for anyone else, and wherever the frames are not as CPython's
    ``dataclasses`` module makes them."""
    try:
        raise _Probe
    except _Probe as probe:
        traceback = probe.__traceback__
    frame = traceback.tb_frame.f_back if traceback is not None else None  # the property
    looker = frame.f_back if frame is not None else None  # what asked for the attribute
    function: str | None = None
    if _in_dataclasses(looker) and looker is not None:
        if looker.f_code.co_name == "fields":
            function = "fields"
        elif looker.f_code.co_name == "_is_dataclass_instance" and _in_dataclasses(looker.f_back):
            function = looker.f_back.f_code.co_name  # type: ignore[union-attr]
    instead = _INSTEAD.get(function) if function in ("fields", "replace", "asdict", "astuple") else None
    if instead is None:
        return AttributeError(f"type object {cls.__name__!r} has no attribute '__dataclass_fields__'")
    article = "an" if cls.__name__[:1] in "AEIO" else "a"
    return TypeError(f"dataclasses.{function}() does not take {article} {cls.__name__}: records are msgspec "
                     f"structs (since agentcore-fx 0.4.0), not dataclasses; use {instead}")


class Record(msgspec.Struct, frozen=True, tag_field="type", tag=True, gc=False, metaclass=_RecordMeta):
    """A frozen record; its JSON object carries its tag as ``type``.

    A msgspec struct, not a dataclass (records were dataclasses up to 0.3): change fields with
    :func:`agentcore.replace`, not ``dataclasses.replace``; get a dict with
    ``msgspec.structs.asdict`` or JSON data with ``agentcore.codec.to_json``, not
    ``dataclasses.asdict``; list the fields with :func:`record_fields`.
    """

    type: ClassVar[str]


class Message(msgspec.Struct, frozen=True, tag_field="type", tag=True, gc=False, metaclass=_RecordMeta):
    """A frozen message record: the tag is its ``role`` (``"user"``, ``"assistant"``, ...)."""

    __tag_attribute__: ClassVar[str] = "role"
    role: ClassVar[str]


def is_record(value: object) -> bool:
    """Whether ``value`` is a record instance (a struct of this library or any ``msgspec.Struct``)."""
    return isinstance(value, msgspec.Struct)


def is_record_class(obj: object) -> bool:
    """Whether ``obj`` is a record class or a dataclass (the two kinds of records the codec takes)."""
    return isinstance(obj, type) and (issubclass(obj, msgspec.Struct) or dataclasses.is_dataclass(obj))


def record_fields(cls: type) -> tuple[str, ...]:
    """The field names of a record class or a dataclass, in order (``init`` fields only)."""
    names = getattr(cls, "__struct_fields__", None)
    if names is not None:
        return tuple(names)
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


def required_fields(cls: type) -> tuple[str, ...]:
    """The fields of a record class or a dataclass that have no default."""
    names = getattr(cls, "__struct_fields__", None)
    if names is not None:
        defaults = cls.__struct_defaults__  # type: ignore[attr-defined]
        first_default = len(names) - len(defaults)
        return tuple(n for i, n in enumerate(names)
                     if i < first_default or defaults[i - first_default] is msgspec.NODEFAULT)
    return tuple(f.name for f in dataclasses.fields(cls)
                 if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)


def field_annotations(cls: type) -> dict[str, str]:
    """Field name → its annotation as written (a string), for a record class or a dataclass."""
    written: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            written[name] = (annotation if isinstance(annotation, str)
                             else getattr(annotation, "__name__", str(annotation)))
    return {name: written.get(name, "Any") for name in record_fields(cls)}


def replace(record: _T, /, **changes: Any) -> _T:
    """A copy of ``record`` (a record or a dataclass) with ``changes`` to its fields."""
    if isinstance(record, msgspec.Struct):
        return msgspec.structs.replace(record, **changes)
    return dataclasses.replace(record, **changes)  # type: ignore[type-var]


def set_field(record: Any, name: str, value: Any) -> None:
    """Set a field of a frozen record while it is being built (``__post_init__`` only)."""
    msgspec.structs.force_setattr(record, name, value)


# --------------------------------------------------------------------------- type checks
#
# A record's constructor does not check the types of its fields (msgspec checks them when it
# decodes JSON by itself, not when a record is built in Python or by the codec's field-by-field
# decoder). Data read back from outside (a transcript's header, a stored suspension) is checked
# here before the core runs on it: a plain mapping where a record belongs, a string where a
# counter belongs, would otherwise fail deep inside a run, far from the damage.

_LIBRARY: Final = frozenset({"agentcore", "interpreters"})
_hints_of: dict[type, dict[str, Any] | None] = {}


def _hints(cls: type) -> dict[str, Any] | None:
    """The resolved field types of a record class (``None``: they do not resolve)."""
    if cls not in _hints_of:
        try:
            _hints_of[cls] = typing.get_type_hints(cls)
        except Exception:  # an annotation that names what its module cannot see
            _hints_of[cls] = None
    return _hints_of[cls]


def _checked(cls: type) -> bool:
    """Records of this library are checked field by field; an application's own are not (the
    codec may give them their fields' JSON form: a datetime as text, a list as a tuple)."""
    known = _checked_classes.get(cls)
    if known is None:
        known = _checked_classes[cls] = is_record_class(cls) and cls.__module__.partition(".")[0] in _LIBRARY
    return known


_checked_classes: dict[type, bool] = {}


def type_problem(value: object, expected: Any, path: str = "$", *, read_back: bool = False,
                 opaque: tuple[type, ...] = ()) -> str | None:
    """What makes ``value`` not a value of the type ``expected`` (a type hint), or ``None``.

    Records of this library, wherever they are met (also inside ``Any`` fields), are checked
    field by field against their field types, all the way down (but those of the classes
    ``opaque`` names, checked for their class only). The problem names where it is, as a path
    from ``path`` (``$.run.turns``, ``$.run.messages[2].content``, ``$.run.tool_policies.rm``,
    ``an item of $.run.hooks``; with ``path=""``, from the value's own fields: ``run.turns``):

    >>> from agentcore import Usage
    >>> type_problem(Usage(input="3"), Usage)
    "$.input is a str ('3'), not an int"
    >>> type_problem({"input": 3}, Usage, "usage")
    'usage is a dict (an object with no type tag), not a Usage'
    >>> type_problem(Usage(3), Usage) is None
    True

    ``int`` fields take no ``bool``; ``float`` fields take an ``int``; a sequence field takes a
    tuple or a list (a persistent vector where its type says so), a mapping field any mapping.

    ``read_back=True`` checks numbers as JSON gives them back: an ``int`` field may hold a
    ``float`` (a timestamp from a clock that does not give whole milliseconds), a ``float``
    field ``None`` (the codec writes a number that is not finite, NaN or infinity, as null).
    """
    return _worded(_checker(expected, (read_back, opaque))(value), path)


def fields_problem(record: object, path: str = "$", *, read_back: bool = False) -> str | None:
    """:func:`type_problem` of ``record``'s own fields: a record in a field is checked for its
    class, not its fields (a check whose cost does not grow with what the record holds).

    >>> from agentcore import ToolFinished
    >>> fields_problem(ToolFinished(3, "x", 5), "input")  # type: ignore[arg-type]
    "input.result is a str ('x'), not an AgentToolResult"
    """
    key = (type(record), read_back)
    check = _fields_checks.get(key)
    if check is None:
        check = _fields_checks[key] = _fields_checker(type(record), (read_back, _RECORDS))
    return _worded(check(record), path)


_RECORDS: Final = (msgspec.Struct,)
_fields_checks: dict[tuple[type, bool], _Check] = {}


_ITEM: Final = "\x00item"
"""The path segment of an item of a set (which has no order to give it an index)."""


def _worded(failure: _Failure | None, path: str) -> str | None:
    if failure is None:
        return None
    where, bad, wanted = failure
    segments = list(reversed(where))
    if _ITEM in segments:  # an item of a set: named by the set
        cut = segments.index(_ITEM)
        inner = "".join(segments[cut + 1:]).lstrip(".")
        where_text = f"an item of {_joined(path, segments[:cut])}"
        where_text = f"{inner} of {where_text}" if inner else where_text
    else:
        where_text = _joined(path, segments)
    return f"{where_text} is {_what(bad)}, not {_expected(wanted)}"


def _joined(path: str, segments: list[str]) -> str:
    text = path + "".join(segments)
    return (text.lstrip(".") if not path else text) or "it"


def path_key(path: str, key: object) -> str:
    """``path`` followed by the mapping key ``key``: ``.key`` for a name, ``[key!r]`` otherwise.

    >>> path_key("$.a", "b"), path_key("$.a", "b c"), path_key("$.a", 3)
    ('$.a.b', "$.a['b c']", '$.a[3]')
    """
    return f"{path}.{key}" if isinstance(key, str) and key.isidentifier() else f"{path}[{key!r}]"


def is_message(value: object) -> bool:
    """A message the loop can carry: a record with a ``role`` string (the library's message
    types or an application's own), not a plain mapping."""
    return not isinstance(value, (Mapping, str, bytes, type)) and isinstance(getattr(value, "role", None), str)


def messages_problem(messages: Any, path: str) -> str | None:
    """The first item of a conversation that is not a message (:func:`is_message`; a
    conversation's type says only ``Any``: an application may add message types of its own).

    >>> messages_problem([{"role": "user"}], "$.messages")  # doctest: +NORMALIZE_WHITESPACE
    '$.messages[0] is a dict (an object with no type tag), not a message (a record with a role: UserMessage,
    AssistantMessage, ToolResultMessage, ...)'
    """
    for i, message in enumerate(messages):
        if not is_message(message):
            return (f"{path}[{i}] is {_what(message)}, not a message (a record with a role: UserMessage, "
                    "AssistantMessage, ToolResultMessage, ...)")
    return None


# A check is compiled once per type (and number mode): a function of the value that gives
# ``None``, or where the first mismatch is (path segments, innermost first), the value found
# there and the type expected there. Paths are only built for a mismatch.
_Failure = tuple[list[str], Any, Any]
_Check = Callable[[Any], "_Failure | None"]
_Mode = tuple[bool, tuple[type, ...]]
"""How a check reads: numbers as JSON gives them back (``read_back``), and the record classes
checked for their class only (``opaque``)."""
_checks: dict[tuple[Any, _Mode], _Check] = {}


def _checker(tp: Any, mode: _Mode) -> _Check:
    key = (tp, mode)
    check = _checks.get(key)
    if check is None:
        check = _checks[key] = _compile(tp, mode)
    return check


def _fail(value: Any, tp: Any) -> _Failure:
    return ([], value, tp)


def _compile(tp: Any, mode: _Mode) -> _Check:
    if tp is Any or tp is object:
        return _any_checker(mode)
    if tp is None or tp is type(None):
        return lambda v: None if v is None else _fail(v, tp)
    if tp is int or tp is float:
        return lambda v: None if type(v) is int or _number_fits(v, tp, mode[0]) else _fail(v, tp)
    if tp is str or tp is bool:
        return lambda v: None if type(v) is tp else _fail(v, tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is None:
        if not isinstance(tp, type):
            return lambda v: None  # a type variable or a name that did not resolve
        if _checked(tp):
            return _record_checker(tp, mode)
        if issubclass(tp, Mapping):  # a FrozenDict field: any mapping (what a run is given, frozen or not)
            return lambda v: None if isinstance(v, Mapping) else _fail(v, tp)
        any_check = _any_checker(mode)
        return lambda v: any_check(v) if isinstance(v, tp) else _fail(v, tp)
    if origin is ClassVar or origin is typing.Final:
        return _checker(args[0], mode) if args else _any_checker(mode)
    if origin is typing.Literal:
        allowed = {(type(a), a) for a in args}
        return lambda v: None if (type(v), v) in allowed else _fail(v, tp)
    if origin is typing.Union or origin is types.UnionType:
        return _union_checker(tp, args, mode)
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return _fixed_tuple_checker(tp, args, mode)
    if origin is tuple or (isinstance(origin, type) and issubclass(origin, (Sequence, Set))):
        return _items_checker(tp, origin, args[0] if args else Any, mode)
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return _mapping_checker(tp, args if len(args) == 2 else (Any, Any), mode)
    if origin is Callable:
        return lambda v: None if callable(v) else _fail(v, tp)
    if isinstance(origin, type):
        return lambda v: None if isinstance(v, origin) else _fail(v, tp)
    return lambda v: None


def _any_checker(mode: _Mode) -> _Check:
    def check(value: Any) -> _Failure | None:
        kind = type(value)
        if kind in _SCALARS or not _checked(kind):
            return None
        return _checker(kind, mode)(value)
    return check


_SCALARS: Final = frozenset({str, int, float, bool, type(None), tuple})


def _record_checker(cls: type, mode: _Mode) -> _Check:
    if mode[1] and issubclass(cls, mode[1]):
        return lambda v: None if isinstance(v, cls) else _fail(v, cls)
    return _fields_checker(cls, mode)


def _fields_checker(cls: type, mode: _Mode) -> _Check:
    fields: list[tuple[str, _Check]] | None = None  # found at the first check (types may refer to themselves)

    def check(value: Any) -> _Failure | None:
        nonlocal fields
        if not isinstance(value, cls):
            return _fail(value, cls)
        if fields is None:
            hints = _hints(cls) or {}
            fields = [(name, _checker(hints.get(name, Any), mode)) for name in record_fields(cls)]
        for name, field_check in fields:
            failure = field_check(getattr(value, name))
            if failure is not None:
                failure[0].append("." + name)
                return failure
        return None
    return check


def _union_checker(tp: Any, args: tuple[Any, ...], mode: _Mode) -> _Check:
    members: list[tuple[Callable[[Any], bool], _Check]] | None = None  # found at the first check
    optional = type(None) in args
    classes = tuple(a for a in args if a is not type(None))
    if mode[1] and all(isinstance(a, type) and _checked(a) and issubclass(a, mode[1]) for a in classes):
        return lambda v: None if isinstance(v, classes) or (v is None and optional) else _fail(v, tp)

    def check(value: Any) -> _Failure | None:
        nonlocal members
        if value is None and optional:
            return None
        if members is None:
            members = [(_shallow(a, mode), _checker(a, mode)) for a in args]
        first: _Failure | None = None
        for fits, member_check in members:
            if fits(value):
                failure = member_check(value)
                if failure is None:
                    return None
                first = first or failure
        return first or _fail(value, tp)
    return check


def _shallow(tp: Any, mode: _Mode) -> Callable[[Any], bool]:
    """Whether a value is of the kind ``tp`` names, not looking inside it (which member of a
    union to check it against)."""
    origin = typing.get_origin(tp)
    if tp is Any or tp is object or (origin is None and not isinstance(tp, type) and tp is not None):
        return lambda v: True
    if origin is None or origin is typing.Literal or origin is ClassVar:
        check = _checker(tp, mode)
        if origin is None and isinstance(tp, type) and _checked(tp):
            return lambda v: isinstance(v, tp)
        return lambda v: check(v) is None
    if origin is typing.Union or origin is types.UnionType:
        parts = [_shallow(a, mode) for a in typing.get_args(tp)]
        return lambda v: any(p(v) for p in parts)
    if origin is Callable:
        return callable
    if origin is tuple:
        return lambda v: isinstance(v, tuple)
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return lambda v: isinstance(v, Mapping)
    if isinstance(origin, type) and issubclass(origin, (Sequence, Set)):
        return lambda v: _container_fits(v, origin)
    return lambda v: not isinstance(origin, type) or isinstance(v, origin)


def _fixed_tuple_checker(tp: Any, args: tuple[Any, ...], mode: _Mode) -> _Check:
    if args == ((),):
        args = ()
    checks = [_checker(a, mode) for a in args]

    def check(value: Any) -> _Failure | None:
        if not isinstance(value, tuple) or len(value) != len(checks):
            return _fail(value, tp)
        for i, (item, item_check) in enumerate(zip(value, checks)):
            failure = item_check(item)
            if failure is not None:
                failure[0].append(f"[{i}]")
                return failure
        return None
    return check


def _items_checker(tp: Any, origin: type, item_type: Any, mode: _Mode) -> _Check:
    item_check = _checker(item_type, mode)
    check_items = item_type is not Any

    def check(value: Any) -> _Failure | None:
        if not _container_fits(value, origin):
            return _fail(value, tp)
        for i, item in enumerate(value):
            if check_items or type(item) not in _SCALARS:
                failure = item_check(item)
                if failure is not None:
                    failure[0].append(_ITEM if isinstance(value, Set) else f"[{i}]")
                    return failure
        return None
    return check


def _mapping_checker(tp: Any, args: tuple[Any, ...], mode: _Mode) -> _Check:
    key_check, item_check = _checker(args[0], mode), _checker(args[1], mode)

    def check(value: Any) -> _Failure | None:
        if not isinstance(value, Mapping):
            return _fail(value, tp)
        for key, item in value.items():
            failure = key_check(key) or item_check(item)
            if failure is not None:
                failure[0].append(path_key("", key))
                return failure
        return None
    return check


def _number_fits(value: Any, tp: type, loose: bool) -> bool:
    kind = type(value)
    if kind is int:
        return True
    if kind is float:
        return tp is float or loose
    if value is None:
        return loose and tp is float
    return isinstance(value, (int, float)) and not isinstance(value, bool) and (tp is float or loose
                                                                               or isinstance(value, int))


def _container_fits(value: Any, origin: type) -> bool:
    if isinstance(value, (str, bytes, bytearray, Mapping)):
        return False
    if origin in (list, tuple) or origin is Sequence:
        return isinstance(value, (list, tuple)) or (origin is Sequence and isinstance(value, Sequence))
    if origin in (set, frozenset) or origin is Set:
        return isinstance(value, (set, frozenset)) or (origin is Set and isinstance(value, Set))
    return isinstance(value, origin)


def _article(name: str) -> str:
    return f"an {name}" if name[:1].lower() in "aeio" else f"a {name}"


def kind_of(value: object) -> str:
    """How :func:`type_problem` names a value: its kind, and a scalar's value.

    >>> kind_of("x"), kind_of({}), kind_of([1, 2]), kind_of(None)
    ("a str ('x')", 'a dict (an object with no type tag)', 'a list of 2 items', 'None')
    """
    return _what(value)


def _what(value: Any) -> str:
    """``value`` as the problem names it: its kind, and a scalar's value."""
    if value is None:
        return "None"
    kind = type(value).__name__
    if isinstance(value, Mapping) and not is_record(value):
        return f"{_article(kind)} (an object with no type tag)"
    if isinstance(value, (str, int, float)):
        text = repr(value)
        return f"{_article(kind)} ({text if len(text) <= 40 else text[:37] + '...'})"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    return _article(kind)


def _expected(tp: Any) -> str:
    if tp is None or tp is type(None):
        return "None"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        if len(args) > 3:
            return "one of " + ", ".join(_bare(a) for a in args)
        names = [_expected(a) for a in args]
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is tuple or (isinstance(origin, type) and issubclass(origin, Sequence)):
        return "a list" + (f" of {_plural(args[0])}" if args and args[0] is not Any else "")
    if isinstance(origin, type) and issubclass(origin, Set):
        return "a list" + (f" of {_plural(args[0])}" if args and args[0] is not Any else "")
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return "an object"
    if origin is Callable:
        return "a callable"
    if tp is float:
        return "a number"
    if isinstance(tp, type) and issubclass(tp, Mapping):
        return "an object"
    name = getattr(tp, "__name__", None) or str(tp)
    return _article(name)


def _bare(tp: Any) -> str:
    if tp is None or tp is type(None):
        return "None"
    return tp.__name__ if isinstance(tp, type) else _expected(tp)


def _plural(tp: Any) -> str:
    if tp is str:
        return "strings"
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return "/".join(_bare(a) for a in typing.get_args(tp))
    text = _expected(tp)
    for article in ("an ", "a "):
        if text.startswith(article):
            return text[len(article):] + "s"
    return text
