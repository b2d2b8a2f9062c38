"""Deeply nested JSON in tool-call arguments never blows the stack.

Argument text nested 3,000 levels deep (about 6 KB) used to raise ``RecursionError`` out of the
agent loop. Now any argument text gives either parsed arguments or the invalid-JSON tool result,
with ``MAX_JSON_DEPTH`` (100) levels as the limit, and everything that handles arguments
(``freeze``/``thaw``, validation, the partial-JSON parser) works at and beyond it.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import interpreters
from agentcore import AgentContext, AgentLoopConfig, Model
from agentcore.frozen import MAX_JSON_DEPTH, FrozenDict, depth_exceeds, freeze, thaw
from agentcore.llm import LlmContext
from agentcore.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from agentcore.stream import (
    PartialAssistantMessage,
    StartEvent,
    StreamEvent,
    arguments_problem,
    parse_arguments,
    parse_partial_json,
    too_deep_at,
)
from agentcore.tools import AgentTool, AgentToolResult, ToolSpec, validate_arguments
from interpreters.streams.scripted import Reply, ScriptedCall
from tests.support.flavours import ASYNCIO, SYNC, Flavour

LIMIT_REASON = "nested more than 100 levels deep"


def objects(depth: int, leaf: str = "1") -> str:
    """``{"a":{"a":...leaf...}}``: ``depth`` objects."""
    return '{"a":' * depth + leaf + "}" * depth


def at_limit_object() -> str:
    return '{"a":' * (MAX_JSON_DEPTH - 1) + "{}" + "}" * (MAX_JSON_DEPTH - 1)


def nest(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def depth_of(value: Any) -> int:
    """Nesting depth of a JSON value, without recursion."""
    best, todo = 0, [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (dict, FrozenDict)):
            todo += [(x, d + 1) for x in v.values()]
            best = max(best, d + 1)
        elif isinstance(v, (list, tuple)):
            todo += [(x, d + 1) for x in v]
            best = max(best, d + 1)
    return best


def invalid_json_result(raw: str, reason: str) -> str:
    shown = raw if len(raw) <= 2000 else raw[:2000] + f"... ({len(raw)} characters)"
    return (f'Tool call "probe" was not executed: its arguments are not valid JSON ({reason}). '
            f"Received: {shown}")


def json_error(raw: str) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        return str(exc)
    raise AssertionError("valid JSON")


# Argument texts the model may stream, and what becomes of them.
TOO_DEEP = {
    "brackets_3000": "[" * 3000 + "]" * 3000,
    "objects_3000": objects(3000),
    "one_past_the_limit": objects(MAX_JSON_DEPTH + 1),
    "truncated_3000": '{"a":' * 3000,
    "truncated_one_past": '{"a":' * (MAX_JSON_DEPTH + 1),
    "deep_after_a_member": '{"ok": 1, "b": ' + "[" * 3000,
}


# --------------------------------------------------------------------------- the parsers


@pytest.mark.parametrize("name", sorted(TOO_DEEP))
def test_text_past_the_limit_is_invalid_arguments(name: str) -> None:
    raw = TOO_DEEP[name]
    assert parse_arguments(raw) == ({}, raw)
    assert arguments_problem(raw) == LIMIT_REASON
    assert parse_partial_json(raw) == {}
    assert too_deep_at(raw) >= 0


def test_text_at_the_limit_parses() -> None:
    raw = at_limit_object()
    args, invalid = parse_arguments(raw)
    assert invalid is None and depth_of(args) == MAX_JSON_DEPTH
    assert arguments_problem(raw) is None
    assert too_deep_at(raw) == -1
    assert parse_arguments("[" * 100 + "]" * 100) == ({}, "[" * 100 + "]" * 100)
    assert arguments_problem("[" * 100 + "]" * 100) == "they are not a JSON object"


def test_truncated_text_at_the_limit_keeps_what_is_complete() -> None:
    raw = '{"a":' * (MAX_JSON_DEPTH - 1) + '{"b": 2, "c'
    args, invalid = parse_arguments(raw)
    assert invalid == raw
    assert depth_of(args) == MAX_JSON_DEPTH
    inner = args
    for _ in range(MAX_JSON_DEPTH - 1):
        inner = inner["a"]
    assert inner == {"b": 2}


def test_brackets_inside_strings_do_not_count() -> None:
    raw = json.dumps({"s": "[{" * 5000, "t": ['"]' * 10]})
    assert too_deep_at(raw) == -1
    assert parse_arguments(raw) == (json.loads(raw), None)
    assert too_deep_at('"' + "[" * 3000) == -1  # a string cut off inside
    assert arguments_problem('"' + "[" * 3000 + '"') == "they are not a JSON object"


def test_too_deep_at_names_the_first_bracket_past_the_limit() -> None:
    assert too_deep_at("[[[", 2) == 2
    assert too_deep_at('{"a": [{"b": [', 3) == 13
    assert too_deep_at("[[]][[]]", 2) == -1
    assert too_deep_at("]]]]][[", 2) == -1  # stray closers are not credit


@pytest.mark.parametrize(("text", "expected"), [
    ('{"a": 1, "b": [1, 2', {"a": 1, "b": [1, 2]}),
    ('{"path": "/tm', {"path": "/tm"}),
    ("", {}),
    ("   ", {}),
    ('{"a": {"b": {"c": [1, {"d": "x\\"', {"a": {"b": {"c": [1, {"d": 'x"'}]}}}),
    ("[1, 2, [3, 4", [1, 2, [3, 4]]),
    ('{"a": tru', {}),
    ('{"a": 1,', {"a": 1}),
    ('{"a": 1, "b"', {"a": 1}),
    ('{"a": 1, "b":', {"a": 1}),
    ('{"s": "a\\\\', {"s": "a\\"}),
    ('{"s": "a\\', {}),
    ('{"k": [{"x": 1}, {"y": [2, 3]}, {"z"', {"k": [{"x": 1}, {"y": [2, 3]}, {}]}),
    ('{"a": 1} trailing', {"a": 1}),
    ('{"a": [1, 2]]]', {"a": [1, 2]}),
    ("nul", {}),
    ('"just a str', "just a str"),
    ('{"n": -1.5e', {"n": -1.5}),
    ('{"a": {"b": 1}, "c": {"d": [true, false, null', {"a": {"b": 1}, "c": {"d": [True, False, None]}}),
    ('{"u": "\\u00e9t\\u00', {}),
    ('{"a": 1, "b": {"c": 2, "d": {"e": 3, "f": {"g": 4', {"a": 1, "b": {"c": 2, "d": {"e": 3, "f": {"g": 4}}}}),
    ("[[[[[[[[[[1]]]", [[[[[[[[[[1]]]]]]]]]]),
    ('{"x": "[{[{", "y": [1', {"x": "[{[{", "y": [1]}),
])
def test_salvage_of_ordinary_truncated_text_is_unchanged(text: str, expected: Any) -> None:
    assert parse_partial_json(text) == expected


def test_a_huge_flat_truncated_text_is_salvaged_without_copying_the_stack_per_cut() -> None:
    text = "[" * MAX_JSON_DEPTH + "1," * 200_000
    value = parse_partial_json(text)
    assert depth_of(value) == MAX_JSON_DEPTH


# --------------------------------------------------------------------------- the partial message


def partial_with_call(raw: str, chunk: int = 97) -> PartialAssistantMessage:
    p = PartialAssistantMessage.begin(api="t", provider="t", model="m")
    p = p.toolcall_start("call_1", "probe").partial
    for i in range(0, len(raw), chunk):
        p = p.toolcall_delta(0, raw[i:i + chunk]).partial
    return p


@pytest.mark.parametrize("name", sorted(TOO_DEEP))
def test_toolcall_end_marks_deep_text_invalid(name: str) -> None:
    raw = TOO_DEEP[name]
    p = partial_with_call(raw)
    assert p.tool_calls[0].arguments == {}  # reading the open block (a UI does) is safe too
    end = p.toolcall_end(0)
    assert end.tool_call.invalid_json == raw
    assert end.tool_call.arguments == {}
    assert end.partial.to_message().tool_calls == (end.tool_call,)


def test_toolcall_end_at_the_limit_parses() -> None:
    call = partial_with_call(at_limit_object()).toolcall_end(0).tool_call
    assert call.invalid_json is None and depth_of(call.arguments) == MAX_JSON_DEPTH


def test_toolcall_end_with_given_arguments_past_the_limit() -> None:
    p = partial_with_call("")
    call = p.toolcall_end(0, nest(3000, "x")).tool_call
    assert call.arguments == {}
    assert call.invalid_json == '{"a":' * 3000 + '"x"' + "}" * 3000
    kept = p.toolcall_end(0, nest(MAX_JSON_DEPTH)).tool_call
    assert kept.invalid_json is None and depth_of(kept.arguments) == MAX_JSON_DEPTH


def test_deep_text_from_a_deep_stack() -> None:
    """Called with little stack left, text at the limit that ``json`` cannot parse is invalid."""
    raw = at_limit_object()
    p = partial_with_call(raw)
    frame: Any = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 40)
    try:
        call = p.toolcall_end(0).tool_call
        too_deep = partial_with_call(TOO_DEEP["objects_3000"]).toolcall_end(0).tool_call
    finally:
        sys.setrecursionlimit(old)
    assert call.arguments == {} and call.invalid_json == raw
    assert too_deep.invalid_json == TOO_DEEP["objects_3000"]


def test_in_a_worker_thread_with_a_small_stack() -> None:
    spec = ToolSpec("probe", parameters={"type": "object", "properties": {"a": {"$ref": "#"}}})
    out: dict[str, Any] = {}

    def work() -> None:
        at_limit = partial_with_call(at_limit_object()).toolcall_end(0).tool_call
        out["at_limit"] = validate_arguments(spec, at_limit.arguments)
        out["deep"] = partial_with_call(TOO_DEEP["objects_3000"]).toolcall_end(0).tool_call
        out["thawed"] = depth_of(thaw(freeze(nest(5000))))

    old = threading.stack_size(256 * 1024)
    try:
        worker = threading.Thread(target=work)
        worker.start()
    finally:
        threading.stack_size(old)
    worker.join()
    assert depth_of(out["at_limit"].unwrap()) == MAX_JSON_DEPTH
    assert out["deep"].invalid_json == TOO_DEEP["objects_3000"]
    assert out["thawed"] == 5000


# --------------------------------------------------------------------------- frozen values, validation


def test_freeze_and_thaw_at_any_depth() -> None:
    deep = nest(10_000)
    frozen = freeze(deep)
    assert isinstance(frozen, FrozenDict) and freeze(frozen) is frozen
    assert depth_exceeds(frozen, 9_999) and not depth_exceeds(frozen, 10_000)
    thawed = thaw(frozen)
    assert type(thawed) is dict and depth_of(thawed) == 10_000
    lists: Any = 1
    for _ in range(5_000):
        lists = [lists, "x"]
    assert depth_of(freeze(lists)) == 5_000 and type(freeze(lists)) is tuple
    assert type(thaw(freeze(lists))) is list


def test_freeze_and_thaw_unchanged_on_ordinary_values() -> None:
    value = {"a": [1, {"b": (2, [3])}], 4: None, "t": (1, 2)}
    frozen = freeze(value)
    assert frozen == FrozenDict({"a": (1, FrozenDict({"b": (2, (3,))})), "4": None, "t": (1, 2)})
    assert thaw(frozen) == {"a": [1, {"b": [2, [3]]}], "4": None, "t": [1, 2]}
    flat = (1, "x", FrozenDict())
    assert freeze(flat) is flat
    # The same values at a depth where the explicit-stack walk takes over.
    deep = nest(60, value)
    inner = freeze(deep)
    for _ in range(60):
        inner = inner["a"]
    assert inner == frozen
    inner_thawed = thaw(freeze(deep))
    for _ in range(60):
        inner_thawed = inner_thawed["a"]
    assert inner_thawed == thaw(frozen)


def test_a_value_that_contains_itself_is_an_error_not_a_hang() -> None:
    loop: list[Any] = [1]
    loop.append({"again": loop})
    with pytest.raises(ValueError, match="contains itself"):
        freeze(loop)
    with pytest.raises(ValueError, match="contains itself"):
        thaw(loop)
    shared = [1]
    assert freeze([shared, {"s": shared}]) == ((1,), FrozenDict({"s": (1,)}))


def test_validation_refuses_arguments_past_the_limit() -> None:
    spec = ToolSpec("probe", parameters={"type": "object"})
    assert validate_arguments(spec, nest(MAX_JSON_DEPTH + 1)).failure() == (
        'Validation failed for tool "probe": its arguments are nested more than 100 levels deep')
    assert validate_arguments(spec, freeze(nest(5000))).failure().endswith("100 levels deep")
    ok = validate_arguments(spec, nest(MAX_JSON_DEPTH))
    assert depth_of(ok.unwrap()) == MAX_JSON_DEPTH


def test_validation_failure_text_at_the_limit() -> None:
    spec = ToolSpec("probe", parameters={"type": "object", "properties": {"a": {"$ref": "#"}}})
    text = validate_arguments(spec, nest(MAX_JSON_DEPTH)).failure()
    assert text.startswith('Validation failed for tool "probe":\n  - ' + "a/" * 99 + "a: 1 is not of type 'object'")
    assert text.endswith("\n\nReceived arguments:\n" + json.dumps(nest(MAX_JSON_DEPTH), indent=2))


# --------------------------------------------------------------------------- through the agent loop


def _probe_execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult((TextContent(f"depth {depth_of(args)}"),))


PROBE = AgentTool("probe", "Probe", "Reports how deep its arguments are", {"type": "object"},
                  _probe_execute)
CONFIG = AgentLoopConfig(model=Model(id="m"))


def scripted(raw: str) -> interpreters.ScriptedModel:
    return interpreters.ScriptedModel(
        [Reply(tool_calls=[ScriptedCall("probe", raw)]), "done"], chunk_size=101)


def probe_run(stream_fn: Any, flavour: Flavour = SYNC) -> tuple[list[Any], list[Any]]:
    """A run with the probe tool: ``(events, messages)``."""
    return flavour.run("go", AgentContext(tools=[PROBE]), CONFIG, stream_fn)


def check_run(events: list[Any], messages: list[Any]) -> tuple[ToolCall, str]:
    """The run made one call, answered it, went on to a second turn and ended normally."""
    assert events[-1].type == "agent_end"
    assert [e.type for e in events].count("turn_start") == 2
    user, first, result, final = messages
    assert isinstance(first, AssistantMessage) and first.stop_reason == "toolUse"
    assert isinstance(result, ToolResultMessage) and result.tool_call_id == first.tool_calls[0].id
    assert isinstance(final, AssistantMessage) and final.text == "done"
    ends = [e for e in events if e.type == "tool_execution_end"]
    assert len(ends) == 1
    return first.tool_calls[0], result.text


def reason_agnostic(text: str, raw: str) -> bool:
    """``text`` is the invalid-JSON result for ``raw``, whatever reason it gives."""
    expected = invalid_json_result(raw, "REASON")
    head, tail = expected.split("REASON")
    return text.startswith(head) and text.endswith(tail) and len(text) > len(head) + len(tail)


@pytest.mark.parametrize("name", sorted(TOO_DEEP))
def test_loop_answers_deep_arguments_with_the_invalid_json_result(name: str) -> None:
    raw = TOO_DEEP[name]
    model = scripted(raw)
    call, text = check_run(*probe_run(model))
    assert call.invalid_json == raw and call.arguments == {}
    assert reason_agnostic(text, raw), text
    # The second request carries the call (with no arguments) and the error result.
    second = model.requests[1].context.messages
    assert [type(m).__name__ for m in second] == ["UserMessage", "AssistantMessage", "ToolResultMessage"]
    assert isinstance(second[2], ToolResultMessage) and second[2].is_error


@pytest.mark.parametrize("name", sorted(TOO_DEEP))
def test_loop_result_names_the_limit(name: str) -> None:
    raw = TOO_DEEP[name]
    _, text = check_run(*probe_run(scripted(raw)))
    assert text == invalid_json_result(raw, LIMIT_REASON)


def test_loop_runs_a_call_at_the_limit() -> None:
    call, text = check_run(*probe_run(scripted(at_limit_object())))
    assert call.invalid_json is None
    assert text == f"depth {MAX_JSON_DEPTH}"


@pytest.mark.parametrize("raw", [
    '{"a":' * (MAX_JSON_DEPTH - 1) + "{",  # truncated, at the limit
    "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH,  # at the limit, but not an object
])
def test_loop_reports_other_problems_at_the_limit_as_before(raw: str) -> None:
    call, text = check_run(*probe_run(scripted(raw)))
    assert call.invalid_json == raw
    try:
        json.loads(raw)
        reason = "they are not a JSON object"
    except ValueError as exc:
        reason = str(exc)
    assert text == invalid_json_result(raw, reason)


def hand_written(first: Callable[[PartialAssistantMessage], Iterator[StreamEvent]]) -> Any:
    """A stream function: ``first`` streams the first reply, then a text reply ``done``."""
    calls = [0]

    def stream_fn(model: Model, context: LlmContext, options: Any) -> Iterator[StreamEvent]:
        calls[0] += 1
        p = PartialAssistantMessage.begin(api="hand", provider="hand", model=model.id)
        yield StartEvent(p)
        if calls[0] == 1:
            yield from first(p)
            return
        ev: Any = p.text_start()
        yield ev
        ev = ev.partial.text_delta(0, "done")
        yield ev
        ev = ev.partial.text_end(0)
        yield ev
        yield ev.partial.done("stop")

    return stream_fn


def test_loop_with_a_hand_written_stream_of_deltas() -> None:
    raw = TOO_DEEP["brackets_3000"]

    def first(p: PartialAssistantMessage) -> Iterator[StreamEvent]:
        ev: Any = p.toolcall_start("call_9", "probe")
        yield ev
        for i in range(0, len(raw), 7):
            ev = ev.partial.toolcall_delta(0, raw[i:i + 7])
            yield ev
        ev = ev.partial.toolcall_end(0)
        yield ev
        yield ev.partial.done("toolUse")

    call, text = check_run(*probe_run(hand_written(first)))
    assert call.id == "call_9" and call.invalid_json == raw
    assert reason_agnostic(text, raw)


def test_loop_with_given_arguments_past_the_limit() -> None:
    def first(p: PartialAssistantMessage) -> Iterator[StreamEvent]:
        ev: Any = p.toolcall_start("call_9", "probe")
        yield ev
        ev = ev.partial.toolcall_end(0, nest(3000))
        yield ev
        yield ev.partial.done("toolUse")

    call, text = check_run(*probe_run(hand_written(first)))
    assert call.invalid_json == objects(3000)
    assert reason_agnostic(text, objects(3000))


def test_loop_refuses_prepared_arguments_past_the_limit() -> None:
    tool = AgentTool("probe", "Probe", "deepens its arguments", {"type": "object"}, _probe_execute,
                     prepare_arguments=lambda args: nest(3000))
    _, text = check_run(*SYNC.run("go", AgentContext(tools=[tool]), CONFIG, scripted('{"x": 1}')))
    assert text == 'Validation failed for tool "probe": its arguments are nested more than 100 levels deep'


def test_asyncio_loop_answers_deep_arguments() -> None:
    raw = TOO_DEEP["objects_3000"]
    call, text = check_run(*probe_run(scripted(raw), ASYNCIO))
    assert call.invalid_json == raw and call.arguments == {}
    assert reason_agnostic(text, raw)
