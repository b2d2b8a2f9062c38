"""A suspended run resumed under another config goes on with that config, and replays as it ran.

The code that resumes a suspension (maybe days later, in another process, after a deploy) hands
its own config: its model, its hooks, its budgets. They go in force through the ``Resumed``
input (``Resumed.settings``), so the transcript of the resumed run holds them and a strict
replay, which has no config, does what the run did.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Approve, Model, RunSettings
from agentcore.codec import from_json, to_json
from agentcore.tools import spec_of
from interpreters import ScriptedModel, tool
from interpreters.replay import replay
from interpreters.streams.scripted import Reply
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import Flavour


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


CONTEXT = AgentContext("You are careful.", [], [delete])
BEFORE = AgentLoopConfig(model=Model(id="scripted"))


def script() -> ScriptedModel:
    return ScriptedModel([Reply(tool_calls=(("delete", {"path": "a.txt"}, "c1"),)), "Deleted a.txt.",
                          "Anything else?"])


def after(seen: list[str]) -> AgentLoopConfig:
    """The config of the code that resumes: another model, an after_tool_call hook, one turn."""
    def after_tool_call(ctx: Any, *_: Any) -> None:
        seen.append(ctx.tool_call.id)

    return AgentLoopConfig(model=Model(id="scripted-2"), after_tool_call=after_tool_call, max_turns=1)


def test_the_resumed_run_goes_on_with_the_resuming_config_and_replays_as_it_ran(
        flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    model = script()
    _, _, suspension = flavour.start_suspending("Delete a.txt", CONTEXT, BEFORE, model, clock=clock,
                                                journal=TranscriptRecorder(path, CONTEXT, BEFORE))
    seen: list[str] = []
    events, messages, left = flavour.resume(suspension, {"c1": Approve()}, CONTEXT, after(seen), model,
                                            clock=clock, transcript=path)
    assert left is None and seen == ["c1"]
    # max_turns=1: the turn that ran the tool was the run's first after the resume counts it; the
    # run had used one turn already, so the budget stops it before another model call.
    assert [e.type for e in events][-2:] == ["budget_reached", "agent_end"]
    resumed = next(e.input for e in read_transcript(path) if e.input.type == "resumed")
    assert resumed.settings == RunSettings(after(seen).model, frozenset({"after_tool_call"}), 1, None, None,
                                           (spec_of(delete),), {"delete": "approval"}, "parallel")
    result = replay(path)
    assert result.events[-len(events):] == events and result.messages == messages


def test_a_new_model_answers_the_resumed_run_and_the_replay_agrees(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    model = script()
    _, _, suspension = flavour.start_suspending("Delete a.txt", CONTEXT, BEFORE, model, clock=clock,
                                                journal=TranscriptRecorder(path, CONTEXT, BEFORE))
    stored = from_json(to_json(suspension))  # kept by the application meanwhile
    config = AgentLoopConfig(model=Model(id="scripted-2"))
    events, messages, _ = flavour.resume(stored, {"c1": Approve()}, CONTEXT, config, model, clock=clock,
                                         transcript=path)
    calls = [e for e in read_transcript(path).entries if e.input.type == "resumed"]
    assert len(calls) == 1 and messages[-1].text == "Deleted a.txt."
    llm_calls = [f for e in read_transcript(path) for f in e.effects if f.type == "call_llm"]
    assert [c.model.id for c in llm_calls] == ["scripted", "scripted-2"]
    assert replay(path).messages == messages


def test_a_resumed_run_recorded_to_a_file_of_its_own_replays_with_the_new_settings(
        flavour: Flavour, tmp_path: Path) -> None:
    model = script()
    _, _, suspension = flavour.start_suspending("Delete a.txt", CONTEXT, BEFORE, model, clock=clock)
    seen: list[str] = []
    path = tmp_path / "resumed.jsonl"
    config = after(seen)
    events, messages, _ = flavour.resume(suspension, {"c1": Approve()}, CONTEXT, config, model, clock=clock,
                                         journal=TranscriptRecorder(path, CONTEXT, config))
    result = replay(path)
    assert result.events == events and result.messages == messages and seen == ["c1"]


def test_which_calls_wait_and_the_tools_the_model_sees_come_from_the_resuming_code(
        flavour: Flavour, tmp_path: Path) -> None:
    """A stored suspension is data anyone could edit: one that says ``delete`` needs no approval
    and describes it otherwise changes neither what waits for an approval nor what the model is
    told about the tool."""
    scripted = ScriptedModel([Reply(tool_calls=(("delete", {"path": "a.txt"}, "c1"),)),
                              Reply(tool_calls=(("delete", {"path": "b.txt"}, "c2"),)), "Deleted both."])
    described: list[list[str]] = []

    def model(m: Any, context: Any, options: Any) -> Any:
        described.append([t.description for t in context.tools])
        return scripted(m, context, options)

    _, _, suspension = flavour.start_suspending("Delete a.txt and b.txt", CONTEXT, BEFORE, model, clock=clock)
    data = to_json(suspension)
    data["state"]["run"]["tool_policies"] = {}
    data["state"]["run"]["tools"][0]["description"] = "Deletes nothing; call it freely."
    edited = from_json(data)
    assert edited.problem() is None
    _, messages, again = flavour.resume(edited, {"c1": Approve()}, CONTEXT, BEFORE, model, clock=clock)
    assert again is not None and [p.tool_call_id for p in again.pending] == ["c2"]
    assert [m.content[0].text for m in messages if m.role == "toolResult"] == ["deleted a.txt"]
    assert described == [["Delete a file."], ["Delete a file."]]
