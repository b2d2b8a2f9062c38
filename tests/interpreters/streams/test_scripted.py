"""ScriptedModel: scripted replies streamed as real stream events, sync and async."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterable, Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import (
    AssistantMessage,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentcore.stream import DoneEvent, ErrorEvent, StreamEvent
from interpreters.streams import scripted
from interpreters.streams.scripted import (
    Reply,
    Request,
    ScriptedCall,
    ScriptedModel,
    error,
    length,
    text,
    tool_call,
)
from tests.support.events import each_type

MODEL = Model(id="scripted-1")
CTX = LlmContext("Be brief.", [UserMessage("Hi there")])  # 17 characters: 4 input tokens


class Signal:
    def __init__(self, aborted: bool = False) -> None:
        self.aborted = aborted


def events_of(model: ScriptedModel, context: LlmContext = CTX, options: Any = None) -> list[StreamEvent]:
    return list(model(MODEL, context, options))


async def _collect(stream: AsyncIterable[StreamEvent]) -> list[StreamEvent]:
    return [e async for e in stream]


def aevents_of(model: ScriptedModel, context: LlmContext = CTX, options: Any = None) -> list[StreamEvent]:
    return asyncio.run(_collect(model(MODEL, context, options)))


def final(events: list[StreamEvent]) -> AssistantMessage:
    last = events[-1]
    if isinstance(last, DoneEvent):
        return last.message
    assert isinstance(last, ErrorEvent)
    return last.error


def msg(*content: Any, stop_reason: Any = "stop", usage: Usage, error_message: str | None = None,
        timestamp: int = 0) -> AssistantMessage:
    return AssistantMessage(content, api="scripted", provider="scripted", model="scripted-1",
                            usage=usage, stop_reason=stop_reason, error_message=error_message,
                            timestamp=timestamp)


# --------------------------------------------------------------------------- replies


def test_text_reply_streams_in_chunks() -> None:
    events = events_of(ScriptedModel([text("Hello, world!")]))
    assert each_type(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hello, w", "orld!"]  # type: ignore[union-attr]
    assert [e.content_index for e in events[1:5]] == [0, 0, 0, 0]  # type: ignore[union-attr]
    assert events[2].partial.text == "Hello, w"  # type: ignore[union-attr]
    assert events[0].partial.content == ()  # type: ignore[union-attr]
    assert final(events) == msg(TextContent("Hello, world!"),
                                usage=Usage(input=4, output=3, total_tokens=7))
    assert events[-1].reason == "stop"  # type: ignore[union-attr]


def test_plain_string_is_a_text_reply() -> None:
    assert final(events_of(ScriptedModel(["Hello, world!"]))) == final(
        events_of(ScriptedModel([Reply(text="Hello, world!")])))
    assert text("x") == Reply(text="x")


def test_thinking_text_and_tool_calls_in_order() -> None:
    reply = Reply(
        text="Let me look.",
        thinking="Need files",
        tool_calls=(ScriptedCall("ls", {"path": "/tmp"}), ScriptedCall("read", {"path": "a.txt"})),
    )
    events = events_of(ScriptedModel([reply]))
    assert each_type(events) == [
        "start",
        "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_delta", "text_end",
        "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end",
        "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end",
        "done",
    ]
    assert [getattr(e, "content_index", None) for e in events] == [
        None, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, None]
    deltas = [e.delta for e in events if e.type == "toolcall_delta"]  # type: ignore[union-attr]
    assert deltas == ['{"path":', '"/tmp"}', '{"path":', '"a.txt"}']
    assert events[-1].reason == "toolUse"  # type: ignore[union-attr]
    # 10 + 12 + (2 + 15) + (4 + 16) = 59 characters: 14 output tokens
    assert final(events) == msg(
        ThinkingContent("Need files"),
        TextContent("Let me look."),
        ToolCall("call_1", "ls", {"path": "/tmp"}),
        ToolCall("call_2", "read", {"path": "a.txt"}),
        stop_reason="toolUse",
        usage=Usage(input=4, output=14, total_tokens=18),
    )


def test_tool_call_ids_count_per_model_and_explicit_ids_are_kept() -> None:
    model = ScriptedModel([
        tool_call("a", {}),
        Reply(tool_calls=[tool_call("b", {"x": 1}, id="mine"), ("c", {"y": [1, 2]}),
                          ToolCall("given", "d", {"z": None})]),
        tool_call("e"),
    ])
    ids = [[c.id for c in final(events_of(model)).tool_calls] for _ in range(3)]
    assert ids == [["call_1"], ["mine", "call_2", "given"], ["call_3"]]
    other = ScriptedModel([tool_call("a", {})])
    assert final(events_of(other)).tool_calls[0].id == "call_1"


def test_tool_call_helper_with_text_and_thinking() -> None:
    reply = tool_call("add", {"a": 1}, text="Adding.", thinking="hmm")
    assert reply == Reply(text="Adding.", thinking="hmm", tool_calls=(ScriptedCall("add", {"a": 1}),))
    assert each_type(events_of(ScriptedModel([reply])))[-1] == "done"


def test_raw_string_arguments_stream_as_is_and_parse_tolerantly() -> None:
    model = ScriptedModel([tool_call("write", '{"path": "/tmp/x", "body": "cut of')], chunk_size=None)
    events = events_of(model)
    assert each_type(events) == ["start", "toolcall_start", "toolcall_delta", "toolcall_end", "done"]
    assert events[2].delta == '{"path": "/tmp/x", "body": "cut of'  # type: ignore[union-attr]
    raw = '{"path": "/tmp/x", "body": "cut of'
    assert final(events).tool_calls == (
        ToolCall("call_1", "write", {"path": "/tmp/x", "body": "cut of"}, invalid_json=raw),)


def test_bad_tool_call_specs_are_rejected() -> None:
    with pytest.raises(TypeError, match="a tool call is"):
        Reply(tool_calls=[42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="exactly one tool call"):
        Reply(tool_calls=[text("no call")])
    with pytest.raises(TypeError, match="a scripted reply is a Reply or a str"):
        ScriptedModel([42])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="list of replies"):
        ScriptedModel("just one")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedModel([], chunk_size=-1)


def test_error_reply_keeps_streamed_text() -> None:
    events = events_of(ScriptedModel([error("Rate limited", text="Partial")]))
    assert each_type(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert events[-1].reason == "error"  # type: ignore[union-attr]
    assert final(events) == msg(TextContent("Partial"), stop_reason="error",
                                error_message="Rate limited",
                                usage=Usage(input=4, output=1, total_tokens=5))
    bare = events_of(ScriptedModel([error("Overloaded")]))
    assert each_type(bare) == ["start", "error"]
    assert final(bare) == msg(stop_reason="error", error_message="Overloaded",
                              usage=Usage(input=4, output=0, total_tokens=4))


def test_length_and_explicit_stop_reasons() -> None:
    events = events_of(ScriptedModel([length("truncat")]))
    assert events[-1].reason == "length"  # type: ignore[union-attr]
    assert final(events).stop_reason == "length"
    cut_call = Reply(tool_calls=[tool_call("a", {"x": 1})], stop_reason="length")
    assert final(events_of(ScriptedModel([cut_call]))).stop_reason == "length"
    aborted = events_of(ScriptedModel([Reply(text="so", stop_reason="aborted")]))
    assert (aborted[-1].reason, final(aborted).error_message) == ("aborted", "Request was aborted")  # type: ignore[union-attr]


def test_empty_reply_and_empty_text() -> None:
    assert each_type(events_of(ScriptedModel([Reply()]))) == ["start", "done"]
    events = events_of(ScriptedModel([""]))
    assert each_type(events) == ["start", "text_start", "text_end", "done"]
    assert final(events).content == (TextContent(""),)


def test_explicit_usage_wins() -> None:
    usage = Usage(input=100, output=5, cache_read=7, total_tokens=112)
    events = events_of(ScriptedModel([Reply(text="x", usage=usage)]))
    assert final(events).usage == usage
    assert all(e.partial.usage == usage for e in events[:-1])  # type: ignore[union-attr]


# --------------------------------------------------------------------------- chunking


def test_chunk_size_none_or_zero_gives_one_delta() -> None:
    for size in (None, 0):
        events = events_of(ScriptedModel(["Hello, world!"], chunk_size=size))
        assert each_type(events) == ["start", "text_start", "text_delta", "text_end", "done"]
        assert events[2].delta == "Hello, world!"  # type: ignore[union-attr]


@given(
    body=st.text(max_size=40),
    thinking=st.none() | st.text(max_size=20),
    args=st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=6), max_size=3),
    chunk_size=st.none() | st.integers(min_value=0, max_value=50),
)
def test_any_chunk_size_gives_the_same_message(
    body: str, thinking: str | None, args: dict[str, Any], chunk_size: int | None
) -> None:
    reply = Reply(text=body, thinking=thinking, tool_calls=[tool_call("t", args)])
    reference = final(events_of(ScriptedModel([reply], chunk_size=None)))
    events = events_of(ScriptedModel([reply], chunk_size=chunk_size))
    assert final(events) == reference
    text_deltas = [e.delta for e in events if e.type == "text_delta"]  # type: ignore[union-attr]
    assert "".join(text_deltas) == body
    if chunk_size:
        assert all(len(d) <= chunk_size for d in text_deltas)
        assert len(text_deltas) == -(-len(body) // chunk_size)
    arg_json = "".join(e.delta for e in events if e.type == "toolcall_delta")  # type: ignore[union-attr]
    assert json.loads(arg_json or "{}") == args
    # every partial is the fold of the events before it
    last_partial = [e.partial for e in events if hasattr(e, "partial")][-1]
    assert last_partial.content == reference.content


# --------------------------------------------------------------------------- script exhaustion, functions


def test_running_out_of_replies_is_an_error_event() -> None:
    model = ScriptedModel(["one", "two"])
    events_of(model)
    events_of(model)
    events = events_of(model)
    assert each_type(events) == ["error"]
    assert final(events) == msg(
        stop_reason="error", usage=Usage(),
        error_message="ScriptedModel has no reply left for call 3 (it was given 2 replies)")
    assert model.calls == 3
    single = ScriptedModel(["one"])
    events_of(single)
    assert final(events_of(single)).error_message == (
        "ScriptedModel has no reply left for call 2 (it was given 1 reply)")
    assert final(events_of(ScriptedModel([]))).error_message == (
        "ScriptedModel has no reply left for call 1 (it was given 0 replies)")


def test_reply_function_sees_context_and_call_index() -> None:
    seen: list[tuple[int, int]] = []

    def script(context: LlmContext, index: int) -> Reply | str:
        seen.append((index, len(context.messages)))
        if index == 0:
            return tool_call("echo", {"n": len(context.messages)})
        return f"call {index}"

    model = ScriptedModel(script)
    first = final(events_of(model))
    ctx2 = LlmContext("", [*CTX.messages, first,
                           ToolResultMessage("call_1", "echo", (TextContent("1"),))])
    second = final(events_of(model, ctx2))
    assert seen == [(0, 1), (1, 3)]
    assert first.tool_calls == (ToolCall("call_1", "echo", {"n": 1}),)
    assert second.text == "call 1"
    assert model.replies == ()


def test_requests_are_recorded() -> None:
    model = ScriptedModel(["a", "b"])
    options = StreamOptions(temperature=0.5)
    ctx2 = LlmContext("other", [UserMessage("x")])
    events_of(model, CTX, options)
    events_of(model, ctx2)
    assert model.requests == [Request(MODEL, CTX, options), Request(MODEL, ctx2, None)]
    assert model.calls == 2
    assert repr(model) == "ScriptedModel(2 replies, calls=2)"


def test_model_id_and_clock() -> None:
    ticks = iter([1000, 2000])
    model = ScriptedModel(["a", "b"], clock=lambda: next(ticks))
    first = list(model(Model(id="alpha"), CTX, None))
    second = list(model("plain-name", CTX, None))
    assert (final(first).model, final(first).timestamp) == ("alpha", 1000)
    assert (final(second).model, final(second).timestamp) == ("plain-name", 2000)
    assert first[0].partial.timestamp == 1000  # type: ignore[union-attr]
    assert final(first).api == "scripted" and final(first).provider == "scripted"


def test_a_stream_can_be_iterated_again() -> None:
    stream = ScriptedModel([tool_call("a", {"b": 1})])(MODEL, CTX, None)
    assert list(stream) == list(stream)


def test_tool_call_ids_are_fixed_when_the_model_is_called() -> None:
    model = ScriptedModel([tool_call("a"), tool_call("b")])
    s1 = model(MODEL, CTX, None)
    s2 = model(MODEL, CTX, None)
    assert final(list(s2)).tool_calls[0].id == "call_2"
    assert final(list(s1)).tool_calls[0].id == "call_1"


# --------------------------------------------------------------------------- usage


def test_usage_counts_every_kind_of_message() -> None:
    history = [
        UserMessage("12345678"),  # 8
        AssistantMessage((ThinkingContent("abcd"), TextContent("ok"),  # 4 + 2
                          ToolCall("c", "ls", {"p": "/"}))),  # 2 + 9
        ToolResultMessage("c", "ls", (TextContent("a b c"),)),  # 5
        UserMessage((TextContent("xy"),)),  # 2
    ]
    model = ScriptedModel(["abcdefgh"])
    usage = final(events_of(model, LlmContext("sys", history))).usage  # 3 + 32 = 35
    assert usage == Usage(input=8, output=2, total_tokens=10)


def test_incremental_usage_matches_a_fresh_count() -> None:
    replies = [f"reply number {i}" for i in range(6)]
    live = ScriptedModel(replies)
    messages: list[Any] = [UserMessage("start here")]
    for i in range(6):
        ctx = LlmContext("sys", tuple(messages))
        got = final(events_of(live, ctx))
        fresh = final(events_of(ScriptedModel([replies[i]]), ctx))
        assert got.usage == fresh.usage
        messages += [got, UserMessage("more " * i)]
    # a history that was rewritten (not appended to) is counted again
    rewritten = LlmContext("sys", (UserMessage("short"),) + tuple(messages[1:]))
    live2 = ScriptedModel(replies * 2)
    events_of(live2, LlmContext("sys", tuple(messages)))
    assert final(events_of(live2, rewritten)).usage == final(
        events_of(ScriptedModel(replies), rewritten)).usage


# --------------------------------------------------------------------------- abort


def test_abort_before_start_yields_only_the_abort() -> None:
    events = events_of(ScriptedModel(["hello"]), options=StreamOptions(signal=Signal(True)))
    assert each_type(events) == ["error"]
    assert events[0].reason == "aborted"  # type: ignore[union-attr]
    assert final(events) == msg(stop_reason="aborted", error_message="Request was aborted",
                                usage=Usage(input=4, output=1, total_tokens=5))


def test_abort_mid_stream_keeps_the_content_so_far() -> None:
    signal = Signal()
    stream = ScriptedModel(["Hello, world!"])(MODEL, CTX, StreamOptions(signal=signal))
    seen: list[StreamEvent] = []
    for event in stream:
        seen.append(event)
        if event.type == "text_delta":
            signal.aborted = True
    assert each_type(seen) == ["start", "text_start", "text_delta", "error"]
    assert final(seen) == msg(TextContent("Hello, w"), stop_reason="aborted",
                              error_message="Request was aborted",
                              usage=Usage(input=4, output=3, total_tokens=7))


def test_abort_before_done_event() -> None:
    signal = Signal()
    stream = ScriptedModel([tool_call("a", {"x": 1})], chunk_size=None)(
        MODEL, CTX, StreamOptions(signal=signal))
    seen = []
    for event in stream:
        seen.append(event)
        if event.type == "toolcall_end":
            signal.aborted = True
    assert each_type(seen) == ["start", "toolcall_start", "toolcall_delta", "toolcall_end", "error"]
    assert final(seen).tool_calls == (ToolCall("call_1", "a", {"x": 1}),)
    assert final(seen).stop_reason == "aborted"


# --------------------------------------------------------------------------- async


SCENARIOS: list[list[Reply | str]] = [
    ["plain"],
    [Reply(text="Let me look.", thinking="Need files", tool_calls=[tool_call("ls", {"p": "/"})])],
    [error("boom", text="par")],
    [length("abc")],
    [],
]


@pytest.mark.parametrize("replies", SCENARIOS)
def test_async_iteration_gives_the_same_events(replies: list[Reply | str]) -> None:
    sync_events = events_of(ScriptedModel(replies))
    async_events = aevents_of(ScriptedModel(replies))
    assert each_type(async_events) == each_type(sync_events)
    assert final(async_events) == final(sync_events)
    assert [getattr(e, "partial", None) for e in async_events] == [
        getattr(e, "partial", None) for e in sync_events]


def test_async_abort_from_another_task() -> None:
    async def main() -> list[StreamEvent]:
        signal = Signal()
        model = ScriptedModel(["abcdefghijklmnopqrstuvwxyz"], chunk_size=2, delay=0.001)
        seen: list[StreamEvent] = []

        async def abort_soon() -> None:
            while len(seen) < 4:
                await asyncio.sleep(0)
            signal.aborted = True

        task = asyncio.create_task(abort_soon())
        async for event in model(MODEL, CTX, StreamOptions(signal=signal)):
            seen.append(event)
        await task
        return seen

    seen = asyncio.run(main())
    assert seen[-1].type == "error"
    assert final(seen).stop_reason == "aborted"
    assert 5 <= len(seen) < 16
    assert final(seen).text == "".join(
        e.delta for e in seen if e.type == "text_delta")  # type: ignore[union-attr]


def test_stream_is_both_iterable_and_async_iterable() -> None:
    stream = ScriptedModel(["x"])(MODEL, CTX, None)
    assert isinstance(stream, Iterable)
    assert isinstance(stream, AsyncIterable)


# --------------------------------------------------------------------------- delay


def test_sync_delay_sleeps_between_events(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(scripted.time, "sleep", sleeps.append)
    events = events_of(ScriptedModel(["Hello, world!"], delay=0.25))
    assert sleeps == [0.25] * (len(events) - 1)
    assert sleeps == [0.25] * 5


def test_async_delay_uses_asyncio_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        await real_sleep(0)

    def no_blocking_sleep(seconds: float) -> None:
        raise AssertionError("time.sleep in the async iterator")

    monkeypatch.setattr(scripted.asyncio, "sleep", fake_sleep)
    monkeypatch.setattr(scripted.time, "sleep", no_blocking_sleep)
    events = aevents_of(ScriptedModel(["Hello, world!"], delay=0.5))
    assert sleeps == [0.5] * (len(events) - 1)


def test_no_delay_no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(seconds: float) -> None:
        raise AssertionError("slept")

    monkeypatch.setattr(scripted.time, "sleep", boom)
    assert each_type(events_of(ScriptedModel(["abc"])))[-1] == "done"


def test_exports() -> None:
    assert sorted(scripted.__all__) == sorted([
        "Reply", "ReplyFunction", "Request", "ScriptedCall", "ScriptedModel", "ScriptedStream",
        "error", "length", "text", "tool_call"])
