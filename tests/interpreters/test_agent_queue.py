"""Editing and removing one queued message: pi-agent-core's queue API, ported.

pi-agent-core's ``Agent`` had ``updateQueuedUserMessageByTimestamp(timestamp, text)`` and
``removeQueuedUserMessageByTimestamp(timestamp)`` (its test file ``agent-queue.test.ts``, one
queue, ``queueMessage``/``getMessageQueue``). The Python ``Agent`` has two queues (steering and
follow-up): each ported test runs once per queue (``queue`` fixture: how a message is queued and
how that queue is read). pi's twelfth test of that file, ``clearMessageQueue removes all
messages``, is ``test_clear_queues`` in test_agent.py.

After the ported tests, what pi's coding agent tested on top of that API (a message the loop
has already taken can no longer be edited: the edit returns False) and what the Python agent
adds: runs that deliver an edited message, ``SyncAgent`` from another thread, bad arguments, and
distinct timestamps for messages queued from text in the same millisecond.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agentcore import (
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    Model,
    TextContent,
    UserMessage,
)
from interpreters.agent import Agent, SyncAgent
from interpreters.streams.scripted import ScriptedModel, tool_call
from tests.support.clocks import clock

MODEL = Model(id="m")
NOW = 1_700_000_000_000


@dataclass(frozen=True)
class Queue:
    """One of the agent's queues: how a message goes in, and what is in it."""

    name: str
    put: Callable[[Agent, Any], Any]
    items: Callable[[Agent], tuple[Any, ...]]

    def __str__(self) -> str:
        return self.name


STEERING = Queue("steering", Agent.steer, lambda a: a.steering_queue)
FOLLOW_UP = Queue("follow_up", Agent.follow_up, lambda a: a.follow_up_queue)


@pytest.fixture(params=[STEERING, FOLLOW_UP], ids=str)
def queue(request: pytest.FixtureRequest) -> Queue:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def agent() -> Agent:
    return Agent(model=MODEL, system_prompt="test", tools=[])


def user(text: str, timestamp: int) -> UserMessage:
    return UserMessage((TextContent(text),), timestamp=timestamp)


# --------------------------------------------------------------------------- ported: update


def test_updates_message_with_matching_timestamp(agent: Agent, queue: Queue) -> None:
    queue.put(agent, user("original", NOW))

    assert agent.update_queued_user_message_by_timestamp(NOW, "edited") is True

    items = queue.items(agent)
    assert len(items) == 1
    assert items[0].role == "user"
    assert items[0].content == (TextContent("edited"),)


def test_update_returns_false_for_non_existent_timestamp(agent: Agent, queue: Queue) -> None:
    assert agent.update_queued_user_message_by_timestamp(99999, "edited") is False


def test_update_ignores_non_user_messages_with_same_timestamp(agent: Agent, queue: Queue) -> None:
    queue.put(agent, AssistantMessage((TextContent("original"),), timestamp=NOW))

    assert agent.update_queued_user_message_by_timestamp(NOW, "edited") is False

    items = queue.items(agent)  # not modified
    assert len(items) == 1
    assert items[0].content == (TextContent("original"),)


def test_update_preserves_timestamp(agent: Agent, queue: Queue) -> None:
    queue.put(agent, user("original", NOW))

    agent.update_queued_user_message_by_timestamp(NOW, "edited")

    assert queue.items(agent)[0].timestamp == NOW


def test_updates_only_the_first_matching_message(agent: Agent, queue: Queue) -> None:
    queue.put(agent, user("first", NOW))
    queue.put(agent, user("second", NOW + 1))

    assert agent.update_queued_user_message_by_timestamp(NOW, "updated first") is True

    items = queue.items(agent)
    assert len(items) == 2
    assert items[0].content == (TextContent("updated first"),)
    assert items[1].content == (TextContent("second"),)


# --------------------------------------------------------------------------- ported: remove


def test_removes_message_with_matching_timestamp(agent: Agent, queue: Queue) -> None:
    queue.put(agent, user("to delete", NOW))

    assert agent.remove_queued_user_message_by_timestamp(NOW) is True

    assert len(queue.items(agent)) == 0


def test_remove_returns_false_for_non_existent_timestamp(agent: Agent, queue: Queue) -> None:
    assert agent.remove_queued_user_message_by_timestamp(99999) is False


def test_remove_ignores_non_user_messages_with_same_timestamp(agent: Agent, queue: Queue) -> None:
    queue.put(agent, AssistantMessage((TextContent("assistant msg"),), timestamp=NOW))

    assert agent.remove_queued_user_message_by_timestamp(NOW) is False

    assert len(queue.items(agent)) == 1


