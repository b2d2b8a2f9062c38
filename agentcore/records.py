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

>>> from agentcore import TextContent
>>> replace(TextContent("a"), text="b")
TextContent(text='b', text_signature=None)
>>> TextContent.type, is_record(TextContent("a")), record_fields(TextContent)
('text', True, ('text', 'text_signature'))
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

import msgspec
import msgspec.structs

__all__ = [
    "Message",
    "Record",
    "field_annotations",
    "is_record",
    "is_record_class",
    "record_fields",
    "replace",
    "required_fields",
    "set_field",
]

_T = TypeVar("_T")


class _RecordMeta(msgspec.StructMeta):
    """Makes the struct's tag its ``type`` (records) or ``role`` (messages) class attribute."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any) -> Any:
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        tag = cls.__struct_config__.tag
        attribute = getattr(cls, "__tag_attribute__", "type")
        if isinstance(tag, str) and attribute not in namespace:
            setattr(cls, attribute, tag)
        return cls


class Record(msgspec.Struct, frozen=True, tag_field="type", tag=True, gc=False, metaclass=_RecordMeta):
    """A frozen record; its JSON object carries its tag as ``type``."""

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
            written[name] = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return {name: written.get(name, "Any") for name in record_fields(cls)}


def replace(record: _T, /, **changes: Any) -> _T:
    """A copy of ``record`` (a record or a dataclass) with ``changes`` to its fields."""
    if isinstance(record, msgspec.Struct):
        return msgspec.structs.replace(record, **changes)
    return dataclasses.replace(record, **changes)  # type: ignore[type-var]


def set_field(record: Any, name: str, value: Any) -> None:
    """Set a field of a frozen record while it is being built (``__post_init__`` only)."""
    msgspec.structs.force_setattr(record, name, value)
