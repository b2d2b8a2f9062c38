"""The sync and asyncio interpreters through the public API, side by side."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import (
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    BeforeToolCallResult,
    Model,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from interpreters import AbortSignal, Journal, ScriptedModel, agent_loop, aio, run_agent_loop, tool
from interpreters.streams.scripted import Reply, error
from tests.support.events import types
from tests.support.flavours import ASYNCIO, FLAVOURS, SYNC, Flavour
from tests.support.sample_tools import add

MODEL = Model(id="m")


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return f"echo: {text}"


def sleeper(seconds: float, log: list[str]) -> AgentTool:
    @tool(name="sleep")
    def sleep(label: str, signal: Any = None) -> str:
        """Sleep a while."""
        log.append(f"start {label}")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if signal is not None and signal.aborted:
                log.append(f"aborted {label}")
                raise RuntimeError("interrupted by abort")
            time.sleep(0.005)
        log.append(f"end {label}")
        return f"slept {label}"

    return sleep


# --------------------------------------------------------------------------- basics


def test_tool_round_trip(flavour: Flavour) -> None:
    model = ScriptedModel([Reply(tool_calls=(("echo", {"text": "hi"}),)), "done"])
    events, messages = flavour.run("go", AgentContext("", [], [echo]), AgentLoopConfig(model=MODEL), model)
    assert types(events) == [
        "agent_start", "turn_start", "message_start", "message_end", "message_start", "message_update",
        "message_end", "tool_execution_start", "tool_execution_end", "message_start", "message_end", "turn_end",
        "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end",
    ]
    assert [type(m).__name__ for m in messages] == ["UserMessage", "AssistantMessage", "ToolResultMessage",
                                                    "AssistantMessage"]
    assert messages[2].text == "echo: hi" and messages[3].text == "done"
    # the model saw the tool result on its second call
    assert [m.role for m in model.requests[1].context.messages] == ["user", "assistant", "toolResult"]


def test_continue_validation_raises_before_any_event(flavour: Flavour) -> None:
    config = AgentLoopConfig(model=MODEL)
    loop = flavour.agent_loop_continue
    with pytest.raises(ValueError, match="^Cannot continue: no messages in context$"):
        loop(AgentContext(), config)
    tail = AgentContext("", [UserMessage("q"), AssistantMessage((TextContent("a"),))])
    with pytest.raises(ValueError, match="^Cannot continue from message role: assistant$"):
        loop(tail, config)


def test_run_agent_loop_with_emit(flavour: Flavour) -> None:
    seen: list[str] = []
    ctx, config = AgentContext(), AgentLoopConfig(model=MODEL)
    if flavour.is_async:
        async def emit(e: Any) -> None:
            seen.append(e.type)
    else:
        def emit(e: Any) -> None:  # type: ignore[misc]
            seen.append(e.type)

    messages = flavour.call(flavour.run_agent_loop, "hi", ctx, config, emit, stream_fn=ScriptedModel(["yo"]))
    assert messages[-1].text == "yo"
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"


# --------------------------------------------------------------------------- concurrency


def test_eight_parallel_tools_really_run_in_parallel(flavour: Flavour) -> None:
    log: list[str] = []
    calls = tuple(("sleep", {"label": str(i)}) for i in range(8))
    model = ScriptedModel([Reply(tool_calls=calls), "done"])
    t0 = time.perf_counter()
    events, messages = flavour.run("go", AgentContext("", [], [sleeper(0.1, log)]), AgentLoopConfig(model=MODEL), model)
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.4, f"8 x 100 ms tools took {elapsed:.3f} s"
    assert [m.text for m in messages if isinstance(m, ToolResultMessage)] == [f"slept {i}" for i in range(8)]


def test_sequential_mode_really_serialises(flavour: Flavour) -> None:
    log: list[str] = []
    calls = tuple(("sleep", {"label": str(i)}) for i in range(3))
    model = ScriptedModel([Reply(tool_calls=calls), "done"])
    flavour.run("go", AgentContext("", [], [sleeper(0.03, log)]),
                AgentLoopConfig(model=MODEL, tool_execution="sequential"), model)
    assert log == ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]


def test_tool_progress_updates_arrive_before_the_end(flavour: Flavour) -> None:
    @tool(name="progress")
    def progress(steps: int, on_update: Any = None) -> str:
        """Report progress."""
        for i in range(steps):
            on_update({"done": i + 1})
        return "finished"

    model = ScriptedModel([Reply(tool_calls=(("progress", {"steps": 3}),)), "ok"])
    events, _ = flavour.run("go", AgentContext("", [], [progress]), AgentLoopConfig(model=MODEL), model)
    tool_events = [(e.type, getattr(e, "partial_result", None)) for e in events if e.type.startswith("tool_")]
    assert tool_events == [
        ("tool_execution_start", None),
        ("tool_execution_update", {"done": 1}), ("tool_execution_update", {"done": 2}),
        ("tool_execution_update", {"done": 3}), ("tool_execution_end", None),
    ]


# --------------------------------------------------------------------------- abort


def test_abort_mid_stream(flavour: Flavour) -> None:
    signal = AbortSignal()
    model = ScriptedModel(["x" * 400], chunk_size=1, delay=0.002)
    fired: list[float] = []

    def on_event(event: Any) -> None:
        if event.type == "message_update" and not fired:
            fired.append(time.perf_counter())
            threading.Timer(0.05, signal.abort).start()

    events, messages = flavour.run("go", AgentContext(), AgentLoopConfig(model=MODEL), model, signal, on_event)
    last = messages[-1]
    assert (last.stop_reason, last.error_message) == ("aborted", "Request was aborted")
    assert 0 < len(last.text) < 400
    assert types(events)[-3:] == ["message_end", "turn_end", "agent_end"]
    assert time.perf_counter() - fired[0] < 0.5


def test_abort_mid_tool_passes_the_signal_and_aborts_the_rest(flavour: Flavour) -> None:
    log: list[str] = []
    signal = AbortSignal()
    calls = tuple(("sleep", {"label": str(i)}) for i in range(2))
    model = ScriptedModel([Reply(tool_calls=calls), "never"])

    def on_event(event: Any) -> None:
        if event.type == "tool_execution_start" and event.args["label"] == "0":
            threading.Timer(0.05, signal.abort).start()

    t0 = time.perf_counter()
    events, messages = flavour.run("go", AgentContext("", [], [sleeper(5, log)]),
                                   AgentLoopConfig(model=MODEL, tool_execution="sequential"), model, signal, on_event)
    assert time.perf_counter() - t0 < 1.0
    results = [(m.text, m.is_error) for m in messages if isinstance(m, ToolResultMessage)]
    assert results == [("interrupted by abort", True), ("Operation aborted", True)]
    assert log == ["start 0", "aborted 0"]
    assert model.calls == 1
    assert types(events)[-2:] == ["turn_end", "agent_end"]


def test_abort_before_start(flavour: Flavour) -> None:
    signal = AbortSignal()
    signal.abort()
    model = ScriptedModel(["never"])
    events, messages = flavour.run("go", AgentContext(), AgentLoopConfig(model=MODEL), model, signal)
    assert model.calls == 0
    assert [m.stop_reason for m in messages if isinstance(m, AssistantMessage)] == ["aborted"]
    assert types(events) == ["agent_start", "turn_start", "message_start", "message_end", "message_start",
                             "message_end", "turn_end", "agent_end"]


def test_abort_after_end_is_a_no_op(flavour: Flavour) -> None:
    signal = AbortSignal()
    events, messages = flavour.run("go", AgentContext(), AgentLoopConfig(model=MODEL), ScriptedModel(["fine"]), signal)
    signal.abort()
    assert messages[-1].stop_reason == "stop"
    assert types(events).count("agent_end") == 1


# --------------------------------------------------------------------------- failure containment


def boom(*args: Any) -> Any:
    raise RuntimeError("kaput")


@pytest.mark.parametrize("hook", ["transform_context", "convert_to_llm", "get_steering_messages",
                                  "get_follow_up_messages", "prepare_next_turn", "should_stop_after_turn"])
def test_a_loop_hook_that_raises_ends_the_run_with_an_error_message(flavour: Flavour, hook: str) -> None:
    config = AgentLoopConfig(model=MODEL, **{hook: boom})
    model = ScriptedModel([Reply(tool_calls=(("echo", {"text": "a"}),)), "done", "more"])
    events, messages = flavour.run("go", AgentContext("", [], [echo]), config, model)
    last = messages[-1]
    assert (last.stop_reason, last.error_message) == ("error", f"{hook} failed: kaput")
    assert types(events)[-1] == "agent_end"


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call"])
def test_a_tool_hook_that_raises_gives_an_error_result(flavour: Flavour, hook: str) -> None:
    config = AgentLoopConfig(model=MODEL, **{hook: boom})
    model = ScriptedModel([Reply(tool_calls=(("echo", {"text": "a"}),)), "done"])
    _, messages = flavour.run("go", AgentContext("", [], [echo]), config, model)
    assert [(m.text, m.is_error) for m in messages if isinstance(m, ToolResultMessage)] == [("kaput", True)]
    assert messages[-1].text == "done"


def test_a_tool_that_raises_or_returns_garbage(flavour: Flavour) -> None:
    bad = AgentTool("bad", "bad", "returns garbage", {"type": "object"}, lambda *a: 42)
    worse = AgentTool("worse", "worse", "raises", {"type": "object"}, boom)
    model = ScriptedModel([Reply(tool_calls=(("bad", {}), ("worse", {}))), "done"])
    _, messages = flavour.run("go", AgentContext("", [], [bad, worse]), AgentLoopConfig(model=MODEL), model)
    assert [(m.text, m.is_error) for m in messages if isinstance(m, ToolResultMessage)] == [
        ("tool bad returned int, expected AgentToolResult", True), ("kaput", True)]


def test_a_stream_function_that_raises(flavour: Flavour) -> None:
    def stream_fn(*args: Any) -> Any:
        raise ConnectionError("no route to host")

    events, messages = flavour.run("go", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
    assert (messages[-1].stop_reason, messages[-1].error_message) == ("error", "no route to host")
    assert types(events)[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]


def test_a_stream_that_ends_without_its_final_event(flavour: Flavour) -> None:
    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        full = list(ScriptedModel(["partial text"])(model, context, options))
        return iter(full[:-1])

    _, messages = flavour.run("go", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
    last = messages[-1]
    assert (last.stop_reason, last.error_message, last.text) == (
        "error", "The stream ended without a done or error event", "partial text")


def test_an_error_reply_from_the_model(flavour: Flavour) -> None:
    _, messages = flavour.run("go", AgentContext(), AgentLoopConfig(model=MODEL),
                              ScriptedModel([error("rate limited")]))
    assert (messages[-1].stop_reason, messages[-1].error_message) == ("error", "rate limited")


def test_a_listener_that_raises_is_logged_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def listener(event: Any) -> None:
        seen.append(event.type)
        if event.type == "message_start":
            raise ValueError("listener bug")

    with caplog.at_level(logging.ERROR, logger="agentcore"):
        messages = run_agent_loop("hi", AgentContext(), AgentLoopConfig(model=MODEL), listener,
                                  stream_fn=ScriptedModel(["fine"]))
    assert messages[-1].text == "fine"
    assert seen[-1] == "agent_end"
    assert "listener bug" in caplog.text and "the run goes on" in caplog.text


def test_an_async_tool_raising_cancelled_error_itself_gives_an_error_result() -> None:
    """Its own CancelledError (not the run's cancellation) is a failure like any exception, with
    the same text as under the sync interpreter."""
    @tool(name="cancelled")
    async def cancelled(on_update: Any = None) -> str:
        """Gets cancelled."""
        raise asyncio.CancelledError()

    model = ScriptedModel([Reply(tool_calls=(("cancelled", {}),)), "ok"])
    for flavour in (ASYNCIO, SYNC):
        _, messages = flavour.run("go", AgentContext("", [], [cancelled]), AgentLoopConfig(model=MODEL), model)
        assert [(m.text, m.is_error) for m in messages if isinstance(m, ToolResultMessage)] == [
            ("CancelledError", True)]
        model = ScriptedModel([Reply(tool_calls=(("cancelled", {}),)), "ok"])


def test_hooks_are_called_with_their_contexts(flavour: Flavour) -> None:
    seen: list[Any] = []

    def before(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        seen.append(("before", ctx.tool_call.name, dict(ctx.args), [t.name for t in ctx.context.tools]))
        return None

    def after(ctx: Any, signal: Any) -> AfterToolCallResult:
        seen.append(("after", ctx.result.content[0].text, ctx.is_error))
        return AfterToolCallResult(details={"audited": True})

    async def async_key(provider: str) -> str:
        seen.append(("key", provider))
        return "secret"

    config = AgentLoopConfig(model=MODEL, before_tool_call=before, after_tool_call=after, get_api_key=async_key)
    model = ScriptedModel([Reply(tool_calls=(("echo", {"text": "a"}),)), "done"])
    _, messages = flavour.run("go", AgentContext("", [], [echo]), config, model)
    assert seen == [("key", "scripted"), ("before", "echo", {"text": "a"}, ["echo"]),
                    ("after", "echo: a", False), ("key", "scripted")]
    assert model.requests[0].options.api_key == "secret"
    result = [m for m in messages if isinstance(m, ToolResultMessage)][0]
    assert result.details == {"audited": True}


# --------------------------------------------------------------------------- sync == asyncio


def normalise(events: list[Any]) -> list[Any]:
    """Events without timestamps (the only thing allowed to differ between two runs)."""
    from agentcore.codec import to_json

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("timestamp", "at")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(to_json(e)) for e in events]


scripted_replies = st.lists(
    st.one_of(
        st.text(alphabet="ab ", max_size=10).map(lambda t: Reply(text=t or "x")),
        st.lists(st.sampled_from(["a", "b", "zz"]), min_size=1, max_size=3).map(
            lambda names: Reply(tool_calls=tuple(("echo" if n != "zz" else "nope", {"text": n}) for n in names))),
        st.just(error("overloaded")),
    ),
    min_size=1, max_size=4,
)


@settings(max_examples=25, deadline=None)
@given(scripted_replies, st.sampled_from(["parallel", "sequential"]), st.integers(0, 5))
def test_sync_and_asyncio_give_identical_events(replies: list[Any], mode: str, chunk: int) -> None:
    results = []
    for flavour in FLAVOURS:
        model = ScriptedModel(list(replies) + ["end"] * 5, chunk_size=chunk)
        config = AgentLoopConfig(model=MODEL, tool_execution=mode)  # type: ignore[arg-type]
        events, messages = flavour.run("go", AgentContext("", [], [echo]), config, model)
        results.append((normalise(events), normalise(messages)))
    assert results[0] == results[1]


def test_a_journal_that_fails_stops_the_run_with_its_error(flavour: Flavour) -> None:
    class FullDisk(Journal):
        def record(self, step: int, input: Any, effects: Any) -> None:
            if step == 3:
                raise OSError("No space left on device")

    model = ScriptedModel(["some text"], chunk_size=2)
    with pytest.raises(OSError, match="No space left on device"):
        flavour.call(lambda: flavour.agent_loop("go", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn=model,
                                                journal=FullDisk()).result())


def test_a_journal_is_a_journal_subclass_and_its_optional_methods_do_nothing() -> None:
    class OnlyRecord:  # duck-typed: not a Journal
        def record(self, step: int, input: Any, effects: Any) -> None:
            pass

    with pytest.raises(TypeError, match="journal= takes Journal instances .* not an OnlyRecord"):
        agent_loop("go", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn=ScriptedModel(["x"]),
                   journal=[OnlyRecord()])
    with pytest.raises(TypeError, match="journal= takes Journal instances"):
        aio.agent_loop("go", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn=ScriptedModel(["x"]),
                       journal=OnlyRecord())  # type: ignore[arg-type]

    class Steps(Journal):
        def __init__(self) -> None:
            self.steps = 0

        def record(self, step: int, input: Any, effects: Any) -> None:
            self.steps = step

    steps = Steps()
    with steps.tool_scope(None):  # type: ignore[arg-type]
        steps.flush()
        steps.add_secrets(["k"])
    model = ScriptedModel([Reply(tool_calls=(("add", {"a": 1, "b": 2}),)), "3"])
    messages = agent_loop("go", AgentContext(tools=[add]), AgentLoopConfig(model=MODEL), stream_fn=model,
                          journal=steps).result()
    assert messages[-1].text == "3" and steps.steps > 0


# --------------------------------------------------------------------------- abort edge cases


def test_no_tool_starts_once_a_listener_aborted(flavour: Flavour) -> None:
    ran: list[str] = []

    @tool(name="mark")
    def mark(label: str) -> str:
        """Record that it ran."""
        ran.append(label)
        return "ran"

    signal = AbortSignal()
    model = ScriptedModel([Reply(tool_calls=(("mark", {"label": "a"}), ("mark", {"label": "b"}))), "never"])

    def on_event(event: Any) -> None:
        if event.type == "tool_execution_start":
            signal.abort()

    _, messages = flavour.run("go", AgentContext("", [], [mark]), AgentLoopConfig(model=MODEL), model, signal,
                              on_event)
    assert ran == []
    assert [(m.text, m.is_error) for m in messages if isinstance(m, ToolResultMessage)] == [
        ("Operation aborted", True), ("Operation aborted", True)]


def test_steering_taken_from_the_queue_is_kept_when_the_abort_lands_during_the_poll(flavour: Flavour) -> None:
    signal = AbortSignal()
    polls = iter([[], [UserMessage("please also do X")]])

    def steering() -> list[Any]:
        batch = next(polls, [])
        if batch:
            signal.abort()  # the user aborts while the poll hands over their message
        return batch

    config = AgentLoopConfig(model=MODEL, get_steering_messages=steering)
    model = ScriptedModel([Reply(tool_calls=(("echo", {"text": "a"}),)), "never"])
    events, messages = flavour.run("go", AgentContext("", [], [echo]), config, model, signal)
    assert [m.text for m in messages if isinstance(m, UserMessage)] == ["go", "please also do X"]
    assert messages[-1].stop_reason == "aborted"
    tail = [(e.type, getattr(getattr(e, "message", None), "role", None)) for e in events[-7:]]
    assert tail == [("turn_start", None), ("message_start", "user"), ("message_end", "user"),
                    ("message_start", "assistant"), ("message_end", "assistant"), ("turn_end", "assistant"),
                    ("agent_end", None)]


def test_a_tool_that_ignores_the_abort_is_given_up_on_after_the_grace_period(
        flavour: Flavour, monkeypatch: pytest.MonkeyPatch) -> None:
    from interpreters.runtime.run import Run

    monkeypatch.setattr(Run, "abort_grace", 0.2)
    release = threading.Event()

    @tool(name="stubborn")
    def stubborn(on_update: Any = None) -> str:
        """Ignores the signal."""
        release.wait(5)
        return "too late"

    signal = AbortSignal()
    model = ScriptedModel([Reply(tool_calls=(("stubborn", {}),)), "never"])

    ended: list[float] = []

    def on_event(event: Any) -> None:
        if event.type == "tool_execution_start":
            threading.Timer(0.05, signal.abort).start()
        if event.type == "agent_end":
            ended.append(time.perf_counter())
            release.set()  # (asyncio.run waits for its worker threads before it returns)

    t0 = time.perf_counter()
    try:
        _, messages = flavour.run("go", AgentContext("", [], [stubborn]), AgentLoopConfig(model=MODEL), model,
                                  signal, on_event)
    finally:
        release.set()
    assert ended[0] - t0 < 2.0
    assert [(m.text, m.is_error) for m in messages if isinstance(m, ToolResultMessage)] == [
        ("Operation aborted (the tool did not stop within 0.2 s of the abort)", True)]


def test_cancelling_the_caller_cancels_a_run_awaiting_an_inline_async_tool() -> None:
    @tool(name="slow")
    async def slow() -> str:
        """Sleeps."""
        await asyncio.sleep(2)
        return "done"

    model = ScriptedModel([Reply(tool_calls=(("slow", {}),)), "ok"])

    async def main() -> None:
        await asyncio.wait_for(
            aio.run_agent_loop("go", AgentContext("", [], [slow]), AgentLoopConfig(model=MODEL), lambda e: None,
                               stream_fn=model), 0.1)

    t0 = time.perf_counter()
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(main())
    assert time.perf_counter() - t0 < 1.0
    assert model.calls == 1


def test_closing_a_run_early_tells_its_running_tools_to_stop() -> None:
    seen: list[bool] = []
    started = threading.Event()

    @tool(name="watcher")
    def watcher(signal: Any = None, on_update: Any = None) -> str:
        """Waits for the signal."""
        started.set()
        on_update("waiting")
        seen.append(signal.wait(2))
        return "stopped"

    stream = agent_loop("go", AgentContext("", [], [watcher]), AgentLoopConfig(model=MODEL),
                        stream_fn=ScriptedModel([Reply(tool_calls=(("watcher", {}),)), "never"]))
    for event in stream:
        if event.type == "tool_execution_update":
            break
    assert started.wait(2)
    stream.close()
    deadline = time.monotonic() + 2
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == [True]
