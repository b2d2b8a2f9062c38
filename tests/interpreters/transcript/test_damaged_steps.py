"""A damaged step line is a TranscriptError that names the file, the line and what is damaged, on
every reader path, never an AttributeError from deep inside a replay.

The transcript of tests/support/rich_run.py has a line of every kind. Each kind of step line is damaged
in each way a byte or an edit damages JSON that still parses: a record that lost its type tag
(a plain object where the record belongs), a tag that names another record, a record replaced
by a string or a list, a number that became a string, a string that became a number; in effects
too (and their history deltas), in runs of deltas and in resume markers. Every reader then
raises a ``TranscriptError`` naming the file and the damaged line, or a ``ReplayDivergence``
(what was damaged is read as what it now says, and replays otherwise), or reads and replays.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import io
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from interpreters import resume
from interpreters.cli.command import main
from interpreters.replay import ReplayDivergence, areplay_llm, llm_request_at, replay, replay_llm, state_at
from interpreters.replay.recovery import continue_transcript
from interpreters.transcript import TranscriptError, read_transcript
from tests.support import rich_run

Damage = tuple[str, int, bytes]
"""(what was damaged, the damaged line's number, the damaged file)."""


def _line(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) in a JSON value, depth first."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _nodes(v, (*path, i))


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(obj)
    here = out
    for key in path[:-1]:
        here = here[key]
    if value is _DROP:
        del here[path[-1]]
    else:
        here[path[-1]] = value
    return out


_DROP = object()


def _value_damages(obj: Any, root: tuple[Any, ...]) -> Iterator[tuple[str, Any]]:
    """Damaged copies of the line ``obj``, in the part of it at ``root``."""
    part = obj
    for key in root:
        part = part[key]
    for path, value in _nodes(part, root):
        where = ".".join(map(str, path))
        if isinstance(value, dict) and isinstance(value.get("type"), str) and path != root:
            yield f"{where} lost its type tag", _set(obj, (*path, "type"), _DROP)
            yield f"{where} tagged turn_start", _set(obj, (*path, "type"), "turn_start")
            yield f"{where} is a string", _set(obj, path, "x")
            yield f"{where} is a list", _set(obj, path, [])
            first = next((k for k in value if k != "type"), None)
            if first is not None:
                yield f"{where} lost its {first}", _set(obj, (*path, first), _DROP)
        elif value is None and path and path[-1] == "usage":
            yield f"{where} is a string", _set(obj, path, "x")
        elif type(value) is int and path and isinstance(path[-1], str):
            yield f"{where} is a string", _set(obj, path, str(value))
        elif type(value) is str and path and path[-1] in ("id", "tool_call_id", "name", "text", "delta", "thinking",
                                                          "reason", "error", "stop_reason"):
            yield f"{where} is a number", _set(obj, path, 7)


def _kind(obj: dict[str, Any]) -> str:
    if "deltas" in obj:
        return "deltas"
    inp = obj.get("input") or {}
    event = inp.get("event") if isinstance(inp.get("event"), dict) else {}
    return f"{inp.get('type')}/{event.get('type', '')}"


DELTAS_DAMAGES: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("id a string", lambda d: d["deltas"].update(id="1")),
    ("content_index negative", lambda d: d["deltas"].update(content_index=-1)),
    ("content_index past the blocks", lambda d: d["deltas"].update(content_index=9)),
    ("text not a list", lambda d: d["deltas"].update(text="abc")),
    ("text holds a number", lambda d: d["deltas"].update(text=[1] * len(d["deltas"]["text"]))),
    ("at a string", lambda d: d["deltas"].update(at="x")),
    ("at one too few", lambda d: d["deltas"].update(at=[1] * (len(d["deltas"]["text"]) - 1))),
    ("last off by one", lambda d: d.update(last=d["last"] + 1)),
    ("type unknown", lambda d: d["deltas"].update(type="text_end")),
    ("type of another block", lambda d: d["deltas"].update(type="thinking_delta")),
    ("digest a number", lambda d: d["deltas"].update(digest=5)),
    ("deltas a list", lambda d: d.update(deltas=[])),
    ("no id", lambda d: d["deltas"].pop("id")),
]
MARKERS: list[tuple[str, Any]] = [
    ("resumed_from_step a string", {"resumed_from_step": "x", "at": 1}),
    ("resumed_from_step past the steps", {"resumed_from_step": 9999, "at": 1}),
    ("resumed_from_step negative", {"resumed_from_step": -1, "at": 1}),
    ("a step number that is a string", {"step": "x", "input": {}, "effects": []}),
    ("a step without an input", {"step": 0, "effects": []}),
]


