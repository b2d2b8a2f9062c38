"""RecordedModel: the model replies of a transcript played back call by call."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model, StreamEventReceived
from agentcore.llm import LlmContext
from agentcore.messages import UserMessage
from interpreters import ScriptedModel, tool
from interpreters.replay import RecordedModel as RecordedModelFromReplay
from interpreters.streams.recorded import RecordedModel
from interpreters.streams.scripted import tool_call
from interpreters.transcript import Transcript, read_transcript
from tests.support.flavours import SYNC

MODEL = Model(id="m")
CTX = LlmContext("", [UserMessage("go")])


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def recorded(tmp_path: Path) -> Transcript:
    """A run of two model calls (a tool call, then the answer), recorded."""
    path = tmp_path / "run.jsonl"
    SYNC.record(path, "1 + 2?", AgentContext("", [], [add]), AgentLoopConfig(model=MODEL),
                ScriptedModel([tool_call("add", {"a": 1, "b": 2}), "It is 3."]))
    return read_transcript(path)


def test_the_replay_package_gives_the_same_class() -> None:
    assert RecordedModelFromReplay is RecordedModel


def test_each_call_gets_the_next_recorded_stream(tmp_path: Path) -> None:
    t = recorded(tmp_path)
    streamed = [e.input.event for e in t.entries if type(e.input) is StreamEventReceived]
    model = RecordedModel(t)
    first, second = list(model(MODEL, CTX)), list(model(MODEL, CTX))
    assert first + second == streamed
    assert first[-1].type == "done" and first[-1].message.tool_calls[0].name == "add"
    assert second[-1].message.text == "It is 3."
    assert model.calls == 2


def test_a_call_past_the_recording_is_a_lookup_error(tmp_path: Path) -> None:
    model = RecordedModel(recorded(tmp_path))
    list(model(MODEL, CTX)), list(model(MODEL, CTX))
    with pytest.raises(LookupError) as info:
        model(MODEL, CTX)
    assert str(info.value) == "model call 3 was made, the recording has 2"


def test_a_call_past_the_recording_raises_what_past_end_gives(tmp_path: Path) -> None:
    asked: list[tuple[int, int]] = []

    def past_end(n: int, recorded: int) -> BaseException:
        asked.append((n, recorded))
        return KeyError("past the end")

    model = RecordedModel(recorded(tmp_path), past_end)
    list(model(MODEL, CTX)), list(model(MODEL, CTX))
    with pytest.raises(KeyError, match="past the end"):
        model(MODEL, CTX)
    assert asked == [(3, 2)]
