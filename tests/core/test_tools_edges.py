"""Tools at their edges: what a result, a spec and a tool accept, ``check_tools``' refusals, and
the exact texts and values of argument validation."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from agentcore import AgentTool, AgentToolResult, FrozenDict, TextContent, ToolSpec, freeze, validate_arguments
from agentcore.frozen import MAX_JSON_DEPTH
from agentcore.messages import ImageContent, Usage
from agentcore.tools import check_tools, error_result, spec_of


def execute(*_: Any) -> AgentToolResult:
    return AgentToolResult("ok")


def make_tool(**changes: Any) -> AgentTool:
    fields: dict[str, Any] = {"name": "add", "label": "Add", "description": "adds two numbers",
                              "parameters": {"type": "object"}, "execute": execute}
    return AgentTool(**{**fields, **changes})


# --------------------------------------------------------------------------- results


def test_a_result_takes_text_or_any_iterable_of_content() -> None:
    assert AgentToolResult("done").content == (TextContent("done"),)
    image = ImageContent("aGk=", "image/png")
    assert AgentToolResult([TextContent("a"), image]).content == (TextContent("a"), image)
    assert AgentToolResult(iter([image])).content == (image,)
    blank = AgentToolResult()
    assert (blank.content, blank.details, blank.usage, blank.added_tool_names, blank.terminate) == \
        ((), None, None, None, None)


def test_a_result_freezes_its_details_and_keeps_tool_names_as_a_tuple() -> None:
    result = AgentToolResult((), {"rows": [1, {"k": [2]}]}, Usage(1), ["a", "b"], False)
    assert result.details == FrozenDict({"rows": (1, FrozenDict({"k": (2,)}))})
    assert isinstance(result.details, FrozenDict)
    assert result.added_tool_names == ("a", "b")
    assert result.usage == Usage(1) and result.terminate is False
    kept = ("x",)
    assert AgentToolResult(added_tool_names=kept).added_tool_names is kept
    assert hash(result) == hash(AgentToolResult((), {"rows": [1, {"k": [2]}]}, Usage(1), ("a", "b"), False))


def test_an_error_result_is_text_with_empty_details() -> None:
    assert error_result("it broke") == AgentToolResult((TextContent("it broke"),), FrozenDict(), None, None, None)
    assert error_result("stop", terminate=True).terminate is True
    assert error_result("x").details == {} and isinstance(error_result("x").details, FrozenDict)


# --------------------------------------------------------------------------- specs and tools


def test_a_spec_defaults_to_an_open_object_schema_and_freezes_its_schema() -> None:
    spec = ToolSpec("t")
    assert (spec.description, spec.label, spec.execution_mode, spec.has_prepare_arguments) == ("", "", None, False)
    assert spec.parameters == FrozenDict({"type": "object"}) and isinstance(spec.parameters, FrozenDict)
    schema = ToolSpec("t", parameters={"type": "object", "required": ["a"]}).parameters
    assert schema == FrozenDict({"type": "object", "required": ("a",)}) and isinstance(schema, FrozenDict)
    assert hash(ToolSpec("t", parameters={"required": ["a"]})) == hash(ToolSpec("t", parameters={"required": ["a"]}))


def test_the_spec_of_a_tool_keeps_everything_but_the_callables() -> None:
    tool = make_tool(execution_mode="sequential", prepare_arguments=lambda a: a)
    assert spec_of(tool) == ToolSpec("add", "adds two numbers", FrozenDict({"type": "object"}), "Add", "sequential",
                                     True)
    assert tool.spec == spec_of(tool)
    assert spec_of(make_tool()).has_prepare_arguments is False
    assert spec_of(make_tool()).execution_mode is None
    spec = ToolSpec("s")
    assert spec_of(spec) is spec


@pytest.mark.parametrize("timeout_ms", [None, 0, 1, 30_000])
def test_a_tool_timeout_is_none_or_a_whole_number_of_milliseconds(timeout_ms: int | None) -> None:
    assert make_tool(timeout_ms=timeout_ms).timeout_ms == timeout_ms


@pytest.mark.parametrize("timeout_ms", [-1, 1.5, True, "10"])
def test_any_other_timeout_is_refused(timeout_ms: Any) -> None:
    with pytest.raises(ValueError) as err:
        make_tool(timeout_ms=timeout_ms)
    assert str(err.value) == f"tool 'add': timeout_ms must be None or an integer >= 0, not {timeout_ms!r}"


class Callable:
    def __call__(self) -> None:
        pass


@pytest.mark.parametrize(("item", "message"), [
    (execute, "tools[1] is the plain function 'execute', not an AgentTool: decorate it with @tool "
              "(from interpreters import tool)"),
    (Callable(), "tools[1] is the plain function 'Callable', not an AgentTool: decorate it with @tool "
                 "(from interpreters import tool)"),
    (5, "tools[1] is a int (5), not an AgentTool or ToolSpec"),
    ("x" * 100, f"tools[1] is a str ('{'x' * 79}), not an AgentTool or ToolSpec"),
])
def test_check_tools_names_what_is_not_a_tool(item: Any, message: str) -> None:
    with pytest.raises(TypeError) as err:
        check_tools((make_tool(), item, ToolSpec("late")), "tools")
    assert str(err.value) == message


def test_check_tools_takes_tools_and_specs() -> None:
    assert check_tools([make_tool(), ToolSpec("s")], "where") is None
    assert check_tools((), "where") is None


# --------------------------------------------------------------------------- validation

DEFAULTS = {"type": "object", "properties": {
    "a": {"type": "integer", "default": 1},
    "o": {"type": "object", "properties": {"x": {"type": "string", "default": "x"}}},
}}


def test_schema_defaults_are_filled_in_at_any_depth() -> None:
    spec = ToolSpec("d", parameters=DEFAULTS)
    assert validate_arguments(spec, {}).unwrap() == FrozenDict({"a": 1})
    assert validate_arguments(spec, {"o": {}}).unwrap() == freeze({"a": 1, "o": {"x": "x"}})
    assert validate_arguments(spec, {"a": 5, "o": {"x": "y"}}).unwrap() == freeze({"a": 5, "o": {"x": "y"}})
    listed = ToolSpec("l", parameters={"type": "object", "allOf": [{"properties": {"b": {"default": 2}}}]})
    assert validate_arguments(listed, {}).unwrap() == FrozenDict({"b": 2})
    nested = ToolSpec("n", parameters={"type": "object", "properties": {
        "p": {"type": "object", "properties": {"q": {"type": "object", "properties": {"r": {"default": 3}}}}}}})
    assert validate_arguments(nested, {"p": {"q": {}}}).unwrap() == freeze({"p": {"q": {"r": 3}}})


def test_arguments_that_need_no_defaults_come_back_as_they_were_frozen() -> None:
    args = freeze({"a": 2, "l": [1, 2]})
    for schema in ({"type": "object"}, {"type": "object", "properties": {"a": {"type": "integer"}}},
                   {"type": "object", "properties": {"l": {"type": "array", "items": [{"type": "integer"}]}}},
                   {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}):
        assert validate_arguments(ToolSpec("t", parameters=schema), args).unwrap() is args
    assert validate_arguments(ToolSpec("t", parameters={"type": "object"}), {"a": [1]}).unwrap() == \
        FrozenDict({"a": (1,)})


def test_every_failing_path_is_listed_in_path_order_with_the_arguments() -> None:
    spec = ToolSpec("calc", parameters={"type": "object", "required": ["n"], "properties": {
        "n": {"type": "integer"}, "list": {"type": "array", "items": {"type": "string"}},
        "deep": {"type": "object", "properties": {"b": {"type": "boolean"}}}}})
    failure = validate_arguments(spec, {"list": ["ok", 3, 4], "deep": {"b": "no"}, "é": "ü"}).failure()
    assert failure == (
        'Validation failed for tool "calc":\n'
        "  - root: 'n' is a required property\n"
        "  - deep/b: 'no' is not of type 'boolean'\n"
        "  - list/1: 3 is not of type 'string'\n"
        "  - list/2: 4 is not of type 'string'\n"
        "\nReceived arguments:\n"
        + json.dumps({"list": ["ok", 3, 4], "deep": {"b": "no"}, "é": "ü"}, indent=2, ensure_ascii=False))
    assert '"é": "ü"' in failure


def test_a_failure_only_fastjsonschema_sees_names_its_own_path() -> None:
    # jsonschema checks "duration" only with an optional package (not a dependency here);
    # fastjsonschema checks it itself.
    spec = ToolSpec("when", parameters={"type": "object", "properties": {
        "on": {"type": "object", "properties": {"for": {"type": "string", "format": "duration"}}}}})
    assert validate_arguments(spec, {"on": {"for": "a while"}}).failure() == (
        'Validation failed for tool "when":\n'
        "  - on/for: data.on.for must be duration\n"
        '\nReceived arguments:\n{\n  "on": {\n    "for": "a while"\n  }\n}')
    top = ToolSpec("d", parameters={"type": "string", "format": "duration"})
    assert validate_arguments(top, "a while").failure() == (
        'Validation failed for tool "d":\n  - root: data must be duration\n\nReceived arguments:\n"a while"')


def test_arguments_nested_too_deep_are_refused_without_being_read() -> None:
    deep: Any = 1
    for _ in range(MAX_JSON_DEPTH + 1):
        deep = [deep]
    assert validate_arguments(ToolSpec("t", parameters={"type": "bogus"}), {"x": deep}).failure() == (
        'Validation failed for tool "t": its arguments are nested more than 100 levels deep')


class Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Unhashable()"


class Incomparable:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("cannot compare")

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Incomparable()"


def test_a_validator_that_raises_is_reported_as_such() -> None:
    # Arguments rewritten by prepare_arguments may hold anything; uniqueItems hashes the items.
    spec = ToolSpec("u", parameters={"type": "object", "properties": {"l": {"type": "array", "uniqueItems": True}}})
    assert validate_arguments(spec, {"l": [Unhashable(), 1]}).failure() == (
        'Tool "u" could not validate its arguments: TypeError: unhashable type: \'Unhashable\'')


def test_when_jsonschema_cannot_describe_the_failure_fastjsonschema_s_message_is_used() -> None:
    spec = ToolSpec("c", parameters={"type": "object", "properties": {"n": {"enum": [1, 2]}}})
    assert validate_arguments(spec, {"n": Incomparable()}).failure() == (
        'Validation failed for tool "c":\n  - n: data.n must be one of [1, 2]\n'
        '\nReceived arguments:\n{\n  "n": "Incomparable()"\n}')


def test_a_schema_that_does_not_compile_names_the_error() -> None:
    spec = ToolSpec("p", parameters={"type": "object", "patternProperties": {"(": {}}})
    assert validate_arguments(spec, {"a": 1}).failure() == (
        'Tool "p" has an invalid parameters schema: error: missing ), unterminated subpattern at position 0')


def test_equal_schemas_share_one_compiled_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    import fastjsonschema

    compiled: list[Any] = []
    compile_schema = fastjsonschema.compile

    def counting(schema: Any, **options: Any) -> Any:
        compiled.append(schema)
        return compile_schema(schema, **options)

    monkeypatch.setattr(fastjsonschema, "compile", counting)
    first = {"$comment": "test_tools_edges.shared", "type": "object", "properties": {"n": {"type": "integer"}}}
    same_keys_other_order = {"properties": {"n": {"type": "integer"}}, "type": "object",
                             "$comment": "test_tools_edges.shared"}
    for schema in (first, same_keys_other_order, first):
        assert validate_arguments(ToolSpec("t", parameters=schema), {"n": 1}).unwrap() == FrozenDict({"n": 1})
        assert validate_arguments(ToolSpec("t", parameters=schema), {"n": "x"}).failure().startswith(
            'Validation failed for tool "t":\n  - n: ')
    assert compiled == [first]
    one = {"$comment": "test_tools_edges.one", "const": 1}
    validate_arguments(ToolSpec("a", parameters=one), 1)
    validate_arguments(ToolSpec("b", parameters={**one, "const": True}), True)
    assert len(compiled) == 3  # 1 and true are different schemas


def test_arguments_too_deep_to_print_from_a_deep_stack_are_not_shown() -> None:
    # The argument text is printed recursively: called with little stack left, the failure
    # still reports what failed, without the arguments. Where printing runs out of stack
    # depends on the interpreter, so the check lowers the limit step by step.
    spec = ToolSpec("deep", parameters={"type": "object", "required": ["x"]})
    deep: Any = 1
    for _ in range(MAX_JSON_DEPTH - 1):
        deep = [deep]
    assert validate_arguments(spec, {"a": 1}).failure().endswith('Received arguments:\n{\n  "a": 1\n}')

    def depth() -> int:
        frame, n = sys._getframe(), 0
        while frame is not None:
            frame, n = frame.f_back, n + 1
        return n

    outcomes = set()
    limit = sys.getrecursionlimit()
    for margin in range(200, 20, -5):
        sys.setrecursionlimit(depth() + margin)
        try:
            outcomes.add(validate_arguments(spec, {"a": deep}).failure())
        except RecursionError:
            outcomes.add("RecursionError")
        finally:
            sys.setrecursionlimit(limit)
    assert ('Validation failed for tool "deep":\n  - root: \'x\' is a required property\n\n'
            "Received arguments:\n(not shown: too deeply nested to print here)") in outcomes