def damages(data: bytes) -> list[Damage]:
    """Each way of damaging each kind of line of the transcript ``data``."""
    lines = data.split(b"\n")[:-1]
    out: list[Damage] = []
    seen: set[str] = set()

    def add(name: str, number: int, obj: Any) -> None:
        out.append((f"line {number}: {name}", number,
                    b"\n".join([*lines[:number - 1], _line(obj), *lines[number:]]) + b"\n"))

    for number, raw in enumerate(lines[1:], 2):
        obj = json.loads(raw)
        if "resumed_suspension" in obj:
            for name, value in (("a string", "x"), ("past the steps", 9999), ("a list", [])):
                add(f"resumed_suspension {name}", number, {**obj, "resumed_suspension": value})
            continue
        kind = _kind(obj)
        if kind in seen:
            continue
        seen.add(kind)
        if kind == "deltas":
            for name, change in DELTAS_DAMAGES:
                damaged = copy.deepcopy(obj)
                change(damaged)
                add(f"deltas {name}", number, damaged)
            continue
        for name, damaged in _value_damages(obj, ("input",)):
            add(f"{kind}: {name}", number, damaged)
        for i, effect in enumerate(obj["effects"]):
            add(f"{kind}: effects.{i} lost its type tag", number, _set(obj, ("effects", i, "type"), _DROP))
            add(f"{kind}: effects.{i} is a string", number, _set(obj, ("effects", i), "x"))
            for key, value in effect.items():
                if key != "type":
                    add(f"{kind}: effects.{i} lost its {key}", number, _set(obj, ("effects", i, key), _DROP))
                if type(value) is int:
                    add(f"{kind}: effects.{i}.{key} is a string", number, _set(obj, ("effects", i, key), str(value)))
            for path, value in _nodes(effect, ("effects", i)):
                if isinstance(value, dict) and "$seq" in value:
                    where = ".".join(map(str, path))
                    add(f"{kind}: {where}.keep past the history", number, _set(obj, (*path, "keep"), 9999))
                    add(f"{kind}: {where}.add a string", number, _set(obj, (*path, "add"), "x"))
                    add(f"{kind}: {where}.$seq another history", number, _set(obj, (*path, "$seq"), "other"))
                elif (isinstance(value, dict) and isinstance(value.get("type"), str) and len(path) == 3
                      and effect.get("type") != "emit"):
                    where = ".".join(map(str, path))
                    add(f"{kind}: {where} lost its type tag", number, _set(obj, (*path, "type"), _DROP))
        add(f"{kind}: input a list", number, {**obj, "input": []})
        add(f"{kind}: effects an object", number, {**obj, "effects": {}})
    for name, marker in MARKERS:
        out.append((f"line 6: {name}", 6, b"\n".join([*lines[:5], _line(marker), *lines[5:]]) + b"\n"))
    return out


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    """The rich transcript, and the transcript as it was when the run suspended."""
    path = rich_run.record(tmp_path_factory.mktemp("rich") / "rich.jsonl")
    return path.read_bytes(), rich_run.SUSPENDED[1]


def _read(path: Path) -> None:
    t = read_transcript(path)
    _ = t.initial_state
    for entry in t:
        _ = entry.effects, entry.effects_text


def _cli(command: str) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["transcript", command, str(path)])
        text = err.getvalue()
        if "(run with --debug" in text or code not in (0, 1, 2):
            raise AssertionError(f"agentcore transcript {command} exited {code}: {text}")
        usable = f"agentcore: {path} is not a usable transcript: line "
        if code == 2 and text.startswith(usable):
            raise TranscriptError(text, path=path, line=int(text[len(usable):].split(":", 1)[0]))
        if code == 2:
            raise AssertionError(f"agentcore transcript {command} exited {code}: {text}")
    return run


def _resume(path: Path) -> None:
    stream = resume(path, rich_run.config(), rich_run.tools())
    for _ in stream:
        pass


READERS: dict[str, Callable[[Path], Any]] = {
    "read": _read,
    "strict replay": replay,
    "state_at": lambda path: state_at(path, read_transcript(path).steps),
    "llm_request_at": lambda path: llm_request_at(path, read_transcript(path).steps),
    "crash resume": _resume,
    "llm-only replay (sync)": lambda path: replay_llm(path, rich_run.config(), rich_run.tools()),
    "llm-only replay (asyncio)": lambda path: asyncio.run(areplay_llm(path, rich_run.config(), rich_run.tools())),
    "agentcore transcript show": _cli("show"),
    "agentcore transcript replay": _cli("replay"),
}


