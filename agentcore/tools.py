"""Tools: the user's declaration (:class:`AgentTool`), the part the core keeps (:class:`ToolSpec`)
and argument validation.

The core never holds a callable: a run's state keeps one :class:`ToolSpec` per tool (name,
description, JSON schema, execution mode, whether ``prepare_arguments`` exists). Interpreters keep
the :class:`AgentTool` objects and look them up by name when the core asks for a tool to run.

Validation compiles each schema once (``fastjsonschema`` generates a Python function per schema,
10-100x faster than interpreting it) and uses ``jsonschema`` only on the failure path, because it
reports every failing path with a readable message.

>>> spec = ToolSpec("add", parameters={"type": "object",
...     "properties": {"a": {"type": "integer"}}, "required": ["a"]})
>>> validate_arguments(spec, {"a": 1}).unwrap()
FrozenDict({'a': 1})
>>> print(validate_arguments(spec, {"a": "x"}).failure())
Validation failed for tool "add":
  - a: 'x' is not of type 'integer'
<BLANKLINE>
Received arguments:
{
  "a": "x"
}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import msgspec
from returns.result import Failure, Result, Success

from .frozen import JSON, MAX_JSON_DEPTH, FrozenDict, depth_exceeds, freeze, thaw
from .messages import ImageContent, TextContent, Usage
from .records import Record, set_field

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "PendingCall",
    "ToolPolicy",
    "ToolExecutionMode",
    "ToolSpec",
    "check_tools",
    "error_result",
    "policy_of",
    "spec_of",
    "tool_policies",
    "validate_arguments",
]

ToolExecutionMode: TypeAlias = Literal["sequential", "parallel"]


class AgentToolResult(Record, frozen=True):
    """What a tool returns: content for the model, ``details`` for the application.

    ``terminate=True`` asks the loop to stop after this batch (only honoured when every result
    in the batch asks for it). ``usage`` reports model use inside the tool. ``is_error=True``
    makes it an error result the model sees (its content is the error; ``details`` are kept),
    as a tool that raises gives, without raising (an MCP server's ``isError`` result, say).
    """

    content: tuple[TextContent | ImageContent, ...] = ()
    details: JSON = None
    usage: Usage | None = None
    added_tool_names: tuple[str, ...] | None = None
    terminate: bool | None = None
    is_error: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.content, str):
            set_field(self, "content", (TextContent(self.content),))
        elif not isinstance(self.content, tuple):
            set_field(self, "content", tuple(self.content))
        set_field(self, "details", freeze(self.details))
        if self.added_tool_names is not None and not isinstance(self.added_tool_names, tuple):
            set_field(self, "added_tool_names", tuple(self.added_tool_names))


def error_result(text: str, terminate: bool | None = None) -> AgentToolResult:
    """A tool result that reports an error as text (``details`` is an empty object)."""
    return AgentToolResult((TextContent(text),), FrozenDict(), terminate=terminate)


class ToolSpec(Record, frozen=True):
    """What the core knows of a tool: enough to describe it to a model and check its arguments."""

    name: str
    description: str = ""
    parameters: JSON = msgspec.field(default_factory=lambda: FrozenDict({"type": "object"}))
    label: str = ""
    execution_mode: ToolExecutionMode | None = None
    has_prepare_arguments: bool = False

    def __post_init__(self) -> None:
        set_field(self, "parameters", freeze(self.parameters))


@dataclass(frozen=True, slots=True, eq=False)
class AgentTool:
    """A tool the agent may call.

    ``execute(tool_call_id, args, signal, on_update)`` returns an :class:`AgentToolResult` (or an
    awaitable of one under the asyncio interpreter); raising reports an error result with the
    exception text. ``prepare_arguments(args)`` may rewrite raw arguments before validation.
    ``timeout_ms`` limits one call (``None``: the config's ``tool_timeout_ms``; ``0``: no limit).

    ``requires_approval`` (``True``, or a function of the validated arguments returning whether
    this call needs one) makes each call wait for an approval: the run suspends (see
    :class:`PendingCall`). ``deferred=True`` declares a tool whose result comes from outside the
    run (a person, a long job): its calls are never executed here, the run suspends until the
    result is supplied; ``execute`` is then never called.
    """

    name: str
    label: str
    description: str
    parameters: JSON
    execute: Callable[..., Any]
    prepare_arguments: Callable[[Any], Any] | None = None
    execution_mode: ToolExecutionMode | None = None
    timeout_ms: int | None = None
    requires_approval: bool | Callable[[Any], bool] = False
    deferred: bool = False

    def __post_init__(self) -> None:
        if self.timeout_ms is not None and (type(self.timeout_ms) is not int or self.timeout_ms < 0):
            raise ValueError(f"tool {self.name!r}: timeout_ms must be None or an integer >= 0, "
                             f"not {self.timeout_ms!r}")
        if type(self.requires_approval) is not bool and not callable(self.requires_approval):
            raise TypeError(f"tool {self.name!r}: requires_approval must be a bool or a function of the "
                            f"arguments returning one, not {self.requires_approval!r}")

    @property
    def spec(self) -> ToolSpec:
        return spec_of(self)


ToolPolicy: TypeAlias = Literal["approval", "check_approval", "deferred"]
"""What a call of a tool waits for before it runs: an approval (``requires_approval=True``), the
tool's ``requires_approval`` function's say (``check_approval``), or a result from outside
(``deferred``). Tools without a policy run at once."""


def policy_of(tool: AgentTool | ToolSpec) -> ToolPolicy | None:
    """The :data:`ToolPolicy` of a tool (a bare spec has none)."""
    if not isinstance(tool, AgentTool):
        return None
    if tool.deferred:
        return "deferred"
    if tool.requires_approval is True:
        return "approval"
    if callable(tool.requires_approval):
        return "check_approval"
    return None


def tool_policies(tools: Sequence[AgentTool | ToolSpec]) -> FrozenDict:
    """Tool name → :data:`ToolPolicy`, for the tools that have one (first declaration wins).

    >>> t = AgentTool("rm", "rm", "", {"type": "object"}, print, requires_approval=True)
    >>> tool_policies([t, ToolSpec("ls")])
    FrozenDict({'rm': 'approval'})
    """
    found: dict[str, ToolPolicy] = {}
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            continue
        seen.add(tool.name)
        policy = policy_of(tool)
        if policy is not None:
            found[tool.name] = policy
    return FrozenDict(found)


class PendingCall(Record, frozen=True):
    """A tool call the run waits on to go on: a suspended run holds one per call.

    ``arguments`` are the validated arguments; ``reason`` says why it waits; ``waits_for`` is
    ``"approval"`` (answer it with ``Approve`` or ``Deny``) or ``"result"`` (a deferred tool:
    ``ToolOutput`` or ``Deny``).
    """

    tool_call_id: str
    tool_name: str
    arguments: JSON
    reason: str
    waits_for: Literal["approval", "result"]


def check_tools(tools: Sequence[Any], where: str) -> None:
    """Refuse what is not a tool, naming it: a plain function needs the ``@tool`` decorator.

    >>> def add(a: int, b: int) -> int: return a + b
    >>> check_tools((add,), "AgentContext tools")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: AgentContext tools[0] is the plain function 'add', not an AgentTool: decorate it with @tool
    (from interpreters import tool)
    """
    for i, item in enumerate(tools):
        if isinstance(item, (AgentTool, ToolSpec)):
            continue
        if callable(item):
            name = getattr(item, "__name__", type(item).__name__)
            raise TypeError(f"{where}[{i}] is the plain function {name!r}, not an AgentTool: decorate it "
                            "with @tool (from interpreters import tool)")
        raise TypeError(f"{where}[{i}] is a {type(item).__name__} ({item!r:.80}), not an AgentTool or ToolSpec")


def spec_of(tool: AgentTool | ToolSpec) -> ToolSpec:
    """The :class:`ToolSpec` of a tool (a spec is returned as it is)."""
    if isinstance(tool, ToolSpec):
        return tool
    return ToolSpec(
        tool.name,
        tool.description,
        tool.parameters,
        tool.label,
        tool.execution_mode,
        tool.prepare_arguments is not None,
    )


# --------------------------------------------------------------------------- validation

_Compiled: TypeAlias = "tuple[Callable[[Any], Any], bool]"
_by_identity: dict[int, tuple[Any, _Compiled]] = {}
_by_text: dict[str, _Compiled] = {}
_CACHE_LIMIT: Final = 512


def _has_defaults(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        return "default" in schema or any(_has_defaults(v) for v in schema.values())
    if isinstance(schema, (list, tuple)):
        return any(_has_defaults(v) for v in schema)
    return False


def _no_remote_refs(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri!r} is not followed: tool schemas must be self-contained")


_REMOTE: Final = {scheme: _no_remote_refs for scheme in ("http", "https", "file", "ftp", "data", "")}


def _validator(schema: Any) -> _Compiled:
    """The compiled validator of ``schema`` and whether it fills in defaults.

    Looked up by the schema object first (the same frozen schema comes back every call), then by
    its canonical JSON text (so equal schemas share one compilation, and ``1`` and ``true`` stay
    apart). Compiled once; remote ``$ref`` s are never fetched."""
    hit = _by_identity.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    text = json.dumps(thaw(schema), sort_keys=True)
    entry = _by_text.get(text)
    if entry is None:
        import fastjsonschema  # lazy: only runs when a tool is first validated

        entry = (fastjsonschema.compile(thaw(schema), handlers=_REMOTE, use_default=True), _has_defaults(schema))
        if len(_by_text) >= _CACHE_LIMIT:
            _by_text.clear()
        _by_text[text] = entry
    if len(_by_identity) >= _CACHE_LIMIT:
        _by_identity.clear()
    _by_identity[id(schema)] = (schema, entry)
    return entry


def _describe_errors(schema: Any, args: Any) -> list[str]:
    import jsonschema  # failure path only

    validator_cls = jsonschema.validators.validator_for(thaw(schema), jsonschema.Draft202012Validator)
    checker = validator_cls(thaw(schema), format_checker=validator_cls.FORMAT_CHECKER)
    errors = sorted(checker.iter_errors(args), key=lambda e: list(map(str, e.path)))
    lines = []
    for err in errors:
        path = "/".join(str(p) for p in err.absolute_path) or "root"
        lines.append(f"  - {path}: {err.message}")
    return lines


def validate_arguments(spec: ToolSpec, arguments: Any) -> Result[FrozenDict, str]:
    """Check ``arguments`` against the tool's schema.

    Success holds the validated arguments (with schema defaults filled in), frozen. Failure holds
    the error text the model will see: the tool, each failing path with its message, and the
    arguments received. Arguments nested more than ``MAX_JSON_DEPTH`` (100) levels deep fail
    without being looked at further (validators and the error text recurse into them).
    """
    import fastjsonschema

    if depth_exceeds(arguments):
        return Failure(f'Validation failed for tool "{spec.name}": its arguments are nested more '
                       f"than {MAX_JSON_DEPTH} levels deep")
    plain = thaw(arguments)
    try:
        validate, fills_defaults = _validator(spec.parameters)
    except Exception as exc:  # a schema fastjsonschema (or Python's re) cannot compile
        return Failure(f'Tool "{spec.name}" has an invalid parameters schema: {type(exc).__name__}: {exc}')
    try:
        validated = validate(plain)
    except fastjsonschema.JsonSchemaValueException as exc:
        try:
            lines = _describe_errors(spec.parameters, plain)
        except Exception:
            lines = []
        if not lines:  # jsonschema saw nothing wrong (e.g. a format it does not check)
            path = "/".join(str(p) for p in exc.path[1:]) or "root"
            lines = [f"  - {path}: {exc.message}"]
        try:
            received = json.dumps(plain, indent=2, ensure_ascii=False, default=str)
        except RecursionError:  # only when already called from a very deep stack
            received = "(not shown: too deeply nested to print here)"
        return Failure(
            f'Validation failed for tool "{spec.name}":\n' + "\n".join(lines)
            + f"\n\nReceived arguments:\n{received}"
        )
    except Exception as exc:
        return Failure(f'Tool "{spec.name}" could not validate its arguments: {type(exc).__name__}: {exc}')
    if not fills_defaults:
        return Success(freeze(arguments))
    return Success(freeze(validated if validated is not None else plain))
