"""``@tool``: schemas from type hints, descriptions from docstrings, argument conversion,
injected parameters, return values, and errors at decoration time."""

from __future__ import annotations

import asyncio
import enum
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NewType, NotRequired, Optional, Required, TypedDict

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcore.frozen import FrozenDict, freeze, thaw
from agentcore.messages import ImageContent, TextContent, Usage
from agentcore.tools import AgentTool, AgentToolResult, spec_of, validate_arguments
from interpreters.tool import ToolContext, tool

# --------------------------------------------------------------------------- types used below


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Options(TypedDict):
    depth: int
    follow: NotRequired[bool]


class Filters(TypedDict, total=False):
    pattern: Required[str]
    limit: int


@dataclass(frozen=True)
class Point:
    x: float
    y: float = 0.0


@dataclass
class Shape:
    name: str
    points: list[Point]
    color: Color = Color.RED
    tags: list[str] = field(default_factory=list)
    note: str | None = None
    weight: Annotated[float, "Weight in kg"] = 1.0
    size: int = field(default=3, metadata={"description": "Side count"})


@dataclass
class Node:
    value: int
    children: list[Node]


UserId = NewType("UserId", int)


def execute(t: AgentTool, args: Any, call_id: str = "call_1") -> AgentToolResult:
    result = t.execute(call_id, freeze(args), None, None)
    if inspect.isawaitable(result):
        result = asyncio.run(result)  # type: ignore[arg-type]
    assert isinstance(result, AgentToolResult)
    return result


def props(t: AgentTool) -> Any:
    return t.parameters["properties"]


# --------------------------------------------------------------------------- the tool record


def test_bare_decorator_builds_the_tool() -> None:
    @tool
    def add(a: int, b: int = 1) -> int:
        """Add two integers.

        The sum is exact.

        Args:
            a: The first addend.
            b: The second addend,
                defaults to one.
        """
        return a + b

    assert isinstance(add, AgentTool)
    assert add.name == "add"
    assert add.label == "add"
    assert add.description == "Add two integers."
    assert add.execution_mode is None
    assert add.prepare_arguments is None
    assert add.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend."},
            "b": {"type": "integer", "description": "The second addend, defaults to one.",
                  "default": 1},
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    assert execute(add, {"a": 2, "b": 40}) == AgentToolResult((TextContent("42"),), details=42)
    assert execute(add, {"a": 2}).content == (TextContent("3"),)


def test_decorator_with_options() -> None:
    def prepare(args: Any) -> Any:
        return args

    @tool(name="read-file", label="Read file", description="Reads a file.",
          execution_mode="sequential", prepare_arguments=prepare)
    def read(path: str) -> str:
        """Ignored docstring."""
        return path

    assert (read.name, read.label, read.description, read.execution_mode) == (
        "read-file", "Read file", "Reads a file.", "sequential")
    assert read.prepare_arguments is prepare
    assert spec_of(read).has_prepare_arguments is True
    assert read.parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    }


def test_no_parameters_and_no_docstring() -> None:
    @tool
    def now() -> str:
        return "noon"

    assert now.description == ""
    assert now.parameters == {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False,
    }
    assert execute(now, {}).content == (TextContent("noon"),)
    assert execute(now, None).content == (TextContent("noon"),)  # type: ignore[arg-type]


def test_execute_keeps_the_original_function() -> None:
    def f(x: int) -> int:
        return x

    t = tool(f)
    assert t.execute.__wrapped__ is f  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- schemas


def test_scalar_schemas() -> None:
    @tool
    def f(s: str, i: int, x: float, b: bool, n: None, a: Any, untyped, o: object) -> None:  # type: ignore[no-untyped-def]
        pass

    assert props(f) == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "x": {"type": "number"},
        "b": {"type": "boolean"},
        "n": {"type": "null"},
        "a": {},
        "untyped": {},
        "o": {},
    }
    assert f.parameters["required"] == ["s", "i", "x", "b", "n", "a", "untyped", "o"]


def test_optional_and_union_schemas() -> None:
    @tool
    def f(a: Optional[int], b: str | None = None, c: int | str = 0, d: int | list[int] | None = None) -> None:
        pass

    assert props(f) == {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "b": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "c": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0},
        "d": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}},
                        {"type": "null"}], "default": None},
    }
    assert f.parameters["required"] == ["a"]


