"""Strict and LLM-only replay, divergence reports, relaxations, state_at / llm_request_at / fork."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from agentcore.effects import CallLlm
from agentcore.state import Finished, Idle, RunningTools
from interpreters import ScriptedModel, tool
from interpreters.replay import (
    ReplayDivergence,
    ReplayOptions,
    fork,
    llm_request_at,
    replay,
    replay_llm,
    resume,
    state_at,
)
from interpreters.streams.scripted import Reply, ScriptedCall, tool_call
from interpreters.transcript import read_transcript
from tests.support.flavours import ASYNCIO, SYNC, Flavour


def make_tool(suffix: str = "") -> Any:
    @tool
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return f"{a + b}{suffix}"

    return add


REPLIES = [tool_call("add", {"a": 1, "b": 2}),
           Reply(tool_calls=[ScriptedCall("add", {"a": 3, "b": 4}), ScriptedCall("add", {"a": 5, "b": 6})]),
           "The sums are 3, 7 and 11."]


def record_sums(path: Path, replies: list[Any] = REPLIES, **cfg: Any) -> tuple[list[Any], list[Any], Any]:
    """The sums run recorded: ``(events, messages, the scripted model)``."""
    ctx = AgentContext("Be exact.", [], [make_tool()])
    config = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential", **cfg)
    model = ScriptedModel(replies)
    events, messages = SYNC.record(path, "Sums?", ctx, config, model)
    return events, messages, model


def edit(path: Path, line: int, change: Any) -> None:
    text = path.read_text().splitlines()
    obj = json.loads(text[line - 1])
    change(obj)
    text[line - 1] = json.dumps(obj)
    path.write_text("\n".join(text) + "\n")


def entry_of(path: Path, predicate: Any) -> Any:
    for entry in read_transcript(path):
        if predicate(entry):
            return entry
    raise AssertionError("no such step")


def step_of(path: Path, predicate: Any) -> int:
    return int(entry_of(path, predicate).step)


def test_strict_replay_reproduces_events_messages_and_state(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    events, messages, _ = record_sums(path)
    result = replay(path)
    assert result.events == events and result.messages == messages
    assert result.finished and result.steps == read_transcript(path).steps
    assert isinstance(result.state.phase, Finished)


def test_llm_only_replay_runs_tools_live_without_the_model(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    events, messages, _ = record_sums(path)
    calls: list[Any] = []

    @tool
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        calls.append((a, b))
        return str(a + b)

    result = replay_llm(path, AgentLoopConfig(model=Model(id="m"), tool_execution="sequential"), [add])
    assert calls == [(1, 2), (3, 4), (5, 6)]
    assert result.messages == messages and result.events == events


def test_llm_only_divergence_names_step_turn_and_diff(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_sums(path)
    expected_step = step_of(path, lambda e: e.input.type == "tool_finished")
    with pytest.raises(ReplayDivergence) as info:
        replay_llm(path, AgentLoopConfig(model=Model(id="m"), tool_execution="sequential"), [make_tool("!")])
    report = info.value.report
    assert (report.kind, report.step, report.turn) == ("effect", expected_step, 1)
    assert report.detail == ("effect 0 (emit tool_execution_end): tool_execution_end.result.content[0].text: "
                             "recorded '3', now '3!'")
    assert '-          "text": "3",' in report.diff and '+          "text": "3!",' in report.diff
    assert str(report).startswith(
        f"replay diverged at step {expected_step} (turn 1), effect 0 (emit tool_execution_end)")


def test_a_divergence_names_a_key_that_is_not_a_name_and_takes_nan_for_nan(flavour: Flavour, tmp_path: Path) -> None:
    """The path to what differs quotes a key that is not a name (``details['file name']``), as
    a suspension's difference does; NaN in the recording and in the replay is no difference."""
    from agentcore import AgentToolResult, TextContent

    def noting(name: str) -> Any:
        @tool
        def note() -> AgentToolResult:
            """Note."""
            return AgentToolResult([TextContent("ok")], details={"level": float("nan"), "file name": name})

        return note

    path = tmp_path / "r.jsonl"
    config = AgentLoopConfig(model=Model(id="m"))
    flavour.record(path, "go", AgentContext("", [], [noting("a.txt")]), config,
                   ScriptedModel([tool_call("note", {}), "done"]))
    assert flavour.call(flavour.replay_llm, path, config, [noting("a.txt")]).finished
    with pytest.raises(ReplayDivergence) as info:
        flavour.call(flavour.replay_llm, path, config, [noting("b.txt")])
    assert info.value.report.detail == ("effect 0 (emit tool_execution_end): tool_execution_end.result.details"
                                        "['file name']: recorded 'a.txt', now 'b.txt'")


