"""The loop's promises through the public API, on both interpreters: the seed's turn order, no
lost queued message, tool timeouts, the run's signal for hooks and listeners, thinking only for
models that reason."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    Model,
    NextTurn,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from interpreters import AbortSignal, Agent, Journal, ScriptedModel, SyncAgent, tool
from interpreters.replay import replay
from interpreters.streams.scripted import Reply
from tests.support.events import types
from tests.support.flavours import Flavour
from tests.support.sample_tools import add

MODEL = Model(id="m")


def add_then(*texts: str) -> ScriptedModel:
    """A model that calls add(1, 2), then answers each of ``texts`` in turn."""
    return ScriptedModel([Reply(tool_calls=(("add", {"a": 1, "b": 2}),)), *texts])


def texts(messages: list[Any]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, ToolResultMessage):
            out.append(f"tool:{m.content[0].text}")  # type: ignore[union-attr]
        else:
            out.append(f"{m.role}:{m.text}")
    return out


# --------------------------------------------------------------------------- 1. the turn order


def test_after_each_turn_prepare_next_turn_then_should_stop_then_one_steering_poll(flavour: Flavour) -> None:
    log: list[str] = []

    def hook(name: str, value: Any = None) -> Any:
        def call(*args: Any) -> Any:
            log.append(name)
            return value
        return call

    config = AgentLoopConfig(
        model=MODEL, get_steering_messages=hook("steer", []), get_follow_up_messages=hook("follow", []),
        prepare_next_turn=hook("prepare"), should_stop_after_turn=hook("stop?", False),
        transform_context=lambda messages, signal: (log.append("transform"), messages)[1],
    )
    flavour.run("go", AgentContext("", [], [add]), config, add_then("3"),
                on_event=lambda e: log.append(e.type) if e.type in ("turn_start", "turn_end", "agent_end") else None)
    assert log == [
        "turn_start", "steer", "transform",
        "turn_end", "prepare", "stop?", "steer",
        "turn_start", "transform",
        "turn_end", "prepare", "stop?", "steer", "follow",
        "agent_end",
    ]


def test_prepare_next_turn_runs_after_the_last_turn_too_and_sees_it(flavour: Flavour) -> None:
    seen: list[tuple[str, int]] = []

    def prepare(ctx: Any) -> NextTurn:
        seen.append((ctx.message.text or ctx.message.tool_calls[0].name, len(ctx.tool_results)))
        return NextTurn(model=Model(id="never-used"))

    models: list[str] = []
    scripted = add_then("done")

    def stream_fn(model: Model, context: Any, options: Any) -> Any:
        models.append(model.id)
        return scripted(model, context, options)

    events, messages = flavour.run("go", AgentContext("", [], [add]),
                                   AgentLoopConfig(model=MODEL, prepare_next_turn=prepare), stream_fn)
    assert seen == [("add", 1), ("done", 0)]
    assert models == ["m", "never-used"]  # the first NextTurn applied to the second turn
    assert types(events)[-2:] == ["turn_end", "agent_end"]


def test_a_queue_cleared_by_prepare_next_turn_is_not_delivered(flavour: Flavour) -> None:
    queue: list[Any] = []

    def add_and_steer(a: int, b: int) -> int:
        queue.append(UserMessage("stale steering"))
        return a + b

    adder = tool(name="add")(add_and_steer)

    def prepare(ctx: Any) -> None:
        queue.clear()  # e.g. a compaction that folds queued notes into the context

    def steering() -> list[Any]:
        taken = list(queue)
        queue.clear()
        return taken

    _, messages = flavour.run("go", AgentContext("", [], [adder]),
                              AgentLoopConfig(model=MODEL, prepare_next_turn=prepare, get_steering_messages=steering),
                              add_then("3"))
    assert texts(messages) == ["user:go", "assistant:", "tool:3", "assistant:3"]


def test_should_stop_after_turn_sees_the_context_prepare_next_turn_made(flavour: Flavour) -> None:
    seen: list[list[str]] = []

    def prepare(ctx: Any) -> NextTurn:
        return NextTurn(context=AgentContext("compacted", [UserMessage("summary")], ctx.context.tools))

    def stop(ctx: Any) -> bool:
        seen.append([ctx.context.system_prompt] + [m.text for m in ctx.context.messages])
        return True

    _, messages = flavour.run("go", AgentContext("", [], [add]),
                              AgentLoopConfig(model=MODEL, prepare_next_turn=prepare, should_stop_after_turn=stop),
                              add_then("never"))
    assert seen == [["compacted", "summary"]]
    assert texts(messages) == ["user:go", "assistant:", "tool:3"]


def test_steering_queued_during_a_terminating_tool_comes_before_an_older_follow_up(flavour: Flavour) -> None:
    steering: list[Any] = []
    follow_ups: list[Any] = [UserMessage("older follow-up")]

    @tool
    def finish() -> AgentToolResult:
        """Finish the task."""
        steering.append(UserMessage("steer now"))
        return AgentToolResult((TextContent("finished"),), terminate=True)

    def take(queue: list[Any]) -> Any:
        def poll() -> list[Any]:
            taken = queue[:1]
            del queue[:1]
            return taken
        return poll

    model = ScriptedModel([Reply(tool_calls=(("finish", {}),)), "after steering", "after follow-up"])
    _, messages = flavour.run("go", AgentContext("", [], [finish]),
                              AgentLoopConfig(model=MODEL, get_steering_messages=take(steering),
                                              get_follow_up_messages=take(follow_ups)), model)
    assert texts(messages) == ["user:go", "assistant:", "tool:finished", "user:steer now",
                               "assistant:after steering", "user:older follow-up", "assistant:after follow-up"]


def test_the_agent_keeps_the_turn_order_too() -> None:
    """Agent's own queues: steering typed during the last tool call of a terminating batch is
    delivered before the follow-up queued earlier."""
    with SyncAgent(model=MODEL, stream_fn=ScriptedModel([Reply(tool_calls=(("finish", {}),)), "a", "b"])) as agent:
        @tool
        def finish() -> AgentToolResult:
            """Finish the task."""
            agent.agent.steer("steer now")  # runs on the agent's loop thread
            return AgentToolResult((TextContent("finished"),), terminate=True)

        agent.set_tools([finish])
        agent.follow_up("older follow-up")
        agent.prompt("go")
        assert texts(agent.state.messages) == ["user:go", "assistant:", "tool:finished", "user:steer now",
                                               "assistant:a", "user:older follow-up", "assistant:b"]


# --------------------------------------------------------------------------- 2. queued input is never lost


def test_steering_polled_before_a_failing_transform_is_in_the_context(flavour: Flavour) -> None:
    polls = iter([[UserMessage("steer")]])

    def transform(messages: Any, signal: Any) -> Any:
        raise ValueError("no room")

    events, messages = flavour.run("go", AgentContext(),
                                   AgentLoopConfig(model=MODEL, get_steering_messages=lambda: next(polls, []),
                                                   transform_context=transform), ScriptedModel(["never"]))
    assert texts(messages) == ["user:go", "user:steer", "assistant:"]
    assert messages[-1].error_message == "transform_context failed: no room"
    ends = [e.message.text for e in events if e.type == "message_end"]
    assert ends[:2] == ["go", "steer"]
    assert types(events)[-2:] == ["turn_end", "agent_end"]


def test_follow_ups_polled_before_a_failing_convert_are_in_the_context(flavour: Flavour) -> None:
    follow_ups = iter([[UserMessage("next task")]])
    calls = [0]

    def convert(messages: Any) -> Any:
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("converter down")
        return list(messages)

    _, messages = flavour.run("go", AgentContext(),
                              AgentLoopConfig(model=MODEL, get_follow_up_messages=lambda: next(follow_ups, []),
                                              convert_to_llm=convert), ScriptedModel(["first", "never"]))
    assert texts(messages) == ["user:go", "assistant:first", "user:next task", "assistant:"]
    assert messages[-1].error_message == "convert_to_llm failed: converter down"


def test_reset_while_running_raises_and_changes_nothing() -> None:
    async def main() -> None:
        started = asyncio.Event()
        release = asyncio.Event()

        @tool
        async def wait() -> str:
            """Wait for the test."""
            started.set()
            await release.wait()
            return "done"

        agent = Agent(model=MODEL, tools=[wait], stream_fn=ScriptedModel([Reply(tool_calls=(("wait", {}),)), "ok"]))
        agent.steer("queued")
        task = asyncio.ensure_future(agent.prompt("go"))
        await started.wait()
        before = (list(agent.state.messages), agent.steering_queue, agent.state.is_streaming)
        with pytest.raises(RuntimeError) as info:
            agent.reset()
        assert str(info.value) == "Agent is already processing. Wait for completion before resetting."
        assert (list(agent.state.messages), agent.steering_queue, agent.state.is_streaming) == before
        release.set()
        await task
        assert texts(agent.state.messages)[0] == "user:go"
        agent.reset()
        assert agent.state.messages == [] and not agent.has_queued_messages()

    asyncio.run(main())


class _FailingJournal(Journal):
    """A journal that cannot write: the run breaks at its first step."""

    def record(self, step: int, input: Any, effects: Any) -> None:
        raise OSError("disk full")


def test_queued_messages_an_agent_run_took_but_never_delivered_go_back_to_their_queue() -> None:
    agent = Agent(model=MODEL, stream_fn=ScriptedModel(["x"]), journal=_FailingJournal())
    agent.steer("first")
    agent.steer("second")
    asyncio.run(agent.continue_())  # takes "first" from the queue as the run's prompt; the run breaks
    assert agent.state.error == "disk full"
    assert [m.text for m in agent.steering_queue] == ["first", "second"]


# --------------------------------------------------------------------------- 3. tool timeouts


def slow_tool(name: str, seconds: float, log: list[str], timeout_ms: int | None = None) -> AgentTool:
    def slow(signal: Any = None) -> str:
        log.append(f"{name} started")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if signal is not None and signal.aborted:
                log.append(f"{name} saw its signal aborted: {signal.reason}")
                break
            time.sleep(0.005)
        time.sleep(0.05)
        log.append(f"{name} returned")
        return f"{name} finished"

    slow.__doc__ = "Take a while."
    return tool(name=name, timeout_ms=timeout_ms)(slow)


def test_a_tool_past_its_timeout_gets_the_timeout_error_at_the_deadline(flavour: Flavour) -> None:
    log: list[str] = []
    slow = slow_tool("slow", 5.0, log, timeout_ms=100)
    ends: list[float] = []
    start = time.monotonic()
    events, messages = flavour.run("go", AgentContext("", [], [slow]), AgentLoopConfig(model=MODEL),
                                   ScriptedModel([Reply(tool_calls=(("slow", {}),)), "ok"]),
                                   on_event=lambda e: ends.append(time.monotonic() - start)
                                   if e.type == "tool_execution_end" else None)
    result = messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert result.content[0].text == 'Tool "slow" timed out after 100 ms'  # type: ignore[union-attr]
    assert ends and ends[0] < 3.0  # at the deadline, not when the tool would finish (5 s)
    assert [e.type for e in events].count("tool_execution_end") == 1
    deadline = time.monotonic() + 2
    while "slow returned" not in log and time.monotonic() < deadline:
        time.sleep(0.01)
    assert log[:2] == ["slow started", "slow saw its signal aborted: the tool timed out after 100 ms"]
    assert texts(messages)[-1] == "assistant:ok"


def test_parallel_siblings_of_a_timed_out_call_are_unaffected(flavour: Flavour) -> None:
    log: list[str] = []
    slow = slow_tool("slow", 5.0, log)
    quick = slow_tool("quick", 0.2, log)
    model = ScriptedModel([Reply(tool_calls=(("slow", {}), ("quick", {}))), "ok"])
    _, messages = flavour.run("go", AgentContext("", [], [slow, quick]),
                              AgentLoopConfig(model=MODEL, tool_timeout_ms=600), model)
    assert texts(messages)[2:4] == ['tool:Tool "slow" timed out after 600 ms', "tool:quick finished"]
    assert "quick saw its signal aborted: the tool timed out after 600 ms" not in log


@pytest.mark.parametrize(("tool_ms", "config_ms", "expected"), [
    (None, None, "tool:slow finished"),         # no limit anywhere
    (None, 0, "tool:slow finished"),            # 0 is no limit
    (None, 50, 'tool:Tool "slow" timed out after 50 ms'),  # the config's limit
    (0, 50, "tool:slow finished"),              # the tool's 0 wins: no limit
    (80, 5000, 'tool:Tool "slow" timed out after 80 ms'),  # the tool's own limit wins
])
def test_which_limit_applies(flavour: Flavour, tool_ms: int | None, config_ms: int | None, expected: str) -> None:
    slow = slow_tool("slow", 0.4, [], timeout_ms=tool_ms)
    _, messages = flavour.run("go", AgentContext("", [], [slow]),
                              AgentLoopConfig(model=MODEL, tool_timeout_ms=config_ms),
                              ScriptedModel([Reply(tool_calls=(("slow", {}),)), "ok"]))
    assert texts(messages)[2] == expected


def test_an_async_tool_past_its_timeout_is_cancelled(flavour: Flavour) -> None:
    state = {"cancelled": False}

    @tool(timeout_ms=50)
    async def nap() -> str:
        """Nap."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        return "rested"

    _, messages = flavour.run("go", AgentContext("", [], [nap]), AgentLoopConfig(model=MODEL),
                              ScriptedModel([Reply(tool_calls=(("nap", {}),)), "ok"]))
    assert texts(messages)[2] == 'tool:Tool "nap" timed out after 50 ms'
    if flavour.is_async:
        assert state["cancelled"]


