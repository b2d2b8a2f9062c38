"""The stateful ``Agent`` (interpreters.agent): the behaviours of pi-agent-core's ``Agent``.

Every test drives the agent with ``asyncio.run`` and a :class:`ScriptedModel`; tools that must be
"running" while something happens wait on an ``asyncio.Event``, so nothing depends on timing
except the abort-while-streaming tests (which use the scripted model's ``delay``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from agentcore import (
    AgentStartEvent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    Model,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from interpreters import aio as aio_module
from interpreters.agent import (
    CONTINUE_BUSY,
    PROMPT_BUSY,
    Agent,
    AgentBusyError,
    AgentState,
    SyncAgent,
)
from interpreters.streams.scripted import ScriptedModel, error, tool_call
from tests.support.clocks import clock
from tests.support.events import each_type

MODEL = Model(id="m")
TS = clock.at  # every timestamp of these runs


def make_agent(replies: Any, **options: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(replies, clock=clock)
    return Agent(model=MODEL, stream_fn=model, clock=clock, **options), model


def events_of(agent: Agent) -> list[Any]:
    """The list the agent's events go to from now on."""
    events: list[Any] = []
    agent.subscribe(events.append)
    return events


def texts(agent: Agent) -> list[tuple[str, str]]:
    """The conversation as (role, text) pairs (tool results by their text)."""
    out = []
    for m in agent.state.messages:
        out.append((m.role, m.text))
    return out


class Gate:
    """A tool that signals when it starts and finishes only when released."""

    def __init__(self, name: str = "wait") -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.calls = 0

        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
            self.calls += 1
            self.started.set()
            await self.release.wait()
            return AgentToolResult((TextContent("released"),))

        self.tool = AgentTool(name, "Wait", "Waits for the test", {"type": "object"}, execute)


SIMPLE_RUN = [
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "message_start",
    "message_update",
    "message_update",
    "message_update",
    "message_end",
    "turn_end",
    "agent_end",
]


# --------------------------------------------------------------------------- state


def test_default_state() -> None:
    agent = Agent()
    s = agent.state
    assert isinstance(s, AgentState)
    assert s.system_prompt == ""
    assert s.model is None
    assert s.thinking_level == "off"
    assert s.tools == []
    assert s.messages == []
    assert s.is_streaming is False
    assert s.stream_message is None
    assert s.pending_tool_calls == frozenset()
    assert s.error is None
    assert agent.steering_mode == "one-at-a-time"
    assert agent.follow_up_mode == "one-at-a-time"
    assert agent.has_queued_messages() is False
    assert agent.is_running is False


def test_initial_state_and_setters() -> None:
    gate = Gate()
    first = UserMessage("hello", timestamp=1)
    agent = Agent(system_prompt="Be brief.", model=MODEL, thinking_level="low", tools=[gate.tool],
                  messages=[first])
    assert agent.state.system_prompt == "Be brief."
    assert agent.state.model is MODEL
    assert agent.state.thinking_level == "low"
    assert agent.state.tools == [gate.tool]
    assert agent.state.messages == [first]

    agent.set_system_prompt("Be verbose.")
    other = Model(id="other")
    agent.set_model(other)
    agent.set_thinking_level("high")
    agent.set_tools([])
    given = [UserMessage("a", timestamp=2)]
    agent.replace_messages(given)
    assert agent.state.messages == given and agent.state.messages is not given  # a copy
    reply = AssistantMessage((TextContent("b"),))
    agent.append_message(reply)
    assert (agent.state.system_prompt, agent.state.model, agent.state.thinking_level, agent.state.tools) == (
        "Be verbose.", other, "high", [])
    assert agent.state.messages == [given[0], reply]
    agent.clear_messages()
    assert agent.state.messages == []


def test_options_are_checked() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument.*tempreature"):
        Agent(model=MODEL, tempreature=0.5)
    with pytest.raises(ValueError, match="steering_mode must be 'one-at-a-time' or 'all'"):
        Agent(steering_mode="some")  # type: ignore[arg-type]
    agent = Agent()
    with pytest.raises(ValueError, match="follow_up_mode"):
        agent.follow_up_mode = "two"  # type: ignore[assignment]
    agent.follow_up_mode = "all"
    assert agent.follow_up_mode == "all"