def test_container_schemas() -> None:
    @tool
    def f(
        a: list[str],
        b: Sequence[int],
        c: tuple[int, ...],
        d: tuple[int, str],
        e: dict[str, float],
        g: set[str],
        h: list[dict[str, list[int]]],
        i: list,  # type: ignore[type-arg]
        j: dict,  # type: ignore[type-arg]
    ) -> None:
        pass

    assert props(f) == {
        "a": {"type": "array", "items": {"type": "string"}},
        "b": {"type": "array", "items": {"type": "integer"}},
        "c": {"type": "array", "items": {"type": "integer"}},
        "d": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
              "minItems": 2, "maxItems": 2},
        "e": {"type": "object", "additionalProperties": {"type": "number"}},
        "g": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "h": {"type": "array", "items": {"type": "object", "additionalProperties": {
            "type": "array", "items": {"type": "integer"}}}},
        "i": {"type": "array"},
        "j": {"type": "object"},
    }


def test_literal_and_enum_schemas() -> None:
    @tool
    def f(
        mode: Literal["fast", "slow"],
        n: Literal[1, 2, 3],
        mixed: Literal["a", 1],
        color: Color,
        level: Level = Level.LOW,
    ) -> None:
        pass

    assert props(f) == {
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "n": {"type": "integer", "enum": [1, 2, 3]},
        "mixed": {"enum": ["a", 1]},
        "color": {"type": "string", "enum": ["red", "green"]},
        "level": {"type": "integer", "enum": [1, 2], "default": 1},
    }


def test_typeddict_schemas() -> None:
    @tool
    def f(options: Options, filters: Filters) -> None:
        pass

    assert props(f) == {
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer"}, "follow": {"type": "boolean"}},
            "required": ["depth"],
            "additionalProperties": False,
        },
        "filters": {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["pattern"],
            "additionalProperties": False,
        },
    }


def test_dataclass_schema_nested() -> None:
    @tool
    def draw(shape: Shape) -> None:
        """Draw a shape.

        Args:
            shape: What to draw.
        """

    point = {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number", "default": 0.0}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert draw.parameters == {
        "type": "object",
        "properties": {
            "shape": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "points": {"type": "array", "items": point},
                    "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                    "weight": {"type": "number", "description": "Weight in kg", "default": 1.0},
                    "size": {"type": "integer", "description": "Side count", "default": 3},
                },
                "required": ["name", "points"],
                "additionalProperties": False,
                "description": "What to draw.",
            }
        },
        "required": ["shape"],
        "additionalProperties": False,
    }


def test_annotated_descriptions_and_constraints() -> None:
    @tool
    def f(
        a: Annotated[int, "How many", {"minimum": 0}],
        b: Annotated[list[Annotated[str, "A name"]], "Names"] = ["x"],  # noqa: B006
        u: UserId = UserId(7),
    ) -> None:
        """Do it.

        Args:
            a: Loses to the Annotated description.
            u: The user.
        """

    assert props(f) == {
        "a": {"type": "integer", "description": "How many", "minimum": 0},
        "b": {"type": "array", "items": {"type": "string", "description": "A name"},
              "description": "Names", "default": ["x"]},
        "u": {"type": "integer", "description": "The user.", "default": 7},
    }


def test_default_that_is_not_json_is_left_out_but_still_optional() -> None:
    sentinel = object()

    @tool
    def f(a: Any = sentinel) -> str:
        return "default" if a is sentinel else repr(a)

    assert props(f) == {"a": {}}
    assert f.parameters["required"] == []
    assert execute(f, {}).content == (TextContent("default"),)
    assert execute(f, {"a": [1]}).content == (TextContent("[1]"),)


def test_generated_schemas_are_valid_draft_2020_12() -> None:
    @tool
    def f(shape: Shape, o: Options, fl: Filters, t: tuple[int, str], m: dict[str, Color],
          c: Literal["a", "b"] | None = None) -> None:
        pass

    jsonschema.Draft202012Validator.check_schema(f.parameters)
    v = jsonschema.Draft202012Validator(f.parameters)
    good = {"shape": {"name": "tri", "points": [{"x": 1}]}, "o": {"depth": 1},
            "fl": {"pattern": "*"}, "t": [1, "a"], "m": {"k": "red"}}
    assert list(v.iter_errors(good)) == []
    assert [e.message for e in v.iter_errors({**good, "t": [1, 2]})] == ["2 is not of type 'string'"]
    assert [e.message for e in v.iter_errors({**good, "extra": 1})] == [
        "Additional properties are not allowed ('extra' was unexpected)"]


