"""The JSON codec at its edges: every record type's tag, exact encodings, error texts, the
registry for application types, text round trips and the partial fold.

The first test encodes one record of every type the codec registers when it is imported. It
comes first on purpose: mutation testing (docs/mutation.md) credits what runs while the test
modules are imported to the first test of the run, and that is where the codec builds its
registry.
"""

from __future__ import annotations

import datetime
import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar

import pytest
from pyrsistent import PVector, pvector

from agentcore import (
    AbortRequested,
    AfterToolCall,
    AfterToolCallContext,
    AfterToolCallDecided,
    AfterToolCallResult,
    AgentContext,
    AgentEndEvent,
    AgentStartEvent,
    AgentTool,
    AgentToolResult,
    ArgumentsPrepared,
    AssistantMessage,
    BeforeToolCall,
    BeforeToolCallContext,
    BeforeToolCallDecided,
    BeforeToolCallResult,
    CallLlm,
    CancelLlm,
    ContextConverted,
    ContextTransformed,
    Continued,
    ConvertToLlm,
    Emit,
    ExecuteTool,
    FollowUpsPolled,
    FrozenDict,
    HookFailed,
    ImageContent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    NextTurn,
    NextTurnPrepared,
    PartialAssistantMessage,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    PrepareNextTurnContext,
    RunEnded,
    ShouldStopAfterTurn,
    Started,
    StartEvent,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamEventReceived,
    StreamFailed,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolFailed,
    ToolFinished,
    ToolResultMessage,
    ToolSpec,
    ToolUpdated,
    TransformContext,
    TurnEndEvent,
    TurnStartEvent,
    UserMessage,
    freeze,
    initial_state,
    replace,
)
from agentcore.codec import (
    CodecError,
    PartialFold,
    dumps,
    encode_bytes,
    from_json,
    json_form,
    loads,
    parse,
    prepared,
    register,
    to_json,
    try_from_json,
)
from agentcore.inputs import ToolTimedOut
from agentcore.llm import LlmContext
from agentcore.machine import Rejection
from agentcore.messages import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    ModelCost,
    Usage,
)
from agentcore.records import record_fields
from agentcore.state import (
    AwaitingConvert,
    AwaitingFollowUps,
    AwaitingNextTurn,
    AwaitingSteering,
    AwaitingStopDecision,
    AwaitingTransform,
    CompletedTurn,
    Finished,
    Idle,
    LoopState,
    RunningTools,
    Streaming,
    ToolSlot,
)
from agentcore.stream import DoneEvent, ErrorEvent

# --------------------------------------------------------------------------- one of everything

USAGE = Usage(1, 2, 3, 4, 10, Cost(0.5, 0.25, 0.125, 0.0625, 0.9375))
CALL = ToolCall("c1", "add", {"type": "sum", "a": [1, 2]}, "sig-c")
ASSISTANT = AssistantMessage((ThinkingContent("hmm", "sig-t", True), TextContent("sure", "sig-x"), CALL),
                             api="api", provider="prov", model="m", usage=USAGE, stop_reason="toolUse",
                             response_id="r1", timestamp=6)
RESULT = AgentToolResult((TextContent("3"),), {"type": "sum", "value": 3}, USAGE, ("mul",), True)
TOOL_MESSAGE = ToolResultMessage("c1", "add", (TextContent("3"),), details={"type": "sum"}, is_error=False,
                                 usage=USAGE, added_tool_names=("mul",), timestamp=7)
USER = UserMessage((TextContent("hi"), ImageContent("aGk=", "image/png")), timestamp=5)
SPEC = ToolSpec("add", "adds", {"type": "object", "properties": {"a": {"type": "integer", "default": 1}}},
                "Add", "parallel", True)
MODEL = Model(id="m", name="M", api="api", provider="prov", base_url="http://x", reasoning=True,
              input=("text", "image"), cost=ModelCost(1.0, 2.0, 3.0, 4.0), context_window=100, max_tokens=10,
              headers=FrozenDict({"type": "h"}))
CONTEXT = AgentContext("sys", (USER,), (SPEC,))
NEXT = PrepareNextTurnContext(ASSISTANT, (TOOL_MESSAGE,), CONTEXT, pvector([USER]))


def stream_of(message: AssistantMessage) -> list[Any]:
    """The stream events of ``message`` (text, thinking and tool-call blocks), start to done."""
    p = PartialAssistantMessage.begin(api=message.api, provider=message.provider, model=message.model)
    events: list[Any] = [StartEvent(p)]

    def push(event: Any) -> None:
        nonlocal p
        events.append(event)
        p = event.partial

    for index, block in enumerate(message.content):
        if isinstance(block, TextContent):
            push(p.text_start())
            push(p.text_delta(index, block.text[:2]))
            push(p.text_delta(index, block.text[2:]))
            push(p.text_end(index, block.text_signature))
        elif isinstance(block, ThinkingContent):
            push(p.thinking_start())
            push(p.thinking_delta(index, block.thinking))
            push(p.thinking_end(index, block.thinking_signature))
        else:
            push(p.toolcall_start(block.id, block.name))
            text = json.dumps(dict(block.arguments))
            push(p.toolcall_delta(index, text[:5]))
            push(p.toolcall_delta(index, text[5:]))
            push(p.toolcall_end(index, thought_signature=block.thought_signature))
    events.append(p.done("stop"))
    return events


PLAIN = AssistantMessage((TextContent("sure", "sig-x"), ToolCall("c1", "add", {"type": "sum"}, "sig-c")),
                         model="m", stop_reason="toolUse")
