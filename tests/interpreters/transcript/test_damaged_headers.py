"""A damaged transcript header is a TranscriptError on every path that reads one.

The header's ``initial_state`` (and its other records) are decoded and checked once, by the
reader, field by field against their types: every reader (strict and LLM-only replay, state_at,
fork, crash resume, the pytest plugin, the command line) gets the same error, naming the file,
line 1 and the damaged field, never an AttributeError, TypeError or KeyError from deep inside a
run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    Cost,
    Model,
    TextContent,
    Usage,
    UserMessage,
    replace,
)
from interpreters import ScriptedModel, tool
from interpreters.cli.command import main as cli_main
from interpreters.pytest_plugin import AgentRecording
from interpreters.replay import ReplayOptions, areplay_llm, fork, replay, replay_llm, state_at
from interpreters.replay.recovery import aresume, resume
from interpreters.streams.scripted import tool_call
from interpreters.transcript import TranscriptError, read_transcript
from tests.support.flavours import SYNC


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


HISTORY = [UserMessage("Earlier question", timestamp=1),
           AssistantMessage((TextContent("Earlier answer"),), model="m", timestamp=2)]
CONTEXT = AgentContext("Be exact.", HISTORY, [add])
CONFIG = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential")


def replies() -> ScriptedModel:
    return ScriptedModel([tool_call("add", {"a": 1, "b": 2}), "3."])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The lines of a transcript of a sound run (a tool call, then an answer, after a history)."""
    path = tmp_path_factory.mktemp("recorded") / "run.jsonl"
    SYNC.record(path, "Sum 1 and 2", CONTEXT, CONFIG, replies())
    assert replay(path).finished
    return path.read_text().splitlines()


def setting(*keys: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    """A damage: the header's value at ``keys`` becomes ``value``."""
    def change(header: dict[str, Any]) -> None:
        target: Any = header
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


def removing(*keys: Any) -> Callable[[dict[str, Any]], None]:
    def change(header: dict[str, Any]) -> None:
        target: Any = header
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]
    return change


S = ("initial_state",)
R = ("initial_state", "run")

