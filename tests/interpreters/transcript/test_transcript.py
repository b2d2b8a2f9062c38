"""Transcript format v2: recorder, reader, secrets."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

import agentcore
from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AgentToolResult,
    Model,
    TextContent,
    ThinkingContent,
)
from agentcore.codec import to_json
from agentcore.inputs import StreamEventReceived
from agentcore.state import initial_state
from agentcore.stream import StartEvent
from interpreters import Journal, ScriptedModel, agent_loop, run_agent_loop, tool
from interpreters.replay import replay
from interpreters.streams.scripted import Reply, ScriptedCall, tool_call
from interpreters.transcript import (
    TranscriptError,
    TranscriptRecorder,
    encode_input,
    read_transcript,
    record_to,
)
from tests.support.clocks import StoppedClock, TickingClock
from tests.support.flavours import ASYNCIO, SYNC
from tests.support.sample_tools import add_text

SECRET = "sk-ant-api03-" + "Q" * 40


clock = StoppedClock(7)


def record_sum(path: Path, replies: list[Any], **config: Any) -> list[Any]:
    """The question "1 + 2?" for the add tool, ``replies`` scripted, recorded: the messages."""
    ctx = AgentContext("Be exact.", [], [add_text])
    cfg = AgentLoopConfig(model=Model(id="m1"), **config)
    return SYNC.record(path, "1 + 2?", ctx, cfg, ScriptedModel(replies), clock=clock)[1]


def run_digest(kind: str, index: int, deltas: list[str]) -> str:
    """The digest docs/transcript-format.md gives for a run of deltas, computed here from that text."""
    text = json.dumps([kind, index, deltas], ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_header_and_step_lines(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, [tool_call("add", {"a": 1, "b": 2}), "It is 3."])
    header, *steps = lines(path)
    assert set(header) == {"transcript", "version", "library_version", "created_at", "model", "system_prompt",
                           "tools", "hooks", "interpreter", "options", "initial_state"}
    assert header["transcript"] == "agentcore-fx" and header["version"] == 6
    assert header["library_version"] == agentcore.__version__ and header["interpreter"] == "sync"
    assert header["model"]["id"] == "m1" and header["system_prompt"] == "Be exact."
    assert [t["name"] for t in header["tools"]] == ["add"] and header["hooks"] == []
    assert header["initial_state"]["type"] == "LoopState" and isinstance(header["created_at"], int)
    covered = [n for s in steps for n in range(s["step"], s.get("last", s["step"]) + 1)]
    assert covered == list(range(1, len(covered) + 1))
    assert all(set(s) in ({"step", "input", "effects"}, {"step", "last", "deltas"}) for s in steps)
    assert steps[0]["input"]["type"] == "started"
    assert [e["type"] for e in steps[0]["effects"]] == ["emit"] * 4 + ["call_llm"]
    assert steps[-1]["effects"][-2:] == [steps[-1]["effects"][-2], {"type": "run_ended",
                                                                   "messages": steps[-1]["effects"][-1]["messages"]}]
    assert path.read_bytes().endswith(b"\n")


def test_stream_inputs_have_no_partials_and_updates_are_compact(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, ["x" * 400])
    runs = [s for s in lines(path)[1:] if "deltas" in s]
    digest = run_digest("text_delta", 0, ["x" * 8] * 50)
    assert runs == [{"step": 4, "last": 53, "deltas": {"id": 1, "type": "text_delta", "content_index": 0,
                                                       "text": ["x" * 8] * 50, "at": 7, "digest": digest}}]
    # Read back, a run is one step per delta, exactly as if each had its own line.
    deltas = [e for e in read_transcript(path) if e.input_json.get("event", {}).get("type") == "text_delta"]
    assert [e.step for e in deltas] == list(range(4, 54)) and {e.line for e in deltas} == {5}
    assert deltas[3].input_json == {"type": "stream_event_received", "id": 1,
                                    "event": {"type": "text_delta", "content_index": 0, "delta": "x" * 8}, "at": 7}
    assert deltas[3].effects_json == [{"type": "emit", "event": {"type": "message_update"}}]
    assert json.loads(deltas[3].text) == {"step": 7, "input": deltas[3].input_json, "effects": deltas[3].effects_json}
    # The run's digest is on its last step: it covers the updates of the whole run.
    assert deltas[-1].effects_json == [{"type": "emit", "event": {"type": "message_update", "digest": digest}}]
    assert json.loads(deltas[-1].text)["effects"] == deltas[-1].effects_json
    assert deltas[3].input.event.partial.to_message().content[0].text == "x" * 32


def test_a_lone_delta_has_a_step_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, ["short"])
    (delta,) = [s for s in lines(path)[1:] if s.get("input", {}).get("event", {}).get("type") == "text_delta"]
    assert delta == {"step": 4, "input": {"type": "stream_event_received", "id": 1, "event": {
        "type": "text_delta", "content_index": 0, "delta": "short"}, "at": 7},
        "effects": [{"type": "emit", "event": {"type": "message_update",
                                               "digest": run_digest("text_delta", 0, ["short"])}}]}


def test_a_run_of_deltas_keeps_each_time_and_ends_with_its_block(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx = AgentContext("Be exact.", [], [add_text])
    cfg = AgentLoopConfig(model=Model(id="m1"))
    SYNC.record(path, "1 + 2?", ctx, cfg, ScriptedModel([Reply(text="abcdefghij", thinking="hmmhmm")], chunk_size=4),
                clock=TickingClock(1000))
    runs = [s["deltas"] for s in lines(path)[1:] if "deltas" in s]
    assert [(r["type"], r["text"]) for r in runs] == [("thinking_delta", ["hmmh", "mm"]),
                                                       ("text_delta", ["abcd", "efgh", "ij"])]
    assert all(isinstance(r["at"], list) and r["at"] == sorted(r["at"]) for r in runs)
    assert replay(path).finished


def test_a_run_is_one_line_however_slowly_it_streams_and_a_secret_split_over_it_is_redacted(
        tmp_path: Path) -> None:
    secret = "tok-" + "Z7" * 14  # not key-shaped: only known as a secret of the run
    path = tmp_path / "run.jsonl"
    ctx = AgentContext()
    cfg = AgentLoopConfig(model=Model(id="m1"))
    _, messages = SYNC.record(path, "go", ctx, cfg, ScriptedModel([f"my key is {secret}, keep it"], chunk_size=3),
                              secrets=[secret], clock=TickingClock(0, 700))
    (run,) = [s["deltas"] for s in lines(path)[1:] if "deltas" in s]
    assert run["text"][0] == "my key is [REDACTED], keep it" and set(run["text"][1:]) == {""}
    assert run["at"] == sorted(run["at"]) and run["at"][-1] - run["at"][0] > 5_000
    text = path.read_text()
    assert not any(secret[i:i + 6] in text for i in range(len(secret) - 5))
    assert messages[-1].text == f"my key is {secret}, keep it"  # the run itself is not changed
    assert replay(path).messages[-1].text == "my key is [REDACTED], keep it"


def damaged_run(tmp_path: Path, change: Any) -> str:
    """The error reading a recording whose one ``deltas`` line went through ``change`` (a dict
    merged into its ``deltas``, or a function of the line's text)."""
    path = tmp_path / "run.jsonl"
    record_sum(path, ["x" * 40])
    text = path.read_text().splitlines()
    index = next(i for i, line in enumerate(text) if '"deltas"' in line)
    if isinstance(change, dict):
        obj = json.loads(text[index])
        obj["deltas"].update(change)
        text[index] = json.dumps(obj)
    else:
        text[index] = change(text[index])
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TranscriptError) as info:
        read_transcript(path)
    prefix = f"{path}: line {index + 1}: "
    assert str(info.value).startswith(prefix)
    return str(info.value)[len(prefix):]