def test_options_reach_the_stream_function() -> None:
    agent, model = make_agent(["ok"], session_id="session-abc", thinking_budgets={"low": 512},
                              temperature=0.25, max_tokens=99)
    agent.set_model(Model(id="thinker", reasoning=True))
    agent.set_thinking_level("medium")
    asyncio.run(agent.prompt("hello"))
    options = model.requests[0].options
    assert (options.session_id, options.thinking_budgets, options.temperature, options.max_tokens,
            options.thinking_level) == ("session-abc", {"low": 512}, 0.25, 99, "medium")
    agent.session_id = "session-def"
    asyncio.run(agent.prompt("again"))
    assert model.requests[1].options.session_id == "session-def"


def test_a_model_that_does_not_reason_gets_no_thinking_level() -> None:
    agent, model = make_agent(["ok"])
    agent.set_thinking_level("high")  # MODEL does not reason
    asyncio.run(agent.prompt("hello"))
    assert model.requests[0].options.thinking_level == "off"


def test_subscribe_emits_nothing_and_setters_emit_nothing() -> None:
    agent = Agent()
    events = events_of(agent)
    agent.set_system_prompt("x")
    agent.steer("y")
    assert events == []


# --------------------------------------------------------------------------- prompt


def test_prompt_text_events_and_messages() -> None:
    agent, model = make_agent(["Hello!"], system_prompt="Be brief.")
    events = events_of(agent)
    asyncio.run(agent.prompt("Hi"))
    assert each_type(events) == SIMPLE_RUN
    assert [e.assistant_message_event.type for e in events if e.type == "message_update"] == [
        "text_start", "text_delta", "text_end"]
    assert agent.state.messages == [UserMessage("Hi", timestamp=TS), events[8].message]
    assert texts(agent) == [("user", "Hi"), ("assistant", "Hello!")]
    assert events[-1].messages == tuple(agent.state.messages)
    assert model.requests[0].context.system_prompt == "Be brief."
    assert agent.state.is_streaming is False and agent.state.error is None


def test_prompt_with_images() -> None:
    agent, model = make_agent(["A cat."])
    image = ImageContent("aGVsbG8=", "image/png")
    asyncio.run(agent.prompt("What is this?", images=[image]))
    expected = UserMessage((TextContent("What is this?"), image), timestamp=TS)
    assert agent.state.messages[0] == expected
    assert list(model.requests[0].context.messages) == [expected]
    with pytest.raises(TypeError, match="images can only be given with a text prompt"):
        asyncio.run(agent.prompt(UserMessage("x"), images=[image]))


def test_prompt_with_a_message_and_a_message_list() -> None:
    agent, model = make_agent(["one", "two"])
    events = events_of(agent)
    asyncio.run(agent.prompt(UserMessage("single", timestamp=5)))
    asyncio.run(agent.prompt([UserMessage("first", timestamp=6), UserMessage("second", timestamp=7)]))
    assert texts(agent) == [("user", "single"), ("assistant", "one"), ("user", "first"), ("user", "second"),
                            ("assistant", "two")]
    second_run = events[len(SIMPLE_RUN):]
    assert each_type(second_run)[:6] == ["agent_start", "turn_start", "message_start", "message_end",
                                         "message_start", "message_end"]
    assert [m.text for m in model.requests[1].context.messages] == ["single", "one", "first", "second"]
    with pytest.raises(ValueError, match="at least one message"):
        asyncio.run(agent.prompt([]))


def test_prompt_without_model() -> None:
    agent = Agent(stream_fn=ScriptedModel(["x"]))
    with pytest.raises(RuntimeError, match="No model configured"):
        asyncio.run(agent.prompt("hi"))
    assert agent.state.messages == [] and agent.is_running is False


def test_history_is_sent_on_the_next_prompt() -> None:
    agent, model = make_agent(["first answer", "second answer"])
    asyncio.run(agent.prompt("one"))
    asyncio.run(agent.prompt("two"))
    assert [m.text for m in model.requests[1].context.messages] == ["one", "first answer", "two"]


# --------------------------------------------------------------------------- subscribers