# name -> (damage, the header field the error names, the field path inside it)
DAMAGES: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    # the phase
    "phase without a type tag": (setting(*S, "phase", value={"id": 1}), "initial_state", "$.phase"),
    "phase an empty object": (setting(*S, "phase", value={}), "initial_state", "$.phase"),
    "phase tagged as another record": (setting(*S, "phase", value={"type": "Usage"}), "initial_state", "$.phase"),
    "phase with an unknown tag": (setting(*S, "phase", value={"type": "sleeping"}), "initial_state", "$.phase"),
    "phase a list": (setting(*S, "phase", value=[1]), "initial_state", "$.phase"),
    "phase a string": (setting(*S, "phase", value="idle"), "initial_state", "$.phase"),
    "phase null": (setting(*S, "phase", value=None), "initial_state", "$.phase"),
    "phase missing": (removing(*S, "phase"), "initial_state", "$"),
    "phase lacks its id": (setting(*S, "phase", value={"type": "AwaitingSteering"}), "initial_state", "$.phase"),
    "phase id a string": (setting(*S, "phase", value={"type": "AwaitingSteering", "id": "1"}),
                          "initial_state", "$.phase.id"),
    "streaming phase with an untagged partial": (
        setting(*S, "phase", value={"type": "Streaming", "id": 1, "partial": {"content": []}}),
        "initial_state", "$.phase.partial"),
    "streaming phase with blocks not text": (
        setting(*S, "phase", value={"type": "Streaming", "id": 1, "blocks": [1, 2]}),
        "initial_state", "$.phase.blocks[0]"),
    "running tools with an untagged message": (
        setting(*S, "phase", value={"type": "RunningTools", "message": {"content": []}, "sequential": True,
                                    "slots": []}),
        "initial_state", "$.phase.message"),
    "running tools with slots not slots": (
        setting(*S, "phase", value={"type": "RunningTools", "message": {"type": "assistant"}, "sequential": True,
                                    "slots": [{"call": 1}]}),
        "initial_state", "$.phase.slots[0]"),
    # the state and the run
    "state not an object": (setting("initial_state", value=[1, 2]), "initial_state", "$"),
    "state another record": (setting("initial_state", value={"type": "Usage"}), "initial_state", "$"),
    "run without a type tag": (removing(*R, "type"), "initial_state", "$.run"),
    "run tagged as the state": (setting(*R, "type", value="LoopState"), "initial_state", "$.run"),
    "run missing": (removing(*S, "run"), "initial_state", "$"),
    "run lacks its model": (removing(*R, "model"), "initial_state", "$.run"),
    # counters and flags
    "turns a string": (setting(*R, "turns", value="x"), "initial_state", "$.run.turns"),
    "turns a float": (setting(*R, "turns", value=1.5), "initial_state", "$.run.turns"),
    "turns a bool": (setting(*R, "turns", value=True), "initial_state", "$.run.turns"),
    "next_id a string": (setting(*R, "next_id", value="1"), "initial_state", "$.run.next_id"),
    "next_id null": (setting(*R, "next_id", value=None), "initial_state", "$.run.next_id"),
    "total_tokens a list": (setting(*R, "total_tokens", value=[1]), "initial_state", "$.run.total_tokens"),
    "cost_usd a string": (setting(*R, "cost_usd", value="0"), "initial_state", "$.run.cost_usd"),
    "max_turns a string": (setting(*R, "max_turns", value="3"), "initial_state", "$.run.max_turns"),
    "max_cost_usd an object": (setting(*R, "max_cost_usd", value={"usd": 1}), "initial_state", "$.run.max_cost_usd"),
    "aborted a number": (setting(*R, "aborted", value=0), "initial_state", "$.run.aborted"),
    "turn_open a string": (setting(*R, "turn_open", value="no"), "initial_state", "$.run.turn_open"),
    "thinking level unknown": (setting(*R, "thinking_level", value="ultra"), "initial_state", "$.run.thinking_level"),
    "tool execution unknown": (setting(*R, "tool_execution", value="both"), "initial_state", "$.run.tool_execution"),
    "hooks a string": (setting(*R, "hooks", value="convert_to_llm"), "initial_state", "$.run.hooks"),
    "hooks not names": (setting(*R, "hooks", value=[1]), "initial_state", "$.run.hooks"),
    "system prompt a number": (setting(*R, "system_prompt", value=5), "initial_state", "$.run.system_prompt"),
    "tool policy unknown": (setting(*R, "tool_policies", value={"add": "maybe"}), "initial_state",
                            "$.run.tool_policies"),
    "last turn without a type tag": (setting(*R, "last_turn", value={"message": None}), "initial_state",
                                     "$.run.last_turn"),
    # messages
    "messages a string": (setting(*R, "messages", value="oops"), "initial_state", "$.run.messages"),
    "messages a number": (setting(*R, "messages", value=5), "initial_state", "$.run.messages"),
    "a message without a type tag": (setting(*R, "messages", 0, value={"content": "hi", "timestamp": 1}),
                                     "initial_state", "$.run.messages[0]"),
    "a message a number": (setting(*R, "messages", 1, value=7), "initial_state", "$.run.messages[1]"),
    "a message tagged as usage": (setting(*R, "messages", 0, value={"type": "Usage"}), "initial_state",
                                  "$.run.messages[0]"),
    "a message with content a number": (setting(*R, "messages", 0, "content", value=5), "initial_state",
                                        "$.run.messages[0].content"),
    "a message with an untagged block": (setting(*R, "messages", 1, "content", 0, value={"text": "x"}),
                                         "initial_state", "$.run.messages[1].content[0]"),
    "a message with timestamp a string": (setting(*R, "messages", 0, "timestamp", value="now"), "initial_state",
                                          "$.run.messages[0].timestamp"),
    "a reply with usage a string": (setting(*R, "messages", 1, "usage", value="lots"), "initial_state",
                                    "$.run.messages[1].usage"),
    "a reply with usage tagged as cost": (setting(*R, "messages", 1, "usage", value={"type": "Cost"}),
                                          "initial_state", "$.run.messages[1].usage"),
    "a reply with an unknown stop reason": (setting(*R, "messages", 1, "stop_reason", value="tired"),
                                            "initial_state", "$.run.messages[1].stop_reason"),
    "new messages not messages": (setting(*R, "new_messages", value=[{"content": "x"}]), "initial_state",
                                  "$.run.new_messages[0]"),
    "llm messages not messages": (setting(*R, "llm_messages", value=[3]), "initial_state", "$.run.llm_messages[0]"),
    "llm messages a number": (setting(*R, "llm_messages", value=3), "initial_state", "$.run.llm_messages"),
    # tools
    "tools a number": (setting(*R, "tools", value=5), "initial_state", "$.run.tools"),
    "tools a string": (setting(*R, "tools", value="add"), "initial_state", "$.run.tools"),
    "a tool without a type tag": (setting(*R, "tools", 0, value={"name": "add"}), "initial_state",
                                  "$.run.tools[0]"),
    "a tool tagged as a model": (setting(*R, "tools", 0, value={"type": "Model", "id": "m"}), "initial_state",
                                 "$.run.tools[0]"),
    "a tool named by a number": (setting(*R, "tools", 0, "name", value=5), "initial_state", "$.run.tools[0].name"),
    "a tool with an unknown execution mode": (setting(*R, "tools", 0, "execution_mode", value="later"),
                                              "initial_state", "$.run.tools[0].execution_mode"),
    # the model
    "model without a type tag": (removing(*R, "model", "type"), "initial_state", "$.run.model"),
    "model tagged as usage": (setting(*R, "model", "type", value="Usage"), "initial_state", "$.run.model"),
    "model with an unknown tag": (setting(*R, "model", "type", value="nope"), "initial_state", "$.run.model"),
    "model id a number": (setting(*R, "model", "id", value=5), "initial_state", "$.run.model.id"),
    "model lacks its id": (removing(*R, "model", "id"), "initial_state", "$.run.model"),
    "model cost untagged": (setting(*R, "model", "cost", value={"input": 1.0}), "initial_state",
                            "$.run.model.cost"),
    "model input a string": (setting(*R, "model", "input", value="text"), "initial_state", "$.run.model.input"),
    "model context window a string": (setting(*R, "model", "context_window", value="big"), "initial_state",
                                      "$.run.model.context_window"),
    "model headers a list": (setting(*R, "model", "headers", value=["x"]), "initial_state", "$.run.model.headers"),
    # the header's own copies of the model and tools, and its other fields
    "header model untagged": (removing("model", "type"), "model", "$"),
    "header model id a number": (setting("model", "id", value=5), "model", "$.id"),
    "header tools a number": (setting("tools", value=5), "tools", "$"),
    "header tool untagged": (setting("tools", 0, value={"name": "add"}), "tools", "$[0]"),
    "header hooks a string": (setting("hooks", value="x"), "hooks", " is a str ('x'), not a list of strings"),
    "header hooks not names": (setting("hooks", value=[1]), "hooks", "[0] is an int (1), not a str"),
    "header created_at a string": (setting("created_at", value="today"), "created_at",
                                   " is a str ('today'), not an int"),
    "header system prompt a list": (setting("system_prompt", value=["x"]), "system_prompt",
                                    " is a list of 1 item, not a str"),
}