@pytest.mark.parametrize("damage", [
    ({"text": []}, "id and content_index must be integers (content_index >= 0) and text a list of strings"),
    ({"text": ["a", 1]}, "id and content_index must be integers (content_index >= 0) and text a list of strings"),
    ({"content_index": -1}, "id and content_index must be integers (content_index >= 0) and text a list of strings"),
    ({"type": "image_delta"}, "unknown delta type 'image_delta'"),
    ({"at": [1]}, "at must be an integer or one integer per delta"),
    ({"at": 1.5}, "at must be an integer or one integer per delta"),
    ({"id": None}, "id and content_index must be integers (content_index >= 0) and text a list of strings"),
])
def test_a_damaged_deltas_line_is_named(tmp_path: Path, damage: tuple[dict[str, Any], str]) -> None:
    assert damaged_run(tmp_path, damage[0]) == f"damaged deltas line ({damage[1]})"


def test_a_deltas_line_for_a_block_the_reply_does_not_have_is_named(tmp_path: Path) -> None:
    problem = damaged_run(tmp_path, lambda line: line.replace('"content_index":0', '"content_index":3'))
    assert problem == "cannot decode the input: content_index 3 names no block of the reply"


def test_a_deltas_line_whose_last_step_does_not_add_up_is_named(tmp_path: Path) -> None:
    problem = damaged_run(tmp_path, lambda line: line.replace('"last":8', '"last":9'))
    assert problem == "damaged deltas line (last is 9 but 5 deltas from step 4 end at step 8)"