def test_tool_calls_only_ignores_changed_results(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _, messages, _ = record_sums(path)
    config = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential")
    result = replay_llm(path, config, [make_tool("!")], options=ReplayOptions(tool_calls_only=True))
    assert result.messages[2].content[0].text == "3!"

    # Changing the arguments the model sent is still caught.
    text = path.read_text().replace('"args":{"a":1,"b":2}', '"args":{"a":1,"b":9}')
    path.write_text(text)
    with pytest.raises(ReplayDivergence, match="the tool calls differ"):
        replay(path, options=ReplayOptions(tool_calls_only=True))


def test_call_llm_diff_names_the_message_index(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    ctx = AgentContext("Be exact.", [], [make_tool()])
    config = AgentLoopConfig(model=Model(id="m"), transform_context=lambda messages, signal: messages)
    SYNC.record(path, "Sums?", ctx, config, ScriptedModel(REPLIES))
    from agentcore import replace

    def transform(messages: Any, signal: Any) -> Any:
        out = list(messages)
        if len(out) > 2:
            out[2] = replace(out[2], timestamp=out[2].timestamp + 1)
        return out

    changed = AgentLoopConfig(model=Model(id="m"), transform_context=transform)
    with pytest.raises(ReplayDivergence) as info:
        replay_llm(path, changed, [make_tool()])
    report = info.value.report
    assert report.detail.startswith("effect 0 (call_llm): call_llm.messages[2].timestamp: recorded ")
    assert report.turn == 2
    # The same change passes when timestamps are ignored.
    replay_llm(path, changed, [make_tool()], options=ReplayOptions(ignore_timestamps=True))


def test_ignore_system_prompt_and_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_sums(path)
    edit(path, 1, lambda h: (h["initial_state"].get("run") or h["initial_state"]).update(system_prompt="Be vague."))
    with pytest.raises(ReplayDivergence) as info:
        replay(path)
    assert (info.value.report.step, info.value.report.detail) == (
        1, "effect 4 (call_llm): call_llm.system_prompt: recorded 'Be exact.', now 'Be vague.'")
    replay(path, options=ReplayOptions(ignore_system_prompt=True))

    path2 = tmp_path / "r2.jsonl"
    record_sums(path2)
    finished = entry_of(path2, lambda e: e.input.type == "tool_finished")
    edit(path2, finished.line, lambda o: o["input"].update(at=o["input"]["at"] + 5))
    with pytest.raises(ReplayDivergence) as info:
        replay(path2)
    assert info.value.report.step == finished.step
    assert replay(path2, options=ReplayOptions(ignore_timestamps=True)).finished


def test_out_of_recording_and_left_over(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_sums(path)
    t = read_transcript(path)
    short = fork(t, 10, tmp_path / "short.jsonl")
    config = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential")
    with pytest.raises(ReplayDivergence) as info:
        replay_llm(short, config, [make_tool()])
    assert info.value.report.kind == "out_of_recording" and info.value.report.step == 11
    assert "replay ran out of recorded entries at step 11" in str(info.value)

    extra = path.read_text() + json.dumps({"step": t.steps + 1, "input": {"type": "continued", "at": 0},
                                          "effects": []}) + "\n"
    path.write_text(extra)
    with pytest.raises(ReplayDivergence) as info:
        replay(path)
    assert (info.value.report.kind, info.value.report.step) == ("left_over", t.steps + 1)


def test_rejected_input_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_sums(path)
    entry = entry_of(path, lambda e: e.input.type == "tool_finished")
    n = entry.step
    edit(path, entry.line, lambda o: o["input"].update(id=99))
    with pytest.raises(ReplayDivergence) as info:
        replay(path)
    assert info.value.report.kind == "rejected" and info.value.report.step == n
    assert "no tool call is waiting for an answer with id 99" in info.value.report.detail


def test_state_at_and_llm_request_at(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _, _, model = record_sums(path)
    t = read_transcript(path)
    assert isinstance(state_at(t, 0).phase, Idle) and state_at(t, 0) == t.initial_state
    assert state_at(t, t.steps) == replay(t).state
    running = step_of(path, lambda e: any(x["type"] == "execute_tool" for x in e.effects_json))
    assert isinstance(state_at(t, running).phase, RunningTools)
    with pytest.raises(IndexError):
        state_at(t, t.steps + 1)
    requests = []
    for entry in t:
        req = llm_request_at(t, entry.step)
        assert isinstance(req, CallLlm)
        if not requests or requests[-1] is not req and requests[-1] != req:
            requests.append(req)
    assert [list(r.messages) for r in requests] == [list(q.context.messages) for q in model.requests]
    assert llm_request_at(t, 0) is None


def test_fork_then_resume_finishes_like_the_original(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    _, messages, _ = record_sums(path, [tool_call("add", {"a": 1, "b": 2}), "The sum is 3."])
    t = read_transcript(path)
    forked = read_transcript(fork(t, 9, tmp_path / "fork.jsonl"))
    assert forked.steps == 9 and [e.text for e in forked] == [e.text for e in t.entries[:9]]
    model = ScriptedModel(lambda ctx, i: "The sum is 3." if len(ctx.messages) > 1
                          else tool_call("add", {"a": 1, "b": 2}))
    config = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential")
    out = resume(tmp_path / "fork.jsonl", config, [make_tool()], stream_fn=model)
    assert [m.text if m.role == "assistant" else None for m in out.result()] == \
        [m.text if m.role == "assistant" else None for m in messages]


def timed_add(delays: dict[int, float]) -> Any:
    import time as _time

    @tool(name="add")
    def add(a: int, b: int) -> str:
        """Add two numbers, slowly."""
        _time.sleep(delays.get(a, 0.0))
        return f"{a + b}"

    return add


def test_llm_only_replay_is_not_fooled_by_parallel_tools_finishing_in_another_order(tmp_path: Path) -> None:
    t = tmp_path / "parallel.jsonl"
    calls = Reply(tool_calls=[ScriptedCall("add", {"a": 3, "b": 4}), ScriptedCall("add", {"a": 5, "b": 6})])
    ctx = AgentContext("", [], [timed_add({3: 0.0, 5: 0.05})])       # recorded: a=3 ends first
    config = AgentLoopConfig(model=Model(id="m"))
    events, _ = SYNC.record(t, "Sums?", ctx, config, ScriptedModel([calls, "7 and 11"]))
    recorded_ends = [e.tool_call_id for e in events if e.type == "tool_execution_end"]
    assert recorded_ends == ["call_1", "call_2"]
    # Live, the other call finishes first: the replay still matches, with the recorded order.
    result = replay_llm(t, config, [timed_add({3: 0.05, 5: 0.0})])
    assert [e.tool_call_id for e in result.events if e.type == "tool_execution_end"] == ["call_1", "call_2"]
    assert result.messages[-1].text == "7 and 11"
    # A changed answer is still a divergence.
    with pytest.raises(ReplayDivergence) as info:
        replay_llm(t, config, [make_tool("!")])
    assert info.value.report.kind == "effect"


def test_llm_only_replay_on_asyncio_with_async_tools(tmp_path: Path) -> None:
    import asyncio

    t = tmp_path / "async.jsonl"
    events, messages, _ = record_sums(t)

    @tool(name="add")
    async def add(a: int, b: int) -> str:
        """Add two numbers."""
        await asyncio.sleep(0)
        return f"{a + b}"

    config = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential")
    result = ASYNCIO.call(ASYNCIO.replay_llm, t, config, [add])
    assert result.messages == messages
    assert [e.type for e in result.events] == [e.type for e in events]
    with pytest.raises(ReplayDivergence):
        ASYNCIO.call(ASYNCIO.replay_llm, t, config, [make_tool("?")])


def waiter(log: list[str]) -> Any:
    @tool(name="wait")
    def wait(label: str, signal: Any = None) -> str:
        """Wait for the abort (at most 5 s)."""
        log.append(f"start {label}")
        if signal is not None and signal.wait(5):
            raise RuntimeError("stopped by the abort")
        return f"waited {label}"

    return wait


def test_llm_only_replay_aborts_where_the_recording_was_aborted_outside_a_stream(
        tmp_path: Path, flavour: Flavour) -> None:
    import threading

    from interpreters import AbortSignal

    path = tmp_path / "aborted.jsonl"
    log: list[str] = []
    ctx = AgentContext("Wait.", [], [waiter(log)])
    config = AgentLoopConfig(model=Model(id="m"), tool_execution="sequential")
    signal = AbortSignal()
    calls = [ScriptedCall("wait", {"label": "a"}), ScriptedCall("wait", {"label": "b"})]

    def on_event(event: Any) -> None:
        if event.type == "tool_execution_start":
            threading.Timer(0.05, signal.abort).start()  # the user presses Ctrl-C while "a" waits

    events, messages = SYNC.record(path, "Go.", ctx, config, ScriptedModel([Reply(tool_calls=calls), "never"]), signal,
                                   on_event)
    assert log == ["start a"]
    recorded = [e.input_json.get("event", e.input_json)["type"] for e in read_transcript(path)]
    assert recorded.index("abort_requested") > recorded.index("done")  # while a tool ran, not in a stream

    # The live tool is aborted at the same step: same events and messages, the same tool log.
    log.clear()
    result = flavour.call(flavour.replay_llm, path, config, [waiter(log)])
    assert result.messages == messages and [e.type for e in result.events] == [e.type for e in events]
    assert log == ["start a"] and result.finished


def stop_tools(user_signal: Any) -> list[Any]:
    import time

    @tool(name="a")
    def a() -> str:
        """The user presses stop while it runs; it finishes anyway."""
        time.sleep(0.1)
        user_signal.abort()
        return "a done"

    @tool(name="b")
    def b(signal: Any = None) -> str:
        """Stops 50 ms after the abort."""
        if signal is not None and signal.wait(5):
            time.sleep(0.05)
            raise RuntimeError("stopped")
        return "b done"

    return [a, b]


def test_llm_only_replay_feeds_the_answers_after_an_abort_in_the_recorded_order(tmp_path: Path,
                                                                                 flavour: Flavour) -> None:
    import time

    from interpreters import AbortSignal

    path = tmp_path / "r.jsonl"
    signal = AbortSignal()
    ctx = AgentContext("", [], stop_tools(signal))
    config = AgentLoopConfig(model=Model(id="m"))
    replies = [Reply(tool_calls=[ScriptedCall("a", {}), ScriptedCall("b", {})]), "never"]
    _, messages = SYNC.record(path, "go", ctx, config, ScriptedModel(replies), signal)
    recorded = [(e.input.type, getattr(e.input, "id", None)) for e in read_transcript(path)][-3:]
    assert recorded == [("abort_requested", None), ("tool_finished", 2), ("tool_failed", 3)]
    # Replayed, the abort comes as soon as the tools run: b now fails before a finishes, and is
    # held back until a's answer, as recorded. (The live tools' own stop signal goes nowhere.)
    t0 = time.monotonic()
    tools = stop_tools(AbortSignal())
    result = flavour.call(flavour.replay_llm, path, config, tools)
    assert result.messages == messages and time.monotonic() - t0 < 2


def test_llm_only_replay_stops_a_tool_the_recorded_abort_stopped_before_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import interpreters.runtime.thread_waits as sync
    from interpreters import AbortSignal

    log: list[str] = []
    user_signal = AbortSignal()

    @tool(name="a")
    def a() -> str:
        """The user presses stop as it starts, before b is started."""
        log.append("a")
        user_signal.abort()
        return "a done"

    @tool(name="b")
    def b() -> str:
        """Never started."""
        log.append("b")
        return "b done"

    class StartAtOnce:  # the recording's thread timing, made certain: a runs as it is submitted
        def submit(self, fn: Any, *args: Any) -> None:
            fn(*args)

    path = tmp_path / "r.jsonl"
    ctx = AgentContext("", [], [a, b])
    config = AgentLoopConfig(model=Model(id="m"))
    replies = [Reply(tool_calls=[ScriptedCall("a", {}), ScriptedCall("b", {})]), "never"]
    with monkeypatch.context() as patch:
        patch.setattr(sync, "tool_threads", StartAtOnce())
        _, messages = SYNC.record(path, "go", ctx, config, ScriptedModel(replies), user_signal)
    assert log == ["a"] and [m.text for m in messages[2:4]] == ["a done", "Operation aborted"]
    log.clear()
    result = replay_llm(path, config, [a, b])  # the real thread pool now
    assert result.messages == messages and log == ["a"]


def test_llm_only_replay_scrubs_what_live_tools_print_as_the_recorder_did(tmp_path: Path, flavour: Flavour) -> None:
    key = "my-api-key-1234"

    def fetcher(suffix: str = "") -> Any:
        @tool(name="fetch")
        def fetch(url: str) -> str:
            """Fetch a page."""
            raise RuntimeError(f"401 for key {key}{suffix}")

        return fetch

    path = tmp_path / "r.jsonl"
    ctx = AgentContext("", [], [fetcher()])
    config = AgentLoopConfig(model=Model(id="m"), api_key=key)
    _, messages = SYNC.record(path, "go", ctx, config, ScriptedModel([tool_call("fetch", {"url": "u"}), "sorry"]))
    assert key not in path.read_text()

    def again(tools: list[Any]) -> Any:
        return flavour.call(flavour.replay_llm, path, config, tools)

    result = again([fetcher()])
    assert result.messages == messages  # the live run's own messages: the real text
    with pytest.raises(ReplayDivergence) as info:
        again([fetcher(" (retry later)")])
    report = str(info.value)
    assert "(retry later)" in report and key not in report  # the diff shows no secret either


def test_resume_warns_when_it_goes_on_with_redacted_text(tmp_path: Path) -> None:
    token = "sk-ant-" + "a" * 40

    @tool(name="login")
    def login(token: str) -> str:
        """Log in."""
        return "ok"

    path = tmp_path / "r.jsonl"
    ctx = AgentContext("", [], [login])
    config = AgentLoopConfig(model=Model(id="m"))
    SYNC.record(path, "go", ctx, config, ScriptedModel([tool_call("login", {"token": token}), "in"]))
    running = next(e.step for e in read_transcript(path) if any(x["type"] == "execute_tool" for x in e.effects_json))
    cut = fork(path, running, tmp_path / "cut.jsonl")
    with pytest.warns(RuntimeWarning, match=r"holds text the recorder redacted \(execute_tool\): it is sent as "
                                            r"\[REDACTED\]"):
        resume(cut, config, [login], stream_fn=ScriptedModel(["in"])).result()


def test_a_recorded_input_damaged_inside_is_named_by_its_line(tmp_path: Path) -> None:
    from interpreters.transcript import TranscriptError

    path = tmp_path / "r.jsonl"
    record_sums(path)
    done = entry_of(path, lambda e: e.input_json.get("event", {}).get("type") == "done")
    edit(path, done.line, lambda o: o["input"]["event"]["message"].update(type="user"))  # another record now
    with pytest.raises(TranscriptError) as info:
        replay(path)
    assert str(info.value).startswith(f"{path}: line {done.line}: cannot decode the input: Stream protocol "
                                      "error: the done event's message was a UserMessage (")
    assert (info.value.path, info.value.line) == (path, done.line)