def damaged(tmp_path: Path, lines: list[str], name: str) -> Path:
    header = json.loads(lines[0])
    DAMAGES[name][0](header)
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return path


def expected_start(path: Path, name: str) -> str:
    """How the error begins: the file, line 1, the header's field and where in it."""
    _, field, where = DAMAGES[name]
    if field in ("initial_state", "model", "tools"):
        return f"{path}: line 1: the header's {field} {'do' if field == 'tools' else 'does'} not decode: "
    return f"{path}: line 1: the header's {field}"


def check_error(error: BaseException, path: Path, name: str) -> None:
    _, field, where = DAMAGES[name]
    assert type(error) is TranscriptError, f"{name}: {type(error).__name__}: {error}"
    text = str(error)
    assert text.startswith(expected_start(path, name)), (name, text)
    assert where in text[len(expected_start(path, name)):], (name, where, text)
    assert "\n" not in text
    assert (error.path, error.line) == (path, 1)


async def _aresume(path: Path) -> None:
    stream = aresume(path, CONFIG, [add], stream_fn=replies())
    async for _ in stream:
        pass


def _recording(path: Path) -> Any:
    recording = AgentRecording(path, "once", ReplayOptions())
    return recording.run("Sum 1 and 2", CONTEXT, CONFIG, stream_fn=replies())


