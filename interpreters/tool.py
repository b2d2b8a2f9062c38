"""``@tool``: a typed Python function becomes an :class:`~agentcore.tools.AgentTool`.

The decorator reads the function once, at decoration time, and builds three things from it:

* the JSON schema of its parameters (draft 2020-12 style) from the type hints,
* the descriptions, from the docstring (first paragraph for the tool; a Google-style ``Args:``
  section, reST ``:param x:`` fields or a numpy-style ``Parameters`` section for the
  parameters; ``Annotated[X, "text"]`` wins over the docstring),
* a converter per parameter, which turns the validated JSON arguments back into the annotated
  Python types (dataclasses, TypedDicts, enums, tuples, sets, nested in any way).

Everything that can go wrong with an annotation goes wrong at decoration time, as a
``TypeError`` naming the function, the parameter and the type. At call time the generated
``execute(tool_call_id, args, signal, on_update)`` only converts and calls.

Some parameters are not arguments the model gives but things the interpreter hands over; they
are injected and left out of the schema: a parameter annotated :class:`ToolContext`, and
parameters named ``tool_call_id``, ``signal`` or ``on_update``.

What the function returns becomes the result's content: an :class:`AgentToolResult` is kept as
it is; a string becomes one text block; a text or image block, or a list of them, is the
content; anything else is sent as JSON text and kept, as it is, in ``details``.

>>> @tool
... def add(a: int, b: int = 1) -> int:
...     '''Add two integers.
...
...     Args:
...         a: The first addend.
...         b: The second addend.
...     '''
...     return a + b
>>> add.name, add.description
('add', 'Add two integers.')
>>> add.parameters["properties"]["b"]
{'type': 'integer', 'description': 'The second addend.', 'default': 1}
>>> add.execute("call_1", {"a": 2, "b": 3}, None, None).content[0].text
'5'
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import math
import re
import sys
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from agentcore.frozen import thaw
from agentcore.messages import ImageContent, TextContent
from agentcore.tools import AgentTool, AgentToolResult, ToolExecutionMode

__all__ = ["tool", "ToolContext"]

F = TypeVar("F", bound=Callable[..., Any])


def _no_update(partial: Any) -> None:
    """The ``on_update`` handed to a tool when the interpreter gave none."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What the interpreter hands a running tool: its call id, the abort signal (an object with
    a boolean ``.aborted``, or ``None``) and ``on_update(partial_result)`` for progress."""

    tool_call_id: str
    signal: Any = None
    on_update: Callable[[Any], None] = _no_update

    @property
    def aborted(self) -> bool:
        """Whether the run was asked to stop."""
        return bool(getattr(self.signal, "aborted", False))


# --------------------------------------------------------------------------- the decorator


@overload
def tool(fn: Callable[..., Any], /) -> AgentTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    prepare_arguments: Callable[[Any], Any] | None = None,
    timeout_ms: int | None = None,
) -> Callable[[Callable[..., Any]], AgentTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    prepare_arguments: Callable[[Any], Any] | None = None,
    timeout_ms: int | None = None,
) -> AgentTool | Callable[[Callable[..., Any]], AgentTool]:
    """Turn a typed function (sync or async) into an :class:`AgentTool`.

    Use it bare (``@tool``) or with options (``@tool(name=..., label=..., description=...,
    execution_mode="sequential", prepare_arguments=..., timeout_ms=...)``). ``name`` defaults
    to the function's name, ``label`` to the name, ``description`` to the docstring's first
    paragraph; ``timeout_ms`` limits one call (``None``: the config's ``tool_timeout_ms``,
    ``0``: no limit).
    """
    # The scope that applies the decorator: lets hints name classes local to a function.
    caller = sys._getframe(1)
    localns = dict(caller.f_locals) if caller.f_locals is not caller.f_globals else None

    def decorate(f: Callable[..., Any]) -> AgentTool:
        if execution_mode not in (None, "sequential", "parallel"):
            raise ValueError(
                f"execution_mode must be 'sequential', 'parallel' or None, not {execution_mode!r}"
            )
        return _make_tool(
            f,
            name=name,
            label=label,
            description=description,
            execution_mode=execution_mode,
            prepare_arguments=prepare_arguments,
            timeout_ms=timeout_ms,
            localns=localns,
        )

    if fn is not None:
        return decorate(fn)
    return decorate


# --------------------------------------------------------------------------- building the tool

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
_INJECTED_NAMES = frozenset({"tool_call_id", "signal", "on_update"})


@dataclass(frozen=True, slots=True)
class _Param:
    """How one parameter of the function is filled."""

    name: str
    kind: Literal["arg", "context", "tool_call_id", "signal", "on_update"]
    positional: bool
    required: bool = True
    default: Any = None
    convert: Callable[[Any, str], Any] | None = None


def _make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None,
    label: str | None,
    description: str | None,
    execution_mode: ToolExecutionMode | None,
    prepare_arguments: Callable[[Any], Any] | None,
    localns: dict[str, Any] | None,
    timeout_ms: int | None = None,
) -> AgentTool:
    if not callable(fn):
        raise TypeError(f"@tool expects a function, got {fn!r}")
    tool_name = name if name is not None else getattr(fn, "__name__", None)
    if not isinstance(tool_name, str) or not _NAME_RE.match(tool_name):
        raise ValueError(
            f"@tool: tool name {tool_name!r} is not valid; give name=... made of letters, "
            "digits, '_' and '-'"
        )
    where = f"@tool {tool_name}"
    signature = inspect.signature(fn)
    hints = _hints(fn, localns, where)
    doc_description, doc_params = _parse_docstring(inspect.getdoc(fn) or "")
    builder = _SchemaBuilder(where, localns)

    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[_Param] = []
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"{where}: parameter {p.name!r}: *args and **kwargs are not supported")
        positional = p.kind is p.POSITIONAL_ONLY
        annotation = hints.get(p.name, Any)
        if _is_context_type(annotation):
            params.append(_Param(p.name, "context", positional))
            continue
        if p.name in _INJECTED_NAMES:
            kind: Literal["tool_call_id", "signal", "on_update"] = p.name  # type: ignore[assignment]
            params.append(_Param(p.name, kind, positional))
            continue
        schema, convert = builder.build(annotation, f"parameter {p.name!r}")
        if "description" not in schema and p.name in doc_params:
            schema["description"] = doc_params[p.name]
        has_default = p.default is not p.empty
        if has_default:
            ok, encoded = _default_json(p.default)
            if ok:
                schema["default"] = encoded
            if p.default is None:
                convert = _none_or(convert)
        else:
            required.append(p.name)
        properties[p.name] = schema
        params.append(
            _Param(p.name, "arg", positional, not has_default,
                   p.default if has_default else None, convert)
        )

    parameters: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    execute = _make_execute(fn, tuple(params), where)
    return AgentTool(
        name=tool_name,
        label=label if label is not None else tool_name,
        description=description if description is not None else doc_description,
        parameters=parameters,
        execute=execute,
        prepare_arguments=prepare_arguments,
        execution_mode=execution_mode,
        timeout_ms=timeout_ms,
    )


def _hints(fn: Callable[..., Any], localns: dict[str, Any] | None, where: str) -> dict[str, Any]:
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target)) and callable(target):
        target = type(target).__call__
    try:
        return typing.get_type_hints(target, localns=localns, include_extras=True)
    except Exception as exc:  # NameError for an unresolvable forward reference, mostly
        raise TypeError(f"{where}: cannot resolve the type hints: {exc}") from exc


def _is_context_type(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return _is_context_type(typing.get_args(annotation)[0])
    if _is_union(annotation):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(members) == 1 and members[0] is ToolContext
    return False


def _none_or(convert: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """A parameter whose default is ``None`` accepts ``None`` whatever its annotation says."""

    def conv(value: Any, path: str) -> Any:
        return None if value is None else convert(value, path)

    return conv


# --------------------------------------------------------------------------- execute


def _make_execute(
    fn: Callable[..., Any], params: tuple[_Param, ...], where: str
) -> Callable[..., Any]:
    known = frozenset(p.name for p in params if p.kind == "arg")

    def execute(
        tool_call_id: str,
        args: Mapping[str, Any] | None = None,
        signal: Any = None,
        on_update: Callable[[Any], None] | None = None,
    ) -> Any:
        """Convert the JSON ``args`` to the annotated types and call the function. Returns an
        :class:`AgentToolResult`, or a coroutine giving one when the function is async."""
        arguments: Mapping[str, Any] = {} if args is None else args
        extra = [k for k in arguments if k not in known]
        if extra:
            raise TypeError(f"{where}: unexpected argument(s): {', '.join(map(repr, extra))}")
        update = on_update if on_update is not None else _no_update
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for p in params:
            if p.kind == "arg":
                if p.name in arguments:
                    assert p.convert is not None
                    value = p.convert(arguments[p.name], p.name)
                elif p.required:
                    raise TypeError(f"{where}: missing required argument {p.name!r}")
                elif p.positional:
                    value = p.default
                else:
                    continue
            elif p.kind == "context":
                value = ToolContext(tool_call_id, signal, update)
            elif p.kind == "tool_call_id":
                value = tool_call_id
            elif p.kind == "signal":
                value = signal
            else:
                value = update
            if p.positional:
                positional.append(value)
            else:
                keywords[p.name] = value
        result = fn(*positional, **keywords)
        if inspect.isawaitable(result):
            return _finish(result)
        return _to_result(result)

    chosen: Callable[..., Any] = execute
    if inspect.iscoroutinefunction(fn):
        async def execute_async(
            tool_call_id: str,
            args: Mapping[str, Any] | None = None,
            signal: Any = None,
            on_update: Callable[[Any], None] | None = None,
        ) -> Any:
            return await execute(tool_call_id, args, signal, on_update)

        execute_async.__doc__ = execute.__doc__
        chosen = execute_async
    chosen.__wrapped__ = fn  # type: ignore[attr-defined]
    chosen.__name__ = f"execute_{getattr(fn, '__name__', 'tool')}"
    chosen.__qualname__ = chosen.__name__
    # Interpreters may run a tool that cannot report progress in the caller's thread or task.
    chosen.reports_progress = any(p.kind in ("context", "on_update") for p in params)  # type: ignore[attr-defined]
    return chosen


async def _finish(awaitable: Awaitable[Any]) -> AgentToolResult:
    return _to_result(await awaitable)


def _is_content(value: Any) -> bool:
    return isinstance(value, (TextContent, ImageContent))


def _to_result(value: Any) -> AgentToolResult:
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, str):
        return AgentToolResult((TextContent(value),))
    if _is_content(value):
        return AgentToolResult((value,))
    if isinstance(value, (list, tuple)) and value and all(_is_content(v) for v in value):
        return AgentToolResult(tuple(value))
    text = json.dumps(_plain(value), ensure_ascii=False, default=str)
    return AgentToolResult((TextContent(text),), details=value)


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a return value (dataclasses, enums, sets, frozen JSON...)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _default_json(value: Any) -> tuple[bool, Any]:
    """The JSON form of a parameter default, if it has one."""
    if value is None or isinstance(value, (str, bool, int)):
        return True, value
    if isinstance(value, float):
        return math.isfinite(value), value
    if isinstance(value, enum.Enum):
        return _default_json(value.value)
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            ok, enc = _default_json(item)
            if not ok:
                return False, None
            out.append(enc)
        return True, out
    if isinstance(value, Mapping):
        obj = {}
        for k, v in value.items():
            ok, enc = _default_json(v)
            if not ok or not isinstance(k, str):
                return False, None
            obj[k] = enc
        return True, obj
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _default_json({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    return False, None


# --------------------------------------------------------------------------- schemas


Converter = Callable[[Any, str], Any]


def _is_union(tp: Any) -> bool:
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
    if _is_union(tp):
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


class _SchemaBuilder:
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
        if _is_union(tp):
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
                ok, encoded = _default_json(f.default)
                if ok:
                    field_schema["default"] = encoded
                if f.default is None:
                    conv = _none_or(conv)
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


# --------------------------------------------------------------------------- docstrings

_GOOGLE_ARGS = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):\s*$"
)
_GOOGLE_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(?:\s+(.*))?$")
_REST_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (first paragraph) and the parameter descriptions of a docstring.

    >>> _parse_docstring('''Search files.
    ...
    ... More text.
    ...
    ... Args:
    ...     pattern (str): A glob,
    ...         like *.py.
    ...     limit: At most this many.
    ... Returns:
    ...     The paths.
    ... ''')
    ('Search files.', {'pattern': 'A glob, like *.py.', 'limit': 'At most this many.'})
    >>> _parse_docstring(':param x: The x.\\n:type x: int')
    ('', {'x': 'The x.'})
    """
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if summary:
                break
            continue
        if _GOOGLE_SECTION.match(stripped) or stripped.startswith(":"):
            break
        if _NUMPY_RULE.match(stripped):
            summary = summary[:-1]
            break
        summary.append(stripped)
    params: dict[str, str] = {}
    _google_params(lines, params)
    _rest_params(lines, params)
    _numpy_params(lines, params)
    return " ".join(summary), params