STREAM = stream_of(AssistantMessage((ThinkingContent("hmm", "sig-t"), *PLAIN.content), model="m"))
PARTIAL = STREAM[-2].partial
THINKING_DELTA = STREAM[2]
TOOLCALL_START = STREAM[8]


def every_record() -> list[Any]:
    state = initial_state(CONTEXT, model=MODEL, hooks=frozenset({"before_tool_call", "after_tool_call"}))
    run = replace(state.run, new_messages=pvector([USER]), has_more_tool_calls=True,
                              last_turn=CompletedTurn(ASSISTANT, (TOOL_MESSAGE,)), turn_open=True, next_id=9)
    slot = ToolSlot(CALL, "done", 3, freeze({"type": "sum", "a": [1, 2]}), RESULT, True, 8, TOOL_MESSAGE)
    return [
        # messages and their parts
        TextContent("hi", "sig"), ThinkingContent("hmm", "s", True), ImageContent("aGk=", "image/png"), CALL,
        USAGE, USAGE.cost, MODEL.cost, MODEL, USER, ASSISTANT, TOOL_MESSAGE,
        BashExecutionMessage(command="ls", output="out", exit_code=0, cancelled=True, truncated=True,
                             full_output_path="/o", exclude_from_context=True, timestamp=8),
        BranchSummaryMessage(summary="branch", from_id="b1", timestamp=9),
        CompactionSummaryMessage(summary="compact", tokens_before=100, timestamp=10),
        # stream events
        *STREAM, ErrorEvent("aborted", replace(PLAIN, stop_reason="aborted", error_message="stop")),
        # agent events
        AgentStartEvent(), AgentEndEvent((USER, ASSISTANT)), MessageStartEvent(USER), MessageEndEvent(ASSISTANT),
        MessageUpdateEvent(THINKING_DELTA.partial, THINKING_DELTA), ToolExecutionStartEvent("c1", "add", {"type": "a"}),
        ToolExecutionUpdateEvent("c1", "add", {"a": 1}, {"done": 0.5}),
        ToolExecutionEndEvent("c1", "add", RESULT, True),
        TurnStartEvent(), TurnEndEvent(ASSISTANT, (TOOL_MESSAGE,)),
        # tools, config, llm
        RESULT, SPEC, CONTEXT, LlmContext("sys", pvector([USER]), (SPEC,)),
        BeforeToolCallContext(ASSISTANT, CALL, {"type": "a"}, CONTEXT), BeforeToolCallResult(True, "no", True),
        AfterToolCallContext(ASSISTANT, CALL, {"a": 1}, RESULT, True, CONTEXT),
        AfterToolCallResult((TextContent("x"),), {"type": "d"}, True, USAGE, False),
        NextTurn(CONTEXT, MODEL, "high"), NEXT,
        # inputs
        Started((USER,), 1), Continued(2), SteeringPolled(1, (USER,), 3), FollowUpsPolled(1, (USER,), 4),
        ContextTransformed(1, pvector([USER]), 5), ContextConverted(1, pvector([USER]), 6),
        StreamEventReceived(1, STREAM[1], 7), StreamFailed(1, "boom", 8), ArgumentsPrepared(1, {"type": "a"}, 9),
        BeforeToolCallDecided(1, BeforeToolCallResult(False), 10), ToolUpdated(1, {"type": "p"}, 11),
        ToolFinished(1, RESULT, 12), ToolFailed(1, "bad", 13), ToolTimedOut(1, 500, 14),
        AfterToolCallDecided(1, None, 15), NextTurnPrepared(1, NextTurn(), 16), StopAfterTurnDecided(1, True, 17),
        HookFailed(1, "hook", 18), AbortRequested(19),
        # effects
        Emit(TurnStartEvent()), PollSteering(1), PollFollowUps(2), TransformContext(3, pvector([USER])),
        ConvertToLlm(4, pvector([USER])), CallLlm(5, MODEL, "low", "sys", pvector([USER]), (SPEC,)), CancelLlm(6),
        PrepareArguments(7, CALL), BeforeToolCall(8, BeforeToolCallContext(ASSISTANT, CALL, {"a": 1}, CONTEXT)),
        ExecuteTool(9, CALL, {"type": "a"}), AfterToolCall(10, AfterToolCallContext(ASSISTANT, CALL, {}, RESULT,
                                                                                    False, CONTEXT)),
        PrepareNextTurn(11, NEXT), ShouldStopAfterTurn(12, NEXT), RunEnded((USER, ASSISTANT)),
        # the state and its phases
        Idle(), AwaitingSteering(1), AwaitingFollowUps(2), AwaitingNextTurn(3), AwaitingTransform(4),
        AwaitingConvert(5), AwaitingStopDecision(6), Streaming(7, PARTIAL, ("thinking", "text", "toolCall")),
        RunningTools(ASSISTANT, True, (slot,), 1), Finished(), slot, run.last_turn, run, LoopState(Idle(), run),
        Rejection("why", "idle", "continued"),
    ]