def test_version_1_files_are_still_read(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    messages = record_sum(path, ["x" * 24])
    t = read_transcript(path)
    header, *steps = path.read_text().splitlines()
    v1 = json.loads(header)
    v1["version"] = 1
    old = tmp_path / "v1.jsonl"
    old.write_text("\n".join([json.dumps(v1)] + [re.sub(r',"digest":"[0-9a-f]+"', "", e.text) for e in t]) + "\n")
    back = read_transcript(old)
    assert back.version == 1 and [e.input for e in back] == [e.input for e in t]
    assert [e.effects for e in back] == [e.effects for e in t] and replay(old).messages == messages


def test_fast_path_matches_the_codec(tmp_path: Path) -> None:
    t = tmp_path / "run.jsonl"
    record_sum(t, [Reply(text="hi there", thinking="hmm", tool_calls=[ScriptedCall("add", {"a": 1, "b": 2})]), "ok"])
    for entry in read_transcript(t):
        if isinstance(entry.input, StreamEventReceived):
            mine, codec = encode_input(entry.input), to_json(entry.input, partials=False)
            if entry.input.event.type == "toolcall_start":
                assert (mine["event"]["id"], mine["event"]["name"]) == ("call_1", "add")
            assert mine == codec
            assert entry.input.event == entry.input.event  # decoded with its partial rebuilt


def test_a_redacted_thinking_block_stays_redacted_through_the_recording(tmp_path: Path) -> None:
    from agentcore.stream import PartialAssistantMessage, ThinkingStartEvent

    def stream(model: Any, context: Any, options: Any) -> list[Any]:
        p = PartialAssistantMessage.begin(model="m1")
        opened = p.thinking_start(redacted=True)
        streamed = opened.partial.thinking_delta(0, "opaque")
        closed = streamed.partial.thinking_end(0, "sig")
        text = closed.partial.text_start()
        said = text.partial.text_delta(1, "hi")
        done = said.partial.text_end(1)
        return [StartEvent(p), opened, streamed, closed, text, said, done, done.partial.done("stop")]

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext("Be exact.", [], [add_text]), AgentLoopConfig(model=Model(id="m1"))
    _, messages = SYNC.record(path, "hi", ctx, cfg, stream, clock=clock)
    starts = [e.input.event for e in read_transcript(path)
              if isinstance(e.input, StreamEventReceived) and isinstance(e.input.event, ThinkingStartEvent)]
    assert len(starts) == 1 and starts[0].redacted and starts[0].partial.blocks[0].redacted
    for entry in read_transcript(path):
        if isinstance(entry.input, StreamEventReceived):
            assert encode_input(entry.input) == to_json(entry.input, partials=False)
    assert messages[-1].content[0] == ThinkingContent("opaque", "sig", True)
    assert replay(path).messages == messages


def test_size_is_linear_in_the_reply_and_the_history(tmp_path: Path) -> None:
    small, big = tmp_path / "s.jsonl", tmp_path / "b.jsonl"
    record_sum(small, [Reply(text="y" * 8_000, thinking="z" * 8_000)])
    record_sum(big, [Reply(text="y" * 16_000, thinking="z" * 16_000)])
    s, b = small.stat().st_size, big.stat().st_size
    assert 1.8 < b / s < 2.2
    many = [tool_call("add", {"a": i, "b": 1}) for i in range(40)] + ["done"]
    ten, forty = tmp_path / "10.jsonl", tmp_path / "40.jsonl"
    record_sum(ten, [tool_call("add", {"a": i, "b": 1}) for i in range(10)] + ["done"])
    record_sum(forty, many)
    assert forty.stat().st_size / ten.stat().st_size < 4.6
    calls = [e for s in lines(forty)[1:] for e in s.get("effects", []) if e["type"] == "call_llm"]
    assert [c["messages"]["keep"] for c in calls[:4]] == [0, 1, 3, 5]
    assert all(len(c["messages"]["add"]) == 2 for c in calls[1:])


def test_a_hook_that_rebuilds_equal_messages_keeps_the_history_delta_small(tmp_path: Path) -> None:
    from agentcore import replace

    def rebuild(messages: Any) -> list[Any]:
        return [replace(m) for m in messages]  # equal messages, new objects

    path = tmp_path / "run.jsonl"
    record_sum(path, [tool_call("add", {"a": i, "b": 1}) for i in range(4)] + ["done"], convert_to_llm=rebuild)
    calls = [e for s in lines(path)[1:] for e in s.get("effects", []) if e["type"] == "call_llm"]
    assert [(c["messages"]["keep"], len(c["messages"]["add"])) for c in calls] == [
        (0, 1), (1, 2), (3, 2), (5, 2), (7, 2)]
    assert replay(path).finished


def test_reader_decodes_inputs_with_partials_and_effects(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    messages = record_sum(path, [tool_call("add", {"a": 1, "b": 2}), "It is 3."])
    t = read_transcript(path)
    assert t.version == 6 and not t.torn and t.steps == lines(path)[-1]["step"]
    ctx = AgentContext("Be exact.", [], [add_text])
    assert t.initial_state == initial_state(ctx, AgentLoopConfig(model=Model(id="m1")))
    last_delta = [e.input for e in t if isinstance(e.input, StreamEventReceived)][-2]
    assert last_delta.event.partial.to_message().content[0].text == "It is 3."
    end = t.entries[-1].effects[-1]
    assert end.type == "run_ended" and list(end.messages) == messages
    calls = [e for entry in t for e in entry.effects if e.type == "call_llm"]
    assert [len(c.messages) for c in calls] == [1, 3]


def test_torn_last_line_is_ignored_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, ["hello"])
    whole = path.read_bytes()
    n = len(whole.splitlines())
    path.write_bytes(whole + b'{"step": 99, "inp')
    with pytest.warns(RuntimeWarning, match=f"line {n + 1} is torn"):
        t = read_transcript(path)
    assert t.torn and t.steps == n - 1 and t.size == len(whole)
    assert replay(t).finished


@pytest.mark.parametrize(("content", "message"), [
    (b"", "line 1: empty file"),
    (b"hello\n", "line 1: not an agentcore-fx transcript"),
    (b'{"some": "json"}\n', "line 1: not an agentcore-fx transcript"),
    (b'{"transcript": "agentcore-fx", "version": 7, "initial_state": {}}\n',
     "line 1: unsupported transcript version 7 (this reader reads versions 1 to 6)"),
    (b'{"transcript": "agentcore-fx", "version": true, "initial_state": {}}\n',
     "line 1: unsupported transcript version True (this reader reads versions 1 to 6)"),
])
def test_not_a_transcript(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_transcript(path)


def test_damaged_middle_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, ["hello"])
    text = path.read_text().splitlines()
    text[3] = text[3][: len(text[3]) // 2]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TranscriptError, match="^" + re.escape(f"{path}: line 4: damaged line (not JSON")):
        read_transcript(path)
    text[3] = json.dumps({"step": 9, "input": {"type": "continued", "at": 0}, "effects": []})
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TranscriptError,
                       match="^" + re.escape(f"{path}: line 4: step 9 out of order (expected step 3)")):
        read_transcript(path)
    text[3] = json.dumps({"step": 3, "input": {"type": "no_such_input"}, "effects": []})
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TranscriptError,
                       match="^" + re.escape(f"{path}: line 4: cannot decode the input: "
                                             "unknown type tag 'no_such_input'")):
        read_transcript(path)