def _google_params(lines: list[str], out: dict[str, str]) -> None:
    i = 0
    while i < len(lines):
        line = lines[i]
        if not _GOOGLE_ARGS.match(line.strip()):
            i += 1
            continue
        header_indent = _indent(line)
        entry_indent: int | None = None
        current: str | None = None
        i += 1
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if not stripped:
                i += 1
                continue
            ind = _indent(line)
            if ind <= header_indent:
                break
            if entry_indent is None:
                entry_indent = ind
            if ind <= entry_indent:
                m = _GOOGLE_ENTRY.match(stripped)
                current = m.group(1) if m else None
                if current is not None and current in out:
                    current = None  # described twice: the first one wins
                elif current is not None:
                    out[current] = (m.group(2) or "").strip() if m else ""
            elif current is not None:
                out[current] = (out[current] + " " + stripped).strip()
            i += 1


def _rest_params(lines: list[str], out: dict[str, str]) -> None:
    current: str | None = None
    current_indent = 0
    for line in lines:
        stripped = line.strip()
        m = _REST_FIELD.match(stripped)
        if m:
            current = None
            field, arg, text = m.group(1), m.group(2), m.group(3)
            if field in ("param", "parameter", "arg", "argument", "key", "keyword") and arg:
                name = arg.split()[-1]
                if name not in out:
                    out[name] = text.strip()
                    current = name
                    current_indent = _indent(line)
            continue
        if current is not None and stripped and _indent(line) > current_indent:
            out[current] = (out[current] + " " + stripped).strip()
        else:
            current = None


def _numpy_params(lines: list[str], out: dict[str, str]) -> None:
    i = 0
    while i + 1 < len(lines):
        if lines[i].strip() in ("Parameters", "Other Parameters") and _NUMPY_RULE.match(
            lines[i + 1].strip()
        ):
            base = _indent(lines[i])
            i += 2
            current: str | None = None
            while i < len(lines):
                line = lines[i]
                stripped = line.strip()
                if i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1].strip()):
                    break  # the next section's title
                if stripped and _indent(line) <= base:
                    m = _NUMPY_ENTRY.match(stripped)
                    current = m.group(1) if m else None
                    if current is not None and current in out:
                        current = None
                    elif current is not None:
                        out[current] = ""
                elif stripped and current is not None:
                    out[current] = (out[current] + " " + stripped).strip()
                i += 1
        else:
            i += 1
