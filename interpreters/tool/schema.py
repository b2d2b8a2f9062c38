"""JSON schemas from type hints, and the converters that turn validated JSON arguments back
into the annotated Python types (draft 2020-12 style).

:class:`SchemaBuilder` handles str, int, float, bool, ``None``, Optional and unions, list,
tuple, set, dict, Literal, Enum, TypedDict, dataclasses, NewType and ``Annotated[X, "text"]``,
nested in any way; what it cannot represent is a ``TypeError`` naming the function, the
parameter and the type, at decoration time.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from agentcore.frozen import thaw

__all__ = ["Converter", "SchemaBuilder", "default_json", "is_union", "none_or"]


Converter = Callable[[Any, str], Any]


def is_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin is typing.Union or origin is types.UnionType


def _type_name(tp: Any) -> str:
    """A short, readable name for an annotation (``list[Point] | None``)."""
    if tp is None or tp is type(None):
        return "None"
    if tp is Ellipsis:
        return "..."
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if is_union(tp):
        return " | ".join(_type_name(a) for a in args)
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is not None and args:
        return f"{_type_name(origin)}[{', '.join(_type_name(a) for a in args)}]"
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _enum_schema(values: Sequence[Any]) -> dict[str, Any]:
    kinds = {_json_type(v) for v in values}
    schema: dict[str, Any] = {}
    if len(kinds) == 1:
        (kind,) = kinds
        if kind is not None and kind != "null":
            schema["type"] = kind
    schema["enum"] = list(values)
    return schema


def _fail(path: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"argument {path}: expected {expected}, got {value!r}")


def _same_literal(value: Any, allowed: Any) -> bool:
    return type(value) is type(allowed) and value == allowed


class SchemaBuilder:
    """Builds (schema, converter) pairs for annotations, raising ``TypeError`` on what it cannot
    represent. ``what`` in messages names the parameter being built."""

    def __init__(self, where: str, localns: dict[str, Any] | None) -> None:
        self.where = where
        self.localns = localns
        self.stack: list[Any] = []

    def unsupported(self, what: str, tp: Any, detail: str = "") -> TypeError:
        tail = f" ({detail})" if detail else ""
        return TypeError(
            f"{self.where}: {what} has an unsupported type annotation: {_type_name(tp)}{tail}"
        )

    def build(self, tp: Any, what: str) -> tuple[dict[str, Any], Converter]:
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)

        if origin is typing.Annotated:
            schema, convert = self.build(args[0], what)
            for meta in args[1:]:
                if isinstance(meta, str):
                    schema["description"] = meta
                elif isinstance(meta, Mapping):
                    schema.update(thaw(meta))
            return schema, convert
        if origin in (typing.Required, typing.NotRequired):
            return self.build(args[0], what)
        if tp is Any or tp is object or tp is inspect.Parameter.empty:
            return {}, lambda v, path: thaw(v)
        if tp is None or tp is type(None):
            return {"type": "null"}, self._scalar(lambda v: v is None, "null")
        if hasattr(tp, "__supertype__"):  # typing.NewType
            return self.build(tp.__supertype__, what)
        if tp is bool:
            return {"type": "boolean"}, self._scalar(lambda v: isinstance(v, bool), "a boolean")
        if tp is int:
            return {"type": "integer"}, _to_int
        if tp is float:
            return {"type": "number"}, _to_float
        if tp is str:
            return {"type": "string"}, self._scalar(lambda v: isinstance(v, str), "a string")
        if is_union(tp):
            return self._union(tp, args, what)
        if origin is Literal:
            return self._literal(tp, args, what)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return self._enum(tp, what)
        if isinstance(tp, type) and typing.is_typeddict(tp):
            return self._guarded(tp, what, self._typeddict)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self._guarded(tp, what, self._dataclass)
        container = origin if origin is not None else tp
        if container in (list, Sequence, Iterable, typing.Sequence, typing.Iterable):
            return self._array(tp, args, what, list, "a list")
        if container in (set, frozenset, typing.AbstractSet):
            kind: Callable[[Iterable[Any]], Any] = frozenset if container is frozenset else set
            schema, convert = self._array(tp, args, what, kind, "a list of unique items")
            schema["uniqueItems"] = True
            return schema, convert
        if container is tuple:
            return self._tuple(tp, args, what)
        if container in (dict, Mapping, typing.Mapping):
            return self._dict(tp, args, what)
        raise self.unsupported(what, tp)

    # -- scalars

    @staticmethod
    def _scalar(check: Callable[[Any], bool], expected: str) -> Converter:
        def convert(value: Any, path: str) -> Any:
            if not check(value):
                raise _fail(path, expected, value)
            return value

        return convert

    # -- combinations

    def _union(self, tp: Any, args: tuple[Any, ...], what: str) -> tuple[dict[str, Any], Converter]:
        members = [self.build(a, what) for a in args]
        schema: dict[str, Any] = {"anyOf": [s for s, _ in members]}
        converters = [c for _, c in members]
        nullable = type(None) in args
        expected = _type_name(tp)

        def convert(value: Any, path: str) -> Any:
            if value is None and nullable:
                return None
            for c in converters:
                try:
                    return c(value, path)
                except (TypeError, ValueError):
                    continue
            raise _fail(path, expected, value)

        return schema, convert

    def _literal(self, tp: Any, args: tuple[Any, ...], what: str) -> tuple[dict[str, Any], Converter]:
        values: list[Any] = []
        for a in args:
            if isinstance(a, enum.Enum):
                a = a.value
            if _json_type(a) is None:
                raise self.unsupported(what, tp, f"literal {a!r} is not a JSON value")
            values.append(a)
        allowed = tuple(args)
        expected = "one of " + ", ".join(repr(v) for v in values)

        def convert(value: Any, path: str) -> Any:
            for a, v in zip(allowed, values):
                if _same_literal(value, v) or (isinstance(v, float) and _same_literal(value, int(v))):
                    return a
            raise _fail(path, expected, value)

        return _enum_schema(values), convert

    def _enum(self, cls: type[enum.Enum], what: str) -> tuple[dict[str, Any], Converter]:
        values = [m.value for m in cls]
        for v in values:
            if _json_type(v) is None:
                raise self.unsupported(what, cls, f"member value {v!r} is not a JSON value")
        expected = f"{cls.__name__} (one of " + ", ".join(repr(v) for v in values) + ")"

        def convert(value: Any, path: str) -> Any:
            if isinstance(value, cls):
                return value
            for member in cls:
                if _same_literal(value, member.value):
                    return member
            raise _fail(path, expected, value)

        return _enum_schema(values), convert

    def _array(
        self,
        tp: Any,
        args: tuple[Any, ...],
        what: str,
        kind: Callable[[Iterable[Any]], Any],
        expected: str,
    ) -> tuple[dict[str, Any], Converter]:
        schema: dict[str, Any] = {"type": "array"}
        if args:
            item_schema, item = self.build(args[0], what)
            schema["items"] = item_schema
        else:
            item = _plain_item

        def convert(value: Any, path: str) -> Any:
            if not isinstance(value, (list, tuple)):
                raise _fail(path, expected, value)
            return kind(item(v, f"{path}[{i}]") for i, v in enumerate(value))

        return schema, convert

    def _tuple(self, tp: Any, args: tuple[Any, ...], what: str) -> tuple[dict[str, Any], Converter]:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return self._array(tp, args[:1], what, tuple, "a list")
        if args == ((),):  # tuple[()]
            args = ()
        members = [self.build(a, what) for a in args]
        converters = [c for _, c in members]
        n = len(members)
        schema: dict[str, Any] = {
            "type": "array",
            "prefixItems": [s for s, _ in members],
            "minItems": n,
            "maxItems": n,
        }

        def convert(value: Any, path: str) -> Any:
            if not isinstance(value, (list, tuple)) or len(value) != n:
                raise _fail(path, f"a list of {n} items", value)
            return tuple(c(v, f"{path}[{i}]") for i, (c, v) in enumerate(zip(converters, value)))

        return schema, convert

    def _dict(self, tp: Any, args: tuple[Any, ...], what: str) -> tuple[dict[str, Any], Converter]:
        schema: dict[str, Any] = {"type": "object"}
        if args:
            key, val = args
            if key is not str and key is not Any:
                raise self.unsupported(what, tp, "JSON object keys are strings")
            value_schema, item = self.build(val, what)
            schema["additionalProperties"] = value_schema
        else:
            item = _plain_item

        def convert(value: Any, path: str) -> Any:
            if not isinstance(value, Mapping):
                raise _fail(path, "an object", value)
            return {k: item(v, f"{path}.{k}") for k, v in value.items()}

        return schema, convert

    # -- records

    def _guarded(
        self,
        cls: type,
        what: str,
        build: Callable[[type, str], tuple[dict[str, Any], Converter]],
    ) -> tuple[dict[str, Any], Converter]:
        if cls in self.stack:
            raise self.unsupported(what, cls, "recursive types are not supported")
        self.stack.append(cls)
        try:
            return build(cls, what)
        finally:
            self.stack.pop()

    def _record_hints(self, cls: type, what: str) -> dict[str, Any]:
        try:
            return typing.get_type_hints(cls, localns=self.localns, include_extras=True)
        except Exception as exc:
            raise TypeError(
                f"{self.where}: {what}: cannot resolve the type hints of {cls.__qualname__}: {exc}"
            ) from exc

    def _typeddict(self, cls: type, what: str) -> tuple[dict[str, Any], Converter]:
        hints = self._record_hints(cls, what)
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset(hints))
        properties: dict[str, Any] = {}
        required: list[str] = []
        converters: dict[str, Converter] = {}
        for key, hint in hints.items():
            field_schema, conv = self.build(hint, f"{what} (key {key!r} of {cls.__qualname__})")
            properties[key] = field_schema
            converters[key] = conv
            if _is_required_key(hint, key in required_keys):
                required.append(key)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        name = cls.__qualname__

        def convert(value: Any, path: str) -> Any:
            if not isinstance(value, Mapping):
                raise _fail(path, f"an object ({name})", value)
            _check_keys(value, converters, required, path)
            return {k: converters[k](v, f"{path}.{k}") for k, v in value.items()}

        return schema, convert

    def _dataclass(self, cls: type, what: str) -> tuple[dict[str, Any], Converter]:
        hints = self._record_hints(cls, what)
        properties: dict[str, Any] = {}
        required: list[str] = []
        converters: dict[str, Converter] = {}
        for f in dataclasses.fields(cls):
            if not f.init:
                continue
            field_schema, conv = self.build(
                hints.get(f.name, Any), f"{what} (field {f.name!r} of {cls.__qualname__})"
            )
            description = f.metadata.get("description")
            if isinstance(description, str) and "description" not in field_schema:
                field_schema["description"] = description
            if f.default is not dataclasses.MISSING:
                ok, encoded = default_json(f.default)
                if ok:
                    field_schema["default"] = encoded
                if f.default is None:
                    conv = none_or(conv)
            elif f.default_factory is dataclasses.MISSING:
                required.append(f.name)
            properties[f.name] = field_schema
            converters[f.name] = conv
        schema: dict[str, Any] = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        name = cls.__qualname__

        def convert(value: Any, path: str) -> Any:
            if isinstance(value, cls):
                return value
            if not isinstance(value, Mapping):
                raise _fail(path, f"an object ({name})", value)
            _check_keys(value, converters, required, path)
            return cls(**{k: converters[k](v, f"{path}.{k}") for k, v in value.items()})

        return schema, convert


def _is_required_key(hint: Any, by_totality: bool) -> bool:
    """``Required[...]``/``NotRequired[...]`` win over the TypedDict's totality (checked by hand:
    with postponed annotations, Python 3.11 cannot see them when it builds the class)."""
    while True:
        origin = typing.get_origin(hint)
        if origin is typing.Required:
            return True
        if origin is typing.NotRequired:
            return False
        if origin is typing.Annotated:
            hint = typing.get_args(hint)[0]
            continue
        return by_totality


def _check_keys(
    value: Mapping[str, Any], known: Mapping[str, Any], required: Sequence[str], path: str
) -> None:
    missing = [k for k in required if k not in value]
    if missing:
        raise TypeError(f"argument {path}: missing key(s) {', '.join(map(repr, missing))}")
    extra = [k for k in value if k not in known]
    if extra:
        raise TypeError(f"argument {path}: unexpected key(s) {', '.join(map(repr, extra))}")


def _plain_item(value: Any, path: str) -> Any:
    return thaw(value)


def _to_int(value: Any, path: str) -> int:
    if isinstance(value, bool):
        raise _fail(path, "an integer", value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise _fail(path, "an integer", value)


def _to_float(value: Any, path: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise _fail(path, "a number", value)


def none_or(convert: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """A parameter whose default is ``None`` accepts ``None`` whatever its annotation says."""

    def conv(value: Any, path: str) -> Any:
        return None if value is None else convert(value, path)

    return conv


def default_json(value: Any) -> tuple[bool, Any]:
    """The JSON form of a parameter default, if it has one."""
    if value is None or isinstance(value, (str, bool, int)):
        return True, value
    if isinstance(value, float):
        return math.isfinite(value), value
    if isinstance(value, enum.Enum):
        return default_json(value.value)
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            ok, enc = default_json(item)
            if not ok:
                return False, None
            out.append(enc)
        return True, out
    if isinstance(value, Mapping):
        obj = {}
        for k, v in value.items():
            ok, enc = default_json(v)
            if not ok or not isinstance(k, str):
                return False, None
            obj[k] = enc
        return True, obj
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return default_json({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return False, None
