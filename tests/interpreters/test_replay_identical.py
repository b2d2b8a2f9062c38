"""Every recorded run replays identically: runs cut by an abort, a failure or a broken stream
after the stream function changed the partial's header, pi-ai style partials, streams out of
order. What the core reads to build a message is in the transcript."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    DoneEvent,
    Model,
    PartialAssistantMessage,
    TextContent,
    Usage,
    UserMessage,
    replace,
)
from agentcore.stream import StartEvent, TextDeltaEvent, TextStartEvent
from interpreters import AbortSignal
from interpreters.replay import replay
from interpreters.transcript import read_transcript
from tests.support.flavours import SYNC, Flavour

MODEL = Model(id="m", api="test", provider="test")


def header_changing_stream(end: str, signal_holder: list[AbortSignal]) -> Any:
    """A reply whose stream function sets ``response_id`` and usage after the start (as the HTTP
    decoders do), then ends by ``end``: an abort, an exception, a protocol error, or done."""
    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        p = PartialAssistantMessage.begin(api="test", provider="test", model="m", timestamp=5)
        yield StartEvent(p)
        p = p.with_header(response_id="resp-42", usage=Usage(input=17, total_tokens=17))
        e: Any = p.text_start()
        yield e
        for piece in ("Hel", "lo ", "wor"):
            e = e.partial.text_delta(0, piece)
            yield e
        e = e.partial.with_header(usage=Usage(input=17, output=3, total_tokens=20)).text_delta(0, "ld")
        yield e
        if end == "abort":
            signal_holder[0].abort()
            yield e.partial.text_delta(0, "!")
        elif end == "raise":
            raise ConnectionError("connection lost mid-stream")
        elif end == "protocol":
            yield e.partial.text_delta(3, "?")  # a block that was never started
        else:
            yield e.partial.text_end(0).partial.done("stop")
    return stream_fn


@pytest.mark.parametrize("end", ["abort", "raise", "protocol", "done"])
def test_a_run_cut_after_the_header_changed_replays_identically(flavour: Flavour, tmp_path: Path, end: str) -> None:
    path = tmp_path / "run.jsonl"
    signal = AbortSignal()
    ctx, cfg = AgentContext(), AgentLoopConfig(model=MODEL)
    _, messages = flavour.record(path, "go", ctx, cfg, header_changing_stream(end, [signal]), signal)
    last = messages[-1]
    assert last.text == "Hello world"
    assert last.response_id == "resp-42" and last.usage.output == 3
    assert last.stop_reason == {"abort": "aborted", "raise": "error", "protocol": "error", "done": "stop"}[end]
    result = replay(path)
    assert result.finished and result.messages == messages


def pi_style_stream(end: str, signal_holder: list[AbortSignal]) -> Any:
    """Stream events whose partial is an ``AssistantMessage``, as pi-ai writes them."""
    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        message = AssistantMessage((), api="test", provider="test", model="m", timestamp=5)
        yield StartEvent(message)  # type: ignore[arg-type]
        message = replace(message, response_id="resp-7")
        yield TextStartEvent(0, replace(message, content=(TextContent(""),)))  # type: ignore[arg-type]
        text = ""
        for piece in ("Hi", " there"):
            text += piece
            yield TextDeltaEvent(0, piece, replace(message, content=(TextContent(text),)))  # type: ignore[arg-type]
        if end == "abort":
            signal_holder[0].abort()
            yield None
        elif end == "raise":
            raise RuntimeError("the model server went away")
        elif end == "done":
            yield DoneEvent("stop", replace(message, content=(TextContent(text),), stop_reason="stop"))
    return stream_fn


@pytest.mark.parametrize(("end", "stop_reason", "error"), [
    ("done", "stop", None),
    ("abort", "aborted", "Request was aborted"),
    ("raise", "error", "the model server went away"),
    ("no done", "error", "The stream ended without a done or error event"),
])
def test_pi_style_partials_record_a_transcript_that_replays(flavour: Flavour, tmp_path: Path, end: str,
                                                           stop_reason: str, error: str | None) -> None:
    path = tmp_path / "run.jsonl"
    signal = AbortSignal()
    ctx, cfg = AgentContext(), AgentLoopConfig(model=MODEL)
    events, messages = flavour.record(path, "go", ctx, cfg, pi_style_stream(end, [signal]), signal)
    last = messages[-1]
    assert (last.text, last.stop_reason, last.error_message) == ("Hi there", stop_reason, error)
    assert events[-1].type == "agent_end"
    assert read_transcript(path).steps > 0  # the reader takes what the recorder wrote
    result = replay(path)
    assert result.finished and result.messages == messages


def test_a_stream_out_of_order_records_a_transcript_that_replays(flavour: Flavour, tmp_path: Path) -> None:
    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        p = PartialAssistantMessage.begin(model="m")
        e: Any = p.text_start()
        yield e.partial.text_delta(0, "before the start")  # no start event first

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=MODEL)
    _, messages = flavour.record(path, "go", ctx, cfg, stream_fn)
    assert messages[-1].error_message == (
        "Stream protocol error: text_delta arrived before the stream's start event (expected start "
        "first, then content block events, then done or error)")
    result = replay(path)
    assert result.finished and result.messages == messages


def test_a_changed_response_id_is_named_in_the_headline(tmp_path: Path) -> None:
    from interpreters.replay import ReplayDivergence

    path = tmp_path / "run.jsonl"
    signal = AbortSignal()
    ctx, cfg = AgentContext(), AgentLoopConfig(model=MODEL)
    SYNC.record(path, "go", ctx, cfg, header_changing_stream("abort", [signal]), signal)
    text = path.read_text()
    assert text.count('"response_id":"resp-42"') >= 2  # the recorded header, then the messages
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if '"header"' in line)  # the header the abort closed
    lines[last] = lines[last].replace('"response_id":"resp-42"', '"response_id":"resp-43"', 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayDivergence) as info:
        replay(path)
    headline = str(info.value).splitlines()[0]
    assert headline.endswith("(emit message_end): message_end.message.response_id: recorded 'resp-42', "
                             "now 'resp-43'"), headline


def test_tool_details_json_cannot_hold_are_recorded_in_their_json_form(flavour: Flavour, tmp_path: Path) -> None:
    import datetime
    import decimal
    import enum

    from agentcore import AgentToolResult
    from interpreters import ScriptedModel, tool
    from interpreters.streams.scripted import Reply

    class Colour(enum.Enum):
        RED = "red"

    class Opaque:
        def __repr__(self) -> str:
            return "Opaque(42)"

    details = {"when": datetime.datetime(2026, 12, 1, 20, 5, tzinfo=datetime.timezone.utc),
               "amount": decimal.Decimal("1.10"), "tags": {"b", "a"}, "raw": b"\x00\x01",
               "colour": Colour.RED, "thing": Opaque()}

    @tool
    def report() -> AgentToolResult:
        """Report."""
        return AgentToolResult((TextContent("done"),), details=details)

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext("", [], [report]), AgentLoopConfig(model=MODEL)
    _, messages = flavour.record(path, "go", ctx, cfg, ScriptedModel([Reply(tool_calls=(("report", {}),)), "ok"]))
    assert messages[-1].text == "ok" and messages[2].details["thing"] is details["thing"]  # the run keeps them
    assert ('{"when":"2026-12-01T20:05:00Z","amount":"1.10","tags":["a","b"],"raw":"AAE=",'
            '"colour":"red","thing":"Opaque(42)"}') in path.read_text()
    result = replay(path)
    assert result.finished and result.messages[-1] == messages[-1]
    assert dict(result.messages[2].details) == {"when": "2026-12-01T20:05:00Z", "amount": "1.10",
                                                "tags": ("a", "b"), "raw": "AAE=", "colour": "red",
                                                "thing": "Opaque(42)"}


def test_text_utf_8_cannot_hold_is_recorded_escaped_and_replays_identically(flavour: Flavour, tmp_path: Path) -> None:
    # A lone surrogate (half of an emoji, as a stream cut between two chunks gives it) in a tool's
    # result and in the model's text: no UTF-8 for it, so its line is written with JSON escapes.
    from interpreters import ScriptedModel, tool
    from interpreters.streams.scripted import tool_call

    @tool
    def half() -> str:
        """Half an emoji."""
        return "half \ud83d of it, é"

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext("", [], [half]), AgentLoopConfig(model=MODEL)
    _, messages = flavour.record(path, "go", ctx, cfg, ScriptedModel([tool_call("half", {}), "said \udc00"]))
    assert messages[2].content[0].text == "half \ud83d of it, é" and messages[-1].text == "said \udc00"
    text = path.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    assert '"half \\ud83d of it, \\u00e9"' in text
    t = read_transcript(path)
    result = replay(t)
    assert result.finished and result.messages == messages


@dataclasses.dataclass(frozen=True)
class Note:
    """An application's own message type: a plain frozen dataclass with a role."""

    role: ClassVar[str] = "test_replay.note"
    text: str
    timestamp: int = 0


def test_an_application_s_dataclass_messages_are_recorded_tagged_and_replay_identically(
        flavour: Flavour, tmp_path: Path) -> None:
    from agentcore.codec import register
    from interpreters import ScriptedModel

    register(Note)
    path = tmp_path / "run.jsonl"
    ctx = AgentContext("", [Note("from before", 1)], [])
    cfg = AgentLoopConfig(model=MODEL, transform_context=lambda messages, signal: messages)
    _, messages = flavour.record(path, [Note("remember", 2), UserMessage("hi", timestamp=3)], ctx, cfg,
                                 ScriptedModel(["ok"]))
    assert [type(m).__name__ for m in messages] == ["Note", "UserMessage", "AssistantMessage"]
    t = read_transcript(path)
    assert list(t.initial_state.run.messages) == [Note("from before", 1)]
    transform = next(e for entry in t for e in entry.effects if e.type == "transform_context")  # type: ignore[union-attr]
    assert list(transform.messages)[:2] == [Note("from before", 1), Note("remember", 2)]  # type: ignore[attr-defined]
    assert '{"type":"test_replay.note","text":"remember","timestamp":2}' in path.read_text()
    result = replay(t)
    assert result.finished and result.messages == messages