# The wire names: transcripts written by one version are read by the next, so these never change.
TAGS = {
    "text", "thinking", "image", "toolCall", "Usage", "Cost", "ModelCost", "Model", "user", "assistant",
    "toolResult", "bashExecution", "branchSummary", "compactionSummary",
    "start", "thinking_start", "thinking_delta", "thinking_end", "text_start", "text_delta", "text_end",
    "toolcall_start", "toolcall_delta", "toolcall_end", "done", "error",
    "agent_start", "agent_end", "message_start", "message_end", "message_update", "tool_execution_start",
    "tool_execution_update", "tool_execution_end", "turn_start", "turn_end",
    "AgentToolResult", "ToolSpec", "AgentContext", "LlmContext", "BeforeToolCallContext", "BeforeToolCallResult",
    "AfterToolCallContext", "AfterToolCallResult", "NextTurn", "PrepareNextTurnContext",
    "started", "continued", "steering_polled", "follow_ups_polled", "context_transformed", "context_converted",
    "stream_event_received", "stream_failed", "arguments_prepared", "before_tool_call_decided", "tool_updated",
    "tool_finished", "tool_failed", "tool_timed_out", "after_tool_call_decided", "next_turn_prepared",
    "stop_after_turn_decided", "hook_failed", "abort_requested",
    "emit", "poll_steering", "poll_follow_ups", "transform_context", "convert_to_llm", "call_llm", "cancel_llm",
    "prepare_arguments", "before_tool_call", "execute_tool", "after_tool_call", "prepare_next_turn",
    "should_stop_after_turn", "run_ended",
    "Idle", "AwaitingSteering", "AwaitingFollowUps", "AwaitingNextTurn", "AwaitingTransform", "AwaitingConvert",
    "AwaitingStopDecision", "Streaming", "RunningTools", "Finished", "ToolSlot", "CompletedTurn", "RunState",
    "LoopState", "Rejection",
}


def test_every_record_type_has_its_tag_and_comes_back_equal_through_json_text() -> None:
    records = every_record()
    seen = set()
    for value in records:
        data = to_json(value)
        # derived fields are not written; a result's is_error (new in 0.6) only when true
        unwritten = {"tool_index", "call_ids"} | ({"is_error"} if type(value) is AgentToolResult else set())
        assert set(data) == {"type"} | set(record_fields(type(value))) - unwritten
        seen.add(data["type"])
        back = from_json(json.loads(json.dumps(data)))
        assert type(back) is type(value)
        assert back == value, data["type"]
        assert to_json(back) == data
    assert seen == TAGS
    # A result's error flag is written only when set, so results written before 0.6 read the same.
    failed = AgentToolResult((TextContent("no such city"),), {"code": 404}, is_error=True)
    assert to_json(failed) == {"type": "AgentToolResult", "content": [{"type": "text", "text": "no such city",
                               "text_signature": None}], "details": {"code": 404}, "usage": None,
                               "added_tool_names": None, "terminate": None, "is_error": True}
    assert from_json(to_json(failed)) == failed and from_json(to_json(RESULT)).is_error is False
    # Free JSON (fields typed JSON, FrozenDict or Mapping) is written as it is, "type" keys and all.
    assert to_json(RESULT)["details"] == {"type": "sum", "value": 3}
    assert to_json(CALL)["arguments"] == {"type": "sum", "a": [1, 2]}
    assert to_json(MODEL)["headers"] == {"type": "h"}
    # Fields typed as sequences come back as persistent vectors, hook names as a frozenset.
    run = records[-2].run
    back = from_json(to_json(records[-2])).run
    assert isinstance(back.messages, PVector) and isinstance(back.new_messages, PVector)
    assert isinstance(back.hooks, frozenset) and back.hooks == run.hooks
    assert back.tool_index == {"add": SPEC}
    assert back.call_ids == run.call_ids
    assert isinstance(from_json(to_json(CONTEXT)).messages, PVector)
    assert isinstance(from_json(to_json(ContextConverted(1, pvector([USER]), 6))).messages, PVector)
    # Stream events written without their partials read back without them; a block event's own
    # fields are required, a tool call's id and name have defaults.
    for event in STREAM[1:-1]:
        bare = to_json(event, partials=False)
        assert set(bare) == set(to_json(event)) - {"partial"}
        assert from_json(json.loads(json.dumps(bare))) == replace(event, partial=None)
    with pytest.raises(CodecError) as err:
        from_json({"type": "text_end", "partial": None})
    assert str(err.value) == "text_end at $ lacks content_index, content"
    assert from_json({"type": "toolcall_start", "content_index": 1}) == \
        replace(TOOLCALL_START, content_index=1, partial=None, id="", name="")
    for data, where in (({"type": "text_end", "content_index": 0, "content": {"type": "nope"}}, "$.content"),
                        ({"type": "text_delta", "content_index": 0, "delta": "x", "partial": {"type": "nope"}},
                         "$.partial")):
        with pytest.raises(CodecError) as err:
            from_json(data)
        assert str(err.value).startswith(f"unknown type tag 'nope' at {where} ")
    # Tools are written as their specs, a partial message as the message it stands for.
    tool = AgentTool("add", "Add", "adds", {"type": "object"}, lambda *a: None)
    assert to_json(tool) == to_json(ToolSpec("add", "adds", {"type": "object"}, "Add"))
    assert to_json(PARTIAL) == {"type": "partial_assistant", "message": to_json(PARTIAL.to_message())}