def test_a_timed_out_call_goes_through_after_tool_call(flavour: Flavour) -> None:
    seen: list[tuple[str, bool]] = []

    def after(ctx: Any, signal: Any) -> None:
        seen.append((ctx.result.content[0].text, ctx.is_error))

    slow = slow_tool("slow", 5.0, [], timeout_ms=30)
    flavour.run("go", AgentContext("", [], [slow]), AgentLoopConfig(model=MODEL, after_tool_call=after),
                ScriptedModel([Reply(tool_calls=(("slow", {}),)), "ok"]))
    assert seen == [('Tool "slow" timed out after 30 ms', True)]


def test_a_timed_out_run_replays_identically(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    slow = slow_tool("slow", 5.0, [], timeout_ms=40)
    ctx, cfg = AgentContext("", [], [slow]), AgentLoopConfig(model=MODEL)
    _, messages = flavour.record(path, "go", ctx, cfg, ScriptedModel([Reply(tool_calls=(("slow", {}),)), "ok"]))
    assert '"type":"tool_timed_out"' in path.read_text().replace(" ", "")
    result = replay(path)
    assert result.finished and result.messages == messages


def test_bad_timeouts_are_refused() -> None:
    with pytest.raises(ValueError) as info:
        AgentLoopConfig(model=MODEL, tool_timeout_ms=-5)
    assert str(info.value) == "tool_timeout_ms must be None or an integer >= 0 (milliseconds), not -5"
    def nothing() -> str:
        """Do nothing."""
        return ""

    with pytest.raises(ValueError) as info:
        tool(timeout_ms=1.5)(nothing)  # type: ignore[arg-type]
    assert str(info.value) == "tool 'nothing': timeout_ms must be None or an integer >= 0, not 1.5"


# --------------------------------------------------------------------------- 4. the run's signal


def test_every_hook_that_takes_a_signal_gets_the_runs_signal(flavour: Flavour) -> None:
    seen: dict[str, tuple[int, bool]] = {}

    def hook(name: str, value: Any = None) -> Any:
        def with_signal(arg: Any, signal: Any) -> Any:  # the signal after the hook's own argument
            seen[name] = (id(signal), signal.aborted)
            return arg if value == "echo" else value
        return with_signal

    def polled(name: str) -> Any:
        def with_signal(sig: Any) -> Any:  # no argument of its own: any name will do
            seen[name] = (id(sig), sig.aborted)
            return []
        return with_signal

    def keyword(name: str, value: Any) -> Any:
        def only_keyword(*, signal: Any) -> Any:
            seen[name] = (id(signal), signal.aborted)
            return value
        return only_keyword

    def prepare(args: Any, signal: Any) -> Any:
        seen["prepare_arguments"] = (id(signal), signal.aborted)
        return args

    adder = AgentTool(add.name, add.label, add.description, add.parameters, add.execute, prepare_arguments=prepare)
    config = AgentLoopConfig(
        model=MODEL,
        get_steering_messages=keyword("get_steering_messages", []),
        get_follow_up_messages=polled("get_follow_up_messages"),
        transform_context=hook("transform_context", "echo"),
        convert_to_llm=hook("convert_to_llm", "echo"),
        get_api_key=hook("get_api_key", "key"),
        before_tool_call=hook("before_tool_call"),
        after_tool_call=hook("after_tool_call"),
        prepare_next_turn=hook("prepare_next_turn"),
        should_stop_after_turn=hook("should_stop_after_turn", False),
    )
    listened: list[bool] = []

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen["stream_fn options"] = (id(options.signal), options.signal.aborted)
        return scripted(model, context, options)

    scripted = add_then("3")
    started: list[Any] = []

    def start() -> Any:
        started.append(flavour.agent_loop("go", AgentContext("", [], [adder]), config, None, stream_fn))
        return started[0]

    flavour.collect(start, on_event=lambda _: listened.append(started[0].signal.aborted))
    signal_id = id(started[0].signal)
    assert sorted(seen) == sorted([
        "get_steering_messages", "get_follow_up_messages", "transform_context", "convert_to_llm",
        "get_api_key", "before_tool_call", "after_tool_call", "prepare_next_turn",
        "should_stop_after_turn", "prepare_arguments", "stream_fn options"])
    assert {v for v in seen.values()} == {(signal_id, False)}
    assert not any(listened)


def test_the_hook_signal_is_aborted_after_abort(flavour: Flavour) -> None:
    signal = AbortSignal()
    seen: list[bool] = []

    def stop(ctx: Any, run_signal: Any) -> bool:
        seen.append(run_signal.aborted)
        signal.abort()
        seen.append(run_signal.aborted)
        return False

    flavour.run("go", AgentContext("", [], [add]), AgentLoopConfig(model=MODEL, should_stop_after_turn=stop),
                add_then("never"), signal)
    assert seen == [False, True]


def test_agent_listeners_that_take_a_signal_get_the_runs_signal() -> None:
    async def main() -> None:
        agent = Agent(model=MODEL, stream_fn=ScriptedModel(["a rather long answer"], chunk_size=2, delay=0.01))
        plain: list[str] = []
        with_signal: list[tuple[str, bool]] = []
        agent.subscribe(lambda event: plain.append(event.type))

        def listener(event: Any, signal: AbortSignal) -> None:
            with_signal.append((event.type, signal.aborted))
            if event.type == "message_update" and len(with_signal) == 8:
                agent.abort()

        agent.subscribe(listener)
        await agent.prompt("go")
        assert [t for t, _ in with_signal] == plain
        aborted_at = next(i for i, (_, a) in enumerate(with_signal) if a)
        assert aborted_at == 8 and all(a for _, a in with_signal[aborted_at:])
        assert with_signal[-1] == ("agent_end", True)
        assert agent.state.messages[-1].stop_reason == "aborted"

    asyncio.run(main())


def test_run_agent_loop_emit_may_take_the_signal(flavour: Flavour) -> None:
    got: list[bool] = []

    def emit(event: Any, signal: Any) -> None:
        got.append(isinstance(signal, AbortSignal) and not signal.aborted)

    flavour.call(flavour.run_agent_loop, "go", AgentContext(), AgentLoopConfig(model=MODEL), emit,
                 stream_fn=ScriptedModel(["hi"]))
    assert got and all(got)


# --------------------------------------------------------------------------- 5. reasoning only for models that reason


@pytest.mark.parametrize(("reasoning", "expected"), [(False, "off"), (True, "high")])
def test_the_stream_function_gets_a_thinking_level_only_for_a_model_that_reasons(
        flavour: Flavour, reasoning: bool, expected: str) -> None:
    levels: list[str] = []
    scripted = ScriptedModel(["ok"])

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        levels.append(options.thinking_level)
        return scripted(model, context, options)

    flavour.run("go", AgentContext(), AgentLoopConfig(model=Model(id="m", reasoning=reasoning),
                                                               thinking_level="high"), stream_fn)
    assert levels == [expected]


def test_hooks_run_off_the_callers_thread_in_the_sync_interpreter() -> None:
    """Hooks run on a worker thread, so that an abort can end a run that waits on one."""
    from interpreters import agent_loop

    threads: list[bool] = []

    def steering() -> list[Any]:
        threads.append(threading.current_thread() is threading.main_thread())
        return []

    agent_loop("go", AgentContext(), AgentLoopConfig(model=MODEL, get_steering_messages=steering),
               stream_fn=ScriptedModel(["ok"])).result()
    assert threads == [False, False]