def test_removes_only_the_first_matching_message(agent: Agent, queue: Queue) -> None:
    queue.put(agent, user("first", NOW))
    queue.put(agent, user("second", NOW + 1))

    assert agent.remove_queued_user_message_by_timestamp(NOW) is True

    items = queue.items(agent)
    assert len(items) == 1
    assert items[0].content == (TextContent("second"),)


def test_removes_middle_message_correctly(agent: Agent, queue: Queue) -> None:
    queue.put(agent, user("first", NOW))
    queue.put(agent, user("second", NOW + 1))
    queue.put(agent, user("third", NOW + 2))

    assert agent.remove_queued_user_message_by_timestamp(NOW + 1) is True

    items = queue.items(agent)
    assert len(items) == 2
    assert items[0].content == (TextContent("first"),)
    assert items[1].content == (TextContent("third"),)


# --------------------------------------------------------------------------- ported: together


def test_can_update_and_then_remove_the_same_message(agent: Agent, queue: Queue) -> None:
    queue.put(agent, user("original", NOW))

    assert agent.update_queued_user_message_by_timestamp(NOW, "updated") is True
    assert agent.remove_queued_user_message_by_timestamp(NOW) is True

    assert len(queue.items(agent)) == 0


# --------------------------------------------------------------------------- both queues, the message's form


def test_the_steering_queue_is_searched_before_the_follow_up_queue(agent: Agent) -> None:
    agent.follow_up(user("later", NOW))
    agent.steer(user("sooner", NOW))
    assert agent.update_queued_user_message_by_timestamp(NOW, "edited") is True
    assert [m.text for m in agent.steering_queue] == ["edited"]
    assert [m.text for m in agent.follow_up_queue] == ["later"]
    assert agent.remove_queued_user_message_by_timestamp(NOW) is True
    assert agent.steering_queue == ()
    assert agent.remove_queued_user_message_by_timestamp(NOW) is True
    assert agent.follow_up_queue == ()
    assert agent.remove_queued_user_message_by_timestamp(NOW) is False


def test_an_edit_keeps_the_message_form_and_its_other_fields(agent: Agent) -> None:
    picture = ImageContent("aGk=", "image/png")
    agent.steer(UserMessage("plain text", timestamp=NOW))
    agent.steer(UserMessage((TextContent("look"), picture), timestamp=NOW + 1))
    assert agent.update_queued_user_message_by_timestamp(NOW, "new text")
    assert agent.update_queued_user_message_by_timestamp(NOW + 1, "no picture now")
    assert list(agent.steering_queue) == [
        UserMessage("new text", timestamp=NOW),  # text stays text
        UserMessage((TextContent("no picture now"),), timestamp=NOW + 1),  # the text replaces all blocks
    ]


def test_messages_queued_as_text_in_one_millisecond_get_distinct_timestamps() -> None:
    agent = Agent(model=MODEL, clock=clock)  # a clock that never moves
    first = agent.steer("first")
    second = agent.follow_up("second")
    third = agent.steer("third")
    assert [first.timestamp, second.timestamp, third.timestamp] == [clock.at, clock.at + 1, clock.at + 2]
    assert list(agent.steering_queue) == [first, third] and list(agent.follow_up_queue) == [second]
    assert agent.update_queued_user_message_by_timestamp(second.timestamp, "2nd")
    assert [m.text for m in agent.follow_up_queue] == ["2nd"]
    assert [m.text for m in agent.steering_queue] == ["first", "third"]


def test_steer_and_follow_up_return_the_message_they_queued() -> None:
    agent = Agent(model=MODEL, clock=clock)
    given = UserMessage("mine", timestamp=7)
    assert agent.steer(given) is given
    assert agent.follow_up(given) is given


@pytest.mark.parametrize(("timestamp", "text", "problem"), [
    ("1000", "x", "timestamp must be an int (a message's timestamp in ms), not str"),
    (True, "x", "timestamp must be an int (a message's timestamp in ms), not bool"),
    (1000, None, "text must be a str, not NoneType"),
    (1000, ["x"], "text must be a str, not list"),
])
def test_bad_arguments_are_refused_and_change_nothing(timestamp: Any, text: Any, problem: str) -> None:
    agent = Agent(model=MODEL)
    agent.steer(user("kept", 1000))
    with pytest.raises(TypeError) as info:
        agent.update_queued_user_message_by_timestamp(timestamp, text)
    assert str(info.value) == f"update_queued_user_message_by_timestamp(): {problem}"
    if not isinstance(timestamp, int) or isinstance(timestamp, bool):
        with pytest.raises(TypeError) as info:
            agent.remove_queued_user_message_by_timestamp(timestamp)
        assert str(info.value) == f"remove_queued_user_message_by_timestamp(): {problem}"
    assert list(agent.steering_queue) == [user("kept", 1000)]