def test_subscribe_and_unsubscribe() -> None:
    agent, _ = make_agent(["a", "b"])
    first: list[Any] = []
    second: list[Any] = []
    unsubscribe = agent.subscribe(first.append)
    agent.subscribe(second.append)
    asyncio.run(agent.prompt("1"))
    unsubscribe()
    unsubscribe()  # harmless twice
    asyncio.run(agent.prompt("2"))
    assert each_type(first) == SIMPLE_RUN
    assert each_type(second) == SIMPLE_RUN + SIMPLE_RUN


def test_async_listener_is_awaited() -> None:
    agent, _ = make_agent(["a"])
    seen: list[str] = []

    async def listener(event: Any) -> None:
        await asyncio.sleep(0)
        seen.append(event.type)

    agent.subscribe(listener)
    asyncio.run(agent.prompt("1"))
    assert seen == SIMPLE_RUN


def test_listener_that_raises_is_logged_and_others_still_get_events(caplog: pytest.LogCaptureFixture) -> None:
    agent, _ = make_agent(["fine"])

    def bad(event: Any) -> None:
        raise RuntimeError(f"listener broke on {event.type}")

    agent.subscribe(bad)
    events = events_of(agent)
    with caplog.at_level(logging.ERROR, logger="agentcore"):
        asyncio.run(agent.prompt("go"))
    assert each_type(events) == SIMPLE_RUN
    assert texts(agent) == [("user", "go"), ("assistant", "fine")]
    assert agent.state.error is None
    assert len([r for r in caplog.records if "listener" in r.getMessage()]) == len(SIMPLE_RUN)


def test_state_is_updated_before_listeners_see_the_event() -> None:
    gate = Gate()
    agent, _ = make_agent([tool_call("wait", {}, id="t1"), "Done."], tools=[gate.tool])
    gate.release.set()
    seen: list[tuple[str, str | None, bool, int, frozenset[str]]] = []

    def listener(event: Any) -> None:
        s = agent.state
        stream = s.stream_message
        seen.append((event.type, None if stream is None else stream.role, s.is_streaming, len(s.messages),
                     s.pending_tool_calls))
        if event.type == "message_update":
            assert stream is event.message

    agent.subscribe(listener)
    asyncio.run(agent.prompt("go"))
    none: frozenset[str] = frozenset()
    t1 = frozenset({"t1"})
    assert seen == [
        ("agent_start", None, True, 0, none),
        ("turn_start", None, True, 0, none),
        ("message_start", None, True, 0, none),  # a user prompt is not a stream message
        ("message_end", None, True, 1, none),
        ("message_start", "assistant", True, 1, none),
        ("message_update", "assistant", True, 1, none),
        ("message_update", "assistant", True, 1, none),
        ("message_update", "assistant", True, 1, none),
        ("message_end", None, True, 2, none),
        ("tool_execution_start", None, True, 2, t1),
        ("tool_execution_end", None, True, 2, none),
        ("message_start", None, True, 2, none),
        ("message_end", None, True, 3, none),
        ("turn_end", None, True, 3, none),
        ("turn_start", None, True, 3, none),
        ("message_start", "assistant", True, 3, none),
        ("message_update", "assistant", True, 3, none),
        ("message_update", "assistant", True, 3, none),
        ("message_update", "assistant", True, 3, none),
        ("message_end", None, True, 4, none),
        ("turn_end", None, True, 4, none),
        ("agent_end", None, False, 4, none),
    ]
    assert agent.state.stream_message is None and agent.state.is_streaming is False


def test_pending_tool_calls_while_a_tool_runs() -> None:
    async def scenario() -> None:
        gate = Gate()
        agent, _ = make_agent([tool_call("wait", {}, id="t1"), "Done."], tools=[gate.tool])
        task = asyncio.create_task(agent.prompt("go"))
        await gate.started.wait()
        assert agent.state.pending_tool_calls == frozenset({"t1"})
        assert agent.state.is_streaming is True and agent.state.stream_message is None
        gate.release.set()
        await task
        assert agent.state.pending_tool_calls == frozenset()

    asyncio.run(scenario())


# --------------------------------------------------------------------------- steering and follow-ups