def test_unknown_line_kinds_and_fields_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, ["hello"])
    text = path.read_text().splitlines()
    header = json.loads(text[0])
    header["new_optional_field"] = {"x": 1}
    text[0] = json.dumps(header)
    text.insert(2, json.dumps({"note": "a future kind of line"}))
    path.write_text("\n".join(text) + "\n")
    assert replay(path).finished


def test_secrets_are_never_written(tmp_path: Path) -> None:
    seen: list[Any] = []

    @tool
    def leaky(x: int) -> str:
        """Fails with the key in its error."""
        raise RuntimeError(f"auth failed with key {SECRET}")

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen.append(options.api_key)
        if options.on_payload is not None:
            options.on_payload({"api_key": options.api_key, "headers": dict(options.headers)})
        return scripted(model, context, options)

    scripted = ScriptedModel([tool_call("leaky", {"x": 1}), f"I saw {SECRET} in the error"])
    path = tmp_path / "run.jsonl"
    ctx = AgentContext("sys", [], [leaky])
    cfg = AgentLoopConfig(model=Model(id="m", headers={"x-api-key": "custom-header-secret-1"}),  # type: ignore[arg-type]
                          api_key=SECRET, get_api_key=lambda provider: SECRET,
                          headers={"Authorization": f"Bearer {SECRET}", "x-trace": "visible"},
                          on_payload=lambda payload: seen.append(payload))
    messages = run_agent_loop("go", ctx, cfg, emit=lambda e: None, stream_fn=stream_fn,
                              journal=record_to(path, ctx, cfg))
    assert seen[0] == SECRET and "auth failed with key" in messages[2].content[0].text
    text = path.read_text()
    assert SECRET not in text and SECRET[:30] not in text and "custom-header-secret-1" not in text
    assert "auth failed with key [REDACTED]" in text
    assert replay(path).finished  # the scrubbed transcript is consistent with itself


def test_flush_turn_holds_lines_until_the_turn_ends(tmp_path: Path) -> None:
    sizes: dict[str, int] = {}
    for mode in ("entry", "turn"):
        path = tmp_path / f"{mode}.jsonl"

        @tool
        def peek(x: int) -> str:
            """Count transcript lines while running."""
            sizes[mode] = len(path.read_text().splitlines())
            return "ok"

        ctx = AgentContext("", [], [peek])
        cfg = AgentLoopConfig(model=Model(id="m"))
        run_agent_loop("go", ctx, cfg, emit=lambda e: None,
                       stream_fn=ScriptedModel([tool_call("peek", {"x": 1}), "ok"]),
                       journal=TranscriptRecorder(path, ctx, cfg, flush=mode, fsync=True))
        assert replay(path).finished
    assert sizes["turn"] == 1 and sizes["entry"] > 5


def test_asyncio_recording_replays_to_the_same_events(tmp_path: Path) -> None:
    path = tmp_path / "aio.jsonl"
    ctx = AgentContext("", [], [add_text])
    cfg = AgentLoopConfig(model=Model(id="m"))

    events, messages = ASYNCIO.record(path, "1+2", ctx, cfg, ScriptedModel([tool_call("add", {"a": 1, "b": 2}), "3"]))
    assert json.loads(path.read_text().splitlines()[0])["interpreter"] == "asyncio"
    result = replay(path)
    assert result.events == events and result.messages == messages


def test_recorder_needs_context_and_config(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="needs the run's context and config"):
        TranscriptRecorder(tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="flush must be"):
        TranscriptRecorder(tmp_path / "x.jsonl", AgentContext(), AgentLoopConfig(model=Model(id="m")),
                           flush="never")  # type: ignore[arg-type]