def test_fields_holding_free_json_are_written_as_they_are() -> None:
    assert to_json(CALL) == {"type": "toolCall", "id": "c1", "name": "add", "arguments": {"type": "sum", "a": [1, 2]},
                             "thought_signature": "sig-c", "invalid_json": None}
    assert to_json(MODEL)["headers"] == {"type": "h"}
    assert to_json(RESULT) == {
        "type": "AgentToolResult", "content": [{"type": "text", "text": "3", "text_signature": None}],
        "details": {"type": "sum", "value": 3},
        "usage": {"type": "Usage", "input": 1, "output": 2, "cache_read": 3, "cache_write": 4, "total_tokens": 10,
                  "cost": {"type": "Cost", "input": 0.5, "output": 0.25, "cache_read": 0.125, "cache_write": 0.0625,
                           "total": 0.9375}},
        "added_tool_names": ["mul"], "terminate": True}
    assert to_json(SPEC) == {"type": "ToolSpec", "name": "add", "description": "adds",
                             "parameters": {"type": "object",
                                            "properties": {"a": {"type": "integer", "default": 1}}},
                             "label": "Add", "execution_mode": "parallel", "has_prepare_arguments": True}
    back = from_json(to_json(CALL))
    assert back.arguments == {"type": "sum", "a": (1, 2)} and isinstance(back.arguments, FrozenDict)


def test_the_run_state_leaves_out_its_tool_index_and_writes_hooks_sorted() -> None:
    state = initial_state(CONTEXT, model=Model(id="m"), hooks=frozenset({"b", "a", "c"}))
    data = to_json(state.run)
    assert "tool_index" not in data
    assert data["hooks"] == ["a", "b", "c"]
    assert data["messages"] == [to_json(USER)]
    assert data["tools"] == [to_json(SPEC)]


def test_a_run_state_without_its_tools_cannot_be_built() -> None:
    data = to_json(initial_state(CONTEXT, model=Model(id="m")).run)
    del data["tools"]
    with pytest.raises(CodecError) as err:
        from_json({"type": "LoopState", "phase": {"type": "Idle"}, "run": data})
    assert str(err.value).startswith("cannot build RunState at $.run: ")
    assert "'tools'" in str(err.value)


# --------------------------------------------------------------------------- stream events


def test_block_events_carry_their_partial_unless_asked_not_to() -> None:
    delta = THINKING_DELTA
    assert to_json(delta) == {"type": "thinking_delta", "content_index": 0, "delta": "hmm",
                              "partial": to_json(delta.partial)}
    assert to_json(delta, partials=False) == {"type": "thinking_delta", "content_index": 0, "delta": "hmm"}
    assert to_json(delta.partial) == {"type": "partial_assistant", "message": to_json(delta.partial.to_message())}
    assert to_json(TOOLCALL_START, partials=False) == {"type": "toolcall_start", "content_index": 2, "id": "c1",
                                              "name": "add"}
    assert from_json(to_json(delta, partials=False)) == replace(delta, partial=None)


@pytest.mark.parametrize("wrap", [
    lambda e: (e,), lambda e: [e], lambda e: pvector([e]), lambda e: frozenset({e}), lambda e: {"k": e},
    lambda e: MessageUpdateEvent(e.partial, e), lambda e: StreamEventReceived(1, e, 2),
], ids=["tuple", "list", "pvector", "frozenset", "mapping", "record", "input"])
def test_partials_are_kept_or_dropped_at_any_depth(wrap: Any) -> None:
    delta = THINKING_DELTA
    assert json.dumps(to_json(wrap(delta))).count('"partial"') == json.dumps(to_json(delta)).count('"partial"')
    assert '"partial"' in json.dumps(to_json(wrap(delta)))
    dropped = json.dumps(to_json(wrap(delta), partials=False))
    assert '"partial":' not in dropped.replace(" ", "")


def test_a_block_event_without_its_fields_names_them() -> None:
    with pytest.raises(CodecError) as err:
        from_json({"type": "text_end", "partial": None})
    assert str(err.value) == "text_end at $ lacks content_index, content"
    with pytest.raises(CodecError) as err:
        from_json([{"type": "toolcall_start"}])
    assert str(err.value) == "toolcall_start at $[0] lacks content_index"
    assert from_json({"type": "toolcall_start", "content_index": 1}) == \
        replace(TOOLCALL_START, content_index=1, partial=None, id="", name="")


def test_errors_inside_an_event_name_the_path() -> None:
    with pytest.raises(CodecError) as err:
        from_json({"type": "text_end", "content_index": 0, "content": {"type": "nope"}})
    assert str(err.value).startswith("unknown type tag 'nope' at $.content ")
    with pytest.raises(CodecError) as err:
        from_json({"type": "text_delta", "content_index": 0, "delta": "x", "partial": {"type": "nope"}})
    assert str(err.value).startswith("unknown type tag 'nope' at $.partial ")
    with pytest.raises(CodecError) as err:
        from_json({"type": "partial_assistant", "message": {"type": "nope"}})
    assert str(err.value).startswith("unknown type tag 'nope' at $.message ")


# --------------------------------------------------------------------------- plain values


def test_plain_objects_and_lists() -> None:
    assert to_json({"a": 1, 2: [True, None]}) == {"a": 1, "2": [True, None]}
    assert to_json({"type": "user", "n": {"m": [1, {"k": 2}]}, "t": (1,)}) == {
        "type": "json", "value": {"type": "user", "n": {"m": [1, {"k": 2}]}, "t": [1]}}
    assert from_json({"type": "json", "value": {"type": "user", "n": [1]}}) == FrozenDict({"type": "user", "n": (1,)})
    assert from_json({"a": [1, {"b": "c"}]}) == FrozenDict({"a": (1, FrozenDict({"b": "c"}))})
    assert to_json(frozenset({"b", "a"})) == ["a", "b"]


