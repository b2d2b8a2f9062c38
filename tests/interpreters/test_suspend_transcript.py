"""Suspension in transcripts and across processes.

A run that suspends is recorded; its resumed run goes on recording at the end of the same file
(``resume_suspended(..., transcript=path)``), so a strict replay of the file replays the
suspension and the decisions (an input, ``Resumed``) as one run, and an LLM-only replay runs the
tools again through both. Real processes: one suspends and writes the suspension's JSON to a
file, another (on either interpreter) resumes it; the result is the uninterrupted run's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcore import Approve, Deny, ToolOutput, replace
from agentcore.codec import from_json, to_json
from agentcore.state import Suspended
from interpreters.replay import replay, resume
from interpreters.replay.recovery import continue_transcript
from interpreters.transcript import TranscriptError, TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import ASYNCIO, FLAVOURS, SYNC, Flavour
from tests.support.scripts import script_command, script_env, script_module

agent: Any = script_module("approval_agent")

FIRST = {"c2": Approve(), "c3": ToolOutput("photos")}
SECOND = {"c4": Deny("keep it")}


def uninterrupted(flavour: Flavour) -> tuple[list[Any], list[Any]]:
    """The same conversation with every decision given at once."""
    context, config, model = agent.setup()
    everything = {**FIRST, **SECOND}
    config = replace(config, decide_tool_call=lambda pending: everything[pending.tool_call_id])
    events, messages, suspension = flavour.start_suspending(agent.PROMPT, context, config, model, clock=clock)
    assert suspension is None
    return events, messages


def suspend_and_resume(flavour: Flavour, path: Path, again: Flavour | None = None
                       ) -> tuple[list[Any], list[Any]]:
    context, config, model = agent.setup()
    events, _, s1 = flavour.start_suspending(agent.PROMPT, context, config, model, clock=clock,
                                             journal=TranscriptRecorder(path, context, config))
    second = again or flavour
    more, _, s2 = second.resume(s1, FIRST, context, config, model, clock=clock, transcript=path)
    last, messages, s3 = flavour.resume(s2, SECOND, context, config, model, clock=clock, transcript=path)
    assert s3 is None
    return events + more + last, messages


def test_one_transcript_holds_the_suspended_and_the_resumed_run_and_replays_strictly(
        flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    events, messages = suspend_and_resume(flavour, path)
    assert [e.type for e in events].count("agent_suspended") == 2
    result = replay(path)
    assert result.finished and result.events == events and result.messages == messages
    t = read_transcript(path)
    resumes = [e.input for e in t.entries if e.input.type == "resumed"]
    assert [dict(r.decisions) for r in resumes] == [FIRST, SECOND]
    assert sum(1 for line in path.read_text().splitlines() if '"resumed_suspension"' in line) == 2


def test_the_resumed_run_has_the_uninterrupted_runs_messages(flavour: Flavour, tmp_path: Path) -> None:
    _, messages = suspend_and_resume(flavour, tmp_path / "run.jsonl")
    assert messages == uninterrupted(flavour)[1]


def test_llm_only_replay_goes_through_the_recorded_suspensions(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    events, messages = suspend_and_resume(flavour, path)
    context, config, _ = agent.setup()
    result = flavour.call(flavour.replay_llm, path, config, context.tools)
    assert result.messages == messages and result.finished
    assert [e for e in result.events if e.type != "tool_execution_end"] == [
        e for e in events if e.type != "tool_execution_end"]


def test_resume_and_replay_of_a_transcript_that_ends_suspended(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    context, config, model = agent.setup()
    _, messages, suspension = SYNC.start_suspending(agent.PROMPT, context, config, model, clock=clock,
                                                    journal=TranscriptRecorder(path, context, config))
    result = replay(path)
    assert not result.finished and isinstance(result.state.phase, Suspended)
    assert result.messages == messages and result.events[-1].type == "agent_suspended"
    stream = resume(path, config, context.tools, stream_fn=model)
    assert list(stream) == [] and stream.suspension == suspension


def test_a_transcript_of_another_run_is_not_continued(tmp_path: Path) -> None:
    context, config, model = agent.setup()
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _, _, s1 = SYNC.start_suspending(agent.PROMPT, context, config, model, clock=clock,
                                     journal=TranscriptRecorder(a, context, config))
    _, _, s2 = SYNC.resume(s1, FIRST, context, config, model, clock=clock, transcript=a)
    with pytest.raises(TranscriptError, match="this suspension \\(step \\d+\\) was already resumed at step \\d+ "):
        continue_transcript(a, s1, config)  # resumed into it already: the file went on with another suspension
    c = tmp_path / "c.jsonl"
    SYNC.start_suspending(agent.PROMPT, context, config, model, clock=clock,
                          journal=TranscriptRecorder(c, context, config))
    with pytest.raises(TranscriptError, match="suspended on other tool calls \\(c2, c3\\): not this suspension"):
        continue_transcript(c, s2, config)
    everything = {**FIRST, **SECOND}
    deciding = replace(config, decide_tool_call=lambda pending: everything[pending.tool_call_id])
    SYNC.run(agent.PROMPT, context, deciding, agent.setup()[2], journal=TranscriptRecorder(b, context, deciding))
    with pytest.raises(TranscriptError, match="is not suspended \\(phase finished\\)"):
        continue_transcript(b, s2, config)


def run_script(*args: str) -> int:
    done = subprocess.run(script_command("approval_agent", *args), capture_output=True, text=True, timeout=120,
                          env=script_env())
    assert done.returncode in (0, 3), done.stderr
    return done.returncode


@pytest.mark.parametrize("first, second", [(SYNC, SYNC), (SYNC, ASYNCIO), (ASYNCIO, SYNC)],
                         ids=["sync-sync", "sync-asyncio", "asyncio-sync"])
def test_suspend_in_one_process_and_resume_in_others(first: Flavour, second: Flavour, tmp_path: Path) -> None:
    suspension, transcript = tmp_path / "suspension.json", tmp_path / "run.jsonl"
    decisions, out = tmp_path / "decisions.json", tmp_path / "out.json"
    assert run_script("suspend", first.name, str(suspension), str(transcript)) == 0
    stored = from_json(json.loads(suspension.read_text()))
    assert [p.tool_call_id for p in stored.pending] == ["c2", "c3"]
    decisions.write_text(json.dumps({k: to_json(v) for k, v in FIRST.items()}))
    assert run_script("resume", second.name, str(suspension), str(transcript), str(decisions), str(out)) == 3
    decisions.write_text(json.dumps({k: to_json(v) for k, v in SECOND.items()}))
    assert run_script("resume", first.name, str(suspension), str(transcript), str(decisions), str(out)) == 0
    messages = from_json(json.loads(out.read_text())["messages"])
    assert list(messages) == uninterrupted(SYNC)[1]
    assert replay(transcript).messages == list(messages)


def test_every_flavour_is_covered() -> None:
    assert {f.name for f in FLAVOURS} == {"sync", "asyncio"}
