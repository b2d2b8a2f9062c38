"""Strict replay checks every ``message_update`` it emits: a transcript keeps a digest of the
updates (one per run of deltas, one per other update), so a changed delta, block end, tool-call
start or tool-call end, or a core that builds its updates differently, is a divergence named at
the step whose digest no longer holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

import agentcore.machine
from agentcore import AgentContext, AgentLoopConfig, MessageUpdateEvent, Model, replace
from agentcore.stream import TextDeltaEvent
from interpreters import ScriptedModel
from interpreters.replay import ReplayDivergence, replay
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import read_transcript
from tests.support.clocks import StoppedClock
from tests.support.flavours import SYNC
from tests.support.sample_tools import add_text


def record_streamed_sum(path: Path) -> list[Any]:
    """The question "2 + 3?" answered with thinking, text and a call to add, streamed 3 characters
    at a time, recorded: the messages."""
    ctx = AgentContext("Be exact.", [], [add_text])
    cfg = AgentLoopConfig(model=Model(id="m1"))
    model = ScriptedModel([Reply(text="Let me add.", thinking="two numbers",
                                 tool_calls=[ScriptedCall("add", {"a": 2, "b": 3})]), "Yes"], chunk_size=3)
    return SYNC.record(path, "2 + 3?", ctx, cfg, model, clock=StoppedClock(7))[1]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rewrite(path: Path, pick: Callable[[dict[str, Any]], bool], change: Callable[[dict[str, Any]], None]) -> int:
    """Apply ``change`` to the first line ``pick`` accepts; give that line's (last) step."""
    objs = lines(path)
    for obj in objs[1:]:
        if pick(obj):
            change(obj)
            path.write_text("".join(json.dumps(o) + "\n" for o in objs))
            return int(obj.get("last", obj["step"]))
    raise AssertionError("no such line")


def event_type(obj: dict[str, Any]) -> str | None:
    inp = obj.get("input", {})
    return inp.get("event", {}).get("type") if inp.get("type") == "stream_event_received" else None


def diverges(path: Path) -> ReplayDivergence:
    with pytest.raises(ReplayDivergence) as info:
        replay(path)
    return info.value


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    record_streamed_sum(path)
    assert replay(path).finished
    return path


def test_every_update_is_covered_by_exactly_one_digest(recorded: Path) -> None:
    t = read_transcript(recorded)
    updates = [(e.step, u) for e in t for u in e.effects_json if u.get("event", {}).get("type") == "message_update"]
    runs = [obj for obj in lines(recorded)[1:] if "deltas" in obj]
    assert len(runs) == 3  # thinking, text and tool-call arguments, 3 characters a delta
    undigested = {step for step, u in updates if "digest" not in u["event"]}
    assert undigested == {n for r in runs for n in range(r["step"], r["last"])}
    assert all(type(u["event"]["digest"]) is str and len(u["event"]["digest"]) == 16
               for _, u in updates if "digest" in u["event"])


def test_a_changed_delta_in_a_run_is_named_at_the_runs_last_step(recorded: Path) -> None:
    first = next(obj["step"] for obj in lines(recorded)[1:] if obj.get("deltas", {}).get("type") == "text_delta")

    def change(obj: dict[str, Any]) -> None:
        obj["deltas"]["text"][1] = "XY"

    last = rewrite(recorded, lambda o: o.get("deltas", {}).get("type") == "text_delta", change)
    problem = diverges(recorded)
    assert problem.report.step == last
    headline = str(problem).splitlines()[0]
    assert headline.startswith(f"replay diverged at step {last} (turn 1), effect 0 (emit message_update): "
                               f"message_update.digest of steps {first}-{last}: recorded '")
    assert headline.endswith("; the replay streamed text_delta of block 1: 'LetXY add.'")


def test_a_changed_lone_delta_is_named_at_its_step(recorded: Path) -> None:
    def change(obj: dict[str, Any]) -> None:
        obj["input"]["event"]["delta"] = "No!"

    step = rewrite(recorded, lambda o: event_type(o) == "text_delta" and o["input"]["event"]["delta"] == "Yes", change)
    headline = str(diverges(recorded)).splitlines()[0]
    assert headline.startswith(f"replay diverged at step {step} (turn 2), effect 0 (emit message_update): "
                               f"message_update.digest of step {step}: recorded '")
    assert headline.endswith("; the replay streamed text_delta of block 0: 'No!'")