def test_free_json_may_hold_records_and_what_json_cannot_hold_is_written_in_its_json_form() -> None:
    assert to_json({"type": "x", "m": UserMessage("hi", timestamp=1), "d": Decimal("1.50"), "c": UserMessage}) == {
        "type": "json", "value": {"type": "x", "m": {"type": "user", "content": "hi", "timestamp": 1},
                                  "d": "1.50", "c": repr(UserMessage)}}
    assert to_json(ToolCall("c", "f", {"when": datetime.date(2024, 5, 6), 3: b"hi"})) == {
        "type": "toolCall", "id": "c", "name": "f", "arguments": {"when": "2024-05-06", "3": "aGk="},
        "thought_signature": None, "invalid_json": None}


class Colour(enum.Enum):
    RED = "red"
    PAIR = (1, Decimal("2"))


class Level(int):
    pass


class Name(str):
    pass


class Ratio(float):
    pass


@pytest.mark.parametrize(("value", "form"), [
    (datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc), "2024-05-06T07:08:09Z"),
    (datetime.date(2024, 5, 6), "2024-05-06"),
    (datetime.time(7, 8), "07:08:00"),
    (Decimal("1.10"), "1.10"),
    ({3, 1, 2}, [1, 2, 3]),
    (frozenset({"b", 1, (2, "a")}), ["b", 1, [2, "a"]]),  # in the order of their JSON text
    (b"hi", "aGk="), (bytearray(b"hi"), "aGk="), (memoryview(b"hi"), "aGk="),
    (Colour.RED, "red"), (Colour.PAIR, [1, "2"]),
    (Level(3), 3), (Name("n"), "n"), (Ratio(0.5), 0.5),
    (datetime.date, repr(datetime.date)),
    (None, None), (True, True), (1.5, 1.5), ("s", "s"),
])
def test_the_json_form_of_what_json_cannot_hold(value: Any, form: Any) -> None:
    result = json_form(value)
    assert result == form
    assert type(result) is type(form)
    free = to_json({"type": "x", "v": value})["value"]["v"]
    assert free == form and type(free) is type(form)
    assert to_json({"type": "x", "v": free})["value"]["v"] == form  # the form encodes to itself


def test_a_set_s_order_does_not_depend_on_the_key_order_of_its_objects() -> None:
    # Sorted by their JSON text with sorted keys: {"a": 1, "b": 0} before {"a": 2}, whatever the
    # order the keys were given in.
    items = {FrozenDict({"b": 0, "a": 1}), FrozenDict({"a": 2})}
    assert json_form(items) == [{"b": 0, "a": 1}, {"a": 2}]
    assert json_form({FrozenDict({"a": 1, "b": 0}), FrozenDict({"a": 2})}) == [{"a": 1, "b": 0}, {"a": 2}]


def test_any_other_object_is_written_as_its_repr() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "Thing()"

    assert json_form(Thing()) == "Thing()"
    assert json_form(True) is True and type(json_form(Level(0))) is int


def test_a_tool_is_written_as_its_spec() -> None:
    tool = AgentTool("add", "Add", "adds", {"type": "object"}, lambda *a: None, execution_mode="sequential")
    assert to_json(tool) == to_json(ToolSpec("add", "adds", {"type": "object"}, "Add", "sequential", False))
    assert from_json(to_json(AgentContext("s", (), (tool,)))).tools == (tool.spec,)


def test_what_cannot_be_encoded_names_its_type() -> None:
    with pytest.raises(CodecError) as err:
        to_json(object())
    assert str(err.value) == "cannot encode a object: register it with agentcore.codec.register"


@pytest.mark.parametrize(("data", "message"), [
    ({"type": "nope"}, "unknown type tag 'nope' at $ (register application types with agentcore.codec.register)"),
    ({"type": ["x"]}, "unknown type tag ['x'] at $ (register application types with agentcore.codec.register)"),
    ({"type": 3}, "unknown type tag 3 at $ (register application types with agentcore.codec.register)"),
    ([1, {"k": {"type": "nope"}}],
     "unknown type tag 'nope' at $[1].k (register application types with agentcore.codec.register)"),
    ({"type": "user", "content": [{"type": "nope"}]},
     "unknown type tag 'nope' at $.content[0] (register application types with agentcore.codec.register)"),
    ({"type": "LoopState", "phase": {"type": "Idle"}, "run": {"type": "RunState", "messages": [{"type": "nope"}]}},
     "unknown type tag 'nope' at $.run.messages[0] (register application types with agentcore.codec.register)"),
    ({"type": "user"}, "cannot build user at $: Missing required argument 'content'"),
])
def test_decoding_errors_name_the_path(data: Any, message: str) -> None:
    with pytest.raises(CodecError) as err:
        from_json(data)
    assert str(err.value) == message
    assert try_from_json(data).failure() == message


def test_try_from_json_holds_the_value_on_success() -> None:
    assert try_from_json(to_json(USER)).unwrap() == USER


def test_text_round_trips_compact_and_unicode() -> None:
    value = UserMessage("héllo ✓", timestamp=1)
    text = dumps(value)
    assert text == '{"type":"user","content":"héllo ✓","timestamp":1}'
    assert loads(text) == value
    delta = THINKING_DELTA
    assert dumps(delta, partials=False) == '{"type":"thinking_delta","content_index":0,"delta":"hmm"}'
    assert loads(dumps(delta)) == delta


