"""The ``@tool`` decorator: a typed Python function becomes an :class:`~agentcore.tools.AgentTool`.

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
import re
import sys
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, overload

from agentcore.messages import ImageContent, TextContent
from agentcore.tools import AgentTool, AgentToolResult, ToolExecutionMode

from .docstrings import parse_docstring
from .schema import SchemaBuilder, default_json, is_union, none_or

__all__ = ["ToolContext", "json_ready", "tool"]


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
    requires_approval: bool | Callable[[Any], bool] = False,
    deferred: bool = False,
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
    requires_approval: bool | Callable[[Any], bool] = False,
    deferred: bool = False,
) -> AgentTool | Callable[[Callable[..., Any]], AgentTool]:
    """Turn a typed function (sync or async) into an :class:`AgentTool`.

    Use it bare (``@tool``) or with options (``@tool(name=..., label=..., description=...,
    execution_mode="sequential", prepare_arguments=..., timeout_ms=...)``). ``name`` defaults
    to the function's name, ``label`` to the name, ``description`` to the docstring's first
    paragraph; ``timeout_ms`` limits one call (``None``: the config's ``tool_timeout_ms``,
    ``0``: no limit). ``requires_approval`` (``True``, or a function of the validated arguments,
    a dict, returning whether this call needs one) makes each call wait for an approval: the
    run suspends. ``deferred=True`` makes a tool whose result comes from outside the run: the
    function is never called (it declares the arguments), each call waits for a ``ToolOutput``.
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
            requires_approval=requires_approval,
            deferred=deferred,
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
    requires_approval: bool | Callable[[Any], bool] = False,
    deferred: bool = False,
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
    doc_description, doc_params = parse_docstring(inspect.getdoc(fn) or "")
    builder = SchemaBuilder(where, localns)

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
            ok, encoded = default_json(p.default)
            if ok:
                schema["default"] = encoded
            if p.default is None:
                convert = none_or(convert)
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
        requires_approval=requires_approval,
        deferred=deferred,
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
    if is_union(annotation):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(members) == 1 and members[0] is ToolContext
    return False


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
    text = json.dumps(json_ready(value), ensure_ascii=False, default=str)
    return AgentToolResult((TextContent(text),), details=value)


def json_ready(value: Any) -> Any:
    """A JSON-ready copy of a return value (dataclasses, enums, sets, frozen JSON...)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, enum.Enum):
        return json_ready(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_ready(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        items = [json_ready(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value
