"""NaN and the infinities replay as they ran.

A model's tool arguments may hold NaN or an infinity (Python's JSON parser takes ``NaN``,
``Infinity`` and ``-Infinity``, and so may a provider's decoder), and a tool's ``details`` may
hold them. A transcript writes each as a tagged object, ``{"type": "float", "value": "NaN"}``
(every line stays strict JSON), and reads it back as the number: a strict replay, an LLM-only
replay and a resumed suspension see the values the run saw. An object of a tool's own that looks
like that tag is written escaped and read back as the object it was.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AgentToolResult,
    Approve,
    ExecuteTool,
    Model,
    TextContent,
    ToolResultMessage,
)
from agentcore.codec import to_json
from interpreters import ScriptedModel, tool
from interpreters.replay import replay
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support import suspension_runs as runs
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.suspension_runs import DECISIONS, RAN, config, context, model

MODEL = Model(id="m")
SEEN: list[Any] = []
TAG_LIKE = {"type": "float", "value": "NaN"}
"""A tool's own object that looks like the tag a transcript writes for NaN."""


@tool
def measure(x: float, y: float = 0.0) -> AgentToolResult:
    """Measure."""
    SEEN.append((x, y))
    details = {"x": x, "series": [x, y, -math.inf, 1.5], "nested": {"inner": [math.nan]}, "looks": TAG_LIKE,
               "wrapped": {"type": "json", "value": TAG_LIKE}, "plain": {"type": "json", "value": 1}}
    return AgentToolResult([TextContent(f"measured {x} {y}")], details=details)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    SEEN.clear()
    RAN.clear()


def script() -> ScriptedModel:
    return ScriptedModel([
        Reply(text="Measuring.", tool_calls=[ScriptedCall("measure", '{"x": NaN, "y": Infinity}', "c1"),
                                             ScriptedCall("measure", {"x": -math.inf, "y": math.nan}, "c2")]),
        Reply(text="Again.", tool_calls=[ScriptedCall("measure", '{"x": -Infinity}', "c3")]),
        "done",
    ], clock=clock)


def same(a: Any, b: Any) -> bool:
    """Equal as values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if hasattr(a, "items") and hasattr(b, "items"):
        return same(dict(a.items()), dict(b.items()))
    return type(a) is type(b) and a == b


def record(flavour: Flavour, path: Path) -> list[Any]:
    ctx = AgentContext("You measure.", [], [measure])
    _, messages = flavour.record(path, "go", ctx, AgentLoopConfig(model=MODEL), script(), clock=clock)
    return messages  # type: ignore[no-any-return]


def strict_json(path: Path) -> None:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{path.name} holds {name}, which is not JSON")

    for line in path.read_text(encoding="utf-8").splitlines():
        json.loads(line, parse_constant=refuse)


def test_strict_replay_gives_the_tool_the_arguments_the_run_gave_it(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    live = record(flavour, path)
    ran = list(SEEN)
    assert same(ran, [(math.nan, math.inf), (-math.inf, math.nan), (-math.inf, 0.0)])
    strict_json(path)
    r = replay(path)
    assert r.finished and len(r.messages) == len(live)
    for mine, theirs in zip(r.messages, live):
        assert to_json(mine) == to_json(theirs)  # in JSON form, NaN is its tag: equal to itself
        if isinstance(theirs, ToolResultMessage):
            assert same(mine.details, theirs.details)
            assert dict(mine.details["looks"]) == TAG_LIKE
            assert same(mine.details["wrapped"], {"type": "json", "value": TAG_LIKE})
            assert dict(mine.details["plain"]) == {"type": "json", "value": 1}
    t = read_transcript(path)
    executed = [e.args for entry in t.entries for e in entry.effects if isinstance(e, ExecuteTool)]
    assert same(executed, [{"x": math.nan, "y": math.inf}, {"x": -math.inf, "y": math.nan}, {"x": -math.inf, "y": 0.0}])


def test_llm_only_replay_runs_the_tools_with_the_recorded_arguments(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record(flavour, path)
    ran = list(SEEN)
    SEEN.clear()
    result = flavour.call(flavour.replay_llm, path, AgentLoopConfig(model=MODEL), [measure])
    assert result.finished and same(SEEN, ran)


def test_a_suspension_holding_nan_arguments_resumes_into_its_transcript_and_replays(
        flavour: Flavour, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs, "EXTRA", [ScriptedCall("scale", '{"factor": NaN}', "c5")])
    path = tmp_path / "run.jsonl"
    _, _, suspension = flavour.start_suspending("Tidy up.", context(), config(), model(), clock=clock,
                                                journal=TranscriptRecorder(path, context(), config()))
    assert suspension is not None
    [scaled] = [p for p in suspension.pending if p.tool_call_id == "c5"]
    assert math.isnan(scaled.arguments["factor"])
    _, messages, again = flavour.resume(suspension, {**DECISIONS, "c5": Approve()}, context(), config(), model(),
                                        clock=clock, transcript=path)
    assert again is None and "scale nan" in RAN
    strict_json(path)
    r = replay(path)
    assert r.finished
    [result] = [m for m in r.messages if isinstance(m, ToolResultMessage) and m.tool_call_id == "c5"]
    assert result.content[0].text == "scaled by nan"
    [args] = [e.args for entry in read_transcript(path).entries for e in entry.effects
              if isinstance(e, ExecuteTool) and e.tool_call.id == "c5"]
    assert math.isnan(args["factor"])


def test_a_history_holding_nan_in_the_header_replays(flavour: Flavour, tmp_path: Path) -> None:
    """The run starts from a conversation whose tool call and result hold NaN: the header's
    initial state holds their tags, and the state read back holds the numbers."""
    from agentcore import AssistantMessage, ToolCall, UserMessage

    history = [UserMessage("before", timestamp=1),
               AssistantMessage((ToolCall("c0", "measure", {"x": math.nan}),), stop_reason="toolUse", timestamp=2),
               ToolResultMessage("c0", "measure", (TextContent("measured"),), details={"x": -math.inf}, timestamp=3)]
    path = tmp_path / "run.jsonl"
    ctx = AgentContext("You measure.", history, [measure])
    flavour.record(path, "go", ctx, AgentLoopConfig(model=MODEL), script(), clock=clock)
    strict_json(path)
    t = read_transcript(path)
    call = t.initial_state.run.messages[1].content[0]
    assert math.isnan(call.arguments["x"]) and t.initial_state.run.messages[2].details["x"] == -math.inf
    assert replay(t).finished
    assert flavour.call(flavour.replay_llm, path, AgentLoopConfig(model=MODEL), [measure]).finished


def test_nan_written_as_the_json_module_writes_it_reads_back_and_replays(tmp_path: Path) -> None:
    """A line holding ``NaN``, ``Infinity`` and ``-Infinity`` (what the json module writes, and
    transcripts of format 4 and older may hold) reads as the numbers and replays: its JSON
    data holds their tags, as the replay's does."""
    from tests.support.flavours import SYNC

    path = tmp_path / "run.jsonl"
    record(SYNC, path)
    text = path.read_text(encoding="utf-8")
    for name in ("NaN", "Infinity", "-Infinity"):
        text = text.replace('{"type":"float","value":"%s"}' % name, name)
    assert "NaN" in text and '"float"' not in text
    path.write_text(text, encoding="utf-8")
    t = read_transcript(path)
    executed = [e.args for entry in t.entries for e in entry.effects if isinstance(e, ExecuteTool)]
    assert math.isnan(executed[0]["x"]) and executed[0]["y"] == math.inf
    assert replay(t).finished