async def _steer_during_tool(mode: str, replies: list[Any]) -> tuple[Agent, ScriptedModel, list[Any]]:
    gate = Gate()
    agent, model = make_agent(replies, tools=[gate.tool], steering_mode=mode)
    events = events_of(agent)
    task = asyncio.create_task(agent.prompt("go"))
    await gate.started.wait()
    agent.steer(UserMessage("steer A", timestamp=2))
    agent.steer("steer B")
    assert agent.has_queued_messages()
    gate.release.set()
    await task
    return agent, model, events


def test_steering_while_a_tool_runs_one_at_a_time() -> None:
    agent, model, events = asyncio.run(_steer_during_tool("one-at-a-time",
                                                          [tool_call("wait", {}), "after A", "after B"]))
    assert texts(agent) == [
        ("user", "go"), ("assistant", ""), ("toolResult", "released"),
        ("user", "steer A"), ("assistant", "after A"),
        ("user", "steer B"), ("assistant", "after B"),
    ]
    assert agent.state.messages[5] == UserMessage("steer B", timestamp=TS)
    # the tool finished before the steering message was delivered, at the start of the next turn
    tail = each_type(events)[each_type(events).index("tool_execution_end"):]
    assert tail[:8] == ["tool_execution_end", "message_start", "message_end", "turn_end",
                        "turn_start", "message_start", "message_end", "message_start"]
    assert each_type(events).count("turn_start") == 3
    assert [m.text for m in model.requests[1].context.messages][-2:] == ["released", "steer A"]
    assert not agent.has_queued_messages()


def test_steering_while_a_tool_runs_all_mode() -> None:
    agent, model, events = asyncio.run(_steer_during_tool("all", [tool_call("wait", {}), "after A and B"]))
    assert texts(agent) == [
        ("user", "go"), ("assistant", ""), ("toolResult", "released"),
        ("user", "steer A"), ("user", "steer B"), ("assistant", "after A and B"),
    ]
    assert model.calls == 2
    assert each_type(events).count("turn_start") == 2


def test_steering_queued_before_prompt_is_taken_at_the_start() -> None:
    agent, model = make_agent(["answer"])
    agent.steer("also this")
    asyncio.run(agent.prompt("question"))
    assert texts(agent) == [("user", "question"), ("user", "also this"), ("assistant", "answer")]
    assert model.calls == 1


def test_follow_up_runs_after_the_agent_would_stop() -> None:
    async def scenario() -> tuple[Agent, list[Any]]:
        gate = Gate()
        agent, _ = make_agent([tool_call("wait", {}), "done", "follow-up answer"], tools=[gate.tool])
        events = events_of(agent)
        task = asyncio.create_task(agent.prompt("go"))
        await gate.started.wait()
        agent.follow_up("one more thing")
        gate.release.set()
        await task
        return agent, events

    agent, events = asyncio.run(scenario())
    # not delivered after the tool result (that is steering), but after the final answer
    assert texts(agent) == [
        ("user", "go"), ("assistant", ""), ("toolResult", "released"),
        ("assistant", "done"), ("user", "one more thing"), ("assistant", "follow-up answer"),
    ]
    assert each_type(events).count("agent_end") == 1
    assert each_type(events).count("turn_start") == 3


def test_follow_up_modes() -> None:
    agent, model = make_agent(["r1", "r2", "r3"])
    agent.follow_up("f1")
    agent.follow_up("f2")
    # one-at-a-time: the prompt's own answer, then f1 and f2 each get their own turn
    asyncio.run(agent.prompt("p"))
    assert texts(agent) == [("user", "p"), ("assistant", "r1"), ("user", "f1"), ("assistant", "r2"),
                            ("user", "f2"), ("assistant", "r3")]

    agent2, model2 = make_agent(["r1", "r2"], follow_up_mode="all")
    agent2.follow_up("f1")
    agent2.follow_up("f2")
    asyncio.run(agent2.prompt("p"))
    assert texts(agent2) == [("user", "p"), ("assistant", "r1"), ("user", "f1"), ("user", "f2"),
                             ("assistant", "r2")]


def test_clear_queues() -> None:
    agent = Agent()
    agent.steer("s")
    agent.follow_up("f")
    assert [m.text for m in agent.steering_queue] == ["s"]
    assert [m.text for m in agent.follow_up_queue] == ["f"]
    assert agent.state.messages == []  # queued, not in the conversation
    agent.clear_steering_queue()
    assert agent.has_queued_messages()
    agent.clear_follow_up_queue()
    assert not agent.has_queued_messages()
    agent.steer("s")
    agent.follow_up("f")
    agent.clear_all_queues()
    assert not agent.has_queued_messages()