def test_sync_events_replay_exactly(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx = AgentContext("", [], [add_text])
    cfg = AgentLoopConfig(model=Model(id="m"))
    stream = agent_loop("1+2", ctx, cfg, stream_fn=ScriptedModel([
        Reply(thinking="let me add",
              tool_calls=[ScriptedCall("add", {"a": 1, "b": 2}), ScriptedCall("add", {"a": 2, "b": 2})]),
        "3 and 4"]), journal=TranscriptRecorder(path, ctx, cfg))
    events = list(stream)
    result = replay(path)
    assert result.events == events and result.messages == stream.result()
    assert result.state == stream.state


def test_recorded_effects_expand_to_the_codec_json(tmp_path: Path) -> None:
    from agentcore import step as core_step
    from interpreters.transcript import expand, is_update, update_digest

    path = tmp_path / "run.jsonl"
    ctx = AgentContext("", [], [add_text])
    cfg = AgentLoopConfig(model=Model(id="m"), before_tool_call=lambda c, s: None,
                          should_stop_after_turn=lambda c: False)
    SYNC.record(path, "1+2", ctx, cfg, ScriptedModel([tool_call("add", {"a": 1, "b": 2}), "3"]), clock=clock)
    t = read_transcript(path)
    state = t.initial_state
    digested = 0
    for entry in t:
        state, effects_now = core_step(state, entry.input).unwrap()
        for recorded, actual in zip(entry.effects_json, effects_now, strict=True):
            if is_update(recorded):
                # Each update outside a run of deltas has its own digest (a run's is on its last step).
                if entry.input_json["event"]["type"] not in ("text_delta", "toolcall_delta"):
                    assert recorded["event"] == {"type": "message_update", "digest": update_digest([actual.event])}
                    digested += 1
                continue
            assert expand(recorded) == json.loads(json.dumps(to_json(actual, partials=False)))
    kinds = [e.input_json["event"]["type"] for e in t if e.input_json["type"] == "stream_event_received"]
    assert digested == sum(k not in ("start", "text_delta", "toolcall_delta", "done") for k in kinds) > 0
    assert replay(t).finished


# --------------------------------------------------------------------------- the fast encoders


def _records() -> list[Any]:
    from agentcore import (
        AssistantMessage,
        ImageContent,
        ThinkingContent,
        ToolCall,
        ToolResultMessage,
        UserMessage,
    )
    from agentcore.frozen import FrozenDict
    from agentcore.messages import Cost, Usage
    from agentcore.stream import PartialAssistantMessage

    odd = 'é ☃ "quoted" back\\slash \n\t\x00\x1f \u2028 emoji 😀'
    usage = Usage(3, 4, 1, 2, 10, Cost(0.1, 1e-07, 0.0, -0.0, 1e20))
    call = ToolCall("call_9", "add", {"a": 1, "b": [1.5, None, True, {"x": odd}]}, thought_signature="sig")
    return [
        UserMessage("hi", timestamp=3),
        UserMessage(odd),
        UserMessage((TextContent(odd, "s"), ImageContent("aGk=", "image/png")), timestamp=-1),
        TextContent(odd),
        ThinkingContent("hmm", "sig", True),
        call,
        ToolCall("c", "n", {}, invalid_json='{"a": '),
        AssistantMessage((ThinkingContent("t"), TextContent("x"), call), api="a", provider=odd, model="m",
                         usage=usage, stop_reason="toolUse", error_message="bad", response_id="r1", timestamp=9),
        AssistantMessage(),
        AssistantMessage(usage=Usage(1, 2, 3, 4, True)),  # a bool where an int goes
        AssistantMessage(usage=Usage(cost=Cost(float("nan"), float("inf")))),  # the codec's own spelling
        AssistantMessage(api=1),  # type: ignore[arg-type]  # not a str: the codec decides
        ToolResultMessage("call_9", "add", (TextContent("3"),), details=FrozenDict({"k": [1, odd]}), is_error=True,
                          usage=usage, added_tool_names=("b", "c"), timestamp=5),
        ToolResultMessage("c", "n", details=7),
        AgentToolResult((TextContent("ok"),), {"rows": [1, 2]}, usage, ("t",), True),
        AgentToolResult("plain"),
        usage,
        Cost(),
        PartialAssistantMessage.begin(api="a", provider="p", model="m", timestamp=4, usage=usage),
        PartialAssistantMessage.begin().text_start().partial.text_delta(0, odd).partial,
        Model(id="m1"),
    ]


@pytest.mark.parametrize("index", range(len(_records())))
def test_the_memo_s_text_is_the_codec_s(index: int) -> None:
    from interpreters.transcript import Memo

    value = _records()[index]
    memo = Memo()
    text = memo.raw(value)
    assert json.loads(bytes(text)) == to_json(value, partials=False)
    assert memo.raw(value) is text  # made once
    assert memo.history(value) is text and memo.history(value) is text


def test_hint_check_is_the_hint_list() -> None:
    from interpreters.secrets import KEY_HINTS, hinted

    samples = ["", "plain text", "thought_signature", "gh_", "ghx_", "a ghp_ b", "xo x", "Bearer x", "BEARER x",
               "bearer", "sk-", "AIz", *(f"..{h}.." for h in KEY_HINTS)]
    for s in samples:
        assert hinted(s) == any(h in s for h in KEY_HINTS), s


def _record_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: list[Any],
                  tools: list[Any] | None = None, secrets: tuple[str, ...] = (), **config: Any) -> Path:
    import interpreters.transcript.recorder as recorder_module

    monkeypatch.setattr(recorder_module, "now_ms", lambda: 1)
    path = tmp_path / "run.jsonl"
    ctx = AgentContext("Be exact. \u2603", [], tools or [add_text])
    cfg = AgentLoopConfig(model=Model(id="m1"), **config)
    with TranscriptRecorder(path, ctx, cfg, secrets=secrets) as recorder:
        run_agent_loop("1 + 2?", ctx, cfg, emit=lambda e: None, stream_fn=ScriptedModel(replies),
                       journal=recorder, clock=clock)
    return path


