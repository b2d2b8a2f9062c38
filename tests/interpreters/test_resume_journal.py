"""A resumed run recorded to a file of its own replays on its own.

``resume_suspended(..., journal=TranscriptRecorder(new_path, context, config))`` records the
resumed run in a new file. The run starts from the suspended state, not from an idle one: the
recorder writes the state the run starts from as the transcript's initial state, so that the
file replays strictly, from the decisions (``Resumed``) to the run's end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Approve, Deny, Model, ToolOutput
from interpreters import ScriptedModel
from interpreters.replay import replay
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.scripts import script_module

agent: Any = script_module("approval_agent")

FIRST = {"c2": Approve(), "c3": ToolOutput("photos")}
SECOND = {"c4": Deny("keep it")}


def test_a_resumed_run_recorded_to_a_new_file_replays_strictly(flavour: Flavour, tmp_path: Path) -> None:
    context, config, model = agent.setup()
    _, _, s1 = flavour.start_suspending(agent.PROMPT, context, config, model, clock=clock)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    events1, messages1, s2 = flavour.resume(s1, FIRST, context, config, model, clock=clock,
                                            journal=TranscriptRecorder(first, context, config))
    events2, messages2, s3 = flavour.resume(s2, SECOND, context, config, model, clock=clock,
                                            journal=TranscriptRecorder(second, context, config))
    assert s3 is None
    for path, events, messages in ((first, events1, messages1), (second, events2, messages2)):
        t = read_transcript(path)
        assert t.initial_state.phase.name == "suspended" and t.entries[0].input.type == "resumed"
        result = replay(path)
        assert result.events == events and result.messages == messages
    assert replay(second).finished and not replay(first).finished


def test_the_new_file_starts_from_the_suspension_whatever_state_the_recorder_was_given(
        flavour: Flavour, tmp_path: Path) -> None:
    context, config, model = agent.setup()
    _, _, s1 = flavour.start_suspending(agent.PROMPT, context, config, model, clock=clock)
    path = tmp_path / "resumed.jsonl"
    events, messages, _ = flavour.resume(s1, FIRST, context, config, model, clock=clock,
                                         journal=TranscriptRecorder(path, config=config, state=s1.state))
    result = replay(path)
    assert result.events == events and result.messages == messages


def test_the_recorder_of_the_suspension_goes_on_recording_the_resumed_run(flavour: Flavour, tmp_path: Path) -> None:
    """Given again as the resumed run's journal, the recorder that recorded the run up to its
    suspension goes on at the end of its file, as ``transcript=path`` would: one file, one run."""
    context, config, model = agent.setup()
    path = tmp_path / "run.jsonl"
    recorder = TranscriptRecorder(path, context, config)
    events0, _, s1 = flavour.start_suspending(agent.PROMPT, context, config, model, clock=clock, journal=recorder)
    events1, _, s2 = flavour.resume(s1, FIRST, context, config, model, clock=clock, journal=recorder)
    events2, messages, s3 = flavour.resume(s2, SECOND, context, config, model, clock=clock, journal=recorder)
    assert s3 is None
    result = replay(path)
    assert result.finished and result.messages == messages
    assert result.events == events0 + events1 + events2
    assert read_transcript(path).initial_state.phase.name == "idle"


def test_a_recorder_that_recorded_a_run_already_is_refused_before_anything_runs(flavour: Flavour,
                                                                               tmp_path: Path) -> None:
    context, config, model = agent.setup()
    path, other = tmp_path / "run.jsonl", tmp_path / "other.jsonl"
    _, _, s1 = flavour.start_suspending(agent.PROMPT, context, config, model, clock=clock)
    recorder = TranscriptRecorder(other, context, config)
    flavour.run("hi", context, config, ScriptedModel(["done"]), clock=clock, journal=recorder)  # a finished run
    before = other.read_bytes()
    with pytest.raises(ValueError) as info:
        flavour.resume(s1, FIRST, context, config, model, clock=clock, journal=recorder)
    assert str(info.value) == (f"{other}: the recorder is closed: it recorded a run already, or close() was "
                               "called (a recorder records one run): give this run a new recorder (a resumed run: "
                               "transcript=path goes on in the same file)")
    assert other.read_bytes() == before and not path.exists()


def test_a_fresh_run_records_the_state_it_starts_from(tmp_path: Path) -> None:
    """The run's own initial state is the header's, even from a recorder built from another context."""
    from interpreters import ScriptedModel, run_agent_loop

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext("You help."), AgentLoopConfig(model=Model(id="m"))
    run_agent_loop("hi", ctx, cfg, emit=lambda e: None, stream_fn=ScriptedModel(["ok"]), clock=clock,
                   journal=TranscriptRecorder(path, AgentContext("Another prompt."), cfg))
    assert read_transcript(path).header["system_prompt"] == "You help."
    assert replay(path).finished