# --------------------------------------------------------------------------- continue_


def _assistant_tail() -> list[Any]:
    return [UserMessage("Initial", timestamp=1),
            AssistantMessage((TextContent("Initial response"),), stop_reason="stop", timestamp=2)]


def test_continue_from_assistant_with_queued_steering() -> None:
    agent, model = make_agent(["r1", "r2"])
    agent.replace_messages(_assistant_tail())
    agent.steer("s1")
    agent.steer("s2")
    events = events_of(agent)
    asyncio.run(agent.continue_())
    # s1 is the prompt of the run; the initial steering poll is skipped; s2 comes after the turn
    assert texts(agent) == [("user", "Initial"), ("assistant", "Initial response"), ("user", "s1"),
                            ("assistant", "r1"), ("user", "s2"), ("assistant", "r2")]
    assert each_type(events)[:5] == ["agent_start", "turn_start", "message_start", "message_end", "message_start"]
    assert events[2].message.text == "s1"
    assert [m.text for m in model.requests[0].context.messages] == ["Initial", "Initial response", "s1"]
    assert not agent.has_queued_messages()


def test_continue_from_assistant_with_queued_follow_up() -> None:
    agent, model = make_agent(["Done."])
    agent.replace_messages(_assistant_tail())
    agent.follow_up(UserMessage((TextContent("Queued follow-up"),), timestamp=3))
    events = events_of(agent)
    asyncio.run(agent.continue_())
    assert texts(agent) == [("user", "Initial"), ("assistant", "Initial response"),
                            ("user", "Queued follow-up"), ("assistant", "Done.")]
    assert each_type(events) == SIMPLE_RUN


def test_continue_from_assistant_with_nothing_queued_raises() -> None:
    agent, model = make_agent(["never"])
    agent.replace_messages(_assistant_tail())
    events = events_of(agent)
    with pytest.raises(ValueError, match="^Cannot continue from message role: assistant$"):
        asyncio.run(agent.continue_())
    assert events == [] and model.calls == 0 and agent.is_running is False


def test_continue_with_no_messages() -> None:
    agent, _ = make_agent(["hello"])
    with pytest.raises(ValueError, match="^No messages to continue from$"):
        asyncio.run(agent.continue_())
    agent.follow_up("start here")
    asyncio.run(agent.continue_())
    assert texts(agent) == [("user", "start here"), ("assistant", "hello")]


def test_continue_from_a_user_message() -> None:
    agent, model = make_agent(["retry"])
    agent.replace_messages([UserMessage("question", timestamp=1)])
    events = events_of(agent)
    asyncio.run(agent.continue_())
    assert texts(agent) == [("user", "question"), ("assistant", "retry")]
    assert each_type(events) == ["agent_start", "turn_start", "message_start", "message_update",
                                 "message_update", "message_update", "message_end", "turn_end", "agent_end"]


# --------------------------------------------------------------------------- one run at a time


def test_prompt_and_continue_while_running_raise() -> None:
    async def scenario() -> None:
        gate = Gate()
        agent, _ = make_agent([tool_call("wait", {}), "done"], tools=[gate.tool])
        task = asyncio.create_task(agent.prompt("first"))
        await gate.started.wait()
        assert agent.state.is_streaming is True and agent.is_running is True
        with pytest.raises(AgentBusyError) as busy:
            await agent.prompt("second")
        assert str(busy.value) == PROMPT_BUSY
        assert "steer() or follow_up()" in str(busy.value)
        with pytest.raises(AgentBusyError) as busy_continue:
            await agent.continue_()
        assert str(busy_continue.value) == CONTINUE_BUSY
        gate.release.set()
        await task
        assert texts(agent) == [("user", "first"), ("assistant", ""), ("toolResult", "released"),
                                ("assistant", "done")]

    asyncio.run(scenario())


def test_prompt_from_agent_end_listener_is_refused() -> None:
    agent, _ = make_agent(["a", "b"])
    errors: list[str] = []

    async def listener(event: Any) -> None:
        if event.type == "agent_end":
            try:
                await agent.prompt("again")
            except AgentBusyError as exc:
                errors.append(str(exc))

    agent.subscribe(listener)
    asyncio.run(agent.prompt("once"))
    assert errors == [PROMPT_BUSY]
    assert texts(agent) == [("user", "once"), ("assistant", "a")]