# --------------------------------------------------------------------------- docstrings


def test_docstring_google_with_types_and_sections() -> None:
    @tool
    def search(pattern: str, limit: int = 10) -> list[str]:
        """Search files by glob
        pattern.

        Longer explanation that is not part of the description.

        Args:
            pattern (str): A glob such as
                ``*.py``.
            limit (int, optional): At most this many.

        Returns:
            limit: not a parameter description.
        """
        return []

    assert search.description == "Search files by glob pattern."
    assert props(search) == {
        "pattern": {"type": "string", "description": "A glob such as ``*.py``."},
        "limit": {"type": "integer", "description": "At most this many.", "default": 10},
    }


def test_docstring_rest_fields() -> None:
    @tool
    def move(src: str, dst: str) -> None:
        """Move a file.
        :param src: Where from.
        :param str dst: Where to,
            created if missing.
        :type src: str
        :returns: nothing
        """

    assert move.description == "Move a file."
    assert props(move) == {
        "src": {"type": "string", "description": "Where from."},
        "dst": {"type": "string", "description": "Where to, created if missing."},
    }


def test_docstring_numpy_style() -> None:
    @tool
    def scale(factor: float, axis: int = 0) -> None:
        """Scale the image.

        Parameters
        ----------
        factor : float
            The scale factor,
            above zero.
        axis : int
            The axis.

        Returns
        -------
        None
        """

    assert scale.description == "Scale the image."
    assert props(scale) == {
        "factor": {"type": "number", "description": "The scale factor, above zero."},
        "axis": {"type": "integer", "description": "The axis.", "default": 0},
    }


# --------------------------------------------------------------------------- injected parameters


def test_injected_parameters_are_not_in_the_schema() -> None:
    seen: list[Any] = []

    @tool
    def work(n: int, ctx: ToolContext, signal: Any, on_update: Callable[[Any], None],
             tool_call_id: str) -> str:
        seen.append((ctx.tool_call_id, ctx.signal, signal, tool_call_id))
        ctx.on_update({"progress": n})
        on_update("half")
        return "done"

    assert work.parameters == {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
        "additionalProperties": False,
    }
    updates: list[Any] = []
    sig = type("Sig", (), {"aborted": False})()
    result = work.execute("call_9", FrozenDict({"n": 3}), sig, updates.append)
    assert result.content == (TextContent("done"),)
    assert seen == [("call_9", sig, sig, "call_9")]
    assert updates == [{"progress": 3}, "half"]


def test_on_update_defaults_to_a_no_op_and_context_reports_abort() -> None:
    @tool
    def work(context: Optional[ToolContext] = None) -> str:
        assert context is not None
        context.on_update("ignored")
        return f"aborted={context.aborted}"

    assert work.parameters["properties"] == {}
    assert work.execute("c", {}, None, None).content == (TextContent("aborted=False"),)
    sig = type("Sig", (), {"aborted": True})()
    assert work.execute("c", {}, sig, None).content == (TextContent("aborted=True"),)


def test_tool_context_is_frozen() -> None:
    ctx = ToolContext("c", None, print)
    with pytest.raises(AttributeError):
        ctx.tool_call_id = "d"  # type: ignore[misc]


# --------------------------------------------------------------------------- argument conversion