# --------------------------------------------------------------------------- during a run


class Gate:
    """A tool that signals when it starts and finishes only when released."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
            self.started.set()
            await self.release.wait()
            return AgentToolResult((TextContent("released"),))

        self.tool = AgentTool("wait", "Wait", "Waits for the test", {"type": "object"}, execute)


def test_an_edit_before_the_poll_is_what_the_run_delivers() -> None:
    """Edited while a tool runs: the loop's steering poll takes the edited message; a removed
    one is never delivered."""

    async def scenario() -> tuple[Agent, ScriptedModel]:
        gate = Gate()
        model = ScriptedModel([tool_call("wait", {}), "after steering"], clock=clock)
        agent = Agent(model=MODEL, stream_fn=model, tools=[gate.tool], clock=clock, steering_mode="all")
        task = asyncio.create_task(agent.prompt("go"))
        await gate.started.wait()
        keep = agent.steer("typo in this")
        drop = agent.steer("never mind")
        assert agent.update_queued_user_message_by_timestamp(keep.timestamp, "fixed text")
        assert agent.remove_queued_user_message_by_timestamp(drop.timestamp)
        gate.release.set()
        await task
        return agent, model

    agent, model = asyncio.run(scenario())
    assert [(m.role, m.text) for m in agent.state.messages] == [
        ("user", "go"), ("assistant", ""), ("toolResult", "released"),
        ("user", "fixed text"), ("assistant", "after steering"),
    ]
    assert [m.text for m in model.requests[1].context.messages][-1] == "fixed text"


def test_a_message_already_taken_by_the_run_cannot_be_edited_or_removed() -> None:
    """pi's coding agent: "update returns false if message already consumed by agent"."""

    async def scenario() -> tuple[Agent, list[bool]]:
        gate = Gate()
        model = ScriptedModel([tool_call("wait", {}), "first answer", tool_call("wait", {}), "done"],
                              clock=clock)
        agent = Agent(model=MODEL, stream_fn=model, tools=[gate.tool], clock=clock)
        task = asyncio.create_task(agent.prompt("go"))
        await gate.started.wait()
        steered = agent.steer("steered")
        gate.started.clear()
        gate.release.set()
        await task
        outcomes = [agent.update_queued_user_message_by_timestamp(steered.timestamp, "too late"),
                    agent.remove_queued_user_message_by_timestamp(steered.timestamp)]
        return agent, outcomes

    agent, outcomes = asyncio.run(scenario())
    assert outcomes == [False, False]
    assert ("user", "steered") in [(m.role, m.text) for m in agent.state.messages]
    assert not agent.has_queued_messages()


def test_sync_agent_edits_from_another_thread_while_it_runs() -> None:
    started = threading.Event()
    release = threading.Event()

    def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        started.set()
        release.wait(5)
        return AgentToolResult((TextContent("ok"),))

    tool = AgentTool("block", "Block", "blocks", {"type": "object"}, execute)
    model = ScriptedModel([tool_call("block", {}), "steered answer", "follow-up answer"], clock=clock)
    with SyncAgent(model=MODEL, stream_fn=model, tools=[tool], clock=clock) as agent:
        runner = threading.Thread(target=agent.prompt, args=("go",))
        runner.start()
        assert started.wait(5)
        steered = agent.steer("steer draft")
        gone = agent.follow_up("follow-up to drop")
        kept = agent.follow_up("follow-up draft")
        assert agent.update_queued_user_message_by_timestamp(steered.timestamp, "steer final")
        assert agent.remove_queued_user_message_by_timestamp(gone.timestamp)
        assert agent.update_queued_user_message_by_timestamp(kept.timestamp, "follow-up final")
        assert agent.update_queued_user_message_by_timestamp(12345, "nothing") is False
        release.set()
        runner.join(5)
        assert not runner.is_alive()
        assert [m.text for m in agent.state.messages if m.role == "user"] == [
            "go", "steer final", "follow-up final"]
        assert agent.remove_queued_user_message_by_timestamp(kept.timestamp) is False
