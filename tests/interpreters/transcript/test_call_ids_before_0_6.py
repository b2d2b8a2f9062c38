"""Transcripts recorded by agentcore-fx 0.5.0 (format 5), whose model repeated tool call ids.

0.5.0 kept the ids as the model gave them: here ``"0"`` on two turns, twice in one reply, and an
empty id. Since format 6 the core makes them unique (``agentcore.call_ids``); a format-5 run
still replays, forks and goes on as it ran, with the ids its model gave. The files were written
by 0.5.0's own recorder: sync, asyncio (streamed in chunks of 3 characters), and a run that
suspended on an approval and was resumed into its transcript.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agentcore import AgentContext, AgentLoopConfig, AssistantMessage, Model
from interpreters import ScriptedModel, tool
from interpreters.replay import aresume, fork, replay, replay_llm, resume, state_at
from interpreters.streams.scripted import Reply
from interpreters.transcript import VERSION, read_transcript
from tests.support.flavours import FLAVOURS, Flavour

DATA = Path(__file__).parents[2] / "data"
RECORDED_IDS = [["0"], ["0", "0"], [""], []]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def ids(messages: object) -> list[list[str]]:
    return [[c.id for c in m.tool_calls] for m in messages if isinstance(m, AssistantMessage)]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["sync", "asyncio"])
def test_a_format_5_run_with_repeated_ids_replays_identically(name: str) -> None:
    t = read_transcript(DATA / f"v5-repeated-call-ids-{name}.jsonl")
    assert t.version == 5 and t.header["library_version"] == "0.5.0"
    assert t.initial_state.run.unique_call_ids is False
    result = replay(t)
    assert result.finished and result.messages[-1].text == "Sums: 3, 6, 8, 10."
    assert ids(result.messages) == RECORDED_IDS
    assert [m.tool_call_id for m in result.messages if m.role == "toolResult"] == ["0", "0", "0", ""]


def test_a_format_5_run_suspended_and_resumed_replays_identically() -> None:
    t = read_transcript(DATA / "v5-repeated-call-ids-resumed.jsonl")
    result = replay(t)
    assert result.finished and result.messages[-1].text == "Deleted a.txt."
    assert ids(result.messages) == [["0"], ["0"], []]


def test_state_at_and_fork_of_a_format_5_run_keep_its_ids(tmp_path: Path) -> None:
    source = DATA / "v5-repeated-call-ids-sync.jsonl"
    steps = read_transcript(source).steps
    assert state_at(source, steps).run.unique_call_ids is False
    assert ids(state_at(source, steps).messages) == RECORDED_IDS
    forked = fork(source, steps - 3, tmp_path / "fork.jsonl")
    assert read_transcript(forked).version == 5  # a fork is the same run: it keeps the format
    assert replay(forked, until=steps - 3).state.run.unique_call_ids is False


def test_llm_only_replay_of_a_format_5_run_runs_its_tools_with_the_recorded_ids() -> None:
    config = AgentLoopConfig(model=Model(id="scripted"))
    result = replay_llm(DATA / "v5-repeated-call-ids-sync.jsonl", config, [add])
    assert ids(result.messages) == RECORDED_IDS and result.messages[-1].text == "Sums: 3, 6, 8, 10."


@pytest.mark.parametrize("interpreter", ["sync", "asyncio"])
def test_a_crashed_format_5_run_goes_on_with_the_ids_its_model_gives(interpreter: str, tmp_path: Path) -> None:
    path = tmp_path / "crashed.jsonl"
    t = read_transcript(DATA / "v5-repeated-call-ids-sync.jsonl")
    # Cut the file after the first tool turn's result: the run crashed before its second model call.
    last = next(e.step for e in t if type(e.input).__name__ == "ToolFinished")
    lines = (DATA / "v5-repeated-call-ids-sync.jsonl").read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "".join(line for line in lines[1:] if json.loads(line)["step"] <= last))
    model = ScriptedModel([Reply(tool_calls=(("add", {"a": 3, "b": 3}, "0"), ("add", {"a": 4, "b": 4}, "0"))),
                           "Sums: 3, 6, 8."])
    config = AgentLoopConfig(model=Model(id="scripted"))
    if interpreter == "sync":
        messages = resume(path, config, [add], model).result()
    else:
        async def main() -> list[object]:
            return list(await aresume(path, config, [add], model).result())

        messages = asyncio.run(main())
    assert ids(messages) == [["0"], ["0", "0"], []]
    assert replay(path).finished and read_transcript(path).version == 5


@pytest.mark.parametrize("flavour", FLAVOURS, ids=str)
def test_a_new_run_makes_repeated_ids_unique_and_writes_format_6(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    context = AgentContext("You are terse.", [], [add])
    config = AgentLoopConfig(model=Model(id="scripted"))
    model = ScriptedModel([Reply(tool_calls=(("add", {"a": 1, "b": 2}, "0"),)),
                           Reply(tool_calls=(("add", {"a": 3, "b": 3}, "0"), ("add", {"a": 4, "b": 4}, "0"))),
                           Reply(tool_calls=(("add", {"a": 5, "b": 5}, ""),)), "Sums: 3, 6, 8, 10."])
    flavour.record(path, "Add some numbers", context, config, model)
    t = read_transcript(path)
    assert VERSION == 6 and t.version == 6 and t.initial_state.run.unique_call_ids is True
    assert '"unique_call_ids":true' in path.read_text().splitlines()[0]
    result = replay(t)
    assert ids(result.messages) == [["0"], ["0_2", "0_3"], ["call_4"], []]