def test_arguments_are_converted_to_the_annotated_types() -> None:
    got: dict[str, Any] = {}

    @tool
    def f(shape: Shape, options: Options, color: Color, level: Level, pair: tuple[int, str],
          names: set[str], grid: list[list[Point]], mapping: dict[str, Color],
          mode: Literal["a", "b"], ratio: float, anything: Any) -> None:
        got.update(locals())

    execute(f, {
            "shape": {"name": "tri", "points": [{"x": 1}, {"x": 2.5, "y": 3}], "color": "green",
                      "tags": ["t"]},
            "options": {"depth": 2, "follow": True},
            "color": "red",
            "level": 2,
            "pair": [1, "one"],
            "names": ["a", "b"],
            "grid": [[{"x": 0}], []],
            "mapping": {"k": "green"},
            "mode": "b",
            "ratio": 2,
            "anything": {"nested": [1, {"x": None}]},
    })
    assert got["shape"] == Shape("tri", [Point(1.0), Point(2.5, 3.0)], Color.GREEN, ["t"])
    assert got["options"] == {"depth": 2, "follow": True}
    assert type(got["options"]) is dict
    assert got["color"] is Color.RED
    assert got["level"] is Level.HIGH
    assert got["pair"] == (1, "one")
    assert got["names"] == {"a", "b"}
    assert got["grid"] == [[Point(0.0)], []]
    assert got["mapping"] == {"k": Color.GREEN}
    assert got["mode"] == "b"
    assert got["ratio"] == 2.0 and type(got["ratio"]) is float
    assert got["anything"] == {"nested": [1, {"x": None}]}
    assert type(got["anything"]) is dict


def test_union_conversion_tries_members_in_order() -> None:
    got: list[Any] = []

    @tool
    def f(v: int | Point | list[Color] | None) -> None:
        got.append(v)

    for value in (3, {"x": 1}, ["red"], None):
        execute(f, {"v": value})
    assert got == [3, Point(1.0), [Color.RED], None]
    with pytest.raises(TypeError, match=r"^argument v: expected int \| Point \| list\[Color\] \| None, got 'x'$"):
        execute(f, {"v": "x"})


def test_conversion_errors_name_the_path() -> None:
    @tool
    def f(shape: Shape, n: int = 0) -> None:
        pass

    with pytest.raises(TypeError, match=r"^argument shape\.points\[1\]\.x: expected a number, got 'a'$"):
        execute(f, {"shape": {"name": "s", "points": [{"x": 1}, {"x": "a"}]}})
    with pytest.raises(TypeError, match=r"^argument shape: missing key\(s\) 'points'$"):
        execute(f, {"shape": {"name": "s"}})
    with pytest.raises(TypeError, match=r"^argument shape: unexpected key\(s\) 'z'$"):
        execute(f, {"shape": {"name": "s", "points": [], "z": 1}})
    with pytest.raises(TypeError, match=r"^argument n: expected an integer, got True$"):
        execute(f, {"shape": {"name": "s", "points": []}, "n": True})
    with pytest.raises(TypeError, match=r"^@tool f: missing required argument 'shape'$"):
        execute(f, {})
    with pytest.raises(TypeError, match=r"^@tool f: unexpected argument\(s\): 'zz'$"):
        execute(f, {"shape": {"name": "s", "points": []}, "zz": 1})
    with pytest.raises(TypeError,
                       match=r"^argument shape\.color: expected Color \(one of 'red', 'green'\), got 'blue'$"):
        execute(f, {"shape": {"name": "s", "points": [], "color": "blue"}})


def test_literal_conversion_is_type_exact() -> None:
    @tool
    def f(v: Literal[1, "1"]) -> str:
        return type(v).__name__

    assert execute(f, {"v": 1}).content == (TextContent("int"),)
    assert execute(f, {"v": "1"}).content == (TextContent("str"),)
    with pytest.raises(TypeError):
        execute(f, {"v": True})


def test_validated_arguments_with_defaults_convert() -> None:
    @tool
    def f(shape: Shape, mode: Literal["a", "b"] = "a", limit: int | None = None) -> dict[str, Any]:
        return {"shape": shape, "mode": mode, "limit": limit}

    validated = validate_arguments(spec_of(f), {"shape": {"name": "s", "points": [{"x": 1}]}}).unwrap()
    assert thaw(validated) == {"shape": {"name": "s", "points": [{"x": 1, "y": 0.0}], "color": "red",
                                   "note": None, "weight": 1.0, "size": 3},
                         "mode": "a", "limit": None}
    result = execute(f, validated)
    assert result.details == {"shape": Shape("s", [Point(1.0)]), "mode": "a", "limit": None}
    assert validate_arguments(spec_of(f), {"shape": {"name": "s", "points": []}, "mode": "c"}).failure()