def test_loads_refuses_text_that_is_not_json() -> None:
    with pytest.raises(CodecError) as err:
        loads("{nope")
    assert str(err.value) == "not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    with pytest.raises(CodecError) as err:
        loads('{"type": "nope"}')
    assert str(err.value).startswith("unknown type tag 'nope' at $ ")


# --------------------------------------------------------------------------- application types


@dataclass(frozen=True)
class Note:
    role: ClassVar[str] = "test_codec.note"
    text: str
    tags: frozenset[str] = frozenset()
    meta: Mapping[str, Any] = field(default_factory=lambda: FrozenDict({}))
    refs: Sequence[Any] = ()
    parts: tuple[Any, ...] = ()
    size: int = field(default=0, init=False)


@dataclass(frozen=True)
class Flag:
    type: ClassVar[str] = "test_codec.flag"
    on: bool


@dataclass(frozen=True)
class Plain:
    x: Any = None


@dataclass(frozen=True)
class Other:
    x: Any = None


@dataclass(frozen=True)
class Sized:
    items: tuple[str, ...]
    count: int = 0


def test_an_application_type_is_registered_under_its_role_type_or_name() -> None:
    assert register(Note) is Note
    register(Flag)
    register(Plain, "test_codec.plain")
    note = Note("hi", frozenset({"b", "a"}), freeze({"type": "kept", "n": [1]}),
                pvector([UserMessage("x", timestamp=1)]), (TextContent("t"), {"k": 1}))
    data = to_json(note)
    assert data == {"type": "test_codec.note", "text": "hi", "tags": ["a", "b"],
                    "meta": {"type": "kept", "n": [1]},
                    "refs": [{"type": "user", "content": "x", "timestamp": 1}],
                    "parts": [{"type": "text", "text": "t", "text_signature": None}, {"k": 1}]}
    back = from_json(json.loads(json.dumps(data)))
    assert back == note
    assert isinstance(back.tags, frozenset) and isinstance(back.refs, PVector)
    assert back.meta == FrozenDict({"type": "kept", "n": (1,)}) and isinstance(back.meta, FrozenDict)
    assert back.parts == (TextContent("t"), FrozenDict({"k": 1}))
    assert to_json(Flag(True)) == {"type": "test_codec.flag", "on": True}
    assert from_json({"type": "test_codec.flag", "on": False}) == Flag(False)
    assert to_json(Plain(Flag(True))) == {"type": "test_codec.plain", "x": {"type": "test_codec.flag", "on": True}}
    assert to_json(Plain(Flag(True)), partials=False) == to_json(Plain(Flag(True)))
    assert to_json(Plain(THINKING_DELTA), partials=False) == {
        "type": "test_codec.plain", "x": to_json(THINKING_DELTA, partials=False)}
    assert to_json(Plain(THINKING_DELTA))["x"] == to_json(THINKING_DELTA)


def test_missing_fields_take_their_defaults_and_absent_sequences_stay_none() -> None:
    register(Note)
    assert from_json({"type": "test_codec.note", "text": "t"}) == Note("t")
    assert from_json({"type": "test_codec.note", "refs": None, "text": "t"}).refs is None
    with pytest.raises(CodecError) as err:
        from_json({"type": "test_codec.note", "tags": []})
    assert str(err.value) == ("cannot build test_codec.note at $: Note.__init__() missing 1 required positional "
                              "argument: 'text'")
    with pytest.raises(CodecError) as err:
        from_json({"type": "test_codec.note", "text": "t", "refs": [{"type": "nope"}]})
    assert str(err.value).startswith("unknown type tag 'nope' at $.refs[0] ")
    with pytest.raises(CodecError) as err:
        from_json([{"type": "test_codec.note", "text": "t", "parts": [{"type": "nope"}]}])
    assert str(err.value).startswith("unknown type tag 'nope' at $[0].parts[0] ")


def test_skipped_fields_are_rebuilt() -> None:
    seen: list[dict[str, Any]] = []

    def rebuild(fields: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(fields))
        return {**fields, "count": len(fields["items"])}

    register(Sized, "test_codec.sized", skip=("count",), rebuild=rebuild)
    assert to_json(Sized(("a", "b"), 2)) == {"type": "test_codec.sized", "items": ["a", "b"]}
    assert from_json({"type": "test_codec.sized", "items": ["a", "b"], "count": 7}) == Sized(("a", "b"), 2)
    assert seen == [{"items": ("a", "b")}]


@pytest.mark.parametrize("tag", ["json", "partial_assistant"])
def test_the_codec_s_own_tags_are_reserved(tag: str) -> None:
    with pytest.raises(ValueError) as err:
        register(Other, tag)
    assert str(err.value) == f"type tag {tag!r} is reserved by the codec"


def test_a_tag_belongs_to_one_class() -> None:
    register(Plain, "test_codec.plain")
    register(Plain, "test_codec.plain")  # the same class again is fine
    with pytest.raises(ValueError) as err:
        register(Other, "test_codec.plain")
    assert str(err.value) == "type tag 'test_codec.plain' is already used by Plain"
    with pytest.raises(ValueError) as err:
        register(Other, "user")
    assert str(err.value) == "type tag 'user' is already used by UserMessage"
    assert from_json({"type": "test_codec.plain", "x": 1}) == Plain(1)


# --------------------------------------------------------------------------- the partial fold


def fold(events: list[Any]) -> list[Any]:
    f = PartialFold()
    return [f.apply(from_json(json.loads(dumps(e, partials=False)))) for e in events]