def test_wait_for_idle() -> None:
    async def scenario() -> None:
        agent, _ = make_agent(["one"])
        await agent.wait_for_idle()  # idle: returns at once
        gate = Gate()
        agent, _ = make_agent([tool_call("wait", {}), "done"], tools=[gate.tool])
        task = asyncio.create_task(agent.prompt("go"))
        await gate.started.wait()
        waiter = asyncio.create_task(agent.wait_for_idle())
        await asyncio.sleep(0.01)
        assert not waiter.done()
        gate.release.set()
        await waiter
        assert agent.state.is_streaming is False and agent.is_running is False
        assert texts(agent)[-1] == ("assistant", "done")
        await task

    asyncio.run(scenario())


# --------------------------------------------------------------------------- abort and failures


def test_abort_mid_stream() -> None:
    async def scenario() -> None:
        model = ScriptedModel(["a rather long answer that streams slowly", "after abort"],
                              chunk_size=1, delay=0.002, clock=clock)
        agent = Agent(model=MODEL, stream_fn=model, clock=clock)
        events = events_of(agent)
        updates = 0

        def on_event(event: Any) -> None:
            nonlocal updates
            if event.type == "message_update":
                updates += 1
                if updates == 5:
                    agent.abort()

        agent.subscribe(on_event)
        await agent.prompt("go")
        last = agent.state.messages[-1]
        assert last.role == "assistant" and last.stop_reason == "aborted"
        assert last.error_message == "Request was aborted"
        assert agent.state.error == "Request was aborted"
        assert agent.state.is_streaming is False and agent.state.stream_message is None
        assert each_type(events)[-3:] == ["message_end", "turn_end", "agent_end"]
        assert each_type(events).count("agent_end") == 1
        # idle again: a new prompt works and clears the error
        await agent.prompt("again")
        assert texts(agent)[-1] == ("assistant", "after abort")
        assert agent.state.error is None

    asyncio.run(scenario())


def test_abort_mid_stream_with_a_slow_async_listener() -> None:
    """The asyncio interpreter aborts a stream by cancelling the task that iterates it; the
    agent must not let that cancellation land in an async listener (or reach the caller)."""

    async def scenario() -> None:
        model = ScriptedModel(["a rather long answer that streams slowly"], chunk_size=1, delay=0.001,
                              clock=clock)
        agent = Agent(model=MODEL, stream_fn=model, clock=clock)
        events = events_of(agent)
        updates = 0
        finished_listener_calls = 0

        async def slow_listener(event: Any) -> None:
            nonlocal updates, finished_listener_calls
            if event.type == "message_update":
                updates += 1
                if updates == 3:
                    asyncio.get_running_loop().call_later(0.001, agent.abort)
            await asyncio.sleep(0.005)  # e.g. a websocket send
            finished_listener_calls += 1

        agent.subscribe(slow_listener)
        await agent.prompt("go")  # must not raise CancelledError
        last = agent.state.messages[-1]
        assert (last.stop_reason, last.error_message) == ("aborted", "Request was aborted")
        assert each_type(events)[-1] == "agent_end" and each_type(events).count("agent_end") == 1
        assert finished_listener_calls == len(events)  # no listener call was cut short
        assert agent.is_running is False

    asyncio.run(scenario())


def test_abort_while_a_tool_runs() -> None:
    async def scenario() -> None:
        started = asyncio.Event()

        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
            started.set()
            await signal.wait_async()
            raise RuntimeError("tool stopped: aborted")

        tool = AgentTool("slow", "Slow", "never ends", {"type": "object"}, execute)
        agent, model = make_agent([tool_call("slow", {}), "never"], tools=[tool])
        events = events_of(agent)
        task = asyncio.create_task(agent.prompt("go"))
        await started.wait()
        agent.abort()
        await agent.wait_for_idle()
        await task
        assert each_type(events)[-1] == "agent_end" and each_type(events).count("agent_end") == 1
        assert model.calls == 1
        assert agent.state.is_streaming is False and agent.state.pending_tool_calls == frozenset()
        result = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
        assert len(result) == 1 and result[0].is_error

    asyncio.run(scenario())