READERS: dict[str, Callable[[Path], Any]] = {
    "read_transcript": read_transcript,
    "replay": replay,
    "replay_llm": lambda p: replay_llm(p, CONFIG, [add]),
    "areplay_llm": lambda p: asyncio.run(areplay_llm(p, CONFIG, [add])),
    "state_at": lambda p: state_at(p, 1),
    "fork": lambda p: fork(p, 1, p.with_name("fork.jsonl")),
    "resume": lambda p: list(resume(p, CONFIG, [add], stream_fn=replies())),
    "aresume": lambda p: asyncio.run(_aresume(p)),
    "pytest plugin": _recording,
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_every_reader_names_the_file_line_1_and_the_field(
        tmp_path: Path, recorded: list[str], name: str, reader: str) -> None:
    path = damaged(tmp_path, recorded, name)
    before = path.read_bytes()
    with pytest.raises(Exception) as info:
        READERS[reader](path)
    check_error(info.value, path, name)
    assert path.read_bytes() == before  # nothing written to a damaged file
    assert not path.with_name("fork.jsonl").exists()


CLI: dict[str, list[str]] = {
    "show": ["transcript", "show", "{file}"],
    "replay": ["transcript", "replay", "{file}"],
    "state": ["transcript", "state", "{file}", "--step", "1"],
    "html": ["transcript", "html", "{file}", "-o", "{dir}/page.html"],
    "fork": ["transcript", "fork", "{file}", "--step", "1", "-o", "{dir}/fork.jsonl"],
    "diff": ["transcript", "diff", "{file}", "{file}"],
    "resume": ["transcript", "resume", "{file}"],
}


@pytest.mark.parametrize("command", sorted(CLI))
@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_the_command_line_says_so_and_exits_2(
        tmp_path: Path, recorded: list[str], capsys: pytest.CaptureFixture[str], name: str, command: str) -> None:
    path = damaged(tmp_path, recorded, name)
    args = [a.format(file=path, dir=tmp_path) for a in CLI[command]]
    code = cli_main(args)
    out, err = capsys.readouterr()
    start = expected_start(path, name)[len(f"{path}: "):]
    assert err.startswith(f"agentcore: {path} is not a usable transcript: {start}"), (name, err)
    assert DAMAGES[name][2] in err and err.count("\n") == 1 and "Traceback" not in err
    assert code == 2 and out == ""
    assert not (tmp_path / "page.html").exists() and not (tmp_path / "fork.jsonl").exists()


def test_a_sound_header_reads_and_replays_on_every_path(tmp_path: Path, recorded: list[str],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The check refuses damage only: the recording itself goes through every reader."""
    path = tmp_path / "sound.jsonl"
    text = "\n".join(recorded) + "\n"
    for reader in sorted(READERS):
        path.write_text(text)
        path.with_name("fork.jsonl").unlink(missing_ok=True)
        READERS[reader](path)
    for command in sorted(set(CLI) - {"resume"}):  # resuming a finished run is for the tests of resume
        path.write_text(text)
        (tmp_path / "fork.jsonl").unlink(missing_ok=True)
        args = [a.format(file=path, dir=tmp_path) for a in CLI[command]]
        assert cli_main(args) == 0, (command, capsys.readouterr())


def test_the_command_in_a_process_of_its_own(tmp_path: Path, recorded: list[str]) -> None:
    from tests.interpreters.cli.cli_helpers import run_cli

    path = damaged(tmp_path, recorded, "phase without a type tag")
    for command in ("show", "replay", "state", "html"):
        args = [a.format(file=path, dir=tmp_path) for a in CLI[command]]
        proc = run_cli(*args)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith(f"agentcore: {path} is not a usable transcript: line 1: the header's "
                                      "initial_state does not decode: $.phase is "), proc.stderr


@pytest.mark.parametrize(("name", "message"), [
    ("phase without a type tag", "$.phase is a FrozenDict (an object with no type tag), not one of Idle, "
     "AwaitingSteering, AwaitingFollowUps, AwaitingNextTurn, AwaitingTransform, AwaitingConvert, Streaming, "
     "RunningTools, AwaitingStopDecision, Suspended, Finished"),
    ("phase tagged as another record", "$.phase is a Usage, not one of Idle, AwaitingSteering, AwaitingFollowUps, "
     "AwaitingNextTurn, AwaitingTransform, AwaitingConvert, Streaming, RunningTools, AwaitingStopDecision, "
     "Suspended, Finished"),
    ("phase id a string", "$.phase.id is a str ('1'), not an int"),
    ("turns a string", "$.run.turns is a str ('x'), not an int"),
    ("turns a float", "$.run.turns is a float (1.5), not an int"),
    ("cost_usd a string", "$.run.cost_usd is a str ('0'), not a number"),
    ("a message without a type tag", "$.run.messages[0] is a FrozenDict (an object with no type tag), not a message "
     "(a record with a role: UserMessage, AssistantMessage, ToolResultMessage, ...)"),
    ("messages a string", "$.run.messages is a str ('oops'), not a list"),
    ("a message with an untagged block", "$.run.messages[1].content[0] is a FrozenDict (an object with no type "
     "tag), not a TextContent, a ThinkingContent or a ToolCall"),
    ("tools a number", "$.run.tools is an int (5), not a list of ToolSpecs"),
    ("a tool tagged as a model", "$.run.tools[0] is a Model, not a ToolSpec"),
    ("model without a type tag", "$.run.model is a FrozenDict (an object with no type tag), not a Model"),
    ("thinking level unknown", "$.run.thinking_level is a str ('ultra'), not one of 'off', 'minimal', 'low', "
     "'medium', 'high', 'xhigh'"),
])
def test_the_error_says_exactly_what_is_wrong(tmp_path: Path, recorded: list[str], name: str, message: str) -> None:
    path = damaged(tmp_path, recorded, name)
    with pytest.raises(TranscriptError) as info:
        replay_llm(path, CONFIG, [add])
    assert str(info.value) == f"{path}: line 1: the header's initial_state does not decode: {message}"
    assert info.value.problem == f"line 1: the header's initial_state does not decode: {message}"


def test_what_a_recorder_writes_of_unusual_numbers_is_not_damage(tmp_path: Path) -> None:
    """A history with a timestamp from a clock that does not give whole milliseconds, and a cost
    that was not a finite number (the recorder writes it as null), reads and replays."""
    odd = replace(HISTORY[1], usage=Usage(cost=Cost(total=float("nan"))), timestamp=2.5)
    context = AgentContext("Be exact.", [replace(HISTORY[0], timestamp=0.5), odd], [add])
    path = tmp_path / "odd.jsonl"
    SYNC.record(path, "Sum 1 and 2", context, CONFIG, replies())
    header = json.loads(path.read_text().splitlines()[0])
    messages = header["initial_state"]["run"]["messages"]
    assert messages[0]["timestamp"] == 0.5 and messages[1]["usage"]["cost"]["total"] is None
    assert replay(path).finished
    assert replay_llm(path, CONFIG, [add]).finished