def _outcome(reader: Callable[[Path], Any], path: Path, line: int) -> str | None:
    """What is wrong with what ``reader`` did with the damaged ``path`` (``None``: nothing)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            reader(path)
    except TranscriptError as exc:
        if exc.path is None or Path(exc.path) != path:
            return f"TranscriptError without the file: {exc}"
        if exc.line != line:
            return f"TranscriptError names line {exc.line}, not {line}: {exc}"
    except ReplayDivergence:
        pass
    except Exception as exc:  # noqa: BLE001 - what the test reports
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    return None


@pytest.mark.parametrize("reader", list(READERS))
def test_every_damaged_kind_of_line_is_a_transcript_error_or_a_divergence(
        rich: tuple[bytes, bytes], tmp_path: Path, reader: str) -> None:
    wrong: list[str] = []
    path = tmp_path / "damaged.jsonl"
    table = damages(rich[0])
    assert len(table) > 300
    for name, line, data in table:
        path.write_bytes(data)
        problem = _outcome(READERS[reader], path, line)
        if problem is not None:
            wrong.append(f"{name}: {problem}")
    assert not wrong, f"{len(wrong)} of {len(table)} damaged transcripts:\n" + "\n".join(wrong[:40])


def test_a_suspension_resumed_into_a_damaged_transcript_is_refused_with_the_line(
        rich: tuple[bytes, bytes], tmp_path: Path) -> None:
    suspension = rich_run.SUSPENDED[0]
    wrong: list[str] = []
    path = tmp_path / "suspended.jsonl"
    for name, line, data in damages(rich[1]):
        path.write_bytes(data)

        def go(path: Path) -> None:
            continue_transcript(path, suspension, rich_run.config()).close()

        problem = _outcome(go, path, line)
        if problem is not None:
            wrong.append(f"{name}: {problem}")
    assert not wrong, f"{len(wrong)} damaged transcripts:\n" + "\n".join(wrong[:40])


EXACT = {
    "stream_event_received/text_end: input.event.content lost its type tag":
        "cannot decode the input: Stream protocol error: the text_end event's content was a FrozenDict "
        "(FrozenDict({'text': 'Probing now.', 'text_signature': None})); expected a TextContent",
    "stream_event_received/toolcall_end: input.event.tool_call is a list":
        "cannot decode the input: Stream protocol error: the toolcall_end event's tool_call was a tuple (()); "
        "expected a ToolCall",
    "stream_event_received/done: input.event.message.usage is a string":
        "cannot decode the input: input.event.message.usage is a str ('x'), not a Usage",
    "tool_finished/: input.result is a string":
        "cannot decode the input: input.result is a str ('x'), not an AgentToolResult",
    "steering_polled/: input.at is a string": "cannot decode the input: input.at is a str ('2002'), not an int",
    "context_converted/: effects.0.messages.$seq another history":
        "damaged history delta: call_llm.messages is a delta of the 'other' history, not of 'llm'",
    "context_converted/: effects.0 lost its tools":
        "damaged history delta: call_llm.tools is missing, not a history",
    "deltas content_index past the blocks": "cannot decode the input: content_index 9 names no block of the reply",
    "resumed/: input.decisions.0.1 tagged turn_start":
        "cannot decode the input: input.decisions[0][1] is a TurnStartEvent, not an Approve, a Deny or a ToolOutput",
}


@pytest.mark.parametrize("what", list(EXACT))
def test_the_error_names_the_file_the_line_and_what_is_damaged(rich: tuple[bytes, bytes], tmp_path: Path,
                                                                what: str) -> None:
    [(name, line, data)] = [d for d in damages(rich[0]) if d[0].endswith(": " + what)]
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(data)
    for reader in ("strict replay", "llm-only replay (sync)", "crash resume"):
        with pytest.raises(TranscriptError) as info:
            READERS[reader](path)
        assert (info.value.path, info.value.line) == (path, line)
        assert info.value.problem == f"line {line}: {EXACT[what]}"
        assert str(info.value) == f"{path}: line {line}: {EXACT[what]}"


def test_an_input_the_core_cannot_take_is_named_with_its_file_and_line(rich: tuple[bytes, bytes],
                                                                       tmp_path: Path) -> None:
    """``step_recorded``, given an entry whose input is damaged where the reader does not look,
    names the file and the line as the reader does."""
    from dataclasses import replace as replaced

    from agentcore import StreamEventReceived, TextEndEvent
    from agentcore.frozen import FrozenDict
    from interpreters.replay import step_recorded

    path = tmp_path / "rich.jsonl"
    path.write_bytes(rich[0])
    t = read_transcript(path)
    index, entry = next((i, e) for i, e in enumerate(t.entries) if isinstance(getattr(e.input, "event", None),
                                                                           TextEndEvent))
    state = state_at(t, index)
    event = entry.input.event
    damaged = replaced(entry, input=StreamEventReceived(entry.input.id, TextEndEvent(
        event.content_index, FrozenDict({"text": "x"}), event.partial), entry.input.at))  # type: ignore[arg-type]
    with pytest.raises(TranscriptError) as info:
        step_recorded(state, damaged)
    assert (info.value.path, info.value.line) == (path, entry.line)
    assert str(info.value) == (f"{path}: line {entry.line}: the input of step {entry.step} is damaged (Stream protocol "
                               "error: the text_end event's content was a FrozenDict (FrozenDict({'text': 'x'})); "
                               "expected a TextContent)")