def test_cancelled_prompt_task_leaves_the_agent_idle() -> None:
    async def scenario() -> None:
        gate = Gate()
        agent, _ = make_agent([tool_call("wait", {}), "never"], tools=[gate.tool])
        events = events_of(agent)
        task = asyncio.create_task(agent.prompt("go"))
        await gate.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert each_type(events)[-1] == "agent_end"
        last = agent.state.messages[-1]
        assert (last.role, last.stop_reason, last.error_message) == ("assistant", "aborted", "Agent run was cancelled")
        assert agent.state.is_streaming is False and agent.is_running is False
        assert agent.state.pending_tool_calls == frozenset()
        await agent.wait_for_idle()

    asyncio.run(scenario())


def test_abort_when_idle_does_nothing() -> None:
    agent = Agent()
    agent.abort()
    assert agent.state.error is None


def test_error_reply_sets_state_error() -> None:
    agent, _ = make_agent([error("boom"), "fine"])
    events = events_of(agent)
    asyncio.run(agent.prompt("go"))
    last = agent.state.messages[-1]
    assert (last.role, last.stop_reason, last.error_message) == ("assistant", "error", "boom")
    assert agent.state.error == "boom"
    assert each_type(events)[-2:] == ["turn_end", "agent_end"]
    asyncio.run(agent.prompt("again"))
    assert agent.state.error is None


def _failing_loop(fail_with: BaseException, abort: bool = False) -> Callable[..., Any]:
    def fake_agent_loop(prompts: Any, context: Any, config: Any, signal: Any, stream_fn: Any, **kw: Any) -> Any:
        async def events() -> AsyncIterator[Any]:
            yield AgentStartEvent()
            if abort:
                signal.abort()
            raise fail_with

        return events()

    return fake_agent_loop


def test_unexpected_failure_becomes_an_error_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aio_module, "agent_loop", _failing_loop(RuntimeError("kaput")))
    agent, _ = make_agent(["unused"])
    events = events_of(agent)
    asyncio.run(agent.prompt("go"))
    assert each_type(events) == ["agent_start", "agent_end"]
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert (last.stop_reason, last.error_message, last.model, last.timestamp) == ("error", "kaput", "m", TS)
    assert events[-1].messages == (last,)
    assert agent.state.error == "kaput"
    assert agent.state.is_streaming is False and agent.is_running is False


def test_unexpected_failure_after_abort_is_aborted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aio_module, "agent_loop", _failing_loop(RuntimeError("gone"), abort=True))
    agent, _ = make_agent(["unused"])
    asyncio.run(agent.prompt("go"))
    assert agent.state.messages[-1].stop_reason == "aborted"
    assert agent.state.error == "gone"


def test_reset() -> None:
    agent, _ = make_agent([error("bad")])
    asyncio.run(agent.prompt("go"))
    agent.steer("s")
    agent.follow_up("f")
    assert agent.state.error == "bad"
    agent.reset()
    s = agent.state
    assert (s.messages, s.error, s.is_streaming, s.stream_message, s.pending_tool_calls) == (
        [], None, False, None, frozenset())
    assert not agent.has_queued_messages()
    assert s.model is MODEL  # configuration is kept


# --------------------------------------------------------------------------- SyncAgent


def test_sync_agent_prompt_and_state() -> None:
    model = ScriptedModel(["Hi!", "Bye!"], clock=clock)
    with SyncAgent(model=MODEL, stream_fn=model, clock=clock) as agent:
        events: list[Any] = []
        agent.subscribe(events.append)
        agent.prompt("Hello")
        agent.follow_up("and goodbye")
        assert agent.has_queued_messages()
        agent.continue_()
        assert [(m.role, m.text) for m in agent.state.messages] == [
            ("user", "Hello"), ("assistant", "Hi!"), ("user", "and goodbye"), ("assistant", "Bye!")]
        assert each_type(events) == SIMPLE_RUN + SIMPLE_RUN