def test_the_fold_rebuilds_every_partial_of_a_recorded_reply() -> None:
    events = stream_of(AssistantMessage((ThinkingContent("let me see", "sig-t"), TextContent("hello there", "sig"),
                                         ToolCall("c9", "add", {"a": 1, "b": [2]}, "ts"), TextContent("bye")),
                                        model="m"))
    rebuilt = fold(events)
    assert rebuilt == events
    assert [e.partial for e in rebuilt[1:-1]] == [e.partial for e in events[1:-1]]
    assert rebuilt[-1] == events[-1]


def test_the_fold_keeps_the_recorded_fields_of_each_event() -> None:
    p = PartialAssistantMessage.begin(model="m")
    start = StartEvent(p)
    opened = p.text_start()
    streamed = opened.partial.text_delta(0, "abc")
    closed = streamed.partial.text_end(0, "sig", "replaced")
    call_open = closed.partial.toolcall_start("c1", "f")
    call_delta = call_open.partial.toolcall_delta(1, '{"x": 1')
    call_end = call_delta.partial.toolcall_end(1, {"y": 2}, id="c2", name="g", thought_signature="ts")
    thinking = call_end.partial.thinking_start()
    thought = thinking.partial.thinking_delta(2, "streamed")
    thought_end = thought.partial.thinking_end(2, "sig-t", "recorded")
    events = [start, opened, streamed, closed, call_open, call_delta, call_end, thinking, thought, thought_end]
    rebuilt = fold(events)
    assert rebuilt == events
    assert rebuilt[-1].partial.content[2] == ThinkingContent("recorded", "sig-t")
    assert rebuilt[3].content == TextContent("replaced", "sig")
    assert rebuilt[6].tool_call == ToolCall("c2", "g", {"y": 2}, "ts")
    assert rebuilt[6].partial.content[1] == ToolCall("c2", "g", {"y": 2}, "ts")


def test_the_fold_passes_events_that_carry_their_partial_and_follows_them() -> None:
    events = stream_of(PLAIN)
    f = PartialFold()
    assert f.apply(events[0]) is events[0]
    assert f.apply(events[1]) is events[1]  # a block event that kept its partial
    assert f.partial is events[1].partial
    stripped = from_json(to_json(events[2], partials=False))
    assert f.apply(stripped) == events[2]
    assert f.apply(events[-1]) is events[-1]  # not a block event
    assert f.partial == events[2].partial


def test_the_fold_needs_the_start_event_first() -> None:
    delta = from_json(to_json(THINKING_DELTA, partials=False))
    with pytest.raises(CodecError) as err:
        PartialFold().apply(delta)
    assert str(err.value) == "thinking_delta event before the stream's start event"
    with pytest.raises(CodecError) as err:
        PartialFold().apply(StartEvent(None))  # type: ignore[arg-type]
    assert str(err.value) == "the start event's partial is a NoneType, not a partial assistant message"
    with pytest.raises(CodecError) as err:
        PartialFold().apply(StartEvent(PLAIN))  # type: ignore[arg-type]
    assert str(err.value) == "the start event's partial is a AssistantMessage, not a partial assistant message"
    assert PartialFold().partial is None


def test_the_fold_keeps_the_recorded_content_of_a_redacted_thinking_block() -> None:
    p = PartialAssistantMessage.begin(model="m")
    opened = p.thinking_start(redacted=True)
    streamed = opened.partial.thinking_delta(0, "opaque")
    closed = streamed.partial.thinking_end(0, "sig")
    rebuilt = fold([StartEvent(p), opened, streamed, closed])
    assert rebuilt[-1].content == ThinkingContent("opaque", "sig", True)
    assert rebuilt[-1].partial.content[0].thinking == "opaque"


def test_the_fold_keeps_a_redacted_thinking_block_redacted() -> None:
    p = PartialAssistantMessage.begin(model="m")
    opened = p.thinking_start(redacted=True)
    streamed = opened.partial.thinking_delta(0, "opaque")
    closed = streamed.partial.thinking_end(0, "sig")
    events = [StartEvent(p), opened, streamed, closed]
    assert opened.redacted and streamed.partial.blocks[0].redacted
    assert fold(events) == events
    assert [to_json(e, partials=False) for e in events][1] == {
        "type": "thinking_start", "content_index": 0, "redacted": True}


def test_the_fold_takes_a_recorded_header_before_the_event() -> None:
    events = stream_of(PLAIN)
    later = replace(events[0].partial.header, response_id="r2", usage=USAGE)
    f = PartialFold()
    f.apply(events[0])
    opened = f.apply(from_json(to_json(events[1], partials=False)), later)
    assert opened.partial.header == later and opened.partial.response_id == "r2"
    assert f.partial is opened.partial
    same = f.apply(from_json(to_json(events[2], partials=False)), f.partial.header)
    assert same.partial.header is later


def test_a_lenient_fold_keeps_the_partial_for_events_it_cannot_place() -> None:
    events = stream_of(PLAIN)
    stripped = [from_json(to_json(e, partials=False)) for e in events]
    lenient = PartialFold()
    early = lenient.apply(stripped[2], strict=False)
    assert early == replace(stripped[2], partial=PartialAssistantMessage.begin())
    assert lenient.partial is None
    lenient.apply(events[0])
    lenient.apply(stripped[1])
    standing = lenient.partial
    misplaced = replace(stripped[2], content_index=4)
    assert lenient.apply(misplaced, strict=False) == replace(misplaced, partial=standing)
    assert lenient.partial is standing
    header = replace(standing.header, response_id="r3")
    kept = lenient.apply(misplaced, header, strict=False)
    assert kept.partial.header == header and kept.partial.content == standing.content
    with pytest.raises(IndexError):
        lenient.apply(misplaced)