@pytest.mark.parametrize(("kind", "change", "streamed"), [
    ("text_end", lambda e: e["content"].update(text="Let me subtract."), "text_end of block 1: 'Let me subtract.'"),
    ("thinking_end", lambda e: e["content"].update(thinking="no numbers"), "thinking_end of block 0: 'no numbers'"),
    ("toolcall_start", lambda e: e.update(name="sub"), "toolcall_start of block 2: 'sub' (id 'call_1')"),
    ("toolcall_end", lambda e: e["tool_call"]["arguments"].update(b=4),
     """toolcall_end of block 2: 'add' with {"a": 2, "b": 4} (id 'call_1')"""),
    ("thinking_start", lambda e: e.update(redacted=True), "thinking_start of block 0 (redacted)"),
], ids=["text_end content", "thinking_end content", "toolcall_start name", "toolcall_end arguments",
        "thinking_start redacted"])
def test_a_changed_block_event_is_named_at_its_step(recorded: Path, kind: str, change: Callable[[Any], None],
                                                   streamed: str) -> None:
    step = rewrite(recorded, lambda o: event_type(o) == kind, lambda o: change(o["input"]["event"]))
    problem = diverges(recorded)
    headline = str(problem).splitlines()[0]
    assert problem.report.step == step
    assert headline.startswith(f"replay diverged at step {step} (turn 1), effect 0 (emit message_update): "
                               f"message_update.digest of step {step}: recorded '")
    assert headline.endswith(f"; the replay streamed {streamed}")


def test_a_changed_header_of_a_block_event_is_named(tmp_path: Path) -> None:
    from agentcore.stream import PartialAssistantMessage

    def stream(model: Any, context: Any, options: Any) -> list[Any]:
        p = PartialAssistantMessage.begin(model="m1")
        opened = p.text_start()
        later = replace(opened, partial=opened.partial.with_header(response_id="r1"))
        said = later.partial.text_delta(0, "hi")
        done = said.partial.text_end(0)
        from agentcore.stream import StartEvent

        return [StartEvent(p), later, said, done, done.partial.done("stop")]

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m1"))
    SYNC.record(path, "hi", ctx, cfg, stream)
    assert replay(path).finished
    step = rewrite(path, lambda o: event_type(o) == "text_start",
                   lambda o: o["input"]["event"]["header"].update(response_id="r2"))
    problem = diverges(path)
    assert problem.report.step == step and "message_update.digest of step" in str(problem).splitlines()[0]


def test_a_core_that_builds_its_updates_differently_diverges(recorded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def shouting(partial: Any, event: Any) -> MessageUpdateEvent:
        if isinstance(event, TextDeltaEvent):
            event = replace(event, delta=event.delta.upper())
        return MessageUpdateEvent(partial, event)

    monkeypatch.setattr(agentcore.machine, "MessageUpdateEvent", shouting)
    first, last = next((o["step"], o["last"]) for o in lines(recorded)[1:]
                       if o.get("deltas", {}).get("type") == "text_delta")
    headline = str(diverges(recorded)).splitlines()[0]
    assert f"message_update.digest of steps {first}-{last}" in headline
    assert headline.endswith("the replay streamed text_delta of block 1: 'LET ME ADD.'")


def test_an_update_that_is_not_its_input_event_is_recorded_with_its_own_digest(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # A core whose update is not the stream event itself: the recorder cannot digest it as a
    # run of the inputs' deltas, so it digests each update as it is; replay then holds.
    def copied(partial: Any, event: Any) -> MessageUpdateEvent:
        return MessageUpdateEvent(partial, replace(event))

    monkeypatch.setattr(agentcore.machine, "MessageUpdateEvent", copied)
    path = tmp_path / "run.jsonl"
    record_streamed_sum(path)
    assert not any("deltas" in obj for obj in lines(path)[1:])
    assert replay(path).finished