def test_sync_agent_steer_and_abort_from_other_threads() -> None:
    started = threading.Event()
    release = threading.Event()

    def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        started.set()
        release.wait(5)
        return AgentToolResult((TextContent("ok"),))

    tool = AgentTool("block", "Block", "blocks", {"type": "object"}, execute)
    model = ScriptedModel([tool_call("block", {}), "after steer"], clock=clock)
    agent = SyncAgent(model=MODEL, stream_fn=model, tools=[tool], clock=clock)
    try:
        runner = threading.Thread(target=agent.prompt, args=("go",))
        runner.start()
        assert started.wait(5)
        agent.steer("change of plan")
        release.set()
        runner.join(5)
        assert [m.text for m in agent.state.messages][-2:] == ["change of plan", "after steer"]
    finally:
        agent.close()


def test_sync_agent_blocking_call_from_its_own_thread_is_refused() -> None:
    model = ScriptedModel(["a"], clock=clock)
    agent = SyncAgent(model=MODEL, stream_fn=model, clock=clock)
    errors: list[str] = []

    def listener(event: Any) -> None:
        if event.type == "agent_end":
            try:
                agent.prompt("nested")
            except RuntimeError as exc:
                errors.append(str(exc))

    agent.subscribe(listener)
    agent.prompt("go")
    agent.close()
    assert len(errors) == 1 and "agent's own thread" in errors[0]
    with pytest.raises(RuntimeError, match="closed"):
        agent.prompt("after close")


def test_continue_without_a_model_keeps_the_queued_messages() -> None:
    from interpreters.agent import Agent

    agent = Agent(messages=[UserMessage("q", timestamp=0), AssistantMessage((TextContent("a"),))])
    agent.steer(UserMessage("queued", timestamp=1))
    with pytest.raises(RuntimeError):
        asyncio.run(agent.continue_())
    assert [m.text for m in agent.steering_queue] == ["queued"]


def test_a_sync_agent_dropped_without_close_does_not_leave_its_thread() -> None:
    import gc
    import threading
    import time

    from interpreters.agent import SyncAgent

    before = sum(t.name == "agentcore-agent" for t in threading.enumerate())
    for _ in range(5):
        SyncAgent()
    gc.collect()
    deadline = time.monotonic() + 2
    while sum(t.name == "agentcore-agent" for t in threading.enumerate()) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sum(t.name == "agentcore-agent" for t in threading.enumerate()) == before


def test_sync_agent_is_the_twin_of_agent_member_for_member() -> None:
    def public(cls: type) -> set[str]:
        return {name for name in dir(cls) if not name.startswith("_")}

    assert public(Agent) - public(SyncAgent) == set()
    assert public(SyncAgent) - public(Agent) == {"close"}


def test_sync_agent_twin_members_reach_the_agent() -> None:
    with SyncAgent(model=MODEL, stream_fn=ScriptedModel(["Hi!"], clock=clock), clock=clock) as agent:
        assert (agent.steering_mode, agent.follow_up_mode, agent.is_running) == ("one-at-a-time", "one-at-a-time",
                                                                                  False)
        agent.steering_mode = "all"
        agent.follow_up_mode = "all"
        assert (agent.agent.steering_mode, agent.agent.follow_up_mode) == ("all", "all")
        with pytest.raises(ValueError, match="steering_mode must be 'one-at-a-time' or 'all', not 'some'"):
            agent.steering_mode = "some"  # type: ignore[assignment]
        agent.prompt("Hello")
        assert [m.role for m in agent.state.messages] == ["user", "assistant"]
        agent.clear_messages()
        assert agent.state.messages == [] and agent.decisions == {}


def test_the_agent_classes_keep_their_public_paths() -> None:
    import importlib
    import pickle
    import typing

    import interpreters

    agent_module = importlib.import_module("interpreters.agent")
    for cls in (Agent, AgentBusyError, AgentState, SyncAgent):
        assert getattr(agent_module, cls.__name__) is cls
        assert getattr(interpreters, cls.__name__, cls) is cls
    assert AgentBusyError.__module__ == "interpreters.agent"
    assert isinstance(pickle.loads(pickle.dumps(AgentBusyError(PROMPT_BUSY))), AgentBusyError)
    state = pickle.loads(pickle.dumps(AgentState(system_prompt="s")))
    assert isinstance(state, AgentState) and state.system_prompt == "s"
    assert typing.get_type_hints(AgentState)["model"] == Model | None