def test_an_event_for_another_block_than_the_next_is_refused() -> None:
    events = stream_of(PLAIN)
    f = PartialFold()
    f.apply(events[0])
    with pytest.raises(ValueError) as err:
        f.apply(replace(events[1], content_index=3, partial=None))
    assert str(err.value) == "text_start for block 3, the next block is 0"
    assert f.partial is events[0].partial


def as_message_partials(events: list[Any]) -> list[Any]:
    """The events as a pi-ai writer records them: each partial an AssistantMessage."""
    return [e if e.partial is None or isinstance(e, (DoneEvent, ErrorEvent)) else
            replace(e, partial=e.partial.to_message()) for e in events if hasattr(e, "partial")] + \
        [e for e in events if isinstance(e, DoneEvent)]


def test_adopt_turns_message_partials_into_the_library_s() -> None:
    events = stream_of(PLAIN)
    recorded = as_message_partials(events)
    f = PartialFold()
    adopted = [f.adopt(e) for e in recorded[:-1]] + [recorded[-1]]
    assert adopted == events
    assert all(isinstance(e.partial, PartialAssistantMessage) for e in adopted[:-1])
    assert f.partial == events[-2].partial


def test_adopt_follows_header_changes_and_gives_back_what_it_cannot_place() -> None:
    events = stream_of(PLAIN)
    recorded = as_message_partials(events)
    f = PartialFold()
    assert f.adopt(recorded[1]) is recorded[1]  # before the start event
    started = f.adopt(replace(recorded[0], partial=AssistantMessage((TextContent("pre"),), model="m")))
    assert started.partial.content == (TextContent("pre"),) and started.partial.header.content == ()
    f = PartialFold()
    f.adopt(recorded[0])
    header_changed = replace(recorded[1], partial=replace(recorded[1].partial,
                                                                                 response_id="r9"))
    opened = f.adopt(header_changed)
    assert opened.partial.response_id == "r9" and f.partial is opened.partial
    unplaceable = replace(recorded[3], content_index=7)
    assert f.adopt(unplaceable) is unplaceable
    # its header is taken all the same
    assert f.partial.content == opened.partial.content and f.partial.response_id is None
    standing = f.partial
    for done_or_library_partial in (events[-1], events[2], ErrorEvent("error", PLAIN)):
        assert f.adopt(done_or_library_partial) is done_or_library_partial
    assert f.partial is standing


def test_free_form_fields_are_written_as_they_are_even_with_a_type_key() -> None:
    # Tool arguments, details and schemas are free-form: a "type" key there is data, not a tag.
    call = ToolCall("c", "f", {"type": "object", "n": [1, {"type": "x"}]})
    result = ToolResultMessage("c", "f", (TextContent("ok"),), details={"type": "report", "rows": 2})
    spec = ToolSpec("f", "", {"type": "object", "properties": {"n": {"type": "integer"}}})
    for record, field_name in ((call, "arguments"), (result, "details"), (spec, "parameters")):
        data = to_json(record)
        assert data[field_name] == json.loads(json.dumps(getattr(record, field_name), default=dict))
        back = from_json(json.loads(dumps(record)))
        assert back == record and isinstance(getattr(back, field_name), FrozenDict)


def test_the_library_s_messages_and_content_go_to_the_encoder_as_they_are() -> None:
    # Records that need no preparing are handed to msgspec untouched (no copy into a dict),
    # however deep; records holding a partial, or open message fields, are prepared.
    call = ToolCall("c", "f", {"a": 1})
    reply = AssistantMessage((TextContent("x"), call), usage=Usage(1, 2, 0, 0, 3), stop_reason="toolUse")
    for record in (UserMessage("hi"), reply, call, ToolResultMessage("c", "f", (TextContent("r"),)),
                   Usage(), DoneEvent("stop", reply)):
        assert prepared(record) is record, type(record).__name__
    # A tool result is prepared: its error flag is written only when set.
    assert "is_error" not in prepared(AgentToolResult("done"))
    partial = PartialAssistantMessage.begin().text_start().partial
    assert prepared(MessageStartEvent(partial)) == {"type": "message_start", "message": prepared(partial)}
    assert to_json(prepared(partial)) == {"type": "partial_assistant", "message": to_json(partial.to_message())}
    assert prepared(prepared(partial)) == prepared(partial)  # preparing twice changes nothing


def test_a_set_is_written_in_the_order_of_its_items_json_whatever_their_key_order() -> None:
    one = {FrozenDict({"b": 0, "a": 1}), FrozenDict({"a": 2})}
    other = {FrozenDict({"a": 2}), FrozenDict({"a": 1, "b": 0})}
    assert to_json(frozenset(one)) == [{"b": 0, "a": 1}, {"a": 2}]
    assert to_json(frozenset(other)) == [{"a": 1, "b": 0}, {"a": 2}]


def test_text_utf_8_cannot_hold_is_written_as_ascii_json_escapes_and_read_back_the_same() -> None:
    message = UserMessage("half \ud83d, caf\u00e9", timestamp=1)
    text = encode_bytes(message)
    assert text == b'{"type":"user","content":"half \\ud83d, caf\\u00e9","timestamp":1}'
    assert parse(text) == to_json(message) and from_json(parse(text)) == message
    assert dumps(message) == text.decode("ascii") and loads(dumps(message)) == message