def test_parameter_with_none_default_accepts_null() -> None:
    @tool
    def f(n: int = None) -> str:  # type: ignore[assignment]
        return repr(n)

    assert execute(f, {"n": None}).content == (TextContent("None"),)
    assert execute(f, {"n": 2}).content == (TextContent("2"),)


def test_positional_only_and_keyword_only_parameters() -> None:
    @tool
    def f(a: int, /, b: int = 2, *, c: int = 3) -> str:
        return f"{a}{b}{c}"

    assert f.parameters["required"] == ["a"]
    assert execute(f, {"a": 1}).content == (TextContent("123"),)
    assert execute(f, {"a": 1, "c": 9}).content == (TextContent("129"),)


# --------------------------------------------------------------------------- async tools


def test_async_tool_execute_returns_a_coroutine() -> None:
    @tool
    async def fetch(url: str, ctx: ToolContext) -> str:
        await asyncio.sleep(0)
        ctx.on_update("halfway")
        return f"fetched {url}"

    updates: list[Any] = []
    pending = fetch.execute("c1", {"url": "x"}, None, updates.append)
    assert inspect.iscoroutine(pending)
    assert asyncio.run(pending) == AgentToolResult((TextContent("fetched x"),))
    assert updates == ["halfway"]


def test_async_tool_result_conversion() -> None:
    @tool
    async def info() -> dict[str, int]:
        return {"a": 1}

    result = execute(info, {})
    assert result.content == (TextContent('{"a": 1}'),)
    assert result.details == {"a": 1}


# --------------------------------------------------------------------------- return values


def test_return_values_become_content() -> None:
    image = ImageContent("aGk=", "image/png")
    custom = AgentToolResult((TextContent("x"),), details={"d": 1}, usage=Usage(input=1),
                             terminate=True)

    def make(value: Any) -> AgentTool:
        @tool
        def f() -> Any:
            return value

        return f

    assert execute(make(custom), {}) is custom
    assert execute(make("hi"), {}) == AgentToolResult((TextContent("hi"),))
    assert execute(make(TextContent("t")), {}) == AgentToolResult((TextContent("t"),))
    assert execute(make(image), {}) == AgentToolResult((image,))
    assert execute(make([TextContent("a"), image]), {}) == AgentToolResult((TextContent("a"), image))
    assert execute(make({"k": [1, 2]}), {}) == AgentToolResult(
        (TextContent('{"k": [1, 2]}'),), details={"k": [1, 2]})
    assert execute(make(None), {}) == AgentToolResult((TextContent("null"),))
    assert execute(make([]), {}) == AgentToolResult((TextContent("[]"),), details=[])
    assert execute(make(3.5), {}).content == (TextContent("3.5"),)
    assert execute(make("é"), {}).content == (TextContent("é"),)


def test_structured_return_values_are_json_with_raw_details() -> None:
    shape = Shape("s", [Point(1.0)], Color.GREEN)

    @tool
    def f() -> Shape:
        return shape

    result = execute(f, {})
    assert json.loads(result.content[0].text) == {  # type: ignore[union-attr]
        "name": "s", "points": [{"x": 1.0, "y": 0.0}], "color": "green", "tags": [],
        "note": None, "weight": 1.0, "size": 3}
    assert result.details is shape

    class Odd:
        def __str__(self) -> str:
            return "odd!"

    @tool
    def g() -> Any:
        return {"o": Odd(), "s": {"b", "a"}}

    assert execute(g, {}).content == (TextContent('{"o": "odd!", "s": ["a", "b"]}'),)


def test_raised_exceptions_propagate_to_the_interpreter() -> None:
    @tool
    def boom() -> None:
        raise RuntimeError("kaput")

    with pytest.raises(RuntimeError, match="kaput"):
        boom.execute("c", {}, None, None)