@pytest.mark.parametrize("scenario", ["tools", "text", "hooks", "thinking"])
def test_every_line_is_the_codec_s_json_of_its_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   scenario: str) -> None:
    from interpreters.transcript import expand

    config: dict[str, Any] = {}
    replies: list[Any] = [tool_call("add", {"a": 1, "b": 2}), tool_call("add", {"a": 3, "b": 4}), "It is 3 and 7."]
    if scenario == "text":
        replies = ["\u00e9" * 300]
    elif scenario == "hooks":
        config = {"before_tool_call": lambda c, s: None, "should_stop_after_turn": lambda c: False,
                  "transform_context": lambda messages, signal: messages}
    elif scenario == "thinking":
        config = {"tool_execution": "sequential"}
        calls = [ScriptedCall("add", {"a": 1, "b": 2}), ScriptedCall("add", {"a": 2, "b": 2})]
        replies = [Reply(text="hi \"there\"\n", thinking="hmm", tool_calls=calls), "ok"]
    path = _record_lines(tmp_path, monkeypatch, replies, **config)
    t = read_transcript(path)
    header = json.loads(path.read_text().splitlines()[0])
    assert header["initial_state"] == to_json(t.initial_state)
    updates = 0
    for entry in t:
        line = json.loads(entry.text)
        assert line["input"] == to_json(entry.input, partials=False)
        for written, effect in zip(entry.effects_json, entry.effects, strict=True):
            if written["type"] == "emit" and written["event"]["type"] == "message_update":
                updates += 1
                continue
            assert expand(written) == to_json(effect, partials=False)
    assert updates > 0
    assert replay(path).finished


def test_lines_are_scrubbed_of_every_secret_and_still_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = [f"key {SECRET} and sk-short", "BeArEr abcdefghijklmnopqrstuvwxyz", "custom-secret-value"]

    @tool
    def leak(x: int) -> str:
        """Returns something secret-looking."""
        return outputs[x - 1]

    replies = [tool_call("leak", {"x": 1}), tool_call("leak", {"x": 2}), tool_call("leak", {"x": 3}),
               f"done, ghp_{'a' * 36} and custom-secret-value"]
    path = _record_lines(tmp_path, monkeypatch, replies, tools=[leak], secrets=("custom-secret-value",),
                         api_key="another-known-key")
    text = path.read_text()
    assert SECRET not in text and "custom-secret-value" not in text and "ghp_" + "a" * 36 not in text
    assert text.count("[REDACTED]") >= 4
    assert replay(path).finished


def test_secrets_with_characters_json_escapes_are_scrubbed(tmp_path: Path) -> None:
    secrets = ['pa"ss\\word-1234567', "line1\nline2-secret"]

    @tool(name="leak")
    def leak(which: int) -> str:
        """Returns a secret (a bug in a tool)."""
        return f"the secret is {secrets[which]}"

    path = tmp_path / "esc.jsonl"
    ctx = AgentContext("", [], [leak])
    cfg = AgentLoopConfig(model=Model(id="m"))
    model = ScriptedModel([Reply(tool_calls=[ScriptedCall("leak", {"which": 0}), ScriptedCall("leak", {"which": 1})]),
                           "ok"])
    SYNC.record(path, "go", ctx, cfg, model, secrets=secrets)
    strings: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                collect(v)
        elif isinstance(value, list):
            for v in value:
                collect(v)

    for line in path.read_text().splitlines():
        collect(json.loads(line))
    assert not [s for s in strings for secret in secrets if secret in s]
    assert any("[REDACTED]" in s for s in strings)


HELD_REPLY = "hello there, friend"


def stopped_mid_stream(path: Path) -> tuple[Any, TranscriptRecorder, AgentLoopConfig]:
    """A run recorded into ``path`` and left open at its fourth text delta ("th"): the
    recorder holds those four deltas as one run, not yet written."""
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m1"))
    recorder = TranscriptRecorder(path, ctx, cfg)
    stream = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel([HELD_REPLY], chunk_size=2),
                        journal=recorder, clock=clock)
    for event in stream:
        if event.type == "message_update" and getattr(event.assistant_message_event, "delta", "") == "th":
            break
    return stream, recorder, cfg


def test_a_recorder_dropped_mid_stream_writes_the_deltas_it_held(tmp_path: Path) -> None:
    import gc

    path = tmp_path / "run.jsonl"
    stream, recorder, _ = stopped_mid_stream(path)
    assert recorder.steps == 7 and '"deltas"' not in path.read_text()  # still held
    enabled = gc.isenabled()
    gc.disable()  # written on the last reference's drop, not by a later collection
    try:
        del stream, recorder
        runs = [s for s in lines(path)[1:] if "deltas" in s]
    finally:
        if enabled:
            gc.enable()
    assert [r["deltas"]["text"] for r in runs] == [["he", "ll", "o ", "th"]]
    assert read_transcript(path).steps == 7


def test_steps_counts_what_the_recorder_has_and_flush_writes_a_held_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    stream, recorder, cfg = stopped_mid_stream(path)
    assert recorder.steps == 7 and read_transcript(path).steps == 3  # four deltas held
    recorder.flush()
    assert recorder.steps == 7 and read_transcript(path).steps == 7
    stream.close()
    recorder.close()
    assert read_transcript(path).steps == 7


def test_an_abandoned_stream_writes_what_the_recorder_held(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    stream, recorder, cfg = stopped_mid_stream(path)
    assert not any("deltas" in s for s in lines(path)[1:])
    stream.close()  # the recorder is still referenced: the run's close wrote the held run
    assert lines(path)[-1]["deltas"]["text"] == ["he", "ll", "o ", "th"]


def test_a_run_left_open_keeps_its_transcript_from_a_resume_until_its_stream_is_closed(tmp_path: Path) -> None:
    import threading

    from interpreters.replay import resume
    from interpreters.transcript import TranscriptBusy

    path = tmp_path / "run.jsonl"
    stream, recorder, cfg = stopped_mid_stream(path)
    before = path.read_bytes()
    with pytest.raises(TranscriptBusy) as info:  # the run could still go on: two writers
        resume(path, cfg, stream_fn=ScriptedModel([HELD_REPLY], chunk_size=2), clock=clock)
    assert str(info.value) == (f"{path}: another recorder in this process is writing this transcript (opened in "
                               f"thread {threading.current_thread().name!r}); give each run its own path, or close "
                               "that recorder first")
    assert path.read_bytes() == before
    stream.close()  # the run goes no further: its recorder writes what it held and lets go
    done = resume(path, cfg, stream_fn=ScriptedModel([HELD_REPLY], chunk_size=2), clock=clock).result()
    assert done[-1].text == "hello there, friend"
    assert replay(path).messages[-1].text == "hello there, friend"
    assert recorder.steps == 7


def test_a_recorder_does_not_write_over_what_a_lockless_writer_appended(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    stream, recorder, cfg = stopped_mid_stream(path)
    with open(path, "ab") as other:  # a writer that takes no claim (a copy, a lockless file system)
        other.write(b'{"note": "another writer"}\n')
    with pytest.warns(RuntimeWarning, match="was written by another writer since this recorder's last line; "
                                            "its 1 held line\\(s\\) are dropped"):
        recorder.flush()
    assert lines(path)[-1] == {"note": "another writer"}
    stream.close()


def test_recording_after_close_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m1"))
    recorder = TranscriptRecorder(path, ctx, cfg)
    run_agent_loop("hi", ctx, cfg, emit=lambda e: None, stream_fn=ScriptedModel(["ok"]), journal=recorder)
    recorder.close()
    with pytest.raises(ValueError, match="the recorder is closed"):
        run_agent_loop("again", ctx, cfg, emit=lambda e: None, stream_fn=ScriptedModel(["ok"]), journal=recorder)
    assert replay(path).finished  # the file was not truncated


def test_a_subclass_that_overrides_record_gets_every_step(tmp_path: Path) -> None:
    class Counting(TranscriptRecorder):
        calls = 0

        def record(self, step: int, input: Any, effects: Any) -> None:
            Counting.calls += 1
            super().record(step, input, effects)

    path = tmp_path / "run.jsonl"
    record_steps = record_sum(path, ["x" * 40])
    ctx, cfg = AgentContext("Be exact.", [], [add_text]), AgentLoopConfig(model=Model(id="m1"))
    sub = tmp_path / "sub.jsonl"
    recorder = Counting(sub, ctx, cfg)
    assert run_agent_loop("1 + 2?", ctx, cfg, emit=lambda e: None, stream_fn=ScriptedModel(["x" * 40]),
                          journal=recorder, clock=clock) == record_steps
    recorder.close()
    assert Counting.calls == read_transcript(sub).steps == read_transcript(path).steps
    assert sub.read_text().splitlines()[1:] == path.read_text().splitlines()[1:]


def test_a_clock_that_is_not_integer_milliseconds_still_gives_a_faithful_transcript(tmp_path: Path) -> None:
    ticks = itertools.count(0.5, 0.25)
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m1"))
    events, _ = SYNC.record(path, "hi", ctx, cfg, ScriptedModel(["abcdefgh"], chunk_size=2),
                            clock=lambda: next(ticks))  # type: ignore[arg-type, return-value]
    assert not any("deltas" in s for s in lines(path)[1:])  # no run: each delta its own exact line
    deltas = [e.input for e in read_transcript(path) if e.input_json.get("event", {}).get("type") == "text_delta"]
    ats = [d.at for d in deltas]
    assert all(type(a) is float for a in ats) and [b - a for a, b in zip(ats, ats[1:])] == [0.25] * 3
    assert replay(path).events == events


TOKEN = "abcdefghijklmnopqrstuvwxyz0123"


@pytest.mark.parametrize(("text", "secrets", "redacted"), [
    # "Bearer" then a line break: not a header's shape, left alone everywhere (the deltas, the
    # block's end, the message), even with another "Bearer " on the line that flags it.
    (f"Try Bearer x or Bearer\n{TOKEN} and then some more words here", (), False),
    (f"Send BeaRer {TOKEN} to it, see sk-docs.", (), False),
    (f"Send bearer {TOKEN} to it, see sk-docs.", (), True),
    # A known secret that begins like the escape of the line break before it: scrubbing the
    # written text would cut the escape in two; the strings are scrubbed instead.
    ("hello\nXXXXXXXXXXXX and more", ("nXXXXXXXXXXXX",), False),
    ("hello nXXXXXXXXXXXX and more", ("nXXXXXXXXXXXX",), True),
])
@pytest.mark.parametrize("abort_mid_block", [False, True])
def test_every_line_scrubs_a_text_alike_so_the_transcript_replays(
        tmp_path: Path, text: str, secrets: tuple[str, ...], redacted: bool, abort_mid_block: bool) -> None:
    from interpreters import AbortSignal

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m1"))
    signal = AbortSignal()
    updates = 0

    def on_event(event: Any) -> None:
        nonlocal updates
        updates += event.type == "message_update"
        if abort_mid_block and updates == 9:
            signal.abort()

    SYNC.record(path, "hi", ctx, cfg, ScriptedModel([text], chunk_size=4), signal, on_event, secrets=secrets,
                clock=clock)
    written = path.read_text()
    assert all(json.loads(line) for line in written.splitlines())
    leaked = (TOKEN in written) or any(s in written for s in secrets)
    if redacted:
        assert not leaked
    if not abort_mid_block:  # (an abort may cut the reply before the secret)
        assert leaked is not redacted and ("[REDACTED]" in written) is redacted
    assert replay(path).finished


def test_a_caller_that_holds_on_to_record_loses_no_delta(tmp_path: Path) -> None:
    class Forward:  # a journal that calls the recorder's record it looked up once
        def __init__(self, recorder: TranscriptRecorder) -> None:
            self.recorder = recorder
            self.record: Any = None

        def __call__(self, step: int, input: Any, effects: Any) -> None:
            delta = getattr(getattr(input, "event", None), "delta", None)
            if delta in (None, "bb"):  # keeps, from "bb" on, the bound method it looked up there
                self.record = self.recorder.record
            self.record(step, input, effects)
            if delta == "cc":
                self.recorder.flush()  # ends the run in the middle of the block

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m1"))
    recorder = TranscriptRecorder(path, ctx, cfg)
    forward = Forward(recorder)

    class Forwarding(Journal):
        def record(self, step: int, input: Any, effects: Any) -> None:
            forward(step, input, effects)

    run_agent_loop("hi", ctx, cfg, emit=lambda e: None, stream_fn=ScriptedModel(["aabbccddee"], chunk_size=2),
                   journal=Forwarding(), clock=clock)
    recorder.close()
    deltas = [e.input.event.delta for e in read_transcript(path)
              if e.input_json.get("event", {}).get("type") == "text_delta"]
    assert deltas == ["aa", "bb", "cc", "dd", "ee"]


@pytest.mark.parametrize("abort_in_arguments", [False, True])
def test_a_secret_in_streamed_tool_arguments_is_scrubbed_in_every_form(tmp_path: Path,
                                                                      abort_in_arguments: bool) -> None:
    from interpreters import AbortSignal

    secret = 'pass"word123'  # streamed inside JSON inside a JSON string: escaped twice in a line
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext("", [], [add_text]), AgentLoopConfig(model=Model(id="m1"))
    signal = AbortSignal()
    scripted = ScriptedModel([tool_call("add", {"a": 1, "b": 2, "note": secret}), "ok"], chunk_size=9)

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        for event in scripted(model, context, options):
            yield event
            if abort_in_arguments and event.type == "toolcall_delta" and "word" in event.delta:
                signal.abort()

    SYNC.record(path, "go", ctx, cfg, stream_fn, signal, secrets=[secret], clock=clock)
    written = path.read_text()
    once = json.dumps(secret)[1:-1]
    assert secret not in written and once not in written and json.dumps(once)[1:-1] not in written
    assert replay(path).finished


@pytest.mark.parametrize(("where", "old", "new", "message"), [
    ("start", '"partial":{"type"', '"partial":{"typX"',
     "cannot decode the input: the start event's partial is a FrozenDict, not a partial assistant message"),
    ("header", '"run":{"type"', '"run":{"typX"',
     "the header's initial_state does not decode: $.run is a FrozenDict (an object with no type tag), not a RunState"),
    ("emit", '"effects":[{"type":"emit","event"', '"effects":[{"type":"emit","evenX"',
     "damaged step (effect 0 is not an effect object with a type)"),
    ("input", '"input":{"type":"started"', '"input":{"typX":"started"',
     "cannot decode the input: not an input: None"),
])
def test_a_damaged_record_inside_a_line_is_a_transcript_error(
        tmp_path: Path, where: str, old: str, new: str, message: str) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, ["hello"])
    text = path.read_text().splitlines()
    index = 0 if where == "header" else next(i for i, line in enumerate(text) if i and old in line)
    text[index] = text[index].replace(old, new, 1)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(TranscriptError) as info:
        read_transcript(path)
    assert str(info.value) == f"{path}: line {index + 1}: {message}"


def test_a_recorder_in_another_process_on_the_same_path_fails_at_once_and_destroys_nothing(
        tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "run.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "from agentcore import AgentContext, AgentLoopConfig, Model\n"
        "from interpreters import ScriptedModel, agent_loop\n"
        "from interpreters.transcript import TranscriptRecorder\n"
        "ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id='m'))\n"
        "stream = agent_loop('hi', ctx, cfg, stream_fn=ScriptedModel(['one']), "
        f"journal=TranscriptRecorder({str(path)!r}, ctx, cfg))\n"
        "next(stream); print('holding', flush=True); time.sleep(30)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        before = path.read_bytes()
        ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
        with pytest.raises(RuntimeError) as info:
            run_agent_loop("hi", ctx, cfg, emit=lambda e: None, stream_fn=ScriptedModel(["x"]),
                           journal=TranscriptRecorder(path, ctx, cfg))
        assert str(info.value) == (f"{path}: another process is writing this transcript (a second worker, "
                                   "or pytest-xdist running the same test twice?); give each run its own path")
        assert path.read_bytes() == before  # nothing truncated, nothing written
    finally:
        holder.kill()
        holder.wait()


def test_a_spliced_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    record_sum(path, ["Hello."])
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:3] + [lines[0]] + lines[3:]) + "\n")
    with pytest.raises(TranscriptError) as info:
        read_transcript(path)
    assert str(info.value) == (f"{path}: line 4: a second header: two recorders wrote this file (spliced); "
                               "it cannot be replayed")