# --------------------------------------------------------------------------- decoration errors


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: tool(_takes_bytes), "@tool takes_bytes: parameter 'data' has an unsupported type annotation: bytes"),
        (lambda: tool(_takes_list_of_bytes), "@tool f: parameter 'items' has an unsupported type annotation: bytes"),
        (lambda: tool(_takes_callable), "@tool g: parameter 'cb' has an unsupported type annotation: "),
        (lambda: tool(_takes_int_keys), "@tool h: parameter 'm' has an unsupported type annotation: "
                                        "dict[int, str] (JSON object keys are strings)"),
        (lambda: tool(_takes_node), "@tool walk: parameter 'root' (field 'children' of Node) has an unsupported "
                                    "type annotation: Node (recursive types are not supported)"),
        (lambda: tool(_takes_varargs), "@tool v: parameter 'rest': *args and **kwargs are not supported"),
        (lambda: tool(_takes_bad_literal), "@tool lit: parameter 'x' has an unsupported type annotation: "),
    ],
)
def test_unsupported_annotations_raise_at_decoration(make: Callable[[], Any], message: str) -> None:
    with pytest.raises(TypeError) as info:
        make()
    assert str(info.value).startswith(message)


def _takes_bytes(data: bytes) -> None: ...


_takes_bytes.__name__ = "takes_bytes"


def f(items: list[bytes]) -> None: ...


_takes_list_of_bytes = f


def g(cb: Callable[[int], int]) -> None: ...


_takes_callable = g


def h(m: dict[int, str]) -> None: ...


_takes_int_keys = h


def walk(root: Node) -> None: ...


_takes_node = walk


def v(*rest: int) -> None: ...


_takes_varargs = v


def lit(x: Literal[b"x"]) -> None: ...


_takes_bad_literal = lit


def test_unresolvable_hint_and_bad_names() -> None:
    def fwd(x: DoesNotExist) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(TypeError,
                       match=r"^@tool fwd: cannot resolve the type hints: name 'DoesNotExist' is not defined$"):
        tool(fwd)
    with pytest.raises(ValueError, match="tool name '<lambda>' is not valid"):
        tool(lambda: None)
    assert tool(name="ok")(lambda: "x").name == "ok"
    with pytest.raises(ValueError, match="execution_mode"):
        tool(execution_mode="later")(lambda: None)  # type: ignore[call-overload]


def test_classes_local_to_the_decorating_scope_resolve() -> None:
    @dataclass
    class Local:
        a: int

    @tool
    def f(item: Local) -> int:
        return item.a

    assert props(f) == {"item": {"type": "object", "properties": {"a": {"type": "integer"}},
                                 "required": ["a"], "additionalProperties": False}}
    assert execute(f, {"item": {"a": 4}}).details == 4


# --------------------------------------------------------------------------- properties


points = st.builds(Point, st.floats(allow_nan=False, allow_infinity=False),
                   st.floats(allow_nan=False, allow_infinity=False))
shapes = st.builds(
    Shape,
    name=st.text(max_size=5),
    points=st.lists(points, max_size=3),
    color=st.sampled_from(Color),
    tags=st.lists(st.text(max_size=3), max_size=3),
    note=st.none() | st.text(max_size=3),
    weight=st.floats(allow_nan=False, allow_infinity=False),
    size=st.integers(),
)


@tool
def _echo_shape(shape: Shape, pair: tuple[int, Color], filters: Filters) -> Any:
    return {"shape": shape, "pair": pair, "filters": filters}


@given(
    shape=shapes,
    pair=st.tuples(st.integers(), st.sampled_from(Color)),
    filters=st.fixed_dictionaries({"pattern": st.text(max_size=4)},
                                  optional={"limit": st.integers()}),
)
def test_any_value_survives_json_round_trip(shape: Shape, pair: tuple[int, Color], filters: Filters) -> None:
    """Encode a value as the model would send it: it validates against the generated schema,
    and the tool receives an equal Python value."""
    from interpreters.tool.decorator import json_ready

    wire = json.loads(json.dumps(json_ready({"shape": shape, "pair": pair, "filters": filters})))
    jsonschema.Draft202012Validator(_echo_shape.parameters).validate(wire)
    validated = validate_arguments(spec_of(_echo_shape), wire).unwrap()
    assert execute(_echo_shape, validated).details == {"shape": shape, "pair": pair, "filters": filters}


def test_empty_parentheses_work_like_the_bare_decorator() -> None:
    @tool()
    def ping() -> str:
        """Ping."""
        return "pong"

    assert (ping.name, ping.description) == ("ping", "Ping.")
    assert execute(ping, {}).content == (TextContent("pong"),)
